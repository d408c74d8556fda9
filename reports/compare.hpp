// Baseline comparison: `clusterbench compare BASELINE CURRENT` (docs/compare.md). Matches the
// records of two run directories case by case and calls each metric regressed, improved or
// unchanged, using each side's spread so that noise is not called a regression.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::report {

/// Verdicts of a compared metric or case, worst first.
inline constexpr const char* kRegressed = "regressed";
inline constexpr const char* kImproved = "improved";
inline constexpr const char* kUnchanged = "unchanged";
inline constexpr const char* kNotCompared = "not_compared";  ///< no baseline value to compare
inline constexpr const char* kNew = "new";                   ///< only in CURRENT

/// One tolerance rule: KEY=PCT. KEY is a unit ("GB/s", "TFLOP/s"), or a glob on the benchmark
/// id ("compute.gemm", "collectives.*"), optionally with ":metric" ("io.fio*:iops").
struct ToleranceRule {
  std::string key;
  double fraction = 0;  ///< 0.05 for "5%"
};

/// Parses "KEY=PCT" with PCT like "5%", "5" (percent) or "0.5%". Throws InputError on bad text.
ToleranceRule parse_tolerance(const std::string& text);

/// The default tolerance of a metric family (fraction), by unit: TFLOP/s 0.02; GB/s and Gb/s
/// 0.03; us, s, IOPS, samples/s 0.05; anything else 0.05 (docs/compare.md "Tolerances").
double default_tolerance(const std::string& unit);

/// The tolerance for (benchmark, metric, unit): the last matching benchmark rule, else the last
/// matching unit rule, else default_tolerance(unit).
double tolerance_for(const std::vector<ToleranceRule>& rules, const std::string& benchmark,
                     const std::string& metric, const std::string& unit);

/// One metric of a matched case.
struct MetricChange {
  std::string name, unit;
  bool higher_is_better = true;
  double baseline = 0, current = 0;
  double change_pct = 0;       ///< (current - baseline) / baseline * 100, signed as measured
  double baseline_spread = 0;  ///< TimeStats.spread of each side (fraction)
  double current_spread = 0;
  double tolerance = 0;  ///< fraction
  double noise = 0;      ///< (baseline_spread + current_spread) / 2, fraction
  std::string verdict;   ///< regressed | improved | unchanged
  bool missing = false;  ///< the metric is absent from the CURRENT record
};

/// One case of BASELINE (or CURRENT only), matched by match key. It points at the records of the
/// two RunDirs given to compare(), which must outlive it (a 1,000-node run has 720,000 cases:
/// copies of their keys and params were most of compare's memory, docs/report.md "Scale").
struct CaseChange {
  const ResultRecord* baseline = nullptr;  ///< nullptr: only in CURRENT
  const ResultRecord* current = nullptr;   ///< nullptr: missing from CURRENT
  std::string baseline_status;             ///< ok | failed | waived | missing
  std::string current_status;              ///< ok | failed | waived | missing
  std::string verdict;                     ///< worst of its metrics, or the status rule
  std::string message;
  std::vector<MetricChange> metrics;

  /// BASELINE's record, CURRENT's when the case is new.
  const ResultRecord& record() const { return baseline ? *baseline : *current; }
  const std::string& benchmark() const { return record().benchmark; }
  const json& params() const { return record().params; }
  /// BASELINE's case key (CURRENT's when new).
  const std::string& case_key() const { return record().case_key; }
  /// Case key, with the scope item replaced by the UUID for GPU records.
  std::string match_key() const;
  /// Scope item in CURRENT (BASELINE's when missing).
  std::string item() const;
};

/// One environment field that differs, with the hosts where it changed that way.
struct EnvChange {
  std::string field;  ///< "driver", "cuda_runtime", "gpu vbios", "nic firmware mlx5_0/1", ...
  std::string baseline, current;
  std::vector<std::string> hosts;
};

