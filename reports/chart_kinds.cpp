// The kinds of chart build_charts() chooses from (reports/chart_kinds.hpp, docs/report.md
// "Charts").
#include "reports/chart_kinds.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "records/spec.hpp"
#include "reports/families.hpp"
#include "reports/report.hpp"
#include "reports/rows.hpp"

namespace clusterbench::report {

namespace {

/// The lowest and highest repetition of `m` (its value twice when it has fewer than two).
std::pair<double, double> rep_range(const Metric& m) {
  if (m.reps.size() < 2) return {m.value, m.value};
  const auto [lo, hi] = std::minmax_element(m.reps.begin(), m.reps.end());
  return {*lo, *hi};
}

/// The series' points in x order, their ranges with them.
void sort_points(Series& s) {
  std::vector<size_t> order(s.points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return s.points[a] < s.points[b]; });
  Series sorted{s.name, {}, {}};
  for (size_t i : order) {
    sorted.points.push_back(s.points[i]);
    if (i < s.ranges.size()) sorted.ranges.push_back(s.ranges[i]);
  }
  s = std::move(sorted);
}

}  // namespace

namespace {

bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

/// The digits of a number without leading zeros ("007" -> "7", "0" -> "0").
std::string_view significant(std::string_view d) {
  while (d.size() > 1 && d.front() == '0') d.remove_prefix(1);
  return d;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && digit(a[i2])) ++i2;
      while (j2 < b.size() && digit(b[j2])) ++j2;
      auto x = significant(std::string_view(a).substr(i, i2 - i));
      auto y = significant(std::string_view(b).substr(j, j2 - j));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2, j = j2;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i, ++j;
  }
  return a.size() - i < b.size() - j;
}

namespace {

/// Heatmaps show at most this many rows (nodes): those with the worst cells.
constexpr size_t kMaxHeatmapRows = 48;
/// GPU indexes a heatmap shows (0-63): a node has at most a few dozen GPUs.
constexpr int kMaxHeatmapColumns = 64;
/// A groups chart draws a bar per node up to this many nodes; beyond, a point per node.
constexpr size_t kMaxGroupBars = 16;

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string short_item(const Scope& s) {
  if (s.kind == ScopeKind::gpu) return s.host + "/gpu" + std::to_string(s.gpu_index);
  return scope_item(s);
}

/// "k=v k2=v2" over `keys` that `params` holds.
std::string params_label(const json& params, const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys)
    if (params.contains(k)) out += (out.empty() ? "" : " ") + k + "=" + value_text(params[k]);
  return out;
}

/// The params, but `exclude`, whose values differ among `recs` (or that some lack), in key order.
std::vector<std::string> varying_keys(const std::vector<const ResultRecord*>& recs,
                                      const std::vector<std::string>& exclude) {
  std::map<std::string, std::pair<std::string, size_t>> first;  // key -> first value, count
  std::set<std::string> varying;
  for (const auto* r : recs)
    for (const auto& [k, v] : r->params.items()) {
      std::string d = v.dump();
      auto [it, fresh] = first.try_emplace(k, d, 0);
      ++it->second.second;
      if (!fresh && it->second.first != d) varying.insert(k);
    }
  std::vector<std::string> out;
  for (const auto& [k, fc] : first) {
    if (std::find(exclude.begin(), exclude.end(), k) != exclude.end()) continue;
    if (varying.count(k) || fc.second != recs.size()) out.push_back(k);
  }
  return out;
}

/// A row judged on a record metric against a numeric >= or <= threshold.
bool threshold_row(const RowResult& row) {
  const Requirement& r = row.req;
  return !r.select.benchmark.empty() && !r.select.metric.empty() &&
         (r.op == ">=" || r.op == "<=") && r.value.is_number();
}

/// An item the row compared with its threshold (not MISSING or WAIVED).
bool judged(const ItemResult& it) {
  return it.value.is_number() &&
         (it.outcome == kPass || it.outcome == kWarn || it.outcome == kFail);
}

/// A row that judged at least one item: only such a row draws its threshold.
bool judged_any(const RowResult& row) {
  return std::any_of(row.items.begin(), row.items.end(), judged);
}

