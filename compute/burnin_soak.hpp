// burnin.soak, the case of `clusterbench burnin --minutes N` (docs/burnin.md): every rank soaks
// its GPU with sustained GEMM (its CPU, through OpenBLAS, on a node without GPUs) while a
// concurrent all_reduce loop loads NVLink and the network (NCCL; MPI on host buffers where any
// rank has no running GPU). NVML telemetry is sampled throughout; the product and the all_reduce
// values are checked every interval, and each interval's snapshot of every rank's series is
// appended to records.jsonl as it ends. A composite benchmark: it drives the GEMM engines of
// compute/burnin.hpp and a collective backend of collectives/. Measures only: the verdicts are
// reports/' (the spec rows of reports/specs/burnin-*.json).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "records/records.hpp"

namespace clusterbench::compute {

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

/// The measured summary of a soak's series (the record's metrics), in this order: rate_median,
/// rate_first_minute, rate_last_minute, rate_worst_interval (TFLOP/s), verification_errors
/// (intervals with a wrong product, wrong or failed all_reduce), allreduce_busbw_median (GB/s,
/// where measured), temperature_max (C, with `telemetry`), intervals. The first and last minute
/// are the intervals whose planned span lies within them; a soak shorter than two minutes takes
/// its first and last interval. Empty for an empty series.
std::vector<Metric> soak_series_metrics(const json& series, double interval_s, bool telemetry);

}  // namespace clusterbench::compute
