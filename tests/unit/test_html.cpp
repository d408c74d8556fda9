// Charts and report.html on tests/fixtures/results/fleet-4x8 (the in-browser checks are in
// tests/integration/reports_html.sh).
#include <gtest/gtest.h>

#include <filesystem>

#include "records/spec.hpp"
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
  ASSERT_EQ(charts.size(), 9u);
  const Chart& bus = charts[0];
  EXPECT_EQ(bus.kind, "lines");
  EXPECT_TRUE(bus.logx);
  ASSERT_EQ(bus.series.size(), 1u);
  EXPECT_EQ(bus.series[0].name, "all_reduce backend=nccl");
  ASSERT_EQ(bus.series[0].points.size(), 5u);
  // busbw = 400 * S / (S + 2^20) in the fixture: 2^20 bytes -> 200 GB/s.
  EXPECT_DOUBLE_EQ(bus.series[0].points[2].first, 1048576.0);
  EXPECT_DOUBLE_EQ(bus.series[0].points[2].second, 200.0);
  const Chart& dl = charts[1];
  EXPECT_EQ(dl.title, "Dataloader: samples/s against workers");
  EXPECT_EQ(dl.series.size(), 4u);  // one per host
  EXPECT_EQ(dl.records, 16);
  const Chart& gemm = charts[3];
  EXPECT_EQ(gemm.title, "compute.gemm tflops per GPU");
  EXPECT_EQ(gemm.kind, "bars");
  EXPECT_EQ(gemm.records, 32);
  ASSERT_EQ(gemm.labels.size(), 32u);
  EXPECT_EQ(gemm.labels[11], "node02/gpu3");
  EXPECT_DOUBLE_EQ(gemm.series[0].points[11].second, 600.0);
  ASSERT_EQ(gemm.spec_lines.size(), 1u);
  EXPECT_DOUBLE_EQ(gemm.spec_lines[0].value, 600.0);
  EXPECT_EQ(gemm.spec_lines[0].label, "spec gemm.bf16 (dtype=bf16) >= 600 TFLOP/s");
  const Chart& copy = charts[5];
  EXPECT_EQ(copy.title, "compute.host_device_copy bandwidth per GPU");
  EXPECT_EQ(copy.series.size(), 2u);  // d2h and h2d
  EXPECT_EQ(copy.records, 64);
  EXPECT_EQ(charts[6].title, "io.fio bandwidth per node");
  EXPECT_EQ(charts[7].title, "io.fio iops per node");
}

TEST(Charts, GnuplotScript) {
  auto charts = build_charts(fx().report);
  std::string g = gnuplot_script(charts[3], "/tmp/x.svg");
  EXPECT_NE(g.find("set terminal svg"), std::string::npos);
  EXPECT_NE(g.find("set output '/tmp/x.svg'"), std::string::npos);
  EXPECT_NE(g.find("$chart4_0 << EOD\n0 712\n"), std::string::npos) << g;
  EXPECT_NE(g.find("'node02/gpu3' 11"), std::string::npos);
  EXPECT_NE(g.find("600 with lines dt 2"), std::string::npos);
  EXPECT_EQ(count(g, " with boxes "), 1u);
  std::string bus = gnuplot_script(charts[0]);
  EXPECT_NE(bus.find("set logscale x 2"), std::string::npos);
  EXPECT_EQ(bus.find("set output"), std::string::npos);
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
}

TEST(Html, SelfContainedWithoutGnuplot) {
  std::string h = render_html(fx().report, "");
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_EQ(h.find("src="), std::string::npos);
  EXPECT_EQ(h.find("http"), std::string::npos);  // no URL at all without the SVG namespaces
  EXPECT_NE(h.find("gnuplot was not found on PATH, so the 9 chart(s) are omitted"),
            std::string::npos);
  // One verdict row and one spec row per requirement.
  EXPECT_EQ(count(h, "<td><code>gemm.bf16</code></td>"), 2u);
  EXPECT_NE(h.find("<td class=\"o o-PASS\">PASS</td>"), std::string::npos);
  EXPECT_NE(h.find("<pre class=\"failing-hosts\">node02\nnode03\nnode04\n</pre>"),
            std::string::npos);
  EXPECT_NE(h.find("<td>GPU-c0de0004-0000-4000-8000-000000000007</td><td>00000000:DF:00.0</td>"),
            std::string::npos);
  EXPECT_EQ(count(h, "<details>"), 4u);  // GPUs and NICs of each host
  EXPECT_EQ(h.substr(h.size() - 8), "</html>\n");
}

TEST(Html, ChartsWhenGnuplotIsInstalled) {
  std::string gp = find_gnuplot();
  if (gp.empty()) GTEST_SKIP() << "gnuplot not installed";
  std::string h = render_html(fx().report, gp);
  EXPECT_EQ(count(h, "<figure class=\"chart\""), 9u);
  EXPECT_EQ(count(h, "<svg"), 9u);
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