/// A GPU item "host/gpuN[uuid]" read as a GPU whatever the host name holds ("<->" included):
/// the row's scope says it is one. gpu_index -1 when it is not of that form.
Scope gpu_item(const std::string& item) {
  Scope s;
  s.kind = ScopeKind::gpu;
  std::string core = item;
  if (!core.empty() && core.back() == ']')
    if (auto open = core.rfind('['); open != std::string::npos) core.resize(open);
  const size_t g = core.rfind("/gpu");
  if (g == std::string::npos || g + 4 >= core.size()) return s;
  for (size_t i = g + 4; i < core.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(core[i]))) return s;
  s.host = core.substr(0, g);
  s.gpu_index = std::stoi(core.substr(g + 4, 9));
  return s;
}

/// Whether `params` holds every key of `select` with the same value.
bool selects(const json& select, const json& params) {
  for (const auto& [k, v] : select.items())
    if (!params.contains(k) || params[k] != v) return false;
  return true;
}

std::string threshold_words(const Requirement& r) {
  return r.op + " " + format_number(r.value.get<double>()) + " " + r.unit;
}

}  // namespace

// ---- heatmaps of judged GPUs and links ----

namespace {

/// One judged GPU or link of a row, before it becomes cells.
struct RawCell {
  std::string a, b;  ///< the host; a link's second host
  int gpu = -1;
  double value = 0;
  std::string mark;
};

/// The row's items with numeric values, GPUs or links (`links` says which), outliers marked.
std::vector<RawCell> raw_cells(const RowResult& row, const Report& report, bool& links) {
  std::set<std::string> outliers;
  for (const auto& o : report.fleet.outliers)
    if (o.benchmark == row.req.select.benchmark && o.metric == row.req.select.metric &&
        selects(row.req.select.params, o.params))
      outliers.insert(o.kind == "link" && o.hosts.size() == 2
                          ? o.hosts[0] + "<->" + o.hosts[1]
                          : o.host + "/gpu" + std::to_string(o.gpu_index));
  std::vector<RawCell> raw;
  links = row.req.scope == "link";
  if (!links && row.req.scope != "gpu") return raw;
  std::set<std::pair<std::string, std::string>> pairs;  // a link once, whichever way round
  for (const auto& it : row.items) {
    if (!judged(it) || !std::isfinite(it.value.get<double>())) continue;
    std::string mark = it.outcome == kFail ? "FAIL" : it.outcome == kWarn ? "WARN" : "";
    if (!links) {
      const Scope s = gpu_item(it.item);
      if (s.gpu_index < 0 || s.gpu_index >= kMaxHeatmapColumns) continue;
      if (mark.empty() && outliers.count(s.host + "/gpu" + std::to_string(s.gpu_index)))
        mark = "outlier";
      raw.push_back({s.host, "", s.gpu_index, it.value.get<double>(), mark});
      continue;
    }
    const Scope s = parse_scope_item(it.item);
    if (s.kind != ScopeKind::link || s.hosts.size() != 2) continue;
    if (!pairs.insert(std::minmax(s.hosts[0], s.hosts[1])).second) continue;
    if (mark.empty() && outliers.count(s.hosts[0] + "<->" + s.hosts[1])) mark = "outlier";
    raw.push_back({s.hosts[0], s.hosts[1], -1, it.value.get<double>(), mark});
  }
  return raw;
}

/// The hosts a heatmap shows, in the report's host order: all, or the kMaxHeatmapRows whose
/// worst cell is worst (`worse(a, b)`: a is worse than b).
std::vector<std::string> heatmap_hosts(const std::vector<RawCell>& raw, const Report& report,
                                       bool lower_is_better, std::string& note) {
  std::unordered_map<std::string, double> worst;
  for (const auto& c : raw)
    for (const std::string* h : {&c.a, &c.b}) {
      if (h->empty()) continue;
      auto [it, fresh] = worst.try_emplace(*h, c.value);
      if (!fresh)
        it->second =
            lower_is_better ? std::max(it->second, c.value) : std::min(it->second, c.value);
    }
  std::vector<std::string> hosts;
  for (const auto& h : report.hosts)
    if (worst.count(h)) hosts.push_back(h);
  for (const auto& c : raw)  // hosts of records the env does not list
    if (std::find(hosts.begin(), hosts.end(), c.a) == hosts.end()) hosts.push_back(c.a);
  if (hosts.size() <= kMaxHeatmapRows) return hosts;
  std::vector<std::string> ranked = hosts;
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& x, const auto& y) {
    return lower_is_better ? worst[x] > worst[y] : worst[x] < worst[y];
  });
  ranked.resize(kMaxHeatmapRows);
  std::set<std::string> keep(ranked.begin(), ranked.end());
  std::erase_if(hosts, [&](const std::string& h) { return !keep.count(h); });
  note = "the " + std::to_string(kMaxHeatmapRows) + " nodes with the " +
         (lower_is_better ? "highest" : "lowest") + " cells of " + std::to_string(worst.size());
  return hosts;
}

