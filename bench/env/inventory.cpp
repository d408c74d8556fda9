// Env collectors (inventory.hpp). Every file is read below fs_root; a file that is missing or
// unreadable leaves its field at the default and, where the field matters, adds a warning.
#include "env/inventory.hpp"

#include <hwloc.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "env/nvml.hpp"
#include "env/software.hpp"
#include "records/utf8.hpp"

extern char** environ;

namespace clusterbench {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Files below the root.

/// The path of `abs` (an absolute path like "/sys/...") below `root`.
std::string under(const std::string& root, const std::string& abs) {
  if (root.empty() || root == "/") return abs;
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return r + abs;
}

bool is_live(const std::string& root) { return root.empty() || root == "/"; }

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

/// Whole file, raw bytes; nullopt when it cannot be opened or read. `why` gets errno's text.
std::optional<std::string> read_raw(const std::string& path, std::string* why = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (why) *why = std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    if (why) *why = std::strerror(errno);
    return std::nullopt;
  }
  return ss.str();
}

/// File text with surrounding whitespace trimmed (sysfs values end in "\n"), as valid UTF-8 (a
/// DMI string or a host name is bytes).
std::optional<std::string> read_text(const std::string& path, std::string* why = nullptr) {
  auto raw = read_raw(path, why);
  if (!raw) return std::nullopt;
  return valid_utf8(trim(*raw));
}

/// As read_text, "" when unreadable (optional attributes such as a disk's serial).
std::string read_or_empty(const std::string& path) { return read_text(path).value_or(""); }

std::optional<long long> parse_ll(const std::string& s, int base = 10) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, base);
  if (errno != 0 || end == s.c_str()) return std::nullopt;
  return v;
}

std::optional<long long> read_ll(const std::string& path, int base = 10) {
  auto t = read_text(path);
  if (!t) return std::nullopt;
  return parse_ll(*t, base);
}

/// Names in a directory, sorted; empty when it cannot be listed (`why` says why).
std::vector<std::string> list_dir(const std::string& path, std::string* why = nullptr) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(path, ec);
  if (ec) {
    if (why) *why = ec.message();
    return names;
  }
  for (const auto& e : it) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec)) && !ec;
}

/// "a  b\tc" -> "a b c".
std::string squeeze_spaces(const std::string& s) {
  std::istringstream in(s);
  std::string word, out;
  while (in >> word) out += (out.empty() ? "" : " ") + word;
  return out;
}

/// "4: ACTIVE" -> "ACTIVE" (sysfs IB state files prefix the enum's number).
std::string strip_state_number(const std::string& s) {
  auto colon = s.find(':');
  if (colon == std::string::npos) return s;
  std::string head = trim(s.substr(0, colon));
  bool numeric = !head.empty() && std::all_of(head.begin(), head.end(),
                                              [](unsigned char c) { return std::isdigit(c); });
  return numeric ? trim(s.substr(colon + 1)) : s;
}

