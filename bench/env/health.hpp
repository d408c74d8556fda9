// Health counters (docs/health.md): one snapshot of a node's error counters, read at the
// start and at the end of every run into EnvRecord::health ({"start": ..., "end": ...}), and the
// NVML XID event watcher that runs in between. Only reads and records: the deltas and every
// verdict are computed in reports/health.hpp from the two snapshots.
//
// Sources (all below fs_root, or through NVML):
//   GPUs       NVML: nvmlDeviceGetTotalEccErrors (volatile/aggregate x corrected/uncorrected),
//              nvmlDeviceGetRetiredPages (+ PendingStatus), nvmlDeviceGetRemappedRows,
//              nvmlDeviceGetRowRemapperHistogram, nvmlDeviceGetNvLinkErrorCounter per active link.
//   IB ports   /sys/class/infiniband/<dev>/ports/<n>/counters/{symbol_error, link_downed,
//              link_error_recovery, port_rcv_errors, port_xmit_discards}.
//   PCIe AER   /sys/bus/pci/devices/<bdf>/aer_dev_{correctable,nonfatal,fatal} of NVIDIA GPUs
//              (vendor 0x10de, class 0x03xxxx) and NICs (class 0x02xxxx).
//   XID        "NVRM: Xid (PCI:<bus>): <n>, ..." records of /dev/kmsg (when readable), and NVML's
//              nvmlEventTypeXidCriticalError events (XidWatcher).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "records/records.hpp"

namespace clusterbench {
class NvmlXidEvents;
}

namespace clusterbench::health {

/// Schema of one snapshot (docs/health.md).
inline constexpr const char* kHealthSchema = "clusterbench.health/1";

/// Reads one snapshot of every counter above. Never throws: a source that cannot be read is
/// recorded with its reason ("nvml": "<reason>", "kernel_log": {"readable": false, "status": ...})
/// and its counters are absent, so reports/ can tell "unreadable" from "zero".
/// `query_nvml` false skips NVML (status "not queried"). Returns a JSON object:
///   {"schema", "collected_at", "fs_root", "nvml": "ok"|reason,
///    "gpus": [{"index", "uuid", "serial", "pci_bus_id", "status",
///              "ecc": {"volatile": {"corrected", "uncorrected"}, "aggregate": {...}},
///              "retired_pages": {"single_bit", "double_bit", "pending"},
///              "row_remap": {"correctable", "uncorrectable", "pending", "failed",
///                            "histogram": {"max", "high", "partial", "low", "none"}},
///              "nvlink": [{"link", "crc_flit", "crc_data", "replay", "recovery", (or from
///                          field values: "crc", "effective_errors" on NVLink5),
///                          "unreadable": {counter: why}}] (active links only),
///              "nvlink_status": "ok" | "no NVLink on this GPU" | "no active NVLink link" |
///                               why the links could not be read}],
///    "ib_ports": [{"name": "mlx5_0/1", "counters": {"symbol_error", ...}}],
///    "pcie_aer": [{"pci_bus_id", "role": "gpu"|"nic", "name",
///                  "correctable"|"nonfatal"|"fatal": {"RxErr": 0, ..., "TOTAL_ERR_COR": 0}}],
///    "kernel_log": {"path", "readable", "status", "last_seq",
///                   "xid": [{"seq", "pci_bus_id", "xid", "text"}]}}
/// A counter NVML does not support is left out of its object (an object left empty is omitted).
json read_counters(const std::string& fs_root, bool query_nvml = true);

/// Parses the text of one AER counter file (aer_dev_correctable etc.): lines "<Name> <count>",
/// e.g. "RxErr 0\nBadTLP 2\n...\nTOTAL_ERR_COR 2\n". Lines that are not a name and an unsigned
/// number are skipped. Returns {"RxErr": 0, "BadTLP": 2, ..., "TOTAL_ERR_COR": 2}.
json parse_aer(std::string_view text);

/// One parsed XID line of the kernel log, or null when `line` is not one. Accepts a /dev/kmsg
/// record "<prio>,<seq>,<usec>,<flags>;NVRM: Xid (PCI:0000:18:00): 79, pid=..., <text>" (seq
/// from the prefix) or a bare/syslog line containing "NVRM: Xid (PCI:...): N" (seq -1).
/// Returns {"seq", "pci_bus_id": "0000:18:00.0" (sysfs form, function 0 added), "xid", "text"}.
json parse_xid_line(std::string_view line);

/// Watches NVML XID critical-error events on every GPU in a background thread, from start()
/// until stop(). Thread-safe; does nothing (status says why) when NVML is not usable or does not
/// support events.
class XidWatcher {
 public:
  XidWatcher();
  ~XidWatcher();
  XidWatcher(const XidWatcher&) = delete;
  XidWatcher& operator=(const XidWatcher&) = delete;

  /// Registers every GPU for nvmlEventTypeXidCriticalError and starts the thread (waits of
  /// `poll_ms` each, so stop() returns within about that long).
  void start(unsigned poll_ms = 200);
  /// Stops the thread and returns {"status": "ok"|reason, "gpus_registered": n,
  /// "events": [{"gpu_index", "uuid", "pci_bus_id", "xid", "at"}]} (at: ISO 8601 UTC).
  json stop();

 private:
  void loop(unsigned poll_ms);
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  json result_ = json{{"status", "not started"}, {"gpus_registered", 0}, {"events", json::array()}};
  std::unique_ptr<NvmlXidEvents> events_;
};

}  // namespace clusterbench::health
