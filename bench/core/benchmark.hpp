// The benchmark interface, its registry, and the per-case state a benchmark declares its work to
// (the framework times it: nvbench's state.exec model). docs/architecture.md draws where it sits.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/gpu_disposition.hpp"
#include "core/knobs.hpp"
#include "core/settings.hpp"
#include "records/records.hpp"

namespace clusterbench {

/// Where a case runs and what its records' scope is.
///  node:    on each node's leader (STREAM, fio, dataloader); other ranks wait quietly.
///  gpu:     on every rank, one GPU each (GEMM, copies); records per rank, scope "gpu".
///  rank:    on every rank, GPU or not (the burn-in soak of a CPU rank); records per rank,
///           scope "rank".
///  cluster: on every rank together (collectives); one record, the slowest rank's time.
enum class Level { node, gpu, rank, cluster };
const char* level_name(Level l);

/// What a benchmark may look at to decide whether it applies on this node.
struct NodeEnv {
  const EnvRecord& env;
  const GpuDisposition& gpu;  ///< what GPU cases do on this rank
  const Context& ctx;
  const Settings& settings;
};

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
  /// A rate over the last exec: value = work / median seconds per operation, and one
  /// repetition work / t per sample (bytes / 1e9 per operation gives GB/s).
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
};

/// Repetitions of a rate: work / t for each sample t (seconds per operation); 0 for t <= 0.
std::vector<double> rate_reps(double work, const std::vector<double>& seconds);
/// Repetitions of a time: t x scale for each sample t (seconds per operation).
std::vector<double> time_reps(double scale, const std::vector<double>& seconds);

/// A registered benchmark. Holds the operation, its FLOP/byte counts and its verification; never
/// a timing loop or a writer (STYLE.md). Knobs are declared once, as members initialised from
/// knobs_ (their handles read them typed): `clusterbench list` prints the declarations.
class Benchmark : public KnobOwner {
 public:
  Benchmark();
  ~Benchmark() override = default;
  Benchmark(const Benchmark&) = delete;
  Benchmark& operator=(const Benchmark&) = delete;
  std::string id() const override = 0;  ///< "area.name"
  virtual std::string description() const = 0;
  virtual Level level() const = 0;
  /// The parameter combinations planned for these settings (one record each per scope item).
  virtual std::vector<json> cases(const Settings& s) const = 0;
  /// A case's params as they are on a node (default: as planned). The burn-in soak soaks the
  /// GPU where a node has one and the CPU elsewhere, with other dtypes and shapes: its case keys
  /// carry what each rank ran. Called for every node at plan time, so it must be pure.
  virtual json params_on(const json& params, const EnvRecord& /*env*/,
                         const Settings& /*s*/) const {
    return params;
  }
  /// Empty string when it can run on this node, else the reason (becomes `waived`).
  virtual std::string applicable(const NodeEnv& node) const = 0;
  /// Checks a case before anything is written: every rank calls it for every planned case, in
  /// plan order (it may use world collectives of `node.ctx`). Throw InputError for options this
  /// node cannot honour (exit 2, nothing written).
  virtual void check(const json& /*params*/, const NodeEnv& /*node*/) const {}
  /// Measures one case. Throw Waived to skip with a reason, anything else to fail the case.
  virtual void run(CaseRun& run) const = 0;
  /// Called on every rank when the run's cases are over, before its report: undoes what the
  /// benchmark kept for later cases (a generated dataset). Must not throw. Default: nothing.
  virtual void end_run() const {}
  /// Whether this benchmark has cases in `suite` (default: ci, quick and full, not burnin).
  virtual bool in_suite(const std::string& suite) const { return suite != "burnin"; }
  /// Whether this benchmark needs a GPU (its cases are waived/failed by the GPU disposition).
  virtual bool needs_gpu() const { return false; }
  /// Whether a case calls MPI from a thread other than the main one (the burn-in's all_reduce
  /// thread, the training step's gradient thread). A run selects MPI_THREAD_SERIALIZED only when
  /// one of its benchmarks does (run_needs_mpi_threads): OpenMPI takes its locks at any level above
  /// MPI_THREAD_SINGLE, which costs small collectives 10-20% (docs/collectives.md).
  virtual bool calls_mpi_from_threads() const { return false; }
  /// Whether a case can be spread over rounds (--rounds): its record is the same measurement each
  /// time, one repetition per round, with min_time / rounds each time (docs/compare.md
  /// "Rounds"). A case that changes the host, runs for a fixed time or measures repetitions of
  /// its own (fio's runs) is run once. `params` as params_on gives them.
  virtual bool in_rounds(const json& params) const {
    (void)params;
    return false;
  }
  /// The --set values of one round of N (in_rounds): by default min_time / N ("ID.min_time").
  /// A benchmark whose repetitions are runs of their own splits those instead (fio's repeat).
  virtual std::map<std::string, std::string> round_sets(const Settings& s, int rounds) const;
  /// Per-case refinements for a benchmark whose cases differ by backend (compute.gemm:
  /// backend=cublaslt runs per GPU and needs one; backend=openblas runs once per node on the CPU).
  /// Defaults: the benchmark-wide level() and needs_gpu().
  virtual Level case_level(const json& /*params*/) const { return level(); }
  virtual bool case_needs_gpu(const json& /*params*/) const { return needs_gpu(); }
  /// Why one case is waived on this node where applicable() cannot tell for the whole benchmark
  /// (collectives: the MPI backend on one rank); "" when it can run. Used by the run and by
  /// --dry-run, so both say the same.
  virtual std::string case_waiver(const json& /*params*/, const NodeEnv& /*node*/) const {
    return "";
  }
  /// Estimated wall seconds of one case with these settings, for `run --dry-run` and
  /// `run --time-limit`. Default: loop_estimate_s(min_time, 0) plus 0.2 s of setup. A benchmark
  /// whose operation or setup is long overrides it from its knobs (bytes, FLOP, fio runtime).
  virtual double estimate_s(const Settings& s, const json& params) const;
  /// The declared knobs, min_time first (every benchmark has it).
  std::vector<const KnobSpec*> knob_specs() const { return knobs_.specs(); }
  /// Seconds of measurement per case: --set ID.min_time, else the suite's.
  double min_time(const Settings& s) const { return min_time_(s); }

