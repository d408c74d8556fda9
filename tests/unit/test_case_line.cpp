// The console's line per finished case (core/case_line.hpp): the headline metric with its
// repetitions and spread, failures and waivers with their reason, and the run's progress.
#include <gtest/gtest.h>

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
  EXPECT_EQ(progress_prefix(5, 19, 12.4, 30.6), "[5/19, 12 s, about 31 s left]");
  EXPECT_EQ(progress_prefix(19, 19, 1234.5, -2), "[19/19, 1235 s, about 0 s left]");
  EXPECT_EQ(console_number(0.102516), "0.1025");
  EXPECT_EQ(console_number(2.61034), "2.61");
}

}  // namespace
}  // namespace clusterbench
