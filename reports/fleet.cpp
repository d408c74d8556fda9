// Fleet view and fleet outliers (docs/report.md "Fleet").
#include "reports/fleet.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "reports/compare/statistics.hpp"
#include "reports/families.hpp"

namespace clusterbench::report {

namespace {

double outlier_tolerance(const std::vector<ToleranceRule>& rules,
                         const std::vector<SpecFamily>& families, const std::string& benchmark,
                         const std::string& metric, const std::string& unit) {
  const ToleranceRule* by_bench = nullptr;
  const ToleranceRule* by_unit = nullptr;
  for (const auto& r : rules) {
    if (is_known_unit(r.key)) {
      if (r.key == unit) by_unit = &r;
      continue;
    }
    auto colon = r.key.find(':');
    if (colon != std::string::npos && r.key.substr(colon + 1) != metric) continue;
    if (glob_match(r.key.substr(0, colon), benchmark)) by_bench = &r;
  }
  if (by_bench) return by_bench->fraction;
  if (by_unit) return by_unit->fraction;
  return resolve_family(families, benchmark).outlier_tolerance.value_or(kDefaultOutlierTolerance);
}

/// The host a row item names: the longest of `known` that is the item or is followed in it by
/// '/' ("node01/gpu3[...]" -> node01). A host name may hold a '/' itself ("rack1/n3/gpu0" ->
/// rack1/n3 when that host is known), so the item is not cut at its first '/'.
template <class Known>
std::string item_host(const std::string& item, const Known& known) {
  for (size_t end = item.size(); end != std::string::npos && end > 0;
       end = item.rfind('/', end - 1))
    if (known.count(item.substr(0, end))) return item.substr(0, end);
  return item.substr(0, item.find('/'));
}

/// The hosts an item of a report row belongs to: "node01/gpu3[...]" -> node01, "a<->b" -> a, b.
template <class Known>
std::vector<std::string> item_hosts(const std::string& item, const Known& known) {
  if (item == "cluster") return {};
  auto link = item.find("<->");
  if (link != std::string::npos) return {item.substr(0, link), item.substr(link + 3)};
  return {item_host(item, known)};
}

struct Group {
  std::vector<const ResultRecord*> recs;
  std::vector<const Metric*> metrics;  ///< each record's metric (its repetitions)
  std::vector<double> values;
  const Metric* proto = nullptr;
};

bool judged_kind(const ResultRecord& r) {
  const ScopeKind k = r.scope.kind;
  return k == ScopeKind::gpu || k == ScopeKind::node || k == ScopeKind::link;
}

/// The records of gpu, node and link scope, in record order (one per case key: RunDir).
std::vector<const ResultRecord*> judged_records(const std::vector<ResultRecord>& records) {
  std::vector<const ResultRecord*> chosen;
  chosen.reserve(records.size());
  for (const auto& r : records)
    if (judged_kind(r)) chosen.push_back(&r);
  return chosen;
}

/// Whether `m` is its benchmark's headline metric: one a spec row judges (`headline`), or, for a
/// benchmark no row judges, the record's first metric (the one its benchmark names first).
bool is_headline(const ResultRecord& r, const Metric& m, const HeadlineMetrics& headline) {
  auto it = headline.find(r.benchmark);
  if (it != headline.end()) return it->second.count(m.name) > 0;
  return !r.metrics.empty() && &m == &r.metrics.front();
}

/// The ok records' finite headline metrics grouped by benchmark|params|metric|scope kind,
/// ordered by that key (deterministic output).
std::vector<std::pair<std::string, Group>> metric_groups(
    const std::vector<const ResultRecord*>& chosen, const HeadlineMetrics& headline) {
  std::unordered_map<std::string, size_t> group_at;
  std::vector<std::pair<std::string, Group>> groups;
  std::string base;
  const ResultRecord* base_of = nullptr;  // consecutive records of a case share `base`
  for (const ResultRecord* r : chosen) {
    if (r->status != Status::ok) continue;
    if (!base_of || base_of->benchmark != r->benchmark || base_of->params != r->params)
      base = r->benchmark + "|" + r->params.dump() + "|";
    base_of = r;
    for (const auto& m : r->metrics) {
      if (!std::isfinite(m.value) || !is_headline(*r, m, headline)) continue;
      auto [it, fresh] =
          group_at.try_emplace(base + m.name + "|" + scope_kind_name(r->scope.kind), groups.size());
      if (fresh) groups.emplace_back(it->first, Group{});
      Group& g = groups[it->second].second;
      g.recs.push_back(r);
      g.metrics.push_back(&m);
      g.values.push_back(m.value);
      if (!g.proto) g.proto = &m;
    }
  }
  std::sort(groups.begin(), groups.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return groups;
}

using GpuIndex = std::map<std::pair<std::string, int>, const GpuInfo*>;

Outlier make_outlier(const ResultRecord& r, const Group& g, double v, double med, double tol,
                     const GpuIndex& gpus) {
  Outlier o;
  o.benchmark = r.benchmark;
  o.params = r.params;
  o.metric = g.proto->name;
  o.unit = g.proto->unit;
  o.higher_is_better = g.proto->higher_is_better;
  o.kind = scope_kind_name(r.scope.kind);
  o.item = scope_item(r.scope);
  o.hosts =
      r.scope.kind == ScopeKind::link ? r.scope.hosts : std::vector<std::string>{r.scope.host};
  o.host = o.hosts.empty() ? r.scope.host : o.hosts.front();
  o.gpu_index = r.scope.kind == ScopeKind::gpu ? r.scope.gpu_index : -1;
  o.uuid = r.scope.uuid;
  o.pci_bus_id = r.scope.pci_bus_id;
  if (o.kind == "gpu") {
    auto it = gpus.find({r.scope.host, r.scope.gpu_index});
    if (it != gpus.end()) {
      if (o.uuid.empty()) o.uuid = it->second->uuid;
      if (o.pci_bus_id.empty()) o.pci_bus_id = it->second->pci_bus_id;
    }
  }
  o.value = v;
  o.median = med;
  o.deviation = (v - med) / std::fabs(med);
  o.tolerance = tol;
  o.fleet_size = static_cast<int>(g.values.size());
  o.case_key = r.case_key;
  return o;
}

/// Every repetition of the group's members that have kMinReps or more: what a member is tested
/// against (without its own), sorted once for the group.
RankPool fleet_pool(const Group& g) {
  std::vector<double> all;
  for (const Metric* m : g.metrics)
    if (m->reps.size() >= static_cast<size_t>(kMinReps))
      all.insert(all.end(), m->reps.begin(), m->reps.end());
  return rank_pool(std::move(all));
}

/// Whether member `i`'s repetitions differ from the rest of the group's with significance (the
/// two-sided Mann-Whitney U test compare uses, p < kAlpha), into `p`; `pool` is fleet_pool(g).
/// Members with fewer than kMinReps repetitions, or a fleet without them, cannot be tested: true
/// (their deviation alone judges, as a one-number metric's must), p = -1.
bool differs_significantly(const Group& g, size_t i, const RankPool& pool, double& p) {
  p = -1;
  const std::vector<double>& mine = g.metrics[i]->reps;
  if (mine.size() < static_cast<size_t>(kMinReps)) return true;
  if (pool.sorted.size() < mine.size() + static_cast<size_t>(kMinReps)) return true;
  p = mann_whitney_p(mine, pool, true);
  return p < kAlpha;
}

}  // namespace

std::vector<Outlier> find_outliers(const std::vector<ResultRecord>& records,
                                   const std::vector<EnvRecord>& env,
                                   const std::vector<SpecFamily>& families,
                                   const std::vector<ToleranceRule>& rules, int min_items,
                                   const HeadlineMetrics& headline) {
  const auto groups = metric_groups(judged_records(records), headline);
  GpuIndex gpus;
  for (const auto& e : env)
    for (const auto& g : e.gpus) gpus[{e.host, g.index}] = &g;
  std::vector<Outlier> out;
  for (const auto& [gkey, g] : groups) {
    if (static_cast<int>(g.values.size()) < min_items) continue;
    double med = median_of(g.values);
    if (med == 0) continue;
    const ResultRecord& first = *g.recs.front();
    double tol = outlier_tolerance(rules, families, first.benchmark, g.proto->name, g.proto->unit);
    size_t start = out.size();
    std::optional<RankPool> pool;  // made at the group's first member past the tolerance
    for (size_t i = 0; i < g.values.size(); ++i) {
      double v = g.values[i];
      bool bad = g.proto->higher_is_better ? v < med * (1 - tol) : v > med * (1 + tol);
      double p = -1;
      if (bad && !pool) pool = fleet_pool(g);
      if (bad && differs_significantly(g, i, *pool, p)) {
        out.push_back(make_outlier(*g.recs[i], g, v, med, tol, gpus));
        out.back().p_value = p;
      }
    }
    std::sort(out.begin() + start, out.end(), [](const Outlier& a, const Outlier& b) {
      double da = a.higher_is_better ? a.deviation : -a.deviation;
      double db = b.higher_is_better ? b.deviation : -b.deviation;
      return da != db ? da < db : a.item < b.item;
    });
  }
  return out;
}

namespace {

/// Spec FAIL rows per host, from the rows' items; counts every item's outcome on its hosts. A
/// failing link whose localisation blames one of its ends (a node or a NIC in `located`) fails
/// that end only: a slow node's healthy peers are not drained for its links.
std::map<std::string, std::set<std::string>> count_items(
    const std::vector<RowResult>& rows, std::unordered_map<std::string, FleetNode>& nodes,
    const std::vector<Located>& located) {
  std::set<std::string> blamed;
  for (const auto& l : located)
    if (l.kind != "link") blamed.insert(l.host);
  std::map<std::string, std::set<std::string>> failed_rows;
  for (const auto& row : rows)
    for (const auto& it : row.items) {
      const auto hosts = item_hosts(it.item, nodes);
      const auto n_blamed = std::count_if(hosts.begin(), hosts.end(),
                                          [&](const std::string& h) { return blamed.count(h); });
      for (const auto& h : hosts) {
        auto n = nodes.find(h);
        if (n == nodes.end()) continue;
        ++n->second.items[it.outcome];
        if (it.outcome == kFail && (hosts.size() < 2 || n_blamed != 1 || blamed.count(h)))
          failed_rows[h].insert(row.req.id);
      }
    }
  return failed_rows;
}

/// Benchmarks with a failed record per host; counts every record's status on its hosts.
std::map<std::string, std::set<std::string>> count_records(
    const std::vector<ResultRecord>& records, std::unordered_map<std::string, FleetNode>& nodes) {
  std::map<std::string, std::set<std::string>> failed_benches;
  for (const auto& r : records) {
    if (r.scope.kind == ScopeKind::cluster) continue;
    const bool link = r.scope.kind == ScopeKind::link;
    const size_t count = link ? r.scope.hosts.size() : 1;
    for (size_t i = 0; i < count; ++i) {
      const std::string& h = link ? r.scope.hosts[i] : r.scope.host;
      auto n = nodes.find(h);
      if (n == nodes.end()) continue;
      if (r.status == Status::ok) ++n->second.records_ok;
      if (r.status == Status::waived) ++n->second.records_waived;
      if (r.status == Status::failed) {
        ++n->second.records_failed;
        failed_benches[h].insert(r.benchmark);
      }
    }
  }
  return failed_benches;
}

template <class Strings>
std::string join_comma(const Strings& xs) {
  std::string s;
  for (const auto& x : xs) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

HeadlineMetrics headline_metrics(const std::vector<RowResult>& rows) {
  HeadlineMetrics out;
  for (const auto& row : rows)
    if (!row.req.select.benchmark.empty() && !row.req.select.metric.empty())
      out[row.req.select.benchmark].insert(row.req.select.metric);
  return out;
}

FleetView fleet_view(const RunDir& run, const std::vector<RowResult>& rows,
                     const std::vector<std::string>& report_hosts,
                     const std::vector<LinkMatrix>& links, const std::vector<SpecFamily>& families,
                     const std::vector<ToleranceRule>& rules) {
  FleetView fv;
  std::vector<std::string> hosts = report_hosts;
  std::unordered_set<std::string> known(hosts.begin(), hosts.end());
  for (const auto& r : run.records.records)
    if (!r.scope.host.empty() && r.scope.kind != ScopeKind::cluster &&
        known.insert(r.scope.host).second)
      hosts.push_back(r.scope.host);
  std::unordered_map<std::string, FleetNode> nodes;
  nodes.reserve(hosts.size());
  for (const auto& h : hosts) {
    FleetNode& n = nodes[h];
    n.host = h;
    for (Outcome o : kOutcomeOrder) n.items[o] = 0;
  }
  fv.located = locate_link_faults(
      links, [&](const std::string& b, const std::string& m, const std::string& u) {
        return outlier_tolerance(rules, families, b, m, u);
      });
  auto failed_rows = count_items(rows, nodes, fv.located);
  auto failed_benches = count_records(run.records.records, nodes);
  fv.outliers =
      find_outliers(run.records.records, run.run.env, families, rules, 3, headline_metrics(rows));
  // Links are answered once, by the localisation below (both directions, every path).
  fv.outliers.erase(std::remove_if(fv.outliers.begin(), fv.outliers.end(),
                                   [](const Outlier& o) { return o.kind == "link"; }),
                    fv.outliers.end());
  std::map<std::string, std::vector<std::string>> outlier_items;
  for (const auto& o : fv.outliers) {
    auto n = nodes.find(o.host);
    if (n == nodes.end()) continue;
    ++n->second.outliers;
    outlier_items[o.host].push_back(o.benchmark + " " + o.metric + " " + o.item);
  }
  std::map<std::string, std::set<std::string>> located_items;
  for (const auto& l : fv.located)
    if (l.kind != "link") located_items[l.host].insert(l.kind == "nic" ? "NIC " + l.nic : "node");
  for (const auto& h : hosts) {
    FleetNode& n = nodes[h];
    if (failed_rows.count(h)) n.reasons.push_back("spec FAIL: " + join_comma(failed_rows[h]));
    if (failed_benches.count(h))
      n.suspicions.push_back("failed records: " + join_comma(failed_benches[h]));
    if (outlier_items.count(h)) n.suspicions.push_back("outliers: " + join_comma(outlier_items[h]));
    if (located_items.count(h))
      n.suspicions.push_back("slow links located in its " + join_comma(located_items[h]));
    if (!n.reasons.empty())
      fv.failing_hosts.push_back(h);
    else if (!n.suspicions.empty())
      fv.suspect_hosts.push_back(h);
    fv.nodes.push_back(n);
  }
  return fv;
}

}  // namespace clusterbench::report
