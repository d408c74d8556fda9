// The benchmark interface and its registry: what a benchmark is (an id, knobs, cases, a level,
// whether it applies here) and how it registers itself. Its run() gets a CaseRun (case_run.hpp)
// and declares its work to it: the framework times it (nvbench's state.exec model).
// Part of the public face of bench/core (bench/core/api/); docs/architecture.md draws the rest.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/api/case_run.hpp"
#include "core/api/context.hpp"
#include "core/api/gpu_disposition.hpp"
#include "core/api/knobs.hpp"
#include "core/api/settings.hpp"
#include "records/env_record.hpp"
#include "records/result.hpp"

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

/// A registered benchmark. Holds the operation, its FLOP/byte counts and its verification; never
/// a timing loop or a writer (docs/design.md "The benchmark interface"). Knobs are declared once,
/// as members initialised from knobs_ (their handles read them typed): `clusterbench list` prints
/// the declarations.
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

/// Registers a T at static initialisation (CLUSTERBENCH_REGISTER).
template <typename T>
struct Registrar {
  Registrar() { Registry::get().add(std::make_unique<T>()); }
};

}  // namespace clusterbench

/// Registers a Benchmark subclass; place once in its .cpp file.
#define CLUSTERBENCH_REGISTER(Type) \
  static ::clusterbench::Registrar<Type> cb_registrar_##Type  // NOLINT
