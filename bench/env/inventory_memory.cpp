// Installed and usable memory: DMI type 17, else memory blocks, else MemTotal (inventory.hpp).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>

#include "env/inventory_parts.hpp"

namespace clusterbench {

using namespace inventory;

namespace {

struct DmiSum {
  std::uint64_t bytes = 0;
  int devices = 0, unknown = 0;
};

/// Sum of the type 17 entries; nullopt (with a warning) when there are none readable. `types`:
/// the memory types of the populated slots.
std::optional<std::uint64_t> dmi_installed(const std::string& fs_root,
                                           std::vector<std::string>& warnings,
                                           std::set<std::string>& types) {
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
    if (bytes && *bytes > 0) types.insert(dmi_memory_type(*raw));
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

}  // namespace

std::string dmi_memory_type(std::string_view raw) {
  // DSP0134 7.18.2, Memory Device — Type: the DRAM generations a server carries.
  static const std::map<unsigned, std::string> kTypes = {
      {0x12, "DDR"},    {0x13, "DDR2"},   {0x18, "DDR3"},   {0x1A, "DDR4"}, {0x1B, "LPDDR"},
      {0x1C, "LPDDR2"}, {0x1D, "LPDDR3"}, {0x1E, "LPDDR4"}, {0x20, "HBM"},  {0x21, "HBM2"},
      {0x22, "DDR5"},   {0x23, "LPDDR5"}, {0x24, "HBM3"}};
  if (raw.size() < 0x13 || static_cast<unsigned char>(raw[0]) != 17 ||
      static_cast<unsigned char>(raw[1]) < 0x13)
    return "unknown";
  auto it = kTypes.find(static_cast<unsigned char>(raw[0x12]));
  return it == kTypes.end() ? "unknown" : it->second;
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
  std::set<std::string> types;
  auto dmi = dmi_installed(fs_root, warnings, types);
  types.erase("unknown");
  if (types.size() == 1) {
    m.type = *types.begin();
  } else if (types.size() > 1) {
    std::string mixed;
    for (const auto& t : types) mixed += (mixed.empty() ? "mixed: " : ", ") + t;
    m.type = mixed;
  } else {
    set_unknown(m.type, m.unknown, "type",
                dmi ? "DMI type 17 names no memory type of a populated slot"
                    : "not read: no readable DMI type 17 entry (" + warnings.back() + ")");
  }
  if (dmi) {
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

void set_gpu_memory_ratio(EnvRecord& r) {
  MemoryInfo& m = r.memory;
  auto unknown = [&](const std::string& why) {
    set_unknown(m.gpu_memory_ratio, m.unknown, "gpu_memory_ratio", why);
  };
  if (r.gpus.empty()) return unknown("no GPU on this node");
  if (!m.installed_gib) return unknown("installed host memory not read");
  double gpu_gib = 0;
  for (const auto& g : r.gpus) {
    if (!g.memory_gib) return unknown("GPU " + std::to_string(g.index) + "'s memory not read");
    gpu_gib += *g.memory_gib;
  }
  if (gpu_gib <= 0) return unknown("the GPUs report no memory");
  m.gpu_memory_ratio = *m.installed_gib / gpu_gib;
}

}  // namespace clusterbench
