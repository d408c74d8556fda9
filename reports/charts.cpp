// Charts for report.html, drawn by gnuplot as an external process (docs/report.md "Charts").
#include "reports/charts.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "process/process.hpp"
#include "reports/burnin.hpp"
#include "reports/chart_kinds.hpp"
#include "reports/families.hpp"
#include "reports/report.hpp"

namespace clusterbench::report {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

namespace {

/// kMaxChartMarks: the lowest and highest point of each slice of the x axis, per series.
void thin(Chart& c) {
  const size_t slices = kMaxChartMarks / 2;
  const double width = std::max<double>(1, static_cast<double>(c.labels.size()) / slices);
  size_t marks = 0;
  for (auto& s : c.series) {
    std::map<size_t, std::pair<size_t, size_t>> lo_hi;  // slice -> indices of min, max
    for (size_t i = 0; i < s.points.size(); ++i) {
      auto slice = static_cast<size_t>(s.points[i].first / width);
      auto [it, fresh] = lo_hi.try_emplace(slice, i, i);
      if (fresh) continue;
      if (s.points[i].second < s.points[it->second.first].second) it->second.first = i;
      if (s.points[i].second > s.points[it->second.second].second) it->second.second = i;
    }
    std::vector<std::pair<double, double>> kept;
    for (const auto& [slice, mm] : lo_hi) {
      kept.push_back(s.points[mm.first]);
      if (mm.second != mm.first) kept.push_back(s.points[mm.second]);
    }
    s.points = std::move(kept);
    s.ranges.clear();  // a points chart draws no ranges
    marks += s.points.size();
  }
  c.note = std::to_string(marks) + " marks: the lowest and highest of each of " +
           std::to_string(slices) + " slices of the x axis";
}

}  // namespace

namespace {

/// The ok records (one per case key: RunDir).
std::vector<const ResultRecord*> ok_records(const RunDir& run) {
  std::vector<const ResultRecord*> recs;
  for (const auto& r : run.records.records)
    if (r.status == Status::ok) recs.push_back(&r);
  return recs;
}

}  // namespace

std::vector<Chart> build_charts(const Report& report) {
  std::vector<const ResultRecord*> recs = ok_records(*report.run);
  std::set<std::string> done;  // benchmark|metric drawn by a heatmap or a family's chart
  std::vector<Chart> charts = row_heatmaps(report, done);
  for (auto& c : family_charts(report, recs, done)) charts.push_back(std::move(c));
  for (auto& c : row_bar_charts(report, done)) charts.push_back(std::move(c));
  for (auto& c : burnin_charts(*report.run, report.soaks)) charts.push_back(std::move(c));
  std::erase_if(charts, [](const Chart& c) { return !worth_drawing(c); });
  for (size_t i = 0; i < charts.size(); ++i) {
    Chart& c = charts[i];
    c.id = "chart-" + std::to_string(i + 1);
    if ((c.kind == "points" || c.kind == "group-points") &&
        static_cast<size_t>(c.records) > kMaxChartMarks)
      thin(c);
  }
  return charts;
}

namespace {

/// The plot commands of a lines, bars or points chart, after its datablocks.
std::vector<std::string> xy_plots(const Chart& c, const std::string& block, std::ostream& g) {
  std::vector<std::string> plots;
  if (c.kind == "lines") {
    if (c.logx) g << "set logscale x 2\nset format x '%.0b%BB'\n";
    for (size_t s = 0; s < c.series.size(); ++s)
      plots.push_back(block + std::to_string(s) + " using 1:2 with linespoints pt 7 ps 0.8 title " +
                      gp_quote(c.series[s].name));
    add_range_plots(c, block, "1", plots);
    if (c.mark_x)
      g << "set arrow from " << gp_num(*c.mark_x) << ", graph 0 to " << gp_num(*c.mark_x)
        << ", graph 1 nohead dt 3 lw 2 lc rgb '#555555'\nset label "
        << gp_quote(c.mark_label.empty() ? "x = " + gp_num(*c.mark_x) : c.mark_label) << " at "
        << gp_num(*c.mark_x) << ", graph 0.04 right offset -0.5,0 font ',9'\n";
    return plots;
  }
  const size_t n = c.labels.size();
  g << "set xrange [-0.6:" << gp_num(n - 0.4) << "]\n";
  if (c.kind == "bars") {
    g << "set xtics rotate by -45 font ',9' (";
    for (size_t i = 0; i < n; ++i) g << (i ? ", " : "") << gp_tic(c.labels[i]) << " " << i;
    g << ")\n";
    double w = 0.8 / std::max<size_t>(1, c.series.size());
    g << "set style fill solid 0.8 border -1\nset boxwidth " << gp_num(w) << " absolute\n";
    for (size_t s = 0; s < c.series.size(); ++s)
      plots.push_back(block + std::to_string(s) + " using ($1+" + gp_num(-0.4 + w * (s + 0.5)) +
                      "):2 with boxes title " + gp_quote(c.series[s].name));
    add_range_plots(c, block, "", plots);
  } else {
    g << "set xtics out\n";
    for (size_t s = 0; s < c.series.size(); ++s)
      plots.push_back(block + std::to_string(s) + " using 1:2 with points pt 7 ps 0.5 title " +
                      gp_quote(c.series[s].name));
  }
  return plots;
}

}  // namespace

std::string gnuplot_script(const Chart& c, const std::string& output) {
  std::ostringstream g;
  std::string block = "$";
  for (char ch : c.id)
    if (std::isalnum(static_cast<unsigned char>(ch))) block += ch;
  block += "_";
  g << "reset\n";
  g << "set terminal svg size 960," << chart_height(c)
    << " dynamic noenhanced font 'sans,11' background rgb 'white'\n";
  if (!output.empty()) g << "set output " << gp_quote(output) << "\n";
  g << "set title " << gp_quote(c.title) << "\n";
  g << "set xlabel " << gp_quote(c.xlabel) << "\nset ylabel " << gp_quote(c.ylabel) << "\n";
  g << "set grid ytics\nset key outside below center horizontal box lc rgb '#bbbbbb'\n";
  if (c.kind == "heatmap" || c.kind == "groups" || c.kind == "group-points") {
    // Room above the highest bar or threshold, so that no line sits on the frame.
    if (c.kind != "heatmap") g << "set offsets 0, 0, graph 0.1, 0\n";
    g << (c.kind == "heatmap" ? heatmap_script(c, block) : groups_script(c, block));
  } else {
    g << (c.logy            ? "set logscale y 10\n"
          : has_negative(c) ? ""
                            : "set yrange [0:*]\n")
      // Lines keep their end points off the frame, where their range bars would be cut.
      << (c.mark_x            ? "set offsets graph 0.02, graph 0.05, graph 0.1, 0\n"
          : c.kind == "lines" ? "set offsets graph 0.02, graph 0.02, graph 0.1, 0\n"
                              : "set offsets 0, 0, graph 0.1, 0\n");
    for (size_t s = 0; s < c.series.size(); ++s)
      g << datablock(c.series[s], block + std::to_string(s));
    std::vector<std::string> plots = xy_plots(c, block, g);
    for (const auto& l : c.spec_lines)
      plots.push_back(gp_num(l.value) + " with lines dt 2 lw 2 lc rgb 'red' title " +
                      gp_quote(l.label));
    g << "plot ";
    for (size_t i = 0; i < plots.size(); ++i) g << (i ? ", \\\n     " : "") << plots[i];
    g << "\n";
  }
  if (!output.empty()) g << "unset output\n";
  return g.str();
}

std::string find_gnuplot() { return find_on_path("gnuplot"); }

TempDir::TempDir(const std::string& prefix) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string t =
      std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/clusterbench-" + prefix + ".XXXXXX";
  if (::mkdtemp(t.data())) path = t;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path.empty()) std::filesystem::remove_all(path, ec);
}

