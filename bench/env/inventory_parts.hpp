// Internal to bench/env: what the inventory's parts share (inventory.cpp: the EnvRecord;
// inventory_cpu.cpp: hwloc, CPU and PCI GPUs; inventory_memory.cpp; inventory_nics.cpp;
// inventory_host.cpp: disks, tuning, DMI, GPUDirect, environment).
#pragma once

#include "env/inventory.hpp"
#include "env/sysfs.hpp"

namespace clusterbench::inventory {

using namespace sysfs;

/// 2^30 bytes.
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// The CPU, and the GPUs on the PCI bus into `gpus`, from one hwloc topology with I/O devices
/// loaded below `fs_root` (collect_env's: one load for both).
CpuInfo cpu_and_pci_gpus(const std::string& fs_root, std::vector<GpuInfo>& gpus,
                         std::vector<std::string>& warnings);

}  // namespace clusterbench::inventory
