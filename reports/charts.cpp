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

/// A gnuplot string literal holding `s` as plain text: single-quoted, where gnuplot performs no
/// backquote command substitution and no escapes (gnuplot docs "Substitution": only in
/// double-quoted strings), a quote doubled, line breaks as spaces. Text from records and spec
/// files (host names, params, row ids) must never reach gnuplot any other way.
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

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string short_item(const Scope& s) {
  if (s.kind == ScopeKind::gpu) return s.host + "/gpu" + std::to_string(s.gpu_index);
  return scope_item(s);
}

/// "{"dtype":"bf16"}" -> "dtype=bf16"; without `drop`.
std::string params_label(const json& params, const std::string& drop = "") {
  std::string out;
  for (const auto& [k, v] : params.items()) {
    if (k == drop) continue;
    out += (out.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out.empty() ? "-" : out;
}

bool has_number(const json& params, const char* key) {
  return params.contains(key) && params.at(key).is_number();
}

/// Spec rows that put a numeric line on a chart of (benchmark, metric).
std::vector<SpecLine> spec_lines(const Report& report, const std::string& bench,
                                 const std::string& metric) {
  std::vector<SpecLine> out;
  for (const auto& row : report.rows) {
    const auto& r = row.req;
    if (r.select.benchmark != bench || r.select.metric != metric) continue;
    if ((r.op != ">=" && r.op != "<=") || !r.value.is_number()) continue;
    std::string sel = r.select.params.empty() ? "" : " (" + params_label(r.select.params) + ")";
    out.push_back({"spec " + r.id + sel + " " + r.op + " " + format_number(r.value.get<double>()) +
                       " " + r.unit,
                   r.value.get<double>()});
  }
  return out;
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
    marks += s.points.size();
  }
  c.note = std::to_string(marks) + " marks: the lowest and highest of each of " +
           std::to_string(slices) + " slices of the x axis";
}

}  // namespace

namespace {

/// The ok records, the last one of a case winning.
std::vector<const ResultRecord*> last_ok_records(const RunDir& run) {
  std::vector<const ResultRecord*> recs;
  if (run.records.one_per_case) {
    for (const auto& r : run.records.records)
      if (r.status == Status::ok) recs.push_back(&r);
    return recs;
  }
  std::unordered_map<std::string_view, const ResultRecord*> last;
  last.reserve(run.records.records.size());
  for (const auto& r : run.records.records) last[r.case_key] = &r;
  for (const auto& r : run.records.records)
    if (r.status == Status::ok && last[r.case_key] == &r) recs.push_back(&r);
  return recs;
}

/// A series' name on a family's line chart: the benchmark id after its area ("all_reduce"), or
/// the item, then the params other than the x axis.
std::string line_series_name(const FamilyChart& spec, const ResultRecord& r) {
  std::string who =
      spec.series == "item" ? short_item(r.scope) : r.benchmark.substr(r.benchmark.find('.') + 1);
  return who + " " + params_label(r.params, spec.x);
}

/// A family's line chart; marks benchmark|metric pairs it drew in `done`.
Chart family_chart(const SpecFamily& family, const std::vector<const ResultRecord*>& recs,
                   std::set<std::string>& done) {
  const FamilyChart& spec = *family.chart;
  Chart c;
  c.title = spec.title;
  c.kind = "lines";
  c.logx = spec.logx;
  c.xlabel = spec.xlabel;
  c.ylabel = spec.ylabel;
  std::map<std::string, Series> series;
  for (const auto* r : recs) {
    if (!glob_match(family.benchmark, r->benchmark) || !has_number(r->params, spec.x.c_str()))
      continue;
    for (const auto& m : r->metrics) {
      if (!spec.metric.empty() && m.name != spec.metric) continue;
      if (!spec.unit.empty() && m.unit != spec.unit) continue;
      std::string name = line_series_name(spec, *r);
      if (spec.max_series > 0 && !series.count(name) &&
          series.size() >= static_cast<size_t>(spec.max_series))
        continue;
      series[name].name = name;
      series[name].points.push_back({r->params[spec.x].get<double>(), m.value});
      ++c.records;
      done.insert(r->benchmark + "|" + m.name);
    }
  }
  for (auto& [n, s] : series) {
    std::sort(s.points.begin(), s.points.end());
    c.series.push_back(s);
  }
  return c;
}

/// A bar chart being assembled: one per (benchmark, metric).
struct Pending {
  std::string bench, metric, unit, scope;
  std::vector<std::string> labels;
  std::unordered_map<std::string, size_t> label_index;
  std::map<std::string, Series> series;
  int records = 0;
};

/// One bar per item, one series per params variant, for every (benchmark, metric) not in
/// `done` and not of a soak family; in first-seen order.
std::vector<Pending> pending_bars(const std::vector<const ResultRecord*>& recs,
                                  const std::vector<SpecFamily>& families,
                                  const std::set<std::string>& done) {
  FamilyCache family(families);
  std::unordered_map<std::string, size_t> at;
  std::vector<Pending> pend;
  std::string plabel;  // params_label of the record before, when the same
  const json* plabel_of = nullptr;
  for (const auto* r : recs) {
    if (family(r->benchmark).soak) continue;  // drawn over time by burnin_charts()
    if (!plabel_of || *plabel_of != r->params) plabel = params_label(r->params);
    plabel_of = &r->params;
    const bool cluster = r->scope.kind == ScopeKind::cluster;
    const std::string item = cluster ? std::string() : short_item(r->scope);
    for (const auto& m : r->metrics) {
      std::string key = r->benchmark + "|" + m.name;
      if (done.count(key)) continue;
      auto [pit, fresh] = at.try_emplace(key, pend.size());
      if (fresh) pend.emplace_back();
      Pending& p = pend[pit->second];
      p.bench = r->benchmark;
      p.metric = m.name;
      p.unit = m.unit;
      p.scope = scope_kind_name(r->scope.kind);
      const std::string& label = cluster ? plabel : item;
      const std::string& sname = cluster ? m.name : plabel;
      auto [it, new_label] = p.label_index.emplace(label, p.labels.size());
      if (new_label) p.labels.push_back(label);
      Series& series = p.series[sname];
      series.name = sname;
      series.points.push_back({static_cast<double>(it->second), m.value});
      ++p.records;
    }
  }
  return pend;
}

Chart bar_chart(Pending& p, const Report& report) {
  Chart c;
  const char* per = p.scope == "gpu"    ? " per GPU"
                    : p.scope == "node" ? " per node"
                    : p.scope == "link" ? " per link"
                                        : "";
  c.title = p.bench + " " + p.metric + per;
  c.kind = p.labels.size() > kMaxBars ? "points" : "bars";
  c.xlabel = p.scope == "cluster" ? "case" : p.scope;
  if (c.kind == "points") c.xlabel += " (in host order)";
  c.ylabel = p.metric + " (" + p.unit + ")";
  c.labels = p.labels;
  for (auto& [n, s] : p.series) c.series.push_back(s);
  c.spec_lines = spec_lines(report, p.bench, p.metric);
  c.records = p.records;
  if (c.kind == "points" && static_cast<size_t>(p.records) > kMaxChartMarks) thin(c);
  return c;
}

}  // namespace

