// Charts of a run for report.html (docs/report.md "Charts"): which charts the records allow, and
// their SVG drawn by gnuplot, run as an external process (DESIGN.md: reports/ never links it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench::report {

struct Report;

/// One data series. Line charts use (x, y); bar and point charts use the index into
/// Chart::labels as x.
struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
};

/// A horizontal requirement line: a spec row's threshold.
struct SpecLine {
  std::string label;  ///< "spec gemm.bf16 >= 600 TFLOP/s"
  double value = 0;
};

struct Chart {
  std::string id;     ///< "chart-1", ...
  std::string title;  ///< "compute.gemm tflops per GPU"
  std::string kind;   ///< "lines" (x numeric), "bars" (x = labels), "points" (many labels)
  std::string xlabel, ylabel;
  bool logx = false;                ///< log2 x axis (message sizes)
  std::vector<std::string> labels;  ///< bars/points: the x categories
  std::vector<Series> series;
  std::vector<SpecLine> spec_lines;
  int records = 0;   ///< records plotted: one mark per record (up to kMaxChartMarks)
  std::string note;  ///< how the marks were thinned, when they were ("" when one per record)
};

/// Bars are drawn up to this many categories; beyond it a chart becomes points.
inline constexpr size_t kMaxBars = 64;

/// A points chart with more marks than this (8,000 GPUs) keeps, per series, the lowest and the
/// highest value of each of kMaxChartMarks / 2 equal slices of the x axis (host order), so that
/// every outlier still shows while the SVG stays small (docs/report.md "Scale").
inline constexpr size_t kMaxChartMarks = 500;

/// The charts that the run's ok records allow (the last record of a case wins), in this order:
/// - one line chart per spec family with a `chart` (SpecFamily::chart, in table order): its
///   metric(s) against the numeric param `x` over the records whose benchmark matches the
///   family's glob, one series per benchmark or item plus the other params;
/// - for every other (benchmark, metric) of ok records, except those of soak families: one bar
///   per item (GPU "node01/gpu3", node, link; params label at cluster scope), one series per
///   params variant. Spec lines come from the report's rows that select the benchmark + metric
///   with a numeric >= or <= value;
/// - the soaks' charts over time (burnin_charts()).
/// Each chart's `records` counts the records it plots.
std::vector<Chart> build_charts(const Report& report);

/// The gnuplot script for a chart (SVG terminal, data inline as datablocks named after the chart
/// id, noenhanced text), writing to `output` (a file path; empty: gnuplot's stdout).
std::string gnuplot_script(const Chart& chart, const std::string& output = "");

/// Path of gnuplot on PATH, or "" when absent.
std::string find_gnuplot();

/// Draws a chart with gnuplot: the <svg> element alone (XML prolog stripped). Returns nullopt and
/// sets `error` (gnuplot's stderr, or why it could not run) on failure.
std::optional<std::string> render_svg(const Chart& chart, const std::string& gnuplot,
                                      std::string* error);

/// Draws every chart in one gnuplot process (one `set output` per chart); when that process
/// fails, each chart is drawn on its own so that one bad chart costs only itself. Element i is
/// nullopt where chart i failed, with the reason in errors[i].
std::vector<std::optional<std::string>> render_svgs(const std::vector<Chart>& charts,
                                                    const std::string& gnuplot,
                                                    std::vector<std::string>* errors);

/// How long one gnuplot process may take before it is killed and its charts omitted (seconds).
inline constexpr double kGnuplotTimeoutS = 120;

/// A private directory $TMPDIR/clusterbench-PREFIX.XXXXXX ($TMPDIR unset: /tmp), removed with its
/// contents on destruction; `path` is empty when it could not be created.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace clusterbench::report
