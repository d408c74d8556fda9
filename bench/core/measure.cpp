// The measurement loop (measure.hpp).
#include "core/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <fstream>
#include <iostream>
#include <set>

#include "core/api/error.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

namespace {

using Clock = std::chrono::steady_clock;

/// Seconds of `batch(n)`: its own measurement, or steady_clock's when it returns a negative value.
double timed(const std::function<double(long long)>& batch, long long n) {
  auto t0 = Clock::now();
  double t = batch(n);
  if (t < 0) t = std::chrono::duration<double>(Clock::now() - t0).count();
  return t;
}

/// One loop's state while Google Benchmark iterates.
struct Loop {
  const LoopSpec& spec;
  const ReduceMax& reduce_max;
  const std::function<double(long long)>& batch;
  const std::function<double(long long)>& paired;
  long long n = 1;
  std::vector<double> own, slowest, reference;
  std::exception_ptr error;
  bool peer_failed = false;

  /// One timed batch, reduced across ranks; false when the loop must stop.
  bool iterate(benchmark::State& st) {
    std::vector<double> v = {0, 0};  // {seconds of the batch, any rank failed}
    try {
      v[0] = timed(batch, n);
    } catch (const AbortRun&) {
      throw;  // the run ends now: peers may wait inside the operation, not in the lock-step
    } catch (...) {
      error = std::current_exception();
      v[1] = 1;
    }
    const double mine = v[0];
    try {
      reduce_max(v);
    } catch (...) {
      if (!error) error = std::current_exception();
      st.SkipWithError("lock-step reduction failed");
      return false;
    }
    if (v[1] > 0) {
      peer_failed = true;
      st.SkipWithError("a rank failed");
      return false;
    }
    st.SetIterationTime(v[0]);
    own.push_back(mine / static_cast<double>(n));
    slowest.push_back(v[0] / static_cast<double>(n));
    return !paired || run_paired(st);
  }

  /// The paired reference after a timed batch, outside the entry's timing.
  bool run_paired(benchmark::State& st) {
    st.PauseTiming();
    try {
      reference.push_back(paired(n) / static_cast<double>(n));
    } catch (const AbortRun&) {
      throw;
    } catch (...) {
      error = std::current_exception();
    }
    st.ResumeTiming();
    if (!error) return true;
    st.SkipWithError("the paired reference failed");
    return false;
  }

  void operator()(benchmark::State& st) {
    // Google Benchmark runs the function again after its warm-up: once any rank failed (every
    // rank learnt it from the same reduction), no rank iterates any more.
    if (peer_failed || error) {
      st.SkipWithError("a rank failed");  // before the loop: it does not run
      for (auto _ : st) {
      }
      return;
    }
    own.clear(), slowest.clear(), reference.clear();
    for (auto _ : st)
      if (!iterate(st)) break;
    st.counters["batch"] = static_cast<double>(n);
  }
};

}  // namespace

bool fixed_iterations(double min_time, double op_s, int samples) {
  return samples * op_s >= min_time;
}

int loop_samples(int settings_samples) {
  return settings_samples > 0 ? settings_samples : kMinSamples;
}

