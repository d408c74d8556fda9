// compare on fixture run directories (tests/fixtures/results/compare-*): a driver upgrade.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "records/spec.hpp"
#include "reports/compare.hpp"
#include "reports/text.hpp"

using namespace clusterbench;
using namespace clusterbench::report;

namespace {

const Comparison& fixture() {
  // The comparison points into both run directories: they live as long as it does.
  static const RunDir base = read_run_dir(std::string(CB_FIXTURES) + "/results/compare-baseline");
  static const RunDir cur = read_run_dir(std::string(CB_FIXTURES) + "/results/compare-current");
  static const Comparison c = compare(base, cur, {});
  return c;
}

const CaseChange& find_case(const Comparison& c, const std::string& bench,
                            const std::string& params_sub, const std::string& item_sub) {
  for (const auto& cc : c.cases)
    if (cc.benchmark() == bench && cc.params().dump().find(params_sub) != std::string::npos &&
        cc.item().find(item_sub) != std::string::npos)
      return cc;
  throw std::runtime_error("no case " + bench + " " + params_sub + " " + item_sub);
}

}  // namespace

namespace {

/// A metric whose 7 repetitions have median `v` and relative IQR `spread`.
Metric reps_metric(double v, double spread, bool higher_is_better = true,
                   const std::string& unit = "GB/s") {
  Metric m{"m", v, unit, higher_is_better, {}, 0};
  for (double k : {-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0}) m.reps.push_back(v * (1 + spread * k));
  return m;
}

std::string verdict(const Metric& b, const Metric& c, double tolerance) {
  MetricChange mc;
  judge_metric(b, c, tolerance, mc);
  return mc.verdict;
}

}  // namespace

TEST(Compare, MannWhitneyHandComputed) {
  // Separate samples of 5: U = 0, exact two-sided p = 2 / C(10, 5) = 2 / 252.
  EXPECT_NEAR(mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 2.0 / 252, 1e-12);
  // 3 against 3 can never reach 0.05: its smallest two-sided p is 2 / C(6, 3) = 0.1.
  EXPECT_NEAR(mann_whitney_p({1, 2, 3}, {4, 5, 6}), 0.1, 1e-12);
  // a = {1, 3, 5}, b = {2, 4, 6}: U = 3 (pairs of a above b: 3>2, 5>2, 5>4); P(U <= 3) = 7/20
  // (U counts 1,1,2,3,3 for 0..3: 1+1+2+3 = 7 of C(6,3) = 20), two-sided 0.7.
  EXPECT_NEAR(mann_whitney_p({1, 3, 5}, {2, 4, 6}), 0.7, 1e-12);
  // Ties: normal approximation with tie and continuity corrections. a = {1,1,2,2}, b = {2,3,3,3}:
  // ranks 1.5,1.5,4,4 | 4,7,7,7; R1 = 11, U1 = 1, mu = 8, ties: 2 (t=2), 3 (t=3), 3 (t=3):
  // sum t^3-t = 6 + 24 + 24 = 54; var = 16/12 * (9 - 54/56) = 10.714...; z = (7 - 0.5)/3.2733.
  const double var = 16.0 / 12 * (9 - 54.0 / 56);
  EXPECT_NEAR(mann_whitney_p({1, 1, 2, 2}, {2, 3, 3, 3}),
              std::erfc((7 - 0.5) / std::sqrt(var) / std::sqrt(2.0)), 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_p({5, 5, 5, 5, 5}, {5, 5, 5, 5, 5}), 1.0);
}

TEST(Compare, MetricRule) {
  // 10% GEMM drop, 0.5% spread each side, tolerance 2%: regressed (p = 2 / C(14, 7)).
  MetricChange mc;
  judge_metric(reps_metric(700, 0.005), reps_metric(630, 0.005), 0.02, mc);
  EXPECT_EQ(mc.verdict, kRegressed);
  EXPECT_NEAR(mc.p_value, 2.0 / 3432, 1e-12);
  EXPECT_EQ(mc.baseline_n, 7);
  EXPECT_NEAR(mc.baseline_spread, 0.005, 1e-12);
  // 1% change against a 3% tolerance: unchanged, whatever the test says.
  EXPECT_EQ(verdict(reps_metric(280, 0.001), reps_metric(282.8, 0.001), 0.03), kUnchanged);
  // 10% drop with a +-15% spread: past the tolerance but not significant, and not unchanged.
  judge_metric(reps_metric(700, 0.15), reps_metric(630, 0.15), 0.02, mc);
  EXPECT_EQ(mc.verdict, kNotSignificant);
  EXPECT_GT(mc.p_value, 0.05);
  EXPECT_NE(mc.reason.find("not significant (p = "), std::string::npos) << mc.reason;
  // What this pair could detect, by hand: the reps are v(1 + 0.15k), k = -1, -.5, -.25, 0, .25,
  // .5, 1 (sum k^2 = 2.625), so var = (0.15 v)^2 * 2.625 / 6: 4823.4375 at 700, 3906.984375 at
  // 630; se = sqrt((4823.4375 + 3906.984375) / 7) = 35.3157; 2.801585 * se / 700 = 14.1343%.
  // Detecting 2% needs 2.801585^2 * 8730.421875 / 14^2 = 349.6, so 350 repetitions a side.
  EXPECT_NEAR(mc.detectable_pct, 14.1343, 1e-3);
  EXPECT_EQ(mc.reps_needed, 350);
  // Lower is better: latency 20 -> 18 us is an improvement, 20 -> 22 a regression.
  EXPECT_EQ(verdict(reps_metric(20, 0.01, false, "us"), reps_metric(18, 0.01, false, "us"), 0.05),
            kImproved);
  EXPECT_EQ(verdict(reps_metric(20, 0.01, false, "us"), reps_metric(22, 0.01, false, "us"), 0.05),
            kRegressed);
  // One value a side (fio before repetitions, a best-time metric): never regressed.
  judge_metric(Metric{"m", 5.46, "GB/s", true, {}, 0}, Metric{"m", 3.26, "GB/s", true, {}, 0}, 0.05,
               mc);
  EXPECT_EQ(mc.verdict, kNotComparable);
  EXPECT_EQ(mc.reason, "one number a run (no repetitions), so a change cannot be tested");
  judge_metric(reps_metric(5.46, 0.01, true, "GB/s"),
               Metric{"m", 3.26, "GB/s", true, {3, 3.2, 3.3}}, 0.05, mc);
  EXPECT_EQ(mc.verdict, kNotComparable);
  EXPECT_EQ(mc.reason, "n = 7/3, needs 5 repetitions a side");
  // One number a run that did not move (a count of wrong results, 0 and 0): unchanged, saying so;
  // one that moved stays not comparable.
  judge_metric(Metric{"wrong", 0, "count", false, {}, 0}, Metric{"wrong", 0, "count", false, {}, 0},
               0.05, mc);
  EXPECT_EQ(mc.verdict, kUnchanged);
  EXPECT_EQ(mc.reason, "the same value in both runs (one number a run, no repetitions)");
  judge_metric(Metric{"wrong", 0, "count", false, {}, 0}, Metric{"wrong", 3, "count", false, {}, 0},
               0.05, mc);
  EXPECT_EQ(mc.verdict, kNotComparable);
  // 4 repetitions a side: not comparable either.
  Metric four = reps_metric(100, 0.01);
  four.reps.resize(4);
  EXPECT_EQ(verdict(four, reps_metric(50, 0.01), 0.05), kNotComparable);
  EXPECT_EQ(verdict(reps_metric(0, 0), reps_metric(0, 0), 0.05), kUnchanged);
}

