// network.p2p's pair patterns and statistics (network/p2p.cpp), the node x node link matrices of
// the report (reports/links.cpp), network.tuning's A/B arithmetic, and both benchmarks' knobs.
#include <gtest/gtest.h>

#include <cmath>

#include "core/benchmark.hpp"
#include "network/p2p.hpp"
#include "network/tuning.hpp"
#include "reports/links.hpp"

namespace clusterbench {
namespace {

using Pairs = std::vector<std::pair<int, int>>;

TEST(P2pPairs, AllPairsVisitsEveryPairOnce) {
  EXPECT_EQ(network::p2p_pairs("all_pairs", 1), Pairs{});
  EXPECT_EQ(network::p2p_pairs("all_pairs", 2), (Pairs{{0, 1}}));
  EXPECT_EQ(network::p2p_pairs("all_pairs", 4),
            (Pairs{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}));
  EXPECT_EQ(network::p2p_pairs("all_pairs", 16).size(), 120u);  // 16 * 15 / 2
}

TEST(P2pPairs, RingVisitsNeighboursWithoutDuplicates) {
  EXPECT_EQ(network::p2p_pairs("ring", 2), (Pairs{{0, 1}}));
  EXPECT_EQ(network::p2p_pairs("ring", 3), (Pairs{{0, 1}, {1, 2}, {0, 2}}));
  EXPECT_EQ(network::p2p_pairs("ring", 5), (Pairs{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 4}}));
  EXPECT_THROW(network::p2p_pairs("star", 3), std::invalid_argument);
}

TEST(P2pStats, BytesPerOperationAndNearestRankPercentiles) {
  EXPECT_EQ(network::p2p_bytes_per_op("unidirectional", 1 << 20), 1048576.0);
  EXPECT_EQ(network::p2p_bytes_per_op("bidirectional", 1 << 20), 2097152.0);
  std::vector<double> xs;
  for (int i = 100; i >= 1; --i) xs.push_back(i);  // 1..100, unsorted
  EXPECT_EQ(network::percentile(xs, 50), 50);
  EXPECT_EQ(network::percentile(xs, 99), 99);
  EXPECT_EQ(network::percentile(xs, 100), 100);
  EXPECT_EQ(network::percentile({7, 3, 5}, 50), 5);  // rank ceil(1.5) = 2
  EXPECT_EQ(network::percentile({7, 3, 5}, 99), 7);
  EXPECT_EQ(network::percentile({}, 50), 0);
}

ResultRecord link(const std::string& a, const std::string& b, double gbs,
                  Status status = Status::ok) {
  ResultRecord r;
  r.benchmark = "network.p2p";
  r.params = {{"pattern", "all_pairs"}, {"mode", "unidirectional"}, {"bytes", 1048576}};
  r.scope.kind = ScopeKind::link;
  r.scope.hosts = {a, b};
  r.status = status;
  r.metrics.push_back({"bandwidth", gbs, "GB/s", true});
  return r;
}

TEST(LinkMatrix, SymmetricMatrixFromLinkRecords) {
  std::vector<ResultRecord> recs = {link("n1", "n2", 0.0478), link("n1", "n3", 0.044),
                                    link("n2", "n3", 0.0194), link("n3", "n4", 9, Status::failed)};
  ResultRecord cluster = link("n1", "n2", 1);
  cluster.scope = Scope{};
  cluster.scope.kind = ScopeKind::cluster;
  recs.push_back(cluster);
  auto ms = report::link_matrices(recs);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].hosts, (std::vector<std::string>{"n1", "n2", "n3"}));  // n4: failed only
  EXPECT_EQ(ms[0].unit, "GB/s");
  EXPECT_EQ(ms[0].values[1][2], 0.0194);
  EXPECT_EQ(ms[0].values[2][1], 0.0194);
  EXPECT_EQ(ms[0].values[0][2], 0.044);
  EXPECT_TRUE(std::isnan(ms[0].values[1][1]));
  std::string md = report::render_link_matrices_markdown(recs);
  EXPECT_NE(md.find("## Links"), std::string::npos) << md;
  EXPECT_NE(md.find("| n2 | 0.0478 | - | 0.0194 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| n3 | 0.044 | 0.0194 | - |"), std::string::npos) << md;
  EXPECT_EQ(report::render_link_matrices_markdown({cluster}), "");
}

