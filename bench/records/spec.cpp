// Spec loading with `extends`, row validation, and env-field units (docs/records.md "Spec").
#include "records/spec.hpp"

#include <fnmatch.h>
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

namespace clusterbench {

namespace {

// Units of the numeric env fields that a spec row may select. String fields have unit "".
const std::map<std::string, std::string>& env_units() {
  static const std::map<std::string, std::string> kUnits = {
      {"/host", ""},
      {"/cpu/model", ""},
      {"/cpu/sockets", "count"},
      {"/cpu/physical_cores", "count"},
      {"/cpu/threads", "count"},
      {"/cpu/numa_nodes", "count"},
      {"/memory/installed_gib", "GiB"},
      {"/memory/usable_gib", "GiB"},
      {"/memory/source", ""},
      {"/gpus/*", "count"},
      {"/gpus/*/name", ""},
      {"/gpus/*/uuid", ""},
      {"/gpus/*/serial", ""},
      {"/gpus/*/pci_bus_id", ""},
      {"/gpus/*/pci_device_id", ""},
      {"/gpus/*/vbios", ""},
      {"/gpus/*/driver", ""},
      {"/gpus/*/memory_gib", "GiB"},
      {"/gpus/*/pcie/gen_current", "count"},
      {"/gpus/*/pcie/gen_max", "count"},
      {"/gpus/*/pcie/width_current", "count"},
      {"/gpus/*/pcie/width_max", "count"},
      {"/gpus/*/nvlink_links_up", "count"},
      {"/gpus/*/ecc_mode", ""},
      {"/gpus/*/mig_mode", ""},
      {"/gpus/*/persistence_mode", ""},
      {"/nics/*", "count"},
      {"/nics/*/name", ""},
      {"/nics/*/kind", ""},
      {"/nics/*/link_layer", ""},
      {"/nics/*/state", ""},
      {"/nics/*/phys_state", ""},
      {"/nics/*/rate_gbps", "Gb/s"},
      {"/nics/*/mtu", "B"},
      {"/nics/*/netdev", ""},
      {"/nics/*/virtual", ""},
      {"/block_devices/*", "count"},
      {"/block_devices/*/capacity_tb", "TB"},
      {"/block_devices/*/nvme", ""},
      {"/block_devices/*/model", ""},
      {"/versions/driver", ""},
      {"/versions/cuda_driver", ""},
      {"/versions/cuda_runtime", ""},
      {"/versions/nccl", ""},
      {"/versions/kernel", ""},
      {"/software/cudnn/state", ""},
      {"/software/cudnn/version", ""},
      {"/software/nccl/state", ""},
      {"/software/nccl/version", ""},
      {"/software/pytorch/state", ""},
      {"/software/pytorch/version", ""},
      {"/software/pytorch_cuda", ""},
      {"/software/container_toolkit/state", ""},
      {"/software/container_runtime/state", ""},
      {"/software/kubernetes/state", ""},
      {"/software/device_plugin/state", ""},
      {"/software/gpu_feature_discovery/state", ""},
      {"/software/dcgm_exporter/state", ""},
      {"/software/nccl_env/NCCL_IB_DISABLE", ""},
      {"/software/nccl_env/NCCL_SOCKET_IFNAME", ""},
      {"/tuning/governor", ""},
      {"/tuning/nr_hugepages", "count"},
      {"/tuning/thp", ""},
      {"/tuning/net_core_rmem_max", "B"},
      {"/tuning/net_core_wmem_max", "B"},
      {"/tuning/tcp_rmem", ""},
      {"/tuning/tcp_wmem", ""},
  };
  return kUnits;
}

const std::set<std::string> kSeverities = {"fail", "warn"};
const std::set<std::string> kScopes = {"gpu", "node", "link", "cluster"};
const std::set<std::string> kAggregates = {"each", "min", "max", "median", "count", "sum"};
const std::set<std::string> kOps = {">=", "<=", "==", "!=", "in", "matches"};
/// The fields of a requirement row (docs/specs.md).
const std::set<std::string> kRowKeys = {"id",       "title",  "source", "remedy",
                                        "severity", "select", "scope",  "aggregate",
                                        "op",       "value",  "unit",   "remove"};

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string optional_string(const json& j, const char* key, const std::string& where) {
  return j.contains(key) ? require_field<std::string>(j, key, where) : std::string();
}

/// Throws InputError naming `where` when `pattern` is not an RE2 regex.
void check_regex(const std::string& pattern, const std::string& where) {
  SpecRegex check(pattern, where);
}

/// Validates one condition of select.where or select.require: a value (==) or {OP: value}.
void check_condition(const json& cond, const std::string& at, bool allow_ifname) {
  if (!cond.is_object()) return;
  if (cond.size() != 1) throw InputError(at + ": a condition object holds exactly one op");
  const std::string& op = cond.begin().key();
  const json& v = cond.begin().value();
  if (op == "nccl_ifname" && allow_ifname) {
    if (!v.is_string() || v.get<std::string>().empty())
      throw InputError(at + ": op 'nccl_ifname' needs an environment variable name");
  } else if (!kOps.count(op)) {
    throw InputError(at + ": op '" + op + "' is not one of >= <= == != in matches" +
                     (allow_ifname ? " nccl_ifname" : ""));
  } else if (op == "in" && !v.is_array()) {
    throw InputError(at + ": op 'in' needs an array");
  } else if ((op == ">=" || op == "<=") && !v.is_number()) {
    throw InputError(at + ": op '" + op + "' needs a number");
  } else if (op == "matches") {
    if (!v.is_string()) throw InputError(at + ": op 'matches' needs a regex string");
    check_regex(v.get<std::string>(), at);
  }
}

/// Validates select.where: an object of relative pointers into the element that the last `*`
/// of `env` names, each a known env field, with a value or a {OP: value} condition.
void check_where(const std::string& env, const json& where, const std::string& row) {
  if (!where.is_object()) throw InputError(row + ": field 'select.where' must be an object");
  if (where.empty()) return;
  auto star = env.rfind("/*");
  if (star == std::string::npos)
    throw InputError(row + ": field 'select.where' needs a '*' in select.env");
  std::string element = env.substr(0, star + 2);
  for (const auto& [key, cond] : where.items()) {
    std::string at = row + ": field 'select.where' key '" + key + "'";
    if (key.empty() || key[0] != '/') throw InputError(at + " must start with '/'");
    try {
      env_field_unit(element + key);
    } catch (const InputError& e) {
      throw InputError(at + ": " + e.what());
    }
    check_condition(cond, at, true);
  }
}

/// `key` for a message: control characters as JSON escapes (a NUL would cut the message, an
/// ESC reach the terminal), at most `max` bytes of it.
std::string printable_key(const std::string& key, size_t max = 80) {
  std::string out = json(key.substr(0, max)).dump(-1, ' ', false, json::error_handler_t::replace);
  out = out.substr(1, out.size() - 2);  // the quotes
  return key.size() > max ? out + "..." : out;
}

/// Throws InputError naming `where` when `j` has a key outside `known` (a typo would otherwise
/// be silently ignored). "$comment" (as in JSON Schema) is allowed everywhere.
void check_keys(const json& j, const std::set<std::string>& known, const std::string& where) {
  for (const auto& [key, value] : j.items())
    if (!known.count(key) && key != "$comment")
      throw InputError(where + ": unknown field '" + printable_key(key) + "'");
}

/// The first key that `text` (valid JSON) holds twice in one object, as "POINTER: key 'K'"
/// (POINTER: RFC 6901, of the object); empty when every object's keys are distinct. A JSON
/// reader keeps only one of the two values, so a table with one is refused, not half-read.
std::string duplicate_key(std::string_view text) {
  struct Level {
    bool array = false;
    std::set<std::string> keys;
    std::string key;
    size_t index = 0;
  };
  std::vector<Level> open;
  std::string found;
  auto pointer = [&] {
    std::string out;
    for (size_t i = 0; i + 1 < open.size(); ++i) {
      out.push_back('/');
      if (open[i].array) {
        out.append(std::to_string(open[i].index));
        continue;
      }
      for (char c : open[i].key) out.append(c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c));
    }
    return out.empty() ? std::string("/") : printable_key(out, 400);
  };
  auto element_done = [&] {
    if (!open.empty() && open.back().array) ++open.back().index;
  };
  auto on_event = [&](int, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      open.push_back(Level{event == E::array_start, {}, {}, 0});
    } else if (event == E::object_end || event == E::array_end) {
      open.pop_back();
      element_done();
    } else if (event == E::key) {
      open.back().key = parsed.get<std::string>();
      if (!open.back().keys.insert(open.back().key).second && found.empty())
        found = pointer() + ": key '" + printable_key(open.back().key) + "'";
    } else {
      element_done();
    }
    return true;
  };
  const json whole = json::parse(text, on_event);  // every event seen; the value is not needed
  (void)whole;
  return found;
}

