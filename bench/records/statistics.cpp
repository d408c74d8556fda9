// Statistics (statistics.hpp).
#include "records/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace clusterbench {

double nearest_rank(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  // Nearest-rank: the smallest value with at least q of the data at or below it.
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

TimeStats compute_stats(std::vector<double> samples) {
  TimeStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.n = static_cast<int>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / s.n;
  size_t mid = samples.size() / 2;
  s.median = samples.size() % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
  s.p95 = nearest_rank(samples, 0.95);
  double iqr = nearest_rank(samples, 0.75) - nearest_rank(samples, 0.25);
  s.spread = s.median > 0 ? iqr / s.median : 0;
  return s;
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

double relative_spread(std::vector<double> values) {
  if (values.size() < 2) return 0;
  std::sort(values.begin(), values.end());
  const double med = median_of(values);
  if (med == 0) return 0;
  return std::fabs((nearest_rank(values, 0.75) - nearest_rank(values, 0.25)) / med);
}

}  // namespace clusterbench
