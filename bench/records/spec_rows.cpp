// Spec rows validated as they load (docs/specs.md "Rows"), and the units of the env fields a row
// may select.
#include <algorithm>
#include <cmath>
#include <map>

#include "records/spec.hpp"
#include "records/spec_parse.hpp"

namespace clusterbench {

using namespace spec_parse;

namespace {

/// The software stack's fields (SoftwareStack): text, no unit.
const std::vector<std::string>& software_fields_env() {
  static const std::vector<std::string> kFields = {
      "/software/cudnn/state",
      "/software/cudnn/version",
      "/software/nccl/state",
      "/software/nccl/version",
      "/software/pytorch/state",
      "/software/pytorch/version",
      "/software/pytorch_cuda",
      "/software/container_toolkit/state",
      "/software/cuda_toolkit/state",
      "/software/cuda_toolkit/version",
      "/software/container_runtime/state",
      "/software/kubernetes/state",
      "/software/device_plugin/state",
      "/software/gpu_feature_discovery/state",
      "/software/dcgm_exporter/state",
      "/software/device_plugin/version",
      "/software/gpu_feature_discovery/version",
      "/software/dcgm_exporter/version",
      "/software/deepspeed/state",
      "/software/deepspeed/version",
      "/software/os/version",
      "/software/nccl_env/NCCL_IB_DISABLE",
      "/software/nccl_env/NCCL_SOCKET_IFNAME",
  };
  return kFields;
}

// Units of the numeric env fields that a spec row may select. String fields have unit "".
const std::map<std::string, std::string>& env_units() {
  static const std::map<std::string, std::string> kUnits = [] {
    std::map<std::string, std::string> units = {
        {"/host", ""},
        {"/cpu/model", ""},
        {"/cpu/sockets", "count"},
        {"/cpu/physical_cores", "count"},
        {"/cpu/threads", "count"},
        {"/cpu/numa_nodes", "count"},
        {"/memory/installed_gib", "GiB"},
        {"/memory/usable_gib", "GiB"},
        {"/memory/source", ""},
        {"/memory/type", ""},
        {"/memory/gpu_memory_ratio", "ratio"},
        {"/cpu/base_mhz", "MHz"},
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
        {"/tuning/governor", ""},
        {"/tuning/nr_hugepages", "count"},
        {"/tuning/thp", ""},
        {"/tuning/net_core_rmem_max", "B"},
        {"/tuning/net_core_wmem_max", "B"},
        {"/tuning/tcp_rmem", ""},
        {"/tuning/tcp_wmem", ""},
    };
    for (const auto& f : software_fields_env()) units[f] = "";
    return units;
  }();
  return kUnits;
}

const std::set<std::string> kSeverities = {"fail", "warn"};
const std::set<std::string> kScopes = {"gpu", "node", "link", "cluster"};
const std::set<std::string> kAggregates = {"each", "min", "max", "median", "count", "sum"};
const std::set<std::string> kOps = {">=", "<=", "==", "!=", "in", "matches"};

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
  if ((q.op == ">=" || q.op == "<=") && q.value.is_object()) {  // a threshold per NIC
    if (q.value.size() != 1 || !q.value.contains("per_nic") || !q.value["per_nic"].is_number() ||
        !(q.value["per_nic"].get<double>() > 0))
      throw InputError(row + ": field 'value' must be a number, or {\"per_nic\": N} with N > 0");
    return;
  }
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

/// A relative row (Requirement::relative): "typical", on records, in percent, each item.
void parse_relative(const json& r, const std::string& row, const std::string& schema,
                    Requirement& q) {
  if (schema != kSpecSchema)
    throw InputError(row + ": field 'relative' needs schema " + kSpecSchema + ", not " + schema);
  q.relative = require_field<std::string>(r, "relative", row);
  if (q.relative != "typical")
    throw InputError(row + ": field 'relative' is '" + q.relative + "', expected typical");
  if (q.select.benchmark.empty())
    throw InputError(row + ": field 'relative' needs a records row (select.benchmark)");
  if (q.unit != "%")
    throw InputError(row + ": field 'unit' must be '%' with 'relative' (percent of typical)");
  if (q.op != ">=" && q.op != "<=")
    throw InputError(row + ": field 'op' must be '>=' or '<=' with 'relative'");
  if (!q.value.is_number() || !(q.value.get<double>() > 0))
    throw InputError(row + ": field 'value' must be a percent above 0 with 'relative'");
  if (q.scope == "cluster" || q.aggregate != "each")
    throw InputError(row + ": field 'relative' needs scope link, gpu or node and aggregate each");
}

}  // namespace

Requirement spec_parse::parse_row(const json& r, const std::string& where,
                                  const std::string& schema) {
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
  if (r.contains("relative")) parse_relative(r, row, schema, q);
  check_unit(q, row);
  return q;
}

std::string env_field_unit(const std::string& pointer) {
  auto it = env_units().find(pointer);
  if (it == env_units().end())
    throw InputError("'" + pointer + "' is not a known env field (see docs/records.md)");
  return it->second;
}

}  // namespace clusterbench