/// Throws InputError naming `at` unless `pointer` is a JSON pointer (RFC 6901) without `*`.
void check_pointer(const std::string& pointer, const std::string& at) {
  if (pointer.empty() || pointer[0] != '/') throw InputError(at + " must start with '/'");
  if (pointer.find('*') != std::string::npos) throw InputError(at + " may not hold '*'");
  try {
    json::json_pointer p(pointer);
  } catch (const json::exception& e) {
    throw InputError(at + " is not a JSON pointer (" + e.what() + ")");
  }
}

/// select.require, select.unmet and select.describe of a records row: conditions on record
/// fields and the templates that name them.
void parse_record_conditions(const json& sel, const std::string& row, Select& out) {
  if (sel.contains("require")) out.require = sel.at("require");
  if (!out.require.is_object())
    throw InputError(row + ": field 'select.require' must be an object");
  for (const auto& [key, cond] : out.require.items()) {
    std::string at = row + ": field 'select.require' key '" + key + "'";
    check_pointer(key, at);
    check_condition(cond, at, false);
  }
  out.unmet = optional_string(sel, "unmet", row + " select");
  out.describe = optional_string(sel, "describe", row + " select");
  out.distinct = optional_string(sel, "distinct", row + " select");
  if (!out.distinct.empty()) check_pointer(out.distinct, row + ": field 'select.distinct'");
  if (!out.unmet.empty() && out.require.empty())
    throw InputError(row + ": field 'select.unmet' needs 'select.require'");
  for (const auto* t : {&out.unmet, &out.describe}) {
    const std::string field = t == &out.unmet ? "unmet" : "describe";
    for (size_t open = t->find("{/"); open != std::string::npos; open = t->find("{/", open + 1)) {
      size_t close = t->find('}', open);
      std::string at = row + ": field 'select." + field + "'";
      if (close == std::string::npos) throw InputError(at + " has a '{/' without its '}'");
      check_pointer(t->substr(open + 1, close - open - 1), at + " placeholder");
    }
  }
}

