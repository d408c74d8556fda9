// Kept for callers outside reports/ that include this header (tests of the benchmark folders):
// the verdict is reports/report.hpp's make_report.
#pragma once

#include "reports/report.hpp"

namespace clusterbench::report {

/// make_report(run, spec), under its earlier name.
Report evaluate(const RunDir& run, const Spec& spec);

}  // namespace clusterbench::report
