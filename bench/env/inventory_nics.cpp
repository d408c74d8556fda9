// NICs: InfiniBand/RoCE ports and Ethernet interfaces, physical and virtual (inventory.hpp).
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "env/inventory_parts.hpp"

namespace fs = std::filesystem;

namespace clusterbench {

using namespace inventory;

namespace {

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

}  // namespace

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

}  // namespace clusterbench
