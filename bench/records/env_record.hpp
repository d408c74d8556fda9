// EnvRecord: what a node is (one per node, in run.json), and its JSON (docs/records.md
// "EnvRecord").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "records/json_io.hpp"
#include "records/schema.hpp"

namespace clusterbench {

/// Fields of one env object that could not be read, by path relative to the object ("memory_gib",
/// "pcie/width_current"), each with why ("NVML not loaded: Driver Not Loaded"). Such a field is
/// null in JSON; a spec row over it is MISSING with this reason (docs/design.md "Unknown is not
/// zero").
using UnknownFields = std::map<std::string, std::string>;

/// Makes `field` unknown: it becomes null in JSON, and `unknown[name]` says `why`.
template <typename T>
void set_unknown(std::optional<T>& field, UnknownFields& unknown, const std::string& name,
                 const std::string& why) {
  field.reset();
  unknown[name] = why;
}

/// The node's processors as hwloc counts them.
struct CpuInfo {
  std::string model;
  int sockets = 0;
  int physical_cores = 0;  ///< cores as vendors count them, not hardware threads
  int threads = 0;         ///< logical CPUs
  int numa_nodes = 0;
  std::string source;  ///< "hwloc"
  /// The processors' base clock, MHz: SMBIOS type 4 "Current Speed" (the lowest of the populated
  /// sockets), else cpufreq's base_frequency; null when neither was read.
  std::optional<double> base_mhz;
  UnknownFields unknown;  ///< why base_mhz is null
};

/// Installed and usable memory, with the source of the installed figure.
struct MemoryInfo {
  std::optional<double> installed_gib;  ///< GiB installed, from `source`; null: no source worked
  std::optional<double> usable_gib;     ///< GiB usable (MemTotal); null: MemTotal not read
  std::string source;                   ///< "dmi" (type 17), "memory_blocks", "meminfo" or ""
  /// The DIMMs' memory type from SMBIOS type 17 ("DDR5", "DDR4"; "mixed: DDR4, DDR5" when the
  /// populated slots differ); null when DMI was not read.
  std::optional<std::string> type;
  /// Installed host memory over the GPUs' memory summed (1.0: as much host memory as GPU
  /// memory); null on a node without GPUs or when either side was not read.
  std::optional<double> gpu_memory_ratio;
  UnknownFields unknown;  ///< why installed_gib / usable_gib / type / gpu_memory_ratio are null
};

/// A PCIe link's generation and width, current and maximum (0: unknown).
struct PcieLink {
  int gen_current = 0, gen_max = 0;
  int width_current = 0, width_max = 0;
};

/// One GPU, from NVML or, without it, from the PCI bus.
struct GpuInfo {
  int index = 0;     ///< NVML index, or order on the PCI bus
  std::string name;  ///< NVML name, or "NVIDIA <pci device id>" when seen on PCI only
  std::string uuid, serial, pci_bus_id, vbios, driver;
  std::string pci_device_id;         ///< e.g. "0x2330"
  std::optional<double> memory_gib;  ///< NVML memory.total / 2^30; null when not read
  PcieLink pcie;
  std::optional<int> nvlink_links_up;  ///< NVLink links active; null when not read
  std::string ecc_mode;                ///< "enabled", "disabled" or "" (unknown)
  int numa_node = -1;
  std::string source;             ///< "nvml" or "pci"
  std::string board_part_number;  ///< nvmlDeviceGetBoardPartNumber, "" unknown
  std::string persistence_mode;   ///< "enabled", "disabled" or "" (unknown)
  std::string mig_mode;           ///< current MIG mode: "enabled", "disabled" or "" (unsupported)
  UnknownFields unknown;          ///< why memory_gib / nvlink_links_up are null
};

/// One NIC port or network interface (IB/RoCE port, Ethernet, virtual).
struct NicInfo {
  std::string name;  ///< "mlx5_0/1" for IB/RoCE ports, interface name for Ethernet
  /// "ib_port", "ethernet", or for a virtual interface its type: "veth", "bridge", "macvlan",
  /// "bond", "vlan", ... ("virtual" when it cannot be told)
  std::string kind;
  std::string link_layer;  ///< "InfiniBand", "Ethernet"
  std::string state, phys_state;
  std::optional<double> rate_gbps;  ///< Gb/s; null when unknown (link down, virtual)
  std::string firmware;
  int mtu = 0;
  std::string netdev;      ///< associated interface, if any
  std::string pci_bus_id;  ///< the PCI function behind it ("0000:1a:00.0"), "" if virtual
  int numa_node = -1;      ///< its device's numa_node, -1 if unknown
  /// A virtual interface (no device behind it: veth, bridge, macvlan, ...); JSON `virtual`.
  /// Such interfaces may carry MPI/NCCL traffic, but are not physical NICs.
  bool is_virtual = false;
  UnknownFields unknown;  ///< why rate_gbps is null
  /// A physical port: neither virtual nor the entry (kind "not_visible") that stands for the
  /// physical NICs a network namespace hides.
  bool physical() const { return !is_virtual && kind != "not_visible"; }
};

/// One whole disk of /sys/class/block.
struct BlockDevice {
  std::string name, model, serial, firmware;
  double capacity_tb = 0;  ///< 1e12 bytes
  bool nvme = false;
  bool rotational = false;
};

/// Versions of the driver, libraries, tools and clusterbench itself ("" when unknown).
struct Versions {
  std::string driver, cuda_driver, cuda_runtime, cublas, nccl, mpi, fio, kernel, clusterbench;
};

/// The host tuning the cluster architecture guide asks for, as found.
struct Tuning {
  std::string governor;  ///< e.g. "performance", or "no cpufreq driver"
  long long nr_hugepages = -1;
  std::string thp;  ///< the selected value of transparent_hugepage/enabled
  long long net_core_rmem_max = -1, net_core_wmem_max = -1;
  std::string tcp_rmem, tcp_wmem;  ///< "min default max" as in /proc/sys
};

/// /sys/class/dmi/id. A file that exists but cannot be read (serials are root-only) holds
/// kDmiUnreadable; one that does not exist holds "".
struct DmiInfo {
  std::string sys_vendor, product_name, product_serial, board_name, board_serial, chassis_serial,
      bios_version, bios_date;
};
inline constexpr const char* kDmiUnreadable = "unreadable";

/// What GPUDirect RDMA depends on: IOMMU, PCIe ACS and the peer-memory module.
struct GpuDirectSettings {
  std::string iommu_cmdline;    ///< iommu-related /proc/cmdline words ("intel_iommu=on iommu=pt")
  int iommu_groups = -1;        ///< entries of /sys/kernel/iommu_groups; -1 unreadable
  std::string peermem;          ///< loaded module: "nvidia_peermem", "nv_peer_mem" or "" (none)
  int acs_bridges_checked = 0;  ///< PCI bridges whose extended config space could be read
  /// Bridges with ACS P2P Request or Completion Redirect enabled (they route GPU<->NIC P2P
  /// through the root complex), by bus id.
  std::vector<std::string> acs_redirect;
};

/// One piece of a node's software stack (bench/env/software.hpp).
struct SoftwareComponent {
  /// "present" or "absent" (a library, a tool); "up" or "down" (a service); "not applicable"
  /// (the device plugin and container toolkit on a node without Kubernetes); "" not probed
  /// (unknown: a row over it is MISSING).
  std::string state;
  std::optional<std::string> version;  ///< null when absent or when it does not say
  std::string detail;                  ///< how it was found ("libcudnn.so.9"), or why not
  /// Why `version` is null: "absent: ...", "not applicable: ..." (a row over it does not apply),
  /// or why a present component's version was not found.
  UnknownFields unknown;
};

/// One line for a component, for tables and diffs: its version where it has one, else its state
/// ("present", "absent", "up", "not applicable"), "unknown" when not probed.
std::string software_text(const SoftwareComponent& c);

/// The seed guide's software list on one node, beyond versions.driver/cuda_driver.
struct SoftwareStack {
  SoftwareComponent cudnn, nccl, pytorch, container_toolkit, container_runtime, kubernetes,
      device_plugin, gpu_feature_discovery, dcgm_exporter;
  SoftwareComponent cuda_toolkit;  ///< the installed toolkit (/usr/local/cuda), not the driver's
  SoftwareComponent deepspeed;     ///< the Python package's version (its distribution metadata)
  /// The operating system: version "ubuntu 22.04" (os-release ID and VERSION_ID, below fs_root),
  /// detail its PRETTY_NAME.
  SoftwareComponent os;
  std::optional<std::string> pytorch_cuda;  ///< torch.version.cuda ("12.1"); null: none or CPU
  /// NCCL_IB_DISABLE and NCCL_SOCKET_IFNAME as the run's processes see them, "unset" when not set.
  std::map<std::string, std::string> nccl_env;
  UnknownFields unknown;  ///< why pytorch_cuda is null
};

/// (name, software_text) of every component and the CUDA PyTorch was built for, in a fixed order:
/// "cudnn", "nccl library", "pytorch", "pytorch cuda", "container toolkit", "container runtime",
/// "kubernetes", "device plugin", "gpu feature discovery", "dcgm exporter", "cuda toolkit",
/// "deepspeed", "os".
std::vector<std::pair<std::string, std::string>> software_fields(const SoftwareStack& s);

/// Status of the GPU stack on a node: decides waived vs failed for GPU cases.
struct GpuStatus {
  int on_pci = 0;        ///< NVIDIA display/3D controllers on the PCI bus
  std::string nvml;      ///< "ok" or the reason NVML could not be used
  std::string plugin;    ///< "ok", "not built", or the dlopen/CUDA error text
  int cuda_devices = 0;  ///< devices the plugin saw
};

/// What a node is: one per node, in run.json (docs/records.md "EnvRecord").
struct EnvRecord {
  std::string schema = kEnvSchema;
  std::string host;
  std::string collected_at;  ///< ISO 8601 UTC
  std::string fs_root;       ///< "/" on a live system
  CpuInfo cpu;
  MemoryInfo memory;
  std::vector<GpuInfo> gpus;
  GpuStatus gpu_status;
  std::vector<NicInfo> nics;
  std::vector<BlockDevice> block_devices;
  Versions versions;
  Tuning tuning;
  DmiInfo dmi;
  GpuDirectSettings gpudirect;
  SoftwareStack software;  ///< every state "" in records written before it existed
  std::map<std::string, std::string> environment;  ///< allow-listed variables only
  std::vector<std::string> warnings;               ///< what could not be read, and why
  /// Health counter snapshots (docs/health.md): {"start": ..., "end": ...}, each a
  /// clusterbench.health/1 object (bench/env/health.hpp); {} when not collected (older runs).
  json health = json::object();
};

/// JSON conversion (nlohmann ADL hooks): field by field, absent fields keeping their defaults.
void to_json(json& j, const CpuInfo& v);
void from_json(const json& j, CpuInfo& v);
void to_json(json& j, const MemoryInfo& v);
void from_json(const json& j, MemoryInfo& v);
void to_json(json& j, const PcieLink& v);
void from_json(const json& j, PcieLink& v);
void to_json(json& j, const GpuInfo& v);
void from_json(const json& j, GpuInfo& v);
void to_json(json& j, const NicInfo& v);
void from_json(const json& j, NicInfo& v);
void to_json(json& j, const BlockDevice& v);
void from_json(const json& j, BlockDevice& v);
void to_json(json& j, const Versions& v);
void from_json(const json& j, Versions& v);
void to_json(json& j, const Tuning& v);
void from_json(const json& j, Tuning& v);
void to_json(json& j, const DmiInfo& v);
void from_json(const json& j, DmiInfo& v);
void to_json(json& j, const GpuDirectSettings& v);
void from_json(const json& j, GpuDirectSettings& v);
void to_json(json& j, const SoftwareComponent& v);
void from_json(const json& j, SoftwareComponent& v);
void to_json(json& j, const SoftwareStack& v);
void from_json(const json& j, SoftwareStack& v);
void to_json(json& j, const GpuStatus& v);
void from_json(const json& j, GpuStatus& v);
void to_json(json& j, const EnvRecord& v);
void from_json(const json& j, EnvRecord& v);

}  // namespace clusterbench
