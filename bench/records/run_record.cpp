// RunRecord <-> JSON (run_record.hpp).
#include "records/run_record.hpp"

#include <charconv>
#include <climits>
#include <ctime>

#include "records/json_fields.hpp"

namespace clusterbench {

using namespace json_fields;

#define CB_TO(field) put(j, #field, v.field)
#define CB_FROM(field) opt(j, #field, v.field)

void to_json(json& j, const PlannedCase& v) {
  CB_TO(benchmark), CB_TO(params), CB_TO(level), CB_TO(case_keys);
}
void check_gpu_index(const std::string& case_key) {
  const size_t bar = case_key.rfind('|');
  const size_t g = case_key.rfind("/gpu");
  if (g == std::string::npos || (bar != std::string::npos && g < bar)) return;
  size_t end = g + 4;
  while (end < case_key.size() && std::isdigit(static_cast<unsigned char>(case_key[end]))) ++end;
  if (end == g + 4) return;
  int index = 0;
  const auto [ptr, ec] = std::from_chars(case_key.data() + g + 4, case_key.data() + end, index);
  if (ec != std::errc())
    throw FieldError("", "'" + case_key + "' has a GPU index out of range (0 to " +
                             std::to_string(INT_MAX) + ")");
}

void from_json(const json& j, PlannedCase& v) {
  CB_FROM(benchmark), CB_FROM(params), CB_FROM(level), CB_FROM(case_keys);
  for (size_t i = 0; i < v.case_keys.size(); ++i)
    at_field("case_keys/" + std::to_string(i), [&] { check_gpu_index(v.case_keys[i]); });
}
void to_json(json& j, const SpecChoice& v) {
  CB_TO(path), CB_TO(sha256), CB_TO(name), CB_TO(selected_by);
}
void from_json(const json& j, SpecChoice& v) {
  CB_FROM(path), CB_FROM(sha256), CB_FROM(name), CB_FROM(selected_by);
}
void to_json(json& j, const NotRunCase& v) { CB_TO(benchmark), CB_TO(params); }
void from_json(const json& j, NotRunCase& v) { CB_FROM(benchmark), CB_FROM(params); }
void to_json(json& j, const TimeLimitStop& v) {
  CB_TO(seconds), CB_TO(stopped_after_s), CB_TO(not_run);
}
void from_json(const json& j, TimeLimitStop& v) {
  CB_FROM(seconds), CB_FROM(stopped_after_s), CB_FROM(not_run);
}
void to_json(json& j, const RunRecord& v) {
  CB_TO(schema), CB_TO(run_id), CB_TO(argv), CB_TO(version), CB_TO(suite), CB_TO(only), CB_TO(set),
      CB_TO(spec), CB_TO(world_size), CB_TO(hosts), CB_TO(started_at), CB_TO(finished_at),
      CB_TO(aborted), CB_TO(abort_reason), CB_TO(plan), CB_TO(env);
  j["exit_code"] = v.exit_code ? json(*v.exit_code) : json(nullptr);
  if (v.time_limit) j["time_limit"] = *v.time_limit;
  if (v.rounds > 1) j["rounds"] = v.rounds;
}
void from_json(const json& j, RunRecord& v) {
  v.schema = require_field<std::string>(j, "schema", "run.json");
  if (v.schema != kRunSchema)
    throw InputError("run.json: schema '" + v.schema + "' is not " + kRunSchema);
  v.run_id = require_field<std::string>(j, "run_id", "run.json");
  CB_FROM(argv), CB_FROM(version), CB_FROM(suite), CB_FROM(only), CB_FROM(set), CB_FROM(spec),
      CB_FROM(world_size), CB_FROM(hosts), CB_FROM(started_at), CB_FROM(finished_at),
      CB_FROM(aborted), CB_FROM(abort_reason), CB_FROM(plan), CB_FROM(env);
  opt(j, "exit_code", v.exit_code);
  if (j.contains("time_limit") && !j.at("time_limit").is_null())
    v.time_limit = require_field<TimeLimitStop>(j, "time_limit", "run.json");
  if (j.contains("rounds")) {
    const json& r = j.at("rounds");
    if (!r.is_number_integer() || r.get<long long>() < 1 || r.get<long long>() > kMaxRounds)
      throw InputError(
          "run.json: field 'rounds': " + r.dump(-1, ' ', false, json::error_handler_t::replace) +
          " is not a whole number from 1 to " + std::to_string(kMaxRounds));
    v.rounds = r.get<int>();
  }
}

#undef CB_TO
#undef CB_FROM

std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace clusterbench