 protected:
  KnobSet knobs_{this};

 private:
  Knob<double> min_time_;
};

/// Seconds the measurement loop (CaseRun::exec) takes for an operation of `op_s` seconds:
/// one calibration operation, Google Benchmark's warm-up (min_time / 5) and its tries up to
/// min_time (iterations grow by at most 10x, the last try ~1.4 x min_time): op_s + max(0.3
/// min_time, op_s) + max(1.6 min_time, op_s); or, when `samples` operations fill min_time,
/// exactly that many without a warm-up (fixed_iterations): op_s + samples op_s. `samples`:
/// Settings::loop_samples (0, the default: kMinSamples; fewer in a round of --rounds).
double loop_estimate_s(double min_time, double op_s, int samples = 0);

/// Seconds of measurement per case of benchmark `id`: --set ID.min_time, else the suite's
/// (ci 0.05 s, quick 0.5 s, full 2 s).
double case_min_time(const Settings& s, const std::string& id);

/// All benchmarks linked into this binary, registered at static-initialisation time.
class Registry {
 public:
  static Registry& get();
  void add(std::unique_ptr<Benchmark> b);
  const std::vector<std::unique_ptr<Benchmark>>& all() const { return benchmarks_; }
  const Benchmark* find(const std::string& id) const;

 private:
  std::vector<std::unique_ptr<Benchmark>> benchmarks_;
};

/// The globs of `--only`'s values: each value split at commas ("compute.*,io.fio" is two), each
/// glob trimmed of spaces, empty pieces (a trailing comma) dropped. Throws InputError naming
/// the value when one holds no glob at all (`--only ','`, `--only ''`).
std::vector<std::string> split_globs(const std::vector<std::string>& values);

/// Benchmarks of `registry` in `suite` selected by `only` globs, in registry order. Throws
/// InputError listing the known benchmark ids when a pattern matches none of the suite's.
std::vector<const Benchmark*> select_benchmarks(const std::vector<std::string>& only,
                                                const std::string& suite = "ci",
                                                const Registry& registry = Registry::get());

/// Whether a run of `suite` with the `only` globs (and `resume`: a run directory to complete,
/// whose plan is read later) needs MPI_THREAD_SERIALIZED: a resume, or a selected benchmark that
/// calls_mpi_from_threads(). A selection error is left for the run to report: true.
bool run_needs_mpi_threads(const std::vector<std::string>& only, const std::string& suite,
                           bool resume, const Registry& registry = Registry::get());

/// Checks every --set key against the declared knobs of `registry`'s benchmarks (KEY is ID.knob
/// or AREA.knob; `run.*` keys are the run's own), and that the benchmark it names has cases in
/// the settings' suite, then parses every declared knob of `selected` (check_knob). Throws
/// InputError naming the key and where `clusterbench list` shows the knobs, or the bad value.
void check_set_keys(const Settings& s, const std::vector<const Benchmark*>& selected,
                    const Registry& registry = Registry::get());

template <typename T>
struct Registrar {
  Registrar() { Registry::get().add(std::make_unique<T>()); }
};

}  // namespace clusterbench

/// Registers a Benchmark subclass; place once in its .cpp file.
#define CLUSTERBENCH_REGISTER(Type) \
  static ::clusterbench::Registrar<Type> cb_registrar_##Type  // NOLINT
