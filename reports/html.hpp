// report.html: one self-contained file (no network to view it) with the verdict table, the fleet
// view, charts drawn by gnuplot as inline SVG, the environment and the spec with its sources
// (docs/report.md). Printing to PDF goes through headless Chromium, an external process.
#pragma once

#include <string>

#include "reports/report.hpp"

namespace clusterbench::report {

/// The HTML page. `gnuplot`: the gnuplot binary ("" = none: the charts section says gnuplot is
/// absent and how to install it). Every chart is a <figure class="chart" id="chart-N"
/// data-records="R" data-series="S" data-kind="lines|bars|points"> holding gnuplot's <svg>, so a
/// test can count one mark per record. No <script>, no external URL: everything is inline.
/// `charts`: the charts section already rendered by render_charts_html (nullptr: render it here).
std::string render_html(const Report& report, const std::string& gnuplot,
                        const std::string* charts = nullptr);

/// The charts section of report.html (heading included): build_charts, then gnuplot per chart.
/// It reads only `report`, so write_reports runs it alongside the other files.
std::string render_charts_html(const Report& report, const std::string& gnuplot);

/// Path of a headless-capable Chromium on PATH (chromium, chromium-browser, google-chrome), or "".
std::string find_chromium();

/// How long Chromium may take to print report.html before it is killed (seconds).
inline constexpr double kChromiumTimeoutS = 180;

/// Prints `html_path` to `pdf_path` with headless Chromium (--no-sandbox, which it needs as root,
/// and --disable-background-networking so that it reaches out nowhere). Returns "" on success,
/// else what went wrong, e.g. "--pdf needs Chromium: none of chromium, chromium-browser,
/// google-chrome is on PATH (Debian: apt-get install chromium)".
std::string print_pdf(const std::string& html_path, const std::string& pdf_path);

}  // namespace clusterbench::report
