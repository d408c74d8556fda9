// Renderers of a Report: Markdown, JSON (clusterbench.report/1), JUnit XML and the console
// summary. They read the Report and the run directory only (STYLE.md: reporters read results).
#pragma once

#include <string>

#include "reports/evaluate.hpp"

namespace clusterbench::report {

/// report.md: title, verdict line (with what the exit code means), run id, spec name + path +
/// sha256, the row table (| row | title | outcome | value | requirement | worst item | source |),
/// a section per non-PASS row with its evidence, warnings, an environment summary per host, and
/// a summary of every record (benchmark, params, item, status, metrics).
std::string render_markdown(const Report& report, const RunDir& run);

/// report.json, schema clusterbench.report/1: run_id, spec {name, path, sha256}, verdict,
/// exit_code, aborted, abort_reason, hosts, rows[] {id, title, source, severity, outcome, value,
/// unit, aggregate, op, threshold, worst_item, message, evidence, items[]}, counts, warnings.
json render_json(const Report& report);

/// junit.xml: one testsuite "clusterbench.<spec name>", one testcase per row (classname = spec
/// name, name = row id). FAIL -> <failure>, WAIVED/MISSING -> <skipped>, WARN -> <system-out>.
/// Every text is XML-escaped; characters XML 1.0 forbids become '?'.
std::string render_junit(const Report& report);

/// Console summary: one line per row, then "VERDICT: FAIL (exit 1): 3 FAIL, 1 MISSING, 5 PASS".
std::string render_console(const Report& report);

/// Writes report.md, report.json (with "fleet"), junit.xml, failing-hosts.txt and report.html
/// (charts when gnuplot is on PATH) into `dir` (created if absent), each atomically.
/// Throws std::runtime_error naming the path on a write error.
void write_reports(const Report& report, const RunDir& run, const std::string& dir);

/// XML 1.0 escaping of text and attribute values (& < > " ').
std::string xml_escape(const std::string& text);

}  // namespace clusterbench::report
