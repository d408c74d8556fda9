// Statistics of repetitions and time samples (docs/metrics.md "Time statistics"): the median, the
// relative spread and the nearest-rank percentiles every record and report uses.
#pragma once

#include <vector>

namespace clusterbench {

/// Median of `values` (mean of the middle two for an even count); 0 when empty.
double median_of(std::vector<double> values);

/// Relative interquartile range of `values`: (p75 - p25) / median, nearest rank; 0 for fewer than
/// 2 values or a median of 0. The same statistic as TimeStats::spread.
double relative_spread(std::vector<double> values);

/// Time per operation, seconds. p95 by nearest rank; spread = (p75 - p25) / median.
struct TimeStats {
  int n = 0;
  double min = 0, median = 0, mean = 0, p95 = 0, max = 0, spread = 0;
};

/// Computes TimeStats over samples (seconds per operation). Empty input gives n = 0.
TimeStats compute_stats(std::vector<double> samples);

/// Value at quantile q in [0,1] by nearest rank over sorted values (q = 0.95 -> p95).
double nearest_rank(const std::vector<double>& sorted, double q);

}  // namespace clusterbench
