// The run session: plan, set-up, cases, finish (docs/design.md "What it is, in one picture", "Who
// writes", "Deadlines in every phase"). `clusterbench run` and `clusterbench burnin` both go
// through it: one records writer, one watchdog, one report path. No state outside the session.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/api/benchmark.hpp"
#include "core/run_options.hpp"

namespace clusterbench {

class RunSession {
 public:
  RunSession(const Context& ctx, RunOptions opt, RunHooks hooks,
             const Registry& registry = Registry::get());
  ~RunSession();
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  /// Plan: the options (the earlier run's with --resume: collective then), the settings, the
  /// benchmarks of the suite and their cases, --set keys and min_time checked. Throws InputError
  /// (exit 2) before anything is measured or written.
  void plan();
  /// Set-up (collective): inventory, GPU disposition, busy GPUs, every case's check(); with
  /// --dry-run the plan with estimates is printed and nothing more happens; else rank 0 chooses
  /// the run id, the spec and the directory and writes run.json before any case. Returns 0 to go
  /// on, 2 when a rank failed (the same on every rank; rank 0 prints why).
  int setup();
  /// Whether setup() ended a dry run (nothing is left to do).
  bool dry_run_done() const;
  /// The cases in plan order, each under the watchdog's deadline (collective). Rank 0 appends
  /// every record as its case ends. A hang, a signal or AbortRun ends the process with exit 3
  /// after writing what it can.
  void run_cases();
  /// End (collective): health counters' end snapshots, the time-limit note, gbench.json,
  /// run.json completed, the report. Returns the run's exit code, the same on every rank.
  int finish();
  /// plan(), setup(), run_cases(), finish(): the run's exit code.
  int run();

  /// Rank 0: the run record as written so far.
  const RunRecord& record() const;
  /// Rank 0: the run directory ("" before setup).
  std::string dir() const;

  struct State;

 private:
  std::unique_ptr<State> s_;
};

/// `clusterbench run`: a RunSession over `opt` and `hooks`; the exit code (docs/design.md "Exit
/// codes"). Throws InputError (exit 2) for bad options before anything is measured.
int run_command(const RunOptions& opt, const RunHooks& hooks);

/// A run id: sortable UTC time plus the host, made safe for a path ("20261130T084500Z-node01").
std::string make_run_id(const std::string& host);

/// This node's EnvRecord as a run takes it; call on node leaders. The inventory below `fs_root`
/// (collect_env), the MPI and clusterbench versions, and the health counters' start snapshot in
/// `health["start"]` (docs/health.md). Throws what collect_env throws.
EnvRecord collect_run_env(const Context& ctx, const std::string& fs_root);

/// Every node's EnvRecord on every rank, in rank order of the leaders: leaders pass their own
/// record, other ranks an empty one (ignored).
std::vector<EnvRecord> allgather_envs(const Context& ctx, const EnvRecord& leader_env);

/// The results directory of a new run, chosen on rank 0: `out_dir` when given, else
/// RESULTS_ROOT/RUN_ID, with "-2", "-3", ... when that exists. A chosen directory that holds a run
/// (run.json, or records in records.jsonl) or anything else is refused with InputError naming a
/// few of its files (`resume_hint`: also suggest `--resume DIR`), before the Sink creates
/// records.jsonl there; an empty records.jsonl (left by a run refused during setup) does not
/// count.
std::string new_run_dir(const std::string& out_dir, const std::string& results_root,
                        const std::string& run_id, bool resume_hint);

/// Every rank learns whether any rank failed its set-up (`error` non-empty there); rank 0 prints
/// the first failing rank's error. True: the command ends with exit 2 on every rank. A
/// collective: all ranks call.
bool setup_failed(const Context& ctx, const std::string& error);

}  // namespace clusterbench
