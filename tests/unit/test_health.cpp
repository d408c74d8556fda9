// Health counters (bench/env/health.hpp) on fixture trees (tests/fixtures/fsroot-health, written by
// make_health_fixtures.py) and the fake NVML (tests/fixtures/nvml/health-*.json), and their
// judgement by the spec rows of reports/specs (reports/health.hpp, reports/report.hpp).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>

#include "env/health.hpp"
#include "env/nvml.hpp"
#include "records/spec.hpp"
#include "reports/health.hpp"
#include "reports/report.hpp"

namespace clusterbench {
namespace {

const std::string kTrees = std::string(CB_FIXTURES) + "/fsroot-health/";
constexpr const char* kFakeLib = CB_BINARY_DIR "/tests/fake_nvml/libnvidia-ml.so";
constexpr const char* kGpu0 = "GPU-6d8a3b2e-1f4c-7a90-b2d1-0c5e8f3a4b01";

void use_fake_nvml(const std::string& fixture) {
  setenv("CLUSTERBENCH_NVML_LIB", kFakeLib, 1);
  setenv("FAKE_NVML_JSON", (std::string(CB_FIXTURES) + "/nvml/" + fixture).c_str(), 1);
  Nvml::reload_for_testing();
}

// --- parsers ------------------------------------------------------------------------------------

TEST(HealthParse, AerFileInTheKernelsFormat) {
  json c = health::parse_aer(
      "RxErr 1\nBadTLP 12\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\n"
      "HeaderOF 0\nTOTAL_ERR_COR 13\n");
  EXPECT_EQ(c.size(), 9u);
  EXPECT_EQ(c["BadTLP"], 12);
  EXPECT_EQ(c["TOTAL_ERR_COR"], 13);
  // Not "<name> <count>": skipped.
  json odd = health::parse_aer("garbage\nRxErr x\nTLP 1 2\nDLP 3\n");
  EXPECT_EQ(odd, json({{"DLP", 3}}));
}

TEST(HealthParse, XidLinesOfKmsgAndSyslog) {
  json k = health::parse_xid_line(
      "4,1503,96200417,-;NVRM: Xid (PCI:0000:17:00): 79, pid='<unknown>', name=<unknown>, GPU "
      "has fallen off the bus.");
  EXPECT_EQ(k["seq"], 1503);
  EXPECT_EQ(k["pci_bus_id"], "0000:17:00.0");
  EXPECT_EQ(k["xid"], 79);
  EXPECT_EQ(k["text"].get<std::string>().rfind("NVRM: Xid (PCI:0000:17:00): 79, pid=", 0), 0u);
  json s = health::parse_xid_line(
      "Nov 30 12:00:01 node01 kernel: [ 81.2] NVRM: Xid (PCI:0000:3B:00): 48, pid=1, DBE");
  EXPECT_EQ(s["seq"], -1);
  EXPECT_EQ(s["pci_bus_id"], "0000:3b:00.0");
  EXPECT_EQ(s["xid"], 48);
  EXPECT_TRUE(health::parse_xid_line("6,1,2,-;NVRM: loading NVIDIA UNIX x86_64").is_null());
}

// --- sysfs and kernel log
// -------------------------------------------------------------------------

TEST(HealthRead, IbPortsAerAndKernelLogOfTheStartTree) {
  json s = health::read_counters(kTrees + "start", /*query_nvml=*/false);
  EXPECT_EQ(s["schema"], "clusterbench.health/1");
  EXPECT_EQ(s["nvml"], "not queried");
  ASSERT_EQ(s["ib_ports"].size(), 2u);
  EXPECT_EQ(s["ib_ports"][0]["name"], "mlx5_0/1");
  EXPECT_EQ(s["ib_ports"][0]["counters"]["link_downed"], 1);
  EXPECT_EQ(s["ib_ports"][1]["name"], "mlx5_1/1");
  EXPECT_EQ(s["ib_ports"][1]["counters"], json({{"symbol_error", 3},
                                                {"link_downed", 0},
                                                {"link_error_recovery", 0},
                                                {"port_rcv_errors", 0},
                                                {"port_xmit_discards", 7}}));

  // GPU, the two HCAs and both X710 functions, in bus order; 0000:31:00.1 has no AER files.
  const json& aer = s["pcie_aer"];
  ASSERT_EQ(aer.size(), 5u);
  EXPECT_EQ(aer[0]["pci_bus_id"], "0000:17:00.0");
  EXPECT_EQ(aer[0]["role"], "gpu");
  EXPECT_EQ(aer[0]["correctable"]["RxErr"], 1);
  EXPECT_EQ(aer[0]["correctable"]["TOTAL_ERR_COR"], 1);
  EXPECT_EQ(aer[0]["fatal"]["TOTAL_ERR_FATAL"], 0);
  EXPECT_EQ(aer[1]["pci_bus_id"], "0000:1a:00.0");
  EXPECT_EQ(aer[1]["role"], "nic");
  EXPECT_EQ(aer[1]["name"], "mlx5_0");
  EXPECT_EQ(aer[2]["name"], "eno1");
  EXPECT_EQ(aer[3]["pci_bus_id"], "0000:31:00.1");
  EXPECT_EQ(aer[3]["aer"], false);
  EXPECT_EQ(aer[4]["name"], "mlx5_1");

  const json& log = s["kernel_log"];
  EXPECT_EQ(log["readable"], true);
  EXPECT_EQ(log["last_seq"], 1500);
  ASSERT_EQ(log["xid"].size(), 1u);
  EXPECT_EQ(log["xid"][0]["xid"], 13);
  EXPECT_EQ(log["xid"][0]["seq"], 1500);
}

TEST(HealthRead, MissingTreeIsEmptyWithReasons) {
  json s = health::read_counters(kTrees + "does-not-exist", false);
  EXPECT_TRUE(s["ib_ports"].empty());
  EXPECT_TRUE(s["pcie_aer"].empty());
  EXPECT_EQ(s["kernel_log"]["readable"], false);
  EXPECT_EQ(s["kernel_log"]["status"], "absent");
}

// --- NVML ---------------------------------------------------------------------------------------

TEST(HealthNvml, CountersRiseBetweenTwoReadings) {
  use_fake_nvml("health-faulty.json");
  json a = health::read_counters(kTrees + "start");
  json b = health::read_counters(kTrees + "faulty-end");
  ASSERT_EQ(a["nvml"], "ok");
  ASSERT_EQ(a["gpus"].size(), 2u);
  const json& g0 = a["gpus"][0];
  EXPECT_EQ(g0["uuid"], kGpu0);
  EXPECT_EQ(g0["pci_bus_id"], "0000:17:00.0");
  EXPECT_EQ(g0["status"], "ok");
  EXPECT_EQ(g0["ecc"]["volatile"], json({{"corrected", 3}, {"uncorrected", 0}}));
  EXPECT_EQ(g0["ecc"]["aggregate"], json({{"corrected", 40}, {"uncorrected", 5}}));
  EXPECT_EQ(g0["row_remap"]["pending"], false);
  EXPECT_EQ(g0["row_remap"]["histogram"]["max"], 640);
  EXPECT_FALSE(g0.contains("retired_pages"));  // H100: Not Supported, left out
  // 4 of 18 links are up: only those are read.
  ASSERT_EQ(g0["nvlink"].size(), 4u);
  EXPECT_EQ(g0["nvlink"][0],
            json({{"link", 0}, {"crc_flit", 1}, {"crc_data", 0}, {"replay", 0}, {"recovery", 0}}));
  // The AER device of the GPU is named after its NVML index.
  EXPECT_EQ(a["pcie_aer"][0]["name"], "gpu0");

  const json& e0 = b["gpus"][0];
  EXPECT_EQ(e0["ecc"]["volatile"]["uncorrected"], 2);
  EXPECT_EQ(e0["ecc"]["aggregate"]["uncorrected"], 7);
  EXPECT_EQ(e0["row_remap"]["pending"], true);
  EXPECT_EQ(b["gpus"][1]["nvlink"][2]["crc_flit"], 110);
  EXPECT_EQ(a["gpus"][1]["nvlink"][2]["crc_flit"], 10);
}

TEST(HealthNvml, XidWatcherSeesTheEventsOfTheRun) {
  use_fake_nvml("health-faulty.json");
  health::XidWatcher w;
  w.start(50);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  json r = w.stop();
  EXPECT_EQ(r["status"], "ok");
  EXPECT_EQ(r["gpus_registered"], 2);
  ASSERT_EQ(r["events"].size(), 1u);
  EXPECT_EQ(r["events"][0]["gpu_index"], 0);
  EXPECT_EQ(r["events"][0]["uuid"], kGpu0);
  EXPECT_EQ(r["events"][0]["pci_bus_id"], "0000:17:00.0");
  EXPECT_EQ(r["events"][0]["xid"], 79);
}

TEST(HealthNvml, WatcherWithoutNvmlSaysWhy) {
  setenv("CLUSTERBENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so", 1);
  Nvml::reload_for_testing();
  health::XidWatcher w;
  w.start(50);
  json r = w.stop();
  EXPECT_NE(r["status"].get<std::string>().find("/nonexistent/libnvidia-ml.so"), std::string::npos)
      << r.dump();
  EXPECT_EQ(r["events"].size(), 0u);
  json s = health::read_counters(kTrees + "start");
  EXPECT_TRUE(s["gpus"].empty());
  EXPECT_NE(s["nvml"].get<std::string>().find("/nonexistent"), std::string::npos);
}

// --- judged by the spec rows ---------------------------------------------------------------------

/// A run of one node whose EnvRecord holds the two snapshots (as the runner writes them).
RunDir run_of(const json& start, const json& end) {
  RunDir run;
  run.run.run_id = "20261130T120000Z-node01";
  run.run.finished_at = "2026-11-30T12:05:00Z";
  EnvRecord env;
  env.host = "node01";
  env.health["start"] = start;
  if (!end.is_null()) env.health["end"] = end;
  run.run.env.push_back(env);
  run.run.hosts = {"node01"};
  return run;
}

const report::RowResult& row(const report::Report& r, const std::string& id) {
  for (const auto& x : r.rows)
    if (x.req.id == id) return x;
  throw std::runtime_error("no row " + id);
}

const report::ItemResult& item(const report::RowResult& r, const std::string& name) {
  for (const auto& i : r.items)
    if (i.item == name) return i;
  throw std::runtime_error("no item " + name + " in " + r.req.id);
}

class HealthRows : public ::testing::Test {
 protected:
  Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/gpu-node-base.json");
  const std::string gpu0 = std::string("node01/gpu0[") + kGpu0 + "]@0000:17:00.0";
  const std::string gpu1 = "node01/gpu1[GPU-a1b2c3d4-e5f6-0718-293a-4b5c6d7e8f02]@0000:2a:00.0";

