// Spec tables (reports/specs/*.json, schema clusterbench.spec/2; /1 still loads): types, loading,
// validation.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace re2 {
class RE2;
}

namespace clusterbench {

/// What a requirement looks at: an env field by JSON pointer with `*` (`env`), or result records
/// by benchmark + a subset of params + metric name.
struct Select {
  std::string env;        ///< e.g. "/gpus/*/pcie/width_current"; empty for records
  std::string benchmark;  ///< e.g. "compute.memory_bandwidth"
  /// Subset that a record's params must contain; a key with value null: the record has no such
  /// param ({"rail": null}: MPI's own path of network.p2p, not a rail's).
  json params = json::object();
  std::string metric;  ///< metric name within the record
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
  /// Records rows only: conditions an ok record must meet to be judged, keyed by a JSON pointer
  /// into the record as records.jsonl holds it ({"/extra/scratch_device/nvme": true}); a
  /// condition as in `where` (no nccl_ifname). An ok record that does not meet them measured
  /// something else than the row is about: its item is MISSING with `unmet` as the reason.
  json require = json::object();
  /// Records rows with `require`: the reason an item is not judged, a template (fill_template)
  /// over the record that did not meet `require`.
  std::string unmet;
  /// Records rows only: a template naming what a record measured, added to its item's message
  /// ("measured on {/extra/scratch_device/summary}").
  std::string describe;
  /// Records rows only: a JSON pointer into the record; among the records judged, those holding
  /// the same value there are counted once (the first in file order). A shared filesystem seen
  /// from every node is one tier: "/extra/tier/filesystem_id". Empty: every record counts.
  std::string distinct;
};

/// One row of a spec table.
struct Requirement {
  std::string id, title, source;
  /// What to do about a failing item, in a few words ("reseat or replace the riser"); "" when
  /// the table gives none. Schema /5.
  std::string remedy;
  std::string severity = "fail";  ///< fail | warn
  Select select;
  std::string scope = "node";      ///< gpu | node | link | cluster
  std::string aggregate = "each";  ///< each | min | max | median | count | sum
  std::string op = ">=";           ///< >= <= == != in matches
  json value;
  std::string unit;
  /// A threshold per NIC (spec/5 `"value": {"per_nic": 12.5}`): `value` is it times the table's
  /// nics_per_node, resolved by load_spec.
  std::optional<double> per_nic;
  /// "typical" (record rows of scope link, gpu or node, unit "%"): each item's metric is judged
  /// as a percent of the typical item measured with the same params (a link: the median over
  /// hosts of each host's median link; else the median item), so that `value` 50 is "at least
  /// half the fleet's typical link". Needs 3 nodes; with fewer the row does not apply. "" =
  /// absolute. Schema /5.
  std::string relative;
};

/// Auto-selection: which nodes a table is for.
struct SpecMatch {
  bool no_gpu = false;                      ///< the table for nodes with no NVIDIA GPU
  std::string gpu_name;                     ///< RE2 regex on the NVML name (SpecRegex)
  std::vector<std::string> pci_device_ids;  ///< for GPUs seen on the PCI bus only
  int gpu_count = -1;  ///< breaks a tie between tables of one model (gpu.count judges); -1: any
};

/// One Prometheus gauge fed by a family's records (docs/report.md "Prometheus").
struct PrometheusGauge {
  std::string metric;  ///< the record metric that feeds it ("tflops")
  std::string name;    ///< the gauge ("clusterbench_gemm_tflops"), [a-zA-Z_:][a-zA-Z0-9_:]*
  std::string help;
  std::string unit;  ///< the metric's unit; a record metric in another unit is left out
  double scale = 1;  ///< sample = metric value x scale (GB/s -> bytes per second: 1e9)
};

/// A chart of a family's records in report.html (docs/report.md "Charts", docs/specs.md
/// "Families"). `kind` "lines": the metric against the numeric param `x`, one line per `series`;
/// "groups": one bar group per value of the param `x` ("*": of every param that varies), one
/// bar per item (node), each group with the threshold of the rows that select it.
struct FamilyChart {
  std::string kind = "lines";  ///< lines | groups
  std::string x;               ///< the param on the x axis ("bytes") or of the groups ("profile")
  bool logx = false;           ///< log2 x axis (message sizes)
  bool logy = false;           ///< log10 y axis (busbw over eight decades of message size)
  /// The metric drawn: a glob on metric names ("*_bw"); where several metrics of one record
  /// match, a groups chart draws their sum (read + write). "" = every metric in `unit`.
  std::string metric;
  std::string unit;   ///< only metrics in this unit; "" = any
  std::string scope;  ///< only records of this scope kind (node, gpu, cluster, link); "" = any
  /// One line per "benchmark" (the id after its area, plus the params that vary) or per "item"
  /// (the GPU, node or link, plus the params that vary).
  std::string series = "benchmark";
  int max_series = 0;  ///< at most this many lines (the first ones seen); 0 = no limit
  /// Params whose values each make a chart of their own ("backend": MPI and NCCL apart).
  std::vector<std::string> split;
  std::optional<double> mark_x;  ///< a vertical marker at this x (the seed's 8 workers)
  std::string mark_label;        ///< its legend text
  std::string title, xlabel, ylabel;
};

/// What the reports know about the benchmarks whose id matches `benchmark`
/// (clusterbench.spec/2 "families"). Where several families match an id, each field comes from
/// the last matching family that sets it (reports/families.hpp).
/// One `compare` tolerance of a family (clusterbench.spec/3): the metrics matching `metric`
/// (a glob on the metric name) regress only past `tolerance` (docs/compare.md).
struct CompareTolerance {
  std::string metric;
  double tolerance = 0;  ///< fraction: 0.05 is 5%
};

struct SpecFamily {
  std::string benchmark;                    ///< glob on benchmark ids ("collectives.*")
  std::vector<CompareTolerance> compare;    ///< compare tolerances (spec/3), in order
  std::optional<double> outlier_tolerance;  ///< fraction below/above the fleet median
  std::optional<std::vector<PrometheusGauge>> prometheus;  ///< headline gauges
  std::optional<FamilyChart> chart;
  /// "soak": ok records carry extra.series, intervals of a sustained load (docs/burnin.md),
  /// which reports/burnin.hpp turns into metrics and charts over time. "" = none.
  std::string series;
};

/// The storage tiers a table may name (clusterbench.spec/4 `tiers`): hot, warm, cold.
const std::vector<std::string>& spec_tier_names();

/// One storage tier of the cluster (clusterbench.spec/4 `tiers`, docs/specs.md "Storage tiers").
/// io.tiers measures it on every node (--set io.tiers.NAME overrides `path`).
struct SpecTier {
  std::string name;   ///< hot | warm | cold
  std::string title;  ///< what the tier is for ("" when the table says nothing)
  /// An absolute path, an object-storage URL (scheme://...: recorded as not measured), or ""
  /// when the table names none (the tier's cases are waived until a path is given).
  std::string path;
  /// Counted once for the cluster (the same filesystem on every node); unset: only a network
  /// filesystem (nfs, lustre, ...) is, a local one is summed over the nodes.
  std::optional<bool> shared;
  /// The path must be a mount point of its own: a directory on the filesystem above it (the
  /// tier's filesystem failed to mount) is "not mounted". false: any directory will do.
  bool mount_point = true;
};

/// Why `path` cannot be a tier's path, or "": an absolute path without control characters, or
/// a URL "scheme://..." (object storage).
std::string tier_path_refusal(const std::string& path);

/// The tiers as JSON objects {name, title, path, shared (null: unset), mount_point}.
json tiers_json(const std::vector<SpecTier>& tiers);

/// True when `path` is an object-storage URL ("s3://bucket/prefix"): scheme "://" ...
bool is_object_storage_url(const std::string& path);

/// A Prometheus alerting rule of the table (spec/5 `alerts`, docs/specs.md "Alerts"): what a
/// monitoring stack (the DCGM exporter, node_exporter) watches between runs. Its threshold is a
/// row's (`row`: the row's value times `scale`, the row's op turned into the alert's condition),
/// so a site's table that changes the row changes the alert; or its own (`op`, `value`) where
/// no row measures the quantity (GPU utilisation).
struct SpecAlert {
  std::string id;  ///< the alert's name, [A-Za-z_][A-Za-z0-9_]* ("GpuTemperatureHigh")
  std::string title, source;
  std::string expr;  ///< PromQL of the watched quantity, without the comparison
  std::string row;   ///< the row whose threshold it takes; "" when it has its own
  /// The condition that fires it: < > <= >= == != (the row's op inverted when `row` is set).
  std::string op;
  double threshold = 0;  ///< in the expression's unit (the row's value x scale when `row`)
  double scale = 1;      ///< the row's unit -> the expression's (GB/s -> bytes/s: 1e9)
  std::string unit;      ///< the row's unit (checked against it), or the own threshold's
  std::string for_;      ///< how long the condition holds before it fires ("5m", "1h"); ""
  std::string severity;  ///< warning | critical (a row's: fail -> critical, warn -> warning)
};

struct Spec {
  std::string schema = kSpecSchema;  ///< the file's own schema (/1 to /5)
  std::string name, title, path;
  std::vector<std::string> extends_chain;  ///< files merged in, base first
  SpecMatch match;
  bool has_match = false;
  std::vector<Requirement> requirements;
  /// Families, parents' first; a child's family with the same `benchmark` glob replaces the
  /// parent's in place. A clusterbench.spec/1 file declares none (it may inherit some).
  std::vector<SpecFamily> families;
  /// Storage tiers (spec/4), in the order hot, warm, cold; a child's tier replaces the fields
  /// it sets of its parent's.
  std::vector<SpecTier> tiers;
  /// The GPU's dense (no sparsity) tensor peak per dtype, TFLOP/s per GPU, from its data sheet
  /// (spec/5 `dense_peaks`: {"bf16": 989.4, ...}); a child's dtype replaces its parent's. The
  /// report's MFU divides a training step's model FLOP rate by it. Empty: no peak known.
  std::map<std::string, double> dense_peaks;
  /// Where the peaks come from (spec/5 `dense_peaks_source`), "" when none is given.
  std::string dense_peaks_source;
  /// The node's NICs (rails), one per GPU on an 8-GPU node: what a per-NIC threshold is
  /// multiplied by. A child's replaces its parent's.
  std::optional<int> nics_per_node;
  /// Prometheus alerting rules (spec/5 `alerts`), parents' first; a child's alert of the same id
  /// replaces its parent's, {"id": X, "remove": true} drops it. Resolved by load_spec.
  std::vector<SpecAlert> alerts;
};

/// A spec regex (op `matches`, `match.gpu_name`), compiled once by RE2: matching takes time
/// linear in the text, whatever the pattern ("(.*)*(.*)*x" cannot hang a report). RE2 syntax, a
/// subset of ECMAScript's without backreferences or lookaround.
class SpecRegex {
 public:
  /// Compiles `pattern`; throws InputError naming `where` (the spec file and field) when RE2
  /// rejects it (bad syntax, a program over RE2's 8 MiB default) or its groups nest deeper than
  /// kMaxRegexGroupDepth.
  SpecRegex(const std::string& pattern, const std::string& where, bool icase = false);
  /// True when the pattern matches somewhere in `text` (std::regex_search semantics).
  bool search(const std::string& text) const;

