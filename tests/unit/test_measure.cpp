// The measurement loop (bench/core/measure.hpp) without mpirun: the lock-step reduction is a
// function, so a peer can be simulated (slower, failing).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"
#include "core/measure.hpp"

namespace clusterbench {
namespace {

/// A batch that reports `per_op` seconds per operation, counting its calls.
struct FakeBatch {
  double per_op;
  int calls = 0;
  double operator()(long long n) {
    ++calls;
    return static_cast<double>(n) * per_op;
  }
};

/// One rank alone: the reduction changes nothing.
const ReduceMax kAlone = [](std::vector<double>&) {};

LoopSpec spec_of(const std::string& name, bool combine_max = false) {
  LoopSpec s;
  s.name = name;
  s.min_time = 0.05;
  s.combine_max = combine_max;
  return s;
}

TEST(Measure, BatchIsCalibratedToATwentiethOfMinTime) {
  GbenchCollector reporter(false);
  FakeBatch op{1e-4};
  LoopResult r = measure(spec_of("t/calibrate"), kAlone, reporter, std::ref(op));
  // min_time / 20 = 2.5 ms of 0.1 ms operations: 25 per batch.
  EXPECT_EQ(r.batch, 25);
  EXPECT_DOUBLE_EQ(r.stats.median, 1e-4);
  EXPECT_DOUBLE_EQ(r.stats.min, 1e-4);
  EXPECT_DOUBLE_EQ(r.stats.spread, 0);
  // Google Benchmark stops at min_time of manual time: 0.05 s / 2.5 ms = 20 iterations.
  EXPECT_GE(r.stats.n, 20);
  EXPECT_EQ(r.paired.n, 0);
  EXPECT_EQ(reporter.runs(), 1u);
}

TEST(Measure, ALongOperationStillGetsFiveSamples) {
  // 20 ms operations against min_time 50 ms: one per batch, and 5 of them (0.1 s) fill
  // min_time, so the loop runs exactly 5 timed iterations instead of the 3 that 0.05 s allows.
  EXPECT_TRUE(fixed_iterations(0.05, 0.02));
  EXPECT_TRUE(fixed_iterations(0.05, 0.01));
  EXPECT_FALSE(fixed_iterations(0.05, 0.005));
  GbenchCollector reporter(false);
  FakeBatch op{0.02};
  LoopResult r = measure(spec_of("t/long"), kAlone, reporter, std::ref(op));
  EXPECT_EQ(r.batch, 1);
  EXPECT_EQ(r.stats.n, kMinSamples);
  EXPECT_EQ(r.samples.size(), static_cast<size_t>(kMinSamples));
  EXPECT_DOUBLE_EQ(r.samples.front(), 0.02);
  // 5 ms operations: 5 of them (25 ms) do not fill 50 ms; Google Benchmark's tries keep more.
  FakeBatch shorter{0.005};
  EXPECT_GE(measure(spec_of("t/shorter"), kAlone, reporter, std::ref(shorter)).stats.n,
            kMinSamples);
}

// One round of a case spread over 5 rounds (--rounds 5) measures for min_time / 5 = 10 ms and
// takes ceil(5 / 5) = 1 sample of a long operation: the rounds together give the 5, so a large
// GEMM costs 5 rounds x 2 operations (calibration + sample), not 5 x 6.
TEST(Measure, ALongOperationInARoundTakesItsShareOfTheSamples) {
  EXPECT_TRUE(fixed_iterations(0.01, 0.02, 1));
  EXPECT_FALSE(fixed_iterations(0.05, 0.02, 1));  // 1 x 20 ms does not fill 50 ms
  EXPECT_EQ(loop_samples(0), kMinSamples);
  EXPECT_EQ(loop_samples(2), 2);
  EXPECT_DOUBLE_EQ(loop_estimate_s(0.01, 0.02, 1), 0.04);  // calibration + 1 sample
  EXPECT_DOUBLE_EQ(loop_estimate_s(0.01, 0.02), 0.12);     // calibration + 5 samples
  GbenchCollector reporter(false);
  FakeBatch op{0.02};
  LoopSpec spec = spec_of("t/round");
  spec.min_time = 0.01, spec.samples = 1;
  LoopResult r = measure(spec, kAlone, reporter, std::ref(op));
  EXPECT_EQ(r.stats.n, 1);
  EXPECT_EQ(op.calls, 2);  // the calibration and the one timed sample
}

TEST(Measure, SlowestRankTimeWithCombineMaxOwnTimeOtherwise) {
  // A peer twice as slow: the reduction of {time, failed} gives its time.
  const ReduceMax slower_peer = [](std::vector<double>& v) {
    if (v.size() == 2) v[0] = std::max(v[0], 2 * v[0]);
  };
  GbenchCollector reporter(false);
  FakeBatch a{1e-4}, b{1e-4};
  LoopResult own = measure(spec_of("t/own"), slower_peer, reporter, std::ref(a));
  LoopResult max = measure(spec_of("t/max", true), slower_peer, reporter, std::ref(b));
  EXPECT_DOUBLE_EQ(own.stats.median, 1e-4);
  EXPECT_DOUBLE_EQ(max.stats.median, 2e-4);
  // Both ranks iterate on the slowest time: 0.05 s / (25 x 0.2 ms) = 10 iterations.
  EXPECT_GE(max.stats.n, 10);
  EXPECT_LT(max.stats.n, own.stats.n * 2);
}

TEST(Measure, AnErrorOnThisRankIsRethrown) {
  GbenchCollector reporter(false);
  int calls = 0;
  auto batch = [&](long long n) -> double {
    if (++calls == 3) throw std::runtime_error("boom on the third batch");
    return static_cast<double>(n) * 1e-4;
  };
  EXPECT_THROW(
      {
        try {
          measure(spec_of("t/error"), kAlone, reporter, batch);
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "boom on the third batch");
          throw;
        }
      },
      std::runtime_error);
}

TEST(Measure, APeerFailureStopsThisRankWithAMessage) {
  int reductions = 0;
  const ReduceMax failing_peer = [&](std::vector<double>& v) {
    if (v.size() == 2 && ++reductions == 2) v[1] = 1;  // the peer's error flag
  };
  GbenchCollector reporter(false);
  FakeBatch op{1e-4};
  try {
    measure(spec_of("t/peer"), failing_peer, reporter, std::ref(op));
    FAIL() << "expected the peer's failure";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "a peer rank failed this case (see its record)");
  }
  EXPECT_EQ(reductions, 2);  // no iteration after the failure
}