TEST(Compare, LatencyFloor) {
  // batch_wait_p50 0.12 -> 0.18 us (+50%) on 7 clean repetitions: under the 1 us floor.
  MetricChange mc;
  judge_metric(reps_metric(0.12, 0.01, false, "us"), reps_metric(0.18, 0.01, false, "us"), 0.05,
               mc);
  EXPECT_EQ(mc.verdict, kUnchanged);
  EXPECT_EQ(mc.reason, "moved less than the latency floor 1 us");
  // 0.9 us -> 2.0 us moved 1.1 us, past the floor: regressed.
  EXPECT_EQ(verdict(reps_metric(0.9, 0.01, false, "us"), reps_metric(2.0, 0.01, false, "us"), 0.05),
            kRegressed);
  // A timer resolution of 1 us raises the floor to 2 us.
  Metric b = reps_metric(10, 0.01, false, "us"), c = reps_metric(11.5, 0.01, false, "us");
  EXPECT_EQ(verdict(b, c, 0.05), kRegressed);
  c.resolution = 1;
  EXPECT_EQ(verdict(b, c, 0.05), kUnchanged);
  // In seconds the floor is 1e-6 s: 10 -> 10.8 us (+8%) is under it, 10 -> 15 us is not.
  EXPECT_EQ(
      verdict(reps_metric(1e-5, 0.01, false, "s"), reps_metric(1.08e-5, 0.01, false, "s"), 0.05),
      kUnchanged);
  EXPECT_EQ(
      verdict(reps_metric(1e-5, 0.01, false, "s"), reps_metric(1.5e-5, 0.01, false, "s"), 0.05),
      kRegressed);
  // A rate that states its work per operation: its time per operation is floored. 8 B all_reduce
  // at 0.033 -> 0.0155 GB/s is 0.24 -> 0.52 us per operation: -53%, but under 1 us.
  Metric rb = reps_metric(8e-9 / 0.24e-6, 0.01), rc = reps_metric(8e-9 / 0.52e-6, 0.01);
  rb.work = rc.work = 8e-9;  // GB per operation
  judge_metric(rb, rc, 0.1, mc);
  EXPECT_EQ(mc.verdict, kUnchanged);
  EXPECT_EQ(mc.reason,
            "the time per operation moved less than the latency floor 1 us (0.24 -> 0.52 us)");
  // 2 MiB at 8.2 -> 6.8 GB/s is 256 -> 308 us: regressed.
  rb = reps_metric(8.2, 0.01), rc = reps_metric(6.8, 0.01);
  rb.work = rc.work = 2.097152e-3;
  EXPECT_EQ(verdict(rb, rc, 0.1), kRegressed);
  // A bandwidth that states no work has no floor.
  EXPECT_EQ(verdict(reps_metric(0.12, 0.01), reps_metric(0.06, 0.01), 0.05), kRegressed);
}

TEST(Compare, SpecTolerances) {
  std::vector<SpecFamily> fams(2);
  fams[0].benchmark = "io.*";
  fams[0].compare = {{"*", 0.15}};
  fams[1].benchmark = "io.fio";
  fams[1].compare = {{"*", 0.15}, {"*_clat_*", 0.30}};
  EXPECT_DOUBLE_EQ(tolerance_for({}, "io.fio", "read_bw", "GB/s", fams), 0.15);
  EXPECT_DOUBLE_EQ(tolerance_for({}, "io.fio", "read_clat_p99", "us", fams), 0.30);
  EXPECT_DOUBLE_EQ(tolerance_for({}, "io.dataloader", "samples_per_s", "samples/s", fams), 0.15);
  EXPECT_DOUBLE_EQ(tolerance_for({}, "compute.gemm", "tflops", "TFLOP/s", fams), 0.02);
  // --tolerance beats the table.
  EXPECT_DOUBLE_EQ(
      tolerance_for({parse_tolerance("io.fio=40%")}, "io.fio", "read_clat_p99", "us", fams), 0.40);
}

// The shipped cpu-node table: its network.* at 30% (over base.json's 10%), and base.json's
// network.tuning family after it sets the A/B ratio to 50%.
TEST(Compare, ShippedTuningRatioTolerance) {
  const Spec s = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/cpu-node.json");
  EXPECT_DOUBLE_EQ(tolerance_for({}, "network.tuning", "ratio", "ratio", s.families), 0.50);
  EXPECT_DOUBLE_EQ(tolerance_for({}, "network.p2p", "bandwidth", "GB/s", s.families), 0.30);
  EXPECT_DOUBLE_EQ(tolerance_for({}, "compute.memory_bandwidth", "bandwidth", "GB/s", s.families),
                   0.25);
  // MPI over the host's shared memory: 50% (docs/compare.md's table gives the measured noise).
  EXPECT_DOUBLE_EQ(tolerance_for({}, "collectives.all_reduce", "time", "us", s.families), 0.50);
}

TEST(Compare, Tolerances) {
  EXPECT_DOUBLE_EQ(default_tolerance("TFLOP/s"), 0.02);
  EXPECT_DOUBLE_EQ(default_tolerance("GB/s"), 0.03);
  EXPECT_DOUBLE_EQ(default_tolerance("us"), 0.05);
  auto r1 = parse_tolerance("GB/s=5%");
  EXPECT_EQ(r1.key, "GB/s");
  EXPECT_DOUBLE_EQ(r1.fraction, 0.05);
  auto r2 = parse_tolerance("compute.gemm*=0.5%");
  EXPECT_DOUBLE_EQ(r2.fraction, 0.005);
  auto r3 = parse_tolerance("io.fio:iops=10");
  std::vector<ToleranceRule> rules = {r1, r2, r3};
  EXPECT_DOUBLE_EQ(tolerance_for(rules, "compute.memory_bandwidth", "bandwidth", "GB/s"), 0.05);
  EXPECT_DOUBLE_EQ(tolerance_for(rules, "compute.gemm", "tflops", "TFLOP/s"), 0.005);
  EXPECT_DOUBLE_EQ(tolerance_for(rules, "io.fio", "iops", "IOPS"), 0.10);
  EXPECT_DOUBLE_EQ(tolerance_for(rules, "io.fio", "bandwidth", "GB/s"), 0.05);
  EXPECT_DOUBLE_EQ(tolerance_for(rules, "io.dataloader", "samples_per_s", "samples/s"), 0.05);
  EXPECT_THROW(parse_tolerance("GB/s"), InputError);
  EXPECT_THROW(parse_tolerance("GB/s=fast"), InputError);
  EXPECT_THROW(parse_tolerance("=5%"), InputError);
  EXPECT_THROW(parse_tolerance("io.*:=5"), InputError);  // an empty metric matches nothing
  EXPECT_THROW(parse_tolerance(":read_iops=5"), InputError);
  EXPECT_THROW(parse_tolerance("io.fio:a:b=5"), InputError);
  for (const char* bad : {"x=%", "x=0x10", "x= 50", "x==50", "x=5 ", "x=inf", "x=nan"})
    EXPECT_THROW(parse_tolerance(bad), InputError) << bad;
  EXPECT_EQ(std::signbit(parse_tolerance("x=-0").fraction), false);
  EXPECT_DOUBLE_EQ(parse_tolerance("x=5.").fraction, 0.05);
  // The metric part is a glob, as in a spec family's compare entries.
  EXPECT_DOUBLE_EQ(
      tolerance_for({parse_tolerance("io.fio:read_*=40")}, "io.fio", "read_iops", "IOPS"), 0.40);
  EXPECT_DOUBLE_EQ(
      tolerance_for({parse_tolerance("io.fio:read_*=40")}, "io.fio", "write_iops", "IOPS"), 0.05);
}

// A --tolerance key that names nothing changed nothing: it is listed, to be warned of.
TEST(Compare, UnusedToleranceKeysAreListed) {
  static const RunDir base = read_run_dir(std::string(CB_FIXTURES) + "/results/compare-baseline");
  static const RunDir cur = read_run_dir(std::string(CB_FIXTURES) + "/results/compare-current");
  const Comparison c = compare(
      base, cur,
      {parse_tolerance("nomatch.*=5"), parse_tolerance("gb/s=50"), parse_tolerance("GB/s=5"),
       parse_tolerance("compute.gemm:tflops=9"), parse_tolerance("compute.gemm:tflop=9")});
  EXPECT_EQ(c.unused_rules, (std::vector<std::string>{"nomatch.*", "gb/s", "compute.gemm:tflop"}));
  EXPECT_TRUE(fixture().unused_rules.empty());
}

