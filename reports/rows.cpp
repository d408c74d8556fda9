// Spec rows (DESIGN.md "Spec tables"): rows -> items -> outcomes.
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

#include "reports/ifname.hpp"

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

std::string format_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    return std::to_string(static_cast<long long>(v));
  char buf[64];
  if (std::isfinite(v) && std::fabs(v) >= 1000 && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);  // 40826.1 -> 40826, not 4.083e+04
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string format_value(const json& v, const std::string& unit) {
  std::string text;
  if (v.is_null()) return "-";
  if (v.is_number()) {
    text = format_number(v.get<double>());
    if (!unit.empty() && unit != "count") text += " " + unit;
    return text;
  }
  if (v.is_string()) return v.get<std::string>().empty() ? "\"\"" : v.get<std::string>();
  return v.dump();
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
  auto pct = [](double f, bool sign) {
    std::string t = format_number(std::round(f * 1000) / 10) + "%";
    return sign && f > 0 ? "+" + t : t;
  };
  return ", spread " + pct(noise["spread"].get<double>(), false) + ", margin " +
         pct(noise["margin"].get<double>(), true) +
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
  const bool name = std::any_of(field.begin(), field.end(), ::isupper);  // a variable's name
  return (name ? "" : "the ") + field + " (" + pointer + ")";
}

