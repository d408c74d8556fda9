// Charts of a run for report.html (docs/report.md "Charts"): which charts the records allow, and
// their SVG drawn by gnuplot, run as an external process (docs/design.md: reports/ never links it).
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
  /// Per point, the lowest and highest of the repetitions behind its median (drawn as an error
  /// bar); empty when none of the points has repetitions. A point without them has lo = hi.
  std::vector<std::pair<double, double>> ranges;
};

/// A horizontal requirement line: a spec row's threshold.
struct SpecLine {
  std::string label;  ///< "spec gemm.bf16 >= 600 TFLOP/s"
  double value = 0;
};

/// A heatmap cell: column x and row y (indices into Chart::labels and Chart::ylabels), the
/// item's value in the chart's unit, its colour as a percent of the row's threshold, and what the
/// report said of it ("FAIL", "WARN", "outlier"; "" for nothing).
struct Cell {
  size_t x = 0, y = 0;
  double value = 0, percent = 0;
  std::string mark;
};

/// A groups chart's threshold drawn over one group only: a spec row selecting that group.
struct GroupLine {
  size_t group = 0;
  double value = 0;
  std::string label;  ///< "spec io.seq_read >= 5 GB/s"
};

struct Chart {
  std::string id;     ///< "chart-1", ...
  std::string title;  ///< "compute.gemm tflops per GPU"
  /// "lines" (x numeric), "bars" (x = labels), "points" (many labels), "groups" (a bar group per
  /// label, a bar per series), "heatmap" (labels x ylabels cells)
  std::string kind;
  std::string xlabel, ylabel;
  bool logx = false;                ///< log2 x axis (message sizes)
  bool logy = false;                ///< log10 y axis
  std::vector<std::string> labels;  ///< bars/points/groups: the x categories; heatmap: columns
  std::vector<Series> series;
  std::vector<SpecLine> spec_lines;
  std::vector<GroupLine> group_lines;  ///< groups: each group's own thresholds
  std::vector<std::string> ylabels;    ///< heatmap: the rows (hosts)
  std::vector<Cell> cells;             ///< heatmap
  std::string colour_label;            ///< heatmap: what the colour means
  bool lower_is_better = false;        ///< heatmap: a <= row (the palette turns round)
  std::optional<double> mark_x;        ///< a vertical marker (lines)
  std::string mark_label;
  int records = 0;   ///< records plotted: one mark per record (up to kMaxChartMarks)
  std::string note;  ///< how the marks were thinned, when they were ("" when one per record)
};

/// Bars are drawn up to this many categories; beyond it a chart becomes points.
inline constexpr size_t kMaxBars = 64;

/// A points chart with more marks than this (8,000 GPUs) keeps, per series, the lowest and the
/// highest value of each of kMaxChartMarks / 2 equal slices of the x axis (host order), so that
/// every outlier still shows while the SVG stays small (docs/report.md "Scale").
inline constexpr size_t kMaxChartMarks = 500;

/// The charts of a run (docs/report.md "Charts"), few and chosen, in this order:
/// - a heatmap per spec row of GPUs or links judged against a numeric `>=`/`<=` threshold
///   (nodes x GPU index, or node x node), each cell coloured by its percent of the threshold,
///   FAIL/WARN cells and fleet outliers outlined (row_heatmaps());
/// - one chart per spec family with a `chart` (SpecFamily::chart, in table order, one per value
///   of its `split` params): lines against a numeric param, or a bar group per param value with
///   each group's own threshold (family_charts());
/// - a bar chart per item of any other row over a numeric record metric (latencies in us, ms
///   or s, log axis over wide ranges);
/// - the soaks' charts over time (burnin_charts()).
/// No chart of fewer than two marks or of zeros alone. Each chart's `records` counts its marks.
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