TEST(Compare, DriverUpgradeFixture) {
  const Comparison& c = fixture();
  EXPECT_EQ(c.counts.at(kRegressed), 4);
  EXPECT_EQ(c.counts.at(kImproved), 2);
  EXPECT_EQ(c.counts.at(kNotSignificant), 1);
  EXPECT_EQ(c.counts.at(kUnchanged), 1);
  EXPECT_EQ(c.counts.at(kNew), 1);
  EXPECT_EQ(c.counts.at(kNotCompared), 1);
  EXPECT_EQ(c.exit_code, 1);

  // STREAM triad 300 -> 264 GB/s (-12%), spreads 0.5% / 0.6%: regressed.
  const auto& triad = find_case(c, "compute.memory_bandwidth", "triad", "node01");
  ASSERT_EQ(triad.metrics.size(), 1u);
  EXPECT_NEAR(triad.metrics[0].change_pct, -12.0, 1e-9);
  EXPECT_NEAR(triad.metrics[0].baseline_spread, 0.005, 1e-12);
  EXPECT_NEAR(triad.metrics[0].current_spread, 0.006, 1e-12);
  EXPECT_NEAR(triad.metrics[0].p_value, 2.0 / 3432, 1e-12);  // 7 against 7, no overlap
  EXPECT_EQ(triad.verdict, kRegressed);
  // copy 280 -> 282.8 (+1%) inside a 3% spread: unchanged.
  const auto& copy = find_case(c, "compute.memory_bandwidth", "copy", "node01");
  EXPECT_NEAR(copy.metrics[0].change_pct, 1.0, 1e-9);
  EXPECT_EQ(copy.verdict, kUnchanged);
  // add is missing from CURRENT: regressed.
  const auto& add = find_case(c, "compute.memory_bandwidth", "add", "node01");
  EXPECT_EQ(add.current_status, "missing");
  EXPECT_EQ(add.verdict, kRegressed);

  // GPUs are matched by UUID: GPU A moved from gpu0 to gpu1 and lost 10% at 0.5% spread.
  const std::string a = "GPU-c0de0001-0000-4000-8000-000000000000";
  const std::string b = "GPU-c0de0001-0000-4000-8000-000000000001";
  const auto& ga = find_case(c, "compute.gemm", "bf16", a);
  EXPECT_EQ(ga.item(), "node01/gpu1[" + a + "]");
  EXPECT_EQ(ga.match_key(), "compute.gemm|" + ga.params().dump() + "|" + a);
  EXPECT_DOUBLE_EQ(ga.metrics[0].baseline, 700.0);
  EXPECT_DOUBLE_EQ(ga.metrics[0].current, 630.0);
  EXPECT_NEAR(ga.metrics[0].change_pct, -10.0, 1e-9);
  EXPECT_EQ(ga.verdict, kRegressed);
  // GPU B: the same -10%, but with a +-15% spread: not significant (neither regressed nor
  // unchanged), with what that pair could have detected.
  const auto& gb = find_case(c, "compute.gemm", "bf16", b);
  EXPECT_EQ(gb.verdict, kNotSignificant);
  EXPECT_GT(gb.metrics[0].detectable_pct, 10.0);
  // fp16 on A: -3% at 0.5% spread against the 2% TFLOP/s tolerance: regressed.
  const auto& g16 = find_case(c, "compute.gemm", "fp16", a);
  EXPECT_NEAR(g16.metrics[0].change_pct, -3.0, 1e-9);
  EXPECT_DOUBLE_EQ(g16.metrics[0].tolerance, 0.02);
  EXPECT_EQ(g16.verdict, kRegressed);
  // HBM +10% on B: improved; all_reduce latency 20 -> 18 us (lower is better): improved.
  EXPECT_EQ(find_case(c, "compute.gpu_memory_bandwidth", "copy", b).verdict, kImproved);
  const auto& lat = find_case(c, "collectives.all_reduce", "nccl", "cluster");
  EXPECT_NEAR(lat.metrics[0].change_pct, -10.0, 1e-9);
  EXPECT_EQ(lat.verdict, kImproved);
  EXPECT_EQ(find_case(c, "io.fio", "seq_read", "node01").verdict, kNew);
  EXPECT_EQ(find_case(c, "compute.host_device_copy", "h2d", "node01").verdict, kNotCompared);
  // Regressed cases come first.
  EXPECT_EQ(c.cases.front().verdict, kRegressed);
}

// A CURRENT run that finished no case (no records.jsonl) but planned some: compare reads it
// without its plan, yet still tells it from an empty directory; every baseline case regressed.
TEST(Compare, CurrentWithAPlanButNoRecords) {
  const std::string dir = ::testing::TempDir() + "cb_compare_norecords";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  json run =
      json::parse(std::ifstream(std::string(CB_FIXTURES) + "/results/compare-current/run.json"));
  run["plan"] = json::array({{{"benchmark", "compute.gemm"},
                              {"params", {{"dtype", "bf16"}}},
                              {"level", "gpu"},
                              {"case_keys", {"compute.gemm|{\"dtype\":\"bf16\"}|node01/gpu0"}}}});
  run["suite"] = "ci";
  run["set"] = {"io.dataloader.in_order=false"};
  run["rounds"] = 5;
  std::ofstream(dir + "/run.json") << run.dump();
  const RunDir cur = read_run_dir(dir, false);
  ASSERT_EQ(cur.records.warnings.size(), 1u);
  EXPECT_NE(cur.records.warnings[0].find("missing; no case finished"), std::string::npos);
  const RunDir base = read_run_dir(std::string(CB_FIXTURES) + "/results/compare-baseline");
  const Comparison c = compare(base, cur, {});
  // Every case is missing from CURRENT: those ok in BASELINE regressed; those waived or failed
  // there had no value to lose (not_compared).
  int ok = 0, not_ok = 0;
  for (const auto& r : base.records.records) (r.status == Status::ok ? ok : not_ok)++;
  ASSERT_GT(not_ok, 0);  // the fixture has a failed or waived case
  EXPECT_EQ(c.counts.at(kRegressed), ok);
  EXPECT_EQ(c.counts.at(kNotCompared), not_ok);
  for (const auto& cc : c.cases) {
    if (cc.verdict == kNotCompared) {
      EXPECT_NE(cc.message.find("in BASELINE), missing from CURRENT"), std::string::npos)
          << cc.message;
    }
  }
  EXPECT_EQ(c.exit_code, 1);
  // What the runs were asked to do differently is listed with the environment changes.
  std::map<std::string, std::pair<std::string, std::string>> changed;
  for (const auto& e : c.env_changes) changed[e.field] = {e.baseline, e.current};
  EXPECT_EQ(changed["--suite"], std::make_pair(std::string("quick"), std::string("ci")));
  EXPECT_EQ(changed["--set io.dataloader.in_order"],
            std::make_pair(std::string("(default)"), std::string("false")));
  EXPECT_EQ(changed.count("--only"), 0u);
  EXPECT_EQ(changed["--rounds"], std::make_pair(std::string("1"), std::string("5")));
  run["plan"] = json::array();
  std::ofstream(dir + "/run.json") << run.dump();
  EXPECT_THROW(read_run_dir(dir, false), InputError);
}

TEST(Compare, EnvironmentChanges) {
  const Comparison& c = fixture();
  std::map<std::string, std::pair<std::string, std::string>> f;
  for (const auto& e : c.env_changes) {
    f[e.field] = {e.baseline, e.current};
    EXPECT_EQ(e.hosts, std::vector<std::string>{"node01"});
  }
  EXPECT_EQ(f["driver"], (std::pair<std::string, std::string>{"535.161.08", "550.54.15"}));
  EXPECT_EQ(f["cuda_runtime"], (std::pair<std::string, std::string>{"12.2", "12.4"}));
  EXPECT_EQ(f["nccl"], (std::pair<std::string, std::string>{"2.19.3", "2.21.5"}));
  EXPECT_EQ(f.count("kernel"), 0u);
  EXPECT_EQ(f.count("gpu vbios"), 0u);
}

TEST(Compare, Renderers) {
  const Comparison& c = fixture();
  json j = render_compare_json(c);
  EXPECT_EQ(j["schema"], "clusterbench.compare/3");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["counts"]["regressed"], 4);
  EXPECT_EQ(j["cases"].size(), 10u);
  EXPECT_EQ(j["env_changes"].size(), 4u);  // driver, cuda_driver, cuda_runtime, nccl
  std::string md = render_compare_markdown(c);
  EXPECT_NE(md.find("**Verdict: REGRESSED** (exit 1): 4 regressed, 2 improved, 1 new, "
                    "1 not_significant, 1 not_compared, 1 unchanged."),
            std::string::npos)
      << md;
  EXPECT_NE(
      md.find("| bandwidth | 300 GB/s | 264 GB/s | -12% | 0.5% / 0.6% | 7 / 7 | 0.0005828 | 3% | "
              "**regressed** |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| driver | 535.161.08 | 550.54.15 | node01 |"), std::string::npos);
  std::string x = render_compare_junit(c);
  EXPECT_NE(x.find("tests=\"10\" failures=\"4\" skipped=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("<failure message=\"regressed\">bandwidth 300 -&gt; 264 GB/s (-12%, regressed)"),
            std::string::npos)
      << x;
}

// A case CURRENT did not select (`run --only`) is not compared, never "missing: regressed"; a
// selected one that is missing still regressed.
TEST(Compare, CasesLeftOutByOnlyAreNotComparedNotRegressed) {
  const RunDir base = read_run_dir(std::string(CB_FIXTURES) + "/results/compare-baseline");
  RunDir cur = base;
  cur.run.only = {"compute.gemm"};
  auto& recs = cur.records.records;
  recs.erase(std::remove_if(recs.begin(), recs.end(),
                            [](const ResultRecord& r) {
                              return r.benchmark == "compute.memory_bandwidth" ||
                                     r.benchmark == "compute.gemm";
                            }),
             recs.end());
  const Comparison c = compare(base, cur, {});
  int left_out = 0, lost = 0;
  for (const auto& cc : c.cases) {
    if (!cc.baseline || cc.baseline->status != Status::ok) continue;
    if (cc.baseline->benchmark == "compute.memory_bandwidth") {
      ++left_out;
      EXPECT_EQ(cc.verdict, kNotCompared);
      EXPECT_EQ(cc.message,
                "not run in CURRENT: its --only does not select compute.memory_bandwidth");
    } else if (cc.baseline->benchmark == "compute.gemm") {
      ++lost;
      EXPECT_EQ(cc.verdict, kRegressed);
      EXPECT_EQ(cc.message, "case missing from CURRENT");
    }
  }
  EXPECT_GT(left_out, 0);
  EXPECT_GT(lost, 0);
}

