// The run: inventory, plan, spec choice, the measurement loop over cases, the record sink, the
// watchdog, and the report at the end (DESIGN.md "The benchmark interface", "Who writes").
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/benchmark.hpp"
#include "records/records.hpp"

namespace clusterbench {

/// Options of `clusterbench run`.
struct RunOptions {
  std::string suite = "ci";
  std::string spec_path;          ///< empty: chosen from the hardware found
  std::vector<std::string> only;  ///< globs on benchmark ids; empty: all
  std::vector<std::string> set;   ///< KEY=VALUE
  std::string out_dir;            ///< the run directory; empty: results/<run-id>
  std::string results_root = "results";
  std::string fs_root = "/";
  std::vector<std::string> argv;
  double case_timeout_s = 0;  ///< 0: the suite's (300/1200/3600 s), or 2 × estimate + 60 s when longer
  /// --resume DIR: complete that earlier run (its failed and missing cases), appending to it.
  std::string resume_dir;
  bool dry_run = false;            ///< --dry-run: print the plan with estimates; run nothing
  double time_limit_s = 0;         ///< --time-limit: start no case past it (0: none)
  bool allow_shared_gpus = false;  ///< --allow-shared-gpus: run beside other GPU processes
  /// Whether --suite, --spec, --only, --set were given (a resume takes the others from the
  /// earlier run and refuses given ones that differ).
  bool suite_given = false, spec_given = false, only_given = false, set_given = false;
  std::string prometheus_path;  ///< --prometheus FILE: textfile of the headline metrics
};

/// Whether GPU cases run on this rank, and if not, why (DESIGN.md "GPU plugin"):
/// "run", "waived" (no NVIDIA GPU on the PCI bus; no CUDA in this build) or "failed" (GPUs on the
/// bus but NVML, the plugin or CUDA failed: the exact error text). `deployment_error` is set for
/// a plugin built for a newer CUDA than the driver supports (exit 2).
struct GpuDisposition {
  std::string status = "waived";
  std::string reason;
  bool deployment_error = false;
};

/// Decides GPU disposition from the node's EnvRecord and (where GPUs are on the bus) the plugin.
GpuDisposition gpu_disposition(const EnvRecord& env, bool load_plugin = true);

/// A run id: sortable UTC time plus the host, made safe for a path ("20261130T084500Z-node01").
std::string make_run_id(const std::string& host);

/// This node's EnvRecord as `run` and `burnin` take it; call on node leaders. The inventory below
/// `fs_root` (collect_env), the MPI and clusterbench versions, and the health counters' start
/// snapshot in `health["start"]` (docs/health.md). Throws what collect_env throws.
EnvRecord collect_run_env(const Context& ctx, const std::string& fs_root);

/// Every node's EnvRecord on every rank, in rank order of the leaders: leaders pass their own
/// record, other ranks an empty one (ignored).
std::vector<EnvRecord> allgather_envs(const Context& ctx, const EnvRecord& leader_env);

/// The results directory of a new run, as `run` and `burnin` choose it on rank 0: `out_dir` when
/// given, else RESULTS_ROOT/RUN_ID, with "-2", "-3", ... when that exists. A chosen directory
/// that holds a run (run.json, or records in records.jsonl) or anything else is refused with
/// InputError naming a few of its files (`resume_hint`: also suggest `--resume DIR`), before
/// the Sink creates records.jsonl there; an empty records.jsonl (left by a run refused during
/// setup) does not count.
std::string new_run_dir(const std::string& out_dir, const std::string& results_root,
                        const std::string& run_id, bool resume_hint);

/// Every rank learns whether any rank failed its setup (`error` non-empty there); rank 0 prints
/// its own error. True: the command ends with exit 2 on every rank. A collective: all ranks call.
bool setup_failed(const Context& ctx, const std::string& error);

/// Benchmarks selected by `only` globs, in registry order. Throws InputError listing the known
/// benchmark ids when a pattern matches none.
std::vector<const Benchmark*> select_benchmarks(const std::vector<std::string>& only);

/// Time per case that Google Benchmark measures for a suite: ci 0.05 s, quick 0.5 s, full 2 s.
double suite_min_time(const std::string& suite);

/// What `run` needs from reports/, which the core does not link: app/ wires these in.
struct RunHooks {
  /// The spec table for these nodes (auto-selection): path and `selected_by` ("auto: ...").
  /// Throws InputError when none fits.
  std::function<SpecChoice(const std::vector<EnvRecord>&)> choose_spec;
  /// Checks before any case runs that an output file can be written (throws InputError).
  std::function<void(const std::string& path, const std::string& option,
                     const std::string& run_dir)>
      check_output;
  /// Judges the run directory and writes its reports (and the Prometheus textfile where a path
  /// is given); returns the verdict's exit code.
  std::function<int(const std::string& dir, const std::string& prometheus)> report;
};

/// Runs `clusterbench run` on every rank and returns the exit code (DESIGN.md "Exit codes"), the
/// same on every rank. Throws InputError (exit 2) for bad options before anything is measured.
int run_command(const RunOptions& opt, const RunHooks& hooks);

/// Directory of the seed spec tables: $CLUSTERBENCH_SPECS_DIR, else reports/specs of the source
/// tree this binary was built from.
std::string specs_dir();

}  // namespace clusterbench
