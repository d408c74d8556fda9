// Internal to bench/core: the state of a RunSession (session.hpp) and its steps, defined in
// session.cpp (the steps in order), session_plan.cpp, session_setup.cpp, session_cases.cpp,
// session_abort.cpp and session_finish.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/case_line.hpp"
#include "core/case_runner.hpp"
#include "core/measure.hpp"
#include "core/progress.hpp"
#include "core/run_control.hpp"
#include "core/session.hpp"
#include "core/sink.hpp"
#include "core/watchdog.hpp"
#include "env/health.hpp"

namespace clusterbench {

using Clock = std::chrono::steady_clock;

/// How long an abort waits for the record writer (core/sink.hpp) before the process ends: what is
/// still queued is written by the writer process after this one is gone.
constexpr double kAbortWaitS = 5;

/// One case of the plan: a benchmark's params, the rows of run.json's plan it stands for (one per
/// distinct params_on() result) and, on rank 0, the records it is expected to produce.
struct PlannedEntry {
  const Benchmark* bench = nullptr;
  json params;
  std::vector<ExpectedCase> expected;  ///< rank 0 only
  bool to_run = true;                  ///< false: done in the earlier run (--resume)
  double estimate_s = 0;               ///< rank 0 only; all its rounds' for a round case
  bool in_rounds = false;              ///< run once per round (--rounds > 1, Benchmark::in_rounds)
  bool rounds_over = false;            ///< a round case whose record is final early (not ok)
  double round_estimate_s = 0;         ///< rank 0 only: one round's, for a round case
  double measured_s = -1;              ///< rank 0 only: what it took when it last ran (a round)
};

/// Everything a RunSession holds between its steps; each step's work is a member function defined
/// in the session_*.cpp file of its step.
struct RunSession::State {
  const Context& ctx;
  RunOptions given, opt;
  RunHooks hooks;
  const Registry& registry;
  Clock::time_point t0 = Clock::now();

  // Plan.
  ResumeState resume;
  Settings settings;
  std::vector<const Benchmark*> benchmarks;
  std::vector<PlannedEntry> plan;

  // Set-up.
  std::vector<EnvRecord> envs;
  const EnvRecord* my_env = nullptr;
  health::XidWatcher xid_watcher;  // leaders: NVML XID events from inventory to the end
  GpuDisposition gpu;
  std::vector<BusyGpu> busy;
  json shared_gpus = json::array();
  bool dry_run_done = false;

  // Rank 0's run directory.
  RunRecord run;
  std::unique_ptr<Sink> sink;
  json spec_chain;  // run.json "spec_chain": every file of the spec's extends chain + sha256
  json spec_tiers = json::array();  // the chosen table's storage tiers (tiers_json), rank 0

  // Cases.
  GbenchCollector reporter;
  std::mutex mu;                          // run, in_progress, abort_recorded, signal handler
  std::vector<ResultRecord> in_progress;  // what a hang records as failed (every rank)
  bool abort_recorded = false;
  std::function<std::optional<std::string>(const std::string&)> signal_handler;
  // Held while a case's signal handler runs on the watchdog's thread, and to set or clear the
  // handler: a case that ends waits for its running handler, whose state it owns.
  std::mutex handler_mu;
  // Every rank: a case stopped in order by a signal and marked the run aborted (mark_aborted).
  // A watchdog that sees that signal only after the case has ended must not abort the run's
  // orderly end (its report) as if the signal were new.
  std::atomic<bool> stopped_in_order{false};
  std::optional<Watchdog> watchdog;
  std::optional<ProgressChannel> channel;
  std::string run_dir;    // every rank: rank 0's run directory once set up ("" before)
  std::string case_what;  // every rank: the case in progress ("" outside a case)
  bool refused = false;
  bool stopped_at_limit = false;
  size_t stop_index = 0;
  std::vector<size_t> skipped_for_limit;  // cases --time-limit left out that later ones did not
  // --rounds: the round in progress (every rank); each benchmark's settings for one round (its
  // min_time / rounds); rank 0: each round case's records so far, by plan index and round.
  int round = 1;
  bool rounds_ended = false;  // end_rounds: the cases a time limit cut are printed
  std::map<std::string, Settings> round_settings;
  std::map<size_t, std::vector<std::vector<ResultRecord>>> round_records;
  const Settings& settings_for(const PlannedEntry& p) const;
  /// Rank 0: round case `index`'s records to write after this round (`recs`, this round's,
  /// merged with the earlier ones: merge_rounds), and whether this is its last round (then its
  /// console lines are printed).
  std::vector<ResultRecord> merge_round(size_t index, std::vector<ResultRecord> recs, bool* last);