namespace {

/// Gives every ok record of `d` a host probe of `cpu` Mop/s (and 10 GB/s), each a little apart.
void set_probes(RunDir& d, double cpu) {
  int i = 0;
  for (auto& r : d.records.records)
    if (r.status == Status::ok)
      r.extra["host_probe"] = {{"cpu_mops", cpu * (1 + 0.002 * (i++ % 5))}, {"mem_gbps", 10.0}};
}

/// Multiplies every repetition of the host-bound compute.memory_bandwidth records by `f`.
void scale_stream(RunDir& d, double f) {
  for (auto& r : d.records.records)
    if (r.benchmark == "compute.memory_bandwidth" && r.status == Status::ok)
      for (auto& m : r.metrics) {
        m.value *= f;
        for (double& v : m.reps) v *= f;
      }
}

}  // namespace

TEST(HostDrift, HandComputedDriftAndTolerance) {
  ProbeSamples b, c, same;
  b["n1"]["cpu_mops"] = {100, 101, 99, 100.5, 102};
  c["n1"]["cpu_mops"] = {80, 81, 79, 80.5, 82};
  same["n1"]["cpu_mops"] = {95, 96, 94, 95.5, 97};  // -5%: inside the 10% tolerance
  auto d = host_drift(b, c);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].host, "n1");
  EXPECT_NEAR(d[0].change_pct, -19.90, 0.005);  // medians 100.5 -> 80.5: -20 / 100.5
  EXPECT_NEAR(d[0].p_value, 2.0 / 252, 1e-9);   // exact: the 5 fall below all 5, two-sided
  EXPECT_TRUE(host_drift(b, same).empty());
  c["n1"]["cpu_mops"].pop_back();  // 4 samples: no test can tell
  EXPECT_TRUE(host_drift(b, c).empty());
}

TEST(HostDrift, HostSideChangesOnADriftedHostAreNotJudgedGpuOnesAre) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  set_probes(base, 1000);
  set_probes(cur, 600);    // the whole host 40% slower in CURRENT
  scale_stream(cur, 0.6);  // STREAM as much slower: what the drift explains (1.67 x 1.1)
  const Comparison c = compare(base, cur, {});
  ASSERT_EQ(c.host_drift.size(), 1u);
  EXPECT_EQ(c.host_drift[0].probe, "cpu_mops");
  EXPECT_NEAR(c.host_drift[0].change_pct, -40, 0.5);
  int stream = 0;
  for (const auto& cc : c.cases) {
    if (cc.benchmark() != "compute.memory_bandwidth" || cc.baseline_status != "ok") continue;
    ++stream;
    EXPECT_EQ(cc.verdict, kNotComparable) << cc.message;
    EXPECT_NE(cc.message.find("host drift: node01 ran 40% slower in CURRENT (host probe cpu_mops"),
              std::string::npos)
        << cc.message;
    EXPECT_NE(cc.metrics[0].reason.find("was regressed (p = "), std::string::npos);
  }
  EXPECT_EQ(stream, 3);
  EXPECT_EQ(c.drift_cases, 3);
  EXPECT_EQ(c.counts.at(kRegressed), 0);
  EXPECT_EQ(c.exit_code, 4);
  EXPECT_NE(render_compare_console(c).find("COMPARE: INCONCLUSIVE (host drift) (exit 4)"),
            std::string::npos);
  EXPECT_EQ(render_compare_json(c)["host_drift"][0]["host"], "node01");

  // A GPU case that regressed on the drifted host is still called: the GPU did not drift.
  for (auto& r : cur.records.records)
    if (r.benchmark == "compute.gemm" && r.status == Status::ok) {
      for (auto& m : r.metrics) {
        m.value *= 0.5;
        for (double& v : m.reps) v *= 0.5;
      }
      break;
    }
  const Comparison g = compare(base, cur, {});
  EXPECT_EQ(g.counts.at(kRegressed), 1);
  EXPECT_EQ(g.exit_code, 1);

  // STREAM 5x slower is more than a host 40% slower explains: regressed, drift or not.
  scale_stream(cur, 1.0 / 3);  // 0.6 / 3 = 0.2 of the baseline
  const Comparison five = compare(base, cur, {});
  EXPECT_EQ(five.counts.at(kRegressed), 4);  // 3 STREAM kernels and the GPU case
  EXPECT_EQ(five.drift_cases, 0);

  // The same halved STREAM with the host steady: regressed, as before.
  RunDir steady = read_run_dir(fx);
  set_probes(steady, 1000);
  scale_stream(steady, 0.5);
  const Comparison s = compare(base, steady, {});
  EXPECT_TRUE(s.host_drift.empty());
  EXPECT_EQ(s.counts.at(kRegressed), 3);
  EXPECT_EQ(s.exit_code, 1);
}

TEST(HostDrift, ACaseThatGotLessOfItsCpusIsNotJudgedAWaitingOneIs) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  set_probes(base, 1000);
  set_probes(cur, 1000);  // the probe level: only the share tells
  auto share = [](RunDir& d, double s) {
    for (auto& r : d.records.records)
      if (r.benchmark == "compute.memory_bandwidth" && r.status == Status::ok)
        r.extra["host_probe"]["cpu_share"] = s;
  };
  share(base, 0.99);
  share(cur, 0.5);  // another job took half of its cores
  scale_stream(cur, 0.5);
  const Comparison c = compare(base, cur, {});
  EXPECT_TRUE(c.host_drift.empty());
  EXPECT_EQ(c.drift_cases, 3);
  EXPECT_EQ(c.exit_code, 4);
  for (const auto& cc : c.cases)
    if (cc.benchmark() == "compute.memory_bandwidth" && cc.baseline_status == "ok") {
      EXPECT_EQ(cc.verdict, kNotComparable);
      EXPECT_NE(cc.message.find("host drift: this case used 0.5 cores' worth of CPU in CURRENT "
                                "against 0.99 in BASELINE (other work shared its cores)"),
                std::string::npos)
          << cc.message;
    }
  // 0.99 -> 0.5 explains a change up to 0.99 / 0.5 x 1.1 = 2.18x: 5x is judged.
  scale_stream(cur, 0.4);  // 0.5 x 0.4 = 0.2 of the baseline
  EXPECT_EQ(compare(base, cur, {}).counts.at(kRegressed), 3);
  scale_stream(cur, 2.5);
  // 0.99 -> 0.86 is within 15% of 0.99 (0.84 is the bound): judged, regressed.
  share(cur, 0.86);
  EXPECT_EQ(compare(base, cur, {}).counts.at(kRegressed), 3);
  // A case that mostly waits (0.3 of a core: I/O, children) says nothing by its share.
  share(base, 0.3);
  share(cur, 0.1);
  const Comparison w = compare(base, cur, {});
  EXPECT_EQ(w.counts.at(kRegressed), 3);
  EXPECT_EQ(w.exit_code, 1);
}

