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
    cmd->add_option("--sign", key_,
                    "also write FILE.asc, a detached GnuPG signature by this key (gpg "
                    "--local-user: a key id, fingerprint or e-mail)");
    return cmd;
  }
  int run(int, char**) override { return report::archive_command(dir_, out_, key_); }

 private:
  std::string dir_, out_, key_;
};

class VerifyCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* cmd = app.add_subcommand(
        "verify",
        "check every file of a run archive against its SHA256SUMS, and the archive against its "
        "signature and recorded SHA-256 (exit 1 naming what differs)");
    cmd->add_option("archive", path_, "archive written by `clusterbench archive`")->required();
    cmd->add_option("--signature", sig_,
                    "its detached GnuPG signature (default ARCHIVE.asc where it exists)");
    cmd->add_option("--sha256", sha_, "the archive's SHA-256 as recorded when it was made");
    return cmd;
  }
  int run(int, char**) override { return report::verify_command(path_, sig_, sha_); }

 private:
  std::string path_, sig_, sha_;
};

}  // namespace

std::unique_ptr<Command> make_archive_command() { return std::make_unique<ArchiveCommand>(); }
std::unique_ptr<Command> make_verify_command() { return std::make_unique<VerifyCommand>(); }

}  // namespace clusterbench