  State(const Context& c, RunOptions o, RunHooks h, const Registry& r)
      : ctx(c), given(std::move(o)), hooks(std::move(h)), registry(r), reporter(c.is_root()) {}

  void plan_cases();
  int inventory_and_gpus();
  int check_cases();
  void print_dry_run();
  void write_run_dir();
  void choose_spec();
  void plan_rows();
  void apply_resume();
  void open_run_dir(const std::string& dir);
  void run_one(size_t index);
  /// Runs the plan's cases of round `round` (all of them in the first); false when the run ends
  /// (the time limit passed, or a case aborted it).
  bool run_round();
  /// Rank 0, after the rounds: the final records of round cases that ran fewer rounds than
  /// planned (--time-limit), in place of their snapshots.
  void end_rounds();
  /// --time-limit before case `index`: 0 run it, 1 skip it (its estimate ends past the limit; a
  /// later, shorter case may still fit), 2 stop (the limit has passed). Rank 0 decides for all.
  int time_limit_step(size_t index);
  CaseEnv case_env(const Settings& case_settings);
  bool on_watchdog(const WatchdogEvent& e);
  void record_abort(const std::string& reason, double stopped_s = 0);
  /// Marks run.json aborted (rank 0); keep_existing leaves a reason already written alone.
  void mark_aborted(const std::string& reason, bool keep_existing = false);
  bool write_run_or_warn(double wait_s = Sink::kWaitForever);
  void append(const ResultRecord& rec);
  void end_health();
  void note_time_limit();
  int make_report();
  double case_timeout(const PlannedEntry& p) const;
  void watch();
  void phase(const std::string& what, const std::string& hint = kPeerHint);
  /// The records a hang or abort of case `index` writes as failed (every rank); in a later round
  /// of a round case, rank 0's carry the earlier rounds (extra.rounds) and say which round.
  void start_in_progress(size_t index);
  std::string in_progress_round;  // "round 3 of 5: " while a round case's later round runs
  /// Rank 0: writes a case's records (records_to_write's) to records.jsonl.
  void write_case_records(const PlannedEntry& p, const std::vector<ResultRecord>& recs);
  /// Rank 0's console line per record of case `index` (case_line.hpp), with the run's progress;
  /// a waived reason is said once. `table_printed`: the case printed its own table
  /// (CaseRun::print_table, a collective's nccl-tests rows), which shows its ok records.
  /// `round_only`: `recs` are what one round before the last measured (--rounds), each line
  /// marked "this round:", so that a value shows in the first round, not only after the last.
  void print_case_lines(size_t index, const std::vector<ResultRecord>& recs, bool table_printed,
                        bool round_only = false);
  /// "5/19": case `index`'s place among the cases this run runs; `left_s`: the estimates of
  /// those after it.
  std::string plan_place(size_t index, double* left_s = nullptr) const;
  std::optional<Heartbeat> heartbeat;  // rank 0: a line when the console was quiet for 8 s
  std::set<std::string> waived_said;   // "benchmark\nmessage" already on the console
  void record_abort_for_silent_root(const std::string& reason);
  /// Writes the failed records of the case in progress and marks run.json aborted in `dir`
  /// without the record writer (gone, or another rank's); `mu` held. Nothing when another rank
  /// has recorded the abort already.
  bool record_abort_directly(const std::string& dir, const std::string& text, const json& ranks,
                             const std::vector<ResultRecord>& recs = {});

  static constexpr const char* kPeerHint = "(a peer did not arrive: stopped, dead or hung?)";
};

/// "note: N rounds: fewer than 5 repetitions a case; ..." (N from --rounds or CLUSTERBENCH_ROUNDS)
/// when the plan has a round case (one still to run, with `to_run_only`) and N is below
/// kMinSamples; "" otherwise. The run and its --dry-run say the same.
std::string few_rounds_note(const std::vector<PlannedEntry>& plan, int rounds, bool to_run_only);

}  // namespace clusterbench