namespace clusterbench {
namespace {

ResultRecord c2c_record(ScopeKind kind, json c2c) {
  ResultRecord r;
  r.scope.kind = kind;
  r.extra = {{"host_probe", {{"c2c_ns", std::move(c2c)}}}};
  return r;
}

TEST(C2cDrift, MultiRankCasesOnMovedCoresAreNotJudged) {
  const ResultRecord fast = c2c_record(ScopeKind::cluster, {92.0, 95.0});
  const ResultRecord fast2 = c2c_record(ScopeKind::cluster, {110.0, 100.0});  // 205/187: +9.6%
  const ResultRecord slow = c2c_record(ScopeKind::cluster, {415.0, 420.0});
  const ResultRecord straddled = c2c_record(ScopeKind::cluster, {95.0, 410.0});
  EXPECT_EQ(c2c_drift(fast, fast2), "");
  EXPECT_EQ(c2c_drift(fast, slow),
            "the core-to-core round trip (before/after the case) was 92/95 ns in BASELINE and "
            "415/420 ns in CURRENT (the cores' placement changed)");
  // One side changed during the case: 410 > 1.25 x 95.
  EXPECT_NE(c2c_drift(fast, straddled), "");
  EXPECT_NE(c2c_drift(straddled, fast), "");
  // 2x is the bound: 100/100 against 200/200 is judged, against 201/201 not. One placement's
  // own readings span 56-99 ns here (57 against 82 is the same placement).
  EXPECT_EQ(c2c_drift(c2c_record(ScopeKind::link, {100.0, 100.0}),
                      c2c_record(ScopeKind::link, {200.0, 200.0})),
            "");
  EXPECT_NE(c2c_drift(c2c_record(ScopeKind::link, {100.0, 100.0}),
                      c2c_record(ScopeKind::link, {201.0, 201.0})),
            "");
  EXPECT_EQ(c2c_drift(c2c_record(ScopeKind::cluster, {57.0, 57.0}),
                      c2c_record(ScopeKind::cluster, {82.0, 82.0})),
            "");
  // Straddled: CURRENT's after (250) is more than 2x the nearest reading (90).
  EXPECT_EQ(c2c_drift(c2c_record(ScopeKind::cluster, {100.0, 100.0}),
                      c2c_record(ScopeKind::cluster, {90.0, 250.0})),
            "the core-to-core round trip (before/after the case) was 100/100 ns in BASELINE and "
            "90/250 ns in CURRENT (the cores' placement changed)");
  // Readings the probe cannot give (it gives up after 5 ms) are not read.
  EXPECT_EQ(c2c_drift(fast, c2c_record(ScopeKind::cluster, {6e6, 1e308})), "");
  // One of a side's two not measured (the other core too busy to answer): the other stands.
  EXPECT_EQ(c2c_drift(fast, c2c_record(ScopeKind::cluster, {nullptr, 420.0})),
            "the core-to-core round trip (before/after the case) was 92/95 ns in BASELINE and "
            "420 ns in CURRENT (the cores' placement changed)");
  EXPECT_EQ(c2c_drift(fast, c2c_record(ScopeKind::cluster, {nullptr, 100.0})), "");
  // Neither measured on a side (another rank's record, one CPU): nothing to say.
  EXPECT_EQ(c2c_drift(fast, c2c_record(ScopeKind::cluster, {nullptr, nullptr})), "");
  // A one-rank case says nothing by its cores' round trip, even with two busy threads (STREAM's
  // OpenMP): a slowed STREAM must still be called while the vCPUs move.
  ResultRecord one_b = c2c_record(ScopeKind::node, {92.0, 95.0});
  ResultRecord one_c = c2c_record(ScopeKind::node, {415.0, 420.0});
  one_b.extra["host_probe"]["cpu_share"] = 1.9, one_c.extra["host_probe"]["cpu_share"] = 1.9;
  EXPECT_EQ(c2c_drift(one_b, one_c), "");
}

/// A cluster record spread over rounds: its [before, after] pairs in extra.rounds.c2c_ns, none in
/// its host_probe (as merge_rounds writes it).
ResultRecord c2c_rounds(json pairs) {
  ResultRecord r;
  r.scope.kind = ScopeKind::cluster;
  r.extra = {{"host_probe", {{"cpu_share", 0.95}}},
             {"rounds", {{"planned", 5}, {"run", 5}, {"c2c_ns", std::move(pairs)}}}};
  return r;
}

TEST(C2cDrift, ACaseSpreadOverRoundsCountsItsRoundsOnFartherCores) {
  // Measured on this VM: rounds near 75 ns, one of them at 351/326 (the round whose 2 MiB
  // all_reduce ran 6.4x slower); rounds all near; rounds at 415-420.
  const ResultRecord near1 =
      c2c_rounds({{77.6, 83.4}, {78.1, 78.9}, {77.9, 74.6}, {351.6, 326.1}, {nullptr, 78.7}});
  const ResultRecord near0 =
      c2c_rounds({{56.2, 57.0}, {78.1, 77.8}, {79.0, 78.7}, {74.8, 79.2}, {77.3, 79.2}});
  const ResultRecord far = c2c_rounds(
      {{415.0, 420.0}, {418.0, 416.0}, {nullptr, nullptr}, {420.0, 419.0}, {417.0, 415.0}});
  // 1 of 5 rounds more than 2x the nearest reading (56.2) against 0 of 5: the placement differed
  // for a round, the one whose repetition would move.
  EXPECT_EQ(c2c_drift(near0, near1),
            "the core-to-core round trip (before/after the case) was a median of 78 ns over 5 "
            "rounds (56-79 ns) in BASELINE and a median of 79 ns over 5 rounds (75-352 ns) in "
            "CURRENT (the cores' placement changed: more than twice the nearest reading, 56 ns, in "
            "1 of 5 measured rounds of CURRENT and 0 of 5 measured rounds of BASELINE)");
  // The same share on both sides: nothing to say (a pair at one placement, or at both alike).
  EXPECT_EQ(c2c_drift(near0, near0), "");
  EXPECT_EQ(c2c_drift(near1, near1), "");
  // All four measured rounds far (the null pair is not a round measured) against one of five.
  EXPECT_EQ(c2c_drift(near1, far),
            "the core-to-core round trip (before/after the case) was a median of 79 ns over 5 "
            "rounds (75-352 ns) in BASELINE and a median of 417 ns over 4 rounds (415-420 ns) in "
            "CURRENT (the cores' placement changed: more than twice the nearest reading, 75 ns, in "
            "4 of 4 measured rounds of CURRENT and 1 of 5 measured rounds of BASELINE)");
  // A record's host_probe pair is not read when it has rounds (the merged probe has none).
  ResultRecord odd = near0;
  odd.extra["host_probe"]["c2c_ns"] = {415.0, 420.0};
  EXPECT_EQ(c2c_drift(odd, near0), "");
  // No round measured on a side: nothing to say.
  EXPECT_EQ(c2c_drift(near0, c2c_rounds({{nullptr, nullptr}, nullptr})), "");
  // One round measured of a side: it is that side's share (0 of 1 against 0 of 5).
  EXPECT_EQ(c2c_drift(near0, c2c_rounds({{nullptr, nullptr}, {60.0, 90.0}, nullptr})), "");
  // More pairs than the rounds run: not as merge_rounds writes it, not read.
  EXPECT_EQ(c2c_drift(near0, c2c_rounds(json::array({{415.0, 420.0},
                                                     {415.0, 420.0},
                                                     {415.0, 420.0},
                                                     {415.0, 420.0},
                                                     {415.0, 420.0},
                                                     {415.0, 420.0}}))),
            "");
}

TEST(C2cDrift, ARegressedMpiCaseOnMovedCoresIsHostDriftAndExit4) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  int mpi = 0;
  for (RunDir* d : {&base, &cur})
    for (auto& r : d->records.records)
      if (r.status == Status::ok && r.scope.kind == ScopeKind::cluster) {
        r.params["backend"] = "mpi";  // the fixture's all_reduce, made an MPI one: host-bound
        ASSERT_TRUE(host_bound(r));
        r.extra["host_probe"]["c2c_ns"] = d == &base ? json{92.0, 95.0} : json{415.0, 420.0};
        if (d == &cur) {
          ++mpi;
          for (auto& m : r.metrics) {  // twice the time: half the rate
            const double f = m.higher_is_better ? 0.5 : 2;
            m.value *= f;
            for (double& v : m.reps) v *= f;
          }
        }
      }
  ASSERT_GT(mpi, 0);
  const Comparison c = compare(base, cur, {});
  EXPECT_EQ(c.counts.at(kRegressed), 0);
  EXPECT_EQ(c.drift_cases, mpi);
  EXPECT_EQ(c.exit_code, 4);
  for (const auto& cc : c.cases) {
    if (!cc.current || cc.current->scope.kind != ScopeKind::cluster) continue;
    EXPECT_NE(cc.message.find("host drift: the core-to-core round trip"), std::string::npos)
        << cc.message;
  }
  // By any factor: a round trip's ratio (4.6x here) does not bound a bandwidth's (a 2 MiB
  // all_reduce measured 6.4x slower at a 4.3x longer round trip), so 10x is not judged either.
  for (auto& r : cur.records.records)
    if (r.status == Status::ok && r.scope.kind == ScopeKind::cluster)
      for (auto& m : r.metrics) {
        const double f = m.higher_is_better ? 0.2 : 5;  // 2 x 5 = 10x the baseline's time
        m.value *= f;
        for (double& v : m.reps) v *= f;
      }
  const Comparison ten = compare(base, cur, {});
  EXPECT_EQ(ten.counts.at(kRegressed), 0);
  EXPECT_EQ(ten.drift_cases, mpi);
  EXPECT_EQ(ten.exit_code, 4);
  // But not the other way round: slower on the cores placed closer together is not explained by
  // the move, and is judged (regressed).
  for (auto& r : base.records.records)
    if (r.status == Status::ok && r.scope.kind == ScopeKind::cluster)
      r.extra["host_probe"]["c2c_ns"] = json{415.0, 420.0};
  for (auto& r : cur.records.records)
    if (r.status == Status::ok && r.scope.kind == ScopeKind::cluster)
      r.extra["host_probe"]["c2c_ns"] = json{92.0, 95.0};
  const Comparison odd = compare(base, cur, {});
  EXPECT_EQ(odd.counts.at(kRegressed), mpi);
  EXPECT_EQ(odd.drift_cases, 0);
  EXPECT_EQ(odd.exit_code, 1);
  // A straddle explains a slower side that straddled, not the other one.
  auto set_c2c = [](RunDir& d, json c2c) {
    for (auto& r : d.records.records)
      if (r.status == Status::ok && r.scope.kind == ScopeKind::cluster)
        r.extra["host_probe"]["c2c_ns"] = c2c;
  };
  set_c2c(base, {100.0, 100.0});
  set_c2c(cur, {90.0, 250.0});
  EXPECT_EQ(compare(base, cur, {}).drift_cases, mpi);
  set_c2c(base, {90.0, 250.0});
  set_c2c(cur, {100.0, 100.0});
  const Comparison other = compare(base, cur, {});
  EXPECT_EQ(other.counts.at(kRegressed), mpi);
  EXPECT_EQ(other.drift_cases, 0);
}

/// Scales every repetition of the fixture's cluster-scope (MPI) records by `f` (a time x f, a
/// rate / f) and sets their CPU share.
void slow_mpi(RunDir& d, double f, double share) {
  for (auto& r : d.records.records)
    if (r.status == Status::ok && r.scope.kind == ScopeKind::cluster) {
      r.params["backend"] = "mpi";
      r.extra["host_probe"]["cpu_share"] = share;
      for (auto& m : r.metrics) {
        const double k = m.higher_is_better ? 1 / f : f;
        m.value *= k;
        for (double& v : m.reps) v *= k;
      }
    }
}

TEST(HostDrift, AnMpiCaseWhoseRanksLostTheirCoresIsNotJudgedByAnyFactor) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  slow_mpi(base, 1, 0.98);
  // Measured on this VM: a 4 KiB all_reduce of 3 us took 8 ms an operation (2700x) while a build
  // took 30% of its ranks' CPU (share 0.98 -> 0.70).
  slow_mpi(cur, 2700, 0.70);
  const Comparison c = compare(base, cur, {});
  EXPECT_EQ(c.counts.at(kRegressed), 0);
  EXPECT_GT(c.drift_cases, 0);
  EXPECT_EQ(c.exit_code, 4);
  for (const auto& cc : c.cases) {
    if (!cc.current || cc.current->scope.kind != ScopeKind::cluster) continue;
    EXPECT_NE(cc.message.find("host drift: this case used 0.7 cores' worth of CPU in CURRENT "
                              "against 0.98 in BASELINE (other work shared its cores)"),
              std::string::npos)
        << cc.message;
  }
  // The same slowdown with the share within 15% of 0.98 (0.84 is the bound): regressed.
  slow_mpi(cur, 1, 0.85);
  EXPECT_EQ(compare(base, cur, {}).counts.at(kRegressed), c.drift_cases);
  // The run with less of its CPUs must be the slower: BASELINE shared, CURRENT slower is judged.
  slow_mpi(base, 1, 0.70);
  slow_mpi(cur, 1, 0.98);
  EXPECT_EQ(compare(base, cur, {}).counts.at(kRegressed), c.drift_cases);
  // ... and BASELINE shared, CURRENT faster is not (an improvement that the share explains).
  slow_mpi(cur, 1.0 / 2700 / 2700, 0.98);  // CURRENT 2700x faster than BASELINE
  const Comparison up = compare(base, cur, {});
  EXPECT_EQ(up.counts.at(kImproved), 0);
  EXPECT_EQ(up.drift_cases, c.drift_cases);
}

