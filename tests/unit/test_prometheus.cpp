// Prometheus textfile rendering (reports/prometheus.hpp): names, labels, escaping, scaling, the
// last record of a case winning, and the fleet's per-node series. The file as a whole is parsed
// by a strict grammar in tests/integration/reports_prometheus.sh.
#include <gtest/gtest.h>

#include "reports/prometheus.hpp"

using namespace clusterbench;
using namespace clusterbench::report;

namespace {

ResultRecord gpu_rec(const std::string& host, int gpu, std::vector<Metric> metrics,
                     json params = {{"dtype", "bf16"}}) {
  ResultRecord r;
  r.benchmark = "compute.gemm";
  r.params = std::move(params);
  r.scope.kind = ScopeKind::gpu;
  r.scope.host = host;
  r.scope.gpu_index = gpu;
  r.metrics = std::move(metrics);
  r.case_key = make_case_key(r.benchmark, r.params, r.scope);
  return r;
}

RunDir run_of(std::vector<ResultRecord> recs) {
  RunDir run;
  run.run.run_id = "20261130T090000Z-n1";
  run.run.suite = "ci";
  run.run.finished_at = "2026-11-30T09:00:10Z";
  EnvRecord e;
  e.host = "n1";
  GpuInfo g;
  g.index = 0;
  g.uuid = "GPU-0000";
  g.pci_bus_id = "00000000:1B:00.0";
  e.gpus.push_back(g);
  run.run.env.push_back(e);
  run.records.records = std::move(recs);
  return run;
}

/// The seed families (reports/specs/base.json): the headline table of the shipped specs.
const Spec& base_spec() {
  static const Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/base.json");
  return spec;
}

std::string render(const RunDir& run, const Spec& spec = base_spec()) {
  Report rep;
  rep.run = std::make_shared<const RunDir>(run);
  rep.spec = std::make_shared<const Spec>(spec);
  rep.run_id = run.run.run_id;
  rep.spec_name = "cpu \"node\"";
  rep.exit_code = 4;
  FleetView fleet;
  FleetNode n;
  n.host = "n1";
  n.items = {{kPass, 5}, {kFail, 1}};
  n.records_ok = 3;
  n.outliers = 2;
  n.reasons = {"outlier"};
  fleet.nodes.push_back(n);
  rep.fleet = fleet;
  return render_prometheus(rep);
}

}  // namespace

TEST(Prometheus, GpuSeriesTakeDcgmNamesAndEnvLabels) {
  std::string t = render(run_of({gpu_rec("n1", 0,
                                         {{"tflops", 700.5, "TFLOP/s", true},
                                          {"sm_clock_median", 1980, "MHz", true},
                                          {"temperature_max", 71, "C", false},
                                          {"power_max", 690.25, "W", false},
                                          {"tflops_best", 705, "TFLOP/s", true}})}));
  // UUID and PCI bus id come from the EnvRecord: the record's scope lacks them.
  const std::string gpu = "host=\"n1\",gpu=\"0\",uuid=\"GPU-0000\",pci_bus_id=\"00000000:1B:00.0\"";
  EXPECT_NE(t.find("# TYPE clusterbench_gemm_tflops gauge\n"), std::string::npos) << t;
  EXPECT_NE(t.find("clusterbench_gemm_tflops{" + gpu + ",dtype=\"bf16\"} 700.5\n"),
            std::string::npos)
      << t;
  EXPECT_NE(
      t.find("DCGM_FI_DEV_SM_CLOCK{" + gpu + ",benchmark=\"compute.gemm\",dtype=\"bf16\"} 1980\n"),
      std::string::npos)
      << t;
  EXPECT_NE(
      t.find("DCGM_FI_DEV_GPU_TEMP{" + gpu + ",benchmark=\"compute.gemm\",dtype=\"bf16\"} 71\n"),
      std::string::npos)
      << t;
  EXPECT_NE(t.find("DCGM_FI_DEV_POWER_USAGE{" + gpu +
                   ",benchmark=\"compute.gemm\",dtype=\"bf16\"} 690.25\n"),
            std::string::npos)
      << t;
  EXPECT_EQ(t.find("tflops_best"), std::string::npos) << "not a headline metric\n" << t;
}

TEST(Prometheus, UnitsScaleToBaseUnitsAndWrongUnitsAreSkipped) {
  ResultRecord stream;
  stream.benchmark = "compute.memory_bandwidth";
  stream.params = {{"kernel", "triad"}, {"threads", 2}};
  stream.scope.host = "n1";
  stream.metrics = {{"bandwidth", 12.5, "GB/s", true}};
  ResultRecord fio;
  fio.benchmark = "io.fio";
  fio.params = {{"profile", "randread"}};
  fio.scope.host = "n1";
  fio.metrics = {{"read_clat_p99", 250, "us", false}, {"read_iops", 1000, "MB/s", true}};
  std::string t = render(run_of({stream, fio}));
  EXPECT_NE(
      t.find("clusterbench_host_memory_bandwidth_bytes_per_second{host=\"n1\",kernel=\"triad\","
             "threads=\"2\"} 1.25e+10\n"),
      std::string::npos)
      << t;
  EXPECT_NE(
      t.find("clusterbench_fio_read_clat_p99_seconds{host=\"n1\",profile=\"randread\"} 0.00025\n"),
      std::string::npos)
      << t;
  EXPECT_EQ(t.find("clusterbench_fio_read_iops"), std::string::npos) << "unit MB/s is not IOPS\n"
                                                                     << t;
}

