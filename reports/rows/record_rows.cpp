// Record rows (select.benchmark): the records of a benchmark whose params contain select.params,
// judged per item of the row's scope; failed, waived, missing and unmet records decide before a
// value does.
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "records/statistics.hpp"
#include "reports/links.hpp"
#include "reports/rows/row_base.hpp"

namespace clusterbench::report::rows {

namespace {

/// An item's records sorted by what they say.
struct Sorted {
  std::vector<const ResultRecord*> failed, waived, lacking;
  std::vector<json> values;
  std::vector<const Metric*> metrics;  ///< the metric of each value
  std::deque<Metric> relative;         ///< relative rows: each metric in percent of typical
  std::vector<std::string> keys;       ///< case keys, into the chosen candidate only
  std::vector<std::string> unmet;      ///< why each ok record missing select.require is skipped
  std::vector<std::string> described;  ///< select.describe of the records judged, distinct
  size_t repeated = 0;  ///< values left out: their select.distinct value was seen before
  /// "ITEM: REASON" of each ok record that could not measure the metric (extra.unmeasured)
  std::vector<std::string> unknown;
};

/// Sorts an item's records by what they say for one record row: failed, waived, not meeting
/// select.require, measured (the row's metric, select.distinct counted once), or lacking it.
class RecordSorter {
 public:
  explicit RecordSorter(const Requirement& req) : req_(req) {}

  /// Relative rows: the typical value of each params group (Requirement::relative), by
  /// params.dump(); NaN where too few nodes measured it.
  std::map<std::string, double> typical;

  Sorted sort(const Item& item) const {
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
        if (!req_.relative.empty()) {
          relative_value(*rec, *m, s);
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

  /// A relative row's value of one record: its metric in percent of its params' typical value,
  /// which the item's message names; no typical (fewer than 3 nodes measured it): unmet.
  void relative_value(const ResultRecord& rec, const Metric& m, Sorted& s) const {
    const std::string group = rec.params.dump();
    auto t = typical.find(group);
    const std::string what = req_.scope == "link" ? "link" : req_.scope;
    const std::string path = rec.params.value("rail", "");
    if (t == typical.end() || !(t->second > 0)) {
      s.unmet.push_back("no typical " + what + " for " + group +
                        ": fewer than 3 nodes measured it");
      return;
    }
    Metric& pct = s.relative.emplace_back(m);
    pct.unit = "%";
    pct.value = 100 * (m.value / t->second);
    for (double& r : pct.reps) r = 100 * (r / t->second);
    s.values.push_back(pct.value), s.metrics.push_back(&pct);
    add_unique(s.described, "100% = the typical " + what + (path.empty() ? "" : " on " + path) +
                                " (" + format_number(t->second) + " " + m.unit + ")");
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

 private:
  const Requirement& req_;
};

/// Judges a record row (select.benchmark + params + metric) over its records and planned cases.
class RecordRows : public RowEvaluator {
 public:
  RecordRows(const RowContext& ctx, const Requirement& req)
      : RowEvaluator(ctx, req), sorter_(req) {}

 protected:
  void collect(RowResult& row) override {
    const Select& sel = req_.select;
    if (!req_.relative.empty() && hosts_.size() < 3)
      row.not_applicable = std::to_string(hosts_.size()) + " node(s): a typical " + req_.scope +
                           " needs 3 nodes to compare with";
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
        if (m && req_.aggregate != "count" && req_.relative.empty() && m->unit != req_.unit)
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
    if (!req_.relative.empty()) sorter_.typical = typical_values(candidates);
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

  ItemResult judge_item(const Item& item) override { return judge_record_item(item); }

 private:
  /// A relative row's typical value per params group of the ok records judged: the typical
  /// link (typical_link) for a link row, else the median item; NaN with fewer than 3.
  std::map<std::string, double> typical_values(const std::vector<const ResultRecord*>& recs) {
    std::map<std::string, std::vector<LinkValue>> links;
    std::map<std::string, std::vector<double>> values;
    for (const ResultRecord* r : recs) {
      const Metric* m = r->status == Status::ok ? find_metric(*r, req_.select.metric) : nullptr;
      if (!m || !std::isfinite(m->value) || m->value < 0) continue;
      const std::string group = r->params.dump();
      if (req_.scope == "link" && r->scope.kind == ScopeKind::link && r->scope.hosts.size() == 2)
        links[group].push_back({r->scope.hosts[0], r->scope.hosts[1], m->value});
      else if (req_.scope != "link")
        values[group].push_back(m->value);
    }
    std::map<std::string, double> out;
    for (const auto& [g, ls] : links) out[g] = typical_link(ls, req_.op == ">=");
    for (const auto& [g, vs] : values) out[g] = vs.size() >= 3 ? median_of(vs) : std::nan("");
    return out;
  }

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
    Sorted s = sorter_.sort(item);
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
                    req_.select.metric + "'" + sorter_.unmeasured_reason(*s.lacking.front());
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

  RecordSorter sorter_;
};

}  // namespace

std::unique_ptr<RowEvaluator> record_row(const RowContext& ctx, const Requirement& req) {
  return std::make_unique<RecordRows>(ctx, req);
}

}  // namespace clusterbench::report::rows