/// Natural order for names with a number ("2" < "10").
bool numeric_less(const std::string& a, const std::string& b) {
  auto na = parse_ll(a), nb = parse_ll(b);
  if (na && nb) return *na < *nb;
  return a < b;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// ---------------------------------------------------------------------------------------------
// hwloc

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

// ---------------------------------------------------------------------------------------------
// PCI GPUs

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

/// "00000000:17:00.0" (NVML) and "0000:17:00.0" (sysfs) -> "0000:17:00.0".
std::string normalize_bus_id(std::string id) {
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto colon = id.find(':');
  if (colon != std::string::npos && colon > 4 && id.find(':', colon + 1) != std::string::npos)
    id = id.substr(colon - 4);
  return id;
}

// ---------------------------------------------------------------------------------------------
// Memory

struct DmiSum {
  std::uint64_t bytes = 0;
  int devices = 0, unknown = 0;
};

/// Sum of the type 17 entries; nullopt (with a warning) when there are none readable.
std::optional<std::uint64_t> dmi_installed(const std::string& fs_root,
                                           std::vector<std::string>& warnings) {
  std::string dir = under(fs_root, "/sys/firmware/dmi/entries");
  std::string why;
  auto names = list_dir(dir, &why);
  DmiSum sum;
  std::string unreadable;
  for (const auto& n : names) {
    if (n.rfind("17-", 0) != 0) continue;
    std::string err;
    auto raw = read_raw(dir + "/" + n + "/raw", &err);
    if (!raw) {
      if (unreadable.empty()) unreadable = dir + "/" + n + "/raw: " + err;
      continue;
    }
    auto bytes = dmi_memory_device_bytes(*raw);
    ++sum.devices;
    if (!bytes)
      ++sum.unknown;
    else
      sum.bytes += *bytes;
  }
  if (!unreadable.empty())
    warnings.push_back("memory: cannot read DMI type 17 entry " + unreadable);
  else if (names.empty())
    warnings.push_back("memory: no DMI entries in " + dir + (why.empty() ? "" : ": " + why));
  else if (sum.devices == 0)
    warnings.push_back("memory: no DMI type 17 (memory device) entries in " + dir);
  if (sum.unknown > 0)
    warnings.push_back("memory: " + std::to_string(sum.unknown) +
                       " DMI memory device(s) of unknown size");
  if (sum.bytes == 0 || !unreadable.empty()) return std::nullopt;
  return sum.bytes;
}

std::optional<std::uint64_t> memory_blocks_installed(const std::string& fs_root,
                                                     std::vector<std::string>& warnings) {
  std::string dir = under(fs_root, "/sys/devices/system/memory");
  auto block = read_ll(dir + "/block_size_bytes", 16);
  if (!block || *block <= 0) {
    warnings.push_back("memory: cannot read " + dir + "/block_size_bytes");
    return std::nullopt;
  }
  std::uint64_t online = 0;
  for (const auto& n : list_dir(dir)) {
    if (n.rfind("memory", 0) != 0 || n.size() == 6 ||
        !std::all_of(n.begin() + 6, n.end(), [](unsigned char c) { return std::isdigit(c); }))
      continue;
    auto state = read_text(dir + "/" + n + "/state");
    if (!state || *state == "online") ++online;
  }
  if (online == 0) {
    warnings.push_back("memory: no online memory blocks in " + dir);
    return std::nullopt;
  }
  return online * static_cast<std::uint64_t>(*block);
}

/// MemTotal in bytes.
std::optional<std::uint64_t> mem_total(const std::string& fs_root,
                                       std::vector<std::string>& warnings) {
  std::string path = under(fs_root, "/proc/meminfo");
  std::string why;
  auto text = read_raw(path, &why);
  if (!text) {
    warnings.push_back("memory: cannot read " + path + ": " + why);
    return std::nullopt;
  }
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream f(line.substr(9));
    unsigned long long kb = 0;
    if (f >> kb) return kb * 1024ull;  // the kernel's "kB" is KiB
  }
  warnings.push_back("memory: no MemTotal in " + path);
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// NICs

/// True for a PCI address "0000:1a:00.0".
bool is_pci_address(const std::string& s) {
  unsigned d = 0, b = 0, dev = 0, f = 0;
  int used = 0;
  return std::sscanf(s.c_str(), "%x:%x:%x.%x%n", &d, &b, &dev, &f, &used) == 4 &&
         used == static_cast<int>(s.size()) && s.size() >= 12;
}

/// Fills a NIC's pci_bus_id and numa_node from its sysfs `device` link (`device_link`).
void nic_pci_location(const std::string& device_link, NicInfo& n) {
  std::error_code ec;
  fs::path resolved = fs::canonical(device_link, ec);
  if (ec) return;
  for (const auto& part : resolved)
    if (is_pci_address(part.string())) n.pci_bus_id = part.string();
  n.numa_node = static_cast<int>(read_ll(device_link + "/numa_node").value_or(-1));
}

/// ethtool's driver information of a live interface (SIOCETHTOOL GDRVINFO); nullopt when
/// unavailable.
std::optional<ethtool_drvinfo> ethtool_info(const std::string& ifname) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname.c_str());
  ifr.ifr_data = reinterpret_cast<char*>(&info);
  int rc = ::ioctl(fd, SIOCETHTOOL, &ifr);
  ::close(fd);
  if (rc != 0) return std::nullopt;
  return info;
}

