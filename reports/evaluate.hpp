// Spec evaluation: judges a run directory against a spec table (DESIGN.md "Spec tables",
// "Exit codes"). Reads records only; every verdict of clusterbench is made here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "records/records.hpp"
#include "records/spec.hpp"

namespace clusterbench::report {

/// Outcomes, worst first. A row takes the worst outcome of its items.
inline constexpr const char* kFail = "FAIL";
inline constexpr const char* kMissing = "MISSING";
inline constexpr const char* kWaived = "WAIVED";
inline constexpr const char* kWarn = "WARN";
inline constexpr const char* kPass = "PASS";

/// The five outcomes in order of badness: FAIL, MISSING, WAIVED, WARN, PASS.
const std::vector<std::string>& outcome_order();

/// Rank of an outcome in outcome_order() (0 = FAIL, worst). Unknown strings rank as FAIL.
int outcome_rank(const std::string& outcome);

/// One judged item of a row: a node ("node01"), a GPU ("node01/gpu3[GPU-uuid]"), a link
/// ("node01<->node02"), "cluster", or one matched env value ("node01/nic[mlx5_0/1]").
struct ItemResult {
  std::string item;
  std::string outcome;  ///< PASS FAIL WARN WAIVED MISSING
  json value;           ///< the item's value (aggregated within the item); null if none
  std::vector<std::string> records;  ///< case keys of the records used (empty for env rows)
  std::string message;
};

/// One judged requirement.
struct RowResult {
  Requirement req;
  std::string outcome;  ///< PASS FAIL WARN WAIVED MISSING
  json value;           ///< the worst item's value (the aggregate where the row has one item)
  std::string worst_item;
  std::string message;                ///< e.g. "min 12.3 GB/s on node01 (>= 10 GB/s)"
  std::vector<std::string> evidence;  ///< case keys of every record used by the row
  std::vector<ItemResult> items;
};

/// The verdict over a whole run.
struct Report {
  std::string run_id;
  std::string spec_name, spec_path, spec_sha256;
  std::vector<RowResult> rows;
  bool aborted = false;
  std::string abort_reason;
  std::vector<std::string> warnings;
  /// Cases refused before they ran (records with extra.refused: an unsafe target, a busy
  /// device), "<case key>: <message>".
  std::vector<std::string> refused;
  int exit_code = 0;
  std::map<std::string, int> counts;  ///< outcome -> rows; all five keys present
  std::vector<std::string> hosts;     ///< env hosts, then run.json hosts, then record hosts
};

/// Evaluates every row of `spec` over `run` (run.json env + plan, records.jsonl).
///
/// Items by scope: node -> one per host of run.env (plus hosts seen in records); gpu -> one per
/// GPU of the env plus each (host, gpu_index) seen in records; cluster -> "cluster"; link -> the
/// host pair of each record. Env rows expand select.env per node; record rows take records with
/// the benchmark, a params superset of select.params, and the metric (failed/waived records are
/// taken without metrics). A planned case key without a record makes its item MISSING.
/// Item outcome: failed record -> FAIL; planned/expected but no record -> MISSING; only waived
/// records -> WAIVED; else the comparison. A failing judgement in a warn-severity row is WARN.
/// The row takes its worst item: FAIL > MISSING > WAIVED > WARN > PASS; among equal outcomes of
/// `>=`/`<=` rows, the value closest to failing (lowest for >=, highest for <=).
/// Ops: >= <= on numbers; == != on numbers or strings; `in` (the value array holds the item
/// value); `matches`: ECMAScript regex with std::regex_search semantics on the string form (the
/// pattern may match anywhere: anchor it with ^...$ for a full match).
/// Env rows: `each` over a pointer with `*` makes every match an item (a GPU, "host/nic[name]",
/// "host/disk[name]"); other aggregates reduce the matches per node, or over all nodes at
/// cluster scope. `count` counts known matches (no match is 0); a node where the pointer matches
/// nothing is MISSING for the other aggregates. Empty strings and nulls in env fields are
/// unknown: such an item is MISSING.
///
/// Throws InputError (exit 2) when a record metric's unit differs from a row's unit, naming the
/// spec file, row id and field, or when a row's env pointer names no known field.
Report evaluate(const RunDir& run, const Spec& spec);

/// DESIGN.md "Exit codes", precedence 2 > 3 > 1 > 4 > 0: 2 when a case was refused (`refused`);
/// else 3 when the run was aborted; else 1 when any row FAILs; else 4 when a fail-severity row is
/// MISSING or WAIVED (acceptance incomplete); else 0. Exit 2 for bad input is an InputError
/// thrown before a Report exists.
int exit_code(const Report& report);

/// Verdict word for an exit code: 0 PASS, 1 FAIL, 2 REFUSED, 3 ABORTED, 4 INCOMPLETE, else ERROR.
std::string verdict(int exit_code);

/// What the exit code means, one short phrase ("a requirement failed").
std::string exit_code_meaning(int exit_code);

/// Formats a number for reports: integers exactly, others with 6 significant digits.
std::string format_number(double v);

/// Formats a judged value with its unit: "12.3 GB/s", "\"performance\"", "-" for null.
std::string format_value(const json& v, const std::string& unit);

/// The requirement as text: "min >= 10 GB/s", "each in [\"a\",\"b\"]".
std::string format_requirement(const Requirement& req);

}  // namespace clusterbench::report
