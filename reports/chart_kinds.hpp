// The kinds of chart build_charts() chooses from (reports/charts.hpp): heatmaps of judged GPUs
// and links, the families' line and bar-group charts, bar charts of the other judged rows, and
// their gnuplot text. Internal to reports/.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "reports/charts.hpp"

namespace clusterbench::report {

/// A gnuplot string literal holding `s` as plain text (single-quoted: no substitution).
std::string gp_quote(const std::string& s);

/// A tic label: gp_quote() with each '%' doubled (gnuplot reads a tic label as a format).
std::string gp_tic(const std::string& s);

/// Whether `s` has a range per point and one of them is not a single value.
bool has_ranges(const Series& s);

/// The gnuplot datablock `name` of `s`: "x y" per point, "x y lo hi" when it has ranges.
std::string datablock(const Series& s, const std::string& name);

/// An error bar plot per series with ranges (min-max of the repetitions), after the data
/// series and without a legend entry: at the point (`x` "1", lines) or at the middle of the
/// series' bar in its group (`x` "", bars and groups).
void add_range_plots(const Chart& c, const std::string& block, const std::string& x,
                     std::vector<std::string>& plots);

/// Whether any point of the chart is below zero (the y axis then does not start at 0).
bool has_negative(const Chart& chart);

/// `v` with up to 10 significant digits, as gnuplot reads it.
std::string gp_num(double v);

/// Names in numeric order: "workers=2" before "workers=16", "node2" before "node10".
bool natural_less(const std::string& a, const std::string& b);

/// A heatmap per spec row whose items are GPUs or links with numeric values, judged against a
/// numeric >= or <= threshold; adds "benchmark|metric" of each to `done`.
std::vector<Chart> row_heatmaps(const Report& report, std::set<std::string>& done);

/// The charts of the spec families with a `chart` over `recs` (ok records, last of a case);
/// adds "benchmark|metric" of what they draw to `done`.
std::vector<Chart> family_charts(const Report& report, const std::vector<const ResultRecord*>& recs,
                                 std::set<std::string>& done);

/// A bar chart per item of each remaining row (not in `done`) over a numeric record metric
/// judged against a numeric >= or <= threshold, with its threshold line.
std::vector<Chart> row_bar_charts(const Report& report, const std::set<std::string>& done);

/// Whether a chart is worth a picture: at least two marks, not all zero.
bool worth_drawing(const Chart& chart);

/// The gnuplot commands (after the terminal and title) of a heatmap or a groups chart;
/// `block` names its datablocks.
std::string heatmap_script(const Chart& chart, const std::string& block);
std::string groups_script(const Chart& chart, const std::string& block);

/// The SVG height of a chart in pixels: 420, or more for a heatmap of many rows.
int chart_height(const Chart& chart);

}  // namespace clusterbench::report