/// ethtool's firmware version of a live interface, "" when unavailable.
std::string ethtool_firmware(const std::string& ifname) {
  auto info = ethtool_info(ifname);
  if (!info) return "";
  std::string fw =
      trim(std::string(info->fw_version, strnlen(info->fw_version, sizeof info->fw_version)));
  return fw == "N/A" ? "" : fw;
}

/// Leading number of "200 Gb/sec (4X HDR)".
double parse_rate_gbps(const std::string& rate) { return std::strtod(rate.c_str(), nullptr); }

std::vector<NicInfo> ib_ports(const std::string& fs_root) {
  std::vector<NicInfo> out;
  std::string cls = under(fs_root, "/sys/class/infiniband");
  for (const auto& dev : list_dir(cls)) {
    std::string d = cls + "/" + dev;
    std::string fw = read_or_empty(d + "/fw_ver");
    // The device's network interfaces, with the port each serves (dev_port is 0-based).
    std::vector<std::pair<std::string, long long>> netdevs;
    for (const auto& nd : list_dir(d + "/device/net"))
      netdevs.emplace_back(nd, read_ll(d + "/device/net/" + nd + "/dev_port").value_or(0));
    auto ports = list_dir(d + "/ports");
    std::sort(ports.begin(), ports.end(), numeric_less);
    for (const auto& port : ports) {
      std::string p = d + "/ports/" + port;
      NicInfo n;
      n.name = dev + "/" + port;
      n.kind = "ib_port";
      n.link_layer = read_or_empty(p + "/link_layer");
      n.state = strip_state_number(read_or_empty(p + "/state"));
      n.phys_state = strip_state_number(read_or_empty(p + "/phys_state"));
      std::string rate = read_or_empty(p + "/rate");
      if (double gbps = parse_rate_gbps(rate); gbps > 0)
        n.rate_gbps = gbps;
      else
        set_unknown(n.rate_gbps, n.unknown, "rate_gbps",
                    "cannot read a rate from " + p + "/rate ('" + rate + "')");
      n.firmware = fw;
      nic_pci_location(d + "/device", n);
      long long port_index = parse_ll(port).value_or(1) - 1;
      for (const auto& [name, dev_port] : netdevs) {
        if (dev_port != port_index) continue;
        n.netdev = name;
        n.mtu = static_cast<int>(read_ll(d + "/device/net/" + name + "/mtu").value_or(0));
        break;
      }
      out.push_back(std::move(n));
    }
  }
  return out;
}

/// An Ethernet interface's rate from its sysfs speed (Mb/s). Unknown when the speed is -1 (the
/// link is down, or the driver does not report it) or cannot be read (EINVAL while down).
void ethernet_rate(const std::string& dir, NicInfo& n) {
  std::string why;
  auto text = read_text(dir + "/speed", &why);
  auto speed = text ? parse_ll(*text) : std::nullopt;
  if (speed && *speed > 0) {
    n.rate_gbps = static_cast<double>(*speed) / 1000.0;
    return;
  }
  std::string reason =
      !text    ? "cannot read " + dir + "/speed: " + why
      : !speed ? dir + "/speed is not a number ('" + *text + "')"
               : "sysfs speed " + *text + " (link down, or the driver does not report its speed)";
  set_unknown(n.rate_gbps, n.unknown, "rate_gbps", reason);
}

/// A physical Ethernet interface (it has a `device` link).
NicInfo ethernet_iface(const std::string& fs_root, const std::string& d,
                       const std::string& ifname) {
  NicInfo n;
  n.name = ifname;
  n.kind = "ethernet";
  n.link_layer = "Ethernet";
  n.state = read_or_empty(d + "/operstate");
  ethernet_rate(d, n);
  n.mtu = static_cast<int>(read_ll(d + "/mtu").value_or(0));
  n.netdev = ifname;
  nic_pci_location(d + "/device", n);
  if (is_live(fs_root)) n.firmware = ethtool_firmware(ifname);
  return n;
}

