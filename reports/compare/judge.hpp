// The verdict of one compared case and of each of its metrics (docs/compare.md "The rule"): a
// change counts only past its tolerance and when the Mann-Whitney test finds it significant; a
// case's status (missing, failed, waived, unfinished) decides before its numbers do.
#pragma once

#include <string>
#include <vector>

#include "records/result.hpp"
#include "records/run_record.hpp"
#include "records/spec.hpp"
#include "reports/compare/statistics.hpp"
#include "reports/compare/tolerance.hpp"

namespace clusterbench::report {

/// Verdicts of a compared metric or case, worst first.
inline constexpr const char* kRegressed = "regressed";
inline constexpr const char* kImproved = "improved";
inline constexpr const char* kUnchanged = "unchanged";
/// Moved past its tolerance, but the test could not confirm it (p >= kAlpha): not a regression,
/// and not "unchanged" either (MetricChange::detectable_pct says what the pair could have seen).
inline constexpr const char* kNotSignificant = "not_significant";
inline constexpr const char* kNotCompared = "not_compared";  ///< no baseline value to compare
inline constexpr const char* kNew = "new";                   ///< only in CURRENT
/// Measured on both sides, but with fewer than kMinReps repetitions on one: no test can tell.
inline constexpr const char* kNotComparable = "not_comparable";

/// A lower-is-better time that moved less than this (us), or than twice its timer's
/// resolution, never regressed.
inline constexpr double kLatencyFloorUs = 1.0;

/// The seven verdicts, worst first (the order of compare.md and of Comparison::cases).
const std::vector<std::string>& verdict_order();

/// A verdict's place in verdict_order() (0: regressed).
int verdict_rank(const std::string& verdict);

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
  double detectable_pct = -1;  ///< smallest change the pair detects (Detectable); -1: unknown
  int reps_needed = 0;         ///< repetitions a side that detect the tolerance; 0: unknown
  std::string verdict;   ///< regressed | improved | not_significant | unchanged | not_comparable
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
  /// An unchanged case that the outputs count, not list: `metrics` holds only its metric
  /// closest to regressing (a 1,000-node compare judges 830,000 cases of up to 5 metrics).
  bool reduced = false;

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

/// Judges one metric present on both sides into `mc` (its verdict, p_value, reason, change,
/// spreads and n; docs/compare.md "The rule"). The values compared are the medians of the
/// repetitions (Metric::value without them). With d the relative change towards better (+) or
/// worse (-), d = (cur - base) / |base|, negated for lower-is-better metrics:
///  1. a lower-is-better time that moved less than max(1 us, 2 x resolution), or a rate whose
///     time per operation (Metric::work / rate) moved less than 1 us: unchanged;
///  2. fewer than kMinReps repetitions on a side: not_comparable;
///  3. |d| <= tolerance: unchanged;
///  4. Mann-Whitney p >= kAlpha: not_significant, with what the pair could detect;
///  5. else regressed (d < 0) or improved.
/// A baseline of 0 compares as unchanged when current is 0 too, else by sign.
void judge_metric(const Metric& baseline, const Metric& current, double tolerance,
                  MetricChange& mc);

/// The match key of a record: its case key, except that a GPU record carrying a UUID is keyed
/// "benchmark|params|uuid" so that each GPU is compared with itself wherever it sits.
std::string match_key(const ResultRecord& r);

/// Whether a record's match key is by its GPU's UUID (a GPU record that carries one).
bool by_uuid(const ResultRecord& r);

/// The match key of a record keyed by UUID, its params already serialised (`params_text`): a
/// case's records come one after another, so their params are serialised once.
std::string uuid_key(const ResultRecord& r, const std::string& params_text);

/// Judges one case of BASELINE (`b`) against CURRENT's record of its match key (`c`, nullptr when
/// CURRENT has none) into `cc`: by status first (compare()'s case rules), else metric by metric
/// with the tolerances of `rules` and `families` (tolerance_for). `current_run` says what CURRENT
/// was asked to run (--only) and whether it was aborted.
void judge_case(const ResultRecord& b, const ResultRecord* c,
                const std::vector<ToleranceRule>& rules, const std::vector<SpecFamily>& families,
                const RunRecord& current_run, CaseChange& cc);

}  // namespace clusterbench::report
