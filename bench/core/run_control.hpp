// Resumable, bounded and careful runs: `run --resume DIR`, `run --dry-run`
// with per-case estimates, `run --time-limit`, and the busy-GPU refusal. The runner calls these;
// they hold the rules so that runner.cpp only wires them in.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/api/benchmark.hpp"
#include "core/api/context.hpp"
#include "core/run_options.hpp"
#include "records/records.hpp"

namespace clusterbench {

/// The earlier run that `--resume DIR` completes.
struct ResumeState {
  bool active = false;
  std::string dir;
  RunRecord run;                    ///< its run.json
  json run_json;                    ///< the same document, with fields this build does not model
  std::set<std::string> done_keys;  ///< case keys whose last record is ok or waived (not refused)
};

/// Resolves --resume on every rank (collective): world rank 0 reads DIR/run.json and broadcasts
/// it. Options not given on the command line are taken from the earlier run; given ones, and
/// this binary's version, must equal the earlier run's. Throws InputError (exit 2) naming every
/// difference ("suite: earlier 'quick', now 'ci'") or an unreadable directory. Without
/// --resume returns `given` with, where --rounds was not given, CLUSTERBENCH_ROUNDS's rounds
/// (rank 0's; a bad value throws InputError naming it) or the suite's (suite_rounds), and leaves
/// `state` inactive.
RunOptions resolve_resume(const RunOptions& given, const Context& ctx, ResumeState& state);

/// Rank 0: reads DIR/records.jsonl into `state.done_keys`. A malformed line before the last one
/// throws InputError naming records.jsonl:LINE (nothing is measured). A torn last line (a killed
/// run's partial write, no newline) is ignored; with `repair` it is moved to
/// records.jsonl.torn and cut off, so that appended records start on a line of their own.
void read_resume_records(ResumeState& state, bool repair = false);

/// Differences of the plan between the earlier run and this one (hosts, ranks, planned case
/// keys), as texts; empty when the earlier plan can be completed by this job.
std::vector<std::string> plan_differences(const RunRecord& earlier, const RunRecord& now);

/// Whether a planned case has to run again: one of its expected case keys has no ok or waived
/// record in the earlier run.
bool needs_rerun(const PlannedCase& pc, const ResumeState& state);

/// Every file of a spec's `extends` chain (Spec::extends_chain, base first) with its sha256:
/// [{"path": absolute path, "sha256": hex}]. Written to run.json as "spec_chain", so that a
/// resume notices an edited parent table, which the top file's sha256 does not cover.
json spec_chain_json(const std::vector<std::string>& chain);

/// What differs between the earlier run's "spec_chain" and this one's, one line per file
/// ("spec chain: ... changed/added/removed"); empty when they agree or `earlier` is not an array
/// (a run.json written before spec_chain existed).
std::vector<std::string> spec_chain_differences(const json& earlier, const json& now);

/// One planned case as --dry-run shows it.
struct CaseEstimate {
  std::string benchmark;
  json params;
  std::string level;
  double seconds = 0;  ///< estimated wall seconds; 0 for a case that will not run
  std::string note;    ///< "" (runs), "waived: ...", "failed: ...", "done in the earlier run"
};

/// What a planned case will do on this node: its estimate (Benchmark::estimate_s) when it runs,
/// else 0 s with the reason (GPU disposition, applicability).
CaseEstimate estimate_case(const Benchmark& b, const json& params, const Settings& settings,
                           const NodeEnv& node);

/// The --dry-run table: one line per case (estimate in seconds, level, id, params, note) and the
/// total. `header` goes first.
std::string render_dry_run(const std::vector<CaseEstimate>& cases, const std::string& header);

/// A process of another job on one of this node's GPUs (NVML), for the busy-GPU refusal.
struct BusyGpu {
  std::string host;
  int gpu_index = -1;
  std::string gpu_uuid;
  unsigned pid = 0;
  std::string name;           ///< nvmlSystemGetProcessName, else /proc/PID/comm, else "?"
  long long used_bytes = -1;  ///< GPU memory it uses; -1 when NVML cannot say
  std::string type;           ///< "compute" or "graphics"
};
void to_json(json& j, const BusyGpu& v);
void from_json(const json& j, BusyGpu& v);

/// Collective: every node's leader asks NVML for the processes on its GPUs, leaving out this
/// job's own ranks (their pids, gathered). Returns every node's list on every rank. `error`
/// (this node) is set when NVML cannot list them; NVML not loaded gives an empty list.
std::vector<BusyGpu> other_gpu_processes(const Context& ctx, std::string* error);

/// "node01 GPU 3 (GPU-uuid): pid 4242 python3, 10.5 GiB" lines.
std::string describe_busy(const std::vector<BusyGpu>& busy);

}  // namespace clusterbench
