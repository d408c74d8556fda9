// Env collectors on the fixture trees of tests/fixtures/fsroot (tests/fixtures/make_fsroot.py),
// and a few checks on this machine ("/"). Expected values are computed by hand from the trees.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "env/inventory.hpp"

namespace clusterbench {
namespace {

const std::string kRoot = std::string(CB_FIXTURES) + "/fsroot/";
const std::string kTwoSocket = kRoot + "two-socket";

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// MemTotal of the memory trees: 527951136 kB = 503.49 GiB.
constexpr double kMemTotal512 = 527951136.0 * 1024.0 / kGiB;

bool has_warning(const std::vector<std::string>& w, const std::string& part) {
  return std::any_of(w.begin(), w.end(),
                     [&](const std::string& s) { return s.find(part) != std::string::npos; });
}

std::string joined(const std::vector<std::string>& w) {
  std::string out;
  for (const auto& s : w) out += s + "\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// CPU (hwloc below HWLOC_FSROOT)

TEST(InventoryCpu, TwoSocketCountsCoresNotThreads) {
  std::vector<std::string> w;
  CpuInfo c = collect_cpu(kTwoSocket, w);
  EXPECT_EQ(c.physical_cores, 8);  // 2 packages x 4 cores
  EXPECT_EQ(c.threads, 16);        // x 2 hardware threads
  EXPECT_EQ(c.sockets, 2);
  EXPECT_EQ(c.numa_nodes, 2);
  // Both packages carry the fixture's model: this host's CPUID (x86 component) is not mixed in.
  EXPECT_EQ(c.model, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(c.source, "hwloc");
  EXPECT_TRUE(w.empty()) << joined(w);
}

TEST(InventoryCpu, MissingRootWarnsAndCountsNothing) {
  std::vector<std::string> w;
  CpuInfo c = collect_cpu(kRoot + "does-not-exist", w);
  EXPECT_EQ(c.physical_cores, 0);
  EXPECT_EQ(c.sockets, 0);
  EXPECT_TRUE(has_warning(w, "does-not-exist")) << joined(w);
}

TEST(InventoryCpu, TreeWithoutCpuTopologyCountsNothing) {
  // hwloc would fall back to counting this host's processors: the collector must not.
  std::vector<std::string> w;
  CpuInfo c = collect_cpu(kRoot + "meminfo-only", w);
  EXPECT_EQ(c.threads, 0);
  EXPECT_EQ(c.physical_cores, 0);
  EXPECT_EQ(c.numa_nodes, 0);
  EXPECT_TRUE(has_warning(w, "/sys/devices/system/cpu")) << joined(w);
}

TEST(InventoryCpu, HwlocFsrootOfTheCallerIsRestoredAndNotUsedForTheLiveSystem) {
  std::vector<std::string> w;
  CpuInfo live = collect_cpu("/", w);
  setenv("HWLOC_FSROOT", kTwoSocket.c_str(), 1);
  CpuInfo live_again = collect_cpu("/", w);  // "/" means this system, whatever the env says
  CpuInfo fixture = collect_cpu(kRoot + "dmi-exceeds-memtotal", w);  // no cpu dir: nothing
  EXPECT_STREQ(std::getenv("HWLOC_FSROOT"), kTwoSocket.c_str());
  unsetenv("HWLOC_FSROOT");
  EXPECT_EQ(live_again.threads, live.threads);
  EXPECT_EQ(live_again.model, live.model);
  EXPECT_EQ(fixture.threads, 0);
}

TEST(InventoryCpu, LiveSystem) {
  std::vector<std::string> w;
  CpuInfo c = collect_cpu("/", w);
  EXPECT_GE(c.physical_cores, 1);
  EXPECT_GE(c.threads, c.physical_cores);
  EXPECT_GE(c.sockets, 1);
  EXPECT_GE(c.numa_nodes, 1);
}

// ---------------------------------------------------------------------------------------------
// Memory

TEST(InventoryMemory, DmiSmbiosSizeField) {
  // A 0x28-byte type 17 structure with the given Size and Extended Size, plus an empty string set.
  auto entry = [](unsigned size, unsigned ext) {
    std::string raw(0x28, '\0');
    raw[0] = 17;
    raw[1] = 0x28;
    raw[0x0C] = static_cast<char>(size & 0xff);
    raw[0x0D] = static_cast<char>(size >> 8);
    for (int i = 0; i < 4; ++i) raw[0x1C + i] = static_cast<char>((ext >> (8 * i)) & 0xff);
    return raw + std::string(2, '\0');
  };
  const std::uint64_t MiB = 1 << 20;
  EXPECT_EQ(dmi_memory_device_bytes(entry(0x4000, 0)), 16384 * MiB);      // 16 GiB in MB
  EXPECT_EQ(dmi_memory_device_bytes(entry(0x7FFF, 32768)), 32768 * MiB);  // extended size
  EXPECT_EQ(dmi_memory_device_bytes(entry(0x7FFF, 0x80000000u | 65536)),
            65536 * MiB);  // bit 31 of the extended size is reserved
  EXPECT_EQ(dmi_memory_device_bytes(entry(0x8000 | 512, 0)), 512u * 1024);  // KB granularity
  EXPECT_EQ(dmi_memory_device_bytes(entry(0, 0)), 0u);                      // empty slot
  EXPECT_EQ(dmi_memory_device_bytes(entry(0xFFFF, 0)), std::nullopt);       // unknown
  std::string wrong_type = entry(0x4000, 0);
  wrong_type[0] = 16;
  EXPECT_EQ(dmi_memory_device_bytes(wrong_type), std::nullopt);
  EXPECT_EQ(dmi_memory_device_bytes(entry(0x4000, 0).substr(0, 10)), std::nullopt);
  std::string short_ext = entry(0x7FFF, 32768);
  short_ext[1] = 0x1B;  // SMBIOS 2.6 length: no Extended Size field
  EXPECT_EQ(dmi_memory_device_bytes(short_ext), std::nullopt);
}

TEST(InventoryMemory, DmiExceedsMemTotal) {
  // 16 x 32 GiB (0x7FFF + extended size 32768 MB) + one empty slot; MemTotal 503.49 GiB.
  std::vector<std::string> w;
  MemoryInfo m = collect_memory(kRoot + "dmi-exceeds-memtotal", w);
  EXPECT_EQ(m.source, "dmi");
  EXPECT_DOUBLE_EQ(m.installed_gib.value_or(-1), 512.0);
  EXPECT_NEAR(m.usable_gib.value_or(-1), kMemTotal512, 1e-9);
  EXPECT_NEAR(m.usable_gib.value_or(-1), 503.49, 0.01);
  EXPECT_TRUE(w.empty()) << joined(w);
}

TEST(InventoryMemory, MemoryBlocksWithoutDmi) {
  // 256 online blocks of 2 GiB (0x80000000) + one offline block, no DMI entries.
  std::vector<std::string> w;
  MemoryInfo m = collect_memory(kRoot + "memory-blocks-exceed-memtotal", w);
  EXPECT_EQ(m.source, "memory_blocks");
  EXPECT_DOUBLE_EQ(m.installed_gib.value_or(-1), 512.0);
  EXPECT_NEAR(m.usable_gib.value_or(-1), kMemTotal512, 1e-9);
  EXPECT_TRUE(has_warning(w, "dmi/entries")) << joined(w);
}

TEST(InventoryMemory, MemTotalWhenNothingElse) {
  std::vector<std::string> w;
  MemoryInfo m = collect_memory(kRoot + "meminfo-only", w);
  EXPECT_EQ(m.source, "meminfo");
  EXPECT_NEAR(m.installed_gib.value_or(-1), kMemTotal512, 1e-9);
  EXPECT_NEAR(m.usable_gib.value_or(-1), kMemTotal512, 1e-9);
  EXPECT_TRUE(has_warning(w, "dmi/entries")) << joined(w);
  EXPECT_TRUE(has_warning(w, "block_size_bytes")) << joined(w);
}

TEST(InventoryMemory, TwoSocketFromDmi) {
  // 16 x 16 GiB (Size 0x4000 MB) + one empty slot; MemTotal 263716776 kB.
  std::vector<std::string> w;
  MemoryInfo m = collect_memory(kTwoSocket, w);
  EXPECT_EQ(m.source, "dmi");
  EXPECT_DOUBLE_EQ(m.installed_gib.value_or(-1), 256.0);
  EXPECT_NEAR(m.usable_gib.value_or(-1), 263716776.0 / (1024 * 1024), 1e-9);
}

TEST(InventoryMemory, MissingRootWarns) {
  std::vector<std::string> w;
  MemoryInfo m = collect_memory(kRoot + "does-not-exist", w);
  EXPECT_EQ(m.source, "");
  // Nothing was read: unknown, not 0, and each source's failure is the reason.
  EXPECT_FALSE(m.installed_gib.has_value());
  EXPECT_FALSE(m.usable_gib.has_value());
  EXPECT_TRUE(has_warning(w, "meminfo")) << joined(w);
  const std::string& why = m.unknown["installed_gib"];
  EXPECT_EQ(why.rfind("no source worked: ", 0), 0u) << why;
  EXPECT_NE(why.find("dmi/entries"), std::string::npos) << why;
  EXPECT_NE(why.find("block_size_bytes"), std::string::npos) << why;
  EXPECT_NE(why.find("/proc/meminfo"), std::string::npos) << why;
  EXPECT_NE(m.unknown["usable_gib"].find("/proc/meminfo"), std::string::npos);
  // In JSON: null with the reason beside it.
  json j = m;
  EXPECT_TRUE(j.at("installed_gib").is_null()) << j.dump();
  EXPECT_TRUE(j.at("usable_gib").is_null()) << j.dump();
  EXPECT_EQ(j.at("unknown").at("installed_gib"), why);
}

TEST(InventoryMemory, LiveSystem) {
  std::vector<std::string> w;
  MemoryInfo m = collect_memory("/", w);
  ASSERT_TRUE(m.usable_gib && m.installed_gib);
  EXPECT_GT(*m.usable_gib, 0.0);
  EXPECT_GE(*m.installed_gib, *m.usable_gib * 0.9);
  // The memory type needs DMI (root, not a VM): known, or unknown saying why.
  EXPECT_EQ(m.unknown.count("installed_gib") + m.unknown.count("usable_gib"), 0u);
  EXPECT_TRUE(m.type.has_value() || m.unknown.count("type") == 1);
  EXPECT_FALSE(m.source.empty());
}

// ---------------------------------------------------------------------------------------------
// PCI GPUs

TEST(InventoryGpu, PcieGenerationFromSpeed) {
  EXPECT_EQ(pcie_gen_from_speed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pcie_gen_from_speed("5.0 GT/s PCIe"), 2);
  EXPECT_EQ(pcie_gen_from_speed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(pcie_gen_from_speed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pcie_gen_from_speed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pcie_gen_from_speed("64.0 GT/s PCIe"), 6);
  EXPECT_EQ(pcie_gen_from_speed("5 GT/s"), 2);  // kernels before 4.16 print no decimals
  EXPECT_EQ(pcie_gen_from_speed("Unknown"), 0);
  EXPECT_EQ(pcie_gen_from_speed(""), 0);
}

TEST(InventoryGpu, NvidiaGpuOnPciBus) {
  // The tree also holds an ASPEED VGA (1a03, class 0300) and an NVSwitch (10de, class 0680):
  // neither is an NVIDIA GPU.
  std::vector<std::string> w;
  auto gpus = collect_pci_gpus(kTwoSocket, w);
  ASSERT_EQ(gpus.size(), 1u) << joined(w);
  const GpuInfo& g = gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.pci_bus_id, "0000:17:00.0");
  EXPECT_EQ(g.pci_device_id, "0x2330");
  EXPECT_EQ(g.name, "NVIDIA 0x2330");
  EXPECT_EQ(g.source, "pci");
  EXPECT_EQ(g.numa_node, 0);
  EXPECT_EQ(g.pcie.gen_current, 1);  // idle GPUs train down to 2.5 GT/s
  EXPECT_EQ(g.pcie.gen_max, 5);      // 32.0 GT/s
  EXPECT_EQ(g.pcie.width_current, 16);
  EXPECT_EQ(g.pcie.width_max, 16);
  EXPECT_TRUE(w.empty()) << joined(w);
}

TEST(InventoryGpu, NoPciBusGivesNoGpus) {
  std::vector<std::string> w;
  EXPECT_TRUE(collect_pci_gpus(kRoot + "meminfo-only", w).empty());
}

// ---------------------------------------------------------------------------------------------
// NICs

TEST(InventoryNics, InfinibandPortsAndEthernet) {
  std::vector<std::string> w;
  auto nics = collect_nics(kTwoSocket, w);
  // mlx5_0/1, mlx5_1/1, eno1, eno2, then docker0 (virtual); lo is loopback, ib0/ib1 are the
  // ports' netdevs.
  ASSERT_EQ(nics.size(), 5u) << joined(w);
  for (int i = 0; i < 2; ++i) {
    const NicInfo& n = nics[i];
    EXPECT_EQ(n.name, "mlx5_" + std::to_string(i) + "/1");
    EXPECT_EQ(n.kind, "ib_port");
    EXPECT_EQ(n.link_layer, "InfiniBand");
    EXPECT_EQ(n.state, "ACTIVE");
    EXPECT_EQ(n.phys_state, "LinkUp");
    EXPECT_DOUBLE_EQ(n.rate_gbps.value_or(-1), 200.0);
    EXPECT_EQ(n.firmware, "20.39.1002");
    EXPECT_EQ(n.netdev, "ib" + std::to_string(i));
    EXPECT_EQ(n.mtu, 4092);
    EXPECT_FALSE(n.is_virtual);
  }
  EXPECT_EQ(nics[2].name, "eno1");
  EXPECT_EQ(nics[2].kind, "ethernet");
  EXPECT_EQ(nics[2].link_layer, "Ethernet");
  EXPECT_EQ(nics[2].state, "up");
  EXPECT_DOUBLE_EQ(nics[2].rate_gbps.value_or(-1), 10.0);  // speed 10000 Mb/s
  EXPECT_EQ(nics[2].mtu, 9000);
  EXPECT_EQ(nics[3].name, "eno2");
  EXPECT_EQ(nics[3].state, "down");
  EXPECT_EQ(nics[3].mtu, 1500);
  // Speed -1: unknown, not 0 Gb/s, with the reason.
  EXPECT_FALSE(nics[3].rate_gbps.has_value());
  EXPECT_NE(nics[3].unknown["rate_gbps"].find("sysfs speed -1"), std::string::npos)
      << nics[3].unknown["rate_gbps"];
  EXPECT_EQ(nics[4].name, "docker0");
  EXPECT_TRUE(nics[4].is_virtual);
  EXPECT_FALSE(nics[4].rate_gbps.has_value());
  EXPECT_TRUE(w.empty()) << joined(w);
}

// ---------------------------------------------------------------------------------------------
// Block devices

TEST(InventoryBlock, NvmeAndSataWholeDisks) {
  std::vector<std::string> w;
  auto disks = collect_block_devices(kTwoSocket, w);
  // nvme0n1p1 is a partition, loop0 and dm-0 are virtual.
  ASSERT_EQ(disks.size(), 2u) << joined(w);
  const BlockDevice& nvme = disks[0];
  EXPECT_EQ(nvme.name, "nvme0n1");
  EXPECT_TRUE(nvme.nvme);
  EXPECT_FALSE(nvme.rotational);
  EXPECT_NEAR(nvme.capacity_tb, 3.8408, 1e-3);  // 7501476528 * 512 / 1e12
  EXPECT_DOUBLE_EQ(nvme.capacity_tb, 3.840755982336);
  EXPECT_EQ(nvme.model, "SAMSUNG MZQL23T8HCLS-00A07");  // sysfs pads with spaces
  EXPECT_EQ(nvme.serial, "S64HNE0T512345");
  EXPECT_EQ(nvme.firmware, "GDC5602Q");
  const BlockDevice& sda = disks[1];
  EXPECT_EQ(sda.name, "sda");
  EXPECT_FALSE(sda.nvme);
  EXPECT_TRUE(sda.rotational);
  EXPECT_DOUBLE_EQ(sda.capacity_tb, 3907029168.0 * 512 / 1e12);
  EXPECT_EQ(sda.model, "ST2000NM0008-2F3");
  EXPECT_EQ(sda.firmware, "SN03");
  EXPECT_TRUE(w.empty()) << joined(w);
}

// ---------------------------------------------------------------------------------------------
// Tuning

TEST(InventoryTuning, TwoSocketValues) {
  std::vector<std::string> w;
  Tuning t = collect_tuning(kTwoSocket, w);
  EXPECT_EQ(t.governor, "performance");
  EXPECT_EQ(t.nr_hugepages, 8192);
  EXPECT_EQ(t.thp, "madvise");
  EXPECT_EQ(t.net_core_rmem_max, 2147483647);
  EXPECT_EQ(t.net_core_wmem_max, 2147483647);
  EXPECT_EQ(t.tcp_rmem, "4096 87380 2147483647");  // tabs in /proc
  EXPECT_EQ(t.tcp_wmem, "4096 65536 2147483647");
  EXPECT_TRUE(w.empty()) << joined(w);
}

// Issue 44, item 4: every CPU's governor, not cpu0's. Half of a two-socket node's CPUs in
// powersave is "mixed", naming them, so host.governor (== performance) WARNs.
TEST(InventoryTuning, TheGovernorOfEveryCpu) {
  const std::filesystem::path root = ::testing::TempDir() + "cb_governor";
  std::filesystem::remove_all(root);
  std::filesystem::copy(
      kTwoSocket, root,
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  for (int cpu : {3, 7, 8, 9, 10, 11})
    std::ofstream(
        root / ("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor"))
        << "powersave\n";
  std::vector<std::string> w;
  EXPECT_EQ(collect_tuning(root.string(), w).governor,
            "mixed: performance on 10 CPUs, powersave on 6 (cpu3, cpu7, cpu8, cpu9, ...)");
  for (int cpu = 0; cpu < 16; ++cpu)
    std::ofstream(
        root / ("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor"))
        << "powersave\n";
  EXPECT_EQ(collect_tuning(root.string(), w).governor, "powersave");
}

TEST(InventoryTuning, MissingFilesWarn) {
  std::vector<std::string> w;
  Tuning t = collect_tuning(kRoot + "meminfo-only", w);
  EXPECT_EQ(t.governor, "no cpufreq driver");
  EXPECT_EQ(t.nr_hugepages, -1);
  EXPECT_EQ(t.net_core_rmem_max, -1);
  EXPECT_EQ(t.thp, "");
  EXPECT_EQ(t.tcp_rmem, "");
  EXPECT_TRUE(has_warning(w, "nr_hugepages")) << joined(w);
  EXPECT_TRUE(has_warning(w, "transparent_hugepage")) << joined(w);
}

// ---------------------------------------------------------------------------------------------
// Environment and the whole record

TEST(InventoryEnvironment, AllowListOnly) {
  setenv("NCCL_X", "1", 1);
  setenv("UCX_TLS", "rc,sm", 1);
  setenv("HOME", "/root", 1);
  setenv("NCCLX_NOT_A_PREFIX", "1", 1);
  auto env = collect_environment();
  EXPECT_EQ(env.at("NCCL_X"), "1");
  EXPECT_EQ(env.at("UCX_TLS"), "rc,sm");
  EXPECT_EQ(env.count("HOME"), 0u);
  EXPECT_EQ(env.count("NCCLX_NOT_A_PREFIX"), 0u);
  for (const auto& [k, v] : env) {
    bool allowed = k.rfind("NCCL_", 0) == 0 || k.rfind("CUDA_", 0) == 0 ||
                   k.rfind("UCX_", 0) == 0 || k.rfind("OMPI_", 0) == 0;
    EXPECT_TRUE(allowed) << k;
  }
  unsetenv("NCCL_X");
  unsetenv("UCX_TLS");
  unsetenv("NCCLX_NOT_A_PREFIX");
}

TEST(InventoryEnv, TwoSocketRecord) {
  InventoryOptions opt;
  opt.fs_root = kTwoSocket;
  opt.query_nvml = false;
  opt.probe_tools = false;
  EnvRecord r = collect_env(opt);
  EXPECT_EQ(r.schema, kEnvSchema);
  EXPECT_EQ(r.fs_root, kTwoSocket);
  EXPECT_EQ(r.host, "gpu-node-07");  // /proc/sys/kernel/hostname below the root
  EXPECT_EQ(r.versions.kernel, "5.15.0-105-generic");
  EXPECT_EQ(r.versions.fio, "");
  EXPECT_EQ(r.cpu.physical_cores, 8);
  EXPECT_EQ(r.cpu.threads, 16);
  EXPECT_EQ(r.memory.source, "dmi");
  EXPECT_DOUBLE_EQ(r.memory.installed_gib.value_or(-1), 256.0);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].pci_bus_id, "0000:17:00.0");
  EXPECT_EQ(r.gpus[0].source, "pci");
  EXPECT_EQ(r.gpu_status.on_pci, 1);
  EXPECT_EQ(r.gpu_status.nvml, "not queried");
  EXPECT_EQ(r.gpus[0].unknown.at("memory_gib"), "NVML not queried");
  EXPECT_EQ(r.nics.size(), 5u);
  EXPECT_EQ(r.block_devices.size(), 2u);
  EXPECT_EQ(r.tuning.nr_hugepages, 8192);
  EXPECT_EQ(r.collected_at.size(), 20u);  // 2026-11-30T08:45:00Z
  EXPECT_TRUE(r.warnings.empty()) << joined(r.warnings);
  // DDR5 DIMMs, sockets at 2100 and 2000 MHz: the lower; the GPU's memory is not read (PCI only).
  EXPECT_EQ(r.memory.type.value_or("?"), "DDR5");
  EXPECT_DOUBLE_EQ(r.cpu.base_mhz.value_or(-1), 2000.0);
  EXPECT_FALSE(r.memory.gpu_memory_ratio.has_value());
  EXPECT_EQ(r.memory.unknown.at("gpu_memory_ratio"), "GPU 0's memory not read");

  // The record survives its JSON form.
  json j = r;
  EnvRecord back = j.get<EnvRecord>();
  EXPECT_EQ(back.memory.type.value_or("?"), "DDR5");
  EXPECT_DOUBLE_EQ(back.cpu.base_mhz.value_or(-1), 2000.0);
  EXPECT_EQ(back.cpu.physical_cores, 8);
  EXPECT_EQ(back.gpus.at(0).pci_device_id, "0x2330");
  EXPECT_DOUBLE_EQ(back.block_devices.at(0).capacity_tb, 3.840755982336);
}

TEST(InventoryEnv, MemoryTypeBaseClockAndTheGpuMemoryRatio) {
  std::vector<std::string> w;
  // DDR4 DIMMs; one socket at 1800 MHz and an empty one (status 0: not counted).
  MemoryInfo m = collect_memory(kRoot + "dmi-exceeds-memtotal", w);
  EXPECT_EQ(m.type.value_or("?"), "DDR4");
  CpuInfo c;
  collect_cpu_base_clock(kRoot + "dmi-exceeds-memtotal", c);
  EXPECT_DOUBLE_EQ(c.base_mhz.value_or(-1), 1800.0);
  // No DMI, no cpufreq: unknown, with why.
  MemoryInfo none = collect_memory(kRoot + "meminfo-only", w);
  EXPECT_FALSE(none.type.has_value());
  EXPECT_NE(none.unknown.at("type").find("no readable DMI type 17 entry"), std::string::npos);
  CpuInfo c2;
  collect_cpu_base_clock(kRoot + "meminfo-only", c2);
  EXPECT_FALSE(c2.base_mhz.has_value());
  EXPECT_NE(c2.unknown.at("base_mhz").find("no populated SMBIOS type 4 entry"), std::string::npos);
  json j = c2;
  EXPECT_TRUE(j.at("base_mhz").is_null());
  // The memory type byte of a type 17 structure.
  std::string raw(0x28, '\0');
  raw[0] = 17, raw[1] = 0x28;
  raw[0x12] = 0x1A;
  EXPECT_EQ(dmi_memory_type(raw), "DDR4");
  raw[0x12] = 0x22;
  EXPECT_EQ(dmi_memory_type(raw), "DDR5");
  raw[0x12] = 0x7F;
  EXPECT_EQ(dmi_memory_type(raw), "unknown");
  EXPECT_EQ(dmi_memory_type(raw.substr(0, 0x12)), "unknown");
  // 8 x 140.4 GiB (H200) against 476.8 GiB: 0.42; a GPU whose memory is unknown: no ratio.
  EnvRecord r;
  r.memory.installed_gib = 476.8;
  EXPECT_FALSE((set_gpu_memory_ratio(r), r.memory.gpu_memory_ratio.has_value()));
  EXPECT_EQ(r.memory.unknown.at("gpu_memory_ratio"), "no GPU on this node");
  r.memory.unknown.clear();
  for (int i = 0; i < 8; ++i) {
    GpuInfo g;
    g.index = i;
    g.memory_gib = 140.4;
    r.gpus.push_back(g);
  }
  set_gpu_memory_ratio(r);
  EXPECT_NEAR(r.memory.gpu_memory_ratio.value_or(-1), 476.8 / 1123.2, 1e-12);
  r.gpus[5].memory_gib.reset();
  set_gpu_memory_ratio(r);
  EXPECT_FALSE(r.memory.gpu_memory_ratio.has_value());
  EXPECT_EQ(r.memory.unknown.at("gpu_memory_ratio"), "GPU 5's memory not read");
}

TEST(InventoryEnv, HostOptionWinsAndNvmlFailureKeepsPciGpus) {
  // A library that cannot load: NVML's reason goes to gpu_status.nvml, the GPUs stay PCI's.
  setenv("CLUSTERBENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  InventoryOptions opt;
  opt.fs_root = kTwoSocket;
  opt.host = "node01";
  opt.probe_tools = false;
  EnvRecord r = collect_env(opt);
  unsetenv("CLUSTERBENCH_NVML_LIB");
  EXPECT_EQ(r.host, "node01");
  EXPECT_NE(r.gpu_status.nvml, "ok");
  EXPECT_FALSE(r.gpu_status.nvml.empty());
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].source, "pci");
  EXPECT_EQ(r.gpu_status.on_pci, 1);
  EXPECT_EQ(r.versions.driver, "");
  // What only NVML can tell is unknown, with why NVML could not be used; never 0.
  const GpuInfo& g = r.gpus[0];
  EXPECT_FALSE(g.memory_gib.has_value());
  EXPECT_FALSE(g.nvlink_links_up.has_value());
  EXPECT_EQ(g.unknown.at("memory_gib"), "NVML not loaded: " + r.gpu_status.nvml);
  EXPECT_EQ(g.unknown.at("nvlink_links_up"), "NVML not loaded: " + r.gpu_status.nvml);
  json j = r;
  EXPECT_TRUE(j["gpus"][0]["memory_gib"].is_null()) << j["gpus"][0].dump();
  EXPECT_TRUE(j["gpus"][0]["nvlink_links_up"].is_null()) << j["gpus"][0].dump();
  EXPECT_EQ(j["gpus"][0]["pcie"]["width_current"], 16);  // sysfs still gave the PCIe link
}

// Host names, sysfs values and directory names are bytes: the record holds them as valid UTF-8
// (U+FFFD for each bad subsequence), so its JSON can be written (nlohmann throws type_error.316
// on a string that is not UTF-8).
TEST(InventoryEnv, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";  // U+FFFD
  InventoryOptions opt;
  opt.fs_root = kRoot + "bad-bytes";
  opt.query_nvml = false;
  opt.probe_tools = false;
  setenv("NCCL_BAD_BYTES", "a\xff", 1);
  EnvRecord r = collect_env(opt);
  unsetenv("NCCL_BAD_BYTES");
  EXPECT_EQ(r.host, "node" + fffd + fffd + "-1");
  EXPECT_EQ(r.versions.kernel, "6.1.0-" + fffd);
  EXPECT_EQ(r.dmi.product_name, "Server " + fffd + fffd + fffd + " X");
  ASSERT_EQ(r.nics.size(), 2u);  // the veth, and the entry for the physical NICs not visible
  EXPECT_EQ(r.nics[1].kind, "not_visible");
  EXPECT_NE(r.nics[1].unknown.at("rate_gbps").find("only veth" + fffd + fffd + " ("),
            std::string::npos);
  EXPECT_EQ(r.nics[0].name, "veth" + fffd + fffd);
  EXPECT_EQ(r.nics[0].state, "up" + fffd);
  EXPECT_EQ(r.nics[0].mtu, 1500);  // read through the raw name
  EXPECT_EQ(r.environment.at("NCCL_BAD_BYTES"), "a" + fffd);
  std::string text;
  ASSERT_NO_THROW(text = json(r).dump());
  EXPECT_EQ(json::parse(text).get<EnvRecord>().host, r.host);
}

TEST(InventoryEnv, MissingRootNeverThrows) {
  InventoryOptions opt;
  opt.fs_root = kRoot + "does-not-exist";
  opt.query_nvml = false;
  opt.probe_tools = false;
  EnvRecord r;
  ASSERT_NO_THROW(r = collect_env(opt));
  EXPECT_EQ(r.cpu.physical_cores, 0);
  EXPECT_FALSE(r.memory.usable_gib.has_value());
  EXPECT_TRUE(r.gpus.empty());
  EXPECT_EQ(r.tuning.governor, "no cpufreq driver");
  EXPECT_TRUE(has_warning(r.warnings, "hwloc")) << joined(r.warnings);
  EXPECT_TRUE(has_warning(r.warnings, "osrelease")) << joined(r.warnings);
}

TEST(InventoryEnv, LiveSystem) {
  InventoryOptions opt;
  opt.query_nvml = false;
  EnvRecord r = collect_env(opt);
  EXPECT_EQ(r.fs_root, "/");
  EXPECT_GE(r.cpu.physical_cores, 1);
  EXPECT_GT(r.memory.usable_gib.value_or(-1), 0.0);
  EXPECT_FALSE(r.host.empty());
  EXPECT_FALSE(r.versions.kernel.empty());
  // `fio --version` prints "fio-3.33"; without fio the field stays empty.
  EXPECT_TRUE(r.versions.fio.empty() || std::isdigit(static_cast<unsigned char>(r.versions.fio[0])))
      << r.versions.fio;
}

}  // namespace
}  // namespace clusterbench