namespace {

// ---------------------------------------------------------------------------------------------
// Comparison.

bool json_equal(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

std::string string_form(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

/// One row's comparison, with its regex compiled once.
class Judge {
 public:
  Judge(const Requirement& req, const std::string& where) : req_(req), where_(where) {
    if (req.op == "matches") re_.emplace(req.value.get<std::string>(), where + ": field 'value'");
  }

  /// True when `v` satisfies the row. Throws InputError when the types cannot be compared.
  bool passes(const json& v) const {
    const std::string& op = req_.op;
    if (op == ">=" || op == "<=") {
      if (!v.is_number() || !req_.value.is_number())
        throw InputError(where_ + ": op '" + op + "' needs numbers, got " + v.dump() + " and " +
                         req_.value.dump());
      double x = v.get<double>(), t = req_.value.get<double>();
      return op == ">=" ? x >= t : x <= t;
    }
    if (op == "==") return json_equal(v, req_.value);
    if (op == "!=") return !json_equal(v, req_.value);
    if (op == "in") {
      for (const auto& e : req_.value)
        if (json_equal(v, e)) return true;
      return false;
    }
    if (op == "matches") return re_->search(string_form(v));
    throw InputError(where_ + ": field 'op' is '" + op + "'");
  }

  /// True when value `a` is closer to failing than `b` (only >= and <= order values).
  bool worse(const json& a, const json& b) const {
    if (!a.is_number() || !b.is_number()) return false;
    if (req_.op == ">=") return a.get<double>() < b.get<double>();
    if (req_.op == "<=") return a.get<double>() > b.get<double>();
    return false;
  }

  Outcome fail_outcome() const { return req_.severity == "warn" ? kWarn : kFail; }

 private:
  const Requirement& req_;
  std::string where_;
  std::optional<SpecRegex> re_;
};

/// min/max/median/sum over numbers (median of an even count: mean of the middle two).
double aggregate_numbers(std::vector<double> xs, const std::string& agg) {
  if (agg == "count") return static_cast<double>(xs.size());
  if (agg == "sum") {
    double s = 0;
    for (double x : xs) s += x;
    return s;
  }
  std::sort(xs.begin(), xs.end());
  if (agg == "min") return xs.front();
  if (agg == "max") return xs.back();
  size_t mid = xs.size() / 2;
  return xs.size() % 2 ? xs[mid] : 0.5 * (xs[mid - 1] + xs[mid]);  // median
}

// ---------------------------------------------------------------------------------------------
// Items.

/// An item being assembled: its key (host/gpuN without the uuid, so that env and records meet),
/// display name and what was found for it.
struct Item {
  std::string key, name;
  bool expected = false;  ///< from the env (a node or GPU that should have a record)
  std::vector<const ResultRecord*> records;
  std::vector<std::string> missing_keys;  ///< planned case keys without a record
  // Env rows.
  std::vector<json> values;
  std::vector<std::string> unknown;     ///< concrete pointers whose value is "" (health: null)
  std::vector<UnknownValue> nulls;      ///< selected values that are null (unknown), with why
  std::vector<UnknownValue> undecided;  ///< matches whose `where` reads a null value
  bool env_no_match = false;
  std::vector<std::string> notes;   ///< health rows: the evidence of each value (start -> end)
  std::vector<std::string> absent;  ///< health rows: hardware not on the node (WAIVED)
};

class Items {
 public:
  Item& get(const std::string& key, const std::string& name) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      Item& item = items_[it->second];
      // A record's name carries the GPU uuid where the env's may not.
      if (item.name.size() < name.size()) item.name = name;
      return item;
    }
    index_[key] = items_.size();
    Item item;
    item.key = key, item.name = name;
    items_.push_back(std::move(item));
    return items_.back();
  }
  std::vector<Item>& all() { return items_; }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

std::string case_key_of(const ResultRecord& r);

/// Records and planned cases by benchmark id, built once per run so that a spec row touches only
/// its candidates (rows x records scans dominated `report` at 1,000 nodes, docs/report.md).
struct RunIndex {
  /// The records of one benchmark with equal params (a spec row's params test runs once each).
  struct Group {
    const json* params;
    std::vector<const ResultRecord*> records;
  };
  std::unordered_map<std::string, std::vector<Group>> records;
  std::unordered_map<std::string, std::vector<const PlannedCase*>> plan;
  std::vector<const ResultRecord*> not_wire;  ///< records with extra.busbw_is_wire false
  std::vector<json> env_docs;                 ///< run.run.env[i] as JSON, for env rows
  /// The case key of every record. A planned key names its benchmark and params, so a row's
  /// planned key is present exactly when some record of the row has it.
  std::unordered_set<std::string_view> present;
  std::deque<std::string> made;  ///< case keys that records.jsonl left out

  explicit RunIndex(const RunDir& run) {
    std::unordered_map<std::string, std::unordered_map<std::string, size_t>> at;
    for (const auto& r : run.records.records) {
      auto& groups = records[r.benchmark];
      // Records of a case come together: compare with the last group before hashing.
      size_t g = groups.size() - 1;
      if (groups.empty() || *groups.back().params != r.params) {
        auto [it, fresh] = at[r.benchmark].try_emplace(r.params.dump(), groups.size());
        if (fresh) groups.push_back({&r.params, {}});
        g = it->second;
      }
      groups[g].records.push_back(&r);
      if (r.extra.is_object() && !r.extra.value("busbw_is_wire", true)) not_wire.push_back(&r);
    }
    for (const auto& pc : run.run.plan) plan[pc.benchmark].push_back(&pc);
    for (const auto& env : run.run.env) env_docs.push_back(json(env));
    present.reserve(run.records.records.size());
    for (const auto& r : run.records.records)
      present.insert(r.case_key.empty() ? std::string_view(made.emplace_back(case_key_of(r)))
                                        : std::string_view(r.case_key));
  }
  template <class T>
  static const std::vector<const T*>& of(
      const std::unordered_map<std::string, std::vector<const T*>>& m, const std::string& b) {
    static const std::vector<const T*> none;
    auto it = m.find(b);
    return it == m.end() ? none : it->second;
  }
};

std::string gpu_key(const std::string& host, int index) {
  return host + "/gpu" + std::to_string(index);
}

std::string gpu_name(const std::string& host, const GpuInfo& g) {
  Scope s;
  s.kind = ScopeKind::gpu, s.host = host, s.gpu_index = g.index, s.uuid = g.uuid;
  return scope_item(s);
}

/// Inverse of scope_item(), for the item part of a planned case key.
Scope parse_item(const std::string& item) {
  Scope s;
  if (item == "cluster") {
    s.kind = ScopeKind::cluster;
    return s;
  }
  if (auto arrow = item.find("<->"); arrow != std::string::npos) {
    s.kind = ScopeKind::link;
    s.hosts = {item.substr(0, arrow), item.substr(arrow + 3)};
    return s;
  }
  if (auto g = item.rfind("/gpu"); g != std::string::npos) {
    size_t digits = g + 4, end = digits;
    while (end < item.size() && std::isdigit(static_cast<unsigned char>(item[end]))) ++end;
    if (end > digits) {
      s.kind = ScopeKind::gpu;
      s.host = item.substr(0, g);
      s.gpu_index = std::stoi(item.substr(digits, end - digits));
      if (end < item.size() && item[end] == '[' && item.back() == ']')
        s.uuid = item.substr(end + 1, item.size() - end - 2);
      return s;
    }
  }
  s.kind = ScopeKind::node;
  s.host = item;
  return s;
}

std::string case_key_of(const ResultRecord& r) {
  return r.case_key.empty() ? make_case_key(r.benchmark, r.params, r.scope) : r.case_key;
}

bool params_contain(const json& params, const json& subset) {
  if (!subset.is_object() || subset.empty()) return true;
  if (!params.is_object()) return false;
  for (const auto& [k, v] : subset.items()) {
    auto it = params.find(k);
    if (it == params.end() || !json_equal(*it, v)) return false;
  }
  return true;
}

const Metric* find_metric(const ResultRecord& r, const std::string& name) {
  for (const auto& m : r.metrics)
    if (m.name == name) return &m;
  return nullptr;
}

std::string join(const std::vector<std::string>& xs, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? sep : "") + xs[i];
  return out;
}

void add_unique(std::vector<std::string>& xs, const std::string& x) {
  if (std::find(xs.begin(), xs.end(), x) == xs.end()) xs.push_back(x);
}

/// The text of a failed record: its message, or its error fields when the message is empty.
std::string failure_text(const ResultRecord& r) {
  if (!r.message.empty()) return r.message;
  if (r.error)
    return r.error->library + " error " + r.error->code + " in " + r.error->call + " at " +
           r.error->where;
  return "failed (no message)";
}

// ---------------------------------------------------------------------------------------------
// Row evaluation.

class RowEvaluator {
 public:
  RowEvaluator(const RunDir& run, const RunIndex& index, const Spec& spec, const Requirement& req,
               const std::vector<std::string>& hosts, const std::vector<NodeHealth>& health)
      : run_(run),
        index_(index),
        req_(req),
        hosts_(hosts),
        health_(health),
        where_((spec.path.empty() ? spec.name : spec.path) + ": spec row '" + req.id + "'"),
        judge_(req, where_) {}