/// select: a health metric, an env pointer (with `where`), or benchmark + params + metric.
Select parse_select(const json& r, const std::string& row) {
  json sel = require_field<json>(r, "select", row);
  if (!sel.is_object()) throw InputError(row + ": field 'select' must be an object");
  // Each kind takes only its own fields: `where` on a records row, say, would never be applied.
  const std::set<std::string> records = {"benchmark", "metric",   "params",  "require",
                                         "unmet",     "describe", "distinct"};
  const std::string at = row + ": select";
  if (sel.contains("health") || sel.contains("env")) {
    for (const auto& key : records)
      if (sel.contains(key))
        throw InputError(row + ": field 'select." + key +
                         "' is for records rows (select.benchmark)");
    if (sel.contains("health"))
      check_keys(sel, {"health"}, at + " (a health row)");
    else
      check_keys(sel, {"env", "where"}, at + " (an env row)");
  } else {
    check_keys(sel, records, at);
  }
  Select out;
  if (sel.contains("health")) {
    out.health = require_field<std::string>(sel, "health", row + " select");
    if (out.health.empty()) throw InputError(row + ": field 'select.health' is empty");
  } else if (sel.contains("env")) {
    out.env = require_field<std::string>(sel, "env", row + " select");
    if (sel.contains("where")) out.where = sel.at("where");
    check_where(out.env, out.where, row);
  } else {
    out.benchmark = require_field<std::string>(sel, "benchmark", row + " select");
    out.metric = require_field<std::string>(sel, "metric", row + " select");
    if (sel.contains("params")) out.params = sel.at("params");
    if (!out.params.is_object())
      throw InputError(row + ": field 'select.params' must be an object");
    parse_record_conditions(sel, row, out);
    return out;
  }
  return out;
}

/// op and value: a known op with a value it can compare.
void parse_comparison(const json& r, const std::string& row, Requirement& q) {
  q.op = require_field<std::string>(r, "op", row);
  if (!kOps.count(q.op)) throw InputError(row + ": field 'op' is '" + q.op + "'");
  if (!r.contains("value")) throw InputError(row + ": missing field 'value'");
  q.value = r.at("value");
  if (q.op == "in" && !q.value.is_array())
    throw InputError(row + ": field 'value' must be an array for op 'in'");
  if (q.op == "matches" && !q.value.is_string())
    throw InputError(row + ": field 'value' must be a string (regex) for op 'matches'");
  if (q.op == "matches") check_regex(q.value.get<std::string>(), row + ": field 'value'");
  if ((q.op == ">=" || q.op == "<=") && !q.value.is_number())
    throw InputError(row + ": field 'value' must be a number for op '" + q.op + "'");
}

/// The row's unit against what it selects: an env field's own unit, count for health counters
/// and for aggregate count.
void check_unit(const Requirement& q, const std::string& row) {
  if (!q.select.env.empty()) {
    std::string field_unit;
    try {
      field_unit = env_field_unit(q.select.env);
    } catch (const InputError& e) {
      throw InputError(row + ": field 'select.env': " + e.what());
    }
    std::string expect = q.aggregate == "count" ? "count" : field_unit;
    if (q.unit != expect)
      throw InputError(row + ": field 'unit' is '" + q.unit + "' but " + q.select.env +
                       (q.aggregate == "count" ? " counted" : "") + " is in '" + expect + "'");
    // A string or boolean field has no order and no sum.
    bool numeric_agg = q.aggregate == "min" || q.aggregate == "max" || q.aggregate == "median" ||
                       q.aggregate == "sum";
    if (expect.empty() && numeric_agg)
      throw InputError(row + ": field 'aggregate' is '" + q.aggregate + "' but " + q.select.env +
                       " is not a number");
    if (expect.empty() && (q.op == ">=" || q.op == "<="))
      throw InputError(row + ": field 'op' is '" + q.op + "' but " + q.select.env +
                       " is not a number");
  } else if (!q.select.health.empty() && q.unit != "count") {
    throw InputError(row + ": field 'unit' is '" + q.unit + "' but health counter " +
                     q.select.health + " is in 'count'");
  } else if (q.aggregate == "count" && q.unit != "count") {
    throw InputError(row + ": field 'unit' must be 'count' with aggregate 'count'");
  }
}

Requirement parse_row(const json& r, const std::string& where, const std::string& schema) {
  Requirement q;
  q.id = require_field<std::string>(r, "id", where);
  std::string row = where + ": requirement '" + q.id + "'";
  check_keys(r, kRowKeys, row);
  q.title = require_field<std::string>(r, "title", row);
  q.source = require_field<std::string>(r, "source", row);
  if (q.source.empty())
    throw InputError(row + ": field 'source' is empty; name the threshold's source");
  if (r.contains("remedy")) {
    if (schema != kSpecSchema)
      throw InputError(row + ": field 'remedy' needs schema " + kSpecSchema + ", not " + schema);
    q.remedy = require_field<std::string>(r, "remedy", row);
    if (q.remedy.find_first_not_of(" \t\r\n") == std::string::npos)
      throw InputError(row + ": field 'remedy' is blank; say what to do, or leave the field out");
  }
  q.severity = require_field<std::string>(r, "severity", row);
  if (!kSeverities.count(q.severity))
    throw InputError(row + ": field 'severity' is '" + q.severity + "', expected fail or warn");
  q.select = parse_select(r, row);
  q.scope = require_field<std::string>(r, "scope", row);
  if (!kScopes.count(q.scope))
    throw InputError(row + ": field 'scope' is '" + q.scope +
                     "', expected gpu, node, link or cluster");
  q.aggregate = require_field<std::string>(r, "aggregate", row);
  if (!kAggregates.count(q.aggregate))
    throw InputError(row + ": field 'aggregate' is '" + q.aggregate + "'");
  parse_comparison(r, row, q);
  q.unit = require_field<std::string>(r, "unit", row);
  if (!is_known_unit(q.unit))
    throw InputError(row + ": field 'unit' '" + q.unit + "' is not a known unit");
  check_unit(q, row);
  return q;
}

