// Prometheus textfile: the headline metrics of a run per GPU and per node in the text exposition
// format (version 0.0.4), for node_exporter's textfile collector (docs/report.md "Prometheus").
// Where a DCGM exporter field means the same thing (dcgm-exporter etc/default-counters.csv) the
// series carries its name: DCGM_FI_DEV_SM_CLOCK (MHz), DCGM_FI_DEV_GPU_TEMP (C),
// DCGM_FI_DEV_POWER_USAGE (W). Every other name is clusterbench_* with its unit in the name.
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"
#include "reports/evaluate.hpp"
#include "reports/fleet.hpp"

namespace clusterbench::report {

/// One headline metric: records of `benchmark` carrying metric `metric` become samples of the
/// gauge `name`, with value = metric value * `scale` (GB/s -> bytes per second: 1e9; us ->
/// seconds: 1e-6; TFLOP/s, MHz, C, W, IOPS and samples/s as they are).
struct PrometheusHeadline {
  std::string benchmark, metric, name, help;
  double scale = 1;
  std::string unit;  ///< the record unit this row expects; records in another unit are skipped
};

/// The table of headline metrics, in output order (docs/report.md "Prometheus" lists it).
const std::vector<PrometheusHeadline>& prometheus_headlines();

/// The exposition text. Per GPU and per node: one sample per `ok` record of scope gpu or node
/// whose benchmark and metric are in prometheus_headlines() (the last record of a case wins),
/// labelled host, and for a GPU gpu (index), uuid and pci_bus_id (from the record's scope, else
/// the host's EnvRecord), plus one label per case param (the param key, made a valid label name;
/// "param_" before a key that would collide with host, gpu, uuid, pci_bus_id or benchmark) and,
/// on DCGM-named series, benchmark. Per node also clusterbench_node_failing (0/1, the fleet
/// view's verdict), clusterbench_node_outliers, clusterbench_node_spec_items{outcome} and
/// clusterbench_node_records{status}; per run clusterbench_run_info{run_id,suite,spec,verdict} 1,
/// clusterbench_run_exit_code and clusterbench_run_finished_timestamp_seconds (when finished).
/// Each family has one # HELP and one # TYPE gauge line before its samples; label values escape
/// backslash, double quote and newline; values are shortest round-trip decimals. No timestamps
/// (the textfile collector rejects them).
std::string render_prometheus(const Report& report, const RunDir& run, const FleetView& fleet);

/// Writes `text` to `path` for the textfile collector: a temporary file beside it (path + ".tmp."
/// + pid, a name the collector's *.prom glob skips), fsync, then rename, so that a scrape never
/// reads half a file. Throws std::runtime_error naming the path on a write error.
void write_prometheus(const std::string& path, const std::string& text);

}  // namespace clusterbench::report