TEST(Measure, AbortRunLeavesWithoutTheLockStep) {
  int reductions = 0;
  const ReduceMax count = [&](std::vector<double>& v) { reductions += v.size() == 2; };
  GbenchCollector reporter(false);
  int calls = 0;
  auto batch = [&](long long n) -> double {
    if (++calls == 3) throw AbortRun("communicator aborted");
    return static_cast<double>(n) * 1e-4;
  };
  EXPECT_THROW(measure(spec_of("t/abort"), count, reporter, batch), AbortRun);
  EXPECT_EQ(reductions, 1);  // the second batch's; none for the third (the calibration is 1st)
}

TEST(Measure, PairedReferenceRunsAfterEachBatch) {
  GbenchCollector reporter(false);
  FakeBatch op{1e-4}, ref{3e-4};
  LoopResult r = measure(spec_of("t/paired"), kAlone, reporter, std::ref(op), std::ref(ref));
  EXPECT_DOUBLE_EQ(r.paired.median, 3e-4);
  EXPECT_EQ(r.paired.n, r.stats.n);
}

TEST(Measure, SteadyClockTimesABatchThatReturnsNegative) {
  GbenchCollector reporter(false);
  auto batch = [](long long n) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200 * n);
    while (std::chrono::steady_clock::now() < until) {
    }
    return -1.0;
  };
  LoopResult r = measure(spec_of("t/clock"), kAlone, reporter, batch);
  EXPECT_GE(r.stats.min, 2e-4);
  EXPECT_LT(r.stats.median, 2e-3);  // a busy 2-core machine may stretch it, not tenfold
}

TEST(Measure, GbenchJsonKeepsEarlierEntriesOnResume) {
  const std::string path = testing::TempDir() + "/gbench-" + std::to_string(getpid()) + ".json";
  {
    GbenchCollector first(false);
    FakeBatch a{1e-4}, b{1e-4};
    measure(spec_of("t/a"), kAlone, first, std::ref(a));
    measure(spec_of("t/b"), kAlone, first, std::ref(b));
    first.write_json(path, false);
  }
  GbenchCollector second(false);
  FakeBatch b{2e-4};
  LoopResult r = measure(spec_of("t/b"), kAlone, second, std::ref(b));
  second.write_json(path, true);
  json j = read_json_file(path);
  std::vector<std::string> names;
  for (const auto& e : j["benchmarks"]) names.push_back(e["name"]);
  ASSERT_EQ(names.size(), 2u) << j.dump();
  // Google Benchmark adds the loop's settings to an entry's name.
  EXPECT_EQ(names[0].rfind("t/a/min_time:0.050", 0), 0u) << names[0];  // kept from the earlier file
  EXPECT_EQ(names[1].rfind("t/b/min_time:0.050", 0), 0u)
      << names[1];  // measured again: the new one
  // Microseconds per iteration: one batch of r.batch operations of 0.2 ms.
  EXPECT_EQ(r.batch, 13);
  EXPECT_NEAR(j["benchmarks"][1]["real_time"].get<double>(), 13 * 2e-4 * 1e6, 1e-6);
  std::filesystem::remove(path);
}

// A benchmark declares the work of one operation; the rate comes from the times (work.hpp).
TEST(Work, RatesComeFromTheDeclaredWorkAndTheTimes) {
  const Work bytes = Work::bytes(2e9), flop = Work::flop(4e12);
  EXPECT_EQ(bytes.unit, "GB/s");
  EXPECT_DOUBLE_EQ(bytes.rate(0.5), 4);  // 2e9 B in 0.5 s: 4 GB/s
  EXPECT_EQ(flop.unit, "TFLOP/s");
  EXPECT_DOUBLE_EQ(flop.rate(2), 2);  // 4e12 FLOP in 2 s: 2 TFLOP/s
  EXPECT_EQ(bytes.rate(0), 0);        // no time, no rate
  const Metric m = rate_metric("busbw", bytes, 0.5, {0.25, 0.5, 1});
  EXPECT_DOUBLE_EQ(m.value, 4);
  EXPECT_EQ(m.reps, (std::vector<double>{8, 4, 2}));
  EXPECT_DOUBLE_EQ(m.work, 2);  // GB per operation: compare reads the time per operation
  EXPECT_TRUE(m.higher_is_better);
  const Metric t = time_metric("time", 2e-6, {1e-6, 3e-6});
  EXPECT_EQ(t.unit, "us");
  EXPECT_DOUBLE_EQ(t.value, 2);
  EXPECT_FALSE(t.higher_is_better);
  EXPECT_EQ(t.reps.size(), 2u);
  EXPECT_DOUBLE_EQ(gb_per_s(3e9), 3);
  EXPECT_DOUBLE_EQ(terabytes(3.84e12), 3.84);
  EXPECT_DOUBLE_EQ(microseconds(2.5e-6), 2.5);
}

}  // namespace
}  // namespace clusterbench