PrometheusGauge parse_gauge(const json& g, const std::string& where) {
  if (!g.is_object()) throw InputError(where + " must be an object");
  check_keys(g, {"metric", "name", "help", "unit", "scale"}, where);
  PrometheusGauge out;
  out.metric = require_field<std::string>(g, "metric", where);
  out.name = require_field<std::string>(g, "name", where);
  auto name_char = [](char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && std::isdigit(static_cast<unsigned char>(c)));
  };
  bool valid = !out.name.empty();
  for (size_t i = 0; i < out.name.size(); ++i) valid = valid && name_char(out.name[i], i == 0);
  if (!valid)
    throw InputError(where + ": field 'name' '" + out.name + "' is not a Prometheus metric name");
  out.help = require_field<std::string>(g, "help", where);
  out.unit = require_field<std::string>(g, "unit", where);
  if (!is_known_unit(out.unit))
    throw InputError(where + ": field 'unit' '" + out.unit + "' is not a known unit");
  if (g.contains("scale")) out.scale = require_field<double>(g, "scale", where);
  if (!(out.scale > 0) || !std::isfinite(out.scale))
    throw InputError(where + ": field 'scale' must be a positive number (a unit's factor)");
  return out;
}

/// A chart's `split`: an array of param names.
std::vector<std::string> parse_split(const json& c, const std::string& where) {
  if (!c.is_array()) throw InputError(where + ": field 'split' must be an array of param names");
  std::vector<std::string> out;
  for (const auto& v : c) {
    if (!v.is_string() || v.get<std::string>().empty())
      throw InputError(where + ": field 'split' must be an array of param names");
    out.push_back(v.get<std::string>());
  }
  return out;
}

/// The fields of a chart beyond the axis: kind, scope, series, max_series, split, mark_x.
void parse_chart_layout(const json& c, const std::string& where, FamilyChart& out) {
  if (c.contains("kind")) out.kind = require_field<std::string>(c, "kind", where);
  if (out.kind != "lines" && out.kind != "groups")
    throw InputError(where + ": field 'kind' is '" + out.kind + "', expected lines or groups");
  out.scope = optional_string(c, "scope", where);
  if (!out.scope.empty() && out.scope != "node" && out.scope != "gpu" && out.scope != "cluster" &&
      out.scope != "link")
    throw InputError(where + ": field 'scope' is '" + out.scope +
                     "', expected node, gpu, cluster or link");
  if (c.contains("series")) out.series = require_field<std::string>(c, "series", where);
  if (out.series != "benchmark" && out.series != "item")
    throw InputError(where + ": field 'series' is '" + out.series +
                     "', expected benchmark or item");
  if (c.contains("max_series") && !c["max_series"].is_number_integer())
    throw InputError(where + ": field 'max_series' must be a whole number");
  if (c.contains("max_series")) out.max_series = require_field<int>(c, "max_series", where);
  if (out.max_series < 0) throw InputError(where + ": field 'max_series' is negative");
  if (c.contains("split")) out.split = parse_split(c.at("split"), where);
  if (c.contains("mark_x")) out.mark_x = require_field<double>(c, "mark_x", where);
  out.mark_label = optional_string(c, "mark_label", where);
}

FamilyChart parse_chart(const json& c, const std::string& where) {
  if (!c.is_object()) throw InputError(where + " must be an object");
  check_keys(c,
             {"kind", "x", "logx", "logy", "metric", "unit", "scope", "series", "max_series",
              "split", "mark_x", "mark_label", "title", "xlabel", "ylabel"},
             where);
  FamilyChart out;
  out.x = require_field<std::string>(c, "x", where);
  if (c.contains("logx")) out.logx = require_field<bool>(c, "logx", where);
  if (c.contains("logy")) out.logy = require_field<bool>(c, "logy", where);
  out.metric = optional_string(c, "metric", where);
  out.unit = optional_string(c, "unit", where);
  if (!out.unit.empty() && !is_known_unit(out.unit))
    throw InputError(where + ": field 'unit' '" + out.unit + "' is not a known unit");
  parse_chart_layout(c, where, out);
  if (out.kind == "lines" && out.metric.empty() && out.unit.empty())
    throw InputError(where + ": a lines chart needs 'metric' or 'unit' (one quantity per axis)");
  if (out.kind == "lines" && out.unit.empty() &&
      out.metric.find_first_of("*?[") != std::string::npos)
    throw InputError(where + ": field 'metric' '" + out.metric +
                     "' is a glob: give 'unit' too, so that one axis holds one quantity");
  out.title = require_field<std::string>(c, "title", where);
  out.xlabel = optional_string(c, "xlabel", where);
  out.ylabel = optional_string(c, "ylabel", where);
  if (out.xlabel.empty()) out.xlabel = out.x;
  return out;
}

