// The console's line per finished case (core/case_line.hpp): the headline metric with its
// repetitions and spread, failures and waivers with their reason, and the run's progress.
#include <gtest/gtest.h>

#include <sstream>
#include <thread>
#include <vector>

#include "core/case_line.hpp"

namespace clusterbench {
namespace {

ResultRecord record(Status status, const std::string& message = "") {
  ResultRecord r;
  r.benchmark = "compute.memory_bandwidth";
  r.params = {{"kernel", "copy"}};
  r.scope.kind = ScopeKind::node;
  r.scope.host = "node01";
  r.status = status;
  r.message = message;
  return r;
}

TEST(CaseLine, HeadlineMetricWithRepetitionsAndSpread) {
  ResultRecord r = record(Status::ok);
  // reps 60..64: nearest-rank quartiles 61 and 63, median 62: spread 2 / 62 = 3.2%.
  r.metrics.push_back(Metric("bandwidth", 62.3456, "GB/s", true, {60, 61, 62, 63, 64}));
  r.metrics.push_back(Metric("bandwidth_best", 64, "GB/s"));
  EXPECT_EQ(case_line(r),
            "compute.memory_bandwidth {\"kernel\":\"copy\"} node01: bandwidth 62.35 GB/s (5 reps, "
            "spread 3.2%)");
  r.metrics.front() = Metric("samples_per_s", 40826.1, "samples/s");
  EXPECT_EQ(case_line(r),
            "compute.memory_bandwidth {\"kernel\":\"copy\"} node01: samples_per_s 40826 samples/s");
  r.metrics.front() = Metric("ratio", 1.39103, "ratio");
  EXPECT_EQ(case_line(r), "compute.memory_bandwidth {\"kernel\":\"copy\"} node01: ratio 1.391");
}

TEST(CaseLine, FailedAndWaivedSayWhy) {
  EXPECT_EQ(case_line(record(Status::failed, "fio exited 1")),
            "compute.memory_bandwidth {\"kernel\":\"copy\"} node01: FAILED: fio exited 1");
  EXPECT_EQ(case_line(record(Status::waived, "no NVIDIA GPU on the PCI bus")),
            "compute.memory_bandwidth {\"kernel\":\"copy\"} node01: waived: no NVIDIA GPU on the "
            "PCI bus");
}

TEST(CaseLine, ProgressPrefix) {
  EXPECT_EQ(progress_prefix("5/19", 12.4, 30.6), "[5/19, 12 s, about 31 s left]");
  EXPECT_EQ(progress_prefix("19/19", 1234.5, -2), "[19/19, 1235 s, about 0 s left]");
  EXPECT_EQ(console_number(0.102516), "0.1025");
  EXPECT_EQ(console_number(2.61034), "2.61");
}

// A quiet console gets a line per quiet period while a case runs, and none between cases.
TEST(Heartbeat, SpeaksWhenTheConsoleIsQuietDuringACase) {
  std::ostringstream out;
  std::string between;
  {
    Heartbeat hb(0.3, out, std::chrono::steady_clock::now());
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // no case: nothing
    between = out.str();
    hb.start_case("5/19", "io.fio {\"profile\":\"seq_write\"}", 26.4);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    hb.end_case();
  }
  EXPECT_EQ(between, "");
  const std::string text = out.str();
  size_t lines = 0;
  for (size_t at = text.find("] still running io.fio {\"profile\":\"seq_write\"}: ");
       at != std::string::npos; at = text.find("] still running", at + 1))
    ++lines;
  EXPECT_GE(lines, 2u) << text;  // 1.1 s at one line per 0.3 s quiet (polled every 0.2 s)
  EXPECT_LE(lines, 4u) << text;
  EXPECT_EQ(text.rfind("[5/19, ", 0), 0u) << text;
  EXPECT_NE(text.find(" s so far (estimated 26 s)\n"), std::string::npos) << text;
}

// A case's own lines (a burn-in interval) go out with its place and reset the quiet time; its
// note ("fio run 3 of 5") rides on the next "still running" line; neither without a Heartbeat.
TEST(Heartbeat, CaseLinesAndNotes) {
  console_progress("nobody listens");  // no Heartbeat: nothing, no crash
  std::ostringstream out;
  {
    Heartbeat hb(0.5, out, std::chrono::steady_clock::now());
    hb.start_case("2/7", "io.fio {}", 10);
    progress_note("fio run 3 of 5");
    console_progress("burn-in interval 1/6: vm/rank0 0.1 TFLOP/s");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::string early = out.str();
    EXPECT_EQ(early, "[2/7, 0 s] burn-in interval 1/6: vm/rank0 0.1 TFLOP/s\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    hb.end_case();
  }
  const std::string text = out.str();
  EXPECT_NE(text.find("still running io.fio {}: 1 s so far (estimated 10 s): fio run 3 of 5\n"),
            std::string::npos)
      << text;
  console_progress("gone");  // the Heartbeat ended: nothing
  EXPECT_EQ(text.find("gone"), std::string::npos);
}

// A table that runs over several cases (nccl-tests' rows) stays whole: while it is open, the
// Heartbeat's lines start with "# ", which its readers skip; after its closing lines, or when
// another benchmark starts (the table's last case failed), they do not.
TEST(Heartbeat, LinesInsideAnOpenTableAreComments) {
  std::ostringstream out;
  auto quiet = [] { std::this_thread::sleep_for(std::chrono::milliseconds(650)); };
  std::vector<std::string> parts;
  {
    Heartbeat hb(0.3, out, std::chrono::steady_clock::now());
    hb.start_case("1/3", "collectives.all_reduce {\"bytes\":64}", 0.2);
    hb.table("# header\n  64 rows\n", true);
    quiet();
    hb.end_case();
    hb.start_case("2/3", "collectives.all_reduce {\"bytes\":128}", 0.2);
    quiet();
    hb.table("  128 rows\n# Out of bounds values : 0 OK\n", false);
    hb.end_case();
    hb.start_case("3/3", "io.fio {}", 3);
    quiet();
    hb.table("# header\n", true);
    hb.end_case();
    hb.start_case("4/4", "io.dataloader {}", 3);
    quiet();
    hb.end_case();
  }
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) parts.push_back(l);
  auto first = [&](const std::string& what) {
    for (const auto& l : parts)
      if (l.find("still running " + what) != std::string::npos) return l;
    return std::string("none");
  };
  EXPECT_EQ(parts.at(0), "# header") << out.str();
  EXPECT_EQ(parts.at(1), "  64 rows") << out.str();
  EXPECT_EQ(first("collectives.all_reduce {\"bytes\":64}").rfind("# [1/3, ", 0), 0u) << out.str();
  EXPECT_NE(first("collectives.all_reduce {\"bytes\":64}").find("(estimated under 1 s)"),
            std::string::npos);
  EXPECT_EQ(first("collectives.all_reduce {\"bytes\":128}").rfind("# [2/3, ", 0), 0u) << out.str();
  EXPECT_EQ(first("io.fio").rfind("[3/3, ", 0), 0u) << out.str();
  EXPECT_NE(first("io.fio").find("(estimated 3 s)"), std::string::npos);
  EXPECT_EQ(first("io.dataloader").rfind("[4/4, ", 0), 0u) << out.str();  // a new benchmark
}

}  // namespace
}  // namespace clusterbench