struct Comparison {
  std::string baseline_dir, current_dir, baseline_run_id, current_run_id;
  std::vector<ToleranceRule> rules;
  std::vector<CaseChange> cases;  ///< regressed first, then improved, new, not compared, unchanged
  std::vector<EnvChange> env_changes;
  std::vector<std::string> hosts_removed, hosts_added;
  std::map<std::string, int> counts;  ///< verdict -> cases; all five keys present
  int exit_code = 0;                  ///< 1 when any case regressed, else 0
};

/// The verdict of one metric (docs/compare.md "The rule"). With d the relative change towards
/// better (+) or worse (-): d = (cur - base) / base for higher-is-better metrics, (base - cur) /
/// base otherwise; noise = (spread_base + spread_cur) / 2, which is the change at which the two
/// interquartile ranges stop overlapping; threshold = max(tolerance, noise). regressed when
/// d < -threshold, improved when d > threshold, else unchanged. A baseline of 0 compares as
/// unchanged when current is 0 too, else by sign.
std::string metric_verdict(double baseline, double current, bool higher_is_better, double tolerance,
                           double noise);

/// The match key of a record: its case key, except that a GPU record carrying a UUID is keyed
/// "benchmark|params|uuid" so that each GPU is compared with itself wherever it sits.
std::string match_key(const ResultRecord& r);

/// Compares two run directories. Case rules: baseline ok and current ok -> per metric; a baseline
/// case missing from CURRENT, or ok in BASELINE but failed/waived in CURRENT -> regressed; failed
/// in BASELINE and ok in CURRENT -> improved; baseline failed/waived otherwise -> not_compared;
/// only in CURRENT -> new. A baseline metric absent from the current record -> regressed.
/// The Comparison points into both RunDirs (CaseChange): they must outlive it, so temporaries are
/// refused at compile time.
Comparison compare(const RunDir& baseline, const RunDir& current,
                   const std::vector<ToleranceRule>& rules);
Comparison compare(RunDir&&, const RunDir&, const std::vector<ToleranceRule>&) = delete;
Comparison compare(const RunDir&, RunDir&&, const std::vector<ToleranceRule>&) = delete;
Comparison compare(RunDir&&, RunDir&&, const std::vector<ToleranceRule>&) = delete;

/// compare.md: verdict line, counts, the regressed/improved table (| case | metric | baseline |
/// current | change | spread b/c | tolerance | verdict |), environment changes, then unchanged.
std::string render_compare_markdown(const Comparison& c);

/// compare.json and compare.junit.xml list every unchanged case up to this many unchanged cases;
/// beyond it (a 1,000-node run has 720,000 cases) unchanged cases are counted per benchmark, with
/// the case closest to regressing, and every other verdict is still listed in full.
inline constexpr size_t kFullDetailUnchanged = 1000;

/// compare.json, schema clusterbench.compare/1 (docs/records.md). Beyond kFullDetailUnchanged
/// unchanged cases, "cases" omits the unchanged ones and "unchanged_by_benchmark" [{benchmark,
/// cases, closest: {case_key, item, metric, change_pct}}] counts them; "cases_listed" says
/// "all" or "all but unchanged".
json render_compare_json(const Comparison& c);

/// compare.junit.xml: testsuite "clusterbench.compare", one testcase per case; regressed ->
/// <failure>, not_compared -> <skipped>. Beyond kFullDetailUnchanged unchanged cases, the
/// unchanged ones are one testcase per benchmark ("N unchanged cases").
std::string render_compare_junit(const Comparison& c);

/// Console summary: one line per regressed case, then "COMPARE: REGRESSED (exit 1): ...".
std::string render_compare_console(const Comparison& c);

/// Writes compare.md, compare.json and compare.junit.xml into `dir` (created if absent).
void write_compare(const Comparison& c, const std::string& dir);

/// `clusterbench compare BASELINE CURRENT [--tolerance KEY=PCT]... [--out DIR]`: reads both run
/// directories, writes compare.{md,json,junit.xml} into `out_dir` (default: CURRENT), prints the
/// console summary. Returns 1 when anything regressed, else 0. Throws InputError (exit 2) on an
/// unreadable run directory or a bad --tolerance.
int compare_command(const std::string& baseline_dir, const std::string& current_dir,
                    const std::vector<std::string>& tolerances, const std::string& out_dir);

}  // namespace clusterbench::report
