// Internal to reports/rows: what the evaluators of spec rows share (rows.hpp evaluate_rows). A
// row's comparison (Judge), its items (Items), the run's records indexed once per report
// (RunIndex), and the base RowEvaluator, whose env, record and health kinds each judge their own
// rows (env_rows.cpp, record_rows.cpp, health_rows.cpp).
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "records/run_dir.hpp"
#include "records/spec.hpp"
#include "reports/health.hpp"
#include "reports/rows.hpp"

namespace clusterbench::report::rows {

/// JSON equality where two numbers compare by value (2 == 2.0).
bool json_equal(const json& a, const json& b);

/// A value as text: a string itself, anything else its JSON.
std::string string_form(const json& v);

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

/// min/max/median/sum/count over numbers (median of an even count: mean of the middle two).
double aggregate_numbers(std::vector<double> xs, const std::string& agg);

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

  explicit RunIndex(const RunDir& run);
  template <class T>
  static const std::vector<const T*>& of(
      const std::unordered_map<std::string, std::vector<const T*>>& m, const std::string& b) {
    static const std::vector<const T*> none;
    auto it = m.find(b);
    return it == m.end() ? none : it->second;
  }
};

/// The item key of a GPU: "host/gpuN", without the UUID, so that env and records meet.
std::string gpu_key(const std::string& host, int index);

/// The item name of a GPU of a host's env: "host/gpuN[UUID]".
std::string gpu_name(const std::string& host, const GpuInfo& g);

/// Inverse of scope_item(), for the item part of a planned case key.
Scope parse_item(const std::string& item);

/// A record's case key (made when records.jsonl left it out).
std::string case_key_of(const ResultRecord& r);

/// Whether `params` hold every key of `subset` with an equal value (json_equal); a key whose
/// value is null in `subset` must be absent (or null) in `params`.
bool params_contain(const json& params, const json& subset);

/// The metric `name` of a record, nullptr when it has none.
const Metric* find_metric(const ResultRecord& r, const std::string& name);

/// Appends `x` unless `xs` holds it.
void add_unique(std::vector<std::string>& xs, const std::string& x);

/// The text of a failed record: its message, or its error fields when the message is empty.
std::string failure_text(const ResultRecord& r);

/// Whether a `select.where` or `select.require` condition `op` `target` holds for `v` (`env`: the
/// node's EnvRecord, for `nccl_ifname`).
bool condition_holds(const std::string& op, const json& v, const json& target,
                     const EnvRecord& env);

/// What every row of one report is judged over.
struct RowContext {
  const RunDir& run;
  const RunIndex& index;
  const Spec& spec;
  const std::vector<std::string>& hosts;
  const std::vector<NodeHealth>& health;
};

/// Judges one spec row: collects its items, judges each, and takes the worst (evaluate_rows). A
/// row kind (env, records, health) says how items are found and judged.
class RowEvaluator {
 public:
  RowEvaluator(const RowContext& ctx, const Requirement& req);
  virtual ~RowEvaluator() = default;
  RowEvaluator(const RowEvaluator&) = delete;
  RowEvaluator& operator=(const RowEvaluator&) = delete;

  /// The row judged.
  RowResult run();

 protected:
  /// Finds the row's items and what each holds (its records, values or deltas).
  virtual void collect(RowResult& row) = 0;
  /// The outcome of one item.
  virtual ItemResult judge_item(const Item& item) = 0;

  /// Compares every value; the item takes the worst one (a failing one before any passing one).
  ItemResult judged(ItemResult r, const std::vector<json>& values, const std::string& prefix);

  const RunDir& run_;
  const RunIndex& index_;
  const Requirement& req_;
  const std::vector<std::string>& hosts_;
  const std::vector<NodeHealth>& health_;
  std::string where_;
  Judge judge_;
  Items items_;
  std::vector<UnknownValue> unknown_;  ///< of the items left MISSING by unknown values

 private:
  void note_not_wire(RowResult& row) const;
  void summarize(RowResult& row);
};

/// The evaluator of an env row (select.env), of a record row (select.benchmark) and of a health
/// row (select.health).
std::unique_ptr<RowEvaluator> env_row(const RowContext& ctx, const Requirement& req);
std::unique_ptr<RowEvaluator> record_row(const RowContext& ctx, const Requirement& req);
std::unique_ptr<RowEvaluator> health_row(const RowContext& ctx, const Requirement& req);

}  // namespace clusterbench::report::rows
