// Node x node link matrices (reports/links.hpp).
#include "reports/links.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace clusterbench::report {

namespace {

size_t host_index(LinkMatrix& m, const std::string& host) {
  auto it = std::find(m.hosts.begin(), m.hosts.end(), host);
  if (it != m.hosts.end()) return static_cast<size_t>(it - m.hosts.begin());
  m.hosts.push_back(host);
  for (auto& row : m.values) row.push_back(std::numeric_limits<double>::quiet_NaN());
  m.values.emplace_back(m.hosts.size(), std::numeric_limits<double>::quiet_NaN());
  return m.hosts.size() - 1;
}

}  // namespace

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
        out.push_back(std::move(m));
        it = out.end() - 1;
      }
      size_t a = host_index(*it, r.scope.hosts[0]);
      size_t b = host_index(*it, r.scope.hosts[1]);
      it->values[a][b] = it->values[b][a] = metric.value;
    }
  }
  return out;
}

std::string render_link_matrices_markdown(const std::vector<ResultRecord>& records) {
  return render_link_matrices_markdown(link_matrices(records));
}

std::string render_link_matrices_markdown(const std::vector<LinkMatrix>& matrices) {
  if (matrices.empty()) return "";
  std::ostringstream md;
  md << "## Links\n\nNode x node matrices of link records (row host to column host).\n";
  for (const auto& m : matrices) {
    md << "\n### " << m.benchmark << " " << m.params.dump() << ": " << m.metric << " (" << m.unit
       << ")\n\n|  |";
    for (const auto& h : m.hosts) md << " " << h << " |";
    md << "\n|---|";
    for (size_t i = 0; i < m.hosts.size(); ++i) md << "---|";
    md << "\n";
    for (size_t i = 0; i < m.hosts.size(); ++i) {
      md << "| " << m.hosts[i] << " |";
      for (size_t j = 0; j < m.hosts.size(); ++j) {
        double v = m.values[i][j];
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3g", v);
        md << " " << (i == j || std::isnan(v) ? std::string("-") : std::string(buf)) << " |";
      }
      md << "\n";
    }
  }
  return md.str();
}

}  // namespace clusterbench::report
