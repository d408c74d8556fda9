// Fleet uniformity (uniformity.hpp): per field, one pass over the nodes to make the values, one to
// count them, one to name the nodes that differ.
#include "reports/uniformity.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "reports/render.hpp"

namespace clusterbench::report {

namespace {

constexpr const char* kUnknown = "unknown";

std::string known(const std::string& s) { return s.empty() ? kUnknown : s; }

std::string known(long long v) { return v < 0 ? kUnknown : std::to_string(v); }

/// Distinct non-empty values, sorted, comma-separated; `none` when there are none.
std::string distinct(const std::vector<std::string>& values, const std::string& none) {
  std::set<std::string> s;
  for (const auto& v : values)
    if (!v.empty()) s.insert(v);
  if (s.empty()) return none;
  std::string out;
  for (const auto& v : s) out += (out.empty() ? "" : ", ") + v;
  return out;
}

/// A per-GPU mode: `good` when every GPU has it, else "<most> except gpuI=<v>, ...".
std::string gpu_mode(const EnvRecord& e, const std::string GpuInfo::*field,
                     const std::string& good) {
  if (e.gpus.empty()) return "no GPUs";
  std::string out;
  int unknown = 0;
  for (const auto& g : e.gpus) {
    const std::string& v = g.*field;
    if (v.empty()) ++unknown;
    if (v == good || v.empty()) continue;
    out += (out.empty() ? "" : ", ") + ("gpu" + std::to_string(g.index) + "=" + v);
  }
  if (unknown == static_cast<int>(e.gpus.size())) return kUnknown;
  return out.empty() ? good : good + " except " + out;
}

using FieldValue = std::function<std::string(const EnvRecord&)>;

struct FieldDef {
  const char* name;
  const char* group;
  const char* expected;
  FieldValue value;
};

FieldDef version(const char* name, std::string Versions::*field) {
  return {name, "versions", "", [field](const EnvRecord& e) { return known(e.versions.*field); }};
}

/// The i-th of software_fields (records.hpp): a version, or the component's state.
FieldDef software(const char* name, size_t i) {
  return {name, "versions", "",
          [i](const EnvRecord& e) { return software_fields(e.software)[i].second; }};
}

template <class T>
FieldDef tuning(const char* name, T Tuning::*field) {
  return {name, "tuning", "", [field](const EnvRecord& e) { return known(e.tuning.*field); }};
}

/// The distinct values of a per-GPU field; `none` on a node without GPUs.
FieldValue per_gpu(std::string GpuInfo::*field) {
  return [field](const EnvRecord& e) {
    std::vector<std::string> v;
    for (const auto& g : e.gpus) v.push_back(g.*field);
    return distinct(v, e.gpus.empty() ? "no GPUs" : kUnknown);
  };
}

std::vector<FieldDef> version_fields() {
  return {version("versions.driver", &Versions::driver),
          version("versions.cuda_driver", &Versions::cuda_driver),
          version("versions.cuda_runtime", &Versions::cuda_runtime),
          version("versions.cublas", &Versions::cublas),
          version("versions.nccl", &Versions::nccl),
          version("versions.mpi", &Versions::mpi),
          version("versions.kernel", &Versions::kernel),
          version("versions.clusterbench", &Versions::clusterbench),
          software("software.cudnn", 0),
          software("software.nccl", 1),
          software("software.pytorch", 2),
          software("software.pytorch_cuda", 3),
          software("software.container_toolkit", 4),
          software("software.container_runtime", 5),
          software("software.kubernetes", 6),
          software("software.device_plugin", 7),
          software("software.gpu_feature_discovery", 8),
          software("software.dcgm_exporter", 9)};
}

std::string platform_model(const EnvRecord& e) {
  std::string m = e.dmi.sys_vendor + " " + e.dmi.product_name;
  return m == " " ? std::string(kUnknown) : m;
}

std::string bios(const EnvRecord& e) {
  if (e.dmi.bios_version.empty()) return kUnknown;
  return e.dmi.bios_version + (e.dmi.bios_date.empty() ? "" : " (" + e.dmi.bios_date + ")");
}

/// Physical NICs' firmware (virtual interfaces have none).
std::string nic_firmware(const EnvRecord& e) {
  std::vector<std::string> v;
  for (const auto& n : e.nics)
    if (n.physical()) v.push_back(n.firmware);
  return distinct(v, v.empty() ? "no NICs" : kUnknown);
}

std::string nvme_firmware(const EnvRecord& e) {
  std::vector<std::string> v;
  bool any = false;
  for (const auto& b : e.block_devices) {
    if (!b.nvme) continue;
    any = true;
    v.push_back(b.model + " " + known(b.firmware));
  }
  return distinct(v, any ? kUnknown : "no NVMe");
}

std::vector<FieldDef> firmware_fields() {
  return {{"platform.model", "firmware", "", platform_model},
          {"firmware.bios", "firmware", "", bios},
          {"firmware.gpu_vbios", "firmware", "", per_gpu(&GpuInfo::vbios)},
          {"firmware.gpu_board_part_number", "firmware", "", per_gpu(&GpuInfo::board_part_number)},
          {"firmware.nic", "firmware", "", nic_firmware},
          {"firmware.nvme", "firmware", "", nvme_firmware}};
}

std::vector<FieldDef> tuning_fields() {
  return {tuning("tuning.governor", &Tuning::governor),
          tuning("tuning.nr_hugepages", &Tuning::nr_hugepages),
          tuning("tuning.thp", &Tuning::thp),
          tuning("tuning.net_core_rmem_max", &Tuning::net_core_rmem_max),
          tuning("tuning.net_core_wmem_max", &Tuning::net_core_wmem_max),
          tuning("tuning.tcp_rmem", &Tuning::tcp_rmem),
          tuning("tuning.tcp_wmem", &Tuning::tcp_wmem)};
}

std::string gpu_models(const EnvRecord& e) {
  std::vector<std::string> v;
  for (const auto& g : e.gpus) v.push_back(known(g.name));
  std::string out = std::to_string(e.gpus.size()) + " GPU(s)";
  return e.gpus.empty() ? out : out + ": " + distinct(v, kUnknown);
}

/// NUMA node of each GPU in index order: "0 0 0 0 1 1 1 1".
std::string gpu_numa(const EnvRecord& e) {
  std::string out;
  for (const auto& g : e.gpus)
    out += (out.empty() ? "" : " ") + (g.numa_node < 0 ? "?" : std::to_string(g.numa_node));
  return out.empty() ? "no GPUs" : out;
}

/// IB/RoCE ports (the GPU fabric) and their NUMA node: "mlx5_0/1:0 mlx5_1/1:1".
std::string nic_numa(const EnvRecord& e) {
  std::string out;
  for (const auto& n : e.nics) {
    if (n.kind != "ib_port") continue;
    out += (out.empty() ? "" : " ") + n.name + ":" +
           (n.numa_node < 0 ? "?" : std::to_string(n.numa_node));
  }
  return out.empty() ? "no IB/RoCE ports" : out;
}

std::string iommu_cmdline(const EnvRecord& e) {
  return e.gpudirect.iommu_cmdline.empty() ? "none" : e.gpudirect.iommu_cmdline;
}

std::string iommu(const EnvRecord& e) {
  int g = e.gpudirect.iommu_groups;
  return g < 0 ? kUnknown : g == 0 ? "no IOMMU groups" : "IOMMU groups present";
}

std::string acs(const EnvRecord& e) {
  const auto& d = e.gpudirect;
  if (d.acs_bridges_checked == 0) return kUnknown;
  if (d.acs_redirect.empty()) return "no P2P redirect";
  std::string out = "P2P redirect on";
  for (const auto& b : d.acs_redirect) out += " " + b;
  return out;
}

std::string peermem(const EnvRecord& e) {
  return e.gpudirect.peermem.empty() ? std::string("not loaded") : e.gpudirect.peermem;
}

std::vector<FieldDef> placement_fields() {
  return {{"affinity.gpus", "affinity", "", gpu_models},
          {"affinity.gpu_numa", "affinity", "", gpu_numa},
          {"affinity.nic_numa", "affinity", "", nic_numa},
          {"gpudirect.iommu_cmdline", "gpudirect", "", iommu_cmdline},
          {"gpudirect.iommu", "gpudirect", "", iommu},
          {"gpudirect.acs", "gpudirect", "", acs},
          {"gpudirect.peermem", "gpudirect", "", peermem},
          {"gpu.persistence_mode", "gpu", "enabled",
           [](const EnvRecord& e) { return gpu_mode(e, &GpuInfo::persistence_mode, "enabled"); }},
          {"gpu.mig_mode", "gpu", "disabled",
           [](const EnvRecord& e) { return gpu_mode(e, &GpuInfo::mig_mode, "disabled"); }}};
}

/// Every field, in report order: a table of data, one entry per field.
const std::vector<FieldDef>& field_defs() {
  static const std::vector<FieldDef> defs = [] {
    std::vector<FieldDef> all;
    for (auto part : {version_fields(), firmware_fields(), tuning_fields(), placement_fields()})
      all.insert(all.end(), part.begin(), part.end());
    return all;
  }();
  return defs;
}

/// A value that says nothing about the expected setting: it is judged by the majority only.
bool judged_against_expected(const std::string& value) {
  return value != kUnknown && value != "no GPUs";
}

}  // namespace

std::vector<std::string> uniformity_field_names() {
  std::vector<std::string> names;
  for (const auto& d : field_defs()) names.push_back(d.name);
  return names;
}

Uniformity check_uniformity(const std::vector<EnvRecord>& env) {
  Uniformity u;
  std::vector<char> differs(env.size(), 0);
  std::vector<std::string> values(env.size());
  for (const auto& def : field_defs()) {
    UniformityField f;
    f.name = def.name;
    f.group = def.group;
    f.expected = def.expected;
    f.nodes = static_cast<int>(env.size());
    std::unordered_map<std::string, int> counts;
    for (size_t i = 0; i < env.size(); ++i) ++counts[values[i] = def.value(env[i])];
    int best = 0;
    for (size_t i = 0; i < env.size(); ++i) {
      int c = counts[values[i]];
      if (c > best) best = c, f.reference = values[i];
    }
    f.agreeing = best;
    f.majority = 2 * best > f.nodes;
    for (size_t i = 0; i < env.size(); ++i) {
      const std::string& v = values[i];
      bool off_majority = v != f.reference;
      bool off_expected = !f.expected.empty() && v != f.expected && judged_against_expected(v);
      if (!off_majority && !off_expected) continue;
      std::string reason;
      if (off_majority)
        reason = "differs from " + std::to_string(best) + " of " + std::to_string(f.nodes) +
                 " nodes" + (f.majority ? "" : " (no majority)");
      if (off_expected) reason += (reason.empty() ? "" : "; ") + ("expected " + f.expected);
      f.deviations.push_back({env[i].host, f.name, v, f.reference, reason});
      differs[i] = 1;
    }
    u.deviations.insert(u.deviations.end(), f.deviations.begin(), f.deviations.end());
    u.fields.push_back(std::move(f));
  }
  for (size_t i = 0; i < env.size(); ++i)
    if (differs[i]) u.hosts.push_back(env[i].host);
  return u;
}

}  // namespace clusterbench::report
