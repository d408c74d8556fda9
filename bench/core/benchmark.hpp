// The benchmark interface, its registry, run settings, and the per-case measurement state a
// benchmark declares its work to (the framework times it: nvbench's state.exec model).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "records/records.hpp"

namespace clusterbench {

/// Where a benchmark runs and what its records' scope is.
///  node:    on each node's leader (STREAM, fio, dataloader); other ranks wait quietly.
///  gpu:     on every rank, one GPU each (GEMM, copies); records per rank.
///  cluster: on every rank together (collectives); one record, the slowest rank's time.
enum class Level { node, gpu, cluster };
const char* level_name(Level l);

/// Suite and --set values. Keys are `id.key` for one benchmark or `area.key` for a whole area
/// (`collectives.path`); the benchmark's own key wins over the area's.
class Settings {
 public:
  Settings() = default;
  /// `suite`: ci | quick | full. `sets`: "KEY=VALUE" strings. Throws InputError on a malformed one.
  Settings(std::string suite, const std::vector<std::string>& sets);
  const std::string& suite() const { return suite_; }
  /// Picks the suite's default: {ci, quick, full}.
  template <typename T>
  T by_suite(T ci, T quick, T full) const {
    return suite_ == "ci" ? ci : suite_ == "quick" ? quick : full;
  }
  bool has(const std::string& bench_id, const std::string& key) const;
  std::string get(const std::string& bench_id, const std::string& key,
                  const std::string& def) const;
  double get_double(const std::string& bench_id, const std::string& key, double def) const;
  /// Size with binary suffixes K, M, G, T (as nccl-tests): "64M" = 64 * 2^20 bytes.
  long long get_size(const std::string& bench_id, const std::string& key, long long def) const;
  /// Comma-separated list.
  std::vector<std::string> get_list(const std::string& bench_id, const std::string& key,
                                    const std::vector<std::string>& def) const;
  /// Comma-separated list whose items must each be one of `allowed` (the default when unset).
  /// Throws InputError naming the key, the bad item and the allowed values.
  std::vector<std::string> get_choices(const std::string& bench_id, const std::string& key,
                                       const std::vector<std::string>& allowed) const;
  /// One value that must be one of `allowed`; the first is the default when unset. Throws
  /// InputError as get_choices does.
  std::string get_choice(const std::string& bench_id, const std::string& key,
                         const std::vector<std::string>& allowed) const;
  /// Every KEY of --set, for validation against known benchmarks.
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  const std::string* find(const std::string& bench_id, const std::string& key) const;
  std::string suite_ = "ci";
  std::map<std::string, std::string> values_;
};

/// Parses a size with binary suffix ("8", "4K", "64M", "8G"). Throws InputError naming `what`.
long long parse_size(const std::string& text, const std::string& what);

/// What a benchmark may look at to decide whether it applies on this node.
struct NodeEnv {
  const EnvRecord& env;
  /// For GPU cases: "run", "waived" or "failed", with the reason (DESIGN.md "GPU plugin").
  std::string gpu_disposition;
  std::string gpu_reason;
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
  /// Seconds of measurement per case for this suite (Google Benchmark MinTime).
  virtual double min_time() const = 0;
  /// Times the work. `batch(n)` performs n operations and returns the seconds it measured itself
  /// (CUDA events), or a negative value to let the framework time it with steady_clock.
  /// The framework warms up, picks n so one iteration is long enough to time, and runs Google
  /// Benchmark iterations in lock-step across the ranks of the case's level (slowest rank's
  /// time). An exception on any rank makes every rank stop and rethrows it here on that rank;
  /// the other ranks throw an error that names the failing peer. AbortRun (a failed
  /// communicator, whose peers wait inside the operation) leaves at once and ends the run. A case
  /// that times several things (A/B arms) gives each a `label`, which names its Google Benchmark
  /// entry
  /// ("<id>/<params>/<label>" in gbench.json); the default leaves it "<id>/<params>".
  /// `paired(n)`, when given, is an A/B reference interleaved with the timed loop: it runs on
  /// every rank right after each timed batch (after the lock-step reduction, outside the timing)
  /// with the same n, and returns the seconds it measured itself for its n operations (already
  /// combined across ranks as it sees fit). Both then see the same slow spells of a shared
  /// machine; paired_stats() holds its per-operation times for the same iterations as stats().
  virtual void exec(const std::function<double(long long n)>& batch, const std::string& label = "",
                    const std::function<double(long long n)>& paired = nullptr) = 0;
  /// Time per operation after exec: this rank's own samples (per_rank) or the slowest rank's.
  virtual const TimeStats& stats() const = 0;
  /// Per-operation times of the last exec's `paired` reference (n = 0 when it had none).
  virtual const TimeStats& paired_stats() const = 0;
  virtual void add_metric(const std::string& name, double value, const std::string& unit,
                          bool higher_is_better = true) = 0;
  /// Benchmark-specific evidence stored in the record's `extra`.
  virtual void set_extra(const std::string& key, json value) = 0;
  /// Cluster-level cases: one more record for one item of the case (a link: scope kind "link",
  /// hosts {a, b}), written after the case's own record when the case ends ok, with the case's
  /// params and its own metrics, time statistics and extra. Only world rank 0's are written.
  virtual void add_record(const Scope& scope, std::vector<Metric> metrics, const TimeStats& time,
                          json extra) = 0;
};

/// A registered benchmark. Holds the operation, its FLOP/byte counts and its verification; never
/// a timing loop or a writer (STYLE.md).
class Benchmark {
 public:
  virtual ~Benchmark() = default;
  virtual std::string id() const = 0;  ///< "area.name"
  virtual std::string description() const = 0;
  virtual Level level() const = 0;
  /// The parameter combinations planned for these settings (one record each per scope item).
  virtual std::vector<json> cases(const Settings& s) const = 0;
  /// Empty string when it can run on this node, else the reason (becomes `waived`).
  virtual std::string applicable(const NodeEnv& node) const = 0;
  /// Measures one case. Throw Waived to skip with a reason, anything else to fail the case.
  virtual void run(CaseRun& run) const = 0;
  /// The --set keys this benchmark reads (listed by `clusterbench list`).
  virtual std::vector<std::string> knobs() const { return {}; }
  /// Whether this benchmark needs a GPU (its cases are waived/failed by the GPU disposition).
  virtual bool needs_gpu() const { return false; }
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
};

/// Seconds the measurement loop (CaseRun::exec) takes for an operation of `op_s` seconds:
/// one calibration operation, Google Benchmark's warm-up (min_time / 5) and its tries up to
/// min_time (iterations grow by at most 10x, the last try ~1.4 x min_time), each at least one
/// operation: op_s + max(0.3 min_time, op_s) + max(1.6 min_time, op_s).
double loop_estimate_s(double min_time, double op_s);

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

template <typename T>
struct Registrar {
  Registrar() { Registry::get().add(std::make_unique<T>()); }
};

}  // namespace clusterbench

/// Registers a Benchmark subclass; place once in its .cpp file.
#define CLUSTERBENCH_REGISTER(Type) \
  static ::clusterbench::Registrar<Type> cb_registrar_##Type  // NOLINT