TEST(Prometheus, LastRecordOfACaseWinsAndFailedRecordsAreSkipped) {
  ResultRecord failed = gpu_rec("n1", 0, {{"tflops", 1, "TFLOP/s", true}});
  failed.status = Status::failed;
  std::string t = render(run_of({gpu_rec("n1", 0, {{"tflops", 600, "TFLOP/s", true}}),
                                 gpu_rec("n1", 0, {{"tflops", 650, "TFLOP/s", true}}), failed}));
  EXPECT_NE(t.find("dtype=\"bf16\"} 650\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("} 600\n"), std::string::npos) << t;
  // One sample: one line starting with the family name and a brace.
  size_t n = 0;
  for (size_t p = t.find("\nclusterbench_gemm_tflops{"); p != std::string::npos;
       p = t.find("\nclusterbench_gemm_tflops{", p + 1))
    ++n;
  EXPECT_EQ(n, 1u) << t;
}

TEST(Prometheus, ParamLabelsAreValidNamesAndValuesAreEscaped) {
  std::string t = render(
      run_of({gpu_rec("n1", 0, {{"tflops", 1.5, "TFLOP/s", true}},
                      {{"host", "x"}, {"shape-name", "a\"b\\c\nd"}, {"2d", true}, {"__x", 1}})}));
  // nlohmann orders keys: 2d, __x, host, shape-name.
  EXPECT_NE(
      t.find(
          ",_2d=\"true\",param___x=\"1\",param_host=\"x\",shape_name=\"a\\\"b\\\\c\\nd\"} 1.5\n"),
      std::string::npos)
      << t;
}

// Label names are unique and valid whatever the params are called: "a-b" beside "a_b", a param
// "host" beside the fixed label and beside a param "param_host"; values are UTF-8.
TEST(Prometheus, ParamLabelNamesAreUniqueAndValuesUtf8) {
  std::string t = render(run_of(
      {gpu_rec("n1", 0, {{"tflops", 1.5, "TFLOP/s", true}},
               {{"a-b", "1"}, {"a_b", "2"}, {"host", "h"}, {"param_host", "p"}, {"v", "x\xff"}})}));
  // Key order: a-b, a_b, host, param_host, v; a name that is valid as it is keeps it.
  EXPECT_NE(
      t.find(",a_b_2=\"1\",a_b=\"2\",param_host_2=\"h\",param_host=\"p\",v=\"x\xEF\xBF\xBD\"} "
             "1.5\n"),
      std::string::npos)
      << t;
  EXPECT_EQ(t.find('\xff'), std::string::npos);
}

TEST(Prometheus, NodeAndRunSeries) {
  std::string t = render(run_of({}));
  EXPECT_NE(t.find("clusterbench_node_failing{host=\"n1\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("clusterbench_node_outliers{host=\"n1\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("clusterbench_node_spec_items{host=\"n1\",outcome=\"FAIL\"} 1\n"),
            std::string::npos);
  EXPECT_NE(t.find("clusterbench_node_spec_items{host=\"n1\",outcome=\"WAIVED\"} 0\n"),
            std::string::npos);
  EXPECT_NE(t.find("clusterbench_node_records{host=\"n1\",status=\"ok\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("clusterbench_run_info{run_id=\"20261130T090000Z-n1\",suite=\"ci\",spec=\"cpu "
                   "\\\"node\\\"\",verdict=\"INCOMPLETE\"} 1\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("clusterbench_run_exit_code 4\n"), std::string::npos) << t;
  // 2026-11-30T09:00:10Z = 1796029210 s since the epoch.
  EXPECT_NE(t.find("clusterbench_run_finished_timestamp_seconds 1796029210\n"), std::string::npos)
      << t;
  // No headline family without samples.
  EXPECT_EQ(t.find("clusterbench_gemm_tflops"), std::string::npos) << t;
}

// Headlines are the spec's: a table without families has none, and a family's own gauge (a glob,
// a scale) is used as written.
TEST(Prometheus, HeadlinesComeFromTheSpecFamilies) {
  RunDir run = run_of({gpu_rec("n1", 0, {{"tflops", 700.5, "TFLOP/s", true}})});
  Spec none;
  std::string t = render(run, none);
  EXPECT_EQ(t.find("clusterbench_gemm_tflops"), std::string::npos) << t;
  EXPECT_NE(t.find("clusterbench_node_failing{host=\"n1\"} 1\n"), std::string::npos) << t;
  Spec own;
  SpecFamily f;
  f.benchmark = "compute.*";
  f.prometheus = {{"tflops", "site_flops", "FLOP/s of the site's own dashboard", "TFLOP/s", 1e12}};
  own.families.push_back(f);
  t = render(run, own);
  EXPECT_NE(t.find("# HELP site_flops FLOP/s of the site's own dashboard (clusterbench "
                   "compute.gemm metric tflops)\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("site_flops{host=\"n1\",gpu=\"0\",uuid=\"GPU-0000\",pci_bus_id=\"00000000:1B:"
                   "00.0\",dtype=\"bf16\"} 7.005e+14\n"),
            std::string::npos)
      << t;
}