  RowResult run() {
    RowResult row;
    row.req = req_;
    const bool health = !req_.select.health.empty();
    if (health)
      collect_health(row);
    else if (!req_.select.env.empty())
      collect_env();
    else
      collect_records();
    // Evidence in first-seen order, O(1) per key; the views point into the items' record lists,
    // whose heap buffers stay put when an item is moved.
    std::unordered_set<std::string_view> seen;
    for (auto& item : items_.all()) {
      ItemResult r = health                    ? judge_health_item(item)
                     : req_.select.env.empty() ? judge_record_item(item)
                                               : judge_env_item(item);
      for (const auto& k : r.records)
        if (seen.insert(k).second) row.evidence.push_back(k);
      row.items.push_back(std::move(r));
    }
    summarize(row);
    note_not_wire(row);
    row.unknown = std::move(unknown_);
    return row;
  }

  // DESIGN.md "Collectives": under NVLS, SHARP or tree, busbw is not wire bandwidth. The NCCL
  // backend records what NCCL chose (extra.nccl_algorithm, extra.busbw_is_wire); say so.
  void note_not_wire(RowResult& row) const {
    if (req_.select.metric.rfind("busbw", 0) != 0) return;
    std::vector<std::string> algos;
    for (const ResultRecord* rp : index_.not_wire) {
      const ResultRecord& rec = *rp;
      if (std::find(row.evidence.begin(), row.evidence.end(), rec.case_key) == row.evidence.end())
        continue;
      add_unique(algos, rec.extra.value("nccl_algorithm", std::string("?")));
    }
    if (!algos.empty())
      row.message += "; busbw is not wire bandwidth: NCCL chose " + join(algos, ", ") +
                     " (NVLS, SHARP and tree reduce in the switch or move fewer bytes)";
  }

 private:
  // --- env rows -------------------------------------------------------------------------------

  /// The item a concrete env pointer belongs to: a GPU, a NIC, a disk, or the node itself.
  std::pair<std::string, std::string> env_item(const EnvRecord& env, const std::string& ptr) {
    auto index_after = [&](const std::string& prefix) -> int {
      if (ptr.rfind(prefix, 0) != 0) return -1;
      size_t end = ptr.find('/', prefix.size());
      std::string num =
          ptr.substr(prefix.size(), end == std::string::npos ? end : end - prefix.size());
      if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) return -1;
      return std::stoi(num);
    };
    if (int i = index_after("/gpus/"); i >= 0 && i < static_cast<int>(env.gpus.size()))
      return {gpu_key(env.host, env.gpus[i].index), gpu_name(env.host, env.gpus[i])};
    if (int i = index_after("/nics/"); i >= 0 && i < static_cast<int>(env.nics.size())) {
      std::string n = env.host + "/nic[" + env.nics[i].name + "]";
      return {n, n};
    }
    if (int i = index_after("/block_devices/");
        i >= 0 && i < static_cast<int>(env.block_devices.size())) {
      std::string n = env.host + "/disk[" + env.block_devices[i].name + "]";
      return {n, n};
    }
    return {env.host + ":" + ptr, env.host + ":" + ptr};
  }

  void collect_env() {
    try {
      env_field_unit(req_.select.env);
    } catch (const InputError& e) {
      throw InputError(where_ + ": field 'select.env': " + e.what());
    }
    for (size_t e = 0; e < run_.run.env.size(); ++e)
      collect_env_node(run_.run.env[e], index_.env_docs[e]);
  }

  /// One node's matches of select.env, after select.where, into their items.
  void collect_env_node(const EnvRecord& env, const json& doc) {
    const std::string& ptr = req_.select.env;
    const bool per_match = req_.aggregate == "each" && ptr.find('*') != std::string::npos;
    std::string key = req_.scope == "cluster" ? "cluster" : env.host;
    bool none = true;
    for (const auto& [concrete, value] : expand_pointer(doc, ptr)) {
      std::string null_at;
      Tri in = where_state(doc, env, concrete, null_at);
      if (in == Tri::no) continue;
      none = false;
      auto [k, name] = per_match ? env_item(env, concrete) : std::make_pair(key, key);
      Item& item = items_.get(k, name);
      if (in == Tri::unknown)
        item.undecided.push_back({env.host, null_at, unknown_reason(doc, null_at)});
      else if (value.is_null())
        item.nulls.push_back({env.host, concrete, unknown_reason(doc, concrete)});
      else if (value.is_string() && value.get<std::string>().empty())
        item.unknown.push_back(per_match ? concrete : env.host + ":" + concrete);
      else
        item.values.push_back(value);
    }
    if (none && (per_match || req_.aggregate != "count"))
      items_.get(per_match ? env.host : key, per_match ? env.host : key).env_no_match = true;
    else if (none)
      items_.get(key, key);  // counted: 0
  }

  enum class Tri { no, yes, unknown };

