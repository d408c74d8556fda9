// Procurement evidence and GPUDirect settings of the inventory (issue 9): DMI serials and BIOS,
// NIC and NVMe firmware and serials, IOMMU, ACS and nvidia_peermem, on the fixture tree
// tests/fixtures/fsroot/procurement (tests/fixtures/make_fsroot.py). Budget: < 2 s.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "env/inventory.hpp"

namespace clusterbench {
namespace {

const std::string kRoot = std::string(CB_FIXTURES) + "/fsroot/";
const std::string kProcurement = kRoot + "procurement";
const std::string kTwoSocket = kRoot + "two-socket";

std::string joined(const std::vector<std::string>& w) {
  std::string out;
  for (const auto& s : w) out += s + "\n";
  return out;
}

TEST(Procurement, DmiSerialsAndBios) {
  std::vector<std::string> w;
  DmiInfo d = collect_dmi(kProcurement, w);
  EXPECT_EQ(d.sys_vendor, "Supermicro");
  EXPECT_EQ(d.product_name, "SYS-821GE-TNHR");
  EXPECT_EQ(d.product_serial, "S421337X3A12345");
  EXPECT_EQ(d.board_name, "X13DEG-OAD");
  EXPECT_EQ(d.board_serial, "OM23AS012345");
  EXPECT_EQ(d.chassis_serial, "C8210LM37A00123");
  EXPECT_EQ(d.bios_version, "2.1");
  EXPECT_EQ(d.bios_date, "03/15/2024");
  EXPECT_TRUE(w.empty()) << joined(w);

  // A tree without DMI: every field empty, no warning (a VM or container may have none).
  DmiInfo none = collect_dmi(kTwoSocket, w);
  EXPECT_EQ(none.product_serial, "");
  EXPECT_EQ(none.bios_version, "");
  EXPECT_TRUE(w.empty()) << joined(w);
}

// The serials are root-only on a live system (mode 0400): as non-root they read "unreadable",
// without a warning, while the world-readable BIOS version is still read.
TEST(Procurement, DmiSerialUnreadableAsNonRoot) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("cb-dmi-" + std::to_string(getpid()));
  fs::create_directories(root / "sys/class/dmi/id");
  fs::permissions(root, fs::perms(0755));
  for (const char* d : {"sys", "sys/class", "sys/class/dmi", "sys/class/dmi/id"})
    fs::permissions(root / d, fs::perms(0755));
  auto put = [&](const char* name, const char* text, unsigned mode) {
    std::ofstream(root / "sys/class/dmi/id" / name) << text << "\n";
    ::chmod((root / "sys/class/dmi/id" / name).c_str(), mode);
  };
  put("product_serial", "S421337X3A12345", 0400);
  put("board_serial", "OM23AS012345", 0400);
  put("bios_version", "2.1", 0444);

  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Root reads everything: become nobody (as root), or lose the owner's read bit (non-root).
    if (geteuid() == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
    } else {
      ::chmod((root / "sys/class/dmi/id/product_serial").c_str(), 0);
      ::chmod((root / "sys/class/dmi/id/board_serial").c_str(), 0);
    }
    std::vector<std::string> w;
    DmiInfo d = collect_dmi(root.string(), w);
    int bad = 0;
    if (d.product_serial != kDmiUnreadable) bad |= 1;
    if (d.board_serial != kDmiUnreadable) bad |= 2;
    if (d.bios_version != "2.1") bad |= 4;
    if (d.chassis_serial != "") bad |= 8;  // absent: empty, not unreadable
    if (!w.empty()) bad |= 16;
    _exit(bad);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  fs::remove_all(root);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "bit mask of failed checks (10: could not drop root)";
}

TEST(Procurement, NicFirmwareAndAffinity) {
  std::vector<std::string> w;
  auto nics = collect_nics(kProcurement, w);
  // mlx5_0/1 (IB), mlx5_1/1 (RoCE), then ens1np0, the RoCE port's netdev as an Ethernet NIC.
  ASSERT_EQ(nics.size(), 3u) << joined(w);
  EXPECT_EQ(nics[0].name, "mlx5_0/1");
  EXPECT_EQ(nics[0].link_layer, "InfiniBand");
  EXPECT_EQ(nics[0].firmware, "28.39.2048");
  EXPECT_EQ(nics[0].pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(nics[0].numa_node, 0);
  EXPECT_EQ(nics[0].netdev, "ib0");
  EXPECT_DOUBLE_EQ(nics[0].rate_gbps.value_or(-1), 400.0);
  EXPECT_EQ(nics[1].name, "mlx5_1/1");
  EXPECT_EQ(nics[1].link_layer, "Ethernet");
  EXPECT_EQ(nics[1].firmware, "28.39.2048");
  EXPECT_EQ(nics[1].pci_bus_id, "0000:9b:00.0");
  EXPECT_EQ(nics[1].numa_node, 1);
  EXPECT_EQ(nics[1].netdev, "ens1np0");
  EXPECT_EQ(nics[2].name, "ens1np0");
  EXPECT_EQ(nics[2].kind, "ethernet");
  EXPECT_EQ(nics[2].pci_bus_id, "0000:9b:00.0");
  EXPECT_EQ(nics[2].numa_node, 1);
  EXPECT_EQ(nics[2].firmware, "");  // ethtool is asked on the live system only
  EXPECT_TRUE(w.empty()) << joined(w);

  // The foundation's tree: the HCAs' bus ids and NUMA nodes.
  auto two = collect_nics(kTwoSocket, w);
  ASSERT_EQ(two.size(), 5u);  // and docker0, virtual: no bus id
  EXPECT_EQ(two[4].pci_bus_id, "");
  EXPECT_EQ(two[4].numa_node, -1);
  EXPECT_EQ(two[0].pci_bus_id, "0000:1a:00.0");
  EXPECT_EQ(two[0].numa_node, 0);
  EXPECT_EQ(two[1].pci_bus_id, "0000:9a:00.0");
  EXPECT_EQ(two[1].numa_node, 1);
  EXPECT_EQ(two[2].pci_bus_id, "0000:31:00.0");  // eno1
  EXPECT_EQ(two[3].pci_bus_id, "0000:31:00.1");  // eno2
}

TEST(Procurement, NvmeSerialsAndFirmware) {
  std::vector<std::string> w;
  auto disks = collect_block_devices(kProcurement, w);
  ASSERT_EQ(disks.size(), 2u) << joined(w);
  EXPECT_EQ(disks[0].name, "nvme0n1");
  EXPECT_EQ(disks[0].model, "SAMSUNG MZQL27T6HBLA-00A07");  // trailing blanks trimmed
  EXPECT_EQ(disks[0].serial, "S6CKNT0W700123");
  EXPECT_EQ(disks[0].firmware, "GDC7302Q");
  EXPECT_EQ(disks[1].serial, "S6CKNT0W700456");
  EXPECT_EQ(disks[1].firmware, "GDC7102Q");
  EXPECT_TRUE(disks[1].nvme);
  // 15002931888 sectors x 512 B = 7.681501126656 TB.
  EXPECT_DOUBLE_EQ(disks[1].capacity_tb, 7.681501126656);
  EXPECT_TRUE(w.empty()) << joined(w);
}

TEST(Procurement, GpuDirectSettings) {
  std::vector<std::string> w;
  GpuDirectSettings g = collect_gpudirect(kProcurement, w);
  EXPECT_EQ(g.iommu_cmdline, "intel_iommu=on iommu=pt");
  EXPECT_EQ(g.iommu_groups, 3);
  EXPECT_EQ(g.peermem, "nvidia_peermem");
  // 15:00.0 has ACS without redirect, 16:00.0 redirects, 17:01.0 gives only 64 bytes.
  EXPECT_EQ(g.acs_bridges_checked, 2);
  EXPECT_EQ(g.acs_redirect, std::vector<std::string>{"0000:16:00.0"});
  EXPECT_TRUE(w.empty()) << joined(w);

  GpuDirectSettings none = collect_gpudirect(kTwoSocket, w);
  EXPECT_EQ(none.iommu_cmdline, "");
  EXPECT_EQ(none.iommu_groups, 0);
  EXPECT_EQ(none.peermem, "");
  EXPECT_EQ(none.acs_bridges_checked, 0);
  EXPECT_TRUE(w.empty()) << joined(w);

  GpuDirectSettings missing = collect_gpudirect(kRoot + "meminfo-only", w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("/proc/cmdline"), std::string::npos) << w[0];
}

// Config space bytes built by hand (PCIe base spec 7.6 / 7.7.8).
TEST(Procurement, AcsCapabilityWalk) {
  auto put32 = [](std::string& c, size_t off, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) c[off + i] = static_cast<char>(v >> (8 * i) & 0xFF);
  };
  std::string cfg(4096, '\0');
  EXPECT_EQ(acs_redirect_enabled(cfg.substr(0, 64)), std::nullopt);  // unprivileged read
  EXPECT_EQ(acs_redirect_enabled(cfg), false);                       // no extended capability
  // 0x100: AER (id 1) -> 0x200: ACS (id 0xD), capability 0x5F, control below.
  put32(cfg, 0x100, 0x0001 | 2u << 16 | 0x200u << 20);
  put32(cfg, 0x200, 0x000D | 1u << 16);
  put32(cfg, 0x204, 0x005F | 0x0001u << 16);  // Source Validation only
  EXPECT_EQ(acs_redirect_enabled(cfg), false);
  put32(cfg, 0x204, 0x005F | 0x0004u << 16);  // P2P Request Redirect
  EXPECT_EQ(acs_redirect_enabled(cfg), true);
  put32(cfg, 0x204, 0x005F | 0x0008u << 16);  // P2P Completion Redirect
  EXPECT_EQ(acs_redirect_enabled(cfg), true);
  // A capability list that loops onto itself ends without ACS.
  put32(cfg, 0x100, 0x0001 | 2u << 16 | 0x100u << 20);
  EXPECT_EQ(acs_redirect_enabled(cfg), false);
}

TEST(Procurement, EnvRecordCarriesTheNewFields) {
  InventoryOptions opt;
  opt.fs_root = kProcurement;
  opt.host = "node01";
  opt.query_nvml = false;
  opt.probe_tools = false;
  EnvRecord r = collect_env(opt);
  json j = r;
  EXPECT_EQ(j["dmi"]["chassis_serial"], "C8210LM37A00123");
  EXPECT_EQ(j["gpudirect"]["peermem"], "nvidia_peermem");
  EXPECT_EQ(j["nics"][0]["numa_node"], 0);
  EnvRecord back = j.get<EnvRecord>();
  EXPECT_EQ(back.dmi.bios_version, "2.1");
  EXPECT_EQ(back.gpudirect.acs_redirect, std::vector<std::string>{"0000:16:00.0"});
  EXPECT_EQ(back.nics.at(1).pci_bus_id, "0000:9b:00.0");
}

}  // namespace
}  // namespace clusterbench
