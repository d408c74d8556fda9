// The report's "Links" section (links_render.hpp).
#include "reports/links_render.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace clusterbench::report {

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
