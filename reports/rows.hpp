// Spec rows judged over a run directory (docs/design.md "Spec tables"): the first step of
// make_report (reports/report.hpp). Reads records only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "records/records.hpp"
#include "records/spec.hpp"
#include "reports/health.hpp"
#include "reports/outcome.hpp"
#include "reports/text.hpp"

namespace clusterbench::report {

/// One judged item of a row: a node ("node01"), a GPU ("node01/gpu3[GPU-uuid]"), a link
/// ("node01<->node02"), "cluster", or one matched env value ("node01/nic[mlx5_0/1]").
struct ItemResult {
  std::string item;
  Outcome outcome = kMissing;
  json value;  ///< the item's value (aggregated within the item); null if none
  std::vector<std::string> records;  ///< case keys of the records used (empty for env rows)
  std::string message;
  /// The deciding record metric's repetitions against the threshold (>=/<= rows; null
  /// otherwise): {"repetitions": n, "spread": relative IQR, "margin": (value - threshold) /
  /// threshold towards passing, "range": [min, max], "within_noise": threshold inside range}.
  json noise;
  std::string measured;  ///< select.describe over the judged records ("" without one)
};

/// An env value that a row needed but that could not be read: null in the EnvRecord, with why.
struct UnknownValue {
  std::string host;     ///< the node whose EnvRecord holds it
  std::string pointer;  ///< the concrete pointer, e.g. "/gpus/3/memory_gib"
  std::string reason;   ///< its `unknown` entry, e.g. "NVML not loaded: Driver Not Loaded"
};

/// One judged requirement.
struct RowResult {
  Requirement req;
  Outcome outcome = kMissing;
  json value;  ///< the worst item's value (the aggregate where the row has one item)
  std::string worst_item;
  std::string message;                ///< e.g. "min 12.3 GB/s on node01 (>= 10 GB/s)"
  json noise;                         ///< the worst item's (ItemResult::noise)
  std::string measured;               ///< the worst item's `measured`
  std::vector<std::string> evidence;  ///< case keys of every record used by the row
  std::vector<ItemResult> items;
  /// Why the row does not apply to this run ("" = it does): a relative row on fewer than 3 nodes.
  /// Its outcome is WAIVED, and it counts toward no verdict.
  std::string not_applicable;
  /// Env rows: the unknown values that left an item MISSING (make_report lists them as warnings).
  std::vector<UnknownValue> unknown;
};

/// Judges every row of `spec` over `run` (run.json env + plan, records.jsonl), in table order.
/// `hosts`: the run's hosts (make_report's Report::hosts); `health`: one NodeHealth per
/// run.run.env entry, in its order (node_health()).
///
/// Items by scope: node -> one per host of run.env (plus hosts seen in records); gpu -> one per
/// GPU of the env plus each (host, gpu_index) seen in records; cluster -> "cluster"; link -> the
/// host pair of each record. Env rows expand select.env per node; record rows take records with
/// the benchmark, a params superset of select.params, and the metric (failed/waived records are
/// taken without metrics). A planned case key without a record makes its item MISSING.
/// Item outcome: failed record -> FAIL; planned/expected but no record -> MISSING; only waived
/// records -> WAIVED; else the comparison. A failing judgement in a warn-severity row is WARN.
/// An ok record that does not meet select.require is not compared: its item is MISSING, with
/// select.unmet filled over the record (fill_template), or the field it lacks. select.describe,
/// filled over the compared records, is appended to the item's message ("; measured on ...")
/// and kept in `measured`.
/// The row takes its worst item: FAIL > MISSING > WAIVED > WARN > PASS; among equal outcomes of
/// `>=`/`<=` rows, the value closest to failing (lowest for >=, highest for <=).
/// A record row's item decided by one metric with repetitions also says how that verdict stands
/// in the noise (row_noise): its message ends ", spread 3%, margin +48%" (", within noise" when
/// the threshold lies inside the repetitions' range, so that a rerun could change it).
/// Ops: >= <= on numbers; == != on numbers or strings; `in` (the value array holds the item
/// value); `matches`: RE2 regex (SpecRegex), found anywhere in the string form (the
/// pattern may match anywhere: anchor it with ^...$ for a full match).
/// Env rows: `each` over a pointer with `*` makes every match an item (a GPU, "host/nic[name]",
/// "host/disk[name]"); other aggregates reduce the matches per node, or over all nodes at
/// cluster scope. `count` counts known matches (no match is 0); a node where the pointer matches
/// nothing is MISSING for the other aggregates. Empty strings and nulls in env fields are
/// unknown: such an item is MISSING, for a null with the reason its EnvRecord gives
/// (unknown_reason()), unless the known values decide the item whatever the unknown ones are:
/// `max` passing `>=` or failing `<=`, `min` failing `>=` or passing `<=`, a `count` whose
/// outcome is the same for every number of unknown matches. A `where` condition on a null value
/// leaves its match undecided, treated the same way. Health rows judge `health`'s values of
/// select.health.
///
/// Throws InputError (exit 2) when a record metric's unit differs from a row's unit, naming the
/// spec file, row id and field, or when a row's env pointer or health metric names no known
/// field.
std::vector<RowResult> evaluate_rows(const RunDir& run, const Spec& spec,
                                     const std::vector<std::string>& hosts,
                                     const std::vector<NodeHealth>& health);

/// How `m`'s repetitions stand against `threshold` for `op` (">=" or "<="): ItemResult::noise,
/// or null when m has fewer than 2 repetitions or op is another. docs/specs.md "Noise".
json row_noise(const Metric& m, const std::string& op, double threshold);

/// The words row_noise adds to a row message: ", spread 3%, margin +48%[, within noise]".
std::string noise_text(const json& noise);

/// {"FAIL": n, "MISSING": n, ...}: outcome counts as report.json writes them.
json outcome_counts_json(const std::map<Outcome, int>& counts);

/// The scope of a row item or the item part of a case key ("node02/gpu3[GPU-...]" -> gpu,
/// "a<->b" -> link, "cluster", else a node): the inverse of scope_item().
Scope parse_scope_item(const std::string& item);

/// An env pointer in words for messages: "/nics/0/rate_gbps" -> "the rate of NIC eth0" (the
/// entry's name from `env`, its index without one), "/memory/installed_gib" -> "the installed
/// memory", "/cpu/physical_cores" -> "the cpu physical cores"; others "the FIELD (POINTER)".
std::string pointer_words(const std::string& pointer, const EnvRecord* env);

/// A row's comparison in words, as item messages end: "below 64" for a value that fails `>= 64`,
/// "at least 64" for one that passes; "above"/"at most" (<=), "expected"/"is" (==), "must not
/// be"/"is not" (!=), "not one of"/"one of" (in), "does not match"/"matches" (matches).
std::string comparison_text(const std::string& op, const std::string& target, bool fails);

/// The requirement as text: "min >= 10 GB/s", "each in [\"a\",\"b\"]".
std::string format_requirement(const Requirement& req);

}  // namespace clusterbench::report