/// A family's `compare` list: [{"metric": GLOB, "tolerance": FRACTION}], FRACTION in [0, 10].
std::vector<CompareTolerance> parse_compare(const json& c, const std::string& where) {
  if (!c.is_array()) throw InputError(where + " must be an array");
  std::vector<CompareTolerance> out;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!c[i].is_object()) throw InputError(at + " must be an object");
    check_keys(c[i], {"metric", "tolerance"}, at);
    CompareTolerance t;
    t.metric = require_field<std::string>(c[i], "metric", at);
    if (t.metric.empty()) throw InputError(at + ": field 'metric' is empty");
    t.tolerance = require_field<double>(c[i], "tolerance", at);
    if (!(t.tolerance >= 0 && t.tolerance <= 10))
      throw InputError(at + ": field 'tolerance' must be a fraction in [0, 10] (0.05 is 5%)");
    out.push_back(std::move(t));
  }
  return out;
}

SpecFamily parse_family(const json& f, const std::string& where) {
  if (!f.is_object()) throw InputError(where + " must be an object");
  SpecFamily out;
  out.benchmark = require_field<std::string>(f, "benchmark", where);
  if (out.benchmark.empty()) throw InputError(where + ": field 'benchmark' is empty");
  const std::string at = where + " ('" + out.benchmark + "')";
  check_keys(f, {"benchmark", "outlier_tolerance", "prometheus", "chart", "series", "compare"}, at);
  if (f.contains("compare")) out.compare = parse_compare(f.at("compare"), at + ": compare");
  if (f.contains("outlier_tolerance")) {
    double t = require_field<double>(f, "outlier_tolerance", at);
    if (!(t >= 0)) throw InputError(at + ": field 'outlier_tolerance' must be >= 0");
    out.outlier_tolerance = t;
  }
  if (f.contains("prometheus")) {
    const json& gauges = f.at("prometheus");
    if (!gauges.is_array()) throw InputError(at + ": field 'prometheus' must be an array");
    out.prometheus.emplace();
    for (size_t i = 0; i < gauges.size(); ++i)
      out.prometheus->push_back(
          parse_gauge(gauges[i], at + ": prometheus[" + std::to_string(i) + "]"));
  }
  if (f.contains("chart")) out.chart = parse_chart(f.at("chart"), at + ": chart");
  out.series = optional_string(f, "series", at);
  if (!out.series.empty() && out.series != "soak")
    throw InputError(at + ": field 'series' is '" + out.series + "', expected soak");
  return out;
}

/// A child's family over its parent's of the same glob: each field the child sets replaces the
/// parent's; the others are kept.
void override_family(SpecFamily& parent, SpecFamily child) {
  if (child.outlier_tolerance) parent.outlier_tolerance = child.outlier_tolerance;
  if (child.prometheus) parent.prometheus = std::move(child.prometheus);
  if (child.chart) parent.chart = std::move(child.chart);
  if (!child.series.empty()) parent.series = std::move(child.series);
  if (!child.compare.empty()) parent.compare = std::move(child.compare);
}

/// `families` of a clusterbench.spec/2 file merged into `spec`: a glob already there is
/// replaced in place, a new one appended.
void merge_families(const json& j, const std::string& schema, const std::string& path, Spec& spec) {
  if (!j.contains("families")) return;
  if (schema == kSpecSchemaV1)
    throw InputError(path + ": field 'families' needs schema " + kSpecSchemaV2 + " or later, not " +
                     schema);
  const json& fams = j.at("families");
  if (!fams.is_array()) throw InputError(path + ": field 'families' must be an array");
  std::set<std::string> here;
  for (size_t i = 0; i < fams.size(); ++i) {
    SpecFamily f = parse_family(fams[i], path + ": families[" + std::to_string(i) + "]");
    if (!f.compare.empty() && (schema == kSpecSchemaV1 || schema == kSpecSchemaV2))
      throw InputError(path + ": families[" + std::to_string(i) +
                       "]: field 'compare' needs schema " + kSpecSchemaV3 + " or later, not " +
                       schema);
    if (!here.insert(f.benchmark).second)
      throw InputError(path + ": families[" + std::to_string(i) + "]: benchmark '" + f.benchmark +
                       "' appears twice in this table");
    auto same = std::find_if(spec.families.begin(), spec.families.end(),
                             [&](const SpecFamily& x) { return x.benchmark == f.benchmark; });
    if (same != spec.families.end())
      override_family(*same, std::move(f));
    else
      spec.families.push_back(std::move(f));
  }
}

/// One entry of `tiers` over what the table inherited for that tier.
void parse_tier(const json& t, const std::string& at, SpecTier& out) {
  if (!t.is_object()) throw InputError(at + " must be an object");
  check_keys(t, {"path", "shared", "mount_point", "title"}, at);
  if (t.contains("path")) {
    out.path = t.at("path").is_null() ? "" : require_field<std::string>(t, "path", at);
    if (!t.at("path").is_null())
      if (std::string why = tier_path_refusal(out.path); !why.empty())
        throw InputError(at + ": field 'path': " + why + " (null: no path)");
  }
  if (t.contains("shared")) out.shared = require_field<bool>(t, "shared", at);
  if (t.contains("mount_point")) out.mount_point = require_field<bool>(t, "mount_point", at);
  if (t.contains("title")) out.title = require_field<std::string>(t, "title", at);
}

