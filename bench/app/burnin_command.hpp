// `clusterbench burnin --minutes N` (docs/burnin.md): every rank soaks its GPU with sustained GEMM
// (its CPU, through OpenBLAS, on a node without GPUs) while a concurrent all_reduce loop loads
// NVLink and the network (NCCL; MPI on host buffers where any rank has no running GPU). The
// telemetry sampler runs throughout; the product and the all_reduce values are checked every
// interval. Writes a run directory as `run` does (run.json, records.jsonl with one
// `burnin.soak` record per GPU or rank holding its time series, then the report); every verdict
// is made by reports/ (reports/burnin.hpp and the spec table's rows).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace clusterbench {

/// An integer option not given on the command line (its default applies). Every value a user can
/// give is checked against the option's range instead: 0 is not a default.
inline constexpr long long kBurninUnset = std::numeric_limits<long long>::min();

/// Options of `clusterbench burnin`.
struct BurninOptions {
  double minutes = 10;    ///< soak length; fractions allowed (0.2 = 12 s)
  std::string spec_path;  ///< empty: reports/specs/burnin-gpu.json or burnin-cpu.json
  std::string out_dir;    ///< the run directory; empty: results/<run-id>
  std::string results_root = "results";
  std::string fs_root = "/";
  std::string dtype;  ///< empty: bf16 on GPUs, fp32 on the CPU
  /// Cube size M = N = K in [1, 65536]; kBurninUnset: 8192 on GPUs, 256 on the CPU.
  long long shape = kBurninUnset;
  /// All_reduce bytes in [4, 4G], a multiple of 4 (fp32); kBurninUnset: 256 MiB on GPUs (NCCL),
  /// 1 MiB on host buffers (MPI).
  long long allreduce_bytes = kBurninUnset;
  std::vector<std::string> argv;
};

/// Intervals of a soak of `seconds`: max(6, ceil(seconds / 60)), so an interval is at most a
/// minute and there are at least six whatever the duration.
inline int burnin_intervals(double seconds) {
  return std::max(6, static_cast<int>(std::ceil(seconds / 60.0 - 1e-9)));
}

/// The longest one product may take in a soak of intervals of `interval_s`: a tenth of an interval
/// (so that it fits many times in one), and at most a second (so that SIGINT/SIGTERM stops the
/// soak within about a second: a product cannot be interrupted).
inline double burnin_max_product_seconds(double interval_s) {
  return std::min(1.0, interval_s / 10.0);
}

/// Runs the burn-in on every rank and returns the exit code (DESIGN.md "Exit codes"), the same on
/// every rank: the report's, or 3 when SIGINT/SIGTERM stopped it early (what was measured is
/// written). Throws InputError (exit 2) for bad options before anything runs.
int burnin_command(const BurninOptions& opt);

}  // namespace clusterbench
