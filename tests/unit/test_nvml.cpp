// NVML loader and queries (bench/env/nvml.cpp) against the fake libnvidia-ml.so (tests/fake_nvml),
// loaded through the same dlopen path as the real one. Each test picks its scenario with
// CLUSTERBENCH_NVML_LIB + FAKE_NVML_JSON and Nvml::reload_for_testing().
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "env/nvml.hpp"

namespace clusterbench {
namespace {

using Strings = std::vector<std::string>;

#ifdef FAKE_NVML_LIB
constexpr const char* kFakeLib = FAKE_NVML_LIB;
#else
constexpr const char* kFakeLib = CB_BINARY_DIR "/tests/fake_nvml/libnvidia-ml.so";
#endif

// Loads the fake with tests/fixtures/nvml/<fixture>.
void use_fake(const std::string& fixture) {
  setenv("CLUSTERBENCH_NVML_LIB", kFakeLib, 1);
  setenv("FAKE_NVML_JSON", (std::string(CB_FIXTURES) + "/nvml/" + fixture).c_str(), 1);
  Nvml::reload_for_testing();
}

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CLUSTERBENCH_HAVE_NVML) GTEST_SKIP() << "built without nvml.h";
  }
};

// ---------------------------------------------------------------------------------------------
// Pure helpers.

TEST(NvmlHelpers, ClockEventReasonNames) {
  EXPECT_EQ(clock_event_reason_names(0), Strings{});
  // 0x60 = 0x20 | 0x40.
  EXPECT_EQ(clock_event_reason_names(0x60),
            (Strings{"sw_thermal_slowdown", "hw_thermal_slowdown"}));
  EXPECT_EQ(clock_event_reason_names(0x4 | 0x8 | 0x80),
            (Strings{"sw_power_cap", "hw_slowdown", "hw_power_brake_slowdown"}));
  EXPECT_EQ(clock_event_reason_names(0x1 | 0x2 | 0x10 | 0x100 | 0x200 | 0x400),
            (Strings{"gpu_idle", "applications_clocks_setting", "sync_boost",
                     "display_clock_setting", "board_limit", "reliability"}));
  EXPECT_EQ(clock_event_reason_names(0x1801),
            (Strings{"gpu_idle", "unknown_0x800", "unknown_0x1000"}));
  EXPECT_EQ(clock_event_reason_names(1ULL << 63), Strings{"unknown_0x8000000000000000"});
}

TEST(NvmlHelpers, NormalizeBusId) {
  EXPECT_EQ(normalize_nvml_bus_id("00000000:9A:00.0"), "0000:9a:00.0");
  EXPECT_EQ(normalize_nvml_bus_id("00000001:07:00.0"), "0001:07:00.0");
  EXPECT_EQ(normalize_nvml_bus_id("0000:DB:00.0"), "0000:db:00.0");  // legacy 4-digit domain
  EXPECT_EQ(normalize_nvml_bus_id("00010000:01:1F.3"), "10000:01:1f.3");
  EXPECT_EQ(normalize_nvml_bus_id("Not-A-BusId"), "not-a-busid");
  EXPECT_EQ(normalize_nvml_bus_id("0000:01:00.0 trailing"), "0000:01:00.0 trailing");
}

#if !CLUSTERBENCH_HAVE_NVML
TEST(NvmlCompiledOut, StatusSaysSo) {
  const NvmlInventory inv = query_nvml_inventory();
  EXPECT_FALSE(inv.ok);
  EXPECT_EQ(inv.status, "NVML support compiled out (nvml.h not found at build time)");
  EXPECT_FALSE(sample_telemetry(0).ok);
}
#endif

// ---------------------------------------------------------------------------------------------
// An 8x H100 SXM node (tests/fixtures/nvml/h100x8.json).