/// `tiers` of a clusterbench.spec/4 file merged into `spec`, kept in spec_tier_names() order.
void merge_tiers(const json& j, const std::string& schema, const std::string& path, Spec& spec) {
  if (!j.contains("tiers")) return;
  if (schema != kSpecSchema && schema != kSpecSchemaV4)
    throw InputError(path + ": field 'tiers' needs schema " + kSpecSchemaV4 + " or later, not " +
                     schema);
  const json& tiers = j.at("tiers");
  if (!tiers.is_object()) throw InputError(path + ": field 'tiers' must be an object");
  for (const auto& item : tiers.items()) {
    const std::string name = item.key();  // a copy: lambdas cannot capture a structured binding
    const json& t = item.value();
    const auto& names = spec_tier_names();
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw InputError(path + ": tiers: '" + name + "' is not a tier (hot, warm or cold)");
    auto it = std::find_if(spec.tiers.begin(), spec.tiers.end(),
                           [&](const SpecTier& x) { return x.name == name; });
    if (it == spec.tiers.end()) it = spec.tiers.insert(spec.tiers.end(), SpecTier{name});
    parse_tier(t, path + ": tiers." + name, *it);
  }
  auto rank = [](const SpecTier& x) {
    const auto& n = spec_tier_names();
    return std::find(n.begin(), n.end(), x.name) - n.begin();
  };
  std::sort(spec.tiers.begin(), spec.tiers.end(),
            [&](const SpecTier& a, const SpecTier& b) { return rank(a) < rank(b); });
}

void parse_match(const json& j, const std::string& path, Spec& spec) {
  if (!j.contains("match")) return;
  const json& m = j.at("match");
  if (!m.is_object()) throw InputError(path + ": field 'match' must be an object");
  check_keys(m, {"no_gpu", "gpu_name", "pci_device_ids", "gpu_count"}, path + ": match");
  spec.has_match = true;
  spec.match = SpecMatch{};
  if (m.contains("no_gpu")) spec.match.no_gpu = require_field<bool>(m, "no_gpu", path + " match");
  if (m.contains("gpu_name")) {
    spec.match.gpu_name = require_field<std::string>(m, "gpu_name", path + " match");
    check_regex(spec.match.gpu_name, path + ": field 'match.gpu_name'");
  }
  if (m.contains("pci_device_ids"))
    spec.match.pci_device_ids =
        require_field<std::vector<std::string>>(m, "pci_device_ids", path + " match");
  if (m.contains("gpu_count"))
    spec.match.gpu_count = require_field<int>(m, "gpu_count", path + " match");
}

/// Drops the inherited row `id`; throws InputError (`what`) when no parent row has it.
void remove_row(Spec& spec, const std::string& id, const std::string& what) {
  auto before = spec.requirements.size();
  std::erase_if(spec.requirements, [&](const Requirement& r) { return r.id == id; });
  if (spec.requirements.size() == before) throw InputError(what);
}

/// `requirements` and `remove` of one file merged into `spec`: rows override by id.
void merge_rows(const json& j, const std::string& schema, const std::string& path, Spec& spec) {
  json rows = require_field<json>(j, "requirements", path);
  if (!rows.is_array()) throw InputError(path + ": field 'requirements' must be an array");
  std::set<std::string> ids_here;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string where = path + ": requirements[" + std::to_string(i) + "]";
    // {"id": X, "remove": true} drops an inherited row; it needs no other field, and may keep
    // the row's own (not checked), but no unknown one.
    if (rows[i].is_object() && rows[i].contains("remove")) {
      std::string id = require_field<std::string>(rows[i], "id", where);
      check_keys(rows[i], kRowKeys, where + ": requirement '" + id + "'");
      if (require_field<bool>(rows[i], "remove", where + ": requirement '" + id + "'")) {
        remove_row(spec, id,
                   where + ": requirement '" + id + "' has 'remove' but no parent row has it");
        continue;
      }
    }
    Requirement q = parse_row(rows[i], where, schema);
    if (!ids_here.insert(q.id).second)
      throw InputError(where + ": requirement id '" + q.id + "' appears twice in this table");
    bool replaced = false;
    for (auto& existing : spec.requirements)
      if (existing.id == q.id) existing = q, replaced = true;
    if (!replaced) spec.requirements.push_back(q);
  }
  // `remove`: ids inherited from the parent that this table drops.
  if (j.contains("remove"))
    for (const auto& id : require_field<std::vector<std::string>>(j, "remove", path))
      remove_row(spec, id, path + ": field 'remove' names '" + id + "', which no parent row has");
}

/// One table's JSON, checked before anything in it is used: JSON, an object, no key twice, only
/// known top-level fields, a known schema. Every error names `path`, and `by` when not empty.
json read_table(const std::string& path, const std::string& by) {
  const std::string text = read_regular_file(path, kMaxSpecBytes, by);
  try {
    json j = parse_json_text(text, path);
    if (!j.is_object()) throw InputError(path + ": a spec table must be a JSON object");
    if (const std::string dup = duplicate_key(text); !dup.empty())
      throw InputError(path + ": " + dup + " appears twice in one object (a reader keeps one)");
    check_keys(j,
               {"schema", "name", "title", "extends", "match", "requirements", "remove", "families",
                "tiers", "nics_per_node"},
               path);
    const std::string schema = require_field<std::string>(j, "schema", path);
    if (schema != kSpecSchema && schema != kSpecSchemaV4 && schema != kSpecSchemaV3 &&
        schema != kSpecSchemaV2 && schema != kSpecSchemaV1)
      throw InputError(path + ": field 'schema' is '" + schema + "', expected " + kSpecSchema +
                       " (or " + kSpecSchemaV4 + ", " + kSpecSchemaV3 + ", " + kSpecSchemaV2 +
                       ", " + kSpecSchemaV1 + ")");
    return j;
  } catch (const InputError& e) {
    if (by.empty()) throw;
    throw InputError(std::string(e.what()) + " (" + by + ")");
  }
}

