// The host's own speed just before each case: a few milliseconds of fixed work whose
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

/// Core-to-core round trip, ns: this thread (pinned for the probe to the CPU it is on) and a helper
/// pinned to another online CPU pass one cache line back and forth; the median over batches of
/// 64 round trips in about `budget_s` seconds. What MPI's shared-memory transport between two
/// ranks of a node is made of: on a virtual machine it moves when the hypervisor moves the vCPUs
/// (measured here: 90 or 420 ns, switching every few seconds; docs/compare.md "Host drift").
/// The thread's affinity is restored. -1 when not measured: one online CPU, or the helper did
/// not answer within 5 ms (its CPU busy with other work).
double core_to_core_ns(double budget_s = 0.001);

/// The wall clock and this process's CPU time (all its threads), seconds.
struct CpuUse {
  double wall_s = 0, cpu_s = 0;
};
CpuUse cpu_use_now();

/// CPU seconds per wall second between two readings (cores' worth of CPU the process used): about
/// 1 for one busy (spinning, computing) thread alone on its core, 2 for two, less when other work
/// took a share of the cores (another job, another VM's steal). A short probe cannot see a share:
/// it fits in one time slice and runs at full speed; this does. 0 when no wall time passed.
double cpu_share(const CpuUse& from, const CpuUse& to);

}  // namespace clusterbench