  /// select.where over the element of `concrete` (the prefix the last `*` of select.env names):
  /// no when a condition fails, unknown when none fails but one reads a null value (`null_at`
  /// names it), else yes.
  Tri where_state(const json& doc, const EnvRecord& env, const std::string& concrete,
                  std::string& null_at) const {
    if (req_.select.where.empty()) return Tri::yes;
    const std::string& ptr = req_.select.env;
    size_t segments =
        std::count(ptr.begin(), ptr.begin() + static_cast<long>(ptr.rfind("/*") + 2), '/');
    size_t end = 0;
    for (size_t i = 0; i < segments && end != std::string::npos; ++i)
      end = concrete.find('/', end + 1);
    std::string element = concrete.substr(0, end);
    Tri state = Tri::yes;
    for (const auto& [key, cond] : req_.select.where.items()) {
      auto found = expand_pointer(doc, element + key);
      if (!found.empty() && found.front().second.is_null()) {
        if (state == Tri::yes) null_at = element + key;
        state = Tri::unknown;
        continue;
      }
      json v = found.empty() ? json(nullptr) : found.front().second;
      std::string op = cond.is_object() ? cond.begin().key() : "==";
      const json& target = cond.is_object() ? cond.begin().value() : cond;
      if (!condition_holds(op, v, target, env)) return Tri::no;
    }
    return state;
  }

  static bool condition_holds(const std::string& op, const json& v, const json& target,
                              const EnvRecord& env) {
    if (op == "nccl_ifname") {
      if (!v.is_string() || v.get<std::string>().empty()) return false;
      auto it = env.environment.find(target.get<std::string>());
      std::string list = it == env.environment.end() ? kNcclDefaultIfname : it->second;
      return ifname_matches(parse_ifname_list(list), v.get<std::string>());
    }
    if (op == ">=" || op == "<=") {
      if (!v.is_number()) return false;
      return op == ">=" ? v.get<double>() >= target.get<double>()
                        : v.get<double>() <= target.get<double>();
    }
    if (op == "==") return json_equal(v, target);
    if (op == "!=") return !json_equal(v, target);
    if (op == "in") {
      for (const auto& e : target)
        if (json_equal(v, e)) return true;
      return false;
    }
    return SpecRegex(target.get<std::string>(), "condition 'matches'")  // matches
        .search(string_form(v));
  }

  /// "no /nics/* entry with kind = "ib_port", state = "ACTIVE" in the inventory
  /// (/nics/*/rate_gbps)": what the row looked for, in words, when nothing matched.
  std::string nothing_matched() const {
    const std::string& env = req_.select.env;
    const size_t star = env.rfind("/*");
    static const std::map<std::string, std::string> kEntries = {
        {"/nics/*", "NIC"}, {"/gpus/*", "GPU"}, {"/block_devices/*", "disk"}};
    std::string what = "value for " + pointer_words(env, nullptr);
    if (star != std::string::npos) {
      auto it = kEntries.find(env.substr(0, star + 2));
      what = it != kEntries.end() ? it->second : env.substr(0, star + 2) + " entry";
    }
    std::vector<std::string> conds;
    for (const auto& [k, v] : req_.select.where.items()) {
      const std::string key = k.rfind('/', 0) == 0 ? k.substr(1) : k;
      if (key == "virtual" && v.is_boolean()) {  // "no physical NIC", not "virtual false"
        what = (v.get<bool>() ? "virtual " : "physical ") + what;
        continue;
      }
      conds.push_back(key + " " + (v.is_string() ? v.get<std::string>() : v.dump()));
    }
    if (!conds.empty()) what += " with " + join(conds, " and ");
    return "no " + what + " in the inventory";
  }

  ItemResult judge_env_item(const Item& item) {
    ItemResult r;
    r.item = item.name;
    const size_t unknowns = item.nulls.size() + item.undecided.size();
    if (req_.aggregate == "count") return judge_env_count(r, item);
    if (item.env_no_match && item.values.empty() && item.unknown.empty() && unknowns == 0) {
      r.outcome = kMissing;
      r.message = item.name + ": " + nothing_matched();
      return r;
    }
    if (!item.unknown.empty()) {
      r.outcome = kMissing;
      r.message = item.name + ": unknown (empty) value at " + join(item.unknown, ", ");
      return r;
    }
    if (req_.aggregate == "each")
      return unknowns ? unknown_missing(r, item) : judged(r, item.values, "");
    std::vector<double> xs;
    for (const auto& v : item.values) {
      if (!v.is_number())
        throw InputError(where_ + ": field 'aggregate' '" + req_.aggregate +
                         "' needs numbers, but " + req_.select.env + " has " + v.dump());
      xs.push_back(v.get<double>());
    }
    if (xs.empty()) return unknown_missing(r, item);
    r.value = aggregate_numbers(xs, req_.aggregate);
    r = judged(r, {r.value}, req_.aggregate + " ");
    if (unknowns == 0) return r;
    return decided_without_unknowns(r) ? noted(r, item) : unknown_missing(r, item);
  }

  /// `count`: the known matches, and the unknown ones (null values, undecided `where`) that
  /// could each count or not. Decided when every possible count gives the same outcome.
  ItemResult judge_env_count(ItemResult r, const Item& item) {
    // Unknown (empty) values are not counted: an unreadable GPU name is not a GPU we can vouch for.
    const size_t known = item.values.size();
    const size_t unknowns = item.nulls.size() + item.undecided.size();
    r = judged(r, {json(known)}, "count ");
    bool same = true;
    for (size_t k = known + 1; k <= known + unknowns && same; ++k)
      same = judge_.passes(json(k)) == (r.outcome == kPass);
    if (unknowns == 0) return r;
    return same ? noted(r, item) : unknown_missing(r, item);
  }

