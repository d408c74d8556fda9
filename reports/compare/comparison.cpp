// compare() (comparison.hpp).
#include "reports/compare/comparison.hpp"

#include <algorithm>
#include <deque>
#include <future>
#include <string_view>
#include <unordered_map>

namespace clusterbench::report {

namespace {

/// One side's records by match key. The maps view the records' own case keys, or keys that must
/// be built (GPU records by UUID: match_key(), with each case's params serialised once, as its
/// records come one after another) kept in `made`.
struct Side {
  std::deque<std::string> made;
  std::vector<std::string_view> keys;                 ///< match key of each record
  std::unordered_map<std::string_view, size_t> last;  ///< match key -> its last record
  std::vector<size_t> order;                          ///< first record of each key, in order
};

Side index_side(const std::vector<ResultRecord>& recs) {
  Side side;
  side.keys.reserve(recs.size());
  const json* last_params = nullptr;
  std::string last_dump;
  for (const auto& r : recs) {
    if (by_uuid(r)) {
      if (!last_params || *last_params != r.params) last_dump = r.params.dump();
      last_params = &r.params;
      side.keys.push_back(side.made.emplace_back(uuid_key(r, last_dump)));
    } else if (r.case_key.empty()) {
      side.keys.push_back(side.made.emplace_back(match_key(r)));
    } else {
      side.keys.push_back(r.case_key);
    }
  }
  side.last.reserve(recs.size());
  for (size_t i = 0; i < recs.size(); ++i) {
    auto [it, fresh] = side.last.try_emplace(side.keys[i], i);
    if (fresh)
      side.order.push_back(i);
    else
      it->second = i;
  }
  return side;
}

/// Worst verdict first, keeping the order within a verdict: each case moves once, to its
/// verdict's next slot.
void sort_by_verdict(std::vector<CaseChange>& cases) {
  std::vector<size_t> slot(verdict_order().size() + 2, 0);
  for (const auto& cc : cases) ++slot[verdict_rank(cc.verdict) + 1];
  for (size_t v = 1; v < slot.size(); ++v) slot[v] += slot[v - 1];
  std::vector<CaseChange> sorted(cases.size());
  for (auto& cc : cases) sorted[slot[verdict_rank(cc.verdict)]++] = std::move(cc);
  cases = std::move(sorted);
}

/// Keeps of an unchanged case only its metric that moved most towards worse: what the outputs
/// quote of the cases they count per benchmark.
void keep_closest(CaseChange& cc) {
  if (cc.metrics.size() <= 1) return;
  auto worse = [](const MetricChange& m) {
    return m.higher_is_better ? -m.change_pct : m.change_pct;
  };
  auto closest =
      std::max_element(cc.metrics.begin(), cc.metrics.end(),
                       [&](const auto& a, const auto& b) { return worse(a) < worse(b); });
  std::vector<MetricChange> one{std::move(*closest)};
  cc.metrics.swap(one);
  cc.reduced = true;
}

/// True when no metric of any case was judged (regressed, improved or unchanged): a BASELINE with
/// no records of CURRENT's cases, or runs of one repetition a case, answer nothing, and compare
/// says so (exit 4) rather than "NO REGRESSION".
bool nothing_judged(const Comparison& c) {
  return !c.cases.empty() && c.counts.at(kRegressed) + c.counts.at(kImproved) +
                                     c.counts.at(kNotSignificant) + c.counts.at(kUnchanged) ==
                                 0;
}

/// The keys of `rules` that name no metric of any record in `cases`.
std::vector<std::string> unused_rules(const std::vector<ToleranceRule>& rules,
                                      const std::vector<CaseChange>& cases) {
  std::vector<std::string> out;
  for (const auto& r : rules) {
    bool used = false;
    for (size_t i = 0; i < cases.size() && !used; ++i)
      for (const ResultRecord* rec : {cases[i].baseline, cases[i].current})
        if (rec)
          for (const auto& m : rec->metrics)
            used = used || rule_names(r, rec->benchmark, m.name, m.unit);
    if (!used) out.push_back(r.key);
  }
  return out;
}

}  // namespace

ExtraKeys compare_extra_keys() {
  return {"disk_load", "host_probe", "little_law", "rounds", "snapshot", "unmeasured"};
}

Comparison compare(const RunDir& baseline, const RunDir& current,
                   const std::vector<ToleranceRule>& rules, const std::vector<SpecFamily>& families,
                   bool all_cases) {
  Comparison out;
  out.baseline_dir = baseline.dir;
  out.current_dir = current.dir;
  out.baseline_run_id = baseline.run.run_id;
  out.current_run_id = current.run.run_id;
  out.baseline_suite = baseline.run.suite, out.current_suite = current.run.suite;
  out.baseline_rounds = baseline.run.rounds, out.current_rounds = current.run.rounds;
  out.rules = rules;
  // A resumed run may hold a case twice: the last record wins, as in the report. Each side is
  // indexed on a thread of its own.
  const auto& brecs = baseline.records.records;
  const auto& crecs = current.records.records;
  auto base_future = std::async(std::launch::async, [&] { return index_side(brecs); });
  const Side cur = index_side(crecs);
  const Side base = base_future.get();
  // BASELINE's cases in order, judged on two threads into their own slots.
  out.cases.resize(base.order.size());
  std::vector<char> matched(crecs.size(), 0);  // distinct cases match distinct records
  // Few cases cannot leave more unchanged ones than are listed: nothing to reduce.
  const bool reduce = !all_cases && out.cases.size() > kFullDetailUnchanged;
  auto judge = [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      const std::string_view key = base.keys[base.order[k]];
      auto it = cur.last.find(key);
      const ResultRecord* c = it == cur.last.end() ? nullptr : &crecs[it->second];
      judge_case(brecs[base.last.at(key)], c, rules, families, current.run, out.cases[k]);
      if (reduce && out.cases[k].verdict == kUnchanged) keep_closest(out.cases[k]);
      if (c) matched[it->second] = 1;
    }
  };
  const size_t half = out.cases.size() / 2;
  auto judged = std::async(std::launch::async, judge, half, out.cases.size());
  judge(0, half);
  judged.get();
  for (size_t i : cur.order) {
    const size_t lastrec = cur.last.at(cur.keys[i]);
    if (matched[lastrec]) continue;
    CaseChange cc;
    cc.current = &crecs[lastrec];
    cc.baseline_status = "missing";
    cc.current_status = status_name(cc.current->status);
    cc.verdict = kNew;
    cc.message = "only in CURRENT";
    out.cases.push_back(std::move(cc));
  }
  auto base_probes = std::async(std::launch::async, [&] { return probe_samples(brecs); });
  out.host_drift = host_drift(base_probes.get(), probe_samples(crecs));
  out.drift_cases = discount_drift(out.cases, out.host_drift);
  sort_by_verdict(out.cases);
  for (const auto& v : verdict_order()) out.counts[v] = 0;
  for (const auto& c : out.cases) ++out.counts[c.verdict];
  // The unchanged cases listed in full get their metrics back: all of them when they are few,
  // else the ones compare.md lists.
  const bool few = static_cast<size_t>(out.counts[kUnchanged]) <= kFullDetailUnchanged;
  size_t unchanged = 0;
  for (auto& cc : out.cases)
    if (cc.verdict == kUnchanged && (few || unchanged++ < kMarkdownUnchanged) && cc.reduced) {
      const ResultRecord& b = *cc.baseline;
      const ResultRecord* c = cc.current;
      cc = CaseChange{};
      judge_case(b, c, rules, families, current.run, cc);
    }
  EnvDiff env = diff_env(baseline, current);
  out.env_changes = std::move(env.changes);
  out.hosts_removed = std::move(env.hosts_removed);
  out.hosts_added = std::move(env.hosts_added);
  out.unused_rules = unused_rules(rules, out.cases);
  out.unfinished_cases = static_cast<int>(std::count_if(
      out.cases.begin(), out.cases.end(), [](const auto& c) { return c.unfinished; }));
  out.exit_code = out.counts[kRegressed] > 0                                               ? 1
                  : out.drift_cases > 0 || out.unfinished_cases > 0 || nothing_judged(out) ? 4
                                                                                           : 0;
  return out;
}

}  // namespace clusterbench::report
