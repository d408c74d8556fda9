// Env collectors: the EnvRecord of one node. hwloc supplies CPU, NUMA and PCI; /sys, /proc and /dev
// are read below `fs_root` (HWLOC_FSROOT's convention), so tests run on fixture trees
// (tests/fixtures/fsroot, written by tests/fixtures/make_fsroot.py).
//
// A topology loaded below an fs_root other than "/" is "not this system": hwloc's CPUID (x86),
// libpciaccess (pci) and GPU-API components are disabled for it, since they would describe the
// live machine; PCI then comes from hwloc's own /sys/bus/pci reader below the root. Such a
// topology cannot bind threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "records/records.hpp"

namespace clusterbench {

struct InventoryOptions {
  std::string fs_root = "/";  ///< root of /sys, /proc, /dev; "/" is this system
  std::string host;           ///< host name to record (the MPI context's)
  bool query_nvml = true;     ///< dlopen NVML (CLUSTERBENCH_NVML_LIB overrides the library path)
  /// run `fio --version` (only when fs_root is "/") and the software stack's probes
  /// (env/software.hpp: its files below fs_root)
  bool probe_tools = true;
};

/// Collects everything of docs/design.md's EnvRecord that is readable; what is not readable is left
/// at its default and explained in `warnings`. Never throws for a missing file.
/// GPUs: NVML's list when opt.query_nvml and NVML works (source "nvml"; a GPU whose NUMA node
/// NVML left at -1 takes the one of the same bus id on PCI), else the PCI list, with NVML's
/// reason in gpu_status.nvml ("not queried" when opt.query_nvml is false) and memory_gib and
/// nvlink_links_up unknown ("NVML not loaded: <reason>", "NVML not queried"). gpu_status.on_pci
/// counts the PCI list either way. versions.driver / cuda_driver come from NVML; versions.kernel
/// from /proc/sys/kernel/osrelease; versions.fio from `fio --version` without its "fio-" prefix.
/// versions.mpi, cuda_runtime, cublas, nccl and clusterbench are left to the caller.
/// Host: opt.host, else /proc/sys/kernel/hostname below fs_root when fs_root is not "/", else
/// gethostname(). Loads hwloc once (with I/O discovery). Not thread-safe against other hwloc loads
/// in the process while fs_root is not "/" (HWLOC_FSROOT is set for the duration of the load).
EnvRecord collect_env(const InventoryOptions& opt);

/// CPU model (the first package's CPUModel info), sockets (PACKAGE objects), physical cores (CORE
/// objects, not hardware threads), threads (PU objects) and NUMA nodes: hwloc, loaded with
/// HWLOC_FSROOT=fs_root when fs_root is not "/", disallowed CPUs included (a cgroup does not
/// shrink the node). All counts stay 0 when hwloc cannot load (with a warning).
CpuInfo collect_cpu(const std::string& fs_root, std::vector<std::string>& warnings);

/// Memory installed and usable, in GiB (2^30 B). installed: the first source that works of
///   "dmi":           the sum of SMBIOS type 17 sizes in /sys/firmware/dmi/entries/17-*/raw
///                    (root-only on a live system; see dmi_memory_device_bytes),
///   "memory_blocks": /sys/devices/system/memory/block_size_bytes (hex) x memoryN blocks whose
///                    state is "online" (a block without a state file counts),
///   "meminfo":       MemTotal of /proc/meminfo.
/// usable: MemTotal. `source` names the installed source. When no source works, installed_gib
/// is unknown (null) with every source's failure in `unknown`; so is usable_gib without MemTotal.
MemoryInfo collect_memory(const std::string& fs_root, std::vector<std::string>& warnings);

/// Size of one SMBIOS type 17 (Memory Device) structure, in bytes (DSP0134 7.18.5): the Size WORD
/// at 0x0C is MiB, or KiB when bit 15 is set; 0x7FFF means the Extended Size DWORD at 0x1C
/// (bits 30:0, MiB). Returns 0 for an empty slot (Size 0), nullopt for an unknown size (0xFFFF) or
/// a structure too short or not of type 17.
std::optional<std::uint64_t> dmi_memory_device_bytes(std::string_view raw);

/// The memory type of one SMBIOS type 17 structure (DSP0134 7.18.2, the byte at 0x12): "DDR4",
/// "DDR5", "LPDDR5", "HBM3", ...; "unknown" for another code or a structure too short.
std::string dmi_memory_type(std::string_view raw);

/// The processors' base clock in MHz (SMBIOS type 4 "Current Speed", the WORD at 0x16, of the
/// populated sockets: the lowest), else /sys/devices/system/cpu/cpu0/cpufreq/base_frequency
/// (kHz); null in `cpu.base_mhz` with the reason in cpu.unknown when neither is readable.
void collect_cpu_base_clock(const std::string& fs_root, CpuInfo& cpu);

/// Installed host memory over the GPUs' memory summed, into r.memory.gpu_memory_ratio (null with
/// the reason when the node has no GPU or either side is unknown).
void set_gpu_memory_ratio(EnvRecord& r);

/// NVIDIA GPUs seen on the PCI bus (vendor 0x10de, class 0x0300xx VGA or 0x0302xx 3D), in bus
/// order, from hwloc's PCI objects (I/O filter KEEP_IMPORTANT); /sys/bus/pci/devices is read
/// directly when hwloc cannot load or sees no PCI device. source = "pci", name "NVIDIA <device
/// id>", pci_bus_id "0000:17:00.0" (sysfs form, 4-digit domain), pci_device_id "0x2330"; numa_node
/// and the PCIe link from the device's sysfs numa_node, {current,max}_link_{speed,width}.
std::vector<GpuInfo> collect_pci_gpus(const std::string& fs_root,
                                      std::vector<std::string>& warnings);

/// PCIe generation of a sysfs link speed ("32.0 GT/s PCIe" -> 5): 2.5 -> 1, 5 -> 2, 8 -> 3,
/// 16 -> 4, 32 -> 5, 64 -> 6; 0 when unknown ("Unknown", empty).
int pcie_gen_from_speed(std::string_view speed);

/// NICs: IB/RoCE ports first, then physical Ethernet interfaces, then virtual ones, each group
/// sorted by name.
///   ib_port:  /sys/class/infiniband/<dev>/ports/<n>: name "<dev>/<n>", rate_gbps from rate
///             ("200 Gb/sec (4X HDR)" -> 200; unknown when unreadable), state / phys_state
///             without their number ("4: ACTIVE" -> "ACTIVE"), link_layer, firmware =
///             <dev>/fw_ver, netdev = the interface in <dev>/device/net whose dev_port is n-1
///             (its mtu is the port's).
///   ethernet: /sys/class/net/<if> with a `device` link (physical) and type 1 (ARPHRD_ETHER):
///             rate_gbps = speed (Mb/s) / 1000, unknown (null, with why in `unknown`) when the
///             speed is -1 or unreadable; state = operstate. firmware: ethtool's GDRVINFO
///             fw_version, on the live system only.
///   Both:     pci_bus_id = the last PCI address in the resolved `device` path; numa_node = the
///             device's numa_node (-1 unknown).
///   virtual:  type 1 interfaces without a device link (veth, bridge, macvlan, bond, vlan,
///             docker0): is_virtual, kind = the type (ethtool's driver on the live system, else
///             from sysfs; "virtual" when it cannot be told), rate_gbps unknown, state =
///             operstate, netdev = the name. They may carry MPI/NCCL traffic (netns clusters,
///             containers); rows about physical NICs leave them out with `"/virtual": false`.
///   Left out: loopback and other types (IPoIB is the IB port's netdev; tunnels, tun).
std::vector<NicInfo> collect_nics(const std::string& fs_root, std::vector<std::string>& warnings);

/// Whole block devices (/sys/class/block without a `partition` file), sorted by name, capacity in
/// decimal TB (size [512-byte sectors] * 512 / 1e12). Left out: loop*, ram*, zram*, dm-*, md*,
/// devices below /sys/devices/virtual, hidden NVMe multipath paths. model / serial / firmware:
/// device/{model,serial,firmware_rev} (NVMe), else device/{model,rev} with the serial from
/// device/serial or the disk's own serial file; trimmed. nvme = name starts with "nvme";
/// rotational = queue/rotational.
std::vector<BlockDevice> collect_block_devices(const std::string& fs_root,
                                               std::vector<std::string>& warnings);

/// Governor of cpu0 (or "no cpufreq driver"), vm.nr_hugepages, THP (the bracketed value of
/// transparent_hugepage/enabled), net.core.{r,w}mem_max and net.ipv4.tcp_{r,w}mem (whitespace
/// runs made single spaces). Unreadable numbers stay -1 and strings "", with a warning.
Tuning collect_tuning(const std::string& fs_root, std::vector<std::string>& warnings);

/// /sys/class/dmi/id/{sys_vendor,product_name,product_serial,board_name,board_serial,
/// chassis_serial,bios_version,bios_date}, trimmed. A file that exists but cannot be read (the
/// serials are root-only: EACCES/EPERM) holds kDmiUnreadable, without a warning; a missing file
/// holds "". Other read errors hold "" and add a warning.
DmiInfo collect_dmi(const std::string& fs_root, std::vector<std::string>& warnings);

/// GPUDirect RDMA prerequisites. iommu_cmdline: the words of /proc/cmdline containing "iommu"
/// ("intel_iommu=on iommu=pt"), "" when none (a warning when /proc/cmdline is unreadable).
/// iommu_groups: entries of /sys/kernel/iommu_groups (0 when the directory is absent).
/// peermem: "nvidia_peermem" when /sys/module/nvidia_peermem exists, else "nv_peer_mem" (the
/// older MLNX module) when /sys/module/nv_peer_mem does, else "". ACS: every PCI bridge (class
/// 0x0604xx) of /sys/bus/pci/devices whose config file reaches the extended space (root only on
/// a live system) is checked with acs_redirect_enabled().
GpuDirectSettings collect_gpudirect(const std::string& fs_root, std::vector<std::string>& warnings);

/// Whether a PCI function's config space (the sysfs `config` bytes) has the ACS extended
/// capability (ID 0x000D, PCIe base spec 7.7.8) with P2P Request Redirect (control bit 2) or P2P
/// Completion Redirect (bit 3) enabled; the capability list is walked from 0x100 by its 12-bit
/// next pointers. false when it has no ACS capability; nullopt when the bytes stop before the
/// extended space (an unprivileged read gives 64 bytes).
std::optional<bool> acs_redirect_enabled(std::string_view config);

/// Allow-listed environment variables: NCCL_*, CUDA_*, UCX_*, OMPI_* (never the whole env).
std::map<std::string, std::string> collect_environment();

}  // namespace clusterbench