namespace {

std::string strip_prolog(const std::string& svg) {
  auto at = svg.find("<svg");
  return at == std::string::npos ? "" : svg.substr(at);
}

}  // namespace

std::optional<std::string> render_svg(const Chart& chart, const std::string& gnuplot,
                                      std::string* error) {
  std::vector<std::string> errors;
  auto out = render_svgs({chart}, gnuplot, &errors);
  if (error && !errors.empty()) *error = errors[0];
  return out[0];
}

std::vector<std::optional<std::string>> render_svgs(const std::vector<Chart>& charts,
                                                    const std::string& gnuplot,
                                                    std::vector<std::string>* errors) {
  std::vector<std::optional<std::string>> out(charts.size());
  std::vector<std::string> errs(charts.size());
  TempDir tmp("charts");
  auto finish = [&]() {
    if (errors) *errors = errs;
    return out;
  };
  if (tmp.path.empty()) {
    for (auto& e : errs) e = "cannot create a temporary directory";
    return finish();
  }
  bool hung = false;
  auto draw = [&](size_t from, size_t to) {
    std::string script_path = tmp.path + "/charts.gp";
    std::ofstream s(script_path);
    for (size_t i = from; i < to; ++i)
      s << gnuplot_script(charts[i], tmp.path + "/" + std::to_string(i) + ".svg");
    s.close();
    ProcessResult p = run_process({gnuplot, script_path}, {}, "", tmp.path, kGnuplotTimeoutS);
    int rc = p.exit_code;
    hung = hung || p.timed_out;
    std::string err = p.timed_out
                          ? "did not finish within " +
                                std::to_string(static_cast<int>(kGnuplotTimeoutS)) + " s; killed"
                          : p.err;
    for (size_t i = from; i < to; ++i) {
      std::string svg =
          rc == 0 ? strip_prolog(read_text(tmp.path + "/" + std::to_string(i) + ".svg")) : "";
      if (!svg.empty())
        out[i] = svg;
      else
        errs[i] = rc < 0 || p.timed_out ? "gnuplot " + err
                                        : "gnuplot exit " + std::to_string(rc) + ": " + err;
    }
    return rc == 0;
  };
  // One by one only after a failure, not after a hang: a gnuplot that hangs would hang on each.
  if (!draw(0, charts.size()) && !hung)
    for (size_t i = 0; i < charts.size(); ++i) draw(i, i + 1);
  return finish();
}

}  // namespace clusterbench::report
