// ResultRecord, its scope and case key <-> JSON (result.hpp).
#include "records/result.hpp"

#include <set>
#include <stdexcept>

#include "records/json_fields.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

bool is_known_unit(const std::string& unit) {
  static const std::set<std::string> kUnits = {"GB/s", "Gb/s", "TFLOP/s", "us",        "s", "B",
                                               "GiB",  "TB",   "IOPS",    "samples/s", "C", "W",
                                               "MHz",  "%",    "count",   "ratio",     ""};
  return kUnits.count(unit) > 0;
}

std::string scope_item(const Scope& s) {
  if (s.kind == ScopeKind::gpu) {
    std::string item = s.host + "/gpu" + std::to_string(s.gpu_index);
    if (!s.uuid.empty()) item += "[" + s.uuid + "]";
    return item;
  }
  if (s.kind == ScopeKind::link) {
    if (s.hosts.size() == 2) return s.hosts[0] + "<->" + s.hosts[1];
    return "link";
  }
  if (s.kind == ScopeKind::cluster) return "cluster";
  if (s.kind == ScopeKind::rank)
    return s.host + "/rank" + std::to_string(s.rank);  // a CPU rank (burn-in)
  return s.host;
}

std::string make_case_key(const std::string& benchmark, const json& params, const Scope& s) {
  // nlohmann's object type is a std::map: dump() already sorts keys, so this is canonical. A
  // param's bytes that are not UTF-8 (a path given on the command line) become U+FFFD.
  return benchmark + "|" + dump_json(params) + "|" + valid_utf8(scope_item(s));
}

using namespace json_fields;

#define CB_TO(field) put(j, #field, v.field)
#define CB_FROM(field) opt(j, #field, v.field)

void json_fields::require_host_name(const std::string& name, const char* field) {
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f)
      throw std::runtime_error(std::string(field) + " " + valid_utf8(json(name).dump()) +
                               " holds a control character; a host name cannot");
}

void check_host_names(const Scope& s) {
  require_host_name(s.host, "scope host");
  for (const auto& h : s.hosts) require_host_name(h, "scope hosts");
}

void to_json(json& j, const Metric& v) {
  CB_TO(name), CB_TO(value), CB_TO(unit), CB_TO(higher_is_better);
  if (!v.reps.empty()) {
    CB_TO(reps);
    j["spread"] = relative_spread(v.reps);  // for readers; recomputed from reps when read
  }
  if (v.resolution > 0) CB_TO(resolution);
  if (v.work > 0) CB_TO(work);
}
void from_json(const json& j, Metric& v) {
  CB_FROM(name), CB_FROM(unit), CB_FROM(higher_is_better), CB_FROM(reps), CB_FROM(resolution),
      CB_FROM(work);
  // A non-finite value is written as null by the JSON library: never read it as 0.
  if (!j.contains("value") || !j.at("value").is_number())
    throw FieldError("/value", "of metric '" + v.name + "' is not a finite number");
  v.value = j.at("value").get<double>();
}
void to_json(json& j, const TimeStats& v) {
  CB_TO(n), CB_TO(min), CB_TO(median), CB_TO(mean), CB_TO(p95), CB_TO(max), CB_TO(spread);
}
void from_json(const json& j, TimeStats& v) {
  CB_FROM(n), CB_FROM(min), CB_FROM(median), CB_FROM(mean), CB_FROM(p95), CB_FROM(max),
      CB_FROM(spread);
}
const char* scope_kind_name(ScopeKind k) {
  switch (k) {
    case ScopeKind::gpu:
      return "gpu";
    case ScopeKind::node:
      return "node";
    case ScopeKind::rank:
      return "rank";
    case ScopeKind::link:
      return "link";
    case ScopeKind::cluster:
      return "cluster";
  }
  return "?";
}

bool parse_scope_kind(std::string_view text, ScopeKind& out) {
  for (ScopeKind k :
       {ScopeKind::gpu, ScopeKind::node, ScopeKind::rank, ScopeKind::link, ScopeKind::cluster})
    if (text == scope_kind_name(k)) {
      out = k;
      return true;
    }
  return false;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::failed:
      return "failed";
    case Status::waived:
      return "waived";
  }
  return "?";
}

