// Renderers of a Report: Markdown, JSON (clusterbench.report/1), JUnit XML and the console
// summary. They read the Report alone (docs/design.md "The verdict is made once": reporters read
// results, make_report judges).
#pragma once

#include <cstddef>
#include <string>

#include "reports/report.hpp"
#include "reports/text.hpp"

namespace clusterbench::report {

/// Rows with up to this many items list every item (and every evidence key) in report.json and
/// report.md; a larger row (a GPU row of 8,000 GPUs) lists its non-PASS items and its worst item in
/// full and counts the rest ("item_counts"), and its evidence is that of the listed items, at most
/// this many keys ("evidence_count" is the full number). docs/report.md "Scale".
inline constexpr size_t kFullDetailItems = 100;

/// In a row beyond kFullDetailItems items, each listed item names at most this many of its
/// records ("records_count" is the full number).
inline constexpr size_t kItemRecords = 10;

/// report.md: title, verdict line (with what the exit code means), run id, spec name + path +
/// sha256, the row table (| row | title | outcome | value | requirement | worst item | source |),
/// a section per non-PASS row with its evidence, warnings, the fleet, uniformity and link
/// sections, an environment summary per host, and a summary of every record (benchmark, params,
/// item, status, metrics).
std::string render_markdown(const Report& report);

/// report.json, schema clusterbench.report/1: run_id, spec {name, path, sha256}, verdict,
/// exit_code, aborted, abort_reason, hosts, rows[] {id, title, source, severity, outcome, value,
/// unit, aggregate, op, threshold, worst_item, message, evidence, evidence_count, items[],
/// items_count, items_listed ("all" | "non-PASS and worst"), item_counts {outcome: n}}, counts,
/// warnings, fleet (fleet_json), clusterbench_version, uniformity (uniformity_json). Items
/// beyond kFullDetailItems are counted, not listed, when they PASS.
json render_json(const Report& report);

/// junit.xml: one testsuite "clusterbench.<spec name>", one testcase per row (classname = spec
/// name, name = row id). FAIL -> <failure>, WAIVED/MISSING -> <skipped>, WARN -> <system-out>.
/// Every text is XML-escaped; characters XML 1.0 forbids become '?'.
std::string render_junit(const Report& report);

/// Console summary: one line per row, then "VERDICT: FAIL (exit 1): 3 FAIL, 1 MISSING, 5 PASS".
std::string render_console(const Report& report);

/// Console lines after the summary: the spec's name, path and sha256 and the clusterbench version
/// that ran, then the fleet uniformity (render_uniformity_console()).
std::string render_console_details(const Report& report);

/// Writes report.md, report.json, junit.xml, failing-hosts.txt and report.html (charts when
/// gnuplot is on PATH) into `dir` (created if absent), each atomically. Throws
/// std::runtime_error naming the path on a write error.
void write_reports(const Report& report, const std::string& dir);

/// Checks, before any work starts, that `path` can be written as a regular file: its parent
/// directory exists and a file can be created there (a probe `path + ".tmp." + pid`, created and
/// removed: this catches read-only mounts and /proc, which access(2) passes for root), `path` is
/// not a directory, a symbolic link (the rename would replace the link: /dev/stdout) nor an
/// existing device, FIFO or socket, and, when `run_dir` is
/// not empty, `path` (symlinks resolved) is neither `run_dir` nor inside it (a run's own files are
/// never replaced). An existing file is replaced only when it is an earlier output of the same
/// option (report.html for --html, a clusterbench Prometheus page, a PDF, a gzip archive for -o)
/// or `force` is set, and never when it is a run directory's own file (run.json beside it) of
/// any run. Throws InputError "<option> <path>: <why>" (exit 2).
void check_output_file(const std::string& path, const std::string& option,
                       const std::string& run_dir = "", bool force = false);

/// Creates directory `dir` (and its parents) for a command's output files unless it exists.
/// Throws InputError "<option> <dir>: is not a directory" when it, or a parent, is a file, and
/// "<option> <dir>: cannot create directory (<why>)" on any other failure (exit 2).
void check_output_dir(const std::string& dir, const std::string& option);

/// Throws InputError "<option> <dir>: cannot write into it (<why>)" (exit 2) unless a file can
/// be created in the existing directory `dir` (tried: a probe file made and removed).
void check_writable_dir(const std::string& dir, const std::string& option);

}  // namespace clusterbench::report