TEST(TuningAb, RatioIsMedianOfPerRepeatRatiosWithSpread) {
  // t_A / t_B per repeat: 2, 1.5, 1, 4, 1.25 -> sorted 1, 1.25, 1.5, 2, 4; median 1.5;
  // nearest-rank p25 = 2nd = 1.25, p75 = 4th = 2 -> spread (2 - 1.25) / 1.5 = 0.5.
  auto ab = network::ab_ratio({2, 3, 1, 4, 5}, {1, 2, 1, 1, 4});
  EXPECT_EQ(ab.ratios, (std::vector<double>{2, 1.5, 1, 4, 1.25}));
  EXPECT_DOUBLE_EQ(ab.ratio, 1.5);
  EXPECT_DOUBLE_EQ(ab.spread, 0.5);
  auto even = network::ab_ratio({1, 2, 3, 4, 5, 6}, {1, 1, 1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(even.ratio, 3.5);
  EXPECT_THROW(network::ab_ratio({1, 2}, {1}), std::invalid_argument);
  EXPECT_THROW(network::ab_ratio({}, {}), std::invalid_argument);
  EXPECT_THROW(network::ab_ratio({1}, {0}), std::invalid_argument);
}

TEST(TuningAb, SysctlTextIsWhitespaceNormalised) {
  EXPECT_EQ(network::normalise_sysctl("4096\t87380\t2147483647\n"), "4096 87380 2147483647");
  EXPECT_EQ(network::normalise_sysctl("  always [madvise] never\n"), "always [madvise] never");
  EXPECT_EQ(network::normalise_sysctl(""), "");
}

/// The message of the InputError the plan of benchmark `id` throws with `set` ("" when none).
std::string plan_error(const std::string& id, const std::string& suite, const std::string& set) {
  try {
    Registry::get().find(id)->cases(Settings(suite, {set}));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(P2pKnobs, SuiteDefaultsAndChecks) {
  const Benchmark* b = Registry::get().find("network.p2p");
  ASSERT_NE(b, nullptr);
  auto ci = b->cases(Settings("ci", {}));
  ASSERT_EQ(ci.size(), 3u);  // all_pairs x the three modes
  EXPECT_EQ(ci[0],
            json({{"pattern", "all_pairs"}, {"mode", "unidirectional"}, {"bytes", 4 << 20}}));
  EXPECT_EQ(ci[2], json({{"pattern", "all_pairs"}, {"mode", "latency"}, {"bytes", 8}}));
  auto full = b->cases(Settings("full", {}));
  ASSERT_EQ(full.size(), 6u);  // all_pairs and ring
  EXPECT_EQ(full[3]["pattern"], "ring");
  EXPECT_EQ(full[3]["bytes"], 64 << 20);
  EXPECT_EQ(plan_error("network.p2p", "ci", "network.p2p.patterns=star"),
            "--set network.p2p.patterns: unknown pattern 'star' (all_pairs, ring)");
  EXPECT_EQ(plan_error("network.p2p", "ci", "network.p2p.bytes=2G"),
            "--set network.p2p.bytes must be in 1..1G and latency_bytes in 0..1M");
  EXPECT_EQ(plan_error("network.p2p", "ci", "network.p2p.modes=latency,jitter"),
            "--set network.p2p.modes: unknown value 'jitter' (unidirectional, bidirectional, "
            "latency)");
}

TEST(TuningKnobs, SuiteDefaultsAndChecks) {
  const Benchmark* b = Registry::get().find("network.tuning");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->cases(Settings("ci", {})).size(), 5u);
  EXPECT_EQ(b->cases(Settings("ci", {"network.tuning.effects=hugetlb"})),
            std::vector<json>{json({{"effect", "hugetlb"}})});
  EXPECT_EQ(plan_error("network.tuning", "ci", "network.tuning.repeats=4"),
            "--set network.tuning.repeats must be at least 5");
  EXPECT_EQ(plan_error("network.tuning", "ci", "network.tuning.allow_changes=yes"),
            "--set network.tuning.allow_changes: unknown value 'yes' (false, true)");
  EXPECT_EQ(plan_error("network.tuning", "ci", "network.tuning.tcp_bytes=lots"),
            "--set network.tuning.tcp_bytes: 'lots' is not a size (examples: 8, 4K, 64M, 8G)");
  std::string defaults;
  for (const KnobSpec* k : b->knob_specs()) defaults += describe_knob(b->id(), *k) + "\n";
  EXPECT_NE(defaults.find("--set network.tuning.bytes=256M/1G/4G  (size, B)"), std::string::npos)
      << defaults;
  EXPECT_NE(defaults.find("--set network.tuning.repeats=5  (integer, count)"), std::string::npos)
      << defaults;
}
}  // namespace
}  // namespace clusterbench
