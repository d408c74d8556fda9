// Health deltas and their judgement (reports/health.hpp, the health.* rows of reports/specs) on
// hand-written snapshots in bench/env/health.hpp's format.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "records/spec.hpp"
#include "reports/health.hpp"
#include "reports/report.hpp"

namespace clusterbench::report {
namespace {

json ib_port(const std::string& name, int symbol, int downed) {
  return {{"name", name},
          {"counters",
           {{"symbol_error", symbol},
            {"link_downed", downed},
            {"link_error_recovery", 0},
            {"port_rcv_errors", 0},
            {"port_xmit_discards", 0}}}};
}

json snapshot(json ib_ports, json kernel_log = nullptr) {
  json s = {{"schema", "clusterbench.health/1"},
            {"collected_at", "2026-11-30T12:00:00Z"},
            {"nvml", "ok"},
            {"gpus", json::array()},
            {"ib_ports", std::move(ib_ports)},
            {"pcie_aer", json::array()}};
  s["kernel_log"] = kernel_log.is_null()
                        ? json{{"readable", true}, {"last_seq", 10}, {"xid", json::array()}}
                        : kernel_log;
  return s;
}

const HealthValue& only(const std::vector<HealthValue>& all, const std::string& metric,
                        const std::string& item) {
  for (const auto& v : all)
    if (v.metric == metric && v.item == item) return v;
  throw std::runtime_error("no " + metric + " of " + item);
}

RunDir run_of(const json& start, const json& end) {
  RunDir run;
  run.run.run_id = "r";
  EnvRecord env;
  env.host = "node01";
  env.health = {{"start", start}, {"end", end}};
  run.run.env.push_back(env);
  return run;
}

const RowResult& row(const Report& r, const std::string& id) {
  for (const auto& x : r.rows)
    if (x.req.id == id) return x;
  throw std::runtime_error("no row " + id);
}

TEST(HealthDeltas, IbSymbolErrorsRiseAndTheRowWarnsNamingThePort) {
  json start = snapshot({ib_port("mlx5_0/1", 5, 0), ib_port("mlx5_1/1", 0, 0)});
  json end = snapshot({ib_port("mlx5_0/1", 15, 0), ib_port("mlx5_1/1", 11, 0)});
  auto all = health_deltas(start, end, "node01");
  EXPECT_EQ(only(all, "ib.symbol_error", "node01/nic[mlx5_0/1]").value, 10);
  EXPECT_EQ(only(all, "ib.symbol_error", "node01/nic[mlx5_0/1]").detail, "symbol_error 5 -> 15");
  EXPECT_EQ(only(all, "ib.symbol_error", "node01/nic[mlx5_1/1]").value, 11);

  Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/cpu-node.json");
  Report r = make_report(run_of(start, end), spec);
  const RowResult& sym = row(r, "health.ib_symbol_error");
  EXPECT_EQ(sym.outcome, kWarn);  // 11 > 10; mlx5_0/1 at exactly 10 passes
  EXPECT_EQ(sym.worst_item, "node01/nic[mlx5_1/1]");
  EXPECT_EQ(sym.message,
            "11 on node01/nic[mlx5_1/1] (above 10): symbol_error 0 -> 11; 2 items: 1 WARN, 1 PASS");
  EXPECT_EQ(row(r, "health.ib_link_downed").outcome, kPass);
  // The deltas are computed once per node and kept in the report.
  ASSERT_EQ(r.health.size(), 1u);
  EXPECT_EQ(r.health[0].host, "node01");
  EXPECT_EQ(r.health[0].values.size(), all.size());
}

TEST(HealthDeltas, LinkDownedFailsAndAResetCounterCountsFromZero) {
  json start = snapshot({ib_port("mlx5_0/1", 40, 0)});
  json end = snapshot({ib_port("mlx5_0/1", 3, 1)});  // symbol_error cleared (perfquery -x)
  auto all = health_deltas(start, end, "node01");
  EXPECT_EQ(only(all, "ib.symbol_error", "node01/nic[mlx5_0/1]").value, 3);
  EXPECT_EQ(only(all, "ib.symbol_error", "node01/nic[mlx5_0/1]").detail,
            "symbol_error 40 -> 3 (reset)");
  Report r = make_report(run_of(start, end),
                         load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/cpu-node.json"));
  EXPECT_EQ(row(r, "health.ib_link_downed").outcome, kFail);
  EXPECT_EQ(row(r, "health.ib_link_downed").worst_item, "node01/nic[mlx5_0/1]");
  EXPECT_EQ(r.exit_code, 1);
}

TEST(HealthDeltas, NodeWithoutPortsOrAerIsWaivedWithTheReason) {
  auto all = health_deltas(snapshot(json::array()), snapshot(json::array()), "cpu01");
  const HealthValue& v = only(all, "ib.port_rcv_errors", "cpu01");
  EXPECT_TRUE(v.absent);
  EXPECT_TRUE(v.value.is_null());
  EXPECT_EQ(v.detail, "no InfiniBand port on this node");
  EXPECT_TRUE(only(all, "pcie.aer_fatal", "cpu01").absent);
  EXPECT_EQ(only(all, "pcie.aer_fatal", "cpu01").detail,
            "no GPU or NIC on this node reports AER counters");
  EXPECT_EQ(only(all, "gpu.ecc_uncorrected", "cpu01").detail, "no GPU in the snapshots");
  // Judged: WAIVED with the reason, never a PASS for hardware that is not there.
  Report r = make_report(run_of(snapshot(json::array()), snapshot(json::array())),
                         load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/cpu-node.json"));
  EXPECT_EQ(row(r, "health.ib_port_rcv_errors").outcome, kWaived);
  EXPECT_NE(row(r, "health.ib_port_rcv_errors").message.find("no InfiniBand port on this node"),
            std::string::npos)
      << row(r, "health.ib_port_rcv_errors").message;
  EXPECT_EQ(row(r, "health.pcie_aer_fatal").outcome, kWaived);
}

TEST(HealthDeltas, UnreadableCounterIsUnknownNotZero) {
  json start = snapshot({ib_port("mlx5_0/1", 0, 0)});
  json end = snapshot({ib_port("mlx5_0/1", 0, 0)});
  end["ib_ports"][0]["counters"].erase("link_downed");
  auto all = health_deltas(start, end, "node01");
  const HealthValue& v = only(all, "ib.link_downed", "node01/nic[mlx5_0/1]");
  EXPECT_TRUE(v.value.is_null());
  EXPECT_EQ(v.detail, "link_downed absent at end");
  Report r = make_report(run_of(start, end),
                         load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/cpu-node.json"));
  EXPECT_EQ(row(r, "health.ib_link_downed").outcome, kMissing);
  EXPECT_EQ(row(r, "health.ib_link_downed").message,
            "node01/nic[mlx5_0/1]: link_downed absent at end");
}

TEST(HealthDeltas, XidsOfTheKernelLogCountOnlyAfterTheStart) {
  json gpu = {{"index", 0}, {"uuid", "GPU-a"}, {"pci_bus_id", "0000:18:00.0"}, {"status", "ok"}};
  json start = snapshot(json::array(), {{"readable", true},
                                        {"last_seq", 100},
                                        {"xid",
                                         {{{"seq", 90},
                                           {"pci_bus_id", "0000:18:00.0"},
                                           {"xid", 13},
                                           {"text", "NVRM: Xid (PCI:0000:18:00): 13, old"}}}}});
  json end = start;
  end["kernel_log"]["last_seq"] = 120;
  end["kernel_log"]["xid"].push_back({{"seq", 110},
                                      {"pci_bus_id", "0000:18:00.0"},
                                      {"xid", 48},
                                      {"text", "NVRM: Xid (PCI:0000:18:00): 48, DBE"}});
  end["kernel_log"]["xid"].push_back({{"seq", 111},
                                      {"pci_bus_id", "0000:c1:00.0"},
                                      {"xid", 79},
                                      {"text", "NVRM: Xid (PCI:0000:c1:00): 79, off the bus"}});
  start["gpus"] = end["gpus"] = json::array({gpu});
  end["xid_watch"] = {{"status", "nvmlEventSetCreate: Not Supported"}};
  auto all = health_deltas(start, end, "node01");
  const HealthValue& g = only(all, "gpu.xid", "node01/gpu0[GPU-a]@0000:18:00.0");
  EXPECT_EQ(g.value, 1);
  EXPECT_EQ(g.detail, "kernel log: NVRM: Xid (PCI:0000:18:00): 48, DBE");
  EXPECT_EQ(g.gpu_index, 0);
  EXPECT_EQ(g.uuid, "GPU-a");
  // A bus NVML does not list (a GPU that fell off the bus) is still reported.
  EXPECT_EQ(only(all, "gpu.xid", "node01/pci[0000:c1:00.0]").value, 1);

  // Neither source usable: unknown.
  end["kernel_log"]["readable"] = false;
  end["kernel_log"]["status"] = "Operation not permitted";
  auto none = health_deltas(start, end, "node01");
  const HealthValue& u = only(none, "gpu.xid", "node01");
  EXPECT_TRUE(u.value.is_null());
  EXPECT_EQ(u.detail,
            "no XID source: NVML events: nvmlEventSetCreate: Not Supported; kernel log: "
            "Operation not permitted");
}

TEST(HealthDeltas, VolatileEccResetByADriverReloadStillCounts) {
  json g0 = {{"index", 0},
             {"uuid", "GPU-a"},
             {"pci_bus_id", "0000:18:00.0"},
             {"status", "ok"},
             {"ecc",
              {{"volatile", {{"corrected", 9}, {"uncorrected", 4}}},
               {"aggregate", {{"corrected", 50}, {"uncorrected", 4}}}}}};
  json g1 = g0;
  g1["ecc"]["volatile"]["uncorrected"] = 1;   // reloaded, then 1 new error
  g1["ecc"]["aggregate"]["uncorrected"] = 5;  // +1
  json start = snapshot(json::array()), end = snapshot(json::array());
  start["gpus"] = json::array({g0});
  end["gpus"] = json::array({g1});
  auto all = health_deltas(start, end, "node01");
  const HealthValue& v = only(all, "gpu.ecc_uncorrected", "node01/gpu0[GPU-a]@0000:18:00.0");
  EXPECT_EQ(v.value, 1);
  EXPECT_EQ(v.detail, "volatile 4 -> 1 (reset), aggregate 4 -> 5");
  EXPECT_EQ(only(all, "gpu.ecc_corrected", "node01/gpu0[GPU-a]@0000:18:00.0").value, 0);
  // No remapping data and no retired pages: unknown, not healthy.
  EXPECT_TRUE(only(all, "gpu.row_remap_failed", "node01/gpu0[GPU-a]@0000:18:00.0").value.is_null());
}

TEST(HealthDeltas, UnknownMetricIsAnInputError) {
  auto all = health_deltas(snapshot(json::array()), snapshot(json::array()), "n");
  EXPECT_THROW(health_values(all, "gpu.ecc"), InputError);
  EXPECT_EQ(health_values(all, "ib.link_downed").size(), 1u);
  EXPECT_EQ(health_metrics().size(), 19u);
}

TEST(HealthRowsSpec, UnitMustBeCountAndMetricKnown) {
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& metric, const std::string& unit) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << json{
        {"schema", "clusterbench.spec/1"},
        {"name", name},
        {"requirements",
         {{{"id", "health.x"},
           {"title", "t"},
           {"source", "s"},
           {"severity", "fail"},
           {"select", {{"health", metric}}},
           {"scope", "node"},
           {"aggregate", "each"},
           {"op", "<="},
           {"value", 0},
           {"unit", unit}}}}}.dump();
    return path;
  };
  try {
    load_spec(write("bad-unit.json", "ib.link_downed", "%"));
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "field 'unit' is '%' but health counter ib.link_downed is in 'count'"),
              std::string::npos)
        << e.what();
  }
  Spec spec = load_spec(write("bad-metric.json", "ib.symbol_errors", "count"));
  try {
    make_report(run_of(snapshot(json::array()), snapshot(json::array())), spec);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("spec row 'health.x': field 'select.health': unknown "
                                         "health metric 'ib.symbol_errors'"),
              std::string::npos)
        << e.what();
  }
}

// Issue 46: an end snapshot whose xid_watch is a number (not the object XidWatcher writes)
// stopped `report` with "cannot use value() with number" (exit 3); it is bad input naming the
// host (exit 2).
TEST(HealthDeltas, AFieldOfTheWrongTypeIsBadInputNamingTheHost) {
  json start = snapshot({ib_port("mlx5_0/1", 0, 0)});
  json end = snapshot({ib_port("mlx5_0/1", 0, 0)});
  end["xid_watch"] = 7;
  try {
    health_deltas(start, end, "node01");
    ADD_FAILURE() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("run.json: env of host node01: health snapshot "
                                         "malformed (a field of the wrong type: "),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace clusterbench::report
