// The burn-in's soak records (docs/burnin.md) and their charts. Soak records are those of a family
// with "series": "soak" in the spec table (reports/families.hpp); the soak derives its metrics
// itself (rate_drop, rate_dip, slowdown_intervals, ...), which the spec rows of
// reports/specs/burnin-*.json judge like any other. Reads records only.
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"
#include "records/spec.hpp"
#include "reports/charts.hpp"

namespace clusterbench::report {

/// One soak record (Report::soaks).
struct SoakResult {
  size_t record = 0;  ///< index into the run's records
  std::string item;   ///< "node01/gpu3", "node01/rank0"
  std::string case_key;
};

/// Every ok record of a soak family (SpecFamily::series "soak") whose extra.series is an array,
/// in record order.
std::vector<SoakResult> find_soaks(const RunDir& run, const std::vector<SpecFamily>& families);

/// Line charts of the soaks: the rate per interval over time, one series per GPU or rank (the
/// last record of an item wins), and the maximum GPU temperature per interval over time where
/// telemetry was sampled. x = the interval's middle in seconds since the soak started.
std::vector<Chart> burnin_charts(const RunDir& run, const std::vector<SoakResult>& soaks);

}  // namespace clusterbench::report
