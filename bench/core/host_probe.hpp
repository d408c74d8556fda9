// The host's own speed just before each case (issue 19): a few milliseconds of fixed work whose
// rate moves only when the host does (another job or VM on its cores or memory, a lower clock).
// `compare` sets the probes of two runs side by side per host: where they differ beyond the noise,
// the host-side changes between the runs are not called regressions (docs/compare.md "Host
// drift"). Nothing here is judged by a spec row.
#pragma once

#include "records/records.hpp"

namespace clusterbench {

/// One probe: `cpu_mops`, a dependent 64-bit multiply-add chain of 2^20 steps (core clock and
/// share of the core; millions of steps per second), and `mem_gbps`, one read of a 32 MiB buffer
/// (memory bandwidth of one core; GB/s = 1e9 B/s). About 3 ms on a current core.
json host_probe();

}  // namespace clusterbench
