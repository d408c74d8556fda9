// Charts and report.html on tests/fixtures/results/fleet-4x8 (the in-browser checks are in
// tests/integration/reports_html.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "records/spec.hpp"
#include "reports/chart_kinds.hpp"
#include "reports/charts.hpp"
#include "reports/html.hpp"

using namespace clusterbench;
using namespace clusterbench::report;

namespace {

struct Fixture {
  RunDir run = read_run_dir(std::string(CB_FIXTURES) + "/results/fleet-4x8");
  Report report =
      make_report(run, load_spec(std::string(CB_FIXTURES) + "/results/fleet-4x8/spec.json"));
};

const Fixture& fx() {
  static const Fixture f;
  return f;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(Charts, WhatTheFleetFixtureAllows) {
  auto charts = build_charts(fx().report);
  ASSERT_EQ(charts.size(), 5u);
  // The GPU row as a nodes x GPUs heatmap, coloured by percent of its threshold.
  const Chart& gemm = charts[0];
  EXPECT_EQ(gemm.title, "gemm.bf16: Each GPU's BF16 GEMM >= 600 TFLOP/s");
  EXPECT_EQ(gemm.kind, "heatmap");
  EXPECT_EQ(gemm.records, 32);
  ASSERT_EQ(gemm.labels.size(), 8u);
  EXPECT_EQ(gemm.labels[3], "GPU3");
  EXPECT_EQ(gemm.ylabels, (std::vector<std::string>{"node01", "node02", "node03", "node04"}));
  EXPECT_EQ(gemm.colour_label, "% of the threshold >= 600 TFLOP/s");
  ASSERT_EQ(gemm.cells.size(), 32u);
  auto cell = [&](size_t gpu, size_t node) {
    for (const auto& c : gemm.cells)
      if (c.x == gpu && c.y == node) return c;
    ADD_FAILURE() << "no cell " << gpu << "," << node;
    return Cell{};
  };
  // node02 GPU3 is at the threshold (PASS) and a fleet outlier; node01 GPU0 is 712 = 118.7%.
  EXPECT_DOUBLE_EQ(cell(3, 1).value, 600.0);
  EXPECT_DOUBLE_EQ(cell(3, 1).percent, 100.0);
  EXPECT_EQ(cell(3, 1).mark, "outlier");
  EXPECT_NEAR(cell(0, 0).percent, 100.0 * 712 / 600, 1e-9);
  EXPECT_EQ(cell(0, 0).mark, "");
  EXPECT_EQ(cell(0, 2).mark, "outlier");  // node03 GPU0, 640
  // STREAM: a bar group per kernel, a bar per node, the triad row's threshold on its group.
  const Chart& stream = charts[1];
  EXPECT_EQ(stream.kind, "groups");
  EXPECT_EQ(stream.labels, (std::vector<std::string>{"triad"}));
  ASSERT_EQ(stream.series.size(), 4u);
  EXPECT_EQ(stream.series[3].name, "node04");
  ASSERT_EQ(stream.group_lines.size(), 1u);
  EXPECT_DOUBLE_EQ(stream.group_lines[0].value, 100.0);
  EXPECT_EQ(stream.group_lines[0].label, "spec host.triad >= 100 GB/s");
  // busbw against size, log-log, one chart per backend, one line per collective.
  const Chart& bus = charts[2];
  EXPECT_EQ(bus.title, "Collectives: bus bandwidth against message size (backend=nccl, 4 nodes)");
  EXPECT_TRUE(bus.logx && bus.logy);
  ASSERT_EQ(bus.series.size(), 1u);
  EXPECT_EQ(bus.series[0].name, "all_reduce");
  ASSERT_EQ(bus.series[0].points.size(), 5u);
  // busbw = 400 * S / (S + 2^20) in the fixture: 2^20 bytes -> 200 GB/s.
  EXPECT_DOUBLE_EQ(bus.series[0].points[2].first, 1048576.0);
  EXPECT_DOUBLE_EQ(bus.series[0].points[2].second, 200.0);
  const Chart& dl = charts[3];
  EXPECT_EQ(dl.title, "Dataloader: samples/s against workers");
  EXPECT_EQ(dl.series.size(), 4u);  // one per host
  EXPECT_EQ(dl.records, 16);
  ASSERT_TRUE(dl.mark_x);
  EXPECT_EQ(*dl.mark_x, 8.0);
  // A node row no family charts: a bar per node with its threshold.
  const Chart& fio = charts[4];
  EXPECT_EQ(fio.title, "io.seq_read: fio sequential read >= 5 GB/s per node");
  EXPECT_EQ(fio.kind, "bars");
  EXPECT_EQ(fio.records, 4);
  ASSERT_EQ(fio.spec_lines.size(), 1u);
  EXPECT_DOUBLE_EQ(fio.spec_lines[0].value, 5.0);
}

namespace {

/// The fleet fixture with node02 GPU3's BF16 GEMM at `tflops`, and a STREAM copy record on
/// node01 (a kernel no row judges).
Report edited_fleet(double tflops) {
  RunDir run = fx().run;
  bool edited = false;
  std::vector<ResultRecord> extra;
  for (auto& r : run.records.records) {
    if (r.benchmark == "compute.gemm" && r.scope.host == "node02" && r.scope.gpu_index == 3)
      for (auto& m : r.metrics)
        if (m.name == "tflops") m.value = tflops, edited = true;
    if (r.benchmark == "compute.memory_bandwidth" && r.scope.host == "node01") {
      ResultRecord copy = r;
      copy.params["kernel"] = "copy";
      copy.case_key = "compute.memory_bandwidth|{\"kernel\":\"copy\"}|node01";
      extra.push_back(copy);
    }
  }
  EXPECT_TRUE(edited && extra.size() == 1);
  for (auto& r : extra) run.records.records.push_back(r);
  return make_report(run, load_spec(std::string(CB_FIXTURES) + "/results/fleet-4x8/spec.json"));
}

}  // namespace

TEST(Charts, AFailingGpuIsOutlinedAndEachGroupHasOnlyItsOwnThreshold) {
  Report r = edited_fleet(560);
  auto charts = build_charts(r);
  ASSERT_GE(charts.size(), 2u);
  const Chart& gemm = charts[0];
  int fails = 0;
  for (const auto& c : gemm.cells)
    if (c.mark == "FAIL") {
      ++fails;
      EXPECT_EQ(gemm.labels[c.x], "GPU3");
      EXPECT_EQ(gemm.ylabels[c.y], "node02");
      EXPECT_NEAR(c.percent, 100.0 * 560 / 600, 1e-9);
    }
  EXPECT_EQ(fails, 1);
  std::string g = gnuplot_script(gemm);
  EXPECT_NE(g.find("3 1 93.33333333 \"560 FAIL\"\n"), std::string::npos) << g;
  EXPECT_NE(g.find("'FAIL (outlined black)'"), std::string::npos);
  const Chart& stream = charts[1];
  EXPECT_EQ(stream.labels, (std::vector<std::string>{"triad", "copy"}));
  ASSERT_EQ(stream.group_lines.size(), 1u);
  EXPECT_EQ(stream.group_lines[0].group, 0u);  // triad's threshold, not drawn over copy
  g = gnuplot_script(stream);
  EXPECT_NE(g.find("-0.45 100\n0.45 100\n"), std::string::npos) << g;
  EXPECT_EQ(g.find("0.55 100"), std::string::npos) << g;
}

// A link row: the node x node matrix, symmetric, the failing link outlined on both sides.
TEST(Charts, TheLinkMatrixAsAHeatmap) {
  RunDir run = fx().run;
  const char* hosts[] = {"node01", "node02", "node03", "node04"};
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b) {
      ResultRecord r;
      r.benchmark = "network.p2p";
      r.params = {{"bytes", 4194304}, {"mode", "unidirectional"}};
      r.scope.kind = ScopeKind::link;
      r.scope.hosts = {hosts[a], hosts[b]};
      r.scope.host = hosts[a];
      const bool slow = a == 1 && b == 2;
      r.metrics = {{"bandwidth", slow ? 5.0 : 24.0, "GB/s", true}};
      r.case_key = make_case_key(r.benchmark, r.params, r.scope);
      run.records.records.push_back(r);
    }
  Spec spec = load_spec(std::string(CB_FIXTURES) + "/results/fleet-4x8/spec.json");
  Requirement row;
  row.id = "net.p2p";
  row.title = "Each link >= 12.5 GB/s";
  row.select.benchmark = "network.p2p";
  row.select.metric = "bandwidth";
  row.scope = "link";
  row.value = 12.5;
  row.unit = "GB/s";
  spec.requirements.push_back(row);
  Report rep = make_report(run, spec);
  auto charts = build_charts(rep);
  auto it = std::find_if(charts.begin(), charts.end(),
                         [](const Chart& c) { return c.title.rfind("net.p2p:", 0) == 0; });
  ASSERT_NE(it, charts.end());
  EXPECT_EQ(it->kind, "heatmap");
  EXPECT_EQ(it->records, 6);
  EXPECT_EQ(it->labels, it->ylabels);
  ASSERT_EQ(it->cells.size(), 12u);  // both halves of the matrix
  int fails = 0;
  for (const auto& c : it->cells) {
    const bool slow = (it->labels[c.x] == "node02" && it->ylabels[c.y] == "node03") ||
                      (it->labels[c.x] == "node03" && it->ylabels[c.y] == "node02");
    EXPECT_EQ(c.mark == "FAIL", slow) << c.x << "," << c.y;
    EXPECT_DOUBLE_EQ(c.percent, slow ? 40.0 : 192.0);
    fails += c.mark == "FAIL";
  }
  EXPECT_EQ(fails, 2);
}

// A latency row no family charts: a bar per node in ms (its values reach 900,000 us), on a log
// axis (they span more than two decades), with its threshold in the same unit.
TEST(Charts, LatenciesInSensibleUnitsOnALogAxis) {
  RunDir run = fx().run;
  const double us[] = {1500, 2500, 900000, 1800};
  const char* hosts[] = {"node01", "node02", "node03", "node04"};
  for (int i = 0; i < 4; ++i) {
    ResultRecord r;
    r.benchmark = "io.fio";
    r.params = {{"profile", "rand_read"}};
    r.scope.host = hosts[i];
    r.metrics = {{"read_clat_p99", us[i], "us", false}};
    r.case_key = make_case_key(r.benchmark, r.params, r.scope);
    run.records.records.push_back(r);
  }
  Spec spec = load_spec(std::string(CB_FIXTURES) + "/results/fleet-4x8/spec.json");
  Requirement row;
  row.id = "io.lat";
  row.title = "rand_read p99 <= 5000 us";
  row.select.benchmark = "io.fio";
  row.select.params = {{"profile", "rand_read"}};
  row.select.metric = "read_clat_p99";
  row.op = "<=";
  row.value = 5000;
  row.unit = "us";
  spec.requirements.push_back(row);
  auto charts = build_charts(make_report(run, spec));
  auto it = std::find_if(charts.begin(), charts.end(),
                         [](const Chart& c) { return c.title.rfind("io.lat:", 0) == 0; });
  ASSERT_NE(it, charts.end());
  EXPECT_EQ(it->ylabel, "read_clat_p99 (ms)");
  EXPECT_TRUE(it->logy);
  ASSERT_EQ(it->series.size(), 1u);
  ASSERT_EQ(it->series[0].points.size(), 4u);
  EXPECT_DOUBLE_EQ(it->series[0].points[2].second, 900.0);
  ASSERT_EQ(it->spec_lines.size(), 1u);
  EXPECT_DOUBLE_EQ(it->spec_lines[0].value, 5.0);
  EXPECT_EQ(it->spec_lines[0].label, "spec io.lat <= 5 ms");
  EXPECT_NE(gnuplot_script(*it).find("set logscale y 10"), std::string::npos);
}

// A '%' in a label is text, not a gnuplot format.
TEST(Charts, PercentInALabelIsText) {
  EXPECT_EQ(gp_tic("disk-100%"), "'disk-100%%'");
  EXPECT_EQ(gp_tic("it's"), "'it''s'");
}

// A GPU row's items are GPUs whatever their host names hold: "node03<->x" is a node, not a link.
TEST(Charts, AHostNamedLikeALinkIsStillANode) {
  RunDir run = fx().run;
  for (auto& r : run.records.records)
    if (r.scope.host == "node03") r.scope.host = "node03<->x";
  for (auto& e : run.run.env)
    if (e.host == "node03") e.host = "node03<->x";
  auto charts = build_charts(
      make_report(run, load_spec(std::string(CB_FIXTURES) + "/results/fleet-4x8/spec.json")));
  ASSERT_FALSE(charts.empty());
  EXPECT_EQ(charts[0].kind, "heatmap");
  EXPECT_EQ(charts[0].records, 32);
  EXPECT_NE(std::find(charts[0].ylabels.begin(), charts[0].ylabels.end(), "node03<->x"),
            charts[0].ylabels.end());
}

// A group a row judges shows the row's metric: read_bw 3 GB/s under a read_bw row, not read +
// write (6 GB/s, which would sit above a 5 GB/s line the row fails); the threshold is drawn.
TEST(Charts, AJudgedGroupShowsTheJudgedMetric) {
  RunDir run = fx().run;
  for (const char* host : {"node01", "node02", "node03", "node04"}) {
    ResultRecord r;
    r.benchmark = "io.fio";
    r.params = {{"profile", "randrw"}};
    r.scope.host = host;
    r.metrics = {{"read_bw", 3.0, "GB/s", true}, {"write_bw", 3.0, "GB/s", true}};
    r.case_key = make_case_key(r.benchmark, r.params, r.scope);
    run.records.records.push_back(r);
  }
  Spec spec = load_spec(std::string(CB_FIXTURES) + "/results/fleet-4x8/spec.json");
  Requirement row;
  row.id = "io.randrw_read";
  row.title = "randrw read >= 5 GB/s";
  row.select.benchmark = "io.fio";
  row.select.params = {{"profile", "randrw"}};
  row.select.metric = "read_bw";
  row.value = 5;
  row.unit = "GB/s";
  spec.requirements.push_back(row);
  auto charts = build_charts(make_report(run, spec));
  auto it = std::find_if(charts.begin(), charts.end(),
                         [](const Chart& c) { return c.title.rfind("fio bandwidth", 0) == 0; });
  ASSERT_NE(it, charts.end());
  ASSERT_EQ(it->labels, (std::vector<std::string>{"randrw"}));
  ASSERT_EQ(it->series.size(), 4u);
  for (const auto& s : it->series) EXPECT_DOUBLE_EQ(s.points.at(0).second, 3.0) << s.name;
  ASSERT_EQ(it->group_lines.size(), 1u);
  EXPECT_DOUBLE_EQ(it->group_lines[0].value, 5.0);
}

TEST(Charts, NoChartOfOnePointOrOfZeros) {
  Chart one;
  one.kind = "bars";
  one.series.push_back({"s", {{0, 5.0}}});
  EXPECT_FALSE(worth_drawing(one));
  Chart zeros = one;
  zeros.series[0].points.push_back({1, 0.0});
  zeros.series[0].points[0].second = 0;
  EXPECT_FALSE(worth_drawing(zeros));
  zeros.series[0].points[1].second = 0.5;
  EXPECT_TRUE(worth_drawing(zeros));
}

TEST(Charts, LegendsInNumericOrder) {
  std::vector<std::string> v = {"workers=16", "workers=2", "workers=1",
                                "node10",     "node9",     "workers=8"};
  std::sort(v.begin(), v.end(), natural_less);
  EXPECT_EQ(v, (std::vector<std::string>{"node9", "node10", "workers=1", "workers=2", "workers=8",
                                         "workers=16"}));
}

TEST(Charts, GnuplotScript) {
  auto charts = build_charts(fx().report);
  std::string g = gnuplot_script(charts[0], "/tmp/x.svg");
  EXPECT_NE(g.find("set terminal svg"), std::string::npos);
  EXPECT_NE(g.find("set output '/tmp/x.svg'"), std::string::npos);
  EXPECT_NE(g.find("with boxxyerror fc palette"), std::string::npos) << g;
  EXPECT_NE(g.find("set palette defined ("), std::string::npos);
  EXPECT_NE(g.find("'node02' 1"), std::string::npos);
  EXPECT_NE(g.find("'GPU3' 3"), std::string::npos);
  std::string bus = gnuplot_script(charts[2]);
  EXPECT_NE(bus.find("set logscale x 2"), std::string::npos);
  EXPECT_NE(bus.find("set logscale y 10"), std::string::npos);
  EXPECT_EQ(bus.find("set output"), std::string::npos);
  std::string dl = gnuplot_script(charts[3]);
  EXPECT_NE(dl.find("set arrow from 8, graph 0 to 8, graph 1"), std::string::npos) << dl;
}

// Text from a run directory or spec (host names, params, row ids) is drawn, never run: gnuplot
// substitutes `...` with a command's output inside double-quoted strings.
TEST(Charts, TextFromRecordsIsNeverACommand) {
  std::string gp = find_gnuplot();
  if (gp.empty()) GTEST_SKIP() << "gnuplot not installed";
  std::string marker = ::testing::TempDir() + "cb-gnuplot-pwned";
  std::filesystem::remove(marker);
  Chart c;
  c.id = "chart-1";
  c.kind = "bars";
  c.title = "t `touch " + marker + "` it's \"q\" \\ back";
  c.xlabel = "x";
  c.ylabel = "y";
  c.labels = {"vm`touch " + marker + "`", "o'brien\nnode"};
  c.series.push_back({"s`touch " + marker + "`", {{0, 1.0}, {1, 2.0}}});
  c.spec_lines.push_back({"row`touch " + marker + "`", 1.5});
  std::string g = gnuplot_script(c);
  EXPECT_NE(g.find("'o''brien node' 1"), std::string::npos) << g;
  std::string err;
  auto svg = render_svg(c, gp, &err);
  ASSERT_TRUE(svg) << err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "gnuplot ran a command from a label";
  EXPECT_NE(svg->find("vm`touch"), std::string::npos);
  EXPECT_NE(svg->find("brien node"), std::string::npos);
  // Heatmaps and bar groups carry host names, row ids and titles too.
  Chart heat;
  heat.id = "chart-2";
  heat.kind = "heatmap";
  heat.title = c.title;
  heat.labels = {"GPU0", "g`touch " + marker + "`"};
  heat.ylabels = {"h`touch " + marker + "`"};
  heat.colour_label = "% `touch " + marker + "`";
  heat.cells = {{0, 0, 1.0, 90.0, "FAIL"}, {1, 0, 2.0, 120.0, ""}};
  Chart groups;
  groups.id = "chart-3";
  groups.kind = "groups";
  groups.title = c.title;
  groups.labels = c.labels;
  groups.series = c.series;
  groups.group_lines.push_back({0, 1.5, "spec `touch " + marker + "`"});
  std::vector<std::string> errors;
  auto svgs = render_svgs({heat, groups}, gp, &errors);
  ASSERT_TRUE(svgs[0] && svgs[1]) << errors[0] << errors[1];
  EXPECT_FALSE(std::filesystem::exists(marker)) << "gnuplot ran a command from a label";
  EXPECT_NE(svgs[0]->find("h`touch"), std::string::npos);
  EXPECT_NE(svgs[1]->find("spec `touch"), std::string::npos);
}

TEST(Html, SelfContainedWithoutGnuplot) {
  std::string h = render_html(fx().report, "");
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_EQ(h.find("src="), std::string::npos);
  EXPECT_EQ(h.find("http"), std::string::npos);  // no URL at all without the SVG namespaces
  EXPECT_NE(h.find("gnuplot was not found on PATH, so the 5 chart(s) are omitted"),
            std::string::npos);
  // One verdict row and one spec row per requirement.
  EXPECT_EQ(count(h, "<td><code>gemm.bf16</code></td>"), 2u);
  EXPECT_NE(h.find("<td class=\"o o-PASS\">PASS</td>"), std::string::npos);
  EXPECT_NE(h.find("<pre class=\"suspect-hosts\">node02\nnode03\nnode04\n</pre>"),
            std::string::npos);
  EXPECT_NE(h.find("<td>GPU-c0de0004-0000-4000-8000-000000000007</td><td>00000000:DF:00.0</td>"),
            std::string::npos);
  EXPECT_EQ(count(h, "<details>"), 4u);  // GPUs and NICs of each host
  EXPECT_EQ(h.substr(h.size() - 8), "</html>\n");
}

// The PDF's cover: the first thing in the page, shown only in print, with the cluster, the dates,
// the spec table and its sha256, the version and every GPU's serial.
TEST(Html, CoverForThePdf) {
  std::string h = render_html(fx().report, "");
  const size_t cover = h.find("<section class=\"cover\" id=\"cover\">");
  ASSERT_NE(cover, std::string::npos);
  EXPECT_LT(cover, h.find("<h1>clusterbench report"));
  EXPECT_NE(h.find(".cover{display:none}"), std::string::npos);
  EXPECT_NE(h.find("@media print{"), std::string::npos);
  EXPECT_NE(h.find(".cover{display:block;page-break-after:always"), std::string::npos);
  const std::string c = h.substr(cover, h.find("</section>", cover) - cover);
  EXPECT_NE(
      c.find("4 nodes: node01, node02, node03, node04<br>32 GPUs: 32 x NVIDIA H100 80GB HBM3"),
      std::string::npos)
      << c;
  EXPECT_NE(c.find("2026-11-30T08:45:00Z to 2026-11-30T08:55:00Z (suite quick, run "
                   "20261130T090000Z-node01)"),
            std::string::npos)
      << c;
  EXPECT_NE(c.find("sha256 <code>" + fx().report.spec_sha256 + "</code>"), std::string::npos);
  EXPECT_NE(c.find("<td>0.1.0-3f2a9c1d7e0b</td>"), std::string::npos) << c;
  EXPECT_NE(c.find("<tr><td>node02</td>"), std::string::npos);
  // Every GPU serial: 1654123000HGG for host H, GPU GG (the fixture's numbering).
  for (int host = 1; host <= 4; ++host)
    for (int gpu = 0; gpu < 8; ++gpu)
      EXPECT_NE(c.find("1654123000" + std::to_string(host) + "0" + std::to_string(gpu)),
                std::string::npos)
          << host << " " << gpu;
}

// A failing run's cover names what failed: the row, how many items, the worst.
TEST(Html, CoverNamesTheFailedRows) {
  std::string h = render_html(edited_fleet(560), "");
  const size_t cover = h.find("<section class=\"cover\"");
  const std::string c = h.substr(cover, h.find("</section>", cover) - cover);
  EXPECT_NE(c.find("<h2>What failed</h2>"), std::string::npos) << c;
  EXPECT_NE(c.find("<li>Each GPU&apos;s BF16 GEMM &gt;= 600 TFLOP/s: 1 of 32 failed; the worst "
                   "node02/gpu3[GPU-c0de0002-0000-4000-8000-000000000003]</li>"),
            std::string::npos)
      << c;
  EXPECT_EQ(render_html(fx().report, "").find("What failed"), std::string::npos);
}

TEST(Html, ChartsWhenGnuplotIsInstalled) {
  std::string gp = find_gnuplot();
  if (gp.empty()) GTEST_SKIP() << "gnuplot not installed";
  std::string h = render_html(fx().report, gp);
  EXPECT_EQ(count(h, "<figure class=\"chart\""), 5u);
  EXPECT_EQ(count(h, "<svg"), 5u);
  EXPECT_EQ(count(h, "<?xml"), 0u);
  EXPECT_EQ(count(h, "chart-error"), 0u);
}

TEST(Html, PdfWithoutChromiumSaysSo) {
  const char* old = std::getenv("PATH");
  std::string saved = old ? old : "";
  setenv("PATH", "/nonexistent", 1);
  std::string err = print_pdf("/tmp/none.html", "/tmp/none.pdf");
  setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(err,
            "--pdf needs Chromium: none of chromium, chromium-browser, google-chrome is on PATH "
            "(Debian: apt-get install chromium)");
}

// Issue 45, item 7: each median drawn with the lowest and highest of its repetitions: the
// datablock carries them, one error bar plot per series follows the data without a legend
// entry, and gnuplot draws them.
TEST(Charts, MediansWithTheirMinMaxRange) {
  RunDir run = fx().run;
  for (auto& r : run.records.records)
    if (r.benchmark == "collectives.all_reduce")
      for (auto& m : r.metrics)
        if (m.name == "busbw") m.reps = {m.value * 0.9, m.value, m.value * 1.2};
  Report rep =
      make_report(run, load_spec(std::string(CB_FIXTURES) + "/results/fleet-4x8/spec.json"));
  auto charts = build_charts(rep);
  auto it = std::find_if(charts.begin(), charts.end(),
                         [](const Chart& c) { return c.title.rfind("Collectives", 0) == 0; });
  ASSERT_NE(it, charts.end());
  ASSERT_EQ(it->series.size(), 1u);
  const Series& s = it->series[0];
  ASSERT_EQ(s.ranges.size(), s.points.size());
  for (size_t i = 0; i < s.points.size(); ++i) {
    EXPECT_DOUBLE_EQ(s.ranges[i].first, s.points[i].second * 0.9);
    EXPECT_DOUBLE_EQ(s.ranges[i].second, s.points[i].second * 1.2);
  }
  const std::string script = gnuplot_script(*it);
  EXPECT_EQ(count(script, "with yerrorbars"), 1u) << script;
  EXPECT_NE(script.find(gp_num(s.points[0].first) + " " + gp_num(s.points[0].second) + " " +
                        gp_num(s.ranges[0].first) + " " + gp_num(s.ranges[0].second) + "\n"),
            std::string::npos)
      << script;
  // Without repetitions (the fixture's own records): no error bars.
  auto plain = build_charts(fx().report);
  for (const auto& c : plain) EXPECT_EQ(gnuplot_script(c).find("yerrorbars"), std::string::npos);
  const std::string gnuplot = find_gnuplot();
  ASSERT_FALSE(gnuplot.empty()) << "gnuplot is not installed (scripts/setup.sh installs it)";
  std::string err;
  auto svg = render_svg(*it, gnuplot, &err);
  ASSERT_TRUE(svg) << err;
  // One error bar per point: gnuplot draws each as a path in the range plot's group (plot 2).
  const auto at = svg->find("<g id=\"gnuplot_plot_2\"");
  ASSERT_NE(at, std::string::npos);
  const auto end = svg->find("<g id=\"gnuplot_plot_3\"", at);
  const std::string group = svg->substr(at, end == std::string::npos ? end : end - at);
  // Each bar is three strokes (the range and its two caps), each a move "M" in gnuplot's paths;
  // a median of 0 has a range of 0 (nothing to draw).
  const size_t ranged = std::count_if(s.ranges.begin(), s.ranges.end(),
                                      [](const auto& r) { return r.first < r.second; });
  EXPECT_GE(ranged, 3u);
  const auto d = group.find("d='");
  ASSERT_NE(d, std::string::npos) << group.substr(0, 3000);
  EXPECT_EQ(count(group.substr(d, group.find('\'', d + 3) - d), "M"), 3 * ranged)
      << group.substr(0, 3000);
}
