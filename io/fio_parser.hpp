// fio's JSON output (--output-format=json) into plain numbers: docs/fio.md, docs/metrics.md "fio".
// Accepts fio 2.x (latencies in `clat`, us; bandwidth `bw` in KiB/s) and 3.x (`clat_ns`, ns;
// `bw_bytes` in B/s from 3.2 on, `bw` in KiB/s before). Parsing starts at the first `{`: fio
// prints warnings and error lines before the JSON on the same stream.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::io {

/// One direction (read or write) of one fio job.
struct FioDirection {
  double io_bytes = 0;        ///< bytes moved (fio 2.x counts KiB in io_bytes; converted)
  double bw_bytes_per_s = 0;  ///< B/s: `bw_bytes`, else `bw` (KiB/s) x 1024
  std::string bw_source;      ///< "bw_bytes" or "bw*1024"
  double iops = 0;
  double clat_mean_us = 0;
  /// Completion latency percentiles in us; absent when fio ran without clat_percentiles.
  std::optional<double> clat_p50_us, clat_p99_us, clat_p999_us;
  /// True when the job did I/O in this direction (total_ios > 0, or io_bytes > 0).
  bool active() const { return io_bytes > 0 || iops > 0; }
};

/// One entry of fio's "jobs" array (one per group with group_reporting).
struct FioJob {
  std::string name;
  int error = 0;  ///< errno fio reports for the job; 0 = no error
  FioDirection read, write;
  json options = json::object();  ///< the job's "job options" (empty when absent)
};

/// A whole fio JSON document.
struct FioOutput {
  std::string version;                   ///< "fio-3.33"
  json global_options = json::object();  ///< "global options" (empty when absent)
  std::vector<FioJob> jobs;
  std::string preamble;  ///< text before the first `{` (fio's warnings and error lines)
  json document;         ///< the whole JSON document as fio wrote it
};

/// Thrown when the text holds no fio JSON document, or one without the fields every fio writes
/// ("jobs", each job's "jobname"/"error"/"read"/"write").
class FioParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses fio's JSON output from its first `{` to the matching end. Bytes that are not UTF-8
/// become U+FFFD first (records/utf8.hpp), so every string of the result is valid UTF-8. Optional
/// sections
/// (`disk_util`, `global options`, `job options`, `percentile`) may be absent. Throws
/// FioParseError with what is missing.
FioOutput parse_fio_json(const std::string& raw);

/// IOs a job file keeps in flight, from its options as fio reports them ({"global": {...},
/// "jobs": [{...}]}, string values): the sum over its jobs of numjobs x iodepth, each option from
/// the job or else the global section, fio's defaults 1 (psync); iodepth counts only for an
/// asynchronous ioengine (libaio, io_uring, posixaio). 0 when `options` has no jobs array.
double fio_in_flight(const json& options);

/// The lines of fio's own error text for a failed job: lines of `preamble` and `stderr_text` that
/// start with "fio:" or contain "err=", joined by "; " (at most `max_lines`). Empty if none.
std::string fio_error_text(const std::string& preamble, const std::string& stderr_text,
                           int max_lines = 3);

}  // namespace clusterbench::io
