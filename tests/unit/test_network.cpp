// network.p2p's pair patterns and statistics (network/p2p.cpp), the node x node link matrices of
// the report (reports/links.cpp), network.tuning's A/B arithmetic, and both benchmarks' knobs.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "core/api/benchmark.hpp"
#include "network/p2p.hpp"
#include "network/tuning.hpp"
#include "reports/links.hpp"
#include "reports/links_render.hpp"
#include "reports/localize.hpp"

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

/// Checks that `rounds` are rounds of disjoint pairs (i < j < n) and returns all their pairs.
std::set<std::pair<int, int>> check_rounds(const std::vector<Pairs>& rounds, int n) {
  std::set<std::pair<int, int>> all;
  for (const auto& r : rounds) {
    std::set<int> busy;
    for (auto [i, j] : r) {
      EXPECT_TRUE(0 <= i && i < j && j < n) << i << "-" << j;
      EXPECT_TRUE(busy.insert(i).second && busy.insert(j).second) << "node twice in a round";
      EXPECT_TRUE(all.insert({i, j}).second) << "pair twice: " << i << "-" << j;
    }
  }
  return all;
}

TEST(P2pRounds, TournamentVisitsEveryPairOnceInNMinus1Rounds) {
  // Circle method, n = 4: node 3 fixed; round r pairs (3, r) and (r+1 mod 3, r-1 mod 3).
  EXPECT_EQ(network::p2p_rounds("all_pairs", 4),
            (std::vector<Pairs>{{{0, 3}, {1, 2}}, {{1, 3}, {0, 2}}, {{2, 3}, {0, 1}}}));
  for (int n : {2, 3, 5, 6, 8, 16, 101}) {
    auto rounds = network::p2p_rounds("all_pairs", n);
    EXPECT_EQ(rounds.size(), static_cast<size_t>(n % 2 ? n : n - 1)) << n;
    for (const auto& r : rounds) EXPECT_EQ(r.size(), static_cast<size_t>(n / 2)) << n;
    EXPECT_EQ(check_rounds(rounds, n).size(), static_cast<size_t>(n * (n - 1) / 2)) << n;
  }
  // 1,000 nodes: 999 rounds of 500 concurrent pairs, 499,500 pairs in all.
  auto big = network::p2p_rounds("all_pairs", 1000);
  EXPECT_EQ(big.size(), 999u);
  EXPECT_EQ(check_rounds(big, 1000).size(), 499500u);
  EXPECT_TRUE(network::p2p_rounds("all_pairs", 1).empty());
}

