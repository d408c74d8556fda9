// The console's line per finished case (case_line.hpp).
#include "core/case_line.hpp"

#include <cmath>
#include <cstdio>

namespace clusterbench {

std::string console_number(double v) {
  char buf[64];
  if (std::isfinite(v) && (v == std::floor(v) || std::fabs(v) >= 1000) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string case_line(const ResultRecord& r) {
  std::string line = r.benchmark + " " + r.params.dump() + " " + scope_item(r.scope) + ": ";
  if (r.status == Status::failed) return line + "FAILED: " + r.message;
  if (r.status == Status::waived) return line + "waived: " + r.message;
  if (r.metrics.empty()) return line + (r.message.empty() ? "ok" : r.message);
  const Metric& m = r.metrics.front();
  line += m.name + " " + console_number(m.value);
  if (!m.unit.empty() && m.unit != "count" && m.unit != "ratio") line += " " + m.unit;
  if (m.reps.size() >= 2) {
    char spread[32];
    std::snprintf(spread, sizeof spread, "%.1f%%", 100 * relative_spread(m.reps));
    line += " (" + std::to_string(m.reps.size()) + " reps, spread " + spread + ")";
  }
  return line;
}

std::string progress_prefix(size_t done, size_t total, double elapsed_s, double left_s) {
  return "[" + std::to_string(done) + "/" + std::to_string(total) + ", " +
         console_number(std::round(elapsed_s)) + " s, about " +
         console_number(std::round(std::max(0.0, left_s))) + " s left]";
}

}  // namespace clusterbench
