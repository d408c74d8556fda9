// Burn-in: the soak's analysis of hand-made series (compute/burnin_soak.hpp: the metrics its
// records carry), their verdicts by the spec rows of reports/specs/burnin-*.json through
// make_report, and the soak records and charts of reports/burnin.hpp.
#include <gtest/gtest.h>

#include "compute/burnin_soak.hpp"
#include "records/spec.hpp"
#include "reports/burnin.hpp"
#include "reports/report.hpp"

namespace clusterbench::report {
namespace {

using compute::analyze_burnin;
using compute::burnin_metrics;
using compute::BurninAnalysis;
using compute::soak_not_judged;

/// A series of intervals of 10 s with these rates; `reasons`/`temps` give telemetry when set.
json series_of(const std::vector<double>& rates,
               const std::vector<unsigned long long>& reasons = {},
               const std::vector<double>& temps = {}) {
  json s = json::array();
  for (size_t i = 0; i < rates.size(); ++i) {
    json iv = {{"index", i},
               {"t_start_s", 10.0 * i},
               {"t_end_s", 10.0 * (i + 1)},
               {"rate_tflops", rates[i]},
               {"verification", {{"passed", true}}}};
    if (!reasons.empty())
      iv["telemetry"] = {{"samples", 5},
                         {"clock_event_reasons", reasons[i]},
                         {"temperature_c_max", temps.empty() ? 70.0 : temps[i]}};
    s.push_back(iv);
  }
  return s;
}

TEST(BurninIntervals, AtLeastSixAndAtMostAMinute) {
  EXPECT_EQ(compute::burnin_intervals(12), 6);   // 0.2 min: six of 2 s
  EXPECT_EQ(compute::burnin_intervals(360), 6);  // 6 min: six of 60 s
  EXPECT_EQ(compute::burnin_intervals(361), 7);  // just over: seven of 51.6 s
  EXPECT_EQ(compute::burnin_intervals(3600), 60);
}

TEST(BurninAnalysis, SteadySeriesHasNoDrop) {
  BurninAnalysis a = analyze_burnin(series_of({10, 10.2, 9.9, 10.1, 10, 10}));
  EXPECT_EQ(a.intervals, 6);
  EXPECT_EQ(a.third, 2);
  EXPECT_DOUBLE_EQ(a.first_third, 10.1);  // median of 10, 10.2
  EXPECT_DOUBLE_EQ(a.last_third, 10.0);   // median of 10, 10
  EXPECT_NEAR(a.drop_pct, 100.0 * 0.1 / 10.1, 1e-12);
  EXPECT_DOUBLE_EQ(a.worst, 9.9);
  EXPECT_EQ(a.worst_index, 2);
  EXPECT_DOUBLE_EQ(a.median, 10.0);  // (10 + 10) / 2 of 9.9 10 10 10 10.1 10.2
  EXPECT_NEAR(a.dip_pct, 1.0, 1e-12);
  EXPECT_EQ(a.telemetry_intervals, 0);
}

TEST(BurninAnalysis, TwentyPercentSlowerFromHalfwayIsA20PercentDrop) {
  // Rates 1/1.25 = 0.8 of 10 from the fourth interval of six (the test-only slow injection).
  BurninAnalysis a = analyze_burnin(series_of({10, 10, 10, 8, 8, 8}));
  EXPECT_DOUBLE_EQ(a.first_third, 10);
  EXPECT_DOUBLE_EQ(a.last_third, 8);
  EXPECT_DOUBLE_EQ(a.drop_pct, 20);
  EXPECT_DOUBLE_EQ(a.dip_pct, 100.0 * (9 - 8) / 9);  // median (10 + 8) / 2 = 9
}

TEST(BurninAnalysis, OneSlowIntervalInAThirdDoesNotDecide) {
  // Nine intervals: thirds of three; one noisy last-third interval leaves the median alone.
  BurninAnalysis a = analyze_burnin(series_of({10, 10, 10, 10, 10, 10, 10, 6, 10}));
  EXPECT_EQ(a.third, 3);
  EXPECT_DOUBLE_EQ(a.drop_pct, 0);
  EXPECT_DOUBLE_EQ(a.dip_pct, 40);  // but the dip shows it
  EXPECT_EQ(a.worst_index, 7);
}

TEST(BurninAnalysis, RiseIsNegativeDropAndSlowdownReasonsCounted) {
  // 0x4 sw_power_cap is the normal limit; 0x20 sw_thermal, 0x40 hw_thermal, 0x8 hw_slowdown and
  // (issue 40) 0x80 hw_power_brake_slowdown are slowdowns, as in `run`.
  BurninAnalysis a =
      analyze_burnin(series_of({8, 8, 9, 9, 10, 10}, {0x4, 0x80, 0x20, 0x4, 0x40 | 0x4, 0x8}));
  EXPECT_DOUBLE_EQ(a.drop_pct, -25);
  EXPECT_EQ(a.telemetry_intervals, 6);
  EXPECT_EQ(a.slowdown_intervals, 4);
}

TEST(BurninAnalysis, EmptyAndShortSeries) {
  EXPECT_EQ(analyze_burnin(json::array()).intervals, 0);
  EXPECT_TRUE(burnin_metrics(analyze_burnin(json::array())).empty());
  BurninAnalysis two = analyze_burnin(series_of({10, 5}));
  EXPECT_EQ(two.third, 1);
  EXPECT_DOUBLE_EQ(two.drop_pct, 50);
}

// The console line of an interval: each rank up to 8, the spread beyond; failures named.
TEST(BurninConsole, IntervalLine) {
  json a = {{"rate_tflops", 612.34},
            {"telemetry", {{"temperature_c_max", 71}}},
            {"verification", {{"passed", true}}},
            {"allreduce", {{"ops", 10}, {"wrong", 0}, {"busbw_gbs", 180.5}}}};
  json b = a;
  b["rate_tflops"] = 598.0;
  b["verification"]["passed"] = false;
  json c = {{"index", 2}, {"failed", "interval 2: CUDA error"}};
  EXPECT_EQ(compute::burnin_interval_line(2, 20, {"n1/gpu0", "n1/gpu1", "n2/gpu0", "n2/gpu1"},
                                          {a, b, c, nullptr}),
            "burn-in interval 3/20: n1/gpu0 612.3 TFLOP/s, 71 C; n1/gpu1 598 TFLOP/s, 71 C; "
            "all_reduce busbw 180.5 GB/s -- n1/gpu1 WRONG GEMM RESULTS; n2/gpu0 FAILED: interval "
            "2: CUDA error");
  // 10 ranks: the lowest, the median and the highest rate, and the hottest GPU.
  std::vector<std::string> labels;
  std::vector<json> ps;
  for (int r = 0; r < 10; ++r) {
    json p = a;
    p["rate_tflops"] = 600.0 + r;
    p["telemetry"]["temperature_c_max"] = r == 6 ? 88 : 70;
    labels.push_back("n/gpu" + std::to_string(r));
    ps.push_back(p);
  }
  ps[4]["allreduce"]["wrong"] = 3;
  EXPECT_EQ(compute::burnin_interval_line(0, 6, labels, ps),
            "burn-in interval 1/6: lowest n/gpu0 600 TFLOP/s, 70 C; median 605 TFLOP/s; highest "
            "n/gpu9 609 TFLOP/s, 70 C (10 ranks); hottest n/gpu6 88 C; all_reduce busbw 180.5 "
            "GB/s -- n/gpu4 WRONG all_reduce SUMS");
}

TEST(BurninMetrics, ThermalMetricOnlyWithTelemetry) {
  auto cpu = burnin_metrics(analyze_burnin(series_of({1, 1, 1, 1, 1, 1})));
  ASSERT_EQ(cpu.size(), 2u);
  EXPECT_EQ(cpu[0].name, "rate_drop");
  EXPECT_EQ(cpu[0].unit, "%");
  EXPECT_EQ(cpu[1].name, "rate_dip");
  auto gpu = burnin_metrics(analyze_burnin(series_of({1, 1, 1, 1, 1, 1}, {0, 0, 0x40, 0, 0, 0})));
  ASSERT_EQ(gpu.size(), 3u);
  EXPECT_EQ(gpu[2].name, "slowdown_intervals");
  EXPECT_EQ(gpu[2].value, 1);
}

ResultRecord rank_record(int rank, const json& series, double verification_errors,
                         const std::string& kind = "rank") {
  ResultRecord r;
  r.run_id = "run";
  r.benchmark = "burnin.soak";
  r.params = {{"backend", kind == "rank" ? "openblas" : "cublaslt"}};
  r.scope.kind = kind == "rank" ? ScopeKind::rank : ScopeKind::gpu;
  r.scope.host = "node01";
  r.scope.rank = rank;
  r.scope.gpu_index = rank;
  r.case_key = make_case_key(r.benchmark, r.params, r.scope);
  // What the soak writes: its measured summary (here only the verification errors) and the
  // metrics its analysis derives, with why its rate is not judged on a short series.
  r.metrics = {{"verification_errors", verification_errors, "count", false}};
  for (const Metric& m : burnin_metrics(analyze_burnin(series))) r.metrics.push_back(m);
  if (std::string why = soak_not_judged(series, ""); !why.empty())
    r.message = why, r.extra["not_judged"] = why;
  r.extra["series"] = series;
  return r;
}

/// The soak family of reports/specs/burnin-cpu.json (burnin-gpu.json inherits it).
const std::vector<SpecFamily>& soak_families() {
  static const Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/burnin-cpu.json");
  return spec.families;
}

const RowResult& row(const Report& rep, const std::string& id) {
  for (const auto& r : rep.rows)
    if (r.req.id == id) return r;
  throw std::runtime_error("no row " + id);
}

TEST(BurninVerdicts, SlowRankFailsOnItsDropAndOnlyIt) {
  RunDir run;
  run.run.run_id = "run";
  run.run.finished_at = "2026-11-30T12:00:00Z";
  run.records.records = {rank_record(0, series_of({10, 10.1, 9.9, 10, 10.2, 10}), 0),
                         rank_record(1, series_of({10, 10, 10, 8, 8, 8}), 0)};
  Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/burnin-cpu.json");
  Report rep = make_report(run, spec);
  const RowResult& drop = row(rep, "burnin.rate_drop");
  EXPECT_EQ(drop.outcome, kFail);
  EXPECT_EQ(drop.worst_item, "node01/rank1");
  ASSERT_EQ(drop.items.size(), 2u);
  for (const auto& it : drop.items)
    EXPECT_EQ(it.outcome, it.item == "node01/rank1" ? kFail : kPass) << it.item;
  EXPECT_DOUBLE_EQ(drop.value.get<double>(), 20);
  EXPECT_EQ(row(rep, "burnin.verification").outcome, kPass);
  EXPECT_EQ(exit_code(rep), 1);
}

TEST(BurninVerdicts, FewerThanSixIntervalsAreNotJudgedOnTheirRate) {
  // One interval (a shape too large for its interval, or a soak stopped early): a rate_drop of 0
  // on one sample must not PASS. Five intervals with a 50 % drop neither PASS nor FAIL.
  EXPECT_TRUE(burnin_metrics(analyze_burnin(series_of({10}))).empty());
  EXPECT_TRUE(burnin_metrics(analyze_burnin(series_of({10, 10, 10, 5, 5}))).empty());
  EXPECT_EQ(soak_not_judged(series_of({10}), ""),
            "rate_drop and rate_dip not judged: 1 interval(s) measured, 6 needed");
  EXPECT_EQ(
      soak_not_judged(series_of({10, 10, 10, 5, 5}), "stopped by SIGINT during interval 5 of 6"),
      "rate_drop and rate_dip not judged: 5 interval(s) measured, 6 needed (stopped by "
      "SIGINT during interval 5 of 6)");
  EXPECT_EQ(soak_not_judged(series_of({10, 10, 10, 10, 10, 10}), ""), "");
  EXPECT_EQ(soak_not_judged(json::array(), ""), "");
  RunDir run;
  run.run.run_id = "run";
  run.records.records = {rank_record(0, series_of({10}), 0),
                         rank_record(1, series_of({10, 10, 10, 5, 5}), 0)};
  Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/burnin-cpu.json");
  Report rep = make_report(run, spec);
  const RowResult& drop = row(rep, "burnin.rate_drop");
  EXPECT_EQ(drop.outcome, kMissing);
  for (const auto& it : drop.items) EXPECT_NE(it.outcome, kPass) << it.item;
  EXPECT_EQ(row(rep, "burnin.rate_dip").outcome, kMissing);
  EXPECT_EQ(row(rep, "burnin.verification").outcome, kPass);  // judged on what was measured
  EXPECT_EQ(exit_code(rep), 4);  // a fail-severity row MISSING: acceptance incomplete
}

TEST(BurninVerdicts, WrongResultFailsThatRank) {
  RunDir run;
  run.run.run_id = "run";
  json steady = series_of({5, 5, 5, 5, 5, 5});
  run.records.records = {rank_record(0, steady, 0), rank_record(1, steady, 2)};
  Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/burnin-cpu.json");
  Report rep = make_report(run, spec);
  const RowResult& v = row(rep, "burnin.verification");
  EXPECT_EQ(v.outcome, kFail);
  EXPECT_EQ(v.worst_item, "node01/rank1");
  EXPECT_EQ(row(rep, "burnin.rate_drop").outcome, kPass);
  EXPECT_EQ(exit_code(rep), 1);
}

TEST(BurninVerdicts, HealthySoakPassesAndGpuTableJudgesThrottling) {
  RunDir run;
  run.run.run_id = "run";
  json cool = series_of({500, 500, 500, 500, 500, 500}, {4, 4, 4, 4, 4, 4});
  json hot =
      series_of({500, 500, 500, 500, 500, 500}, {4, 4, 0x20, 0x20, 4, 4}, {80, 84, 88, 88, 86, 86});
  run.records.records = {rank_record(0, cool, 0, "gpu"), rank_record(1, hot, 0, "gpu")};
  run.records.records[0].metrics.push_back({"temperature_max", 70, "C", false});
  run.records.records[1].metrics.push_back({"temperature_max", 88, "C", false});
  Spec cpu = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/burnin-cpu.json");
  EXPECT_EQ(exit_code(make_report(run, cpu)), 0);
  Spec gpu = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/burnin-gpu.json");
  Report rep = make_report(run, gpu);
  const RowResult& th = row(rep, "burnin.slowdown");
  EXPECT_EQ(th.outcome, kFail);
  EXPECT_EQ(th.worst_item, "node01/gpu1");
  EXPECT_EQ(th.value, 2);
  // 88 C FAILs the burn-in as it FAILs gpu.gemm_temperature in a run (issue 40: it was a WARN).
  EXPECT_EQ(row(rep, "burnin.temperature_max").outcome, kFail);
  EXPECT_EQ(exit_code(rep), 1);
}

TEST(BurninCharts, RateAndTemperatureOverTime) {
  RunDir run;
  run.records.records = {
      rank_record(0, series_of({1, 2, 3, 4, 5, 6}), 0),
      rank_record(1, series_of({1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0}, {60, 61, 62, 63, 64, 65}), 0,
                  "gpu")};
  auto charts = burnin_charts(run, find_soaks(run, soak_families()));
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_EQ(charts[0].kind, "lines");
  ASSERT_EQ(charts[0].series.size(), 2u);
  EXPECT_EQ(charts[0].series[0].name, "node01/gpu1");
  EXPECT_EQ(charts[0].series[1].name, "node01/rank0");
  EXPECT_EQ(charts[0].series[1].points[2], std::make_pair(25.0, 3.0));  // middle of [20, 30]
  ASSERT_EQ(charts[1].series.size(), 1u);
  EXPECT_EQ(charts[1].series[0].points[5], std::make_pair(55.0, 65.0));
  std::string script = gnuplot_script(charts[0]);
  EXPECT_NE(script.find("node01/rank0"), std::string::npos);
  EXPECT_NE(script.find("with linespoints"), std::string::npos);
}

// Soak records are found through the spec's family ("series": "soak"), whatever their id: a
// table without the family judges no rate, one that names another id judges that one.
TEST(BurninVerdicts, SoakRecordsAreFoundThroughTheSpecFamily) {
  RunDir run;
  run.run.run_id = "run";
  run.records.records = {rank_record(0, series_of({10, 10, 10, 8, 8, 8}), 0)};
  EXPECT_EQ(find_soaks(run, soak_families()).size(), 1u);
  EXPECT_TRUE(find_soaks(run, {}).empty());
  run.records.records[0].benchmark = "site.soak";
  SpecFamily site;
  site.benchmark = "site.*";
  site.series = "soak";
  auto soaks = find_soaks(run, {site});
  ASSERT_EQ(soaks.size(), 1u);
  EXPECT_EQ(soaks[0].item, "node01/rank0");
  // The soak's own metrics are judged as they are, whatever the family says.
  ASSERT_EQ(run.records.records[0].metrics.size(), 3u);
  EXPECT_EQ(run.records.records[0].metrics[1].name, "rate_drop");
  EXPECT_DOUBLE_EQ(run.records.records[0].metrics[1].value, 20);
  Report rep =
      make_report(run, load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/burnin-cpu.json"));
  EXPECT_TRUE(rep.soaks.empty());  // burnin-cpu.json's family is burnin.soak, not site.soak
  EXPECT_EQ(row(rep, "burnin.rate_drop").outcome, kMissing);  // no burnin.soak record
}

}  // namespace
}  // namespace clusterbench::report
