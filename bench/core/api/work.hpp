// Work declared per operation, and the units it becomes (docs/metrics.md "Units"): a benchmark
// says what one operation moves or computes (bytes, FLOP, samples), the framework turns the times
// it measured into the rate (nvbench's add_global_memory_reads / add_element_count). The scale of
// each unit is written here once: GB/s is 1e9 bytes a second, TFLOP/s 1e12 FLOP a second.
// Part of the public face of bench/core.
#pragma once

#include <string>
#include <vector>

#include "records/result.hpp"

namespace clusterbench {

/// Bytes in a GB (data bandwidth, GB/s), FLOP in a TFLOP, bytes in a TB (disk capacity).
inline constexpr double kBytesPerGB = 1e9;
inline constexpr double kFlopPerTflop = 1e12;
inline constexpr double kBytesPerTB = 1e12;
/// Microseconds in a second (latencies in "us").
inline constexpr double kUsPerS = 1e6;

/// `bytes_per_s` in GB/s.
inline double gb_per_s(double bytes_per_s) { return bytes_per_s / kBytesPerGB; }
/// `bytes` in TB.
inline double terabytes(double bytes) { return bytes / kBytesPerTB; }
/// `seconds` in us.
inline double microseconds(double seconds) { return seconds * kUsPerS; }

/// What one operation does, in the unit of its rate times seconds: a rate is per_op / seconds per
/// operation. Made by bytes(), flop() or items(), never by hand.
struct Work {
  double per_op = 0;  ///< the rate's unit x seconds (GB for GB/s, TFLOP for TFLOP/s)
  std::string unit;   ///< "GB/s", "TFLOP/s", "samples/s", ...

  /// `n` bytes moved per operation: a rate in GB/s.
  static Work bytes(double n) { return {n / kBytesPerGB, "GB/s"}; }
  /// `n` floating-point operations per operation: a rate in TFLOP/s.
  static Work flop(double n) { return {n / kFlopPerTflop, "TFLOP/s"}; }
  /// `n` items per operation, counted in `unit` ("samples/s").
  static Work items(double n, const std::string& unit) { return {n, unit}; }

  /// The rate at `seconds` per operation; 0 for seconds <= 0.
  double rate(double seconds) const { return seconds > 0 ? per_op / seconds : 0; }
};

/// A rate metric over per-operation times: the rate at `median_s`, one repetition per sample of
/// `samples` (seconds per operation), Metric::work set (compare reads the time per operation
/// behind it). For a case that times several forms, each with its own samples.
Metric rate_metric(const std::string& name, const Work& work, double median_s,
                   const std::vector<double>& samples);

/// A latency metric in us, lower is better: `median_s` and one repetition per sample (seconds).
Metric time_metric(const std::string& name, double median_s, const std::vector<double>& samples);

}  // namespace clusterbench
