// Alerting rules of a spec table (reports/alert_rules.hpp, spec `alerts`): every shipped table's
// rules against its rows (expression, the inverted op, the row's value times scale, severity),
// a site's table that changes a row changes its rule, and the refusals of a bad `alerts` entry.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "records/spec.hpp"
#include "reports/alert_rules.hpp"

using namespace clusterbench;

namespace {

const std::string kSpecs = std::string(CB_SOURCE_DIR) + "/reports/specs/";

const Requirement* row_of(const Spec& s, const std::string& id) {
  for (const auto& q : s.requirements)
    if (q.id == id) return &q;
  return nullptr;
}

/// A table extending `parent` with `alerts` and `rows` (path returned).
std::string site_table(const std::string& name, const std::string& parent, const json& alerts,
                       const json& rows = json::array()) {
  const std::string dir = ::testing::TempDir() + "cb_alerts_" + name;
  std::filesystem::create_directories(dir);
  json t = {{"schema", "clusterbench.spec/5"},
            {"name", name},
            {"extends", kSpecs + parent},
            {"requirements", rows}};
  if (!alerts.is_null()) t["alerts"] = alerts;
  std::ofstream(dir + "/t.json") << t.dump(2);
  return dir + "/t.json";
}

std::string load_error(const std::string& path) {
  try {
    load_spec(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(AlertRules, EveryShippedTableRuleMatchesItsRow) {
  int with_row = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSpecs)) {
    const Spec s = load_spec(entry.path().string());
    const std::string text = report::render_alert_rules(s, "abc", "test");
    EXPECT_EQ(text.rfind(report::kAlertRulesMagic, 0), 0u) << s.name;
    for (const SpecAlert& a : s.alerts) {
      EXPECT_NE(text.find("- alert: " + a.id + "\n"), std::string::npos) << a.id;
      EXPECT_NE(text.find("expr: " + json(report::alert_condition(a)).dump()), std::string::npos);
      if (a.row.empty()) continue;
      const Requirement* q = row_of(s, a.row);
      ASSERT_NE(q, nullptr) << s.name << " " << a.id;
      const std::map<std::string, std::string> inverse = {{">=", "<"}, {"<=", ">"}};
      EXPECT_EQ(a.op, inverse.at(q->op)) << a.id;
      EXPECT_DOUBLE_EQ(a.threshold, q->value.get<double>() * a.scale) << a.id;
      EXPECT_EQ(a.severity, q->severity == "fail" ? "critical" : "warning") << a.id;
      ++with_row;
    }
  }
  EXPECT_GE(with_row, 9);
}

TEST(AlertRules, TheGuidesFourOnTheH100Table) {
  const Spec s = load_spec(kSpecs + "h100-sxm-80g-8x.json");
  std::map<std::string, std::string> cond;
  for (const auto& a : s.alerts) cond[a.id] = report::alert_condition(a);
  EXPECT_EQ(cond["GpuUtilisationLow"], "(DCGM_FI_DEV_GPU_UTIL) < 50");
  EXPECT_EQ(cond["GpuTemperatureHigh"], "(DCGM_FI_DEV_GPU_TEMP) > 85");
  EXPECT_EQ(cond["GpuMemoryHigh"],
            "(100 * DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) > 95");
  // 12.5 GB/s per NIC x 8 NICs = 100 GB/s = 1e11 bytes/s.
  EXPECT_NE(cond["NodeNetworkBandwidthLow"].find("node_infiniband_rate_bytes_per_second"),
            std::string::npos);
  EXPECT_EQ(cond["NodeNetworkBandwidthLow"].substr(cond["NodeNetworkBandwidthLow"].size() - 9),
            ") < 1e+11");
  EXPECT_EQ(cond["GpuXidError"], "(DCGM_FI_DEV_XID_ERRORS) > 0");
  EXPECT_EQ(cond["GpuEccCorrected"], "(increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL[1h])) > 10");
  const std::string text = report::render_alert_rules(s, "abc", "test");
  EXPECT_NE(text.find("        for: 1h\n"), std::string::npos);
  EXPECT_NE(text.find("summary: \"GPU temperature high (> 85 C)\""), std::string::npos);
}

TEST(AlertRules, ASitesTableChangesTheRuleThroughItsRow) {
  json rows = json::array({{{"id", "gpu.gemm_temperature"},
                            {"title", "GPU temperature <= 80 C"},
                            {"source", "this site's cooling"},
                            {"severity", "warn"},
                            {"select",
                             {{"benchmark", "compute.gemm"},
                              {"params", {{"backend", "cublaslt"}}},
                              {"metric", "temperature_max"}}},
                            {"scope", "gpu"},
                            {"aggregate", "each"},
                            {"op", "<="},
                            {"value", 80},
                            {"unit", "C"}}});
  const Spec s = load_spec(site_table("site80", "h100-sxm-80g-8x.json", nullptr, rows));
  const auto it = std::find_if(s.alerts.begin(), s.alerts.end(),
                               [](const SpecAlert& a) { return a.id == "GpuTemperatureHigh"; });
  ASSERT_NE(it, s.alerts.end());
  EXPECT_EQ(report::alert_condition(*it), "(DCGM_FI_DEV_GPU_TEMP) > 80");
  EXPECT_EQ(it->severity, "warning");  // the row is a warn now
  // nics_per_node 4: the network rule's threshold halves.
  const std::string dir = ::testing::TempDir() + "cb_alerts_nics4";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/t.json") << json{
      {"schema", "clusterbench.spec/5"},
      {"name", "nics4"},
      {"extends", kSpecs + "h100-sxm-80g-8x.json"},
      {"nics_per_node", 4},
      {"requirements", json::array()}}.dump();
  const Spec four = load_spec(dir + "/t.json");
  int network = 0;
  for (const auto& a : four.alerts)
    if (a.id == "NodeNetworkBandwidthLow") {
      EXPECT_DOUBLE_EQ(a.threshold, 5e10);
      ++network;
    }
  EXPECT_EQ(network, 1);
}

TEST(AlertRules, RemoveAndReplaceByIdAndTheRefusals) {
  const json removed = json::array({{{"id", "GpuUtilisationLow"}, {"remove", true}}});
  const Spec s = load_spec(site_table("rm", "h100-sxm-80g-8x.json", removed));
  EXPECT_EQ(s.alerts.size(), 9u);
  auto err = [&](const std::string& name, json alert, json rows = json::array()) {
    return load_error(site_table(name, "h100-sxm-80g-8x.json", json::array({alert}), rows));
  };
  json own = {{"id", "Own"}, {"title", "t"}, {"expr", "up"}, {"op", "<"}, {"value", 1}};
  EXPECT_EQ(err("own", own), "");
  json bad = own;
  bad["id"] = "1bad-name";
  EXPECT_NE(err("badid", bad).find("field 'id' must be a Prometheus alert name"),
            std::string::npos);
  bad = own, bad["for"] = "an hour";
  EXPECT_NE(err("badfor", bad).find("not a Prometheus duration"), std::string::npos);
  bad = own, bad["op"] = "matches";
  EXPECT_NE(err("badop", bad).find("field 'op' must be one of"), std::string::npos);
  bad = own, bad["row"] = "gpu.gemm_temperature";
  EXPECT_NE(err("both", bad).find("leave 'op' and 'value' out"), std::string::npos);
  bad = {{"id", "X"}, {"title", "t"}, {"expr", "up"}, {"row", "no.such_row"}};
  EXPECT_NE(err("norow", bad).find("alert 'X': row 'no.such_row' is not in the table"),
            std::string::npos);
  bad = {{"id", "X"}, {"title", "t"}, {"expr", "up"}, {"row", "gpu.driver"}};  // op matches
  EXPECT_NE(err("regexrow", bad).find("no threshold to alert on"), std::string::npos);
  bad = {
      {"id", "X"}, {"title", "t"}, {"expr", "up"}, {"row", "gpu.gemm_temperature"}, {"unit", "%"}};
  EXPECT_NE(err("unit", bad).find("is in 'C', the alert says '%'"), std::string::npos);
  bad = own, bad["severity"] = "page";
  EXPECT_NE(err("sev", bad).find("field 'severity' must be warning or critical"),
            std::string::npos);
  bad = own, bad["for"] = "";
  EXPECT_NE(err("emptyfor", bad).find("not a Prometheus duration"), std::string::npos);
  bad = {{"id", "GpuTemperatureHigh"}, {"remove", false}};
  EXPECT_NE(err("rmfalse", bad).find("a removal is"), std::string::npos);
  bad = {{"id", "GpuTemperatureHigh"}, {"remove", true}, {"expr", "x"}};
  EXPECT_NE(err("rmextra", bad).find("a removal is"), std::string::npos);
  bad = {{"id", "X"},
         {"title", "t"},
         {"expr", "up"},
         {"row", "gpu.gemm_temperature"},
         {"scale", 1e308}};
  EXPECT_NE(err("inf", bad).find("not a finite number"), std::string::npos);
  bad = own, bad["exprs"] = "up";
  EXPECT_NE(err("key", bad).find("unknown field 'exprs'"), std::string::npos);
  // Removing the row an alert reads without removing the alert.
  const json rm_row = json::array({{{"id", "gpu.gemm_temperature"}, {"remove", true}}});
  EXPECT_NE(load_error(site_table("rmrow", "h100-sxm-80g-8x.json", nullptr, rm_row))
                .find("alert 'GpuTemperatureHigh': row 'gpu.gemm_temperature' is not in the "
                      "table"),
            std::string::npos);
}