/// One io.fio-like case (node scope) whose write clat p99 is `p99` in every repetition, with the
/// disk's share of fio's bytes `share` (extra.disk_load).
RunDir fio_side(double p99, double share) {
  RunDir d = read_run_dir(std::string(CB_FIXTURES) + "/results/compare-baseline");
  d.records.records.resize(1);
  ResultRecord& r = d.records.records[0];
  r.benchmark = "io.fio";
  r.metrics = {Metric{"write_clat_p99",
                      p99,
                      "us",
                      false,
                      {p99 * 0.98, p99 * 0.99, p99, p99 * 1.01, p99 * 1.02},
                      0.001}};
  r.extra = {{"disk_load",
              {{"disk", "vda"}, {"fio_share", share}, {"disk_bytes", 1000}, {"fio_bytes", 0}}}};
  return d;
}

TEST(HostDrift, AFioCaseOnADiskOtherWorkSharedIsNotJudgedByAnyFactor) {
  // Measured: write clat p99 +166% (p = 0.012) while two other runs used the same disk.
  const RunDir quiet = fio_side(1000, 1.0), shared_slow = fio_side(2660, 0.45);
  const Comparison c = compare(quiet, shared_slow, {});
  ASSERT_EQ(c.cases.size(), 1u);
  EXPECT_EQ(c.cases[0].verdict, kNotComparable);
  EXPECT_EQ(c.drift_cases, 1);
  EXPECT_EQ(c.exit_code, 4);
  EXPECT_EQ(c.cases[0].message,
            "not judged: host drift: other work moved 55% of the bytes of its disk (vda) while "
            "this case ran in CURRENT against 0% in BASELINE (other work shared the disk); "
            "rerun both on a quiet host");
  // compare.md says why, under Host drift, though no host probe moved.
  const std::string md = render_compare_markdown(c);
  EXPECT_TRUE(c.host_drift.empty());
  EXPECT_NE(md.find("**Host drift:** the host ran at another speed, or other work shared its CPUs "
                    "or disk, in one of the runs, so 1 host-side change(s) were not judged"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(": not judged: host drift: other work moved 55% of the bytes of its disk (vda) "
                    "while this case ran in CURRENT against 0% in BASELINE"),
            std::string::npos)
      << md;
  // A share within 15% (0.86 against 1.0) explains nothing: regressed.
  const RunDir near = fio_side(2660, 0.86);
  EXPECT_EQ(compare(quiet, near, {}).counts.at(kRegressed), 1);
  // The side whose disk was shared must be the slower: BASELINE shared, CURRENT slower is judged.
  const RunDir shared_fast = fio_side(1000, 0.45), quiet_slow = fio_side(2660, 1.0);
  EXPECT_EQ(compare(shared_fast, quiet_slow, {}).counts.at(kRegressed), 1);
  // No disk_load on a side (tmpfs, an older run): judged as before.
  RunDir old = fio_side(1000, 1.0);
  old.records.records[0].extra.erase("disk_load");
  EXPECT_EQ(compare(old, shared_slow, {}).counts.at(kRegressed), 1);
}

TEST(HostDrift, TheSameMeasurementAtAnotherScopeFollowsTheUnjudgedOne) {
  // A training step's node record repeats its cluster record's step time; measured in a quick
  // pair (2026-12-03): the cluster record unjudged (the core-to-core round trip moved), its node
  // twin, with no probe of its own, was called improved (-16.6%, p = 0.001).
  RunDir quiet = fio_side(1000, 1.0), shared_slow = fio_side(2660, 0.45);
  for (RunDir* d : {&quiet, &shared_slow}) {
    ResultRecord twin = d->records.records[0];
    twin.extra.erase("disk_load");
    twin.scope.kind = ScopeKind::cluster;
    twin.case_key += "|twin";
    d->records.records.push_back(twin);
  }
  const Comparison c = compare(quiet, shared_slow, {});
  ASSERT_EQ(c.cases.size(), 2u);
  EXPECT_EQ(c.drift_cases, 2);
  EXPECT_EQ(c.counts.at(kRegressed), 0);
  EXPECT_EQ(c.cases[1].message, c.cases[0].message);
  // Another case (other params) is judged as before.
  shared_slow.records.records[1].params["profile"] = "other";
  quiet.records.records[1].params["profile"] = "other";
  EXPECT_EQ(compare(quiet, shared_slow, {}).counts.at(kRegressed), 1);
}

}  // namespace
}  // namespace clusterbench

TEST(Compare, MetricsNotMeasuredInCurrentAreNamedWithTheirReasonNotZero) {
  RunDir base = read_run_dir(std::string(CB_FIXTURES) + "/results/compare-baseline");
  RunDir cur = base;
  base.records.records.resize(1);
  cur.records.records.resize(1);
  ResultRecord& b = base.records.records[0];
  ResultRecord& c = cur.records.records[0];
  b.status = c.status = Status::ok;
  b.metrics = {Metric{"seq_read_bw", 7.18, "GB/s", true, {7, 7.1, 7.18, 7.2, 7.3}},
               Metric{"seq_write_bw", 6, "GB/s", true, {6, 6, 6, 6, 6}}};
  c.metrics.clear();
  c.extra["unmeasured"] = {{"seq_read_bw", "fio: refused: no space"}};
  const Comparison cmp = compare(base, cur, {});
  ASSERT_EQ(cmp.cases.size(), 1u);
  const CaseChange& cc = cmp.cases[0];
  EXPECT_EQ(cc.verdict, kRegressed);
  EXPECT_EQ(cc.message,
            "metric 'seq_read_bw' not measured in CURRENT: fio: refused: no space; metric "
            "'seq_write_bw' missing from CURRENT");
  const json j = render_compare_json(cmp);
  EXPECT_TRUE(j["cases"][0]["metrics"][0]["current"].is_null());
  EXPECT_EQ(j["cases"][0]["metrics"][0]["missing"], true);
}

