// Env rows (select.env): each node's EnvRecord values at a JSON pointer, after select.where,
// judged per match or per node; unknown values decide only where they cannot change the outcome.
#include <algorithm>
#include <map>

#include "reports/rows/row_base.hpp"

namespace clusterbench::report::rows {

namespace {

/// Judges an env row (select.env) over every node's EnvRecord.
class EnvRows : public RowEvaluator {
 public:
  using RowEvaluator::RowEvaluator;

 protected:
  void collect(RowResult&) override {
    try {
      env_field_unit(req_.select.env);
    } catch (const InputError& e) {
      throw InputError(where_ + ": field 'select.env': " + e.what());
    }
    for (size_t e = 0; e < run_.run.env.size(); ++e)
      collect_env_node(run_.run.env[e], index_.env_docs[e]);
  }
  ItemResult judge_item(const Item& item) override { return judge_env_item(item); }

 private:
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
    // A value null because what it belongs to does not apply here (the device plugin's version
    // on a node without Kubernetes): WAIVED with the reason, not MISSING.
    if (item.values.empty() && item.undecided.empty() && !item.nulls.empty() &&
        std::all_of(item.nulls.begin(), item.nulls.end(), [](const UnknownValue& u) {
          return u.reason.rfind("not applicable", 0) == 0;
        })) {
      r.outcome = kWaived;
      r.message = item.name + ": " + item.nulls.front().reason;
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
};

}  // namespace

std::unique_ptr<RowEvaluator> env_row(const RowContext& ctx, const Requirement& req) {
  return std::make_unique<EnvRows>(ctx, req);
}

}  // namespace clusterbench::report::rows
