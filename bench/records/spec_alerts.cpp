// A spec table's Prometheus alerting rules (`alerts`, spec/5): read, merged over the parents'
// and given their thresholds from the rows they name (spec_parse.hpp).
#include <algorithm>
#include <cmath>
#include <map>

#include "records/spec_parse.hpp"

namespace clusterbench::spec_parse {

namespace {

const std::set<std::string> kAlertKeys = {"id",    "title", "source", "expr", "row",      "op",
                                          "value", "scale", "unit",   "for",  "severity", "remove"};

/// The condition under which a row's item fails: the alert's, for a row op.
const std::map<std::string, std::string> kInverse = {
    {">=", "<"}, {"<=", ">"}, {"==", "!="}, {"!=", "=="}};

bool is_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// A Prometheus duration: one or more NUMBER UNIT pairs, UNIT one of ms s m h d w y ("1h30m").
bool is_duration(const std::string& s) {
  size_t i = 0;
  if (s.empty()) return false;
  while (i < s.size()) {
    const size_t digits = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == digits) return false;
    if (s.compare(i, 2, "ms") == 0) {
      i += 2;
    } else if (i < s.size() && std::string("smhdwy").find(s[i]) != std::string::npos) {
      ++i;
    } else {
      return false;
    }
  }
  return true;
}

SpecAlert parse_alert(const json& a, const std::string& where) {
  if (!a.is_object()) throw InputError(where + " must be an object");
  SpecAlert out;
  out.id = require_field<std::string>(a, "id", where);
  const std::string at = where + ": alert '" + printable_key(out.id) + "'";
  check_keys(a, kAlertKeys, at);
  if (!is_name(out.id))
    throw InputError(at + ": field 'id' must be a Prometheus alert name ([A-Za-z_][A-Za-z0-9_]*)");
  out.title = require_field<std::string>(a, "title", at);
  out.source = optional_string(a, "source", at);
  out.expr = require_field<std::string>(a, "expr", at);
  if (out.expr.find_first_of("\n\r") != std::string::npos || out.expr.empty())
    throw InputError(at + ": field 'expr' must be one line of PromQL");
  out.row = optional_string(a, "row", at);
  out.unit = optional_string(a, "unit", at);
  out.for_ = optional_string(a, "for", at);
  if (a.contains("for") && !is_duration(out.for_))
    throw InputError(at + ": field 'for' is '" + printable_key(out.for_) +
                     "', not a Prometheus duration (5m, 1h, 1h30m)");
  out.severity = optional_string(a, "severity", at);
  if (!out.severity.empty() && out.severity != "warning" && out.severity != "critical")
    throw InputError(at + ": field 'severity' must be warning or critical");
  if (a.contains("scale")) {
    out.scale = require_field<double>(a, "scale", at);
    if (!(out.scale > 0) || !std::isfinite(out.scale))
      throw InputError(at + ": field 'scale' must be a positive number");
  }
  if (!out.row.empty()) {
    if (a.contains("op") || a.contains("value"))
      throw InputError(at + ": takes its threshold from row '" + out.row +
                       "'; leave 'op' and 'value' out (or the row out)");
    return out;
  }
  out.op = require_field<std::string>(a, "op", at);
  if (!std::any_of(kInverse.begin(), kInverse.end(),
                   [&](const auto& p) { return p.second == out.op || p.first == out.op; }))
    throw InputError(at + ": field 'op' must be one of < > <= >= == !=");
  if (!a.contains("value") || !a.at("value").is_number())
    throw InputError(at + ": needs a 'row' or a numeric 'value'");
  out.threshold = a.at("value").get<double>() * out.scale;
  if (out.severity.empty()) out.severity = "warning";
  return out;
}

}  // namespace

void merge_alerts(const json& j, const std::string& schema, const std::string& path, Spec& spec) {
  if (!j.contains("alerts")) return;
  if (schema != kSpecSchema)
    throw InputError(path + ": field 'alerts' needs schema " + kSpecSchema + ", not " + schema);
  const json& alerts = j.at("alerts");
  if (!alerts.is_array()) throw InputError(path + ": field 'alerts' must be an array");
  std::set<std::string> here;
  for (size_t i = 0; i < alerts.size(); ++i) {
    const std::string where = path + ": alerts[" + std::to_string(i) + "]";
    const json& a = alerts[i];
    auto same = [&](const std::string& id) {
      return std::find_if(spec.alerts.begin(), spec.alerts.end(),
                          [&](const SpecAlert& x) { return x.id == id; });
    };
    if (a.is_object() && a.contains("remove")) {
      const std::string id = require_field<std::string>(a, "id", where);
      const std::string at = where + ": alert '" + printable_key(id) + "'";
      if (!require_field<bool>(a, "remove", at) || a.size() != 2)
        throw InputError(at + ": a removal is {\"id\": ID, \"remove\": true} and nothing else");
      auto it = same(id);
      if (it == spec.alerts.end())
        throw InputError(where + ": alert '" + printable_key(id) +
                         "' has 'remove' but no parent table has it");
      spec.alerts.erase(it);
      continue;
    }
    SpecAlert alert = parse_alert(a, where);
    if (!here.insert(alert.id).second)
      throw InputError(where + ": alert '" + alert.id + "' appears twice in this table");
    if (auto it = same(alert.id); it != spec.alerts.end())
      *it = alert;
    else
      spec.alerts.push_back(alert);
  }
}

void resolve_alerts(Spec& spec, const std::string& path) {
  for (SpecAlert& a : spec.alerts) {
    if (a.row.empty()) continue;
    const std::string at = path + ": alert '" + a.id + "': row '" + a.row + "'";
    auto row = std::find_if(spec.requirements.begin(), spec.requirements.end(),
                            [&](const Requirement& q) { return q.id == a.row; });
    if (row == spec.requirements.end())
      throw InputError(at + " is not in the table (where a table removes that row, it must " +
                       "remove the alert too)");
    auto inverse = kInverse.find(row->op);
    if (inverse == kInverse.end() || !row->value.is_number())
      throw InputError(at + " has op '" + row->op +
                       "' or a value that is not a number: no threshold to alert on");
    if (!a.unit.empty() && a.unit != row->unit)
      throw InputError(at + " is in '" + row->unit + "', the alert says '" + a.unit + "'");
    a.unit = row->unit;
    a.op = inverse->second;
    a.threshold = row->value.get<double>() * a.scale;
    if (!std::isfinite(a.threshold))
      throw InputError(at + "'s value x scale is not a finite number");
    if (a.severity.empty()) a.severity = row->severity == "fail" ? "critical" : "warning";
  }
}

}  // namespace clusterbench::spec_parse
