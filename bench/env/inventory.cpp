// Env collectors (inventory.hpp). Every file is read below fs_root; a file that is missing or
// unreadable leaves its field at the default and, where the field matters, adds a warning. The
// collectors of each part are in inventory_{cpu,memory,nics,host}.cpp, over sysfs.hpp.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "env/inventory_parts.hpp"
#include "env/nvml.hpp"
#include "env/software.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

using namespace inventory;

namespace {

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

/// "00000000:17:00.0" (NVML) and "0000:17:00.0" (sysfs) -> "0000:17:00.0".
std::string normalize_bus_id(std::string id) {
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto colon = id.find(':');
  if (colon != std::string::npos && colon > 4 && id.find(':', colon + 1) != std::string::npos)
    id = id.substr(colon - 4);
  return id;
}

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

  std::vector<GpuInfo> on_pci;
  r.cpu = cpu_and_pci_gpus(root, on_pci, w);
  collect_cpu_base_clock(root, r.cpu);
  r.memory = collect_memory(root, w);
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
  set_gpu_memory_ratio(r);
  make_valid_utf8(r);
  return r;
}

}  // namespace clusterbench
