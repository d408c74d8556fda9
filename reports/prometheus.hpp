// Prometheus textfile: the headline metrics of a run per GPU and per node in the text exposition
// format (version 0.0.4), for node_exporter's textfile collector (docs/report.md "Prometheus").
// Which record metrics are headlines, and under which gauge name, is the spec table's: each
// family's "prometheus" gauges (reports/specs/base.json names DCGM exporter fields where they
// mean the same thing, clusterbench_* with the unit in the name otherwise).
#pragma once

#include <string>

#include "reports/report.hpp"

namespace clusterbench::report {

/// The exposition text. Per GPU and per node: one sample per `ok` record of scope gpu or node
/// whose benchmark's family (reports/families.hpp) has a gauge for one of its metrics in the
/// gauge's unit (the last record of a case wins), value = metric value x the gauge's scale,
/// labelled host, and for a GPU gpu (index), uuid and pci_bus_id (from the record's scope, else
/// the host's EnvRecord), plus one label per case param (the param key, made a valid label name;
/// "param_" before a key that would collide with host, gpu, uuid, pci_bus_id or benchmark) and,
/// on DCGM-named series (DCGM_FI_*), benchmark. Headline families come first, in the spec's
/// family and gauge order. Per node also clusterbench_node_failing (0/1, the fleet view's
/// verdict), clusterbench_node_outliers, clusterbench_node_spec_items{outcome} and
/// clusterbench_node_records{status}; per run clusterbench_run_info{run_id,suite,spec,verdict} 1,
/// clusterbench_run_exit_code and clusterbench_run_finished_timestamp_seconds (when finished).
/// Each family has one # HELP and one # TYPE gauge line before its samples; label values escape
/// backslash, double quote and newline; values are shortest round-trip decimals. No timestamps
/// (the textfile collector rejects them). A family that names no gauge gives no headline.
std::string render_prometheus(const Report& report);

/// Writes `text` to `path` for the textfile collector: a temporary file beside it (path + ".tmp."
/// + pid, a name the collector's *.prom glob skips), fsync, then rename, so that a scrape never
/// reads half a file. Throws std::runtime_error naming the path on a write error.
void write_prometheus(const std::string& path, const std::string& text);

}  // namespace clusterbench::report