/// What a virtual interface is: ethtool's driver on the live system, else what sysfs shows (the
/// uevent's DEVTYPE, a bridge/, bonding/ or tun_flags entry, a veth's iflink naming its peer).
std::string virtual_kind(const std::string& fs_root, const std::string& d,
                         const std::string& ifname) {
  if (auto info = is_live(fs_root) ? ethtool_info(ifname) : std::nullopt) {
    std::string driver(info->driver, strnlen(info->driver, sizeof info->driver));
    if (driver == "bonding") return "bond";
    if (driver == "802.1Q VLAN Support") return "vlan";
    if (!driver.empty()) return driver;
  }
  std::istringstream uevent(read_or_empty(d + "/uevent"));
  for (std::string line; std::getline(uevent, line);)
    if (line.rfind("DEVTYPE=", 0) == 0) return line.substr(8);
  if (exists(d + "/bridge")) return "bridge";
  if (exists(d + "/bonding")) return "bond";
  if (exists(d + "/tun_flags")) return "tun";
  auto names = list_dir(d);
  bool lower = std::any_of(names.begin(), names.end(),
                           [](const std::string& x) { return x.rfind("lower_", 0) == 0; });
  auto iflink = read_ll(d + "/iflink"), ifindex = read_ll(d + "/ifindex");
  if (!lower && iflink && ifindex && *iflink > 0 && *iflink != *ifindex) return "veth";
  return "virtual";
}

/// A virtual Ethernet interface (no `device` link: veth, bridge, macvlan, bond, vlan, ...). It has
/// no physical link rate, so rate_gbps is unknown.
NicInfo virtual_iface(const std::string& fs_root, const std::string& d, const std::string& ifname) {
  NicInfo n;
  n.name = ifname;
  n.kind = virtual_kind(fs_root, d, ifname);
  n.link_layer = "Ethernet";
  n.state = read_or_empty(d + "/operstate");
  set_unknown(n.rate_gbps, n.unknown, "rate_gbps",
              "virtual interface (" + n.kind + "): no physical link rate");
  n.mtu = static_cast<int>(read_ll(d + "/mtu").value_or(0));
  n.netdev = ifname;
  n.is_virtual = true;
  return n;
}

