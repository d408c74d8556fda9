// The significance test of compare (docs/compare.md "The rule"): a two-sided Mann-Whitney U test
// of two sides' repetitions, and how many repetitions a side needs before it can say anything.
#pragma once

#include <vector>

namespace clusterbench::report {

/// Repetitions a side needs before a change can be called: with 5 against 5 the smallest
/// two-sided Mann-Whitney p is 2 / C(10, 5) = 0.0079, well below kAlpha (3 against 3 can never
/// be significant: 2 / C(6, 3) = 0.1), and the normal approximation that Google Benchmark's
/// compare.py uses needs about 5 a side to be trusted.
inline constexpr int kMinReps = 5;
/// Significance level of the two-sided Mann-Whitney U test.
inline constexpr double kAlpha = 0.05;

/// Two-sided p-value of the Mann-Whitney U test (Mann & Whitney 1947) of samples `a` and `b`:
/// exact (the distribution of U by recursion) when both have at most 20 values and none tie,
/// else the normal approximation with the tie correction of the variance and a continuity
/// correction of 0.5, as scipy.stats.mannwhitneyu (which Google Benchmark's compare.py uses).
/// 1 when either is empty.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

/// A large sample sorted once for many tests against it (find_outliers tests each of 8,000 GPUs
/// against the fleet's 40,000 repetitions): its values in order and its tie term, sum(t^3 - t)
/// over its groups of t equal values.
struct RankPool {
  std::vector<double> sorted;
  double ties = 0;
};

/// `values` as a RankPool.
RankPool rank_pool(std::vector<double> values);

/// mann_whitney_p(a, rest), where rest is `pool` without `a`'s values when `a_in_pool` (each of
/// `a`'s values taken out once), else `pool` itself; the same p in O(|a| log |pool|).
double mann_whitney_p(const std::vector<double>& a, const RankPool& pool, bool a_in_pool);

/// z of a two-sided test at kAlpha (1.95996) plus z of 80% power (0.84162): a shift of this many
/// standard errors is detected 4 times in 5 (the usual minimum-detectable-effect rule).
inline constexpr double kDetectZ = 1.959964 + 0.841621;

/// What a pair of samples could detect (docs/compare.md "Not significant").
struct Detectable {
  double change_pct = -1;  ///< smallest |change| detected at p < kAlpha with 80% power; -1: none
  int reps_needed = 0;     ///< repetitions a side that would detect `tolerance`; 0: unknown
};

/// From the samples' standard deviations (n - 1) and sizes, relative to |reference|:
/// change_pct = 100 * kDetectZ * sqrt(sd_a^2 / n_a + sd_b^2 / n_b) / |reference|, and
/// reps_needed = ceil(kDetectZ^2 * (sd_a^2 + sd_b^2) / (tolerance * reference)^2), at least
/// kMinReps. Normal approximation of the U test (whose power is 95% of the t-test's for normal
/// data). Unknown (-1, 0) with fewer than 2 values a side or a zero reference.
Detectable detectable_change(const std::vector<double>& a, const std::vector<double>& b,
                             double reference, double tolerance);

}  // namespace clusterbench::report