  report::Report run_trees(const std::string& nvml, const std::string& end_tree) {
    use_fake_nvml(nvml);
    health::XidWatcher w;
    json start = health::read_counters(kTrees + "start");
    w.start(20);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    json end = health::read_counters(kTrees + end_tree);
    end["xid_watch"] = w.stop();
    return report::make_report(run_of(start, end), spec);
  }
};

TEST_F(HealthRows, HealthyTreePassesEveryHealthRow) {
  report::Report r = run_trees("health-healthy.json", "healthy-end");
  int health_rows = 0;
  for (const auto& x : r.rows) {
    if (x.req.id.rfind("health.", 0) != 0) continue;
    ++health_rows;
    EXPECT_EQ(x.outcome, report::kPass) << x.req.id << ": " << x.message;
  }
  EXPECT_EQ(health_rows, 17);
  // Rises within the allowances are shown with their evidence.
  const auto& sym = row(r, "health.ib_symbol_error");
  EXPECT_EQ(sym.value, 2);
  EXPECT_EQ(sym.worst_item, "node01/nic[mlx5_0/1]");
  EXPECT_NE(sym.message.find("symbol_error 0 -> 2"), std::string::npos) << sym.message;
  const auto& cor = row(r, "health.gpu_ecc_corrected");
  EXPECT_EQ(item(cor, gpu1).value, 4);
  EXPECT_NE(item(cor, gpu1).message.find("volatile 0 -> 4, aggregate 12 -> 16"), std::string::npos)
      << item(cor, gpu1).message;
  // The XID of seq 1500 predates the run: not counted.
  EXPECT_EQ(item(row(r, "health.gpu_xid"), gpu0).value, 0);
  ASSERT_FALSE(row(r, "health.gpu_xid").evidence.empty());
  EXPECT_EQ(row(r, "health.gpu_xid").evidence[0].rfind("run.json env[node01].health: start ", 0),
            0u);
}

TEST_F(HealthRows, FaultyRunFailsNamingGpusPortsAndDevices) {
  report::Report r = run_trees("health-faulty.json", "faulty-end");

  const auto& unc = row(r, "health.gpu_ecc_uncorrected");
  EXPECT_EQ(unc.outcome, report::kFail);
  EXPECT_EQ(unc.worst_item, gpu0);
  EXPECT_EQ(unc.value, 2);
  EXPECT_NE(unc.message.find("volatile 0 -> 2, aggregate 5 -> 7"), std::string::npos)
      << unc.message;
  EXPECT_EQ(item(unc, gpu1).outcome, report::kPass);

  EXPECT_EQ(row(r, "health.gpu_row_remap_pending").outcome, report::kFail);
  EXPECT_EQ(row(r, "health.gpu_row_remap_pending").worst_item, gpu0);
  EXPECT_EQ(row(r, "health.gpu_row_remap_failed").outcome, report::kPass);

  // XID 79: NVML's event and the kernel record (seq 1503 > 1500) are one event.
  const auto& xid = row(r, "health.gpu_xid");
  EXPECT_EQ(xid.outcome, report::kFail);
  EXPECT_EQ(xid.worst_item, gpu0);
  EXPECT_EQ(xid.value, 1);
  EXPECT_NE(xid.message.find("NVML XID 79"), std::string::npos) << xid.message;
  EXPECT_NE(xid.message.find("kernel log: NVRM: Xid (PCI:0000:17:00): 79"), std::string::npos);

  const auto& crc = row(r, "health.gpu_nvlink_crc");
  EXPECT_EQ(crc.outcome, report::kWarn);
  EXPECT_EQ(crc.worst_item, gpu1 + "/nvlink2");
  EXPECT_EQ(crc.value, 150);
  EXPECT_EQ(row(r, "health.gpu_nvlink_recovery").outcome, report::kFail);
  EXPECT_EQ(row(r, "health.gpu_nvlink_replay").outcome, report::kPass);  // 3 <= 100

  const auto& down = row(r, "health.ib_link_downed");
  EXPECT_EQ(down.outcome, report::kFail);
  EXPECT_EQ(down.worst_item, "node01/nic[mlx5_0/1]");
  const auto& sym = row(r, "health.ib_symbol_error");
  EXPECT_EQ(sym.outcome, report::kWarn);
  EXPECT_EQ(sym.worst_item, "node01/nic[mlx5_1/1]");
  EXPECT_EQ(sym.value, 45);
  EXPECT_NE(sym.message.find("symbol_error 3 -> 48"), std::string::npos) << sym.message;

  const auto& cor = row(r, "health.pcie_aer_correctable");
  EXPECT_EQ(cor.outcome, report::kWarn);
  EXPECT_EQ(cor.worst_item, "node01/pci[0000:17:00.0]/gpu0");
  EXPECT_NE(cor.message.find("TOTAL_ERR_COR 1 -> 13; BadTLP 0 -> 12"), std::string::npos)
      << cor.message;
  const auto& nonfatal = row(r, "health.pcie_aer_nonfatal");
  EXPECT_EQ(nonfatal.outcome, report::kFail);
  EXPECT_EQ(nonfatal.worst_item, "node01/pci[0000:9a:00.0]/mlx5_1");
  EXPECT_NE(nonfatal.message.find("CmpltTO 0 -> 1"), std::string::npos);
  EXPECT_EQ(row(r, "health.pcie_aer_fatal").outcome, report::kPass);
  EXPECT_EQ(r.exit_code, 1);
}

// NVLink counters NVML cannot read (DL counters and field values Not Supported) are unknown: each
// active link says why, and the rows are MISSING, never PASS on a 0 nobody read.
TEST_F(HealthRows, UnreadableNvlinkCountersAreMissingNotZero) {
  use_fake_nvml("health-nvlink-unreadable.json");
  json snap = health::read_counters(kTrees + "start");
  const json& g0 = snap["gpus"][0];
  EXPECT_EQ(g0["nvlink_status"], "ok");
  ASSERT_EQ(g0["nvlink"].size(), 4u);  // the 4 active links, each listed
  EXPECT_FALSE(g0["nvlink"][0].contains("crc_flit"));
  EXPECT_NE(g0["nvlink"][0]["unreadable"]["recovery"].get<std::string>().find("Not Supported"),
            std::string::npos)
      << g0.dump();
  report::Report r = run_trees("health-nvlink-unreadable.json", "healthy-end");
  for (const char* id :
       {"health.gpu_nvlink_crc", "health.gpu_nvlink_replay", "health.gpu_nvlink_recovery"}) {
    const auto& x = row(r, id);
    EXPECT_EQ(x.outcome, report::kMissing) << id << ": " << x.message;
    EXPECT_NE(x.message.find("Not Supported"), std::string::npos) << id << ": " << x.message;
  }
}

// Blackwell's NVLink5 retires the DL counters: recovery comes from the field value
// NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS and CRC from ..._EFFECTIVE_ERRORS.
TEST_F(HealthRows, Nvlink5FieldValuesAreJudged) {
  report::Report r = run_trees("health-nvlink5.json", "healthy-end");
  const auto& rec = row(r, "health.gpu_nvlink_recovery");
  EXPECT_EQ(rec.outcome, report::kFail) << rec.message;
  EXPECT_EQ(rec.worst_item, gpu0 + "/nvlink1");
  EXPECT_EQ(rec.value, 2);
  const auto& crc = row(r, "health.gpu_nvlink_crc");
  EXPECT_EQ(crc.outcome, report::kPass) << crc.message;
  EXPECT_NE(crc.message.find("effective errors (NVLink5) 0 -> 0"), std::string::npos)
      << crc.message;
  // No replay counter on NVLink5: unknown, with why.
  EXPECT_EQ(row(r, "health.gpu_nvlink_replay").outcome, report::kMissing);
}

TEST_F(HealthRows, RunWithoutEndSnapshotIsMissing) {
  json start = health::read_counters(kTrees + "start", false);
  report::Report r = report::make_report(run_of(start, nullptr), spec);
  const auto& down = row(r, "health.ib_link_downed");
  EXPECT_EQ(down.outcome, report::kMissing);
  EXPECT_EQ(down.message, "node01: no end snapshot: the run did not finish");
}

}  // namespace
}  // namespace clusterbench
