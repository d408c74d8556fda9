// `clusterbench archive DIR` and `clusterbench verify ARCHIVE` (reports/archive.hpp).
#include "app/command.hpp"
#include "reports/archive.hpp"

namespace clusterbench {

namespace {

class ArchiveCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* cmd = app.add_subcommand(
        "archive", "pack a run directory into DIR.tar.gz with a SHA256SUMS manifest inside");
    cmd->add_option("dir", dir_, "run directory")->required();
    cmd->add_option("-o,--output", out_, "archive file (default DIR.tar.gz)");
    return cmd;
  }
  int run(int, char**) override { return report::archive_command(dir_, out_); }

 private:
  std::string dir_, out_;
};

class VerifyCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* cmd = app.add_subcommand(
        "verify", "check every file of a run archive against its SHA256SUMS (exit 1 naming it)");
    cmd->add_option("archive", path_, "archive written by `clusterbench archive`")->required();
    return cmd;
  }
  int run(int, char**) override { return report::verify_command(path_); }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<Command> make_archive_command() { return std::make_unique<ArchiveCommand>(); }
std::unique_ptr<Command> make_verify_command() { return std::make_unique<VerifyCommand>(); }

}  // namespace clusterbench