/// The tables `extends` names: one file, or an array of files merged in order.
std::vector<std::string> parents_of(const json& j, const std::string& path) {
  const json& e = j.at("extends");
  if (e.is_string()) return {e.get<std::string>()};
  if (!e.is_array() || e.empty())
    throw InputError(path + ": field 'extends' must be a file name or a non-empty array of them");
  std::vector<std::string> out;
  for (const auto& x : e) {
    if (!x.is_string()) throw InputError(path + ": field 'extends' holds a non-string");
    out.push_back(x.get<std::string>());
  }
  return out;
}

/// A later parent of `extends` over the earlier ones: its rows, families and tiers replace
/// theirs by id, benchmark and name, or are added; title and match stay the first's that has
/// them.
void merge_parent(Spec& spec, const Spec& p) {
  for (const auto& q : p.requirements) {
    auto it = std::find_if(spec.requirements.begin(), spec.requirements.end(),
                           [&](const Requirement& r) { return r.id == q.id; });
    if (it != spec.requirements.end())
      *it = q;
    else
      spec.requirements.push_back(q);
  }
  for (const auto& f : p.families) {
    auto it = std::find_if(spec.families.begin(), spec.families.end(),
                           [&](const SpecFamily& x) { return x.benchmark == f.benchmark; });
    if (it != spec.families.end())
      override_family(*it, f);
    else
      spec.families.push_back(f);
  }
  for (const auto& t : p.tiers) {
    auto it = std::find_if(spec.tiers.begin(), spec.tiers.end(),
                           [&](const SpecTier& x) { return x.name == t.name; });
    if (it != spec.tiers.end())
      *it = t;
    else
      spec.tiers.push_back(t);
  }
  if (spec.title.empty()) spec.title = p.title;
  if (!spec.has_match && p.has_match) spec.match = p.match, spec.has_match = true;
  for (const auto& f : p.extends_chain)
    if (std::find(spec.extends_chain.begin(), spec.extends_chain.end(), f) ==
        spec.extends_chain.end())
      spec.extends_chain.push_back(f);
}

/// One table and its ancestors. `chain` holds the tables that extend this one, nearest last:
/// every error met in an ancestor says which table extended it.
Spec load_one(const std::string& path, std::set<std::string>& seen,
              std::vector<std::string>& chain) {
  // Canonical names, so that "a/../b.json" and "b.json" are seen as one file in a cycle.
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  if (ec) canonical = path;
  const std::string by = chain.empty() ? "" : "extended by " + chain.back();
  if (!seen.insert(canonical).second)
    throw InputError(path + ": 'extends' forms a cycle (" + by + ")");
  if (static_cast<int>(chain.size()) >= kMaxExtendsDepth)
    throw InputError(path + ": 'extends' chain longer than " + std::to_string(kMaxExtendsDepth) +
                     " tables (" + by + ")");
  const json j = read_table(path, by);
  const std::string schema = j.at("schema").get<std::string>();
  Spec spec;
  if (j.contains("extends")) {
    chain.push_back(path);
    bool first = true;
    for (const std::string& parent : parents_of(j, path)) {
      Spec p =
          load_one(parent.starts_with("/") ? parent : dir_of(path) + "/" + parent, seen, chain);
      if (first)
        spec = std::move(p), first = false;
      else
        merge_parent(spec, p);
    }
    chain.pop_back();
  }
  seen.erase(canonical);  // an ancestor only on this path: two parents may share one
  spec.schema = schema;
  spec.path = path;
  spec.extends_chain.push_back(path);
  try {
    spec.name = require_field<std::string>(j, "name", path);
    if (j.contains("title")) spec.title = require_field<std::string>(j, "title", path);
    parse_match(j, path, spec);
    merge_rows(j, schema, path, spec);
    merge_families(j, schema, path, spec);
    merge_tiers(j, schema, path, spec);
  } catch (const InputError& e) {
    if (chain.empty()) throw;
    throw InputError(std::string(e.what()) + " (" + by + ")");
  }
  return spec;
}

}  // namespace

std::string env_field_unit(const std::string& pointer) {
  auto it = env_units().find(pointer);
  if (it == env_units().end())
    throw InputError("'" + pointer + "' is not a known env field (see docs/records.md)");
  return it->second;
}

Spec load_spec(const std::string& path) {
  std::set<std::string> seen;
  std::vector<std::string> chain;
  return load_one(path, seen, chain);
}

namespace {
/// How deep `pattern` nests its groups (escapes and bracket expressions skipped).
int group_depth(const std::string& pattern) {
  int depth = 0, deepest = 0;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\')
      ++i;
    else if (in_class)
      in_class = c != ']';
    else if (c == '[')
      in_class = true;
    else if (c == '(')
      deepest = std::max(deepest, ++depth);
    else if (c == ')')
      --depth;
  }
  return deepest;
}
}  // namespace

SpecRegex::SpecRegex(const std::string& pattern, const std::string& where, bool icase) {
  // RE2 itself takes 20,000 nested groups; no spec needs more than a few.
  if (group_depth(pattern) > kMaxRegexGroupDepth)
    throw InputError(where + " is not a valid regex: groups nested deeper than " +
                     std::to_string(kMaxRegexGroupDepth));
  RE2::Options opt;
  opt.set_log_errors(false);
  opt.set_case_sensitive(!icase);
  auto re = std::make_shared<const RE2>(pattern, opt);
  // Both cut at 200 characters: the error quotes the pattern, which may be megabytes.
  auto cut = [](const std::string& s) { return s.size() > 200 ? s.substr(0, 200) + "..." : s; };
  if (!re->ok())
    throw InputError(where + " is not a valid regex '" + cut(pattern) + "' (" + cut(re->error()) +
                     ")");
  re_ = std::move(re);
}