TEST(Compare, ASnapshotOfAnUnfinishedRunIsNotComparedAndTheVerdictIsInconclusive) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  // CURRENT was killed in round 4 of 5: its STREAM cases' last records are snapshots of 3 rounds.
  int snapshots = 0;
  for (auto& r : cur.records.records)
    if (r.benchmark == "compute.memory_bandwidth" && r.status == Status::ok) {
      r.extra["snapshot"] = true;
      r.extra["rounds"] = {{"planned", 5}, {"run", 3}};
      ++snapshots;
    }
  ASSERT_GT(snapshots, 0);
  const Comparison c = compare(base, cur, {});
  EXPECT_EQ(c.unfinished_cases, snapshots);
  EXPECT_EQ(c.counts.at(kRegressed), 0);
  EXPECT_EQ(c.exit_code, 4);
  for (const auto& cc : c.cases) {
    if (cc.benchmark() != "compute.memory_bandwidth" || cc.baseline_status != "ok") continue;
    EXPECT_EQ(cc.verdict, kNotCompared);
    EXPECT_TRUE(cc.unfinished);
    EXPECT_EQ(cc.message,
              "unfinished: CURRENT holds a snapshot after 3 of 5 rounds (its run stopped before "
              "the case's last round); `clusterbench run --resume DIR` completes it");
  }
  const std::string console = render_compare_console(c);
  EXPECT_NE(console.find("unfinished: " + std::to_string(snapshots) +
                         " case(s) a run did not finish (a snapshot before the case's last round"),
            std::string::npos)
      << console;
  EXPECT_NE(console.find("COMPARE: INCONCLUSIVE (unfinished run) (exit 4)"), std::string::npos)
      << console;
  EXPECT_EQ(render_compare_json(c)["unfinished_cases"], snapshots);
  // Finished and 3x slower: regressed, exit 1, nothing unfinished.
  for (auto& r : cur.records.records)
    if (r.benchmark == "compute.memory_bandwidth") r.extra.erase("snapshot");
  scale_stream(cur, 1.0 / 3);
  const Comparison slow = compare(base, cur, {});
  EXPECT_EQ(slow.unfinished_cases, 0);
  EXPECT_EQ(slow.exit_code, 1);
}

TEST(Compare, ACaseInProgressWhenARunWasCancelledIsUnfinishedNotRegressed) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  const std::string stop =
      "round 3 of 5: aborted: terminated by signal SIGTERM (a rank died, or the job was "
      "cancelled) during compute.memory_bandwidth {\"kernel\":\"copy\"}";
  ResultRecord* copy = nullptr;
  for (auto& r : cur.records.records)
    if (r.benchmark == "compute.memory_bandwidth" && r.status == Status::ok && !copy) copy = &r;
  ASSERT_NE(copy, nullptr);
  copy->status = Status::failed;
  copy->message = stop;
  const Comparison c = compare(base, cur, {});
  EXPECT_EQ(c.counts.at(kRegressed), 0);
  EXPECT_EQ(c.unfinished_cases, 1);
  EXPECT_EQ(c.exit_code, 4);
  const Comparison back = compare(cur, base, {});  // BASELINE cancelled: not "improved" either
  EXPECT_EQ(back.counts.at(kImproved), 0);
  EXPECT_EQ(back.unfinished_cases, 1);
  for (const auto& cc : c.cases) {
    if (cc.unfinished) {
      EXPECT_EQ(cc.message, "unfinished: CURRENT's run was stopped during the case (" + stop +
                                "); `clusterbench run --resume DIR` completes it");
    }
  }
  // A case that failed by itself (its own error, not a signal) is still regressed.
  copy->message = "round 3 of 5: STREAM: validation failed";
  EXPECT_EQ(compare(base, cur, {}).counts.at(kRegressed), 1);
}

// Cases a run aborted before reaching are unfinished, not "missing from CURRENT" (regressed).
TEST(Compare, CasesAnAbortedRunNeverReachedAreUnfinishedNotRegressed) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  auto& recs = cur.records.records;
  const size_t before = recs.size();
  recs.erase(std::remove_if(recs.begin(), recs.end(),
                            [](const ResultRecord& r) {
                              return r.benchmark == "compute.memory_bandwidth" &&
                                     r.status == Status::ok;
                            }),
             recs.end());
  const int gone = static_cast<int>(before - recs.size());
  ASSERT_GT(gone, 0);
  EXPECT_EQ(compare(base, cur, {}).counts.at(kRegressed), gone);  // not aborted: lost
  cur.run.aborted = true;
  cur.run.abort_reason = "terminated by signal SIGTERM";
  const Comparison c = compare(base, cur, {});
  EXPECT_EQ(c.counts.at(kRegressed), 0);
  EXPECT_EQ(c.unfinished_cases, gone);
  EXPECT_EQ(c.exit_code, 4);
  for (const auto& cc : c.cases) {
    if (!cc.unfinished) continue;
    EXPECT_EQ(cc.message,
              "unfinished: CURRENT's run was aborted before the case (terminated by signal "
              "SIGTERM); `clusterbench run --resume DIR` completes it");
  }
}

// A count with no repetitions that stayed the same (wrong results 0 and 0) does not make a case
// whose measured metrics could not be tested "unchanged": it is not comparable, and a pair of
// such cases is inconclusive, not "no regression".
TEST(Compare, AnEqualCountDoesNotJudgeACaseWhoseRepetitionsCannotBeTested) {
  auto record = [](double busbw) {
    ResultRecord r;
    r.benchmark = "collectives.all_reduce";
    r.status = Status::ok;
    r.scope.kind = ScopeKind::cluster;
    Metric m{"busbw", busbw, "GB/s", true, {busbw, busbw * 1.01, busbw * 0.99}, 0};
    r.metrics = {m, Metric{"wrong", 0, "count", false, {}, 0}};
    return r;
  };
  RunDir b, c;
  b.records.records = {record(10)};
  c.records.records = {record(1)};  // 10x slower, but n = 3 a side
  Comparison out = compare(b, c, {});
  ASSERT_EQ(out.cases.size(), 1u);
  EXPECT_EQ(out.cases[0].verdict, kNotComparable);
  EXPECT_EQ(out.cases[0].message, "not comparable (busbw: n = 3/3, needs 5 repetitions a side)");
  EXPECT_EQ(out.exit_code, 4);
  // With 5 repetitions a side the same pair is judged by busbw.
  for (auto* d : {&b, &c}) {
    auto& m = d->records.records[0].metrics[0];
    m.reps.push_back(m.value), m.reps.push_back(m.value * 1.02);
  }
  out = compare(b, c, {});
  EXPECT_EQ(out.cases[0].verdict, kRegressed);
  EXPECT_EQ(out.exit_code, 1);
}

// A record that keeps N IOs in flight (extra.little_law, as fio's say) has a mean latency of N over
// its IOPS (Little's law): a median latency that moved while IOPS did not is a change of the
// distribution's shape (a quick pair here: seq_read's p50 26 -> 74 ms, p = 0.047, p99 -75%, IOPS
// -1.1%), not a regression.
TEST(Compare, AFioLatencyPercentileMovingWithoutItsIopsIsNotARegression) {
  auto record = [](double iops, double p50, const std::string& depth,
                   const std::string& jobs = "4") {
    ResultRecord r;
    r.benchmark = "io.fio";
    r.params = {{"profile", "seq_read"}};
    r.status = Status::ok;
    r.scope.kind = ScopeKind::node;
    r.scope.host = "vm";
    Metric i = reps_metric(iops, 0.02, true, "IOPS"), l = reps_metric(p50, 0.02, false, "us");
    i.name = "read_iops", l.name = "read_clat_p50";
    r.metrics = {i, l};
    r.extra["little_law"] = {{"in_flight", std::stod(depth) * std::stod(jobs)},
                             {"latency_of", {{"read_clat_p50", "read_iops"}}}};
    return r;
  };
  auto judged = [](const ResultRecord& b, const ResultRecord& c) {
    RunDir x, y;
    x.records.records = {b};
    y.records.records = {c};
    return compare(x, y, {});
  };
  Comparison out = judged(record(1800, 26345, "32"), record(1780, 73925, "32"));
  ASSERT_EQ(out.cases.size(), 1u);
  EXPECT_EQ(out.cases[0].verdict, kUnchanged);
  EXPECT_EQ(out.exit_code, 0);
  const MetricChange& m = out.cases[0].metrics[1];
  EXPECT_EQ(m.reason.rfind("was regressed (p = ", 0), 0u) << m.reason;
  EXPECT_NE(m.reason.find("read_iops unchanged (-1.11%), so at 128 in flight the mean latency is "
                          "too (Little's law: N / read_iops)"),
            std::string::npos)
      << m.reason;
  // One IO in flight: the latency is the measurement, judged.
  EXPECT_EQ(judged(record(1800, 26345, "1", "1"), record(1780, 73925, "1", "1")).cases[0].verdict,
            kRegressed);
  // IOPS fell with it: the latency stays regressed.
  out = judged(record(1800, 26345, "32"), record(600, 73925, "32"));
  EXPECT_EQ(out.cases[0].metrics[1].verdict, kRegressed);
  EXPECT_EQ(out.cases[0].metrics[0].verdict, kRegressed);
}