TEST(P2pRounds, RingSampleAndSequential) {
  // Ring of 5: (0,1) (1,2) (2,3) (3,4) (0,4) greedily: {01, 23}, {12, 34}, {04}.
  EXPECT_EQ(network::p2p_rounds("ring", 5),
            (std::vector<Pairs>{{{0, 1}, {2, 3}}, {{1, 2}, {3, 4}}, {{0, 4}}}));
  EXPECT_EQ(network::p2p_rounds("ring", 6).size(), 2u);
  // rounds=2 of the 7 rounds of 8 nodes: rounds 0 and 3 (floor(i * 7 / 2)).
  auto all = network::p2p_rounds("all_pairs", 8);
  auto two = network::p2p_rounds("all_pairs", 8, 2);
  EXPECT_EQ(two, (std::vector<Pairs>{all[0], all[3]}));
  std::set<int> met;  // every node meets 2 peers
  for (const auto& r : two)
    for (auto [i, j] : r) met.insert(i), met.insert(j);
  EXPECT_EQ(met.size(), 8u);
  EXPECT_EQ(network::p2p_rounds("all_pairs", 8, 99).size(), 7u);  // K above n-1 keeps all
  auto seq = network::p2p_rounds("all_pairs", 4, 0, false);
  EXPECT_EQ(seq, (std::vector<Pairs>{{{0, 3}}, {{1, 2}}, {{1, 3}}, {{0, 2}}, {{2, 3}}, {{0, 1}}}));
  EXPECT_THROW(network::p2p_rounds("star", 3), std::invalid_argument);
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

/// A link record of a matrix on `rail` ("" = MPI's path) whose fastest repetition took
/// `min_over_median` of the median time.
ResultRecord rail_link(const std::string& a, const std::string& b, double gbs,
                       const std::string& rail = "", double min_over_median = 0.99) {
  ResultRecord r = link(a, b, gbs);
  if (!rail.empty()) r.params["rail"] = rail;
  r.time.n = 5, r.time.median = 0.1, r.time.min = 0.1 * min_over_median;
  return r;
}

/// Every pair of hosts h1..h6 on `rail` at 25 GB/s, except where `slow` says otherwise.
std::vector<ResultRecord> six_nodes(const std::string& rail,
                                    const std::map<std::pair<int, int>, double>& slow) {
  std::vector<ResultRecord> out;
  for (int i = 1; i <= 6; ++i)
    for (int j = i + 1; j <= 6; ++j) {
      auto it = slow.find({i, j});
      out.push_back(rail_link("h" + std::to_string(i), "h" + std::to_string(j),
                              it == slow.end() ? 25 : it->second, rail));
    }
  return out;
}

std::vector<std::string> located_texts(const std::vector<ResultRecord>& recs) {
  std::vector<std::string> out;
  for (const auto& l : report::locate_link_faults(report::link_matrices(recs),
                                                  [](auto&, auto&, auto&) { return 0.1; }))
    out.push_back(l.kind + " " + (l.kind == "link" ? l.hosts[0] + "<->" + l.hosts[1] : l.host) +
                  (l.nic.empty() ? "" : " " + l.nic));
  return out;
}

TEST(Localise, NodeNicAndLinkAreNamedExactly) {
  // h4 slow on every path (all its links 6), h1<->h2 slow on MPI's path, h6's rail1 slow.
  std::map<std::pair<int, int>, double> node4 = {
      {{1, 4}, 6}, {{2, 4}, 6}, {{3, 4}, 6}, {{4, 5}, 6}, {{4, 6}, 6}};
  auto mpi = node4;
  mpi[{1, 2}] = 6;
  auto rail1 = node4;
  for (int i = 1; i < 6; ++i) rail1[{i, 6}] = 6;
  std::vector<ResultRecord> recs = six_nodes("", mpi);
  for (auto& r : six_nodes("rail0", node4)) recs.push_back(r);
  for (auto& r : six_nodes("rail1", rail1)) recs.push_back(r);
  // rail1 has 9 slow links of 15: the median of all links would be slow, the median of the
  // hosts' medians (25) is not.
  EXPECT_EQ(located_texts(recs),
            (std::vector<std::string>{"node h4", "nic h6 rail1", "link h1<->h2"}));
  auto located = report::locate_link_faults(report::link_matrices(recs),
                                            [](auto&, auto&, auto&) { return 0.1; });
  EXPECT_EQ(located[0].paths, (std::vector<std::string>{"mpi", "rail0", "rail1"}));
  EXPECT_EQ(located[0].links, 15);
  EXPECT_DOUBLE_EQ(located[0].worst_deviation, (6 - 25) / 25.0);
  EXPECT_EQ(located[1].params.value("rail", ""), "rail1");
  EXPECT_EQ(located[1].links, 5);
  EXPECT_NE(located[2].text.find("link h1<->h2 (mpi): -76%"), std::string::npos) << located[2].text;
}

TEST(Localise, NoiseAndSmallMatricesNameNothing) {
  // 12% below the typical 25 with a best repetition at 22 / 0.95 = 23.2 (-7.4%): noise.
  std::vector<ResultRecord> recs = six_nodes("", {});
  recs[0] = rail_link("h1", "h2", 22, "", 0.95);
  EXPECT_TRUE(located_texts(recs).empty());
  recs[0] = rail_link("h1", "h2", 22, "", 0.99);  // best 22.2 (-11%): a slow link
  EXPECT_EQ(located_texts(recs), (std::vector<std::string>{"link h1<->h2"}));
  // Without time statistics (one repetition) the noise is unknown: the same link is not judged;
  // a negative value is no measurement and is skipped.
  recs[0].time = TimeStats{};
  EXPECT_TRUE(located_texts(recs).empty());
  recs[0] = rail_link("h1", "h2", -5, "", 0.99);
  EXPECT_TRUE(located_texts(recs).empty());
  // Two hosts: one link, nothing to compare it with.
  EXPECT_TRUE(located_texts({rail_link("a", "b", 1)}).empty());
  // Three nodes, one link low: the link is named, not a node (two links are too few to blame
  // one: the other may have been measured in a loaded moment). Two of the three low cannot be
  // told from one fast link: the typical link is the links' median, and nothing is named.
  EXPECT_EQ(
      located_texts({rail_link("a", "b", 6), rail_link("b", "c", 25), rail_link("a", "c", 25)}),
      (std::vector<std::string>{"link a<->b"}));
  EXPECT_TRUE(
      located_texts({rail_link("a", "b", 6), rail_link("b", "c", 6), rail_link("a", "c", 25)})
          .empty());
  // A slow node on MPI's path only (no rails): named as the node.
  auto only = six_nodes("", {{{1, 3}, 5}, {{2, 3}, 5}, {{3, 4}, 5}, {{3, 5}, 5}, {{3, 6}, 5}});
  EXPECT_EQ(located_texts(only), (std::vector<std::string>{"node h3"}));
}

/// Four hosts' six links in `mode`, each with five repetitions v x (1 + 0.03 k), k = -2..2;
/// `slow` sets a link's (lower host first) value.
std::vector<ResultRecord> four_with_reps(const std::string& mode,
                                         const std::map<std::pair<int, int>, double>& slow) {
  std::vector<ResultRecord> out;
  for (int i = 1; i <= 4; ++i)
    for (int j = i + 1; j <= 4; ++j) {
      auto it = slow.find({i, j});
      const double v = it == slow.end() ? 20 : it->second;
      ResultRecord r = rail_link("h" + std::to_string(i), "h" + std::to_string(j), v);
      r.params["mode"] = mode;
      for (int k = -2; k <= 2; ++k) r.metrics[0].reps.push_back(v * (1 + 0.03 * k));
      out.push_back(r);
    }
  return out;
}

// Issue 47: one answer per run from both directions, on the repetitions. A link low in one mode
// only (measured in a loaded moment) is named nowhere; low in both, it is named once with each
// mode's evidence; a link whose repetitions overlap the rest's (not significant) is not named,
// even past the tolerance.
TEST(Localise, BothDirectionsAndTheirRepetitionsGiveOneAnswer) {
  auto both = four_with_reps("unidirectional", {{{1, 2}, 5}});
  for (auto& r : four_with_reps("bidirectional", {{{1, 2}, 8}})) both.push_back(r);
  EXPECT_EQ(located_texts(both), (std::vector<std::string>{"link h1<->h2"}));
  auto located = report::locate_link_faults(report::link_matrices(both),
                                            [](auto&, auto&, auto&) { return 0.1; });
  ASSERT_EQ(located.size(), 1u);
  // Typical link 20 in both: -75% one way, -60% both ways.
  EXPECT_NE(located[0].text.find("-75% unidirectional (typical 20 GB/s), -60% bidirectional"),
            std::string::npos)
      << located[0].text;
  EXPECT_EQ(located[0].params.count("mode"), 0u);
  EXPECT_DOUBLE_EQ(located[0].worst_deviation, -0.75);

  // Low one way only: no answer.
  auto one = four_with_reps("unidirectional", {{{2, 3}, 5}});
  for (auto& r : four_with_reps("bidirectional", {})) one.push_back(r);
  EXPECT_TRUE(located_texts(one).empty());

  // 16 (-20%, past the 10% tolerance) on repetitions 10..26 that straddle the others' 18.8-21.2:
  // U test p >= 0.05, not named; the same median on tight repetitions is.
  auto noisy = four_with_reps("unidirectional", {{{1, 2}, 16}});
  noisy[0].metrics[0].reps = {10, 13, 16, 21, 26};
  EXPECT_TRUE(located_texts(noisy).empty());
  noisy[0].metrics[0].reps = {15.5, 15.8, 16, 16.2, 16.5};
  EXPECT_EQ(located_texts(noisy), (std::vector<std::string>{"link h1<->h2"}));
}

// The typical link by hand. 3 nodes, one link slow, the healthy two 30% apart (a loaded
// machine): the links' median, 1.65 (the host medians would give about half of it). 4 nodes,
// every link of n4 slow: host medians n1..n3 {s, a, a} -> a, n4 {s, s, s} -> s; of the even four,
// the better middle: a = 2. As latencies (lower is better) n4 is the fast one, and three hosts of
// four still say 2.
TEST(LinkMatrix, TypicalLinkByHand) {
  using report::LinkValue;
  EXPECT_DOUBLE_EQ(report::typical_link({{"a", "b", 0.02}, {"a", "c", 1.65}, {"b", "c", 2.17}}),
                   1.65);
  std::vector<LinkValue> four = {{"n1", "n2", 2},   {"n1", "n3", 2},   {"n2", "n3", 2},
                                 {"n1", "n4", 0.5}, {"n2", "n4", 0.5}, {"n3", "n4", 0.5}};
  EXPECT_DOUBLE_EQ(report::typical_link(four), 2);
  EXPECT_DOUBLE_EQ(report::typical_link(four, false), 2);
  // One fast link among latencies of 4: every host's median is 4, the typical link too.
  std::vector<LinkValue> two = {{"n1", "n2", 2}, {"n1", "n3", 4}, {"n1", "n4", 4},
                                {"n2", "n3", 4}, {"n2", "n4", 4}, {"n3", "n4", 4}};
  EXPECT_DOUBLE_EQ(report::typical_link(two, false), 4);
  EXPECT_TRUE(std::isnan(report::typical_link({{"a", "b", 1}})));
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
  std::string md = report::render_link_matrices_markdown(ms);
  EXPECT_NE(md.find("## Links"), std::string::npos) << md;
  EXPECT_NE(md.find("| n2 | 0.0478 | - | 0.0194 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| n3 | 0.044 | 0.0194 | - |"), std::string::npos) << md;
  EXPECT_EQ(report::render_link_matrices_markdown(report::link_matrices({cluster})), "");
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
  auto rails = b->cases(Settings("ci", {"network.p2p.rails=mpi,ib1", "network.p2p.modes=latency"}));
  ASSERT_EQ(rails.size(), 2u);
  EXPECT_FALSE(rails[0].contains("rail"));  // MPI's path keeps the params it always had
  EXPECT_EQ(rails[1]["rail"], "ib1");
  EXPECT_EQ(plan_error("network.p2p", "ci", "network.p2p.rails=eth0/1"),
            "--set network.p2p.rails: 'eth0/1' is not an interface name (1-15 characters, no '/' "
            "or space) or mpi");
  EXPECT_EQ(plan_error("network.p2p", "ci", "network.p2p.rails=mpi,ib0,mpi"),
            "--set network.p2p.rails: 'mpi' is named twice");
  EXPECT_EQ(plan_error("network.p2p", "ci", "network.p2p.rounds=-1"),
            "--set network.p2p.rounds: '-1' must not be negative");
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
            "--set network.tuning.repeats must be 5..1000 (got 4)");
  EXPECT_EQ(plan_error("network.tuning", "ci", "network.tuning.repeats=99999999999"),
            "--set network.tuning.repeats must be 5..1000 (got 99999999999)");
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