/// The heatmap of a threshold row over GPUs (nodes x GPU index) or links (node x node).
Chart heatmap_of(const RowResult& row, const Report& report) {
  Chart c;
  c.kind = "heatmap";
  const double threshold = row.req.value.get<double>();
  if (!(threshold > 0)) return c;
  bool links = false;
  std::vector<RawCell> raw = raw_cells(row, report, links);
  c.lower_is_better = row.req.op == "<=";
  c.ylabels = heatmap_hosts(raw, report, c.lower_is_better, c.note);
  std::unordered_map<std::string, size_t> y_at;
  for (size_t i = 0; i < c.ylabels.size(); ++i) y_at[c.ylabels[i]] = i;
  std::map<int, size_t> x_at;  // GPU index -> column
  for (const auto& r : raw)
    if (r.gpu >= 0) x_at.emplace(r.gpu, 0);
  size_t col = 0;
  for (auto& [gpu, x] : x_at) x = col++, c.labels.push_back("GPU" + std::to_string(gpu));
  if (links) c.labels = c.ylabels;
  for (const auto& r : raw) {
    if (!y_at.count(r.a) || (links && !y_at.count(r.b))) continue;
    const double percent = r.value / threshold * 100;
    if (!std::isfinite(percent)) continue;
    if (links) {
      c.cells.push_back({y_at[r.b], y_at[r.a], r.value, percent, r.mark});
      c.cells.push_back({y_at[r.a], y_at[r.b], r.value, percent, r.mark});
    } else {
      c.cells.push_back({x_at[r.gpu], y_at[r.a], r.value, percent, r.mark});
    }
    ++c.records;
  }
  c.title = row.req.id + ": " + row.req.title;
  c.xlabel = links ? "node" : "GPU index";
  c.ylabel = "node";
  c.colour_label = "% of the threshold " + threshold_words(row.req);
  return c;
}

}  // namespace

std::vector<Chart> row_heatmaps(const Report& report, std::set<std::string>& done) {
  std::vector<Chart> out;
  for (const auto& row : report.rows) {
    if (!threshold_row(row)) continue;
    Chart c = heatmap_of(row, report);
    if (c.cells.empty()) continue;
    done.insert(row.req.select.benchmark + "|" + row.req.select.metric);
    out.push_back(std::move(c));
  }
  return out;
}

// ---- the families' charts ----

