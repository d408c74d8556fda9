// The CPU and the GPUs on the PCI bus, from hwloc below the root (inventory.hpp).
#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "env/inventory_parts.hpp"

namespace fs = std::filesystem;

namespace clusterbench {

using namespace inventory;

namespace {

/// A loaded hwloc topology; null `get()` when loading failed.
class Topology {
 public:
  Topology(const std::string& fs_root, bool io, std::vector<std::string>& warnings) {
    if (!is_live(fs_root)) {
      std::error_code ec;
      if (!fs::is_directory(fs_root, ec)) {
        warnings.push_back("hwloc: fs_root " + fs_root + " is not a directory");
        return;
      }
      // Without it hwloc's Linux discovery aborts and the no_os component counts this host's
      // processors (sysconf) instead: report nothing rather than the wrong machine.
      std::string cpu_dir = under(fs_root, "/sys/devices/system/cpu");
      if (!fs::is_directory(cpu_dir, ec)) {
        warnings.push_back("hwloc: no " + cpu_dir + "; topology not loaded");
        return;
      }
    }
    // HWLOC_FSROOT is read when the Linux component is instantiated, inside hwloc_topology_load.
    static std::mutex env_mutex;
    std::lock_guard<std::mutex> lock(env_mutex);
    const char* prev = std::getenv("HWLOC_FSROOT");
    std::optional<std::string> saved = prev ? std::optional<std::string>(prev) : std::nullopt;
    if (is_live(fs_root))
      unsetenv("HWLOC_FSROOT");
    else
      setenv("HWLOC_FSROOT", fs_root.c_str(), 1);

    hwloc_topology_t t = nullptr;
    int err = hwloc_topology_init(&t);
    if (err == 0) {
      hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
      if (io) hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
      if (!is_live(fs_root)) {
        // These components read the live machine (CPUID, libpciaccess, GPU APIs) even when
        // HWLOC_FSROOT is set; x86 would mix this host's caches and CPU model into the tree.
        // A name hwloc does not know returns -1: nothing to disable.
        for (const char* name : {"x86", "pci", "opencl", "gl", "cuda", "nvml", "rsmi", "levelzero"})
          hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, name);
      }
      err = hwloc_topology_load(t);
    }
    int load_errno = errno;
    if (saved)
      setenv("HWLOC_FSROOT", saved->c_str(), 1);
    else
      unsetenv("HWLOC_FSROOT");
    if (err != 0) {
      warnings.push_back(std::string("hwloc: cannot load the topology below ") + fs_root + ": " +
                         std::strerror(load_errno));
      if (t) hwloc_topology_destroy(t);
      return;
    }
    topo_ = t;
  }
  ~Topology() {
    if (topo_) hwloc_topology_destroy(topo_);
  }
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  hwloc_topology_t get() const { return topo_; }

 private:
  hwloc_topology_t topo_ = nullptr;
};

CpuInfo cpu_from_topology(const Topology& topo, std::vector<std::string>& warnings) {
  CpuInfo cpu;
  hwloc_topology_t t = topo.get();
  if (!t) return cpu;
  cpu.source = "hwloc";
  auto count = [&](hwloc_obj_type_t type) {
    return std::max(0, hwloc_get_nbobjs_by_type(t, type));
  };
  cpu.sockets = count(HWLOC_OBJ_PACKAGE);
  cpu.physical_cores = count(HWLOC_OBJ_CORE);
  cpu.threads = count(HWLOC_OBJ_PU);
  cpu.numa_nodes = count(HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < cpu.sockets && cpu.model.empty(); ++i) {
    const char* m =
        hwloc_obj_get_info_by_name(hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, i), "CPUModel");
    if (m) cpu.model = trim(m);
  }
  if (cpu.model.empty()) {
    const char* m = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "CPUModel");
    if (m) cpu.model = trim(m);
  }
  if (cpu.model.empty()) warnings.push_back("cpu: hwloc reports no CPUModel");
  if (cpu.physical_cores == 0) warnings.push_back("cpu: hwloc found no cores");
  return cpu;
}

constexpr unsigned kNvidiaVendor = 0x10de;

bool is_gpu_class(unsigned class_id16) { return class_id16 == 0x0300 || class_id16 == 0x0302; }

std::string hex4(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v & 0xffffu);
  return buf;
}

/// The fields sysfs holds for one PCI function: NUMA node and PCIe link.
void fill_pci_sysfs(const std::string& fs_root, GpuInfo& g) {
  std::string dir = under(fs_root, "/sys/bus/pci/devices/" + g.pci_bus_id);
  if (auto n = read_ll(dir + "/numa_node")) g.numa_node = static_cast<int>(*n);
  g.pcie.gen_current = pcie_gen_from_speed(read_or_empty(dir + "/current_link_speed"));
  g.pcie.gen_max = pcie_gen_from_speed(read_or_empty(dir + "/max_link_speed"));
  g.pcie.width_current = static_cast<int>(read_ll(dir + "/current_link_width").value_or(0));
  g.pcie.width_max = static_cast<int>(read_ll(dir + "/max_link_width").value_or(0));
}

GpuInfo pci_gpu(const std::string& bus_id, unsigned device_id) {
  GpuInfo g;
  g.pci_bus_id = bus_id;
  g.pci_device_id = hex4(device_id);
  g.name = "NVIDIA " + g.pci_device_id;
  g.source = "pci";
  return g;
}

