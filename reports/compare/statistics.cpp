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

/// t^3 - t: a group of t equal values' share of the tie term.
double cubed_ties(double t) { return t * t * t - t; }

/// The two-sided p of U (the smaller of U1 and n1 n2 - U1) by the normal approximation, with the
/// tie term `ties` and a continuity correction of 0.5.
double normal_u_p(double u, double n1, double n2, double ties) {
  const double n = n1 + n2;
  const double var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
  if (var <= 0) return 1;  // every value equal
  const double z = (std::fabs(u - n1 * n2 / 2) - 0.5) / std::sqrt(var);
  return std::min(1.0, std::erfc(std::max(z, 0.0) / std::sqrt(2.0)));
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
  return normal_u_p(u, n1, n2, ties);
}

RankPool rank_pool(std::vector<double> values) {
  RankPool pool;
  std::sort(values.begin(), values.end());
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    while (j < values.size() && values[j] == values[i]) ++j;
    pool.ties += cubed_ties(static_cast<double>(j - i));
    i = j;
  }
  pool.sorted = std::move(values);
  return pool;
}

double mann_whitney_p(const std::vector<double>& a, const RankPool& pool, bool a_in_pool) {
  const size_t n_rest = pool.sorted.size() - (a_in_pool ? a.size() : 0);
  if (a.empty() || n_rest == 0) return 1;
  if (n_rest <= 20) {  // the exact test may apply: the plain way
    std::vector<double> rest = pool.sorted;
    if (a_in_pool)
      for (double x : a) rest.erase(std::lower_bound(rest.begin(), rest.end(), x));
    return mann_whitney_p(a, rest);
  }
  // Ranks in the combined sample (rest and a): the pool when a is in it, else the pool plus a.
  const auto& v = pool.sorted;
  double r1 = 0, ties = pool.ties;
  std::vector<double> seen;  // a's distinct values, for the tie term
  for (double x : a) {
    const auto range = std::equal_range(v.begin(), v.end(), x);
    double less = static_cast<double>(range.first - v.begin());
    double equal = static_cast<double>(range.second - range.first);
    if (!a_in_pool) {
      const auto a_less = std::count_if(a.begin(), a.end(), [x](double y) { return y < x; });
      const auto a_equal = std::count(a.begin(), a.end(), x);
      less += static_cast<double>(a_less);
      if (std::find(seen.begin(), seen.end(), x) == seen.end()) {
        seen.push_back(x);
        ties += cubed_ties(equal + static_cast<double>(a_equal)) - cubed_ties(equal);
      }
      equal += static_cast<double>(a_equal);
    }
    r1 += less + (equal + 1) / 2;
  }
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(n_rest);
  const double u1 = r1 - n1 * (n1 + 1) / 2;
  return normal_u_p(std::min(u1, n1 * n2 - u1), n1, n2, ties);
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