namespace {

bool metric_drawn(const FamilyChart& spec, const Metric& m) {
  return (spec.metric.empty() || glob_match(spec.metric, m.name)) &&
         (spec.unit.empty() || m.unit == spec.unit);
}

/// The family's records that its chart may draw (benchmark glob, scope, a drawn metric, and a
/// numeric `x` for lines).
std::vector<const ResultRecord*> family_records(const SpecFamily& family,
                                                const std::vector<const ResultRecord*>& recs) {
  const FamilyChart& spec = *family.chart;
  std::vector<const ResultRecord*> out;
  for (const auto* r : recs) {
    if (!glob_match(family.benchmark, r->benchmark)) continue;
    if (!spec.scope.empty() && spec.scope != scope_kind_name(r->scope.kind)) continue;
    if (spec.kind == "lines" && !(r->params.contains(spec.x) && r->params[spec.x].is_number()))
      continue;
    if (std::any_of(r->metrics.begin(), r->metrics.end(),
                    [&](const Metric& m) { return metric_drawn(spec, m); }))
      out.push_back(r);
  }
  return out;
}

/// Threshold lines of the rows over (benchmark, metric) whose params agree with `split`.
void add_spec_lines(Chart& c, const Report& report, const std::string& bench,
                    const std::string& metric, const json& split) {
  for (const auto& row : report.rows) {
    const Requirement& r = row.req;
    if (!threshold_row(row) || !judged_any(row) || r.select.benchmark != bench ||
        r.select.metric != metric)
      continue;
    bool agrees = true;
    for (const auto& [k, v] : split.items())
      if (r.select.params.contains(k) && r.select.params[k] != v) agrees = false;
    if (!agrees) continue;
    SpecLine l{"spec " + r.id + " " + threshold_words(r), r.value.get<double>()};
    if (std::none_of(c.spec_lines.begin(), c.spec_lines.end(),
                     [&](const SpecLine& x) { return x.label == l.label; }))
      c.spec_lines.push_back(l);
  }
}

/// One line chart of a family: the records of one `split` value.
Chart lines_chart(const SpecFamily& family, const std::vector<const ResultRecord*>& recs,
                  const Report& report, std::set<std::string>& done) {
  const FamilyChart& spec = *family.chart;
  Chart c;
  c.kind = "lines";
  c.logx = spec.logx, c.logy = spec.logy;
  c.xlabel = spec.xlabel, c.ylabel = spec.ylabel;
  c.mark_x = spec.mark_x, c.mark_label = spec.mark_label;
  std::string split = params_label(recs.front()->params, spec.split);
  // Cluster-wide records (collectives) say over how many nodes: within one node or the network.
  if (std::all_of(recs.begin(), recs.end(),
                  [](const ResultRecord* r) { return r->scope.kind == ScopeKind::cluster; })) {
    const size_t n = report.hosts.size();
    split += (split.empty() ? "" : ", ") + std::to_string(n) + (n == 1 ? " node" : " nodes");
  }
  c.title = spec.title + (split.empty() ? "" : " (" + split + ")");
  std::vector<std::string> exclude = spec.split;
  exclude.push_back(spec.x);
  const std::vector<std::string> varying = varying_keys(recs, exclude);
  std::map<std::string, Series> series;
  json split_params = json::object();
  for (const auto& k : spec.split)
    if (recs.front()->params.contains(k)) split_params[k] = recs.front()->params[k];
  for (const auto* r : recs)
    for (const auto& m : r->metrics) {
      if (!metric_drawn(spec, m)) continue;
      std::string who = spec.series == "item" ? short_item(r->scope)
                                              : r->benchmark.substr(r->benchmark.find('.') + 1);
      std::string label = params_label(r->params, varying);
      std::string name = who + (label.empty() ? "" : " " + label);
      if (spec.max_series > 0 && !series.count(name) &&
          series.size() >= static_cast<size_t>(spec.max_series))
        continue;
      series[name].name = name;
      series[name].points.push_back({r->params[spec.x].get<double>(), m.value});
      series[name].ranges.push_back(rep_range(m));
      ++c.records;
      if (done.insert(r->benchmark + "|" + m.name).second)
        add_spec_lines(c, report, r->benchmark, m.name, split_params);
    }
  for (auto& [n, s] : series) {
    sort_points(s);
    c.series.push_back(std::move(s));
  }
  std::sort(c.series.begin(), c.series.end(),
            [](const Series& a, const Series& b) { return natural_less(a.name, b.name); });
  return c;
}

/// A group's label: the value of `x`, or of every varying param ("*").
std::string group_label(const ResultRecord& r, const FamilyChart& spec,
                        const std::vector<std::string>& keys) {
  if (spec.x != "*") return r.params.contains(spec.x) ? value_text(r.params[spec.x]) : "-";
  std::string out;
  for (const auto& k : keys)
    if (r.params.contains(k)) out += (out.empty() ? "" : " ") + value_text(r.params[k]);
  return out.empty() ? "-" : out;
}

/// Each group's own thresholds: rows over the family's benchmarks and the drawn metric that
/// select the group's params.
void add_group_lines(Chart& c, const SpecFamily& family, const Report& report,
                     const std::vector<const ResultRecord*>& first_of_group,
                     std::set<std::string>& done) {
  for (const auto& row : report.rows) {
    const Requirement& r = row.req;
    if (!threshold_row(row) || !judged_any(row) ||
        !glob_match(family.benchmark, r.select.benchmark))
      continue;
    if (!family.chart->metric.empty() && !glob_match(family.chart->metric, r.select.metric))
      continue;
    for (size_t g = 0; g < first_of_group.size(); ++g) {
      const ResultRecord& rec = *first_of_group[g];
      if (rec.benchmark != r.select.benchmark || !selects(r.select.params, rec.params)) continue;
      c.group_lines.push_back(
          {g, r.value.get<double>(), "spec " + r.id + " " + threshold_words(r)});
      done.insert(r.select.benchmark + "|" + r.select.metric);
    }
  }
}

/// Per group, the metric of the first row that judges it (a threshold row over the family's
/// benchmark selecting the group's params, its metric matching the chart's), or "".
std::vector<std::string> group_metrics(const SpecFamily& family, const Report& report,
                                       const std::vector<const ResultRecord*>& first_of_group) {
  std::vector<std::string> out(first_of_group.size());
  for (const auto& row : report.rows) {
    const Requirement& r = row.req;
    if (!threshold_row(row) || !judged_any(row)) continue;
    if (!family.chart->metric.empty() && !glob_match(family.chart->metric, r.select.metric))
      continue;
    for (size_t g = 0; g < first_of_group.size(); ++g)
      if (out[g].empty() && first_of_group[g]->benchmark == r.select.benchmark &&
          selects(r.select.params, first_of_group[g]->params))
        out[g] = r.select.metric;
  }
  return out;
}

/// A family's bar-group chart: a group per value of `x`, a bar per node (a point per node
/// beyond kMaxGroupBars nodes), each group with its own thresholds.
Chart groups_chart(const SpecFamily& family, const std::vector<const ResultRecord*>& recs,
                   const Report& report, std::set<std::string>& done) {
  const FamilyChart& spec = *family.chart;
  Chart c;
  c.title = spec.title, c.xlabel = spec.xlabel, c.ylabel = spec.ylabel;
  const std::vector<std::string> keys =
      spec.x == "*" ? varying_keys(recs, {}) : std::vector<std::string>{};
  std::unordered_map<std::string, size_t> group_at;
  std::vector<const ResultRecord*> first_of_group;
  for (const auto* r : recs) {
    auto [it, fresh] = group_at.try_emplace(group_label(*r, spec, keys), c.labels.size());
    if (fresh) c.labels.push_back(it->first), first_of_group.push_back(r);
  }
  // A group a row judges shows the row's metric alone (a read_bw row over read_bw, not read +
  // write); the others the sum of the matching metrics in the chart's unit (the first seen).
  const std::vector<std::string> judged_metric = group_metrics(family, report, first_of_group);
  std::string unit;
  std::map<std::string, Series> by_item;
  for (const auto* r : recs) {
    const size_t g = group_at[group_label(*r, spec, keys)];
    double value = 0;
    int taken = 0;
    std::pair<double, double> range;
    for (const auto& m : r->metrics) {
      const bool take = judged_metric[g].empty()
                            ? metric_drawn(spec, m) && (unit.empty() || m.unit == unit)
                            : m.name == judged_metric[g];
      if (!take) continue;
      if (unit.empty()) unit = m.unit;
      value += m.value, range = rep_range(m), ++taken;
      done.insert(r->benchmark + "|" + m.name);
    }
    if (!taken) continue;
    Series& s = by_item[short_item(r->scope)];
    s.name = short_item(r->scope);
    s.points.push_back({static_cast<double>(g), value});
    // A sum of metrics (read + write) has no one range: its bar has none.
    s.ranges.push_back(taken == 1 ? range : std::make_pair(value, value));
    ++c.records;
  }
  for (auto& [n, s] : by_item) c.series.push_back(std::move(s));
  std::sort(c.series.begin(), c.series.end(),
            [](const Series& a, const Series& b) { return natural_less(a.name, b.name); });
  c.kind = c.series.size() <= kMaxGroupBars ? "groups" : "group-points";
  if (c.kind == "group-points") {
    Series all{"each node", {}, {}};
    for (const auto& s : c.series)
      all.points.insert(all.points.end(), s.points.begin(), s.points.end());
    c.series = {std::move(all)};
  }
  add_group_lines(c, family, report, first_of_group, done);
  return c;
}

}  // namespace

