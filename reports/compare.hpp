// Baseline comparison: `clusterbench compare BASELINE CURRENT` (docs/compare.md). Matches the
// records of two run directories case by case and calls each metric regressed, improved or
// unchanged: a change counts only past its tolerance and when a Mann-Whitney U test on the
// two sides' repetitions finds it significant, so that noise is not called a regression.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "records/records.hpp"
#include "records/spec.hpp"

namespace clusterbench::report {

/// Verdicts of a compared metric or case, worst first.
inline constexpr const char* kRegressed = "regressed";
inline constexpr const char* kImproved = "improved";
inline constexpr const char* kUnchanged = "unchanged";
inline constexpr const char* kNotCompared = "not_compared";  ///< no baseline value to compare
inline constexpr const char* kNew = "new";                   ///< only in CURRENT
/// Measured on both sides, but with fewer than kMinReps repetitions on one: no test can tell.
inline constexpr const char* kNotComparable = "not_comparable";

/// Repetitions a side needs before a change can be called: with 5 against 5 the smallest
/// two-sided Mann-Whitney p is 2 / C(10, 5) = 0.0079, well below kAlpha (3 against 3 can never
/// be significant: 2 / C(6, 3) = 0.1), and the normal approximation that Google Benchmark's
/// compare.py uses needs about 5 a side to be trusted.
inline constexpr int kMinReps = 5;
/// Significance level of the two-sided Mann-Whitney U test.
inline constexpr double kAlpha = 0.05;
/// A lower-is-better time that moved less than this (us), or than twice its timer's
/// resolution, never regressed.
inline constexpr double kLatencyFloorUs = 1.0;

/// Two-sided p-value of the Mann-Whitney U test (Mann & Whitney 1947) of samples `a` and `b`:
/// exact (the distribution of U by recursion) when both have at most 20 values and none tie,
/// else the normal approximation with the tie correction of the variance and a continuity
/// correction of 0.5, as scipy.stats.mannwhitneyu (which Google Benchmark's compare.py uses).
/// 1 when either is empty.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

/// One tolerance rule: KEY=PCT. KEY is a unit ("GB/s", "TFLOP/s"), or a glob on the benchmark
/// id ("compute.gemm", "collectives.*"), optionally with ":metric" ("io.fio*:iops").
struct ToleranceRule {
  std::string key;
  double fraction = 0;  ///< 0.05 for "5%"
};

/// Parses "KEY=PCT" with PCT like "5%", "5" (percent) or "0.5%". Throws InputError on bad text.
ToleranceRule parse_tolerance(const std::string& text);

/// Whether `rule` names (benchmark, metric, unit): its key is the unit, or a glob on the
/// benchmark (with ":" a glob on the metric too).
bool rule_names(const ToleranceRule& rule, const std::string& benchmark, const std::string& metric,
                const std::string& unit);

/// The default tolerance of a metric family (fraction), by unit: TFLOP/s 0.02; GB/s and Gb/s
/// 0.03; us, s, IOPS, samples/s 0.05; anything else 0.05 (docs/compare.md "Tolerances").
double default_tolerance(const std::string& unit);

/// The tolerance for (benchmark, metric, unit): the last matching benchmark rule, else the last
/// matching unit rule (both --tolerance), else the spec table's: the last `compare` entry whose
/// metric glob matches, in the families whose benchmark glob matches, in order; else
/// default_tolerance(unit).
double tolerance_for(const std::vector<ToleranceRule>& rules, const std::string& benchmark,
                     const std::string& metric, const std::string& unit,
                     const std::vector<SpecFamily>& families = {});

/// One metric of a matched case.
struct MetricChange {
  std::string name, unit;
  bool higher_is_better = true;
  double baseline = 0, current = 0;
  double change_pct = 0;       ///< (current - baseline) / baseline * 100, signed as measured
  double baseline_spread = 0;  ///< relative IQR of each side's repetitions (fraction)
  double current_spread = 0;
  int baseline_n = 0, current_n = 0;  ///< repetitions of each side (0: a single value)
  double tolerance = 0;               ///< fraction
  double p_value = -1;                ///< Mann-Whitney two-sided p; -1 when not tested
  std::string verdict;                ///< regressed | improved | unchanged | not_comparable
  std::string reason;    ///< why unchanged or not comparable ("p = 0.31", "n = 1/1", ...)
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
  /// A side's run did not finish the case (a snapshot before its last round, or the case a
  /// signal stopped): not compared.
  bool unfinished = false;

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

/// A host whose reference probe (extra.host_probe of its records: bench/core/host_probe.hpp) ran
/// at a different speed in the two runs: the medians differ by more than kHostDriftTolerance and
/// the two-sided Mann-Whitney p on the samples (>= kMinReps a side) is below kAlpha.
struct HostDrift {
  std::string host, probe;           ///< probe: cpu_mops | mem_gbps
  double baseline = 0, current = 0;  ///< medians of the samples
  double change_pct = 0;             ///< (current - baseline) / baseline * 100
  double p_value = 1;
  int baseline_n = 0, current_n = 0;
};

/// How far a host's probe may move between runs before it counts as drift: the probe's own
/// run-to-run spread on a quiet machine is a few percent (docs/compare.md "Host drift").
inline constexpr double kHostDriftTolerance = 0.10;

/// A case's own CPU share (extra.host_probe.cpu_share: its process's CPU seconds per wall second
/// while it ran) is compared when the larger of the two sides' is at least kBusyShare (half a
/// core: a process that computes or spins; one that waits on I/O or children says nothing); a
/// change of more than kShareTolerance of the larger means other work shared the case's cores in
/// the run with the smaller.
inline constexpr double kBusyShare = 0.5;
inline constexpr double kShareTolerance = 0.15;

/// A multi-rank case (cluster or link scope) carries the core-to-core round trips around it
/// (extra.host_probe.c2c_ns: [before, after] the case, ns; one such pair a round in
/// extra.rounds.c2c_ns on a case spread over rounds). A window (a round, or the case) with a
/// reading more than kC2cTolerance above the nearest reading of either side (more than 2x) ran,
/// at least in part, on cores placed further apart (a virtual machine's vCPUs moved). When the
/// two sides did so in different shares of their windows, MPI's traffic between their ranks
/// moved with the cores, and a change is not judged, by any factor, when the side with the
/// larger share is the slower: the round trip's ratio does not bound a bandwidth's (measured: a
/// 2 MiB all_reduce 6.4x slower in the round whose round trip was 4.3x longer). 2x, because one
/// placement's own readings span 56-99 ns on this project's VM and the other's 316-420 ns
/// (docs/compare.md "Host drift").
inline constexpr double kC2cTolerance = 1.0;

/// A round-trip reading at or above this (ns) was not measured: the probe gives up after 5 ms.
inline constexpr double kC2cMaxNs = 5e6;

/// Why a multi-rank case's change is not judged for its core-to-core round trips ("" when it
/// is, or when a side measured none): see kC2cTolerance.
std::string c2c_drift(const ResultRecord& baseline, const ResultRecord& current);

/// Probe samples per host and probe name, from the ok records that carry extra.host_probe.
using ProbeSamples = std::map<std::string, std::map<std::string, std::vector<double>>>;
ProbeSamples probe_samples(const std::vector<ResultRecord>& records);

/// The drifts between two runs' probe samples, one per host and probe that drifted.
std::vector<HostDrift> host_drift(const ProbeSamples& baseline, const ProbeSamples& current);

/// Whether a record measures the host (CPU, memory, MPI, sockets, disks) rather than a GPU: no
/// GPU in its scope and not over NCCL.
bool host_bound(const ResultRecord& r);

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
};

/// Judges one metric present on both sides into `mc` (its verdict, p_value, reason, change,
/// spreads and n; docs/compare.md "The rule"). The values compared are the medians of the
/// repetitions (Metric::value without them). With d the relative change towards better (+) or
/// worse (-), d = (cur - base) / |base|, negated for lower-is-better metrics:
///  1. a lower-is-better time that moved less than max(1 us, 2 x resolution), or a rate whose
///     time per operation (Metric::work / rate) moved less than 1 us: unchanged;
///  2. fewer than kMinReps repetitions on a side: not_comparable;
///  3. |d| <= tolerance: unchanged;
///  4. Mann-Whitney p >= kAlpha: unchanged (not significant);
///  5. else regressed (d < 0) or improved.
/// A baseline of 0 compares as unchanged when current is 0 too, else by sign.
void judge_metric(const Metric& baseline, const Metric& current, double tolerance,
                  MetricChange& mc);

/// The match key of a record: its case key, except that a GPU record carrying a UUID is keyed
/// "benchmark|params|uuid" so that each GPU is compared with itself wherever it sits.
std::string match_key(const ResultRecord& r);

/// Compares two run directories. Case rules: baseline ok and current ok -> per metric (the
/// worst verdict among its comparable metrics; not_comparable when none is); a baseline
/// case missing from CURRENT, or ok in BASELINE but failed/waived in CURRENT -> regressed; failed
/// in BASELINE and ok in CURRENT -> improved; baseline failed/waived otherwise -> not_compared;
/// only in CURRENT -> new; ok on both sides but a snapshot on either (a run stopped before the
/// case's last round) -> not_compared, unfinished. A baseline metric absent from the current
/// record -> regressed.
/// `families` give the spec table's compare tolerances. The Comparison points into both RunDirs
/// (CaseChange): they must outlive it, so temporaries are refused at compile time.
Comparison compare(const RunDir& baseline, const RunDir& current,
                   const std::vector<ToleranceRule>& rules,
                   const std::vector<SpecFamily>& families = {});
Comparison compare(RunDir&&, const RunDir&, const std::vector<ToleranceRule>&,
                   const std::vector<SpecFamily>& = {}) = delete;
Comparison compare(const RunDir&, RunDir&&, const std::vector<ToleranceRule>&,
                   const std::vector<SpecFamily>& = {}) = delete;
Comparison compare(RunDir&&, RunDir&&, const std::vector<ToleranceRule>&,
                   const std::vector<SpecFamily>& = {}) = delete;

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

/// `clusterbench compare BASELINE CURRENT [--tolerance KEY=PCT]... [--spec FILE] [--out DIR]`:
/// reads both run directories, writes compare.{md,json,junit.xml} into `out_dir` (default:
/// CURRENT), prints the console summary. The compare tolerances come from `spec_path`, else from
/// the table CURRENT's run.json names (BASELINE's when CURRENT names none or it is gone).
/// Returns Comparison::exit_code (1 regressed, 4 inconclusive, 0). Throws InputError (exit 2) on an
/// unreadable run directory, spec table, or a bad --tolerance.
int compare_command(const std::string& baseline_dir, const std::string& current_dir,
                    const std::vector<std::string>& tolerances, const std::string& out_dir,
                    const std::string& spec_path = "");

}  // namespace clusterbench::report
