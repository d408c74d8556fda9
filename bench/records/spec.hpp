// Spec tables (reports/specs/*.json, schema clusterbench.spec/1): types, loading, validation.
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench {

/// What a requirement looks at: an env field by JSON pointer with `*` (`env`), or result records
/// by benchmark + a subset of params + metric name.
struct Select {
  std::string env;                    ///< e.g. "/gpus/*/pcie/width_current"; empty for records
  std::string benchmark;              ///< e.g. "compute.memory_bandwidth"
  json params = json::object();       ///< subset that a record's params must contain
  std::string metric;                 ///< metric name within the record
  /// A health counter delta between a node's start and end snapshots (docs/health.md), e.g.
  /// "gpu.ecc_uncorrected", "ib.symbol_error"; its names are reports/health.hpp's
  /// health_metrics(). Empty for env and record rows.
  std::string health;
  /// Env rows only: conditions on sibling fields of each match, keyed by a pointer relative to
  /// the element the last `*` names ({"/state": "ACTIVE", "/rate_gbps": {">=": 200}}). A
  /// condition is a value (==) or {OP: value} with OP one of the row ops or "nccl_ifname" (the
  /// value names an allow-listed environment variable holding an NCCL interface list, e.g.
  /// "NCCL_SOCKET_IFNAME"; reports/ifname.hpp). Matches failing a condition are left out.
  json where = json::object();
};

/// One row of a spec table.
struct Requirement {
  std::string id, title, source;
  std::string severity = "fail";  ///< fail | warn
  Select select;
  std::string scope = "node";      ///< gpu | node | link | cluster
  std::string aggregate = "each";  ///< each | min | max | median | count | sum
  std::string op = ">=";           ///< >= <= == != in matches
  json value;
  std::string unit;
};

/// Auto-selection: which nodes a table is for.
struct SpecMatch {
  bool no_gpu = false;                     ///< the table for nodes with no NVIDIA GPU
  std::string gpu_name;                    ///< ECMAScript regex on the NVML name
  std::vector<std::string> pci_device_ids; ///< for GPUs seen on the PCI bus only
  int gpu_count = -1;                      ///< -1: any
};

struct Spec {
  std::string schema = kSpecSchema;
  std::string name, title, path;
  std::vector<std::string> extends_chain;  ///< files merged in, base first
  SpecMatch match;
  bool has_match = false;
  std::vector<Requirement> requirements;
};

/// Loads a spec file, resolving `extends` (relative to the file's directory; rows are inherited
/// and overridden by id). Validates every row: known severity/scope/aggregate/op, a known unit,
/// env units matching env_field_unit(). Throws InputError naming the file and the row id + field,
/// or the line/column of a JSON syntax error.
Spec load_spec(const std::string& path);

/// The unit of an env field addressed by a pointer with `*` ("/cpu/physical_cores" -> "count").
/// Returns "" for string fields. Throws InputError for a pointer that names no known field.
std::string env_field_unit(const std::string& pointer);

/// Expands a JSON pointer with `*` segments over `doc`. Each match is (concrete pointer, value).
std::vector<std::pair<std::string, json>> expand_pointer(const json& doc,
                                                         const std::string& pointer);

/// Glob match with `*` and `?` (used for --only and benchmark ids).
bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace clusterbench
