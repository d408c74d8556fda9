// RunRecord: results/<run-id>/run.json (docs/records.md "run.json"): what a run was asked to do,
// its plan of case keys, its nodes' EnvRecords, and how it ended.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "records/env_record.hpp"
#include "records/json_io.hpp"
#include "records/schema.hpp"

namespace clusterbench {

struct PlannedCase {
  std::string benchmark;
  json params = json::object();
  std::string level;                   ///< "node", "gpu", "cluster"
  std::vector<std::string> case_keys;  ///< the records this case is expected to produce
};

struct SpecChoice {
  std::string path, sha256, name;
  std::string selected_by;  ///< "--spec" or "auto: <reason>"
};

/// A planned case that `--time-limit` left unstarted.
struct NotRunCase {
  std::string benchmark;
  json params = json::object();
};

/// run.json "time_limit": present when `--time-limit` stopped the run before its plan's end.
struct TimeLimitStop {
  double seconds = 0;          ///< the limit
  double stopped_after_s = 0;  ///< when the run stopped, seconds after it started
  std::vector<NotRunCase> not_run;
};

/// The most rounds a run can spread its round cases over (--rounds).
inline constexpr int kMaxRounds = 20;

struct RunRecord {
  std::string schema = kRunSchema;
  std::string run_id;
  std::vector<std::string> argv;
  std::string version;
  std::string suite;
  std::vector<std::string> only;
  std::vector<std::string> set;
  SpecChoice spec;
  int world_size = 1;
  std::vector<std::string> hosts;
  std::string started_at, finished_at;
  std::optional<int> exit_code;
  bool aborted = false;
  std::string abort_reason;
  std::vector<PlannedCase> plan;
  std::vector<EnvRecord> env;
  /// Written by the runner (Sink::set_run_field) when `--time-limit` stopped the run.
  std::optional<TimeLimitStop> time_limit;
  /// --rounds: how many rounds the plan's round cases were spread over (docs/compare.md
  /// "Rounds"); 1 (not written) for a run without.
  int rounds = 1;
};

/// Throws FieldError unless the GPU index of a case key's item ("host/gpu3[uuid]") fits an int:
/// the reports parse it back (reports/rows/row_base.cpp parse_item).
void check_gpu_index(const std::string& case_key);

/// Current UTC time, ISO 8601 with seconds ("2026-11-30T08:45:00Z").
std::string utc_now_iso();

/// JSON conversion (nlohmann ADL hooks): field by field, absent fields keeping their defaults.
void to_json(json& j, const PlannedCase& v);
void from_json(const json& j, PlannedCase& v);
void to_json(json& j, const SpecChoice& v);
void from_json(const json& j, SpecChoice& v);
void to_json(json& j, const NotRunCase& v);
void from_json(const json& j, NotRunCase& v);
void to_json(json& j, const TimeLimitStop& v);
void from_json(const json& j, TimeLimitStop& v);
void to_json(json& j, const RunRecord& v);
void from_json(const json& j, RunRecord& v);

}  // namespace clusterbench
