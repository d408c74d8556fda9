// clusterbench: the command line (CLI11), one Command per subcommand (app/command.hpp). Exit
// codes: docs/design.md "Exit codes".
#include <cmath>
#include <filesystem>
#include <iostream>

#include "app/command.hpp"
#include "core/api/context.hpp"
#include "core/run_options.hpp"
#include "core/version.hpp"
#include "core/watchdog.hpp"
#include "records/records.hpp"
#include "records/utf8.hpp"

using namespace clusterbench;

namespace {

/// "clusterbench io make-dataset": the subcommand a parse error belongs to.
std::string parsed_path(CLI::App& app) {
  std::string where = "clusterbench";
  for (CLI::App* a = &app; !a->get_subcommands().empty();) {
    a = a->get_subcommands().front();
    where += " " + a->get_name();
  }
  return where;
}

/// MPI_Init and the host exchange under the start-up deadline: a rank that never starts, or is
/// stopped, ends this one with exit 3 and a message naming the phase and the world size expected.
void start_mpi(const Command& cmd, int& argc, char**& argv) {
  test_stop_point("start-up", -1);
  ProcessDeadline startup("start-up", cmd.phase_timeout_s(),
                          launcher_world_text() +
                              "; MPI_Init and the host exchange wait for every rank: one did not "
                              "start, is stopped or cannot reach this one; no run directory made");
  Context::init(&argc, &argv, cmd.needs_mpi_threads());
}

/// The first option of the parsed command (or its parents) given an empty value (`--spec ''`,
/// `--out ''`, which would otherwise read as not given), or "".
std::string empty_option(CLI::App& app) {
  for (CLI::App* a = &app; a;) {
    for (const CLI::Option* o : a->get_options())
      if (o->count() > 0 && o->get_expected_min() > 0)
        for (const auto& r : o->results())
          if (r.empty()) return o->get_name();
    auto subs = a->get_subcommands();
    a = subs.empty() ? nullptr : subs.front();
  }
  return "";
}

/// Runs the parsed command; InputError is exit 2, any other error exit 3.
int dispatch(Command& cmd, int argc, char** argv) {
  int code = 0;
  try {
    if (cmd.needs_mpi()) start_mpi(cmd, argc, argv);
    code = cmd.run(argc, argv);
  } catch (const InputError& e) {  // it may quote a path or bytes that are not UTF-8
    std::cerr << "clusterbench: " << error_text(e.what()) << std::endl;
    code = 2;
  } catch (const std::exception& e) {
    std::cerr << "clusterbench: error: " << error_text(e.what()) << std::endl;
    code = 3;
  }
  if (cmd.needs_mpi()) {
    ProcessDeadline finish("MPI_Finalize", cmd.phase_timeout_s(),
                           "it waits for every rank; one is stopped or gone");
    Context::finalize();
  }
  return code;
}

}  // namespace

namespace clusterbench {

const CLI::Validator& seconds_validator() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        double s = 0;
        size_t used = 0;
        try {
          s = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || !std::isfinite(s) || s <= 0 || s > 30 * 86400.0)
          return "'" + text + "' must be a number of seconds in (0, 2592000]";
        return "";
      },
      "SECONDS");
  return v;
}

}  // namespace clusterbench

int main(int argc, char** argv) {
  CLI::App app{"clusterbench: does a GPU cluster meet the spec it was bought against?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "clusterbench " + clusterbench_version());
  std::vector<std::unique_ptr<Command>> commands;
  for (auto make : {make_run_command, make_report_command, make_compare_command,
                    make_inventory_command, make_list_command, make_io_command,
                    make_archive_command, make_verify_command, make_burnin_command})
    commands.push_back(make());
  std::vector<CLI::App*> subs;
  for (auto& c : commands) subs.push_back(c->add(app));
  std::string specs;  // --specs-dir of the commands that choose a spec table
  for (CLI::App* s : subs)
    if (s->get_name() == "run" || s->get_name() == "burnin")
      s->add_option("--specs-dir", specs,
                    "directory of the seed spec tables (default: $CLUSTERBENCH_SPECS_DIR, else "
                    "share/clusterbench/specs of the installation)")
          ->check(CLI::ExistingDirectory);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help and the like
    const std::string where = parsed_path(app);
    std::cerr << where << ": " << e.what() << "\nRun '" << where
              << " --help' for more information.\n";
    return 2;
  }
  if (!specs.empty()) set_specs_dir(std::filesystem::absolute(specs).string());
  if (std::string empty = empty_option(app); !empty.empty()) {
    std::cerr << "clusterbench: " << empty << ": empty value; name it, or leave the option out\n";
    return 2;
  }
  for (size_t i = 0; i < commands.size(); ++i)
    if (subs[i]->parsed()) return dispatch(*commands[i], argc, argv);
  return 2;
}