 private:
  std::shared_ptr<const re2::RE2> re_;
};

/// The deepest nesting of groups in a SpecRegex pattern.
inline constexpr int kMaxRegexGroupDepth = 64;

/// The longest chain of `extends` that load_spec follows (a table and 15 ancestors).
inline constexpr int kMaxExtendsDepth = 16;

/// Loads a spec file, resolving `extends` (relative to the file's directory; rows are inherited
/// and overridden by id, families by glob). Validates every row: known severity/scope/aggregate/
/// op, a known unit, env units matching env_field_unit(); and every family: known fields only,
/// a tolerance >= 0, gauge names valid in Prometheus, known units. Throws InputError naming the
/// file and the row id or family + field, or the line/column of a JSON syntax error. Each file
/// must be a regular file of at most kMaxSpecBytes, nesting JSON at most kMaxJsonDepth deep, and
/// the chain at most kMaxExtendsDepth long; an error in a parent names the table(s) extending it.
Spec load_spec(const std::string& path);

/// The unit of an env field addressed by a pointer with `*` ("/cpu/physical_cores" -> "count").
/// Returns "" for string fields. Throws InputError for a pointer that names no known field.
std::string env_field_unit(const std::string& pointer);

/// Expands a JSON pointer with `*` segments over `doc`. Each match is (concrete pointer, value).
std::vector<std::pair<std::string, json>> expand_pointer(const json& doc,
                                                         const std::string& pointer);

/// `text` with every `{/pointer}` replaced by the value at that JSON pointer in `doc`: a string
/// as it is, a number or boolean as JSON writes it, "unknown" where the pointer finds nothing or
/// null. A `{` not followed by `/` is kept as written.
std::string fill_template(const std::string& text, const json& doc);

/// Why the env value at the concrete `pointer` ("/gpus/3/memory_gib") is unknown: the entry of
/// the nearest enclosing object's `unknown` map that names the rest of the path ("memory_gib" in
/// /gpus/3, or "pcie/width_current" in /gpus/3); "" when none says.
std::string unknown_reason(const json& doc, const std::string& pointer);

/// Glob match with `*` and `?` (used for --only and benchmark ids).
bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace clusterbench
