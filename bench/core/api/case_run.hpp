// CaseRun: what a benchmark's run() is handed for one case on one rank: its params and settings,
// the context of its ranks, the measurement loop (exec), the metrics and records it adds, and the
// services of the run (a table or a line on the console, abort clean-ups, snapshots, signals).
// Part of the public face of bench/core (bench/core/api/).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/api/abort_cleanup.hpp"
#include "core/api/context.hpp"
#include "core/api/gpu_disposition.hpp"
#include "core/api/settings.hpp"
#include "core/api/work.hpp"
#include "records/env_record.hpp"
#include "records/result.hpp"

namespace clusterbench {

/// Per-case measurement state handed to Benchmark::run.
class CaseRun {
 public:
  virtual ~CaseRun() = default;
  virtual const json& params() const = 0;
  virtual const Settings& settings() const = 0;
  virtual const Context& ctx() const = 0;
  virtual const EnvRecord& env() const = 0;
  /// This rank's GPU disposition (a case that needs a GPU only runs where it is `run`).
  virtual const GpuDisposition& gpu() const = 0;
  /// Seconds of measurement per case for this suite (Google Benchmark MinTime).
  virtual double min_time() const = 0;
  /// Ranks taking part in this case (the group its lock-step reductions run over).
  virtual int group_size() const = 0;
  /// The rounds this case is spread over (--rounds; Benchmark::in_rounds), 1 when it runs once.
  /// Its record is then the rounds' merge, which the session prints (docs/compare.md "Rounds").
  virtual int rounds() const { return 1; }
  /// The scope of this rank's record.
  virtual const Scope& scope() const = 0;
  /// Times the work (core/measure.hpp). `batch(n)` performs n operations and returns the seconds
  /// it measured itself (CUDA events), or a negative value to let the framework time it with
  /// steady_clock. The framework warms up, picks n so one iteration is long enough to time, and
  /// runs Google Benchmark iterations in lock-step across the ranks of the case (slowest rank's
  /// time). An exception on any rank makes every rank stop and rethrows it here on that rank;
  /// the other ranks throw an error that names the failing peer. AbortRun (a failed
  /// communicator, whose peers wait inside the operation) leaves at once and ends the run. A case
  /// that times several things (A/B arms) gives each a `label`, which names its Google Benchmark
  /// entry ("<id>/<params>/<label>" in gbench.json); the default leaves it "<id>/<params>".
  /// `paired(n)`, when given, is an A/B reference interleaved with the timed loop: it runs on
  /// every rank right after each timed batch (after the lock-step reduction, outside the timing)
  /// with the same n, and returns the seconds it measured itself for its n operations (already
  /// combined across ranks as it sees fit). paired_stats() holds its per-operation times.
  virtual void exec(const std::function<double(long long n)>& batch, const std::string& label = "",
                    const std::function<double(long long n)>& paired = nullptr) = 0;
  /// Time per operation after exec: this rank's own samples (per_rank) or the slowest rank's.
  virtual const TimeStats& stats() const = 0;
  /// Per-operation times of the last exec's `paired` reference (n = 0 when it had none).
  virtual const TimeStats& paired_stats() const = 0;
  /// Per-operation seconds of the last exec, in order: the samples behind stats().
  virtual const std::vector<double>& samples() const = 0;
  /// A measured value. `reps` holds its value in each repetition (value is their median): a
  /// metric without them is one number that `compare` cannot test against noise.
  void add_metric(const std::string& name, double value, const std::string& unit,
                  bool higher_is_better = true, std::vector<double> reps = {}) {
    add(Metric{name, value, unit, higher_is_better, std::move(reps), 0});
  }
  /// The same, whole (a resolution too).
  virtual void add(Metric m) = 0;
  /// A rate over the last exec from the work one operation does, declared (work.hpp:
  /// Work::bytes, Work::flop, Work::items; nvbench's add_global_memory_reads): value = the rate at
  /// the median seconds per operation, one repetition per sample, Metric::work set.
  void add_rate(const std::string& name, const Work& work);
  /// The same rate at the last exec's fastest operation (its min time): one number, without
  /// repetitions ("bandwidth_best", "tflops_best").
  void add_best_rate(const std::string& name, const Work& work);
  /// add_rate with the work already in `unit` x seconds per operation.
  void add_rate(const std::string& name, double work, const std::string& unit);
  /// A time over the last exec, lower is better: value = median seconds x `scale` (1e6: us),
  /// and one repetition per sample; `resolution` in the metric's unit (Metric::resolution).
  void add_time(const std::string& name, double scale, const std::string& unit,
                double resolution = 0);
  /// Benchmark-specific evidence stored in the record's `extra`.
  virtual void set_extra(const std::string& key, json value) = 0;
  /// Cluster-level cases: one more record for one item of the case (a link: scope kind "link",
  /// hosts {a, b}), written after the case's own record when the case ends ok, with the case's
  /// params and its own metrics, time statistics and extra. Only world rank 0's are written.
  virtual void add_record(const Scope& scope, std::vector<Metric> metrics, const TimeStats& time,
                          json extra) = 0;
  /// Ends the case with this status and message while keeping its metrics and extra: for a
  /// composite case that takes part to the end although its own part could not run (a burn-in
  /// rank whose GPU is waived still joins the all_reduce loop), or an ok case with a note.
  virtual void finish_as(Status status, const std::string& message,
                         const std::optional<ErrorInfo>& error = std::nullopt) = 0;