TEST(Compare, EachSideSaysItsSuiteAndRounds) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  base.run.suite = cur.run.suite = "ci";
  base.run.rounds = 5;
  cur.run.rounds = 1;
  const Comparison c = compare(base, cur, {});
  const std::string md = render_compare_markdown(c);
  EXPECT_NE(md.find("(run " + base.run.run_id + ", suite ci in 5 rounds)"), std::string::npos)
      << md;
  EXPECT_NE(md.find("(run " + cur.run.run_id + ", suite ci)"), std::string::npos) << md;
  const json j = render_compare_json(c);
  EXPECT_EQ(j["baseline"]["rounds"], 5);
  EXPECT_EQ(j["current"]["rounds"], 1);
  EXPECT_EQ(j["current"]["suite"], "ci");
}

TEST(Compare, AMovePastItsToleranceTheTestCannotConfirmIsNotSignificant) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  // Three of five repetitions 3x slower, two faster: the median -70%, p = 0.69 (U = 10).
  for (RunDir* d : {&base, &cur})
    for (auto& r : d->records.records)
      if (r.benchmark == "compute.memory_bandwidth" && r.status == Status::ok)
        for (auto& m : r.metrics) {
          m.reps = d == &base ? std::vector<double>{10, 10.1, 10.2, 10.3, 10.4}
                              : std::vector<double>{3, 3, 3, 10.5, 10.6};
          m.value = m.reps[2];
        }
  const Comparison c = compare(base, cur, {});
  const std::string md = render_compare_markdown(c);
  bool said = false;
  ASSERT_NE(md.find("\n## Not significant\n"), std::string::npos) << md;
  const std::string section = md.substr(md.find("\n## Not significant\n"));
  for (const auto& cc : c.cases)
    for (const auto& m : cc.metrics)
      if (m.reason.rfind("not significant", 0) == 0) {
        said = true;
        EXPECT_EQ(cc.verdict, kNotSignificant);
        EXPECT_EQ(m.verdict, kNotSignificant);
        // Its line in the section, not under "Unchanged": the change, p, n, and what the pair
        // could detect (variances 0.025 and 17.102, baseline median 10.2:
        // 2.8016 * sqrt((0.025 + 17.102) / 5) / 10.2 = 50.8%).
        const std::string head =
            "- " + cc.benchmark() + " " + cc.params().dump() + " " + cc.item() + " " + m.name + " ";
        ASSERT_NE(section.find(head), std::string::npos) << section;
        const std::string rest = section.substr(section.find(head));
        const std::string line = rest.substr(0, rest.find('\n'));
        EXPECT_NE(line.find("(p = " + format_number(m.p_value) + ", n 5/5"), std::string::npos)
            << line;
        EXPECT_NEAR(m.detectable_pct, 100 * kDetectZ * std::sqrt((0.025 + 17.102) / 5) / 10.2,
                    0.01);
        EXPECT_NE(line.find("detectable +-" + percent_points(m.detectable_pct, 1)),
                  std::string::npos)
            << line;
        EXPECT_NE(line.find(std::to_string(m.reps_needed) + " repetitions a side would detect"),
                  std::string::npos)
            << line;
      }
  EXPECT_TRUE(said) << md;
  EXPECT_EQ(md.substr(md.find("\n## Unchanged\n")).find("not significant"), std::string::npos)
      << md;
}

TEST(Compare, NothingJudgedIsInconclusiveNotNoRegression) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir full = read_run_dir(fx);
  // A BASELINE with no records (its first line truncated): every case of CURRENT is new.
  RunDir empty = read_run_dir(fx);
  empty.records.records.clear();
  const Comparison c = compare(empty, full, {});
  EXPECT_EQ(c.counts.at(kNew), static_cast<int>(c.cases.size()));
  EXPECT_EQ(c.exit_code, 4);
  EXPECT_NE(render_compare_console(c).find("COMPARE: INCONCLUSIVE (nothing compared) (exit 4)"),
            std::string::npos)
      << render_compare_console(c);
  // The fixture against itself judges its cases: exit 0.
  EXPECT_EQ(compare(full, full, {}).exit_code, 0);
}

namespace clusterbench {
namespace {

TEST(Compare, ACaseNeitherRunMeasuredSaysSoOnce) {
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  ASSERT_GE(base.records.records.size(), 2u);
  for (RunDir* d : {&base, &cur}) {
    d->records.records[0].status = Status::waived;
    d->records.records[0].message = "no NVIDIA GPU on the PCI bus";
    d->records.records[1].status = Status::waived;
    d->records.records[1].message = "not applicable";
  }
  cur.records.records[1].status = Status::failed;
  const Comparison c = compare(base, cur, {});
  std::map<std::string, std::string> msg;
  for (const auto& cc : c.cases) msg[cc.case_key()] = cc.message;
  EXPECT_EQ(msg[base.records.records[0].case_key],
            "waived in both runs: no NVIDIA GPU on the PCI bus");
  EXPECT_EQ(msg[base.records.records[1].case_key],
            "no baseline value (waived in BASELINE, failed in CURRENT)");
}

}  // namespace
}  // namespace clusterbench

namespace clusterbench {
namespace {

TEST(Compare, EvidenceOfTheWrongTypeIsNotReadAndEndsNothing) {
  // A hand-edited record's evidence of the wrong type had ended compare with a type error (exit
  // 3): a snapshot flag "yes", rounds counts as strings, an in_flight "4", a backend 5.
  const std::string fx = std::string(CB_FIXTURES) + "/results/compare-baseline";
  RunDir base = read_run_dir(fx), cur = read_run_dir(fx);
  for (RunDir* d : {&base, &cur})
    for (auto& r : d->records.records) {
      if (!r.extra.is_object()) r.extra = json::object();
      r.extra["little_law"] = {{"in_flight", "4"}, {"latency_of", {{"time", "busbw"}}}};
      r.params["backend"] = 5;
    }
  cur.records.records[0].extra["snapshot"] = "yes";
  cur.records.records[0].extra["rounds"] = {{"run", "3"}, {"planned", nullptr}};
  for (auto& r : cur.records.records)
    for (auto& m : r.metrics) {  // every case moved: host_bound and the queue rule are asked
      const double f = m.higher_is_better ? 0.5 : 2;
      m.value *= f;
      for (double& v : m.reps) v *= f;
    }
  Comparison c;
  ASSERT_NO_THROW(c = compare(base, cur, {}));
  EXPECT_EQ(c.exit_code, 1);                        // judged as records without that evidence
  cur.records.records[0].extra["snapshot"] = true;  // a snapshot whose counts are not numbers
  ASSERT_NO_THROW(c = compare(base, cur, {}));
  std::string msg;
  for (const auto& cc : c.cases)
    if (cc.case_key() == cur.records.records[0].case_key) msg = cc.message;
  EXPECT_NE(msg.find("holds a snapshot after 0 of 0 rounds"), std::string::npos) << msg;
}

}  // namespace
}  // namespace clusterbench

// The training step's `mfu` was its GEMM time share and is now called so: a baseline written
// before the rename compares with CURRENT's gemm_time_share (not "missing from CURRENT"), at
// the 50% tolerance cpu-node.json gives the new name.
TEST(Compare, ARenamedMetricComparesWithItsSuccessor) {
  ResultRecord b, c;
  b.benchmark = c.benchmark = "compute.training_step";
  b.status = c.status = Status::ok;
  b.metrics = {reps_metric(80, 0.01)};
  b.metrics[0].name = "mfu";
  c.metrics = {reps_metric(81, 0.01)};
  c.metrics[0].name = "gemm_time_share";
  const Spec cpu = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/cpu-node.json");
  CaseChange cc;
  judge_case(b, &c, {}, cpu.families, RunRecord{}, cc);
  ASSERT_EQ(cc.metrics.size(), 1u);
  EXPECT_FALSE(cc.metrics[0].missing) << cc.metrics[0].reason;
  EXPECT_EQ(cc.metrics[0].verdict, kUnchanged) << cc.metrics[0].reason;
  EXPECT_DOUBLE_EQ(cc.metrics[0].tolerance, 0.50);
}