  /// Whether a min/max item judged on its known values keeps its outcome whatever its unknown
  /// values are: more values only raise a max (a `>=` pass and a `<=` failure stand) and only
  /// lower a min (a `>=` failure and a `<=` pass stand).
  bool decided_without_unknowns(const ItemResult& r) const {
    const bool passes = r.outcome == kPass;
    if (req_.aggregate == "max") return req_.op == ">=" ? passes : req_.op == "<=" && !passes;
    if (req_.aggregate == "min") return req_.op == ">=" ? !passes : req_.op == "<=" && passes;
    return false;
  }

  /// The first unknown value of an item: its pointer and why.
  static const UnknownValue& first_unknown(const Item& item) {
    return item.nulls.empty() ? item.undecided.front() : item.nulls.front();
  }

  std::string unknown_text(const UnknownValue& u) const {
    const EnvRecord* env = nullptr;
    for (const auto& e : run_.run.env)
      if (e.host == u.host) env = &e;
    return pointer_words(u.pointer, env) +
           " is unknown: " + (u.reason.empty() ? "not in the env record" : u.reason);
  }

  /// An item decided by its known values: its message names the unknown ones it did not need.
  ItemResult noted(ItemResult r, const Item& item) const {
    const size_t n = item.nulls.size() + item.undecided.size();
    r.message += "; not needed to decide: " + unknown_text(first_unknown(item));
    if (n > 1) r.message += " (and " + std::to_string(n - 1) + " more unknown)";
    return r;
  }

  /// MISSING for an item whose unknown values could change its outcome, naming the first and why;
  /// every unknown value goes into the row's list (report warnings).
  ItemResult unknown_missing(ItemResult r, const Item& item) {
    const size_t n = item.nulls.size() + item.undecided.size();
    r.outcome = kMissing;
    r.value = nullptr;
    r.message = item.name + ": " + unknown_text(first_unknown(item));
    if (n > 1) r.message += " (and " + std::to_string(n - 1) + " more unknown)";
    unknown_.insert(unknown_.end(), item.nulls.begin(), item.nulls.end());
    unknown_.insert(unknown_.end(), item.undecided.begin(), item.undecided.end());
    return r;
  }

  /// Compares every value; the item takes the worst one (a failing one before any passing one).
  ItemResult judged(ItemResult r, const std::vector<json>& values, const std::string& prefix) {
    std::optional<json> worst;
    bool worst_fails = false;
    for (const auto& v : values) {
      bool fails = !judge_.passes(v);
      if (!worst || (fails && !worst_fails) || (fails == worst_fails && judge_.worse(v, *worst)))
        worst = v, worst_fails = fails;
    }
    r.value = worst ? *worst : json(nullptr);
    r.outcome = worst_fails ? judge_.fail_outcome() : kPass;
    std::string what = prefix;
    if (prefix.empty() && values.size() > 1)
      what = "worst of " + std::to_string(values.size()) + " ";
    r.message = what + format_value(r.value, req_.unit) + " on " + r.item + " (" +
                comparison_text(req_.op, format_value(req_.value, req_.unit), worst_fails) + ")";
    return r;
  }

  // --- record rows ----------------------------------------------------------------------------