LoopResult measure(const LoopSpec& spec, const ReduceMax& reduce_max,
                   benchmark::BenchmarkReporter& reporter,
                   const std::function<double(long long)>& batch,
                   const std::function<double(long long)>& paired) {
  Loop loop{spec, reduce_max, batch, paired, 1, {}, {}, {}, nullptr, false};
  // Calibrate: one operation (this also warms up); the slowest rank's time decides the batch.
  const double t1 = timed(batch, 1);
  const double target = spec.min_time / 20.0;
  std::vector<double> nv = {t1 > 0 && t1 < target ? std::ceil(target / t1) : 1.0};
  reduce_max(nv);
  loop.n = static_cast<long long>(nv[0]);
  // A batch of several operations is about min_time / 20: some 20 fit. One operation longer
  // than that is a batch of its own, and when `samples` of them (5; fewer in a round of --rounds)
  // fill min_time the loop runs exactly that many: the slowest rank's operation decides, so that
  // every rank decides the same.
  std::vector<double> slowest_op = {t1};
  reduce_max(slowest_op);
  const bool fixed = loop.n == 1 && fixed_iterations(spec.min_time, slowest_op[0], spec.samples);

  auto* reg =
      benchmark::RegisterBenchmark(spec.name.c_str(), [&loop](benchmark::State& st) { loop(st); });
  reg->UseManualTime();
  // Microseconds: Google Benchmark's compare.py prints times as integers of the file's unit.
  reg->Unit(benchmark::kMicrosecond);
  if (fixed)  // the calibration operation was its warm-up (Google Benchmark allows none here)
    reg->Iterations(spec.samples);
  else
#if CLUSTERBENCH_GBENCH_WARMUP
    reg->MinTime(spec.min_time)->MinWarmUpTime(spec.min_time / 5);
#else  // Google Benchmark < 1.6.2 (Ubuntu 22.04's 1.6.1): the calibration operation is the warm-up
    reg->MinTime(spec.min_time);
#endif
  // Unregistered however the loop ends (AbortRun leaves through Google Benchmark): a later loop
  // must not run this one's entry, whose state is gone.
  struct Unregister {
    ~Unregister() { benchmark::ClearRegisteredBenchmarks(); }
  } unregister;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  if (loop.error) std::rethrow_exception(loop.error);
  // Every rank stops together; a rank whose own batches all succeeded names the failing peer
  // instead of recording the samples it had before the stop.
  if (loop.peer_failed || loop.own.empty())
    throw std::runtime_error("a peer rank failed this case (see its record)");
  LoopResult r;
  r.samples = spec.combine_max ? loop.slowest : loop.own;
  r.stats = compute_stats(r.samples);
  r.paired = compute_stats(loop.reference);
  r.batch = loop.n;
  return r;
}

GbenchCollector::GbenchCollector(bool console) : console_(console) {}

bool GbenchCollector::ReportContext(const Context&) { return true; }

void GbenchCollector::ReportRuns(const std::vector<Run>& runs) {
  // Collected for gbench.json only: the console gets one line per case with its headline number
  // (core/case_line.hpp), not Google Benchmark's batch times.
  runs_.insert(runs_.end(), runs.begin(), runs.end());
}

namespace {

/// Keeps the entries of `earlier` that `path` (just written) does not hold by name.
void merge_earlier_entries(const std::string& path, const json& earlier) {
  std::ifstream in(path);
  json now = json::parse(in);
  std::set<std::string> names;
  for (const auto& b : now["benchmarks"]) names.insert(b.value("name", ""));
  json merged = json::array();
  for (const auto& b : earlier["benchmarks"])
    if (!names.count(b.value("name", ""))) merged.push_back(b);
  for (const auto& b : now["benchmarks"]) merged.push_back(b);
  now["benchmarks"] = std::move(merged);
  write_file_atomic(path, dump_json(now, 2) + "\n");
}

}  // namespace

void GbenchCollector::write_json(const std::string& path, bool merge_earlier) const {
  json earlier;
  if (merge_earlier) {
    std::ifstream in(path);
    try {
      if (in) earlier = json::parse(in);
    } catch (const std::exception& e) {
      std::cerr << "clusterbench: " << path << ": earlier entries not kept (" << e.what() << ")\n";
    }
  }
  {
    std::ofstream out(path);
    benchmark::JSONReporter json_reporter;
    json_reporter.SetOutputStream(&out);
    json_reporter.SetErrorStream(&std::cerr);
    json_reporter.ReportContext(Context());
    json_reporter.ReportRuns(runs_);
    json_reporter.Finalize();
  }
  if (earlier.is_object() && earlier.contains("benchmarks")) merge_earlier_entries(path, earlier);
}

}  // namespace clusterbench
