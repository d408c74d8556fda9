// gnuplot text of heatmaps and bar-group charts (reports/chart_kinds.hpp), and the quoting every
// chart's text goes through.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "reports/chart_kinds.hpp"
#include "reports/rows.hpp"

namespace clusterbench::report {

/// Single-quoted, where gnuplot performs no backquote command substitution and no escapes
/// (gnuplot docs "Substitution": only in double-quoted strings), a quote doubled, line breaks
/// as spaces. Text from records and spec files (host names, params, row ids) must never reach
/// gnuplot any other way.
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "''";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out + "'";
}

std::string gp_tic(const std::string& s) {
  std::string doubled;
  for (char c : s) doubled += c == '%' ? std::string("%%") : std::string(1, c);
  return gp_quote(doubled);
}

std::string gp_num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

bool has_ranges(const Series& s) {
  if (s.ranges.size() != s.points.size()) return false;
  return std::any_of(s.ranges.begin(), s.ranges.end(),
                     [](const auto& r) { return r.first < r.second; });
}

std::string datablock(const Series& s, const std::string& name) {
  std::ostringstream g;
  g << name << " << EOD\n";
  const bool ranged = has_ranges(s);
  for (size_t i = 0; i < s.points.size(); ++i) {
    g << gp_num(s.points[i].first) << " " << gp_num(s.points[i].second);
    if (ranged) g << " " << gp_num(s.ranges[i].first) << " " << gp_num(s.ranges[i].second);
    g << "\n";
  }
  g << "EOD\n";
  return g.str();
}

void add_range_plots(const Chart& c, const std::string& block, const std::string& x,
                     std::vector<std::string>& plots) {
  const double w = 0.8 / std::max<size_t>(1, c.series.size());
  for (size_t s = 0; s < c.series.size(); ++s) {
    if (!has_ranges(c.series[s])) continue;
    // Bars: at the middle of the series' bar in its group; lines: at the point. After the data
    // series (the legend keeps one entry per series): the lowest and highest repetition.
    const std::string at = x.empty() ? "($1+" + gp_num(-0.4 + w * (s + 0.5)) + ")" : x;
    plots.push_back(block + std::to_string(s) + " using " + at +
                    ":2:3:4 with yerrorbars ps 0 lw 1.5 lc rgb '#333333' notitle");
  }
}

namespace {

/// `set xtics (...)` or `set ytics (...)` naming each index by its label.
std::string tics(const char* axis, const std::vector<std::string>& labels, const char* extra) {
  std::string out = std::string("set ") + axis + "tics " + extra + "(";
  for (size_t i = 0; i < labels.size(); ++i)
    out += (i ? ", " : "") + gp_tic(labels[i]) + " " + std::to_string(i);
  return out + ")\n";
}

/// The palette: red below the threshold (100%), green at and above it; turned round for a row
/// that wants low values. The colour range covers every cell and at least 90-110%.
std::string heatmap_palette(const Chart& c) {
  double lo = 90, hi = 110;
  for (const auto& cell : c.cells)
    lo = std::min(lo, std::floor(cell.percent) - 1), hi = std::max(hi, std::ceil(cell.percent) + 1);
  lo = std::max(lo, 0.0);
  const char* bad_far = "'#b2182b'";
  const char* bad_near = "'#f4a582'";
  const char* good_near = "'#d9f0d3'";
  const char* good_far = "'#1b7837'";
  std::ostringstream g;
  g << "set cbrange [" << gp_num(lo) << ":" << gp_num(hi) << "]\n";
  if (!c.lower_is_better)
    g << "set palette defined (" << gp_num(lo) << " " << bad_far << ", 99.999 " << bad_near
      << ", 100 " << good_near << ", " << gp_num(hi) << " " << good_far << ")\n";
  else
    g << "set palette defined (" << gp_num(lo) << " " << good_far << ", 100 " << good_near
      << ", 100.001 " << bad_near << ", " << gp_num(hi) << " " << bad_far << ")\n";
  return g.str();
}

}  // namespace

bool has_negative(const Chart& c) {
  for (const auto& s : c.series)
    for (const auto& p : s.points)
      if (p.second < 0) return true;
  return false;
}

namespace {

struct MarkStyle {
  const char* mark;
  const char* colour;
  const char* title;
};

constexpr MarkStyle kMarks[] = {{"FAIL", "black", "FAIL (outlined black)"},
                                {"WARN", "#7b3294", "WARN (outlined purple)"},
                                {"outlier", "#2166ac", "fleet outlier (outlined blue)"}};

}  // namespace

