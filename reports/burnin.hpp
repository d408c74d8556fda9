// Burn-in judgement inputs (docs/burnin.md): what the time series of a soak record says, as
// metrics the spec rows of reports/specs/burnin-*.json judge, and the burn-in charts. Soak
// records are those of a family with "series": "soak" in the spec table (reports/families.hpp).
// Reads records only.
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"
#include "records/spec.hpp"
#include "reports/charts.hpp"

namespace clusterbench::report {

/// NVML clocks-event reasons that mean heat: hw_slowdown 0x8 (which includes HW thermal
/// slowdown on older drivers), sw_thermal_slowdown 0x20, hw_thermal_slowdown 0x40
/// (nvml.h nvmlClocksEventReason*). Power-cap reasons are not thermal throttling.
inline constexpr unsigned long long kThermalReasonMask = 0x8 | 0x20 | 0x40;

/// Intervals a soak needs before its rate is judged (docs/burnin.md: the soak is cut into at
/// least six): rate_drop compares the medians of the first and last thirds, which on fewer
/// intervals are one or two samples, and a run stopped early must not PASS on them.
inline constexpr int kBurninMinIntervals = 6;

/// What a burn-in series (a record's extra.series: intervals with "rate_tflops" and optional
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
  int thermal_intervals = 0;    ///< of those, intervals whose reasons hit kThermalReasonMask
};

/// Analyses a series. Intervals without a numeric rate are skipped; an empty series gives
/// intervals = 0 and zeros.
BurninAnalysis analyze_burnin(const json& series);

/// The derived metrics of an analysis, for the spec rows: rate_drop (%) and rate_dip (%) when
/// the series has at least kBurninMinIntervals intervals (fewer: neither, so their rows are
/// MISSING, never PASS), and, where any interval has telemetry, thermal_slowdown_intervals
/// (count). None for an empty series.
std::vector<Metric> burnin_metrics(const BurninAnalysis& analysis);

/// burnin_metrics(analyze_burnin(series)).
std::vector<Metric> burnin_metrics(const json& series);

/// One soak record analysed (Report::soaks).
struct SoakResult {
  size_t record = 0;  ///< index into the run's records
  std::string item;   ///< "node01/gpu3", "node01/rank0"
  std::string case_key;
  BurninAnalysis analysis;
};

/// Every ok record of a soak family (SpecFamily::series "soak") whose extra.series is an array,
/// analysed, in record order.
std::vector<SoakResult> analyze_soaks(const RunDir& run, const std::vector<SpecFamily>& families);

/// `run` itself when `soaks` is empty; else `storage`, a copy of it whose soak records also carry
/// burnin_metrics() (a metric already present is kept). A record with fewer than
/// kBurninMinIntervals intervals also gets the reason its rate is not judged in its message and
/// in extra.not_judged: "rate_drop and rate_dip not judged: N interval(s) measured, 6 needed
/// (...)", with its extra.stopped_early when it has one. `soaks`: analyze_soaks(run, ...).
const RunDir& with_burnin_metrics(const RunDir& run, const std::vector<SoakResult>& soaks,
                                  RunDir& storage);

/// Line charts of the soaks: the rate per interval over time, one series per GPU or rank (the
/// last record of an item wins), and the maximum GPU temperature per interval over time where
/// telemetry was sampled. x = the interval's middle in seconds since the soak started.
std::vector<Chart> burnin_charts(const RunDir& run, const std::vector<SoakResult>& soaks);

}  // namespace clusterbench::report
