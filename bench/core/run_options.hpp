// What a run session is asked to do (`clusterbench run` and `clusterbench burnin` fill it), and
// what it needs from reports/, which the core does not link (app/ wires it in).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench {

/// The default deadline of every phase of a run that is not a case (start-up, plan, set-up,
/// recording, between cases, finish, report), in seconds (--phase-timeout).
constexpr double kDefaultPhaseTimeoutS = 300;

/// The rounds of a suite when neither --rounds nor CLUSTERBENCH_ROUNDS is given: 5 for ci, quick
/// and full, whose runs are the baselines and the runs an operator compares (docs/compare.md
/// "Rounds"); 1 for the burn-in (its soak is not in rounds).
inline int suite_rounds(const std::string& suite) {
  return suite == "ci" || suite == "quick" || suite == "full" ? 5 : 1;
}

/// TEXT (--rounds N, CLUSTERBENCH_ROUNDS=N) as a round count: a whole number from 1 to
/// kMaxRounds, written in digits; 0 when it is not one.
inline int parse_rounds(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    return 0;  // "05" and "005" are 5; nine digits fit an int
  const int n = std::stoi(text);
  return n >= 1 && n <= kMaxRounds ? n : 0;
}

/// Options of a run (`clusterbench run`; `clusterbench burnin` sets suite "burnin").
struct RunOptions {
  std::string suite = "ci";
  std::string spec_path;          ///< empty: chosen from the hardware found
  std::vector<std::string> only;  ///< globs on benchmark ids; empty: all of the suite
  std::vector<std::string> set;   ///< KEY=VALUE
  std::string out_dir;            ///< the run directory; empty: results/<run-id>
  std::string results_root = "results";
  std::string fs_root = "/";
  std::vector<std::string> argv;
  double case_timeout_s =
      0;  ///< 0: the suite's (300/1200/3600 s), or 2 x estimate + 60 s when longer
  /// --phase-timeout: the deadline of each phase that is not a case (kDefaultPhaseTimeoutS).
  double phase_timeout_s = kDefaultPhaseTimeoutS;
  /// --resume DIR: complete that earlier run (its failed and missing cases), appending to it.
  std::string resume_dir;
  bool dry_run = false;            ///< --dry-run: print the plan with estimates; run nothing
  double time_limit_s = 0;         ///< --time-limit: start no case past it (0: none)
  bool allow_shared_gpus = false;  ///< --allow-shared-gpus: run beside other GPU processes
  /// --rounds N: the cases that can be (Benchmark::in_rounds) run N times each, spread over the
  /// run (the plan's round cases once per round), each time for min_time / N; their records hold
  /// one repetition per round (docs/compare.md "Rounds"). 1: each case once. 0 (not given):
  /// CLUSTERBENCH_ROUNDS, else the suite's (suite_rounds()).
  int rounds = 0;
  /// Whether --suite, --spec, --only, --set were given (a resume takes the others from the
  /// earlier run and refuses given ones that differ).
  bool suite_given = false, spec_given = false, only_given = false, set_given = false;
  std::string prometheus_path;  ///< --prometheus FILE: textfile of the headline metrics
  /// The console's first line: "clusterbench V: <what> RUN-ID, N rank(s) on M node(s)<note>".
  std::string what = "run";
  std::string header_note;  ///< empty: ", suite S"
  /// Whether a refused --out directory suggests `--resume DIR` (run: yes; burnin has no resume).
  bool resumable = true;
};

/// What a run needs from reports/: app/ wires these in.
struct RunHooks {
  /// The spec table for these nodes (auto-selection): path and `selected_by` ("auto: ...").
  /// Throws InputError when none fits.
  std::function<SpecChoice(const std::vector<EnvRecord>&)> choose_spec;
  /// Checks before any case runs that an output file can be written (throws InputError).
  std::function<void(const std::string& path, const std::string& option,
                     const std::string& run_dir)>
      check_output;
  /// Judges the run directory and writes its reports (and the Prometheus textfile where a path
  /// is given); returns the verdict's exit code, which the run takes as its own.
  std::function<int(const std::string& dir, const std::string& prometheus)> report;
};

/// Directory of the seed spec tables: --specs-dir (set_specs_dir), else $CLUSTERBENCH_SPECS_DIR,
/// else share/clusterbench/specs of the installed prefix, or reports/specs of the source tree
/// of a build-tree binary (env/paths.hpp).
std::string specs_dir();
/// Sets the --specs-dir override of specs_dir() (an existing directory; "" clears it).
void set_specs_dir(const std::string& dir);
/// A --spec argument as a path: itself when it names a file or holds a '/', else the table of
/// that name in specs_dir() ("training" or "training.json": specs_dir()/training.json) when there
/// is one, else itself (so that the error names what was given).
std::string resolve_spec_arg(const std::string& arg);

}  // namespace clusterbench
