// The pooled Mann-Whitney test (reports/compare/statistics.hpp): the same p as the plain test
// of one sample against the rest of a pool, with and without ties, in or out of the pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "reports/compare/statistics.hpp"

using namespace clusterbench::report;

namespace {

/// `pool` without one copy of each value of `a`.
std::vector<double> without(std::vector<double> pool, const std::vector<double>& a) {
  for (double x : a) pool.erase(std::find(pool.begin(), pool.end(), x));
  return pool;
}

}  // namespace

TEST(RankPool, TieTermByHand) {
  // Groups 1 x2, 2 x3, 5 x1: (8 - 2) + (27 - 3) + 0 = 30.
  const RankPool p = rank_pool({2, 5, 1, 2, 1, 2});
  EXPECT_EQ(p.sorted, (std::vector<double>{1, 1, 2, 2, 2, 5}));
  EXPECT_DOUBLE_EQ(p.ties, 30);
}

TEST(RankPool, SameAsThePlainTestAgainstTheRest) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> coarse(0, 40);  // many ties
  std::normal_distribution<double> fine(100, 1);
  for (int trial = 0; trial < 200; ++trial) {
    const bool tied = trial % 2 == 0;
    std::vector<double> pool;
    const int n = 25 + trial % 60;
    for (int i = 0; i < n; ++i) pool.push_back(tied ? coarse(gen) : fine(gen));
    std::vector<double> a;  // 5 members of the pool, shifted on some trials
    for (int i = 0; i < 5; ++i) a.push_back(pool[static_cast<size_t>(i * 3)]);
    const RankPool rp = rank_pool(pool);
    EXPECT_NEAR(mann_whitney_p(a, rp, true), mann_whitney_p(a, without(pool, a)), 1e-12);
    std::vector<double> out = a;  // a sample outside the pool
    for (double& x : out) x += tied ? 3 : 0.7;
    EXPECT_NEAR(mann_whitney_p(out, rp, false), mann_whitney_p(out, pool), 1e-12);
  }
}

TEST(RankPool, SmallRestUsesTheExactTest) {
  // 5 against 5 with no ties: the exact p, 2 / C(10, 5).
  const RankPool rp = rank_pool({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  EXPECT_NEAR(mann_whitney_p({6, 7, 8, 9, 10}, rp, true), 2.0 / 252, 1e-12);
  EXPECT_NEAR(mann_whitney_p({11, 12, 13, 14, 15}, rank_pool({1, 2, 3, 4, 5}), false), 2.0 / 252,
              1e-12);
}