std::vector<Chart> family_charts(const Report& report, const std::vector<const ResultRecord*>& recs,
                                 std::set<std::string>& done) {
  std::vector<Chart> out;
  for (const auto& family : report.spec->families) {
    if (!family.chart) continue;
    std::vector<const ResultRecord*> mine = family_records(family, recs);
    if (mine.empty()) continue;
    if (family.chart->kind == "groups") {
      out.push_back(groups_chart(family, mine, report, done));
      continue;
    }
    std::map<std::string, std::vector<const ResultRecord*>> by_split;
    std::vector<std::string> order;
    for (const auto* r : mine) {
      auto& v = by_split[params_label(r->params, family.chart->split)];
      if (v.empty()) order.push_back(params_label(r->params, family.chart->split));
      v.push_back(r);
    }
    for (const auto& key : order) out.push_back(lines_chart(family, by_split[key], report, done));
  }
  return out;
}

// ---- bar charts of the other judged rows ----

namespace {

/// Latencies in a unit that suits their size: us below 1000 us, ms below 1e6 us, else s.
double latency_scale(const std::string& unit, double max, std::string& shown) {
  shown = unit;
  if (unit != "us") return 1;
  if (max >= 1e6) return shown = "s", 1e-6;
  if (max >= 1e3) return shown = "ms", 1e-3;
  return 1;
}

Chart row_bars(const RowResult& row) {
  const Requirement& r = row.req;
  Chart c;
  c.title = r.id + ": " + r.title;
  Series s{r.select.metric, {}, {}};
  double lo = INFINITY, hi = 0;
  for (const auto& it : row.items) {
    if (!judged(it) || !std::isfinite(it.value.get<double>())) continue;
    const double v = it.value.get<double>();
    s.points.push_back({static_cast<double>(c.labels.size()), v});
    // The item's repetitions, where the row saw them (ItemResult::noise's range).
    const bool ranged = it.noise.is_object() && it.noise.contains("range");
    s.ranges.push_back(ranged ? std::make_pair(it.noise["range"][0].get<double>(),
                                               it.noise["range"][1].get<double>())
                              : std::make_pair(v, v));
    c.labels.push_back(it.item);
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  std::string unit;
  const double k = latency_scale(r.unit, std::max(hi, r.value.get<double>()), unit);
  for (auto& p : s.points) p.second *= k;
  for (auto& r : s.ranges) r.first *= k, r.second *= k;
  c.records = static_cast<int>(s.points.size());
  c.series.push_back(std::move(s));
  const double t = k * r.value.get<double>();
  c.spec_lines.push_back({"spec " + r.id + " " + r.op + " " + format_number(t) + " " + unit, t});
  c.kind = c.labels.size() > kMaxBars ? "points" : "bars";
  c.xlabel = r.scope;
  c.ylabel = r.select.metric + " (" + unit + ")";
  c.logy = lo > 0 && hi / lo > 100;
  return c;
}

}  // namespace

std::vector<Chart> row_bar_charts(const Report& report, const std::set<std::string>& done) {
  std::vector<Chart> out;
  FamilyCache family(report.spec->families);
  for (const auto& row : report.rows) {
    if (!threshold_row(row) || done.count(row.req.select.benchmark + "|" + row.req.select.metric))
      continue;
    if (family(row.req.select.benchmark).soak) continue;  // drawn over time (burnin_charts)
    Chart c = row_bars(row);
    if (c.records) out.push_back(std::move(c));
  }
  return out;
}

bool worth_drawing(const Chart& c) {
  size_t marks = c.cells.size();
  bool nonzero =
      std::any_of(c.cells.begin(), c.cells.end(), [](const Cell& x) { return x.value != 0; });
  for (const auto& s : c.series) {
    marks += s.points.size();
    nonzero = nonzero || std::any_of(s.points.begin(), s.points.end(),
                                     [](const auto& p) { return p.second != 0; });
  }
  return marks >= 2 && nonzero;
}

int chart_height(const Chart& c) {
  if (c.kind != "heatmap") return 420;
  return static_cast<int>(std::clamp<size_t>(110 + 26 * c.ylabels.size(), 300, 1500));
}

}  // namespace clusterbench::report