  /// The item keys a record (or a planned case's scope) belongs to in this row.
  std::vector<std::pair<std::string, std::string>> keys_for(const Scope& s) {
    if (req_.scope == "cluster") return {{"cluster", "cluster"}};
    if (s.kind == ScopeKind::rank) return {{scope_item(s), scope_item(s)}};  // a CPU rank (burn-in)
    if (req_.scope == "gpu") {
      if (s.kind == ScopeKind::gpu) return {{gpu_key(s.host, s.gpu_index), scope_item(s)}};
      if (!s.host.empty()) {
        // A node-level record (e.g. "no GPU plugin") stands for each GPU the env lists there.
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& env : run_.run.env)
          if (env.host == s.host)
            for (const auto& g : env.gpus)
              out.emplace_back(gpu_key(env.host, g.index), gpu_name(env.host, g));
        if (!out.empty()) return out;
        return {{s.host, s.host}};
      }
      return {{scope_item(s), scope_item(s)}};
    }
    if (req_.scope == "node" && !s.host.empty()) return {{s.host, s.host}};
    std::string item = scope_item(s);
    return {{item, item}};
  }

  void collect_records() {
    const Select& sel = req_.select;
    // Expected items: every node (node scope) or GPU (gpu scope) the env describes.
    if (req_.scope == "node") {
      for (const auto& h : hosts_) items_.get(h, h).expected = true;
    } else if (req_.scope == "gpu") {
      for (const auto& env : run_.run.env)
        for (const auto& g : env.gpus)
          items_.get(gpu_key(env.host, g.index), gpu_name(env.host, g)).expected = true;
    }
    // Keys of this row's records only: a planned key of this row names its own benchmark and
    // params, and collecting every key for every row is rows x records (docs/report.md "Scale").
    std::vector<const ResultRecord*> candidates;
    size_t matched = 0;
    if (auto it = index_.records.find(sel.benchmark); it != index_.records.end())
      for (const auto& group : it->second)
        if (params_contain(*group.params, sel.params)) {
          candidates.insert(candidates.end(), group.records.begin(), group.records.end());
          ++matched;
        }
    // Records in file order (they lie in one vector), as a scan of every record would see them.
    if (matched > 1) std::sort(candidates.begin(), candidates.end());
    const auto& present = index_.present;
    for (const ResultRecord* rp : candidates) {
      const ResultRecord& r = *rp;
      // A link row judges link records; a case's ok summary record at another scope is not an
      // item of it (its failed or waived record still is: nothing was measured).
      if (req_.scope == "link" && r.scope.kind != ScopeKind::link && r.status == Status::ok)
        continue;
      if (r.status == Status::ok) {
        const Metric* m = find_metric(r, sel.metric);
        if (m && req_.aggregate != "count" && m->unit != req_.unit)
          throw InputError(where_ + ": field 'unit' is '" + req_.unit + "' but metric '" +
                           sel.metric + "' of " + sel.benchmark + " is in '" + m->unit +
                           "' (record " + case_key_of(r) + ")");
      }
      // A cluster case that did not measure (waived, failed) stands, in a node row, for every
      // node: nothing was measured on any of them.
      if (req_.scope == "node" && r.scope.kind == ScopeKind::cluster && r.status != Status::ok) {
        for (const auto& h : hosts_) items_.get(h, h).records.push_back(&r);
        continue;
      }
      for (const auto& [key, name] : keys_for(r.scope)) items_.get(key, name).records.push_back(&r);
    }
    for (const PlannedCase* pcp : RunIndex::of(index_.plan, sel.benchmark)) {
      const PlannedCase& pc = *pcp;
      if (!params_contain(pc.params, sel.params)) continue;
      for (const auto& ck : pc.case_keys) {
        if (present.count(ck)) continue;
        auto bar = ck.rfind('|');
        Scope s = parse_item(bar == std::string::npos ? ck : ck.substr(bar + 1));
        for (const auto& [key, name] : keys_for(s))
          items_.get(key, name).missing_keys.push_back(ck);
      }
    }
  }

  /// An item's records sorted by what they say.
  struct Sorted {
    std::vector<const ResultRecord*> failed, waived, lacking;
    std::vector<json> values;
    std::vector<const Metric*> metrics;  ///< the metric of each value
    std::vector<std::string> keys;       ///< case keys, into the chosen candidate only
    std::vector<std::string> unmet;      ///< why each ok record missing select.require is skipped
    std::vector<std::string> described;  ///< select.describe of the records judged, distinct
    size_t repeated = 0;  ///< values left out: their select.distinct value was seen before
    /// "ITEM: REASON" of each ok record that could not measure the metric (extra.unmeasured)
    std::vector<std::string> unknown;
  };

  Sorted sort_records(const Item& item) const {
    Sorted s;
    s.keys.reserve(item.records.size());
    const Select& sel = req_.select;
    const bool conditions = !sel.require.empty() || !sel.describe.empty() || !sel.distinct.empty();
    std::set<std::string> seen;  // select.distinct values already counted
    for (const ResultRecord* rec : item.records) {
      s.keys.push_back(case_key_of(*rec));
      // The record as records.jsonl holds it, for select.require and the templates.
      const json doc = conditions && rec->status == Status::ok ? json(*rec) : json();
      std::string why;
      if (rec->status == Status::failed) {
        s.failed.push_back(rec);
      } else if (rec->status == Status::waived) {
        s.waived.push_back(rec);
      } else if (!(why = unmet_reason(*rec, doc)).empty()) {
        s.unmet.push_back(why);
      } else if (const Metric* m = find_metric(*rec, sel.metric)) {
        if (!first_of_its_kind(doc, seen)) {
          ++s.repeated;
          continue;
        }
        s.values.push_back(m->value), s.metrics.push_back(m);
        if (!sel.describe.empty()) add_unique(s.described, fill_template(sel.describe, doc));
      } else {
        s.lacking.push_back(rec);
        if (std::string why = unmeasured_reason(*rec); !why.empty())
          s.unknown.push_back(scope_item(rec->scope) + why);
      }
    }
    return s;
  }

  /// ": REASON" where the record says why it lacks the row's metric (extra.unmeasured.METRIC),
  /// else "".
  std::string unmeasured_reason(const ResultRecord& rec) const {
    auto u = rec.extra.find("unmeasured");
    if (u == rec.extra.end() || !u->is_object()) return "";
    auto why = u->find(req_.select.metric);
    return why != u->end() && why->is_string() ? ": " + why->get<std::string>() : "";
  }

  /// Whether `doc` is the first judged record with its select.distinct value (always, without
  /// select.distinct or where the record has no value there).
  bool first_of_its_kind(const json& doc, std::set<std::string>& seen) const {
    if (req_.select.distinct.empty()) return true;
    const json::json_pointer p(req_.select.distinct);
    if (!doc.contains(p) || doc.at(p).is_null()) return true;
    return seen.insert(doc.at(p).dump()).second;
  }

  /// Why an ok record is not judged by this row ("" when it meets select.require): the row's
  /// `unmet` text over the record, or which required field the record lacks.
  std::string unmet_reason(const ResultRecord& rec, const json& doc) const {
    static const EnvRecord kNoEnv;
    for (const auto& [key, cond] : req_.select.require.items()) {
      const json::json_pointer p(key);
      const json* v = doc.contains(p) ? &doc.at(p) : nullptr;
      std::string op = cond.is_object() ? cond.begin().key() : "==";
      const json& target = cond.is_object() ? cond.begin().value() : cond;
      if (v && condition_holds(op, *v, target, kNoEnv)) continue;
      if (!v)
        return "record " + case_key_of(rec) + " has no " + key +
               " (select.require; a record written before it was recorded?)";
      if (!req_.select.unmet.empty()) return fill_template(req_.select.unmet, doc);
      return "record " + case_key_of(rec) + ": " + key + " is " + v->dump() +
             ", select.require wants " + cond.dump();
    }
    return "";
  }

  /// A candidate outcome with its message, " (and N more ...)" when `n` > 1.
  static ItemResult candidate(const ItemResult& base, Outcome o, std::string message, size_t n,
                              const std::string& more) {
    ItemResult c = base;
    c.outcome = o;
    c.message = std::move(message);
    if (n > 1) c.message += " (and " + std::to_string(n - 1) + more + ")";
    return c;
  }

  /// A planned case without a record, from its case key "benchmark|params|item": the case in
  /// words ("BENCHMARK {params}") and why it has none: --time-limit left it out
  /// (run.json time_limit.not_run), or the run ended before it finished.
  std::pair<std::string, std::string> missing_case(const std::string& key) const {
    const size_t a = key.find('|'), b = key.rfind('|');
    if (a == std::string::npos || b <= a) return {key, "the run ended before it finished"};
    const std::string bench = key.substr(0, a);
    const json params = json::parse(key.substr(a + 1, b - a - 1), nullptr, false);
    const std::string what = bench + " " + key.substr(a + 1, b - a - 1);
    if (const auto& tl = run_.run.time_limit)
      for (const auto& c : tl->not_run)
        if (c.benchmark == bench && c.params == params)
          return {what, "not run: --time-limit " + format_number(tl->seconds) + " s left it out"};
    return {what, "the run ended before it finished"};
  }

  /// Candidates: failed records, missing planned cases, the comparison (or the waivers when
  /// nothing ran).
  std::vector<ItemResult> candidates(const Item& item, const ItemResult& r, const Sorted& s) {
    std::vector<ItemResult> cands;
    if (!s.failed.empty())
      cands.push_back(candidate(r, judge_.fail_outcome(),
                                item.name + ": failed: " + failure_text(*s.failed.front()),
                                s.failed.size(), " more failed records"));
    if (!item.missing_keys.empty()) {
      const auto [what, why] = missing_case(item.missing_keys.front());
      cands.push_back(candidate(r, kMissing, item.name + ": no record of " + what,
                                item.missing_keys.size(), " more"));
      cands.back().message += "; " + why;
    }
    if (!s.unmet.empty())
      cands.push_back(candidate(r, kMissing, item.name + ": not judged: " + s.unmet.front(),
                                s.unmet.size(), " more records not meeting select.require"));
    if (!s.values.empty()) {
      if (req_.aggregate == "each") {
        cands.push_back(judged(r, s.values, ""));
      } else {
        std::vector<double> xs;
        for (const auto& v : s.values) xs.push_back(v.get<double>());
        json agg = aggregate_numbers(xs, req_.aggregate);
        if (req_.aggregate == "count") agg = xs.size();
        cands.push_back(judged(r, {agg}, req_.aggregate + " "));
        if (req_.aggregate == "sum" && !s.unknown.empty()) sum_with_unknown(cands.back(), s);
      }
      with_noise(cands.back(), s);
      if (s.repeated)
        cands.back().message += "; " + std::to_string(s.repeated) + " more record(s) of the same " +
                                req_.select.distinct + " counted once";
      cands.back().measured = join(s.described, "; ");
      if (!s.described.empty()) cands.back().message += "; " + cands.back().measured;
    } else if (!s.waived.empty() && s.failed.empty()) {
      std::vector<std::string> reasons;
      for (const auto* w : s.waived)
        add_unique(reasons, w->message.empty() ? "no reason" : w->message);
      cands.push_back(candidate(r, kWaived, item.name + ": waived: " + join(reasons, "; "), 1, ""));
    }
    return cands;
  }

  /// A sum with addends that could not be measured: it can only grow by them (the metrics summed
  /// are sizes), so a `>=` it passes stands, and says what it left out; any other outcome could
  /// change with them: MISSING, naming them.
  void sum_with_unknown(ItemResult& c, const Sorted& s) const {
    const std::string left_out = join(s.unknown, "; ");
    if (c.outcome == kPass && req_.op == ">=") {
      c.message += "; not counted (unknown): " + left_out;
      return;
    }
    c.outcome = kMissing;
    c.message =
        c.item + ": the " + c.message + " leaves out what could not be measured: " + left_out;
  }

  /// The noise of the metric that gave the candidate's value (min, max, each: one record's; a
  /// median or sum of several has none).
  void with_noise(ItemResult& c, const Sorted& s) const {
    if (!c.value.is_number() || !req_.value.is_number()) return;
    for (const Metric* m : s.metrics) {
      if (m->value != c.value.get<double>()) continue;
      c.noise = row_noise(*m, req_.op, req_.value.get<double>());
      c.message += noise_text(c.noise);
      return;
    }
  }

  ItemResult judge_record_item(const Item& item) {
    ItemResult r;
    r.item = item.name;
    Sorted s = sort_records(item);
    auto with_keys = [&s](ItemResult x) {
      x.records = std::move(s.keys);
      return x;
    };
    std::vector<ItemResult> cands = candidates(item, r, s);
    if (cands.empty()) {
      if (req_.aggregate == "count") return with_keys(judged(r, {json(0)}, "count "));
      r.outcome = kMissing;
      if (!s.lacking.empty())
        r.message = item.name + ": record " + case_key_of(*s.lacking.front()) + " has no metric '" +
                    req_.select.metric + "'" + unmeasured_reason(*s.lacking.front());
      else
        r.message =
            item.name + ": no record of " + req_.select.benchmark + " " + req_.select.params.dump();
      return with_keys(std::move(r));
    }
    // The worst candidate is the item's outcome, the first on a tie.
    size_t best = 0;
    for (size_t i = 1; i < cands.size(); ++i)
      if (outcome_rank(cands[i].outcome) < outcome_rank(cands[best].outcome)) best = i;
    return with_keys(std::move(cands[best]));
  }

  // --- health rows (reports/health.hpp) -------------------------------------------------------

  /// Every node's deltas of the row's metric; `each` makes every value an item (a GPU, an NVLink,
  /// a port, a PCIe device), other aggregates reduce them per node (or over the cluster).
  void collect_health(RowResult& row) {
    for (const NodeHealth& node : health_) {
      std::vector<HealthValue> values;
      try {
        values = health_values(node.values, req_.select.health);
      } catch (const InputError& e) {
        throw InputError(where_ + ": field 'select.health': " + e.what());
      }
      if (!node.evidence.empty()) add_unique(row.evidence, node.evidence);
      for (const auto& v : values) {
        const std::string key = req_.aggregate == "each"  ? v.item
                                : req_.scope == "cluster" ? "cluster"
                                                          : node.host;
        Item& item = items_.get(key, key);
        if (v.absent)
          item.absent.push_back(v.item + ": " + v.detail);
        else if (v.value.is_null())
          item.unknown.push_back(v.item + ": " + v.detail);
        else
          item.values.push_back(v.value);
        if (!v.value.is_null() && !v.detail.empty())
          item.notes.push_back(req_.aggregate == "each" ? v.detail : v.item + ": " + v.detail);
      }
    }
  }

  ItemResult judge_health_item(const Item& item) {
    ItemResult r;
    r.item = item.name;
    if (!item.unknown.empty()) {
      r.outcome = kMissing;
      r.message = item.unknown.front();
      if (item.unknown.size() > 1)
        r.message += " (and " + std::to_string(item.unknown.size() - 1) + " more unknown)";
      return r;
    }
    if (item.values.empty() && !item.absent.empty()) {
      r.outcome = kWaived;
      r.message = item.absent.front();
      return r;
    }
    if (req_.aggregate == "each") {
      r = judged(r, item.values, "");
    } else {
      std::vector<double> xs;
      for (const auto& v : item.values) xs.push_back(v.get<double>());
      r = judged(r, {aggregate_numbers(xs, req_.aggregate)}, req_.aggregate + " ");
    }
    // The evidence: each value's start -> end (only the rising ones of an aggregate).
    std::vector<std::string> notes;
    for (size_t i = 0; i < item.notes.size(); ++i)
      if (req_.aggregate == "each" || item.notes.size() == 1 ||
          (i < item.values.size() && item.values[i].get<double>() > 0))
        notes.push_back(item.notes[i]);
    if (!notes.empty()) r.message += ": " + join(notes, "; ");
    return r;
  }

  // --- row --------------------------------------------------------------------------------------

  void summarize(RowResult& row) {
    if (row.items.empty()) {
      row.outcome = kMissing;
      if (!req_.select.health.empty())
        row.message = "no env record in run.json: no health counters";
      else if (!req_.select.env.empty())
        row.message = run_.run.env.empty() ? "no env record in run.json"
                                           : req_.select.env + " matches nothing";
      else
        row.message = "no record of " + req_.select.benchmark + " " + req_.select.params.dump() +
                      " and no planned case: not run";
      return;
    }
    const ItemResult* worst = nullptr;
    for (const auto& it : row.items) {
      if (!worst) {
        worst = &it;
        continue;
      }
      int a = outcome_rank(it.outcome), b = outcome_rank(worst->outcome);
      if (a < b || (a == b && judge_.worse(it.value, worst->value))) worst = &it;
    }
    row.outcome = worst->outcome;
    row.value = worst->value;
    row.worst_item = worst->item;
    row.message = worst->message;
    row.noise = worst->noise;
    row.measured = worst->measured;
    if (row.items.size() > 1) {
      std::map<Outcome, int> n;
      for (const auto& it : row.items) ++n[it.outcome];
      std::vector<std::string> parts;
      for (Outcome o : kOutcomeOrder)
        if (n[o]) parts.push_back(std::to_string(n[o]) + " " + to_string(o));
      row.message += "; " + std::to_string(row.items.size()) + " items: " + join(parts, ", ");
    }
  }

  const RunDir& run_;
  const RunIndex& index_;
  const Requirement& req_;
  const std::vector<std::string>& hosts_;
  const std::vector<NodeHealth>& health_;
  std::string where_;
  Judge judge_;
  Items items_;
  std::vector<UnknownValue> unknown_;  ///< of the items left MISSING by unknown values
};

}  // namespace

std::vector<RowResult> evaluate_rows(const RunDir& run, const Spec& spec,
                                     const std::vector<std::string>& hosts,
                                     const std::vector<NodeHealth>& health) {
  const RunIndex index(run);
  std::vector<RowResult> rows;
  rows.reserve(spec.requirements.size());
  for (const auto& req : spec.requirements)
    rows.push_back(RowEvaluator(run, index, spec, req, hosts, health).run());
  return rows;
}

Scope parse_scope_item(const std::string& item) { return parse_item(item); }

}  // namespace clusterbench::report
