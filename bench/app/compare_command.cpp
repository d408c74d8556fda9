// `clusterbench compare BASELINE CURRENT`: reports/compare.hpp judges what regressed.
#include "app/command.hpp"
#include "reports/compare.hpp"

namespace clusterbench {

namespace {

class CompareCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* cmd = app.add_subcommand("compare", "compare two run directories: what regressed");
    cmd->add_option("baseline", base_, "baseline run directory")->required();
    cmd->add_option("current", cur_, "current run directory")->required();
    cmd->add_option("--tolerance", tol_, "KEY=PCT, KEY a unit or benchmark glob[:metric]");
    cmd->add_option("--out", out_, "where compare.{md,json,junit.xml} go (default CURRENT)");
    cmd->add_option("--spec", spec_,
                    "spec table whose compare tolerances apply (default: the one CURRENT's "
                    "run.json names)");
    return cmd;
  }
  int run(int, char**) override { return report::compare_command(base_, cur_, tol_, out_, spec_); }

 private:
  std::string base_, cur_, out_, spec_;
  std::vector<std::string> tol_;
};

}  // namespace

std::unique_ptr<Command> make_compare_command() { return std::make_unique<CompareCommand>(); }

}  // namespace clusterbench