TEST_F(NvmlTest, H100x8Inventory) {
  use_fake("h100x8.json");
  const NvmlInventory inv = query_nvml_inventory();
  ASSERT_TRUE(inv.ok) << inv.status;
  EXPECT_EQ(inv.status, "ok");
  EXPECT_EQ(inv.driver_version, "535.161.08");
  EXPECT_EQ(inv.cuda_driver, "12.2");  // 12020 = 12 * 1000 + 2 * 10
  EXPECT_EQ(inv.warnings, Strings{});
  ASSERT_EQ(inv.gpus.size(), 8u);

  const GpuInfo& g = inv.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.uuid, "GPU-6d8a3b2e-1f4c-7a90-b2d1-0c5e8f3a4b01");
  EXPECT_EQ(g.serial, "1654922001001");
  EXPECT_EQ(g.pci_bus_id, "0000:18:00.0");  // from "00000000:18:00.0"
  EXPECT_EQ(g.pci_device_id, "0x2330");     // 0x233010de >> 16
  // 85520809984 B = 81559 MiB; / 1024 = 79.6474609375 GiB (exact in binary).
  EXPECT_DOUBLE_EQ(g.memory_gib.value_or(-1), 79.6474609375);
  EXPECT_EQ(g.pcie.gen_current, 5);
  EXPECT_EQ(g.pcie.gen_max, 5);
  EXPECT_EQ(g.pcie.width_current, 16);
  EXPECT_EQ(g.pcie.width_max, 16);
  EXPECT_EQ(g.nvlink_links_up, 18);
  EXPECT_TRUE(g.unknown.empty());
  EXPECT_EQ(g.ecc_mode, "enabled");
  EXPECT_EQ(g.vbios, "96.00.74.00.0D");
  EXPECT_EQ(g.driver, "535.161.08");
  EXPECT_EQ(g.numa_node, 0);
  EXPECT_EQ(g.source, "nvml");

  Strings bus_ids, uuids, names;
  std::vector<int> indices, numa;
  for (const GpuInfo& gpu : inv.gpus) {
    bus_ids.push_back(gpu.pci_bus_id);
    uuids.push_back(gpu.uuid);
    names.push_back(gpu.name);
    indices.push_back(gpu.index);
    numa.push_back(gpu.numa_node);
  }
  EXPECT_EQ(bus_ids, (Strings{"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                              "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"}));
  EXPECT_EQ(
      uuids,
      (Strings{
          "GPU-6d8a3b2e-1f4c-7a90-b2d1-0c5e8f3a4b01", "GPU-a1b2c3d4-e5f6-0718-293a-4b5c6d7e8f02",
          "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e103", "GPU-11223344-5566-7788-99aa-bbccddeeff04",
          "GPU-deadbeef-0001-0002-0003-000000000005", "GPU-cafef00d-1234-5678-9abc-def012345606",
          "GPU-77777777-8888-9999-aaaa-bbbbbbbbbb07", "GPU-0a0b0c0d-0e0f-1011-1213-141516171808"}));
  EXPECT_EQ(names, Strings(8, "NVIDIA H100 80GB HBM3"));
  EXPECT_EQ(indices, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(numa, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(inv.gpus[7].serial, "1654922001008");

  // GPU 2's link trained down to Gen4 x8; GPU 3 has 16 of its 18 links up.
  EXPECT_EQ(inv.gpus[2].pcie.gen_current, 4);
  EXPECT_EQ(inv.gpus[2].pcie.gen_max, 5);
  EXPECT_EQ(inv.gpus[2].pcie.width_current, 8);
  EXPECT_EQ(inv.gpus[2].pcie.width_max, 16);
  EXPECT_EQ(inv.gpus[3].nvlink_links_up, 16);
}

TEST_F(NvmlTest, BindsVersionedNamesWithFallbacks) {
  use_fake("h100x8.json");
  const Nvml& nvml = Nvml::get();
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  EXPECT_EQ(nvml.library(), kFakeLib);
  // The fake exports nvmlInit etc. too (failing): the versioned names must win.
  EXPECT_EQ(nvml.resolved("nvmlInit_v2"), "nvmlInit_v2");
  EXPECT_EQ(nvml.resolved("nvmlDeviceGetCount_v2"), "nvmlDeviceGetCount_v2");
  EXPECT_EQ(nvml.resolved("nvmlDeviceGetHandleByIndex_v2"), "nvmlDeviceGetHandleByIndex_v2");
  EXPECT_EQ(nvml.resolved("nvmlDeviceGetPciInfo_v3"), "nvmlDeviceGetPciInfo_v3");
  EXPECT_EQ(nvml.resolved("nvmlSystemGetCudaDriverVersion_v2"),
            "nvmlSystemGetCudaDriverVersion_v2");
  // A pre-rename driver: only the throttle-reasons name exists.
  EXPECT_EQ(nvml.resolved("nvmlDeviceGetCurrentClocksEventReasons"),
            "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_EQ(nvml.resolved("nvmlDeviceGetTemperature"), "nvmlDeviceGetTemperature");
  EXPECT_EQ(nvml.resolved("nvmlNoSuchEntryPoint"), "");
  EXPECT_EQ(nvml.error_string(9), "Driver Not Loaded");
  EXPECT_EQ(nvml.error_string(15), "GPU is lost");
}

// Issue 18 item 4: R535's _v3 process lists write 32-byte entries, R580's 24-byte ones; the
// loader binds _v2 (24 bytes everywhere), so every process reads right under both drivers.
TEST_F(NvmlTest, ProcessListsUnderR535AndR580Layouts) {
  for (const char* layout : {"r535", "r580"}) {
    SCOPED_TRACE(layout);
    setenv("FAKE_NVML_PROCESS_LAYOUT", layout, 1);
    use_fake("processes.json");
    std::string status;
    const auto procs = query_gpu_processes(status);
    unsetenv("FAKE_NVML_PROCESS_LAYOUT");
    EXPECT_EQ(status, "ok");
    ASSERT_EQ(procs.size(), 5u);
    const std::vector<unsigned> pids = {1001, 1002, 1003, 2001, 2002};
    const std::vector<long long> used = {1073741824, 2147483648, -1, 4194304, 8388608};
    for (size_t k = 0; k < procs.size(); ++k) {
      EXPECT_EQ(procs[k].pid, pids[k]) << "process " << k;
      EXPECT_EQ(procs[k].used_bytes, used[k]) << "process " << k;
      EXPECT_EQ(procs[k].type, k < 3 ? "compute" : "graphics");
    }
    EXPECT_EQ(procs[0].name, "python3");
  }
}

TEST_F(NvmlTest, TelemetryThroughFallbackReasons) {
  use_fake("h100x8.json");
  const GpuTelemetry t0 = sample_telemetry(0);
  ASSERT_TRUE(t0.ok) << t0.status;
  EXPECT_EQ(t0.status, "ok");
  EXPECT_DOUBLE_EQ(t0.sm_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(t0.temperature_c, 41);
  EXPECT_DOUBLE_EQ(t0.power_w, 120);        // 120000 mW
  EXPECT_DOUBLE_EQ(t0.power_limit_w, 700);  // 700000 mW
  EXPECT_TRUE(t0.clock_event_reasons_valid);
  EXPECT_EQ(t0.clock_event_reasons, 0u);
  EXPECT_EQ(t0.reason_names, Strings{});

  // GPU 5: hot, at its power limit, thermally slowed down (0x60).
  const GpuTelemetry t5 = sample_telemetry(5);
  ASSERT_TRUE(t5.ok) << t5.status;
  EXPECT_DOUBLE_EQ(t5.sm_clock_mhz, 1410);
  EXPECT_DOUBLE_EQ(t5.temperature_c, 87);
  EXPECT_DOUBLE_EQ(t5.power_w, 698.5);  // 698500 mW
  EXPECT_DOUBLE_EQ(t5.power_limit_w, 700);
  EXPECT_TRUE(t5.clock_event_reasons_valid);
  EXPECT_EQ(t5.clock_event_reasons, 0x60u);
  EXPECT_EQ(t5.reason_names, (Strings{"sw_thermal_slowdown", "hw_thermal_slowdown"}));

  const GpuTelemetry t8 = sample_telemetry(8);
  EXPECT_FALSE(t8.ok);
  EXPECT_EQ(t8.status, "nvmlDeviceGetHandleByIndex(8): Invalid Argument");
  EXPECT_TRUE(std::isnan(t8.sm_clock_mhz));
  EXPECT_FALSE(sample_telemetry(-1).ok);
}

// ---------------------------------------------------------------------------------------------
// Failures.

TEST_F(NvmlTest, DriverNotLoaded) {
  use_fake("driver-not-loaded.json");
  const NvmlInventory inv = query_nvml_inventory();
  EXPECT_FALSE(inv.ok);
  EXPECT_EQ(inv.status, "nvmlInit: Driver Not Loaded");
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_EQ(inv.driver_version, "");

  const GpuTelemetry t = sample_telemetry(0);
  EXPECT_FALSE(t.ok);
  EXPECT_EQ(t.status, "nvmlInit: Driver Not Loaded");
  EXPECT_TRUE(std::isnan(t.temperature_c));
  EXPECT_FALSE(t.clock_event_reasons_valid);
}

TEST_F(NvmlTest, MissingLibraryNamesThePath) {
  const std::string path = std::string(CB_BINARY_DIR) + "/no-such-dir/libnvidia-ml.so.1";
  setenv("CLUSTERBENCH_NVML_LIB", path.c_str(), 1);
  Nvml::reload_for_testing();
  const NvmlInventory inv = query_nvml_inventory();
  EXPECT_FALSE(inv.ok);
  // dlerror(): "<path>: cannot open shared object file: No such file or directory".
  EXPECT_EQ(inv.status, path + ": cannot open shared object file: No such file or directory");
  EXPECT_EQ(Nvml::get().library(), path);
  EXPECT_FALSE(sample_telemetry(0).ok);
}

TEST_F(NvmlTest, LibraryWithoutNvmlSymbols) {
  setenv("CLUSTERBENCH_NVML_LIB", "libm.so.6", 1);
  Nvml::reload_for_testing();
  EXPECT_FALSE(Nvml::get().ok());
  EXPECT_EQ(query_nvml_inventory().status, "libm.so.6: lacks nvmlInit_v2");
}

// A GPU whose memory and NVLink state NVML cannot give (tests/fixtures/nvml/unreadable.json):
// both unknown with the call and NVML's text, never 0.
TEST_F(NvmlTest, UnreadableMemoryAndNvlinkAreUnknown) {
  use_fake("unreadable.json");
  const NvmlInventory inv = query_nvml_inventory();
  ASSERT_TRUE(inv.ok) << inv.status;
  ASSERT_EQ(inv.gpus.size(), 1u);
  const GpuInfo& g = inv.gpus[0];
  EXPECT_FALSE(g.memory_gib.has_value());
  EXPECT_EQ(g.unknown.at("memory_gib"), "nvmlDeviceGetMemoryInfo: GPU is lost");
  EXPECT_FALSE(g.nvlink_links_up.has_value());
  EXPECT_EQ(g.unknown.at("nvlink_links_up"), "nvmlDeviceGetNvLinkState(link 0): Unknown Error");
  json j = g;
  EXPECT_TRUE(j.at("memory_gib").is_null()) << j.dump();
  EXPECT_TRUE(j.at("nvlink_links_up").is_null()) << j.dump();
  EXPECT_EQ(j.at("unknown").size(), 2u);
}

// A node with one healthy-but-sparse GPU and one lost GPU (tests/fixtures/nvml/partial.json):
// per-field failures leave fields empty and never fail the query.
TEST_F(NvmlTest, PartialFieldsAndLostGpu) {
  use_fake("partial.json");
  const NvmlInventory inv = query_nvml_inventory();
  ASSERT_TRUE(inv.ok) << inv.status;
  EXPECT_EQ(inv.driver_version, "550.54.15");
  EXPECT_EQ(inv.cuda_driver, "");  // Not Supported
  ASSERT_EQ(inv.gpus.size(), 2u);

  const GpuInfo& a = inv.gpus[0];
  EXPECT_EQ(a.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(a.pci_bus_id, "0001:07:00.0");
  EXPECT_EQ(a.pci_device_id, "0x20b2");
  EXPECT_DOUBLE_EQ(a.memory_gib.value_or(-1), 80.0);  // 85899345920 = 80 * 2^30
  EXPECT_EQ(a.serial, "");                            // Not Supported
  EXPECT_EQ(a.vbios, "");                             // GPU is lost (warned below)
  EXPECT_EQ(a.ecc_mode, "disabled");
  EXPECT_EQ(a.nvlink_links_up, 0);  // Not Supported
  EXPECT_EQ(a.pcie.gen_current, 0);
  EXPECT_EQ(a.pcie.width_max, 0);
  EXPECT_EQ(a.numa_node, -1);
  EXPECT_EQ(a.driver, "550.54.15");

  const GpuInfo& lost = inv.gpus[1];
  EXPECT_EQ(lost.index, 1);
  EXPECT_EQ(lost.source, "nvml");
  EXPECT_EQ(lost.name, "");
  EXPECT_EQ(lost.uuid, "");
  // Nothing of a lost GPU was read: unknown, not 0, with NVML's answer as the reason.
  EXPECT_FALSE(lost.memory_gib.has_value());
  EXPECT_FALSE(lost.nvlink_links_up.has_value());
  EXPECT_EQ(lost.unknown.at("memory_gib"), "nvmlDeviceGetHandleByIndex: GPU is lost");
  EXPECT_EQ(lost.unknown.at("nvlink_links_up"), "nvmlDeviceGetHandleByIndex: GPU is lost");

  EXPECT_EQ(inv.warnings, (Strings{"gpu 0: nvmlDeviceGetVbiosVersion: GPU is lost",
                                   "gpu 1: nvmlDeviceGetHandleByIndex: GPU is lost"}));

  const GpuTelemetry t = sample_telemetry(0);
  ASSERT_TRUE(t.ok) << t.status;
  EXPECT_TRUE(std::isnan(t.sm_clock_mhz));
  EXPECT_TRUE(std::isnan(t.temperature_c));
  EXPECT_TRUE(std::isnan(t.power_w));
  EXPECT_TRUE(std::isnan(t.power_limit_w));
  EXPECT_EQ(t.clock_event_reasons, 0x1801u);
  EXPECT_EQ(t.reason_names, (Strings{"gpu_idle", "unknown_0x800", "unknown_0x1000"}));

  const GpuTelemetry t1 = sample_telemetry(1);
  EXPECT_FALSE(t1.ok);
  EXPECT_EQ(t1.status, "nvmlDeviceGetHandleByIndex(1): GPU is lost");
}

// Procurement and uniformity fields (issue 9): board part number, persistence mode, MIG mode.
// h100x8.json: every GPU 692-2G520-0200-000; persistence off on GPU 5; MIG on on GPU 6.
// partial.json has none of them: Not Supported leaves them unknown, without a warning.
TEST_F(NvmlTest, BoardPartNumberPersistenceAndMig) {
  use_fake("h100x8.json");
  const NvmlInventory inv = query_nvml_inventory();
  ASSERT_TRUE(inv.ok) << inv.status;
  ASSERT_EQ(inv.gpus.size(), 8u);
  Strings parts, persistence, mig;
  for (const GpuInfo& g : inv.gpus) {
    parts.push_back(g.board_part_number);
    persistence.push_back(g.persistence_mode);
    mig.push_back(g.mig_mode);
  }
  EXPECT_EQ(parts, Strings(8, "692-2G520-0200-000"));
  EXPECT_EQ(persistence, (Strings{"enabled", "enabled", "enabled", "enabled", "enabled", "disabled",
                                  "enabled", "enabled"}));
  EXPECT_EQ(mig, (Strings{"disabled", "disabled", "disabled", "disabled", "disabled", "disabled",
                          "enabled", "disabled"}));

  use_fake("partial.json");
  const NvmlInventory partial = query_nvml_inventory();
  ASSERT_TRUE(partial.ok) << partial.status;
  EXPECT_EQ(partial.gpus[0].board_part_number, "");
  EXPECT_EQ(partial.gpus[0].persistence_mode, "");
  EXPECT_EQ(partial.gpus[0].mig_mode, "");
  EXPECT_EQ(partial.warnings.size(), 2u);
}

// Reloading picks up a new scenario, and the same process can go back again.
TEST_F(NvmlTest, ReloadSwitchesScenario) {
  use_fake("driver-not-loaded.json");
  EXPECT_FALSE(query_nvml_inventory().ok);
  use_fake("h100x8.json");
  EXPECT_EQ(query_nvml_inventory().gpus.size(), 8u);
  use_fake("partial.json");
  EXPECT_EQ(query_nvml_inventory().gpus.size(), 2u);
}

// Without the override: the driver's soname. What happens depends on this machine, so only the
// shape of the answer is checked.
TEST_F(NvmlTest, DefaultLibraryName) {
  unsetenv("CLUSTERBENCH_NVML_LIB");
  Nvml::reload_for_testing();
  const Nvml& nvml = Nvml::get();
  EXPECT_TRUE(nvml.library() == "libnvidia-ml.so.1" || nvml.library() == "libnvidia-ml.so")
      << nvml.library();
  if (!nvml.ok()) {
    EXPECT_TRUE(nvml.status().rfind("libnvidia-ml.so.1: ", 0) == 0 ||
                nvml.status().rfind("nvmlInit: ", 0) == 0)
        << nvml.status();
  }
}

}  // namespace
}  // namespace clusterbench
