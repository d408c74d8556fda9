// What the evaluators of spec rows share (row_base.hpp).
#include "reports/rows/row_base.hpp"

#include <algorithm>
#include <map>

#include "reports/ifname.hpp"

namespace clusterbench::report::rows {

bool json_equal(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

std::string string_form(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

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

RunIndex::RunIndex(const RunDir& run) {
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
    if (v.is_null() && (it == params.end() || it->is_null())) continue;  // null: absent
    if (it == params.end() || !json_equal(*it, v)) return false;
  }
  return true;
}

const Metric* find_metric(const ResultRecord& r, const std::string& name) {
  for (const auto& m : r.metrics)
    if (m.name == name) return &m;
  return nullptr;
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

RowEvaluator::RowEvaluator(const RowContext& ctx, const Requirement& req)
    : run_(ctx.run),
      index_(ctx.index),
      req_(req),
      hosts_(ctx.hosts),
      health_(ctx.health),
      where_((ctx.spec.path.empty() ? ctx.spec.name : ctx.spec.path) + ": spec row '" + req.id +
             "'"),
      judge_(req, where_) {}

RowResult RowEvaluator::run() {
  RowResult row;
  row.req = req_;
  collect(row);
  // Evidence in first-seen order, O(1) per key; the views point into the items' record lists,
  // whose heap buffers stay put when an item is moved.
  std::unordered_set<std::string_view> seen;
  for (auto& item : items_.all()) {
    ItemResult r = judge_item(item);
    for (const auto& k : r.records)
      if (seen.insert(k).second) row.evidence.push_back(k);
    row.items.push_back(std::move(r));
  }
  summarize(row);
  note_not_wire(row);
  if (!row.not_applicable.empty()) {
    row.outcome = kWaived;
    row.message = "not applicable: " + row.not_applicable;
  }
  row.unknown = std::move(unknown_);
  return row;
}

void RowEvaluator::note_not_wire(RowResult& row) const {
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

ItemResult RowEvaluator::judged(ItemResult r, const std::vector<json>& values,
                                const std::string& prefix) {
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
  if (prefix.empty() && values.size() > 1) what = "worst of " + std::to_string(values.size()) + " ";
  r.message = what + format_value(r.value, req_.unit) + " on " + r.item + " (" +
              comparison_text(req_.op, format_value(req_.value, req_.unit), worst_fails) + ")";
  return r;
}

bool condition_holds(const std::string& op, const json& v, const json& target,
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

void RowEvaluator::summarize(RowResult& row) {
  if (row.items.empty()) {
    row.outcome = kMissing;
    if (!req_.select.health.empty())
      row.message = "no env record in run.json: no health counters";
    else if (!req_.select.env.empty())
      row.message =
          run_.run.env.empty() ? "no env record in run.json" : req_.select.env + " matches nothing";
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

}  // namespace clusterbench::report::rows
