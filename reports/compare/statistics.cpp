// The Mann-Whitney U test (statistics.hpp).
#include "reports/compare/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace clusterbench::report {

namespace {

/// Average ranks (1-based) of `v`'s values among all of `v`; `ties` gets sum(t^3 - t) over the
/// groups of t equal values.
std::vector<double> average_ranks(const std::vector<double>& v, double& ties) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  ties = 0;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double t = static_cast<double>(j - i + 1);
    for (size_t k = i; k <= j; ++k) rank[idx[k]] = (static_cast<double>(i + j) + 2) / 2;
    ties += t * t * t - t;
    i = j + 1;
  }
  return rank;
}

/// P(U <= u) under the null hypothesis, exactly: the number of arrangements of n1 and n2 values
/// with U = k satisfies N(n1, n2, k) = N(n1 - 1, n2, k - n2) + N(n1, n2 - 1, k).
double exact_u_cdf(int n1, int n2, double u) {
  const int umax = n1 * n2;
  // count[j][k]: arrangements of i values of the first sample and j of the second with U = k.
  std::vector<std::vector<double>> prev(n2 + 1, std::vector<double>(umax + 1, 0)), cur = prev;
  for (int j = 0; j <= n2; ++j) prev[j][0] = 1;  // i = 0: U is 0
  for (int i = 1; i <= n1; ++i) {
    for (int j = 0; j <= n2; ++j)
      for (int k = 0; k <= umax; ++k)
        cur[j][k] = (k >= j ? prev[j][k - j] : 0) + (j > 0 ? cur[j - 1][k] : 0);
    std::swap(prev, cur);
  }
  double total = 0, below = 0;
  for (int k = 0; k <= umax; ++k) {
    total += prev[n2][k];
    if (k <= u + 1e-9) below += prev[n2][k];
  }
  return below / total;
}

}  // namespace

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return 1;
  std::vector<double> all(a);
  all.insert(all.end(), b.begin(), b.end());
  double ties = 0;
  const std::vector<double> rank = average_ranks(all, ties);
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  double r1 = 0;
  for (size_t i = 0; i < a.size(); ++i) r1 += rank[i];
  const double u1 = r1 - n1 * (n1 + 1) / 2;
  const double u = std::min(u1, n1 * n2 - u1);
  if (ties == 0 && a.size() <= 20 && b.size() <= 20)
    return std::min(1.0,
                    2 * exact_u_cdf(static_cast<int>(a.size()), static_cast<int>(b.size()), u));
  const double n = n1 + n2;
  const double var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
  if (var <= 0) return 1;  // every value equal
  const double z = (std::fabs(u - n1 * n2 / 2) - 0.5) / std::sqrt(var);
  return std::min(1.0, std::erfc(std::max(z, 0.0) / std::sqrt(2.0)));
}

namespace {

/// Sample variance (n - 1); needs at least two values.
double sample_variance(const std::vector<double>& v) {
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / static_cast<double>(v.size() - 1);
}

}  // namespace

Detectable detectable_change(const std::vector<double>& a, const std::vector<double>& b,
                             double reference, double tolerance) {
  Detectable d;
  if (a.size() < 2 || b.size() < 2 || reference == 0 || !std::isfinite(reference)) return d;
  const double va = sample_variance(a), vb = sample_variance(b);
  const double se =
      std::sqrt(va / static_cast<double>(a.size()) + vb / static_cast<double>(b.size()));
  d.change_pct = 100 * kDetectZ * se / std::fabs(reference);
  if (tolerance > 0) {
    const double need = kDetectZ * kDetectZ * (va + vb) / std::pow(tolerance * reference, 2);
    d.reps_needed = std::max(kMinReps, static_cast<int>(std::ceil(need - 1e-9)));
  }
  return d;
}

}  // namespace clusterbench::report
