// burnin.soak, the case of `clusterbench burnin --minutes N` (docs/burnin.md): every rank soaks
// its GPU with sustained GEMM (its CPU, through OpenBLAS, on a node without GPUs) while a
// concurrent all_reduce loop loads NVLink and the network (NCCL; MPI on host buffers where any
// rank has no running GPU). NVML telemetry is sampled throughout; the product and the all_reduce
// values are checked every interval, and each interval's snapshot of every rank's series is
// appended to records.jsonl as it ends. A composite benchmark: it drives the GEMM engines of
// compute/burnin.hpp and a collective backend of collectives/. Measures only: the verdicts are
// reports/' (the spec rows of reports/specs/burnin-*.json).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::compute {

/// Intervals of a soak of `seconds`: max(6, ceil(seconds / 60)), so an interval is at most a
/// minute and there are at least six whatever the duration.
inline int burnin_intervals(double seconds) {
  return std::max(6, static_cast<int>(std::ceil(seconds / 60.0 - 1e-9)));
}

/// The longest one product may take in a soak of intervals of `interval_s`: a tenth of an interval
/// (so that it fits many times in one), and at most a second (so that SIGINT/SIGTERM stops the
/// soak within about a second: a product cannot be interrupted).
inline double burnin_max_product_seconds(double interval_s) {
  return std::min(1.0, interval_s / 10.0);
}

/// Intervals a soak needs before its rate drop and dip are computed (docs/burnin.md: the soak is
/// cut into at least six): rate_drop compares the medians of the first and last thirds, which on
/// fewer intervals are one or two samples, and a run stopped early must not PASS on them.
inline constexpr int kBurninMinIntervals = 6;

/// What a soak's series (a record's extra.series: intervals with "rate_tflops" and optional
/// "telemetry": {"samples", "clock_event_reasons", "temperature_c_max"}) says.
struct BurninAnalysis {
  int intervals = 0;
  int third = 0;           ///< intervals in each third: max(1, intervals / 3)
  double first_third = 0;  ///< median rate of the first `third` intervals, TFLOP/s
  double last_third = 0;   ///< median rate of the last `third` intervals, TFLOP/s
  double median = 0;       ///< median rate of every interval
  double worst = 0;        ///< lowest interval rate
  int worst_index = -1;
  /// rate_drop = 100 (first_third - last_third) / first_third, %: how much the rate fell over the
  /// soak (negative: it rose). Medians of thirds, so that one noisy interval cannot decide it.
  double drop_pct = 0;
  /// rate_dip = 100 (median - worst) / median, %: the worst interval below the typical one.
  double dip_pct = 0;
  int telemetry_intervals = 0;  ///< intervals with at least one telemetry sample
  /// Of those, intervals whose reasons hit kSlowdownReasonMask (core/telemetry.hpp: hardware and
  /// thermal slowdowns and the power brake, as `run`'s gpu.gemm_slowdown counts them).
  int slowdown_intervals = 0;
};

/// Analyses a series. Intervals without a numeric rate are skipped; an empty series gives
/// intervals = 0 and zeros.
BurninAnalysis analyze_burnin(const json& series);

/// The metrics of an analysis that the spec rows judge: rate_drop (%) and rate_dip (%) when the
/// series has at least kBurninMinIntervals intervals (fewer: neither, so their rows are MISSING,
/// never PASS), and, where any interval has telemetry, slowdown_intervals (count). None
/// for an empty series.
std::vector<Metric> burnin_metrics(const BurninAnalysis& analysis);

/// Every metric of a soak's series, in this order: rate_median, rate_first_minute,
/// rate_last_minute, rate_worst_interval (TFLOP/s), verification_errors (intervals with a wrong
/// product, wrong or failed all_reduce), allreduce_busbw_median (GB/s, where measured),
/// temperature_max (C, with `telemetry`), intervals, then burnin_metrics(). The first and last
/// minute are the intervals whose planned span lies within them; a soak shorter than two minutes
/// takes its first and last interval. Empty for an empty series.
std::vector<Metric> soak_series_metrics(const json& series, double interval_s, bool telemetry);

/// Why a series of 1 to kBurninMinIntervals - 1 intervals has no rate_drop and rate_dip:
/// "rate_drop and rate_dip not judged: N interval(s) measured, 6 needed[ (<stopped>)]"; "" for
/// an empty series or one long enough.
std::string soak_not_judged(const json& series, const std::string& stopped);

/// The console's line for interval `i` (0-based) of `n`, rank 0: each rank's GEMM rate and
/// maximum GPU temperature from its interval (`payloads[r]`, the interval's JSON as the soak
/// series holds it, or {"failed": why}; null where the rank sent nothing), labelled
/// `labels[r]`; beyond 8 ranks the lowest, median and highest rate with their ranks instead.
/// Failures and wrong results are named, every one of them (up to 8, then a count):
/// "burn-in interval 3/20: vm/rank0 0.41 TFLOP/s, vm/rank1 0.4 TFLOP/s; all_reduce busbw 1.2
/// GB/s".
std::string burnin_interval_line(int i, int n, const std::vector<std::string>& labels,
                                 const std::vector<json>& payloads);

}  // namespace clusterbench::compute