bool SpecRegex::search(const std::string& text) const { return RE2::PartialMatch(text, *re_); }

std::vector<std::pair<std::string, json>> expand_pointer(const json& doc,
                                                         const std::string& pointer) {
  // Walks with pointers into `doc` and copies only the matches: copying each step's subtrees
  // (whole EnvRecords) was most of the env rows' time at 1,000 nodes (docs/report.md "Scale").
  std::vector<std::pair<std::string, const json*>> cur = {{"", &doc}};
  size_t pos = 1;
  while (pos <= pointer.size() && !pointer.empty()) {
    size_t next = pointer.find('/', pos);
    std::string seg =
        pointer.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    std::vector<std::pair<std::string, const json*>> out;
    for (const auto& [path, node] : cur) {
      if (seg == "*") {
        if (node->is_array())
          for (size_t i = 0; i < node->size(); ++i)
            out.emplace_back(path + "/" + std::to_string(i), &(*node)[i]);
        else if (node->is_object())
          for (const auto& [k, v] : node->items()) out.emplace_back(path + "/" + k, &v);
      } else if (node->is_object()) {
        if (auto it = node->find(seg); it != node->end()) out.emplace_back(path + "/" + seg, &*it);
      } else if (node->is_array() && !seg.empty() &&
                 seg.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(seg) < node->size()) {
        out.emplace_back(path + "/" + seg, &node->at(std::stoul(seg)));
      }
    }
    cur = std::move(out);
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  std::vector<std::pair<std::string, json>> found;
  found.reserve(cur.size());
  for (auto& [path, node] : cur) found.emplace_back(std::move(path), *node);
  return found;
}

std::string fill_template(const std::string& text, const json& doc) {
  auto value = [&doc](const std::string& pointer) -> std::string {
    try {
      json::json_pointer p(pointer);
      if (!doc.contains(p) || doc.at(p).is_null()) return "unknown";
      const json& v = doc.at(p);
      return v.is_string() ? v.get<std::string>() : v.dump();
    } catch (const json::exception&) {
      return "unknown";
    }
  };
  std::string out;
  size_t pos = 0;
  for (size_t open = text.find("{/"); open != std::string::npos; open = text.find("{/", pos)) {
    size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    out += text.substr(pos, open - pos) + value(text.substr(open + 1, close - open - 1));
    pos = close + 1;
  }
  return out + text.substr(pos);
}

std::string unknown_reason(const json& doc, const std::string& pointer) {
  // From the field's own object upwards: the nearest `unknown` map that names the rest of the path.
  for (size_t cut = pointer.rfind('/'); cut != std::string::npos && cut > 0;
       cut = pointer.rfind('/', cut - 1)) {
    auto owner = expand_pointer(doc, pointer.substr(0, cut));
    if (owner.empty() || !owner.front().second.is_object()) continue;
    auto unknown = owner.front().second.find("unknown");
    if (unknown == owner.front().second.end() || !unknown->is_object()) continue;
    auto why = unknown->find(pointer.substr(cut + 1));
    if (why != unknown->end() && why->is_string()) return why->get<std::string>();
  }
  return "";
}

const std::vector<std::string>& spec_tier_names() {
  static const std::vector<std::string> k = {"hot", "warm", "cold"};
  return k;
}

json tiers_json(const std::vector<SpecTier>& tiers) {
  json out = json::array();
  for (const auto& t : tiers)
    out.push_back({{"name", t.name},
                   {"title", t.title},
                   {"path", t.path},
                   {"shared", t.shared ? json(*t.shared) : json(nullptr)},
                   {"mount_point", t.mount_point}});
  return out;
}

bool is_object_storage_url(const std::string& path) {
  // Object stores' schemes (S3 and its kin, Google Cloud Storage, Azure Blob, Swift, MinIO).
  static const std::set<std::string> kSchemes = {"s3",    "s3a",   "s3n",   "gs",   "gcs",
                                                 "az",    "abfs",  "abfss", "wasb", "wasbs",
                                                 "swift", "minio", "oss",   "cos"};
  auto sep = path.find("://");
  if (sep == std::string::npos || !kSchemes.count(path.substr(0, sep))) return false;
  if (sep == std::string::npos || sep == 0 || !std::isalpha(static_cast<unsigned char>(path[0])))
    return false;
  for (size_t i = 0; i < sep; ++i) {
    const unsigned char c = path[i];
    if (!std::isalnum(c) && c != '+' && c != '.' && c != '-') return false;
  }
  return sep + 3 < path.size();
}

std::string tier_path_refusal(const std::string& path) {
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f) return "'" + path + "' holds a control character";
  if (is_object_storage_url(path)) return "";
  if (path.find("://") != std::string::npos)
    return "'" + path + "' is a URL of no object store (s3, gs, az, abfs, wasb, swift, oss, cos: " +
           "not measured); a filesystem is named by its absolute path";
  if (path.empty() || path[0] != '/')
    return "'" + path + "' is neither an absolute path nor an object-storage URL (s3://...)";
  return "";
}

bool glob_match(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

}  // namespace clusterbench