/// Ethernet interfaces (type 1, ARPHRD_ETHER) of /sys/class/net: physical ones first, then
/// virtual ones, each sorted by name. Loopback and other types (IPoIB, tunnels) are left out.
std::vector<NicInfo> ethernet_ifaces(const std::string& fs_root,
                                     std::vector<std::string>& warnings) {
  std::vector<NicInfo> out, virtuals;
  std::string cls = under(fs_root, "/sys/class/net");
  std::string why;
  auto names = list_dir(cls, &why);
  if (names.empty() && !why.empty()) {
    warnings.push_back("nics: cannot list " + cls + ": " + why);
    return out;
  }
  for (const auto& ifname : names) {
    std::string d = cls + "/" + ifname;
    if (read_ll(d + "/type").value_or(-1) != 1) continue;  // ARPHRD_ETHER only
    if (exists(d + "/device"))
      out.push_back(ethernet_iface(fs_root, d, ifname));
    else
      virtuals.push_back(virtual_iface(fs_root, d, ifname));
  }
  for (auto& n : virtuals) out.push_back(std::move(n));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Versions and host

std::string probe_fio_version() {
  FILE* p = popen("fio --version 2>/dev/null", "r");
  if (!p) return "";
  char buf[256] = {0};
  std::string out;
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  int status = pclose(p);
  if (status != 0) return "";
  out = trim(out);
  if (out.rfind("fio-", 0) == 0) out = out.substr(4);
  return valid_utf8(out);
}

std::string local_hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return valid_utf8(buf);
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// Public collectors

CpuInfo collect_cpu(const std::string& fs_root, std::vector<std::string>& warnings) {
  Topology topo(fs_root, /*io=*/false, warnings);
  return cpu_from_topology(topo, warnings);
}

std::optional<std::uint64_t> dmi_memory_device_bytes(std::string_view raw) {
  auto byte = [&](size_t off) { return static_cast<unsigned char>(raw[off]); };
  auto word = [&](size_t off) {
    return static_cast<std::uint32_t>(byte(off) | byte(off + 1) << 8);
  };
  if (raw.size() < 0x0E || byte(0) != 17) return std::nullopt;
  unsigned length = byte(1);
  if (length < 0x0E) return std::nullopt;  // no Size field (SMBIOS 2.1 has 0x15 bytes)
  std::uint32_t size = word(0x0C);
  constexpr std::uint64_t kMiB = 1024 * 1024;
  if (size == 0xFFFF) return std::nullopt;
  if (size == 0) return 0;
  if (size == 0x7FFF) {
    if (length < 0x20 || raw.size() < 0x20) return std::nullopt;
    std::uint32_t ext = word(0x1C) | word(0x1E) << 16;
    return static_cast<std::uint64_t>(ext & 0x7FFFFFFFu) * kMiB;
  }
  if (size & 0x8000) return static_cast<std::uint64_t>(size & 0x7FFF) * 1024;
  return static_cast<std::uint64_t>(size) * kMiB;
}

MemoryInfo collect_memory(const std::string& fs_root, std::vector<std::string>& warnings) {
  MemoryInfo m;
  const size_t first_warning = warnings.size();
  auto total = mem_total(fs_root, warnings);
  if (total)
    m.usable_gib = static_cast<double>(*total) / kGiB;
  else
    set_unknown(m.usable_gib, m.unknown, "usable_gib", warnings.back());
  // Every source that fails says why in a warning, so a reader sees why e.g. "memory_blocks"
  // was used instead of "dmi".
  if (auto dmi = dmi_installed(fs_root, warnings)) {
    m.installed_gib = static_cast<double>(*dmi) / kGiB;
    m.source = "dmi";
  } else if (auto blocks = memory_blocks_installed(fs_root, warnings)) {
    m.installed_gib = static_cast<double>(*blocks) / kGiB;
    m.source = "memory_blocks";
  } else if (total) {
    m.installed_gib = m.usable_gib;
    m.source = "meminfo";
  } else {
    std::string why = "no source worked";
    for (size_t i = first_warning; i < warnings.size(); ++i)
      why += (i == first_warning ? ": " : "; ") + warnings[i];
    set_unknown(m.installed_gib, m.unknown, "installed_gib", why);
  }
  return m;
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

/// What stands for the physical NICs when none is visible (a network namespace or container
/// shows only its own interfaces; a cluster node has at least one): their state and rate are
/// unknown, so a row that counts or rates physical NICs is MISSING with why, not FAIL at 0.
NicInfo physical_nics_not_visible(const std::vector<NicInfo>& seen) {
  std::string names;
  for (const auto& n : seen) names += (names.empty() ? "" : ", ") + n.name + " (" + n.kind + ")";
  const std::string why =
      "no physical NIC is visible here, only " + (names.empty() ? "no interface" : names) +
      ": a network namespace or container shows only its own interfaces (run outside it, or "
      "give it the NICs)";
  NicInfo n;
  n.name = "(physical NICs not visible)";
  n.kind = "not_visible";
  n.unknown["state"] = why;
  n.unknown["rate_gbps"] = why;
  return n;
}

std::vector<NicInfo> collect_nics(const std::string& fs_root, std::vector<std::string>& warnings) {
  std::vector<NicInfo> nics = ib_ports(fs_root);
  for (auto& n : ethernet_ifaces(fs_root, warnings)) nics.push_back(std::move(n));
  if (std::none_of(nics.begin(), nics.end(), [](const NicInfo& n) { return !n.is_virtual; }))
    nics.push_back(physical_nics_not_visible(nics));
  return nics;
}

std::vector<BlockDevice> collect_block_devices(const std::string& fs_root,
                                               std::vector<std::string>& warnings) {
  std::vector<BlockDevice> out;
  std::string cls = under(fs_root, "/sys/class/block");
  std::string why;
  auto names = list_dir(cls, &why);
  if (names.empty() && !why.empty()) {
    warnings.push_back("block: cannot list " + cls + ": " + why);
    return out;
  }
  for (const auto& name : names) {
    std::string d = cls + "/" + name;
    if (exists(d + "/partition")) continue;
    bool skip = false;
    for (const char* prefix : {"loop", "ram", "zram", "dm-", "md"})
      if (name.rfind(prefix, 0) == 0) skip = true;
    std::error_code ec;
    auto target = fs::read_symlink(d, ec);
    if (!ec && target.string().find("/devices/virtual/") != std::string::npos) skip = true;
    if (read_or_empty(d + "/hidden") == "1") skip = true;  // an NVMe multipath path
    if (skip) continue;

    BlockDevice b;
    b.name = name;
    b.nvme = name.rfind("nvme", 0) == 0;
    auto sectors = read_ll(d + "/size");
    if (!sectors) warnings.push_back("block: cannot read " + d + "/size");
    b.capacity_tb = static_cast<double>(sectors.value_or(0)) * 512.0 / 1e12;
    b.rotational = read_or_empty(d + "/queue/rotational") == "1";
    b.model = read_or_empty(d + "/device/model");
    b.serial = read_or_empty(d + "/device/serial");
    if (b.serial.empty()) b.serial = read_or_empty(d + "/serial");  // virtio-blk
    b.firmware = read_or_empty(d + (b.nvme ? "/device/firmware_rev" : "/device/rev"));
    out.push_back(std::move(b));
  }
  return out;
}

Tuning collect_tuning(const std::string& fs_root, std::vector<std::string>& warnings) {
  Tuning t;
  auto gov = read_text(under(fs_root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"));
  t.governor = gov && !gov->empty() ? *gov : "no cpufreq driver";

  auto number = [&](const std::string& abs, long long& field) {
    std::string path = under(fs_root, abs);
    std::string why;
    auto text = read_text(path, &why);
    auto v = text ? parse_ll(*text) : std::nullopt;
    if (v)
      field = *v;
    else
      warnings.push_back("tuning: cannot read " + path + (text ? ": not a number" : ": " + why));
  };
  auto words = [&](const std::string& abs, std::string& field) {
    std::string path = under(fs_root, abs);
    std::string why;
    auto text = read_text(path, &why);
    if (text)
      field = squeeze_spaces(*text);
    else
      warnings.push_back("tuning: cannot read " + path + ": " + why);
  };
  number("/proc/sys/vm/nr_hugepages", t.nr_hugepages);
  number("/proc/sys/net/core/rmem_max", t.net_core_rmem_max);
  number("/proc/sys/net/core/wmem_max", t.net_core_wmem_max);
  words("/proc/sys/net/ipv4/tcp_rmem", t.tcp_rmem);
  words("/proc/sys/net/ipv4/tcp_wmem", t.tcp_wmem);

  std::string thp_path = under(fs_root, "/sys/kernel/mm/transparent_hugepage/enabled");
  std::string why;
  if (auto thp = read_text(thp_path, &why)) {
    auto open = thp->find('['), close = thp->find(']');
    if (open != std::string::npos && close != std::string::npos && close > open)
      t.thp = thp->substr(open + 1, close - open - 1);
    else
      t.thp = *thp;
  } else {
    warnings.push_back("tuning: cannot read " + thp_path + ": " + why);
  }
  return t;
}

DmiInfo collect_dmi(const std::string& fs_root, std::vector<std::string>& warnings) {
  DmiInfo d;
  std::string dir = under(fs_root, "/sys/class/dmi/id");
  std::pair<const char*, std::string*> files[] = {
      {"sys_vendor", &d.sys_vendor},         {"product_name", &d.product_name},
      {"product_serial", &d.product_serial}, {"board_name", &d.board_name},
      {"board_serial", &d.board_serial},     {"chassis_serial", &d.chassis_serial},
      {"bios_version", &d.bios_version},     {"bios_date", &d.bios_date}};
  for (auto& [name, field] : files) {
    std::string path = dir + "/" + name;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      int err = errno;
      if (err == EACCES || err == EPERM)
        *field = kDmiUnreadable;
      else if (err != ENOENT)
        warnings.push_back("dmi: cannot read " + path + ": " + std::strerror(err));
      continue;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    *field = valid_utf8(trim(ss.str()));
  }
  return d;
}

std::optional<bool> acs_redirect_enabled(std::string_view config) {
  constexpr size_t kExtStart = 0x100;
  constexpr unsigned kAcsId = 0x000D;
  constexpr unsigned kRedirectBits = (1u << 2) | (1u << 3);  // P2P Request/Completion Redirect
  auto dword = [&](size_t off) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(config[off + i]);
    return v;
  };
  if (config.size() < kExtStart + 8) return std::nullopt;
  size_t off = kExtStart;
  for (int hops = 0; off >= kExtStart && off + 8 <= config.size() && hops < 1024; ++hops) {
    std::uint32_t header = dword(off);
    if (header == 0 || header == 0xFFFFFFFFu) break;
    if ((header & 0xFFFF) == kAcsId) {
      unsigned control = dword(off + 4) >> 16;  // ACS Control Register at +6
      return (control & kRedirectBits) != 0;
    }
    off = (header >> 20) & 0xFFC;
  }
  return false;
}

GpuDirectSettings collect_gpudirect(const std::string& fs_root,
                                    std::vector<std::string>& warnings) {
  GpuDirectSettings g;
  std::string cmdline_path = under(fs_root, "/proc/cmdline");
  std::string why;
  if (auto cmdline = read_text(cmdline_path, &why)) {
    std::istringstream in(*cmdline);
    std::string word;
    while (in >> word)
      if (word.find("iommu") != std::string::npos)
        g.iommu_cmdline += (g.iommu_cmdline.empty() ? "" : " ") + word;
  } else {
    warnings.push_back("gpudirect: cannot read " + cmdline_path + ": " + why);
  }
  std::string groups = under(fs_root, "/sys/kernel/iommu_groups");
  std::error_code ec;
  if (!fs::exists(groups, ec)) {
    g.iommu_groups = 0;
  } else {
    why.clear();
    auto names = list_dir(groups, &why);
    g.iommu_groups = why.empty() ? static_cast<int>(names.size()) : -1;
    if (!why.empty()) warnings.push_back("gpudirect: cannot list " + groups + ": " + why);
  }
  for (const char* module : {"nvidia_peermem", "nv_peer_mem"}) {
    if (exists(under(fs_root, std::string("/sys/module/") + module))) {
      g.peermem = module;
      break;
    }
  }
  std::string pci = under(fs_root, "/sys/bus/pci/devices");
  for (const auto& dev : list_dir(pci)) {
    auto cls = read_ll(pci + "/" + dev + "/class", 16);
    if (!cls || (*cls >> 8) != 0x0604) continue;  // PCI-to-PCI bridges (switch ports)
    auto config = read_raw(pci + "/" + dev + "/config");
    if (!config) continue;
    auto redirect = acs_redirect_enabled(*config);
    if (!redirect) continue;
    ++g.acs_bridges_checked;
    if (*redirect) g.acs_redirect.push_back(dev);
  }
  return g;
}

std::map<std::string, std::string> collect_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = kv.substr(0, eq);
    for (std::string_view prefix : {"NCCL_", "CUDA_", "UCX_", "OMPI_"}) {
      if (key.substr(0, prefix.size()) == prefix) {
        env.emplace(valid_utf8(key), valid_utf8(kv.substr(eq + 1)));
        break;
      }
    }
  }
  return env;
}

namespace {

/// The kernel release: /proc/sys/kernel/osrelease below the root, else uname on a live system.
std::string kernel_version(const std::string& root, std::vector<std::string>& w) {
  std::string why;
  if (auto rel = read_text(under(root, "/proc/sys/kernel/osrelease"), &why)) return *rel;
  struct utsname u {};
  if (is_live(root) && uname(&u) == 0) return u.release;
  w.push_back("versions: cannot read " + under(root, "/proc/sys/kernel/osrelease") + ": " + why);
  return "";
}

/// GPUs known from the PCI bus alone: what only NVML can tell (memory, NVLink) is unknown, with
/// why NVML could not be used.
void add_pci_gpus(EnvRecord& r, std::vector<GpuInfo> on_pci, const std::string& nvml_status) {
  r.gpu_status.nvml = nvml_status;
  r.gpus = std::move(on_pci);
  std::string why =
      nvml_status == "not queried" ? "NVML not queried" : "NVML not loaded: " + nvml_status;
  for (auto& g : r.gpus) {
    set_unknown(g.memory_gib, g.unknown, "memory_gib", why);
    set_unknown(g.nvlink_links_up, g.unknown, "nvlink_links_up", why);
  }
}

/// The GPUs: NVML's list where it works (NUMA nodes it cannot give taken from the PCI bus),
/// else the PCI bus's, with why in gpu_status.nvml.
void add_gpus(EnvRecord& r, std::vector<GpuInfo> on_pci, bool query_nvml) {
  if (!query_nvml) return add_pci_gpus(r, std::move(on_pci), "not queried");
  NvmlInventory nv = query_nvml_inventory();
  if (!nv.ok)
    return add_pci_gpus(r, std::move(on_pci), nv.status.empty() ? "NVML unavailable" : nv.status);
  r.gpu_status.nvml = "ok";
  r.versions.driver = nv.driver_version;
  r.versions.cuda_driver = nv.cuda_driver;
  r.gpus = std::move(nv.gpus);
  for (auto& g : r.gpus) {
    if (g.numa_node >= 0) continue;
    for (const auto& p : on_pci)
      if (normalize_bus_id(p.pci_bus_id) == normalize_bus_id(g.pci_bus_id))
        g.numa_node = p.numa_node;
  }
  if (r.gpus.size() != on_pci.size())
    r.warnings.push_back("gpus: NVML sees " + std::to_string(r.gpus.size()) +
                         " GPU(s), the PCI bus " + std::to_string(on_pci.size()));
}

/// Every string of `r` as valid UTF-8: besides the values read_text cleans, names listed from
/// directories (an interface or a disk) and hwloc's and NVML's strings are bytes. Rebuilt only
/// when some string was not.
void make_valid_utf8(EnvRecord& r) {
  json j = r;
  json clean = valid_utf8_json(j);
  if (clean != j) r = clean.get<EnvRecord>();
}

}  // namespace

EnvRecord collect_env(const InventoryOptions& opt) {
  EnvRecord r;
  auto& w = r.warnings;
  const std::string& root = opt.fs_root.empty() ? std::string("/") : opt.fs_root;
  r.fs_root = root;
  r.collected_at = utc_now_iso();

  if (!opt.host.empty())
    r.host = opt.host;
  else if (!is_live(root))
    r.host = read_or_empty(under(root, "/proc/sys/kernel/hostname"));
  else
    r.host = local_hostname();
  if (r.host.empty()) w.push_back("host: no host name");

  Topology topo(root, /*io=*/true, w);
  r.cpu = cpu_from_topology(topo, w);
  r.memory = collect_memory(root, w);
  std::vector<GpuInfo> on_pci = pci_gpus(root, topo, w);
  r.gpu_status.on_pci = static_cast<int>(on_pci.size());
  r.nics = collect_nics(root, w);
  r.block_devices = collect_block_devices(root, w);
  r.tuning = collect_tuning(root, w);
  r.dmi = collect_dmi(root, w);
  r.gpudirect = collect_gpudirect(root, w);
  r.environment = collect_environment();
  r.versions.kernel = kernel_version(root, w);
  if (opt.probe_tools && is_live(root)) r.versions.fio = probe_fio_version();
  // The software stack's libraries, commands and exporter are this process's, whatever the
  // root; its sockets and labels are read below the root (software.hpp).
  if (opt.probe_tools) r.software = collect_software({root, "", 20, 2});
  add_gpus(r, std::move(on_pci), opt.query_nvml);
  make_valid_utf8(r);
  return r;
}

}  // namespace clusterbench
