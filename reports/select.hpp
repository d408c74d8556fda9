// Spec auto-selection: which table judges a fleet, from its EnvRecords (docs/specs.md "Choosing the
// table").
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::report {

struct SpecSelection {
  std::string path;
  std::string reason;  ///< e.g. "8x NVIDIA H100 80GB HBM3 matched h100-sxm-80g-8x.json"
};

/// Chooses the table in `dir` for the nodes. Nodes with no NVIDIA GPU get the `no_gpu` table.
/// Nodes with GPUs get the table that matches the most of their GPUs by model (NVML name regex,
/// or PCI device id for GPUs seen on the bus only); the GPU count only breaks ties, because the
/// gpu.count row judges it: a node that lost a GPU is still judged by its model's table, and a
/// node with a GPU of another model FAILs gpu.model there. Throws InputError (exit 2) naming the
/// node and its GPUs, and asking for --spec, when no table knows the GPUs, or when GPU and CPU
/// nodes are mixed.
SpecSelection select_spec(const std::vector<EnvRecord>& nodes, const std::string& dir);

}  // namespace clusterbench::report
