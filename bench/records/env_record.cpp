// EnvRecord <-> JSON (env_record.hpp), and the compatibility of env/1 records.
#include "records/env_record.hpp"

#include "records/json_fields.hpp"

namespace clusterbench {

using namespace json_fields;

#define CB_TO(field) put(j, #field, v.field)
#define CB_FROM(field) opt(j, #field, v.field)

void to_json(json& j, const CpuInfo& v) {
  CB_TO(model), CB_TO(sockets), CB_TO(physical_cores), CB_TO(threads), CB_TO(numa_nodes),
      CB_TO(source), CB_TO(base_mhz);
  put_unknown(j, v.unknown);
}
void from_json(const json& j, CpuInfo& v) {
  CB_FROM(model), CB_FROM(sockets), CB_FROM(physical_cores), CB_FROM(threads), CB_FROM(numa_nodes),
      CB_FROM(source), CB_FROM(base_mhz), CB_FROM(unknown);
}
void to_json(json& j, const MemoryInfo& v) {
  CB_TO(installed_gib), CB_TO(usable_gib), CB_TO(source), CB_TO(type), CB_TO(gpu_memory_ratio);
  put_unknown(j, v.unknown);
}
void from_json(const json& j, MemoryInfo& v) {
  CB_FROM(installed_gib), CB_FROM(usable_gib), CB_FROM(source), CB_FROM(type),
      CB_FROM(gpu_memory_ratio), CB_FROM(unknown);
}
void to_json(json& j, const PcieLink& v) {
  CB_TO(gen_current), CB_TO(gen_max), CB_TO(width_current), CB_TO(width_max);
}
void from_json(const json& j, PcieLink& v) {
  CB_FROM(gen_current), CB_FROM(gen_max), CB_FROM(width_current), CB_FROM(width_max);
}
void to_json(json& j, const GpuInfo& v) {
  CB_TO(index), CB_TO(name), CB_TO(uuid), CB_TO(serial), CB_TO(pci_bus_id), CB_TO(vbios),
      CB_TO(driver), CB_TO(pci_device_id), CB_TO(memory_gib), CB_TO(pcie), CB_TO(nvlink_links_up),
      CB_TO(ecc_mode), CB_TO(numa_node), CB_TO(source), CB_TO(board_part_number),
      CB_TO(persistence_mode), CB_TO(mig_mode);
  put_unknown(j, v.unknown);
}
void from_json(const json& j, GpuInfo& v) {
  CB_FROM(index), CB_FROM(name), CB_FROM(uuid), CB_FROM(serial), CB_FROM(pci_bus_id),
      CB_FROM(vbios), CB_FROM(driver), CB_FROM(pci_device_id), CB_FROM(memory_gib), CB_FROM(pcie),
      CB_FROM(nvlink_links_up), CB_FROM(ecc_mode), CB_FROM(numa_node), CB_FROM(source),
      CB_FROM(board_part_number), CB_FROM(persistence_mode), CB_FROM(mig_mode), CB_FROM(unknown);
}
void to_json(json& j, const NicInfo& v) {
  CB_TO(name), CB_TO(kind), CB_TO(link_layer), CB_TO(state), CB_TO(phys_state), CB_TO(rate_gbps),
      CB_TO(firmware), CB_TO(mtu), CB_TO(netdev), CB_TO(pci_bus_id), CB_TO(numa_node);
  j["virtual"] = v.is_virtual;
  put_unknown(j, v.unknown);
}
void from_json(const json& j, NicInfo& v) {
  CB_FROM(name), CB_FROM(kind), CB_FROM(link_layer), CB_FROM(state), CB_FROM(phys_state),
      CB_FROM(rate_gbps), CB_FROM(firmware), CB_FROM(mtu), CB_FROM(netdev), CB_FROM(pci_bus_id),
      CB_FROM(numa_node), CB_FROM(unknown);
  opt(j, "virtual", v.is_virtual);
}
void to_json(json& j, const BlockDevice& v) {
  CB_TO(name), CB_TO(model), CB_TO(serial), CB_TO(firmware), CB_TO(capacity_tb), CB_TO(nvme),
      CB_TO(rotational);
}
void from_json(const json& j, BlockDevice& v) {
  CB_FROM(name), CB_FROM(model), CB_FROM(serial), CB_FROM(firmware), CB_FROM(capacity_tb),
      CB_FROM(nvme), CB_FROM(rotational);
}
void to_json(json& j, const Versions& v) {
  CB_TO(driver), CB_TO(cuda_driver), CB_TO(cuda_runtime), CB_TO(cublas), CB_TO(nccl), CB_TO(mpi),
      CB_TO(fio), CB_TO(kernel), CB_TO(clusterbench);
}
void from_json(const json& j, Versions& v) {
  CB_FROM(driver), CB_FROM(cuda_driver), CB_FROM(cuda_runtime), CB_FROM(cublas), CB_FROM(nccl),
      CB_FROM(mpi), CB_FROM(fio), CB_FROM(kernel), CB_FROM(clusterbench);
}
void to_json(json& j, const Tuning& v) {
  CB_TO(governor), CB_TO(nr_hugepages), CB_TO(thp), CB_TO(net_core_rmem_max),
      CB_TO(net_core_wmem_max), CB_TO(tcp_rmem), CB_TO(tcp_wmem);
}
void from_json(const json& j, Tuning& v) {
  CB_FROM(governor), CB_FROM(nr_hugepages), CB_FROM(thp), CB_FROM(net_core_rmem_max),
      CB_FROM(net_core_wmem_max), CB_FROM(tcp_rmem), CB_FROM(tcp_wmem);
}
void to_json(json& j, const DmiInfo& v) {
  CB_TO(sys_vendor), CB_TO(product_name), CB_TO(product_serial), CB_TO(board_name),
      CB_TO(board_serial), CB_TO(chassis_serial), CB_TO(bios_version), CB_TO(bios_date);
}
void from_json(const json& j, DmiInfo& v) {
  CB_FROM(sys_vendor), CB_FROM(product_name), CB_FROM(product_serial), CB_FROM(board_name),
      CB_FROM(board_serial), CB_FROM(chassis_serial), CB_FROM(bios_version), CB_FROM(bios_date);
}
void to_json(json& j, const GpuDirectSettings& v) {
  CB_TO(iommu_cmdline), CB_TO(iommu_groups), CB_TO(peermem), CB_TO(acs_bridges_checked),
      CB_TO(acs_redirect);
}
void from_json(const json& j, GpuDirectSettings& v) {
  CB_FROM(iommu_cmdline), CB_FROM(iommu_groups), CB_FROM(peermem), CB_FROM(acs_bridges_checked),
      CB_FROM(acs_redirect);
}
std::string software_text(const SoftwareComponent& c) {
  if (c.state.empty()) return "unknown";
  return c.version ? *c.version : c.state;
}

std::vector<std::pair<std::string, std::string>> software_fields(const SoftwareStack& s) {
  const bool probed = !s.pytorch.state.empty();
  return {{"cudnn", software_text(s.cudnn)},
          {"nccl library", software_text(s.nccl)},
          {"pytorch", software_text(s.pytorch)},
          {"pytorch cuda", s.pytorch_cuda ? *s.pytorch_cuda
                           : probed       ? "none"
                                          : "unknown"},
          {"container toolkit", software_text(s.container_toolkit)},
          {"container runtime", software_text(s.container_runtime)},
          {"kubernetes", software_text(s.kubernetes)},
          {"device plugin", software_text(s.device_plugin)},
          {"gpu feature discovery", software_text(s.gpu_feature_discovery)},
          {"dcgm exporter", software_text(s.dcgm_exporter)},
          {"cuda toolkit", software_text(s.cuda_toolkit)},
          {"deepspeed", software_text(s.deepspeed)},
          {"os", software_text(s.os)}};
}

void to_json(json& j, const SoftwareComponent& v) {
  CB_TO(state), CB_TO(version), CB_TO(detail);
  put_unknown(j, v.unknown);
}
void from_json(const json& j, SoftwareComponent& v) {
  CB_FROM(state), CB_FROM(version), CB_FROM(detail), CB_FROM(unknown);
}
void to_json(json& j, const SoftwareStack& v) {
  CB_TO(cudnn), CB_TO(nccl), CB_TO(pytorch), CB_TO(pytorch_cuda), CB_TO(container_toolkit),
      CB_TO(container_runtime), CB_TO(kubernetes), CB_TO(device_plugin),
      CB_TO(gpu_feature_discovery), CB_TO(dcgm_exporter), CB_TO(nccl_env), CB_TO(cuda_toolkit),
      CB_TO(deepspeed), CB_TO(os);
  put_unknown(j, v.unknown);
}
void from_json(const json& j, SoftwareStack& v) {
  CB_FROM(cudnn), CB_FROM(nccl), CB_FROM(pytorch), CB_FROM(pytorch_cuda),
      CB_FROM(container_toolkit), CB_FROM(container_runtime), CB_FROM(kubernetes),
      CB_FROM(device_plugin), CB_FROM(gpu_feature_discovery), CB_FROM(dcgm_exporter),
      CB_FROM(nccl_env), CB_FROM(cuda_toolkit), CB_FROM(deepspeed), CB_FROM(os), CB_FROM(unknown);
}
void to_json(json& j, const GpuStatus& v) {
  CB_TO(on_pci), CB_TO(nvml), CB_TO(plugin), CB_TO(cuda_devices);
}
void from_json(const json& j, GpuStatus& v) {
  CB_FROM(on_pci), CB_FROM(nvml), CB_FROM(plugin), CB_FROM(cuda_devices);
}
void to_json(json& j, const EnvRecord& v) {
  CB_TO(schema), CB_TO(host), CB_TO(collected_at), CB_TO(fs_root), CB_TO(cpu), CB_TO(memory),
      CB_TO(gpus), CB_TO(gpu_status), CB_TO(nics), CB_TO(block_devices), CB_TO(versions),
      CB_TO(tuning), CB_TO(dmi), CB_TO(gpudirect), CB_TO(software), CB_TO(environment),
      CB_TO(warnings);
  if (!v.health.empty()) CB_TO(health);
}
namespace {
constexpr const char* kV1NotRead = "not read (0 in a clusterbench.env/1 record)";

/// An env/1 record wrote 0 for what it could not read (docs/design.md "Unknown is not zero"): a GPU
/// seen on the PCI bus only (no memory, no NVLink from NVML), installed memory with no source,
/// a NIC rate of -1 or unreadable. Those zeros are made unknown, so that no row judges them.
void env_v1_unknowns(EnvRecord& v) {
  for (auto& g : v.gpus) {
    if (g.source == "pci") {
      std::string why = "not read: GPU seen on the PCI bus only (NVML: " + v.gpu_status.nvml + ")";
      set_unknown(g.memory_gib, g.unknown, "memory_gib", why);
      set_unknown(g.nvlink_links_up, g.unknown, "nvlink_links_up", why);
    } else if (g.memory_gib == 0.0) {
      set_unknown(g.memory_gib, g.unknown, "memory_gib", kV1NotRead);
    }
  }
  MemoryInfo& m = v.memory;
  if (m.installed_gib == 0.0)
    set_unknown(m.installed_gib, m.unknown, "installed_gib", "not read: no source worked");
  if (m.usable_gib == 0.0) set_unknown(m.usable_gib, m.unknown, "usable_gib", kV1NotRead);
  for (auto& n : v.nics)
    if (n.rate_gbps == 0.0) set_unknown(n.rate_gbps, n.unknown, "rate_gbps", kV1NotRead);
}
}  // namespace

void from_json(const json& j, EnvRecord& v) {
  CB_FROM(schema), CB_FROM(host), CB_FROM(collected_at), CB_FROM(fs_root), CB_FROM(cpu),
      CB_FROM(memory), CB_FROM(gpus), CB_FROM(gpu_status), CB_FROM(nics), CB_FROM(block_devices),
      CB_FROM(versions), CB_FROM(tuning), CB_FROM(dmi), CB_FROM(gpudirect), CB_FROM(software),
      CB_FROM(environment), CB_FROM(warnings);
  CB_FROM(health);
  require_host_name(v.host, "env host");
  if (v.schema == kEnvSchemaV1) env_v1_unknowns(v);
}

#undef CB_TO
#undef CB_FROM

}  // namespace clusterbench
