// Node x node link matrices (reports/links.hpp).
#include "reports/links.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "records/statistics.hpp"

namespace clusterbench::report {

namespace {

size_t host_index(LinkMatrix& m, const std::string& host) {
  auto it = std::find(m.hosts.begin(), m.hosts.end(), host);
  if (it != m.hosts.end()) return static_cast<size_t>(it - m.hosts.begin());
  m.hosts.push_back(host);
  for (auto& row : m.values) row.push_back(std::numeric_limits<double>::quiet_NaN());
  m.values.emplace_back(m.hosts.size(), std::numeric_limits<double>::quiet_NaN());
  for (auto& row : m.best) row.push_back(std::numeric_limits<double>::quiet_NaN());
  m.best.emplace_back(m.hosts.size(), std::numeric_limits<double>::quiet_NaN());
  return m.hosts.size() - 1;
}

/// A link's value in its best repetition (LinkMatrix::best): NaN without time statistics of 2+
/// repetitions, since its noise is then unknown.
double best_value(const Metric& m, const TimeStats& t) {
  if (t.n < 2 || t.min <= 0 || t.median < t.min) return std::nan("");
  const double scale = t.median / t.min;
  return m.higher_is_better ? m.value * scale : m.value / scale;
}

/// The median of `v`, the better middle value of an even count.
double better_median(std::vector<double> v, bool higher_is_better) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n % 2 == 1) return v[n / 2];
  return higher_is_better ? v[n / 2] : v[n / 2 - 1];
}

}  // namespace

double typical_link(const std::vector<LinkValue>& links, bool higher_is_better) {
  std::map<std::string, std::vector<double>> per_host;
  for (const auto& l : links) {
    per_host[l.a].push_back(l.value);
    per_host[l.b].push_back(l.value);
  }
  if (per_host.size() < 3) return std::nan("");
  if (per_host.size() == 3) {  // each host has 2 links, 1 of them the slow one: the links' median
    std::vector<double> all;
    for (const auto& l : links) all.push_back(l.value);
    return better_median(all, higher_is_better);
  }
  std::vector<double> medians;
  for (const auto& [_, v] : per_host) medians.push_back(better_median(v, higher_is_better));
  return better_median(medians, higher_is_better);
}

std::vector<LinkMatrix> link_matrices(const std::vector<ResultRecord>& records) {
  std::vector<LinkMatrix> out;
  for (const auto& r : records) {
    if (r.status != Status::ok || r.scope.kind != ScopeKind::link || r.scope.hosts.size() != 2)
      continue;
    for (const auto& metric : r.metrics) {
      auto it = std::find_if(out.begin(), out.end(), [&](const LinkMatrix& m) {
        return m.benchmark == r.benchmark && m.metric == metric.name && m.params == r.params;
      });
      if (it == out.end()) {
        LinkMatrix m;
        m.benchmark = r.benchmark, m.metric = metric.name, m.unit = metric.unit;
        m.params = r.params;
        m.higher_is_better = metric.higher_is_better;
        m.headline = &metric == &r.metrics.front();
        out.push_back(std::move(m));
        it = out.end() - 1;
      }
      size_t a = host_index(*it, r.scope.hosts[0]);
      size_t b = host_index(*it, r.scope.hosts[1]);
      it->values[a][b] = it->values[b][a] = metric.value;
      it->best[a][b] = it->best[b][a] = best_value(metric, r.time);
      if (!metric.reps.empty()) it->reps[{std::min(a, b), std::max(a, b)}] = metric.reps;
    }
  }
  return out;
}

}  // namespace clusterbench::report
