// compare(): two run directories matched case by case (docs/compare.md), every case judged
// (judge.hpp), host-side changes that host drift explains left unjudged (host_drift.hpp), the
// environment's differences listed (env_diff.hpp), and the exit code decided, once.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "records/run_dir.hpp"
#include "records/spec.hpp"
#include "reports/compare/env_diff.hpp"
#include "reports/compare/host_drift.hpp"
#include "reports/compare/judge.hpp"
#include "reports/compare/tolerance.hpp"

namespace clusterbench::report {

/// compare.json and compare.junit.xml list every unchanged case up to this many unchanged cases;
/// beyond it (a 1,000-node run has 830,000 cases) unchanged cases are counted per benchmark, with
/// the case closest to regressing, and every other verdict is still listed in full.
inline constexpr size_t kFullDetailUnchanged = 1000;
/// compare.md lists this many unchanged cases, each with its metrics.
inline constexpr size_t kMarkdownUnchanged = 200;

/// Two runs compared: every case with its verdict, what changed around them, and the exit code.
struct Comparison {
  std::string baseline_dir, current_dir, baseline_run_id, current_run_id;
  std::string baseline_suite, current_suite;    ///< run.json "suite"
  int baseline_rounds = 1, current_rounds = 1;  ///< run.json "rounds" (1 when absent)
  std::vector<ToleranceRule> rules;
  std::string spec_path;          ///< the spec table whose `compare` tolerances applied ("" none)
  std::vector<CaseChange> cases;  ///< regressed first, then improved, new, not compared, unchanged
  std::vector<EnvChange> env_changes;
  std::vector<std::string> hosts_removed, hosts_added;
  std::map<std::string, int> counts;  ///< verdict -> cases; all six keys present
  std::vector<HostDrift> host_drift;  ///< hosts whose own speed moved between the runs
  int drift_cases = 0;       ///< host-bound cases left unjudged for drift or a changed CPU share
  int unfinished_cases = 0;  ///< cases a side's run did not finish (CaseChange::unfinished)
  /// 1 when any case regressed; else 4 when host drift left changes unjudged or a side is an
  /// unfinished run (inconclusive); else 0.
  int exit_code = 0;
  /// The --tolerance keys that named no metric of any case (a typo, or a unit's wrong case):
  /// warned of, as they changed nothing.
  std::vector<std::string> unused_rules;
  /// --all-cases: compare.json and compare.junit.xml list every unchanged case, however many
  /// (by default beyond kFullDetailUnchanged they are counted per benchmark).
  bool list_all_cases = false;
};

/// The keys of an ok record's `extra` that compare reads (the host probe, the rounds, a
/// snapshot's mark, fio's disk load and Little's law, why a metric is unmeasured): what it reads
/// each run directory with (read_run_dir's `keep`).
ExtraKeys compare_extra_keys();

/// Compares two run directories. Case rules: baseline ok and current ok -> per metric (the
/// worst verdict among its comparable metrics; not_comparable when none is); a baseline
/// case missing from CURRENT, or ok in BASELINE but failed/waived in CURRENT -> regressed; failed
/// in BASELINE and ok in CURRENT -> improved; baseline failed/waived otherwise -> not_compared;
/// only in CURRENT -> new; ok on both sides but a snapshot on either (a run stopped before the
/// case's last round) -> not_compared, unfinished. A baseline metric absent from the current
/// record -> regressed.
/// `families` give the spec table's compare tolerances. The Comparison points into both RunDirs
/// (CaseChange): they must outlive it, so temporaries are refused at compile time.
/// Beyond kFullDetailUnchanged unchanged cases, those the outputs count rather than list keep
/// only their metric closest to regressing (CaseChange::reduced); `all_cases` (--all-cases)
/// keeps every metric of every case.
Comparison compare(const RunDir& baseline, const RunDir& current,
                   const std::vector<ToleranceRule>& rules,
                   const std::vector<SpecFamily>& families = {}, bool all_cases = false);
Comparison compare(RunDir&&, const RunDir&, const std::vector<ToleranceRule>&,
                   const std::vector<SpecFamily>& = {}, bool = false) = delete;
Comparison compare(const RunDir&, RunDir&&, const std::vector<ToleranceRule>&,
                   const std::vector<SpecFamily>& = {}, bool = false) = delete;
Comparison compare(RunDir&&, RunDir&&, const std::vector<ToleranceRule>&,
                   const std::vector<SpecFamily>& = {}, bool = false) = delete;

}  // namespace clusterbench::report
