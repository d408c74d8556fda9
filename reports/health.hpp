// Health counter deltas (docs/health.md): what rose between a node's start and end
// snapshots (bench/env/health.hpp, EnvRecord::health). Reads the snapshots only; make_report
// computes them once per node (Report::health) and the spec rows that select {"health": METRIC}
// are judged over them (reports/rows.hpp).
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::report {

/// One judged value of a health metric on one item.
struct HealthValue {
  std::string metric;   ///< one of health_metrics(), e.g. "gpu.ecc_uncorrected", "ib.symbol_error"
  std::string item;     ///< "node01/gpu3[GPU-uuid]@0000:18:00.0", ".../nvlink5",
                        ///< "node01/nic[mlx5_0/1]", "node01/pci[0000:3b:00.0]/mlx5_0", or "node01"
  json value;           ///< count (a delta, or 0/1 for a state); null when it could not be read
  std::string detail;   ///< evidence: "volatile 0 -> 2, aggregate 5 -> 7", or why it is unknown
  bool absent = false;  ///< the hardware is not on this node (no IB port, no AER): WAIVED, not 0
  int gpu_index = -1;   ///< GPU metrics: NVML index; -1 otherwise
  std::string uuid, pci_bus_id;  ///< GPU (uuid, bus) or PCIe device (bus)
};

/// Every metric a spec row may select with {"health": NAME}, all in unit "count":
///   gpu.ecc_uncorrected, gpu.ecc_corrected      new ECC errors: max(volatile delta, aggregate
///                                               delta) (volatile resets when the driver reloads)
///   gpu.retired_pages                           new retired pages (single + double bit)
///   gpu.retired_pages_pending                   1 when a retirement awaits a reset (end state)
///   gpu.row_remap_uncorrectable                 new rows remapped for uncorrectable errors
///   gpu.row_remap_pending, gpu.row_remap_failed 1 when pending / failed (end state)
///   gpu.nvlink_crc (flit + data), gpu.nvlink_replay, gpu.nvlink_recovery   per link
///   gpu.xid                                     XID events during the run (NVML events and
///                                               kernel log records after the start snapshot)
///   ib.symbol_error, ib.link_downed, ib.link_error_recovery, ib.port_rcv_errors,
///   ib.port_xmit_discards                       per port delta
///   pcie.aer_correctable, pcie.aer_nonfatal, pcie.aer_fatal   per device TOTAL_ERR_* delta
const std::vector<std::string>& health_metrics();

/// The deltas of one node between two snapshots (JSON objects of bench/env/health.hpp's
/// read_counters; `end` may carry "xid_watch", XidWatcher::stop()'s result). A counter missing
/// from either snapshot gives a null value with the reason in `detail`; a counter that fell
/// (driver reload, counter reset) gives delta 0 for aggregate-backed counters and is noted.
/// When a node has no device of a metric's kind (no IB port), that metric has one value on item
/// `host` with value 0 and detail "no <kind> on this node". Null `start` or `end` gives null
/// values for every metric ("no start snapshot" / "no end snapshot: the run did not finish").
/// A snapshot field of another type than the snapshot writes throws InputError naming `host`.
std::vector<HealthValue> health_deltas(const json& start, const json& end, const std::string& host);

/// The values of one metric, in item order. Throws InputError for a name not in
/// health_metrics().
std::vector<HealthValue> health_values(const std::vector<HealthValue>& all,
                                       const std::string& metric);

/// One node's health deltas (Report::health).
struct NodeHealth {
  std::string host;
  std::vector<HealthValue> values;  ///< health_deltas() of its start and end snapshots
  /// "run.json env[HOST].health: start T0, end T1" when both snapshots exist, else "".
  std::string evidence;
};

/// The deltas of every node of `env`, in its order (EnvRecord::health {"start", "end"}).
std::vector<NodeHealth> node_health(const std::vector<EnvRecord>& env);

}  // namespace clusterbench::report