  // --- Long cases that write as they go (the burn-in soak) -----------------------------------
  /// World rank 0, any thread: appends a record of this case now (a snapshot of a rank's series
  /// so far), completed with the run id, benchmark and case key of its scope. The case's own
  /// final records follow later; read_run_dir keeps the last record of a case key, so a run
  /// killed mid-case keeps its last snapshot. Thread-safe.
  virtual void append_snapshot(ResultRecord rec) = 0;
  /// While the case runs, a SIGTERM/SIGINT/SIGHUP calls `handler(reason)` on the watchdog's
  /// thread instead of aborting the run at once. run.json is first marked aborted (exit 3) with
  /// `reason`. The handler returns nullopt to let the case stop in order (it polls
  /// signal_received()), or the reason to abort now with (the case has written what it must:
  /// no failed record is added for it).
  virtual void on_signal(std::function<std::optional<std::string>(const std::string&)> handler) = 0;
  /// World rank 0: marks run.json aborted (exit 3) with `reason` while the case goes on to its
  /// end in order (a soak stopped by a signal). Other ranks: nothing.
  virtual void mark_aborted(const std::string& reason) = 0;
  /// The signal received during the run (SIGTERM, SIGINT, SIGHUP), 0 when none.
  virtual int signal_received() const = 0;

  // --- The console and the run's end ---------------------------------------------------------
  /// A table's text for the console, now (nccl-tests' rows: the caller prints it on world rank 0
  /// only). `open`: the table goes on in this benchmark's next case, and the console's own lines
  /// meanwhile start with "# " so that the table stays whole. A case that printed its table gets
  /// no console line of its ok records: their numbers are in the table. Thread-safe.
  virtual void print_table(const std::string& text, bool open) = 0;
  /// A line for the console from a long case as it goes (a burn-in interval's rates), with the
  /// case's place in the plan and the run's elapsed time; nothing where no console runs (ranks
  /// other than 0). Thread-safe.
  virtual void print_progress(const std::string& text) = 0;
  /// What the case is doing now ("fio run 3 of 5"), shown in the console's next "still running"
  /// line; cleared when the case ends. Thread-safe.
  virtual void note_progress(const std::string& text) = 0;
  /// Registers `undo` (quick, never throwing: kill a process group, remove a directory, write
  /// back a sysctl) to run if the run ends by abort while the returned guard lives.
  virtual std::unique_ptr<AbortCleanup> on_abort(std::function<void()> undo) = 0;
};

/// Repetitions of a rate: work / t for each sample t (seconds per operation); 0 for t <= 0.
std::vector<double> rate_reps(double work, const std::vector<double>& seconds);
/// Repetitions of a time: t x scale for each sample t (seconds per operation).
std::vector<double> time_reps(double scale, const std::vector<double>& seconds);

}  // namespace clusterbench
