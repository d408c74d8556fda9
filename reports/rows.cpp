// Spec rows (docs/design.md "Spec tables"): rows -> items -> outcomes. Each row kind judges its
// rows in reports/rows/ (env_rows.cpp, record_rows.cpp, health_rows.cpp over row_base.hpp).
#include "reports/rows.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <deque>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "reports/rows/row_base.hpp"

namespace clusterbench::report {

const std::string& to_string(Outcome outcome) {
  static const std::array<std::string, 5> kWords = {"FAIL", "MISSING", "WAIVED", "WARN", "PASS"};
  return kWords[static_cast<size_t>(outcome_rank(outcome))];
}

json outcome_counts_json(const std::map<Outcome, int>& counts) {
  json j = json::object();
  for (const auto& [o, n] : counts) j[to_string(o)] = n;
  return j;
}

json row_noise(const Metric& m, const std::string& op, double threshold) {
  if (m.reps.size() < 2 || (op != ">=" && op != "<=")) return nullptr;
  const auto [lo, hi] = std::minmax_element(m.reps.begin(), m.reps.end());
  double margin = threshold != 0 ? (m.value - threshold) / std::fabs(threshold) : 0;
  if (op == "<=") margin = -margin;
  return {{"repetitions", m.reps.size()},
          {"spread", relative_spread(m.reps)},
          {"margin", margin},
          {"range", {*lo, *hi}},
          {"within_noise", *lo <= threshold && threshold <= *hi}};
}

std::string noise_text(const json& noise) {
  if (!noise.is_object()) return "";
  return ", spread " + percent(noise["spread"].get<double>(), 1) + ", margin " +
         percent(noise["margin"].get<double>(), 1, true) +
         (noise["within_noise"].get<bool>() ? ", within noise" : "");
}

std::string comparison_text(const std::string& op, const std::string& target, bool fails) {
  static const std::map<std::string, std::pair<std::string, std::string>> kWords = {
      {">=", {"at least", "below"}},    {"<=", {"at most", "above"}},
      {"==", {"is", "expected"}},       {"!=", {"is not", "must not be"}},
      {"in", {"one of", "not one of"}}, {"matches", {"matches", "does not match"}},
  };
  auto it = kWords.find(op);
  if (it == kWords.end()) return op + " " + target;
  return (fails ? it->second.second : it->second.first) + " " + target;
}

std::string format_requirement(const Requirement& req) {
  return req.aggregate + " " + req.op + " " + format_value(req.value, req.unit);
}

namespace {

/// A field of the env record in words: "rate_gbps" -> "rate", "memory_gib" -> "memory".
std::string field_words(const std::string& field) {
  static const std::map<std::string, std::string> kWords = {
      {"rate_gbps", "rate"},
      {"memory_gib", "memory"},
      {"installed_gib", "installed memory"},
      {"usable_gib", "usable memory"},
      {"capacity_tb", "capacity"},
      {"nvlink_links_up", "NVLink links up"},
      {"gen_current", "PCIe generation"},
      {"width_current", "PCIe width"},
  };
  if (auto it = kWords.find(field); it != kWords.end()) return it->second;
  if (std::any_of(field.begin(), field.end(), ::isupper)) return field;  // NCCL_IB_DISABLE
  std::string out = field;
  std::replace(out.begin(), out.end(), '_', ' ');
  return out;
}

/// The thing an env pointer's collection entry is: "NIC eth0", "GPU 3 (0000:3a:00.0)", "disk
/// nvme0n1"; "" when `env` has no such entry.
std::string entry_words(const EnvRecord* env, const std::string& collection, size_t index) {
  static const std::map<std::string, std::string> kNames = {
      {"nics", "NIC"}, {"gpus", "GPU"}, {"block_devices", "disk"}};
  auto it = kNames.find(collection);
  if (it == kNames.end()) return "";
  std::string name;
  if (env && collection == "nics" && index < env->nics.size()) name = env->nics[index].name;
  if (env && collection == "gpus" && index < env->gpus.size()) {
    const GpuInfo& g = env->gpus[index];
    name = std::to_string(g.index) + (g.pci_bus_id.empty() ? "" : " (" + g.pci_bus_id + ")");
  }
  if (env && collection == "block_devices" && index < env->block_devices.size())
    name = env->block_devices[index].name;
  if (name.rfind("(", 0) == 0)
    return "physical " + it->second + "s";  // "(physical NICs not visible)"
  return it->second + " " + (name.empty() ? std::to_string(index) : name);
}

}  // namespace

std::string pointer_words(const std::string& pointer, const EnvRecord* env) {
  std::vector<std::string> parts;
  std::stringstream in(pointer);
  for (std::string seg; std::getline(in, seg, '/');)
    if (!seg.empty()) parts.push_back(seg);
  if (parts.empty()) return pointer;
  const std::string field = field_words(parts.back());
  if (parts.size() == 3 && std::all_of(parts[1].begin(), parts[1].end(), ::isdigit)) {
    std::string entry = entry_words(env, parts[0], std::stoul(parts[1]));
    if (!entry.empty()) return "the " + field + " of " + entry;
  }
  if (parts.size() == 2)
    return "the " + (field.find(parts[0]) != std::string::npos ? field : parts[0] + " " + field);
  if (parts.size() == 3 && parts[0] == "software" && (parts[2] == "version" || parts[2] == "state"))
    return "the " + parts[2] + " of " + field_words(parts[1]) + " (" + pointer + ")";
  const bool name = std::any_of(field.begin(), field.end(), ::isupper);  // a variable's name
  return (name ? "" : "the ") + field + " (" + pointer + ")";
}

std::vector<RowResult> evaluate_rows(const RunDir& run, const Spec& spec,
                                     const std::vector<std::string>& hosts,
                                     const std::vector<NodeHealth>& health) {
  const rows::RunIndex index(run);
  const rows::RowContext ctx{run, index, spec, hosts, health};
  std::vector<RowResult> out;
  out.reserve(spec.requirements.size());
  for (const auto& req : spec.requirements) {
    const auto evaluator = !req.select.health.empty() ? rows::health_row(ctx, req)
                           : !req.select.env.empty()  ? rows::env_row(ctx, req)
                                                      : rows::record_row(ctx, req);
    out.push_back(evaluator->run());
  }
  return out;
}

Scope parse_scope_item(const std::string& item) { return rows::parse_item(item); }

}  // namespace clusterbench::report