std::string heatmap_script(const Chart& c, const std::string& block) {
  std::ostringstream g;
  g << heatmap_palette(c);
  g << "set xrange [-0.5:" << gp_num(c.labels.size() - 0.5) << "]\n";
  g << "set yrange [" << gp_num(c.ylabels.size() - 0.5) << ":-0.5]\n";
  g << tics("x", c.labels, c.labels.size() > 16 ? "rotate by -45 font ',9' " : "");
  g << tics("y", c.ylabels, c.ylabels.size() > 24 ? "font ',8' " : "");
  g << "set cblabel " << gp_quote(c.colour_label) << "\nunset grid\n";
  g << "set style fill solid 1.0 noborder\n";
  g << block << "c << EOD\n";
  for (const auto& cell : c.cells)
    g << cell.x << " " << cell.y << " " << gp_num(cell.percent) << " \""
      << format_number(cell.value) << (cell.mark.empty() ? "" : " " + cell.mark) << "\"\n";
  g << "EOD\n";
  std::vector<std::string> plots = {block +
                                    "c using 1:2:(0.5):(0.5):3 with boxxyerror fc palette notitle"};
  if (c.cells.size() <= 256) plots.push_back(block + "c using 1:2:4 with labels font ',8' notitle");
  int n = 0;
  for (const auto& style : kMarks) {
    std::string name = block + "m" + std::to_string(n++);
    std::string rows;
    for (const auto& cell : c.cells)
      if (cell.mark == style.mark)
        rows += std::to_string(cell.x) + " " + std::to_string(cell.y) + "\n";
    if (rows.empty()) continue;
    g << name << " << EOD\n" << rows << "EOD\n";
    plots.push_back(name + " using 1:2:(0.47):(0.47) with boxxyerror lw 3 lc rgb '" + style.colour +
                    "' fs empty title " + gp_quote(style.title));
  }
  g << "plot ";
  for (size_t i = 0; i < plots.size(); ++i) g << (i ? ", \\\n     " : "") << plots[i];
  g << "\n";
  return g.str();
}

std::string groups_script(const Chart& c, const std::string& block) {
  std::ostringstream g;
  const size_t n = c.labels.size();
  g << "set xrange [-0.6:" << gp_num(n - 0.4) << "]\n"
    << (has_negative(c) ? "" : "set yrange [0:*]\n");
  bool long_labels = std::any_of(c.labels.begin(), c.labels.end(),
                                 [](const std::string& l) { return l.size() > 12; });
  g << tics("x", c.labels, long_labels ? "rotate by -30 font ',9' " : "");
  std::vector<std::string> plots;
  const double w = 0.8 / std::max<size_t>(1, c.series.size());
  g << "set style fill solid 0.8 border -1\nset boxwidth " << gp_num(w) << " absolute\n";
  for (size_t s = 0; s < c.series.size(); ++s) {
    g << datablock(c.series[s], block + std::to_string(s));
    if (c.kind == "groups")
      plots.push_back(block + std::to_string(s) + " using ($1+" + gp_num(-0.4 + w * (s + 0.5)) +
                      "):2 with boxes title " + gp_quote(c.series[s].name));
    else
      plots.push_back(block + std::to_string(s) + " using 1:2 with points pt 7 ps 0.5 title " +
                      gp_quote(c.series[s].name));
  }
  if (c.kind == "groups") add_range_plots(c, block, "", plots);
  if (!c.group_lines.empty()) {
    g << block << "t << EOD\n";
    for (const auto& l : c.group_lines)
      g << gp_num(l.group - 0.45) << " " << gp_num(l.value) << "\n"
        << gp_num(l.group + 0.45) << " " << gp_num(l.value) << "\n\n";
    g << "EOD\n";
    plots.push_back(block + "t using 1:2 with lines dt 2 lw 2 lc rgb 'red' title " +
                    gp_quote("spec threshold of each group"));
    int i = 1;
    for (const auto& l : c.group_lines)
      g << "set label " << i++ << " " << gp_quote(l.label) << " at " << gp_num(l.group) << ","
        << gp_num(l.value) << " center offset 0,0.7 font ',9' tc rgb 'red' front\n";
  }
  g << "plot ";
  for (size_t i = 0; i < plots.size(); ++i) g << (i ? ", \\\n     " : "") << plots[i];
  g << "\n";
  return g.str();
}

}  // namespace clusterbench::report