bool parse_status(std::string_view text, Status& out) {
  for (Status s : {Status::ok, Status::failed, Status::waived})
    if (text == status_name(s)) {
      out = s;
      return true;
    }
  return false;
}

void to_json(json& j, const ScopeKind& v) { j = scope_kind_name(v); }
void from_json(const json& j, ScopeKind& v) {
  const std::string text = j.is_string() ? j.get<std::string>() : j.dump();
  if (!j.is_string() || !parse_scope_kind(text, v))
    throw FieldError(
        "", "is " + text + ", expected \"gpu\", \"node\", \"rank\", \"link\" or \"cluster\"");
}
void to_json(json& j, const Status& v) { j = status_name(v); }
void from_json(const json& j, Status& v) {
  const std::string text = j.is_string() ? j.get<std::string>() : j.dump();
  if (!j.is_string() || !parse_status(text, v))
    throw FieldError("", "is '" + text + "', expected ok, failed or waived");
}

void to_json(json& j, const Scope& v) {
  j["kind"] = v.kind;
  if (!v.host.empty()) j["host"] = v.host;
  if (v.rank >= 0) j["rank"] = v.rank;
  if (v.gpu_index >= 0) j["gpu_index"] = v.gpu_index;
  if (!v.uuid.empty()) j["uuid"] = v.uuid;
  if (!v.pci_bus_id.empty()) j["pci_bus_id"] = v.pci_bus_id;
  if (!v.hosts.empty()) j["hosts"] = v.hosts;
}
void from_json(const json& j, Scope& v) {
  CB_FROM(kind), CB_FROM(host), CB_FROM(rank), CB_FROM(gpu_index), CB_FROM(uuid),
      CB_FROM(pci_bus_id), CB_FROM(hosts);
}
void to_json(json& j, const ErrorInfo& v) {
  CB_TO(library), CB_TO(code), CB_TO(call), CB_TO(where), CB_TO(host), CB_TO(rank);
}
void from_json(const json& j, ErrorInfo& v) {
  CB_FROM(library), CB_FROM(code), CB_FROM(call), CB_FROM(where), CB_FROM(host), CB_FROM(rank);
}
void to_json(json& j, const ResultRecord& v) {
  CB_TO(schema), CB_TO(run_id), CB_TO(benchmark), CB_TO(params), CB_TO(case_key), CB_TO(status),
      CB_TO(message), CB_TO(metrics), CB_TO(time), CB_TO(scope), CB_TO(combine), CB_TO(started_at),
      CB_TO(duration_s);
  if (v.error) j["error"] = *v.error;
  if (!v.extra.empty()) j["extra"] = v.extra;
}
void from_json(const json& j, ResultRecord& v) {
  v.schema = require_field<std::string>(j, "schema", "result record");
  if (v.schema != kResultSchema)
    throw InputError("result record: schema '" + v.schema + "' is not " + kResultSchema);
  v.benchmark = require_field<std::string>(j, "benchmark", "result record");
  v.status = require_field<Status>(j, "status", "result record");
  CB_FROM(run_id), CB_FROM(params), CB_FROM(case_key), CB_FROM(message), CB_FROM(metrics),
      CB_FROM(time), CB_FROM(scope), CB_FROM(combine), CB_FROM(started_at), CB_FROM(duration_s),
      CB_FROM(extra);
  if (j.contains("error")) at_field("error", [&] { v.error = j.at("error").get<ErrorInfo>(); });
  // Read as objects everywhere (a case key, a report row's params test, an erase()): a number
  // here stopped `report` with "cannot use erase() with number" (exit 3).
  if (!v.params.is_object())
    throw InputError("result record: field 'params' must be an object, not " +
                     std::string(v.params.type_name()));
  if (!v.extra.is_null() && !v.extra.is_object())
    throw InputError("result record: field 'extra' must be an object, not " +
                     std::string(v.extra.type_name()));
}

#undef CB_TO
#undef CB_FROM

}  // namespace clusterbench
