// `clusterbench compare BASELINE CURRENT`: reads both run directories, has reports/compare.hpp
// judge what regressed, writes compare.{md,json,junit.xml} and prints the verdict.
#include <filesystem>
#include <future>
#include <iostream>
#include <optional>

#include "app/command.hpp"
#include "records/spec.hpp"
#include "reports/compare.hpp"
#include "reports/render.hpp"

namespace clusterbench {

namespace {

using namespace report;

/// The spec table whose compare tolerances apply: `given`, else the first of the runs' own
/// (CURRENT's, then BASELINE's) that still exists; nullopt when there is none.
std::optional<Spec> compare_spec(const std::string& given, const RunDir& cur, const RunDir& base) {
  if (!given.empty()) return load_spec(given);
  for (const RunDir* r : {&cur, &base}) {
    const std::string& path = r->run.spec.path;
    std::error_code ec;
    if (!path.empty() && std::filesystem::is_regular_file(path, ec)) return load_spec(path);
  }
  return std::nullopt;
}

/// `clusterbench compare BASELINE CURRENT [--tolerance KEY=PCT]... [--spec FILE] [--out DIR]`:
/// reads both run directories, writes compare.{md,json,junit.xml} into `out_dir` (default:
/// CURRENT), prints the console summary. The compare tolerances come from `spec_path`, else from
/// the table CURRENT's run.json names (BASELINE's when CURRENT names none or it is gone).
/// `all_cases` (--all-cases): compare.json lists every unchanged case.
/// Returns Comparison::exit_code (1 regressed, 4 inconclusive, 0). Throws InputError (exit 2) on
/// an unreadable run directory, spec table, or a bad --tolerance.
int compare_command(const std::string& baseline_dir, const std::string& current_dir,
                    const std::vector<std::string>& tolerances, const std::string& out_dir,
                    const std::string& spec_path, bool all_cases) {
  std::vector<ToleranceRule> rules;
  for (const auto& t : tolerances) rules.push_back(parse_tolerance(t));
  if (!out_dir.empty()) {  // before minutes of reading
    check_output_dir(out_dir, "--out");
    check_writable_dir(out_dir, "--out");
  }
  // Both sides at once: reading is most of compare's time at 1,000 nodes (docs/report.md). Of
  // each record's `extra`, only what compare reads.
  const ExtraKeys keys = compare_extra_keys();
  auto base_future =
      std::async(std::launch::async, [&] { return read_run_dir(baseline_dir, false, &keys); });
  // Never freed: the process ends right after, and freeing two 1,000-node runs and their
  // comparison took over a second (docs/report.md "Scale").
  const RunDir& cur = *new RunDir(read_run_dir(current_dir, false, &keys));
  const RunDir& base = *new RunDir(base_future.get());
  const std::optional<Spec> spec = compare_spec(spec_path, cur, base);
  Comparison& c = *new Comparison(
      compare(base, cur, rules, spec ? spec->families : std::vector<SpecFamily>{}, all_cases));
  if (spec) c.spec_path = spec->path;
  c.list_all_cases = all_cases;
  // A key that names nothing was meant to name something (a typo, a unit's case): the user's
  // tolerance did not apply, so the verdict would not be the one asked for.
  if (!c.unused_rules.empty()) {
    std::string keys;
    for (const auto& key : c.unused_rules) keys += (keys.empty() ? "'" : ", '") + key + "'";
    throw InputError("--tolerance " + keys +
                     ": names no metric of either run (units are case-sensitive: GB/s, "
                     "TFLOP/s); fix or drop it");
  }
  std::string dir = out_dir.empty() ? current_dir : out_dir;
  // CURRENT that cannot be written (a read-only evidence copy): the verdict still stands, as
  // `report` does on such a run directory.
  std::string unwritten;
  try {
    write_compare(c, dir);
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    if (!out_dir.empty()) throw;
    unwritten = e.what();
  }
  if (!unwritten.empty())
    std::cerr << "warning: compare files not written in " << dir << " (" << unwritten
              << "); the verdict below is printed only (--out DIR writes them elsewhere)\n";
  for (const auto& w : base.records.warnings) std::cerr << "warning: baseline: " << w << "\n";
  for (const auto& w : cur.records.warnings) std::cerr << "warning: current: " << w << "\n";
  if (!cur.run.run_id.empty() && cur.run.run_id == base.run.run_id)
    std::cerr << "warning: BASELINE and CURRENT are the same run (" << cur.run.run_id
              << "): nothing can have changed; name an earlier run as BASELINE\n";
  std::cout << render_compare_console(c) << "compare: "
            << (unwritten.empty() ? dir + "/compare.md" : "not written (see the warning above)")
            << "\n"
            << std::flush;
  return c.exit_code;
}

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
    cmd->add_flag("--all-cases", all_,
                  "list every unchanged case in compare.json/junit.xml (by default, beyond 1,000 "
                  "they are counted per benchmark)");
    return cmd;
  }
  int run(int, char**) override { return compare_command(base_, cur_, tol_, out_, spec_, all_); }

 private:
  std::string base_, cur_, out_, spec_;
  std::vector<std::string> tol_;
  bool all_ = false;
};

}  // namespace

std::unique_ptr<Command> make_compare_command() { return std::make_unique<CompareCommand>(); }

}  // namespace clusterbench
