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

}  // namespace clusterbench::report