/// hwloc's PCI objects; nullopt when the topology has none at all (then sysfs is read instead).
std::optional<std::vector<GpuInfo>> gpus_from_topology(const Topology& topo) {
  hwloc_topology_t t = topo.get();
  if (!t || !hwloc_get_next_pcidev(t, nullptr)) return std::nullopt;
  std::vector<GpuInfo> gpus;
  for (hwloc_obj_t o = hwloc_get_next_pcidev(t, nullptr); o; o = hwloc_get_next_pcidev(t, o)) {
    const auto& a = o->attr->pcidev;
    if (a.vendor_id != kNvidiaVendor || !is_gpu_class(a.class_id)) continue;
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.%01x", a.domain, a.bus, a.dev, a.func);
    gpus.push_back(pci_gpu(bus, a.device_id));
  }
  return gpus;
}

std::vector<GpuInfo> gpus_from_sysfs(const std::string& fs_root,
                                     std::vector<std::string>& warnings) {
  std::vector<GpuInfo> gpus;
  std::string why;
  std::string dir = under(fs_root, "/sys/bus/pci/devices");
  auto names = list_dir(dir, &why);
  if (names.empty() && !why.empty()) {
    warnings.push_back("pci: cannot list " + dir + ": " + why);
    return gpus;
  }
  for (const auto& n : names) {
    auto vendor = read_ll(dir + "/" + n + "/vendor", 16);
    auto cls = read_ll(dir + "/" + n + "/class", 16);
    auto device = read_ll(dir + "/" + n + "/device", 16);
    if (!vendor || !cls || !device) continue;
    if (*vendor != kNvidiaVendor || !is_gpu_class(static_cast<unsigned>(*cls >> 8))) continue;
    gpus.push_back(pci_gpu(n, static_cast<unsigned>(*device)));
  }
  return gpus;
}

std::vector<GpuInfo> pci_gpus(const std::string& fs_root, const Topology& topo,
                              std::vector<std::string>& warnings) {
  auto from_hwloc = gpus_from_topology(topo);
  std::vector<GpuInfo> gpus;
  if (from_hwloc) {
    gpus = std::move(*from_hwloc);
  } else {
    gpus = gpus_from_sysfs(fs_root, warnings);
    if (topo.get() && !gpus.empty())
      warnings.push_back("pci: hwloc saw no PCI devices; GPUs read from /sys/bus/pci/devices");
  }
  std::sort(gpus.begin(), gpus.end(),
            [](const GpuInfo& a, const GpuInfo& b) { return a.pci_bus_id < b.pci_bus_id; });
  for (size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].index = static_cast<int>(i);
    fill_pci_sysfs(fs_root, gpus[i]);
  }
  return gpus;
}

}  // namespace

CpuInfo collect_cpu(const std::string& fs_root, std::vector<std::string>& warnings) {
  Topology topo(fs_root, /*io=*/false, warnings);
  return cpu_from_topology(topo, warnings);
}

int pcie_gen_from_speed(std::string_view speed) {
  std::string s(speed);
  char* end = nullptr;
  double gts = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return 0;
  struct Row {
    double gts;
    int gen;
  };
  for (Row r : {Row{2.5, 1}, Row{5, 2}, Row{8, 3}, Row{16, 4}, Row{32, 5}, Row{64, 6}})
    if (gts > r.gts - 0.05 && gts < r.gts + 0.05) return r.gen;
  return 0;
}

std::vector<GpuInfo> collect_pci_gpus(const std::string& fs_root,
                                      std::vector<std::string>& warnings) {
  Topology topo(fs_root, /*io=*/true, warnings);
  return pci_gpus(fs_root, topo, warnings);
}

CpuInfo inventory::cpu_and_pci_gpus(const std::string& fs_root, std::vector<GpuInfo>& gpus,
                                    std::vector<std::string>& warnings) {
  Topology topo(fs_root, /*io=*/true, warnings);
  CpuInfo cpu = cpu_from_topology(topo, warnings);
  gpus = pci_gpus(fs_root, topo, warnings);
  return cpu;
}

void collect_cpu_base_clock(const std::string& fs_root, CpuInfo& cpu) {
  const std::string dir = under(fs_root, "/sys/firmware/dmi/entries");
  std::optional<unsigned> lowest;
  for (const auto& n : list_dir(dir)) {
    if (n.rfind("4-", 0) != 0) continue;
    auto raw = read_raw(dir + "/" + n + "/raw");
    // Type 4, at least the SMBIOS 2.0 length (0x1A); Status (0x18) bit 6: socket populated.
    if (!raw || raw->size() < 0x1A || (*raw)[0] != 4 ||
        static_cast<unsigned char>((*raw)[1]) < 0x1A)
      continue;
    auto byte = [&](size_t off) { return static_cast<unsigned char>((*raw)[off]); };
    if (!(byte(0x18) & 0x40)) continue;
    const unsigned mhz = byte(0x16) | byte(0x17) << 8;
    if (mhz > 0 && (!lowest || mhz < *lowest)) lowest = mhz;
  }
  if (lowest) {
    cpu.base_mhz = *lowest;
    return;
  }
  const std::string cpufreq = under(fs_root, "/sys/devices/system/cpu/cpu0/cpufreq/base_frequency");
  if (auto khz = read_ll(cpufreq); khz && *khz > 0) {
    cpu.base_mhz = static_cast<double>(*khz) / 1000.0;
    return;
  }
  set_unknown(
      cpu.base_mhz, cpu.unknown, "base_mhz",
      "not read: no populated SMBIOS type 4 entry with a speed in " + dir + ", no " + cpufreq);
}

}  // namespace clusterbench
