// The measurement loop (docs/design.md "Measurement loop"): Google Benchmark runs
// one case's timed batches in lock-step across the case's ranks. Each iteration times a batch
// of operations; every rank keeps its own samples, and Google Benchmark is given the slowest
// rank's time (a max-reduction that also carries every rank's error flag), so that all ranks take
// the same iteration decisions and stop together.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench {

/// Element-wise max over the case's ranks, in place (Group::allreduce_max; identity on one rank).
using ReduceMax = std::function<void(std::vector<double>&)>;

/// Fewest samples a loop keeps: the repetitions a compare needs (docs/compare.md).
inline constexpr int kMinSamples = 5;

/// One timed loop.
struct LoopSpec {
  std::string name;           ///< Google Benchmark entry: "<id>/<params>[/<label>]"
  double min_time = 0.05;     ///< seconds of measurement (MinTime; warm-up min_time / 5)
  bool combine_max = false;   ///< stats of the slowest rank's times (collectives) or this rank's
  int samples = kMinSamples;  ///< timed iterations of a loop of long operations (fixed_iterations)
};

/// What a loop measured, seconds per operation.
struct LoopResult {
  TimeStats stats;              ///< this rank's samples, or the slowest rank's with combine_max
  TimeStats paired;             ///< the paired reference's samples (n = 0 without one)
  long long batch = 0;          ///< operations per timed iteration
  std::vector<double> samples;  ///< the samples of `stats`, seconds per operation, in order
};

/// Whether a loop whose one operation takes `op_s` (a batch of its own) runs exactly `samples`
/// (kMinSamples; fewer in one round of --rounds) timed iterations instead of measuring for
/// `min_time`: when that many take at least min_time, so that the suite's time would keep fewer.
bool fixed_iterations(double min_time, double op_s, int samples = kMinSamples);

/// The timed iterations of a loop of long operations from Settings::loop_samples (0: none set):
/// kMinSamples, or fewer in one round of a case spread over rounds.
int loop_samples(int settings_samples);

/// Runs the loop. `batch(n)` performs n operations and returns the seconds it measured itself,
/// or a negative value for steady_clock. The batch size n makes one batch about min_time / 20,
/// from one calibration operation (the slowest rank's); an operation longer than that runs
/// alone, and one so long that kMinSamples of them fill min_time runs exactly kMinSamples times
/// (fixed_iterations), so that every loop keeps at least kMinSamples samples. `paired(n)`,
/// when given, runs after each timed batch, outside the timing. An exception in `batch` or `paired`
/// on this rank stops every rank and is rethrown here; a peer's failure throws
/// std::runtime_error("a peer rank failed this case (see its record)"). AbortRun (core/error.hpp: a
/// communicator whose peers wait inside the operation) leaves at once, without the lock-step
/// reduction.
LoopResult measure(const LoopSpec& spec, const ReduceMax& reduce_max,
                   benchmark::BenchmarkReporter& reporter,
                   const std::function<double(long long)>& batch,
                   const std::function<double(long long)>& paired = nullptr);

/// Collects Google Benchmark's runs of a whole run for gbench.json. The console shows one line
/// per case instead (core/case_line.hpp); `console` says whether this rank prints (rank 0).
class GbenchCollector : public benchmark::BenchmarkReporter {
 public:
  explicit GbenchCollector(bool console);
  bool console() const { return console_; }
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  /// Writes every collected run once, with Google Benchmark's JSON reporter (its file reporter
  /// truncates its file at every call). With `merge_earlier` the entries of an existing file
  /// that this run did not measure again (by name) are kept (--resume).
  void write_json(const std::string& path, bool merge_earlier) const;
  size_t runs() const { return runs_.size(); }

 private:
  bool console_;
  std::vector<Run> runs_;
};

}  // namespace clusterbench
