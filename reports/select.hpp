// Spec auto-selection: which seed table judges a node, from its EnvRecord (DESIGN.md "Spec tables").
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::report {

struct SpecSelection {
  std::string path;
  std::string reason;  ///< e.g. "8x NVIDIA H100 80GB HBM3 matched h100-sxm-80g-8x.json"
};

/// Chooses the table in `dir` whose `match` fits every node. A node with no NVIDIA GPU matches the
/// `no_gpu` table. GPU nodes match by NVML name regex, or by PCI device id for GPUs seen on the
/// bus only, and by GPU count. Throws InputError (exit 2) naming the node and its GPUs, and asking
/// for --spec, when GPU nodes match no table or nodes need different tables.
SpecSelection select_spec(const std::vector<EnvRecord>& nodes, const std::string& dir);

}  // namespace clusterbench::report
