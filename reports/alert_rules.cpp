// Prometheus alerting rules of a spec table (alert_rules.hpp).
#include "reports/alert_rules.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

namespace clusterbench::report {

namespace {

/// A YAML double-quoted scalar: JSON's string syntax is one (YAML 1.2 reads its escapes).
std::string quoted(const std::string& s) {
  return json(s).dump(-1, ' ', true, json::error_handler_t::replace);
}

std::string number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

/// The metric names `expr` reads: identifiers in upper case with an underscore (DCGM_FI_...) or
/// starting with "node_", in order of first use.
std::vector<std::string> metric_names(const std::string& expr) {
  std::vector<std::string> out;
  for (size_t i = 0; i < expr.size();) {
    if (!std::isalpha(static_cast<unsigned char>(expr[i])) && expr[i] != '_') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_'))
      ++j;
    const std::string word = expr.substr(i, j - i);
    if ((word.starts_with("DCGM_FI_") || word.starts_with("node_")) &&
        std::find(out.begin(), out.end(), word) == out.end())
      out.push_back(word);
    i = j;
  }
  return out;
}

}  // namespace

std::string alert_condition(const SpecAlert& alert) {
  return "(" + alert.expr + ") " + alert.op + " " + number(alert.threshold);
}

std::string render_alert_rules(const Spec& spec, const std::string& spec_sha256,
                               const std::string& version) {
  std::ostringstream out;
  out << kAlertRulesMagic << " " << version << "\n"
      << "# from the spec table " << spec.name << " (" << spec.path << ", sha256 " << spec_sha256
      << "): change a threshold in the table, then write these again.\n"
      << "# Check: promtool check rules FILE. Load: rule_files in prometheus.yml.\n";
  std::vector<std::string> fields;
  for (const auto& a : spec.alerts)
    for (const auto& m : metric_names(a.expr))
      if (std::find(fields.begin(), fields.end(), m) == fields.end()) fields.push_back(m);
  if (!fields.empty()) {
    out << "# Fields read (the DCGM exporter's DCGM_FI_*, node_exporter's node_infiniband_*):\n";
    for (const auto& f : fields) out << "#   " << f << "\n";
  }
  if (spec.alerts.empty()) {
    out << "# The table defines no alerts.\ngroups: []\n";
    return out.str();
  }
  out << "groups:\n  - name: " << quoted("clusterbench-" + spec.name) << "\n    rules:\n";
  for (const auto& a : spec.alerts) {
    const std::string unit = a.unit == "count" ? "" : a.unit;
    const std::string threshold = number(a.threshold / a.scale) + (unit.empty() ? "" : " " + unit);
    out << "      - alert: " << a.id << "\n"
        << "        expr: " << quoted(alert_condition(a)) << "\n";
    if (!a.for_.empty()) out << "        for: " << a.for_ << "\n";
    out << "        labels:\n"
        << "          severity: " << quoted(a.severity) << "\n";
    if (!a.row.empty()) out << "          spec_row: " << quoted(a.row) << "\n";
    out << "        annotations:\n"
        << "          summary: " << quoted(a.title + " (" + a.op + " " + threshold + ")") << "\n"
        << "          description: " << quoted(a.source) << "\n";
  }
  return out.str();
}

}  // namespace clusterbench::report
