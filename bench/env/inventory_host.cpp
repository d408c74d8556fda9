// The host around the CPU and GPUs: block devices, tuning, DMI, what GPUDirect RDMA depends on,
// and the allow-listed environment (inventory.hpp).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "env/inventory_parts.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace clusterbench {

using namespace inventory;

namespace {

/// "a  b\tc" -> "a b c".
std::string squeeze_spaces(const std::string& s) {
  std::istringstream in(s);
  std::string word, out;
  while (in >> word) out += (out.empty() ? "" : " ") + word;
  return out;
}

/// The CPU frequency governor of every CPU (cpuN/cpufreq/scaling_governor): the one they share,
/// "no cpufreq driver" where none has one, else "mixed: performance on 62 CPUs, powersave on 2
/// (cpu3, cpu7)" (the CPUs of every governor but the most common, at most 4 named): half a
/// node's cores in powersave is not a node in performance.
std::string governor_of_every_cpu(const std::string& fs_root) {
  std::map<std::string, std::vector<int>> cpus;  // governor -> CPU numbers
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(under(fs_root, "/sys/devices/system/cpu"), ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 4 || name.rfind("cpu", 0) != 0 ||
        name.find_first_not_of("0123456789", 3) != std::string::npos)
      continue;
    auto gov = read_text((e.path() / "cpufreq" / "scaling_governor").string());
    if (gov && !gov->empty()) cpus[*gov].push_back(std::stoi(name.substr(3)));
  }
  if (cpus.empty()) return "no cpufreq driver";
  if (cpus.size() == 1) return cpus.begin()->first;
  auto most = std::max_element(cpus.begin(), cpus.end(), [](const auto& a, const auto& b) {
    return a.second.size() < b.second.size();
  });
  std::string out =
      "mixed: " + most->first + " on " + std::to_string(most->second.size()) + " CPUs";
  for (auto& [gov, list] : cpus) {
    if (gov == most->first) continue;
    std::sort(list.begin(), list.end());
    out += ", " + gov + " on " + std::to_string(list.size()) + " (";
    for (size_t i = 0; i < list.size() && i < 4; ++i)
      out += (i ? ", cpu" : "cpu") + std::to_string(list[i]);
    out += list.size() > 4 ? ", ...)" : ")";
  }
  return out;
}

}  // namespace

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
  t.governor = governor_of_every_cpu(fs_root);

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

}  // namespace clusterbench
