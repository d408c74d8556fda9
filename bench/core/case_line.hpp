// The console's line per finished case (docs/architecture.md "Console"): what was measured, with
// its headline number, printed by rank 0 as each case's records are written.
#pragma once

#include <string>

#include "records/records.hpp"

namespace clusterbench {

/// A number for the console: 4 significant digits, integers from 1000 up ("60.82", "40826").
std::string console_number(double v);

/// One record in a line: "compute.memory_bandwidth {"kernel":"copy"} vm: bandwidth 60.82 GB/s
/// (5 reps, spread 3.1%)" for an ok record (its first metric, the headline), "...: FAILED: why"
/// and "...: waived: why" for the others.
std::string case_line(const ResultRecord& r);

/// "[5/19, 12 s, about 30 s left]": the case's place in the plan, the time since the run
/// started, and the sum of the estimates of the cases still to run (seconds).
std::string progress_prefix(size_t done, size_t total, double elapsed_s, double left_s);

}  // namespace clusterbench