std::vector<Chart> build_charts(const Report& report) {
  const RunDir& run = *report.run;
  const auto& families = report.spec->families;
  std::vector<const ResultRecord*> recs = last_ok_records(run);
  std::vector<Chart> charts;
  std::set<std::string> done;  // benchmark|metric drawn by a family's chart
  for (const auto& f : families) {
    if (!f.chart) continue;
    Chart c = family_chart(f, recs, done);
    if (c.records) charts.push_back(std::move(c));
  }
  for (Pending& p : pending_bars(recs, families, done)) charts.push_back(bar_chart(p, report));
  for (auto& c : burnin_charts(run, report.soaks)) charts.push_back(std::move(c));
  for (size_t i = 0; i < charts.size(); ++i) charts[i].id = "chart-" + std::to_string(i + 1);
  return charts;
}

std::string gnuplot_script(const Chart& c, const std::string& output) {
  std::ostringstream g;
  std::string block = "$";
  for (char ch : c.id)
    if (std::isalnum(static_cast<unsigned char>(ch))) block += ch;
  block += "_";
  g << "reset\n";
  g << "set terminal svg size 960,420 dynamic noenhanced font 'sans,11' background rgb 'white'\n";
  if (!output.empty()) g << "set output " << gp_quote(output) << "\n";
  g << "set title " << gp_quote(c.title) << "\n";
  g << "set xlabel " << gp_quote(c.xlabel) << "\nset ylabel " << gp_quote(c.ylabel) << "\n";
  g << "set grid ytics\nset key outside right top\nset yrange [0:*]\n";
  for (size_t s = 0; s < c.series.size(); ++s) {
    g << block << s << " << EOD\n";
    for (const auto& [x, y] : c.series[s].points) g << num(x) << " " << num(y) << "\n";
    g << "EOD\n";
  }
  std::vector<std::string> plots;
  if (c.kind == "lines") {
    if (c.logx) g << "set logscale x 2\nset format x '%.0b%BB'\n";
    for (size_t s = 0; s < c.series.size(); ++s)
      plots.push_back(block + std::to_string(s) + " using 1:2 with linespoints pt 7 ps 0.8 title " +
                      gp_quote(c.series[s].name));
  } else {
    size_t n = c.labels.size();
    g << "set xrange [-0.6:" << num(n - 0.4) << "]\n";
    if (c.kind == "bars") {
      g << "set xtics rotate by -45 font ',9' (";
      for (size_t i = 0; i < n; ++i) g << (i ? ", " : "") << gp_quote(c.labels[i]) << " " << i;
      g << ")\n";
      double w = 0.8 / std::max<size_t>(1, c.series.size());
      g << "set style fill solid 0.8 border -1\nset boxwidth " << num(w) << " absolute\n";
      for (size_t s = 0; s < c.series.size(); ++s) {
        double off = -0.4 + w * (s + 0.5);
        plots.push_back(block + std::to_string(s) + " using ($1+" + num(off) +
                        "):2 with boxes title " + gp_quote(c.series[s].name));
      }
    } else {
      g << "set xtics out\n";
      for (size_t s = 0; s < c.series.size(); ++s)
        plots.push_back(block + std::to_string(s) + " using 1:2 with points pt 7 ps 0.5 title " +
                        gp_quote(c.series[s].name));
    }
  }
  for (const auto& l : c.spec_lines)
    plots.push_back(num(l.value) + " with lines dt 2 lw 2 lc rgb 'red' title " + gp_quote(l.label));
  g << "plot ";
  for (size_t i = 0; i < plots.size(); ++i) g << (i ? ", \\\n     " : "") << plots[i];
  g << "\n";
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
