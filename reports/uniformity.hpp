// Fleet uniformity (docs/report.md "Uniformity"): the EnvRecord fields that should be identical
// on every node (versions, firmware and BIOS, tuning, GPU/NIC NUMA affinity, IOMMU/ACS and
// nvidia_peermem, GPU persistence and MIG modes), the majority value of each as the reference,
// and every node that differs, named with the field and both values. Reads run.json's env only.
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::report {

/// One node whose value of a field is not the reference, or not the expected value.
struct UniformityDeviation {
  std::string host, field, value;
  std::string reference;  ///< the majority value
  std::string reason;     ///< "differs from 3 of 4 nodes" or "expected disabled"
};

/// One field compared across nodes.
struct UniformityField {
  std::string name;       ///< "versions.driver", "tuning.governor", "gpu.mig_mode", ...
  std::string group;      ///< versions | firmware | tuning | affinity | gpudirect | gpu
  std::string reference;  ///< the most common value; ties go to the value seen first
  std::string expected;   ///< a value every node must have whatever the majority ("" = none)
  int nodes = 0;          ///< nodes compared
  int agreeing = 0;       ///< nodes holding the reference
  bool majority = false;  ///< agreeing > nodes / 2
  std::vector<UniformityDeviation> deviations;  ///< in env order
};

struct Uniformity {
  std::vector<UniformityField> fields;          ///< fixed order (uniformity_field_names())
  std::vector<UniformityDeviation> deviations;  ///< all fields', field by field
  std::vector<std::string> hosts;               ///< hosts with a deviation, in env order
};

/// The fields compared, in order. Values are strings made from the EnvRecord: "unknown" where a
/// field was not recorded; GPU and NIC lists as their distinct values, sorted, comma-separated.
/// Expected values: gpu.persistence_mode "enabled", gpu.mig_mode "disabled" (on nodes with GPUs
/// and a known mode).
std::vector<std::string> uniformity_field_names();

/// Compares every field over `env` (one EnvRecord per node). One pass per field over the nodes
/// with a hash count: O(fields x nodes), for 1000-node fleets. A field's value of a node differs
/// when it is not the reference, or not the field's expected value.
Uniformity check_uniformity(const std::vector<EnvRecord>& env);

}  // namespace clusterbench::report
