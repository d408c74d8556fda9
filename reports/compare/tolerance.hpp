// Tolerances of compare (docs/compare.md "Tolerances"): how far a metric may move before a change
// can count, from --tolerance rules, the spec table's families, or the unit's default.
#pragma once

#include <string>
#include <vector>

#include "records/spec.hpp"

namespace clusterbench::report {

/// One tolerance rule: KEY=PCT. KEY is a unit ("GB/s", "TFLOP/s"), or a glob on the benchmark
/// id ("compute.gemm", "collectives.*"), optionally with ":metric" ("io.fio*:iops").
struct ToleranceRule {
  std::string key;
  double fraction = 0;  ///< 0.05 for "5%"
};

/// Parses "KEY=PCT" with PCT like "5%", "5" (percent) or "0.5%". Throws InputError on bad text.
ToleranceRule parse_tolerance(const std::string& text);

/// Whether `rule` names (benchmark, metric, unit): its key is the unit, or a glob on the
/// benchmark (with ":" a glob on the metric too).
bool rule_names(const ToleranceRule& rule, const std::string& benchmark, const std::string& metric,
                const std::string& unit);

/// The default tolerance of a metric family (fraction), by unit: TFLOP/s 0.02; GB/s and Gb/s
/// 0.03; us, s, IOPS, samples/s 0.05; anything else 0.05 (docs/compare.md "Tolerances").
double default_tolerance(const std::string& unit);

/// The tolerance for (benchmark, metric, unit): the last matching benchmark rule, else the last
/// matching unit rule (both --tolerance), else the spec table's: the last `compare` entry whose
/// metric glob matches, in the families whose benchmark glob matches, in order; else
/// default_tolerance(unit).
double tolerance_for(const std::vector<ToleranceRule>& rules, const std::string& benchmark,
                     const std::string& metric, const std::string& unit,
                     const std::vector<SpecFamily>& families = {});

}  // namespace clusterbench::report
