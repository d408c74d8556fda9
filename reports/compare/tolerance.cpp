// Tolerances (tolerance.hpp).
#include "reports/compare/tolerance.hpp"

#include <optional>

#include "records/result.hpp"

namespace clusterbench::report {

ToleranceRule parse_tolerance(const std::string& text) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--tolerance '" + text + "': expected KEY=PCT, e.g. 'GB/s=5%'");
  std::string num = text.substr(eq + 1);
  if (num.back() == '%') num.pop_back();
  size_t used = 0;
  double v = 0;
  // Decimal digits only: stod alone takes "" (as 0), " 5" and "0x10" (as 16).
  const bool decimal =
      !num.empty() && num.find_first_not_of("0123456789.eE+-") == std::string::npos;
  try {
    v = decimal ? std::stod(num, &used) + 0.0 : 0;  // + 0.0: -0 is 0
  } catch (const std::exception&) {
    used = 0;
  }
  if (!decimal || used != num.size() || !(v >= 0) || v > 1000)
    throw InputError("--tolerance '" + text + "': '" + text.substr(eq + 1) +
                     "' is not a percentage (0..1000)");
  const std::string key = text.substr(0, eq);
  if (key.find('=') != std::string::npos)
    throw InputError("--tolerance '" + text + "': expected one '=' (KEY=PCT)");
  const auto colon = key.find(':');
  if (colon != std::string::npos &&
      (colon == 0 || colon + 1 == key.size() || key.find(':', colon + 1) != std::string::npos))
    throw InputError("--tolerance '" + text + "': '" + key +
                     "' must be BENCHMARK-GLOB:METRIC, both parts named");
  return {key, v / 100};
}

double default_tolerance(const std::string& unit) {
  if (unit == "TFLOP/s") return 0.02;
  if (unit == "GB/s" || unit == "Gb/s") return 0.03;
  return 0.05;
}

bool rule_names(const ToleranceRule& rule, const std::string& benchmark, const std::string& metric,
                const std::string& unit) {
  if (is_known_unit(rule.key)) return rule.key == unit;
  const auto colon = rule.key.find(':');
  if (colon != std::string::npos && !glob_match(rule.key.substr(colon + 1), metric)) return false;
  return glob_match(rule.key.substr(0, colon), benchmark);
}

double tolerance_for(const std::vector<ToleranceRule>& rules, const std::string& benchmark,
                     const std::string& metric, const std::string& unit,
                     const std::vector<SpecFamily>& families) {
  const ToleranceRule* by_bench = nullptr;
  const ToleranceRule* by_unit = nullptr;
  for (const auto& r : rules)
    if (rule_names(r, benchmark, metric, unit)) (is_known_unit(r.key) ? by_unit : by_bench) = &r;
  if (by_bench) return by_bench->fraction;
  if (by_unit) return by_unit->fraction;
  std::optional<double> from_spec;
  for (const auto& f : families) {
    if (f.compare.empty() || !glob_match(f.benchmark, benchmark)) continue;
    for (const auto& t : f.compare)
      if (glob_match(t.metric, metric)) from_spec = t.tolerance;
  }
  return from_spec ? *from_spec : default_tolerance(unit);
}

}  // namespace clusterbench::report
