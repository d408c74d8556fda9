// compute.host_device_copy: host <-> device copy bandwidth over PCIe, per GPU
// (docs/metrics.md "Host-device copy", docs/host_device_copy.md).
#pragma once

#include <hwloc.h>

#include <string>
#include <vector>

namespace clusterbench::compute {

/// Bytes one operation moves over the GPU's PCIe link: `bytes` for "h2d" and "d2h", 2 x `bytes`
/// for "bidir" (one copy each way at once). GB/s = bytes moved / seconds / 1e9 (docs/design.md
/// "Units"). Throws std::invalid_argument for another direction.
double host_copy_bytes_moved(const std::string& direction, long long bytes);

/// The NUMA nodes of a machine by OS index, and their distance matrix (ACPI SLIT: 10 = local;
/// distance[i][j] between nodes[i] and nodes[j]); `distance` is empty when none is known.
struct NumaTopology {
  std::vector<int> nodes;
  std::vector<std::vector<unsigned long long>> distance;
};

/// Reads the NUMA nodes (HWLOC_OBJ_NUMANODE, os_index) and hwloc's NUMA distance matrix of a
/// loaded topology (live, or a fixture tree loaded through HWLOC_FSROOT).
NumaTopology numa_topology(hwloc_topology_t topo);

/// The host NUMA node of one case, or why there is none.
struct NumaChoice {
  int node = -1;
  std::string why_not;  ///< non-empty: the case is waived with this reason
};

/// Host memory placement for a GPU on NUMA node `gpu_node` (-1: unknown).
///  "near": the GPU's own node; on a machine with a single NUMA node, that node even when the
///          GPU's is unknown (sysfs reports -1 there).
///  "far":  the node at the largest distance from the GPU's (ties: the lowest OS index); without a
///          distance matrix, the lowest-numbered other node.
/// why_not: "one NUMA node: no remote host memory", "the GPU's NUMA node is unknown (...)", or
/// "NUMA node N of the GPU is not in the topology". Throws std::invalid_argument for another
/// placement.
NumaChoice choose_host_numa(const NumaTopology& topo, int gpu_node, const std::string& placement);

}  // namespace clusterbench::compute
