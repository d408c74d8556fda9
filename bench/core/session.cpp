// The run session (session.hpp).
#include "core/session.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/case_line.hpp"
#include "core/case_runner.hpp"
#include "core/error.hpp"
#include "core/measure.hpp"
#include "core/progress.hpp"
#include "core/rounds.hpp"
#include "core/run_control.hpp"
#include "core/sink.hpp"
#include "core/version.hpp"
#include "core/watchdog.hpp"
#include "env/health.hpp"
#include "env/inventory.hpp"
#include "env/paths.hpp"
#include "records/spec.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// How long an abort waits for the record writer (core/sink.hpp) before the process ends: what is
/// still queued is written by the writer process after this one is gone.
constexpr double kAbortWaitS = 5;

namespace {
std::string g_specs_dir;  // --specs-dir
}  // namespace

void set_specs_dir(const std::string& dir) { g_specs_dir = dir; }

std::string specs_dir() {
  if (!g_specs_dir.empty()) return g_specs_dir;
  if (const char* d = std::getenv("CLUSTERBENCH_SPECS_DIR"); d && *d) return d;
  return data_dir("specs", "reports/specs");
}

std::string resolve_spec_arg(const std::string& arg) {
  std::error_code ec;
  if (arg.empty() || arg.find('/') != std::string::npos || fs::exists(arg, ec)) return arg;
  const std::string name =
      arg.size() > 5 && arg.substr(arg.size() - 5) == ".json" ? arg : arg + ".json";
  const std::string in_dir = specs_dir() + "/" + name;
  return fs::is_regular_file(in_dir, ec) ? in_dir : arg;
}

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
};

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
  /// Rank 0: the lines to write for round case `index` after this round (merge_rounds), and
  /// whether this is its last round (then its console lines are printed).
  std::vector<std::string> round_lines(size_t index, const std::vector<std::string>& lines,
                                       bool* last);

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
  /// Rank 0: writes a case's records (lines_to_write's lines) to records.jsonl.
  void write_case_lines(const PlannedEntry& p, const std::vector<std::string>& lines);
  /// Rank 0's console line per record of case `index` (case_line.hpp), with the run's progress;
  /// collective records are left to their nccl-tests table, a waived reason is said once.
  void print_case_lines(size_t index, const std::vector<std::string>& lines);
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
                             std::vector<std::string> lines = {});

  static constexpr const char* kPeerHint = "(a peer did not arrive: stopped, dead or hung?)";
};

// --- plan ----------------------------------------------------------------------------------------

void RunSession::State::plan_cases() {
  opt = resolve_resume(given, ctx, resume);
  settings = Settings(opt.suite, opt.set);
  benchmarks = select_benchmarks(opt.only, opt.suite, registry);
  for (const Benchmark* b : benchmarks) {
    double mt = b->min_time(settings);
    if (!(mt > 0) || mt > 3600)
      throw InputError("--set " + b->id() + ".min_time: " + std::to_string(mt) +
                       " must be in (0, 3600] seconds");
  }
  check_set_keys(settings, benchmarks, registry);
  plan.clear();
  for (const Benchmark* b : benchmarks)
    for (const auto& p : b->cases(settings)) {
      plan.push_back({b, p, {}, true, 0});
      plan.back().in_rounds = opt.rounds > 1 && b->in_rounds(p);
    }
  round_settings.clear();
  if (opt.rounds > 1)
    for (const Benchmark* b : benchmarks) {
      Settings one = settings;
      for (const auto& [key, value] : b->round_sets(settings, opt.rounds))
        one = one.with(key, value);
      // A loop of long operations (a large GEMM) takes its samples over the rounds, not each time.
      one.set_loop_samples((kMinSamples + opt.rounds - 1) / opt.rounds);
      round_settings.emplace(b->id(), std::move(one));
    }
}

const Settings& RunSession::State::settings_for(const PlannedEntry& p) const {
  return p.in_rounds ? round_settings.at(p.bench->id()) : settings;
}

// --- set-up --------------------------------------------------------------------------------------

int RunSession::State::inventory_and_gpus() {
  EnvRecord env;
  if (ctx.is_leader()) {
    env = collect_run_env(ctx, opt.fs_root);
    xid_watcher.start();
  }
  envs = allgather_envs(ctx, env);
  for (const auto& e : envs)
    if (e.host == ctx.host()) my_env = &e;
  if (!my_env) throw std::runtime_error("no EnvRecord for host " + ctx.host());
  gpu = rank_gpu_disposition(*my_env, ctx);
  // The EnvRecords of run.json carry the plugin's facts (each leader's view).
  if (ctx.is_leader()) add_plugin_facts(env);
  std::vector<std::string> gathered = ctx.gather(ctx.is_leader() ? dump_json(json(env)) : "");
  if (ctx.is_root())
    for (const auto& g : gathered)
      if (!g.empty()) run.env.push_back(json::parse(g).get<EnvRecord>());
  // A driver older than the plugin's CUDA is a deployment error on any rank: exit 2 everywhere.
  if (ctx.allreduce_sum(gpu.deployment_error ? 1 : 0) > 0) {
    if (gpu.deployment_error)
      std::cerr << "clusterbench: " << ctx.host() << ": " << gpu.reason << std::endl;
    return 2;
  }
  // Busy GPUs: other jobs' processes on this job's GPUs refuse the run before any GPU case.
  bool gpu_cases = false;
  for (const auto& p : plan)
    gpu_cases =
        gpu_cases || p.bench->case_needs_gpu(p.bench->params_on(p.params, *my_env, settings));
  if (!gpu_cases) return 0;
  busy = other_gpu_processes(ctx, nullptr);
  if (!busy.empty() && !opt.allow_shared_gpus && !opt.dry_run) {
    if (ctx.is_root())
      std::cerr << "clusterbench: refusing to run GPU cases: other processes use the GPUs:\n"
                << describe_busy(busy)
                << "wait for them to finish, or pass --allow-shared-gpus to measure beside them "
                   "(the records then say so)"
                << std::endl;
    return 2;
  }
  for (const auto& bg : busy)
    if (bg.host == ctx.host()) shared_gpus.push_back(bg);
  return 0;
}

int RunSession::State::check_cases() {
  std::string error;
  NodeEnv node{*my_env, gpu, ctx, settings};
  for (const auto& p : plan) {
    try {
      p.bench->check(p.bench->params_on(p.params, *my_env, settings), node);
    } catch (const InputError& e) {
      if (error.empty()) error = e.what();
    }
  }
  return setup_failed(ctx, error) ? 2 : 0;
}

namespace {

/// "note: N rounds: fewer than 5 repetitions a case; ..." (N from --rounds or CLUSTERBENCH_ROUNDS)
/// when the plan has a round case (one still to run, with `to_run_only`) and N is below
/// kMinSamples; "" otherwise. The run and its --dry-run say the same.
std::string few_rounds_note(const std::vector<PlannedEntry>& plan, int rounds, bool to_run_only) {
  const bool any = std::any_of(plan.begin(), plan.end(), [&](const PlannedEntry& p) {
    return p.in_rounds && (p.to_run || !to_run_only);
  });
  if (!any || rounds >= kMinSamples) return "";
  return "note: " + std::to_string(rounds) + (rounds == 1 ? " round" : " rounds") +
         ": fewer than " + std::to_string(kMinSamples) +
         " repetitions a case; compare cannot judge these cases (docs/compare.md)\n";
}

}  // namespace

void RunSession::State::print_dry_run() {
  if (!ctx.is_root()) return;
  if (resume.active) read_resume_records(resume);
  NodeEnv node{*my_env, gpu, ctx, settings};
  std::vector<CaseEstimate> rows;
  for (const auto& p : plan) {
    json params = p.bench->params_on(p.params, *my_env, settings);
    bool rerun = false;
    for (const auto& e : expected_cases(*p.bench, p.params, settings, ctx, envs)) {
      PlannedCase pc{p.bench->id(), e.params, level_name(e.level), {}};
      for (const auto& s : e.scopes)
        pc.case_keys.push_back(make_case_key(pc.benchmark, e.params, s));
      rerun = rerun || needs_rerun(pc, resume);
    }
    if (!rerun)
      rows.push_back({p.bench->id(), params, level_name(p.bench->case_level(params)), 0,
                      "done in the earlier run"});
    else
      rows.push_back(estimate_case(*p.bench, params, settings_for(p), node));
    if (p.in_rounds) rows.back().seconds *= opt.rounds;
  }
  std::string header = "clusterbench --dry-run: suite " + opt.suite +
                       (opt.rounds > 1 ? ", " + std::to_string(opt.rounds) + " rounds" : "") +
                       ", " + std::to_string(ctx.world_size()) + " rank(s) on " +
                       std::to_string(ctx.hosts().size()) + " node(s); nothing is run\n";
  // The spec is checked as a real run would check it (a missing or malformed table: exit 2).
  SpecChoice spec{resolve_spec_arg(opt.spec_path), "", "", "--spec"};
  if (spec.path.empty()) spec = hooks.choose_spec(envs);
  Spec loaded = load_spec(spec.path);
  header += "spec: " + loaded.name + " (" + spec.path + ", " + spec.selected_by + ")\n";
  header += few_rounds_note(plan, opt.rounds, false);
  if (!busy.empty())
    header += "note: other processes use the GPUs (a run refuses without --allow-shared-gpus):\n" +
              describe_busy(busy);
  std::cout << render_dry_run(rows, header) << std::flush;
}

void RunSession::State::choose_spec() {
  if (!opt.spec_path.empty()) {
    run.spec.path = resolve_spec_arg(opt.spec_path);
    // A resume without --spec keeps the earlier run's table, chosen as that run chose it.
    const bool earlier = resume.active && !given.spec_given && !resume.run.spec.selected_by.empty();
    run.spec.selected_by = earlier ? resume.run.spec.selected_by : "--spec";
  } else {
    run.spec = hooks.choose_spec(run.env);
  }
  Spec spec = load_spec(run.spec.path);
  run.spec.path = fs::absolute(run.spec.path).lexically_normal().string();
  run.spec.name = spec.name;
  run.spec.sha256 = sha256_file(run.spec.path);
  spec_chain = spec_chain_json(spec.extends_chain);
  spec_tiers = tiers_json(spec.tiers);
}

void RunSession::State::plan_rows() {
  NodeEnv node{*my_env, gpu, ctx, settings};
  for (auto& p : plan) {
    p.expected = expected_cases(*p.bench, p.params, settings, ctx, envs);
    for (const auto& e : p.expected) {
      PlannedCase pc{p.bench->id(), e.params, level_name(e.level), {}};
      for (const auto& s : e.scopes)
        pc.case_keys.push_back(make_case_key(pc.benchmark, e.params, s));
      run.plan.push_back(pc);
    }
    p.estimate_s = estimate_case(*p.bench, p.bench->params_on(p.params, *my_env, settings),
                                 settings_for(p), node)
                       .seconds;
    if (p.in_rounds) p.round_estimate_s = p.estimate_s, p.estimate_s *= opt.rounds;
  }
}

void RunSession::State::apply_resume() {
  if (resume.active) {
    // The earlier run's spec, hosts and plan, or a refusal that names what differs.
    std::vector<std::string> diffs = plan_differences(resume.run, run);
    if (run.spec.sha256 != resume.run.spec.sha256)
      diffs.push_back("spec: earlier " + resume.run.spec.path + " (sha256 " +
                      resume.run.spec.sha256 + "), now " + run.spec.path + " (sha256 " +
                      run.spec.sha256 + ")");
    for (const auto& d :
         spec_chain_differences(resume.run_json.value("spec_chain", json()), spec_chain))
      diffs.push_back(d);
    if (!diffs.empty()) {
      std::string msg = "--resume " + resume.dir + ": this run differs from the earlier one:";
      for (const auto& d : diffs) msg += "\n  " + d;
      throw InputError(msg);
    }
    read_resume_records(resume, true);
    run.argv = resume.run.argv;
    run.started_at = resume.run.started_at;
    run.env = resume.run.env;
  }
  size_t row = 0;
  for (auto& p : plan) {
    p.to_run = false;
    for (size_t i = 0; i < p.expected.size(); ++i)
      p.to_run = p.to_run || needs_rerun(run.plan[row++], resume);
  }
}

void RunSession::State::open_run_dir(const std::string& dir) {
  if (!opt.prometheus_path.empty())  // checked before any case runs, not after the suite
    hooks.check_output(opt.prometheus_path, "--prometheus", dir);
  if (resume.active) {  // the earlier run's abort was recorded; this run's may be too
    std::error_code ec;
    fs::remove(dir + "/.abort-recorded", ec);
  }
  sink = std::make_unique<Sink>(dir);
  if (resume.active) {
    // Each resume appends to "resumes": when, how, what it reran, and how the run had ended.
    int reruns = 0;
    for (const auto& p : plan) reruns += p.to_run;
    json resumes = resume.run_json.value("resumes", json::array());
    resumes.push_back({{"started_at", utc_now_iso()},
                       {"argv", opt.argv},
                       {"cases_rerun", reruns},
                       {"cases_done", static_cast<int>(plan.size()) - reruns},
                       {"earlier_exit_code", resume.run_json.value("exit_code", json(nullptr))},
                       {"earlier_finished_at", resume.run.finished_at},
                       {"earlier_aborted", resume.run.aborted}});
    sink->set_run_field("resumes", resumes);
    std::cout << "clusterbench: resuming " << dir << ": " << reruns << " of " << plan.size()
              << " planned case(s) to run\n";
  }
  sink->set_run_field("spec_chain", spec_chain);
  if (!busy.empty()) sink->set_run_field("shared_gpus", busy);
  sink->write_run(run);
  if (opt.out_dir.empty() && !resume.active) update_latest_link(opt.results_root, dir);
}

void RunSession::State::write_run_dir() {
  run.run_id = resume.active ? resume.run.run_id : make_run_id(ctx.host());
  run.argv = opt.argv;
  run.version = clusterbench_version();
  run.suite = opt.suite;
  run.only = opt.only;
  run.rounds = opt.rounds;
  run.set = opt.set;
  run.world_size = ctx.world_size();
  run.hosts = ctx.hosts();
  run.started_at = utc_now_iso();
  choose_spec();
  plan_rows();
  apply_resume();
  // A frozen output filesystem must not hold rank 0 in mkdir: found out by a child (sink.hpp).
  probe_output_writable(resume.active         ? resume.dir
                        : opt.out_dir.empty() ? opt.results_root
                                              : opt.out_dir,
                        std::min(30.0, given.phase_timeout_s / 2));
  const std::string dir =
      resume.active ? resume.dir
                    : new_run_dir(opt.out_dir, opt.results_root, run.run_id, opt.resumable);
  try {
    open_run_dir(dir);
  } catch (const std::exception&) {
    // Refused after this run took the directory (a full filesystem): leave nothing that blocks
    // a rerun. Not when the sink was never made: the lock may be another live run's.
    if (!resume.active && sink) {
      sink.reset();
      discard_new_run_dir(dir, opt.out_dir.empty());
    }
    throw;
  }
  std::cout << "clusterbench " << run.version << ": " << opt.what << " " << run.run_id << ", "
            << ctx.world_size() << " rank(s) on " << run.hosts.size() << " node(s)"
            << (opt.header_note.empty() ? ", suite " + run.suite : opt.header_note)
            << "\nspec: " << run.spec.path << " (" << run.spec.selected_by << ")\nresults: " << dir
            << "\n"
            << std::flush;
}

// --- cases ---------------------------------------------------------------------------------------

/// Rewrites run.json (mu held); a failure is printed, not thrown: the run is ending already, and
/// what it measured is in records.jsonl.
bool RunSession::State::write_run_or_warn(double wait_s) {
  if (!sink) return true;
  try {
    sink->write_run(run, wait_s);
    return true;
  } catch (const std::exception& e) {
    std::cerr << "clusterbench: " << e.what() << std::endl;
    return false;
  }
}

void RunSession::State::mark_aborted(const std::string& reason, bool keep_existing) {
  if (Watchdog::signal_received()) stopped_in_order = true;
  if (!ctx.is_root() || !sink) return;
  std::lock_guard<std::mutex> lock(mu);
  if (keep_existing && run.aborted) return;
  run.aborted = true;
  run.abort_reason = reason;
  run.finished_at = utc_now_iso();
  run.exit_code = 3;
  write_run_or_warn(kAbortWaitS);
}

void RunSession::State::append(const ResultRecord& rec) {
  if (!ctx.is_root() || !sink) return;
  try {
    sink->append(rec);
  } catch (const std::exception& e) {
    std::cerr << "clusterbench: " << e.what() << std::endl;
  }
}

void RunSession::State::record_abort(const std::string& reason, double stopped_s) {
  if (stopped_s > 0) {
    // This process is the one its peers waited for: it names no one, and leaves the record to
    // the rank that saw it stop (or to rank 0's report of the signal mpirun sends).
    std::cerr << "clusterbench: " << ctx.host() << " rank " << ctx.world_rank() << ": " << reason
              << "; this process was stopped for " << static_cast<int>(stopped_s)
              << " s just before" << std::endl;
    if (!ctx.is_root() || !sink) return;
  }
  if (!ctx.is_root()) {
    std::cerr << "clusterbench: " << ctx.host() << " rank " << ctx.world_rank() << ": " << reason
              << std::endl;
    // Rank 0 writes the records, and says so first (post_root_abort). When it neither said so
    // nor answers (stopped, killed, its node down), this rank writes what it can where it sees
    // the run directory. After a signal (mpirun ending the job because a rank died) mpirun's
    // SIGKILL follows within a second (odls_base_sigkill_timeout): ask briefly.
    const bool signalled = reason.rfind("terminated by signal", 0) == 0;
    if (channel && channel->root_state(signalled ? 0.3 : 2.0) == ProgressChannel::Root::silent)
      return record_abort_for_silent_root(reason);
    if (signalled) return;
    // Every rank's deadline passes at about the same time: give rank 0 time to write the failed
    // record and run.json before this rank's MPI_Abort kills it.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    return;
  }
  if (channel) channel->post_root_abort();  // before anything that may wait
  // The ranks and hosts that did not finish (core/progress.hpp), asked before the lock; not
  // after a signal: mpirun is ending the job (a rank died) and kills us soon after.
  const bool signalled = reason.rfind("terminated by signal", 0) == 0;
  Unfinished who = signalled || stopped_s > 0 ? Unfinished{} : who_did_not_finish(ctx);
  if (stopped_s > 0)
    who.text = "; this rank (0 on " + ctx.host() + ") was stopped for " +
               std::to_string(static_cast<int>(stopped_s)) + " s just before";
  std::lock_guard<std::mutex> lock(mu);
  if (abort_recorded) return;  // the deadline and a peer's abort raced
  abort_recorded = true;
  std::cerr << "clusterbench: run aborted: " << reason << who.text << std::endl;
  if (!sink) return;  // before the run directory: the message is all there is
  try {
    if (!sink->claim_abort(0.5)) {  // another rank saw this one stopped, and recorded it
      std::cerr << "clusterbench: another rank recorded the abort in " << sink->dir() << std::endl;
      return;
    }
  } catch (const std::exception& e) {  // the writer process is gone: write directly
    std::cerr << "clusterbench: " << e.what() << "; recording the abort directly" << std::endl;
    record_abort_directly(sink->dir(), reason + who.text, who.ranks);
    return;
  }
  for (auto& rec : in_progress) {
    rec.status = Status::failed;
    rec.message = in_progress_round + "aborted: " + reason + who.text;
    if (!who.ranks.empty()) rec.extra["ranks"] = who.ranks;
    try {
      sink->append(rec, 0);  // queued; run.json's write below waits for all of them
    } catch (const std::exception& e) {
      std::cerr << "clusterbench: " << e.what() << std::endl;
    }
  }
  run.aborted = true;
  run.abort_reason = reason + who.text;
  run.finished_at = utc_now_iso();
  run.exit_code = 3;
  write_run_or_warn(kAbortWaitS);
}

bool RunSession::State::record_abort_directly(const std::string& dir, const std::string& text,
                                              const json& ranks, std::vector<std::string> lines) {
  for (auto& rec : in_progress) {  // mu held by the caller
    rec.status = Status::failed;
    rec.message = in_progress_round + "aborted: " + text;
    if (!ranks.empty()) rec.extra["ranks"] = ranks;
    // A later round's case written by a rank that did not merge its rounds (rank 0 is stopped or
    // dead): its earlier rounds are on the case's last snapshot.
    if (!in_progress_round.empty() && !rec.extra.contains("rounds"))
      if (json earlier = snapshot_rounds(dir + "/records.jsonl", rec.case_key); !earlier.is_null())
        rec.extra["rounds"] = std::move(earlier);
    lines.push_back(dump_json(json(rec)));
  }
  try {
    if (!claim_abort_marker(dir)) {
      std::cerr << "clusterbench: another rank recorded the abort in " << dir << std::endl;
      return false;
    }
    append_record_lines(dir, lines);
    mark_run_json_aborted(dir, text);
    discard_report_files(dir);  // a report rank 0 was writing is not this run's verdict
    return true;
  } catch (const std::exception& e) {
    std::cerr << "clusterbench: " << e.what() << std::endl;
    return false;
  }
}

void RunSession::State::record_abort_for_silent_root(const std::string& reason) {
  const std::string root_host = ctx.rank_hosts().empty() ? "?" : ctx.rank_hosts()[0];
  const std::string silent = reason + "; did not finish: rank 0 on " + root_host +
                             " (no answer: process stopped or killed, or its node is down)";
  const std::string by =
      "; recorded by rank " + std::to_string(ctx.world_rank()) + " on " + ctx.host();
  std::error_code ec;
  std::string nothing;  // why this rank records nothing
  if (run_dir.empty() || !fs::exists(run_dir + "/run.json", ec))
    nothing = "rank 0's run directory " +
              (run_dir.empty() ? "is not known yet" : run_dir + " is not visible here");
  else if (run_json_finished(run_dir))  // rank 0 ended the run and exited before this rank
    nothing = run_dir + "/run.json: the run had finished";
  if (!nothing.empty()) {
    std::cerr << "clusterbench: run aborted: " << silent << "; " << nothing << ": nothing recorded"
              << std::endl;
    return;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (record_abort_directly(run_dir, silent + by,
                            json::array({{{"rank", 0}, {"host", root_host}, {"state", "silent"}}})))
    std::cerr << "clusterbench: run aborted: " << silent + by << std::endl;
}

bool RunSession::State::on_watchdog(const WatchdogEvent& e) {
  std::unique_lock<std::mutex> running(handler_mu);
  // The case saw the signal first (it polls signal_received()), stopped and marked the run
  // aborted; the run is ending in order (run_cases stops, the report follows). Its handler may
  // still be installed (the case is between its record and its end): its reason stands.
  if (e.kind == WatchdogEvent::Kind::signal && stopped_in_order) return false;
  if (ctx.is_root() && channel) channel->post_root_abort();
  if (e.kind != WatchdogEvent::Kind::signal || !signal_handler) {
    running.unlock();
    record_abort(e.reason, e.stopped_s);
    return true;
  }
  // A kill right after this still leaves an aborted run.json; a case that marked it in the
  // meantime keeps its own reason.
  mark_aborted(e.reason, /*keep_existing=*/true);
  std::optional<std::string> now = signal_handler(e.reason);
  if (!now) return false;  // the case stops in order
  mark_aborted(*now);
  if (ctx.is_root()) std::cerr << "clusterbench: run aborted: " << *now << std::endl;
  return true;
}

CaseEnv RunSession::State::case_env(const Settings& case_settings) {
  CaseEnv ce{ctx, case_settings, *my_env, gpu, run.run_id, reporter, shared_gpus, {}, {}, {}, {}};
  ce.append = [this](const ResultRecord& r) { append(r); };
  ce.mark_aborted = [this](const std::string& reason) { mark_aborted(reason); };
  ce.on_signal = [this](std::function<std::optional<std::string>(const std::string&)> h) {
    std::lock_guard<std::mutex> lock(handler_mu);
    signal_handler = std::move(h);
  };
  ce.abort_run = [this](const std::string& reason) {
    // Another rank's abort reaches rank 0 this way, which writes the record (progress.hpp).
    if (channel) channel->post_abort(reason);
    record_abort(reason);
  };
  return ce;
}

double RunSession::State::case_timeout(const PlannedEntry& p) const {
  // The hang deadline: --case-timeout, else the suite's (300/1200/3600 s) or, for a case whose
  // own estimate is longer (a fio runtime of minutes), twice that estimate plus a minute.
  if (opt.case_timeout_s > 0) return opt.case_timeout_s;
  double suite_s = settings.by_suite(300.0, 1200.0, 3600.0);
  return std::max(suite_s, 2 * p.bench->estimate_s(settings, p.params) + 60);
}

int RunSession::State::time_limit_step(size_t index) {
  if (opt.time_limit_s <= 0) return 0;
  long long step = 0;
  if (ctx.is_root()) {
    const PlannedEntry& p = plan[index];
    double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    double estimate = p.in_rounds ? p.round_estimate_s : p.estimate_s;
    step = elapsed >= opt.time_limit_s ? 2 : elapsed + estimate > opt.time_limit_s ? 1 : 0;
  }
  step = ctx.allreduce_sum(step);
  // After the first round every case has a record: a later round left out only has fewer
  // repetitions (its record says how many rounds ran).
  if (round > 1) return static_cast<int>(step);
  if (step == 1) skipped_for_limit.push_back(index);
  if (step == 2) stopped_at_limit = true, stop_index = index;
  return static_cast<int>(step);
}

void RunSession::State::start_in_progress(size_t index) {
  const PlannedEntry& p = plan[index];
  std::vector<ResultRecord> earlier;  // rank 0: the case's rounds so far, merged
  if (p.in_rounds && round_records.count(index))
    earlier = merge_rounds(round_records.at(index), opt.rounds, false);
  // Every rank knows the records the case should produce: whichever rank sees the abort (rank 0,
  // or another when rank 0 is stopped) can record them as failed.
  std::vector<ExpectedCase> expected =
      ctx.is_root() ? p.expected : expected_cases(*p.bench, p.params, settings, ctx, envs);
  std::lock_guard<std::mutex> lock(mu);
  in_progress.clear();
  in_progress_round =
      p.in_rounds ? "round " + std::to_string(round) + " of " + std::to_string(opt.rounds) + ": "
                  : "";
  for (const auto& e : expected)
    for (const auto& scope : e.scopes) {
      ResultRecord rec;
      rec.run_id = run.run_id;
      rec.benchmark = p.bench->id();
      rec.params = e.params;
      rec.scope = scope;
      rec.case_key = make_case_key(rec.benchmark, e.params, scope);
      rec.started_at = utc_now_iso();
      for (const auto& m : earlier)  // what the earlier rounds measured stays on the record
        if (m.case_key == rec.case_key && m.extra.contains("rounds"))
          rec.extra["rounds"] = m.extra["rounds"];
      in_progress.push_back(rec);
    }
}

void RunSession::State::run_one(size_t index) {
  const PlannedEntry& p = plan[index];
  // The params as this node runs them (a benchmark that resolves its case by node, as the burn-in
  // soak and the training step do, shows what it runs, not its empty plan entry).
  const std::string what =
      p.bench->id() + " " + dump_json(p.bench->params_on(p.params, *my_env, settings));
  start_in_progress(index);
  case_what = what;
  if (heartbeat)
    heartbeat->start_case(plan_place(index), what, p.in_rounds ? p.round_estimate_s : p.estimate_s);
  progress::next_case();
  watchdog->arm(what, case_timeout(p));
  test_stop_point("case:" + p.bench->id(), ctx.world_rank());
  CaseEnv ce = case_env(settings_for(p));
  if (p.in_rounds) ce.rounds = opt.rounds;
  CaseResult r = run_case(*p.bench, p.params, ce);
  refused = refused || r.refused;
  std::vector<std::string> gathered = ctx.gather(r.lines);
  // Writing the records, then agreeing to go on, has the phase deadline: a frozen or full output
  // filesystem ends the run instead of holding it. A rank other than 0 leaves the gather at once
  // (it only sends) and may wait here while rank 0 still measures: its deadline is the case's
  // plus the phase's.
  watchdog->arm("recording " + what, (ctx.is_root() ? 0 : case_timeout(p)) + given.phase_timeout_s,
                "phase", "(the output filesystem takes no writes: frozen, full or gone?)");
  {
    std::lock_guard<std::mutex> lock(mu);
    in_progress.clear();
    case_what.clear();
  }
  long long over = 0;
  if (ctx.is_root()) {
    std::vector<std::string> lines = lines_to_write(p.bench->case_level(p.params), gathered);
    bool last = true;
    if (p.in_rounds) lines = round_lines(index, lines, &last);
    write_case_lines(p, lines);
    if (last)
      print_case_lines(index, lines);
    else if (heartbeat)
      heartbeat->end_case();
    over = last && round < opt.rounds;  // waived or failed: its record is final now
  }
  // A case waived or failed in a round is not run again (rank 0 decides for all).
  if (p.in_rounds && round < opt.rounds) plan[index].rounds_over = ctx.allreduce_sum(over) > 0;
}

std::vector<std::string> RunSession::State::round_lines(size_t index,
                                                        const std::vector<std::string>& lines,
                                                        bool* last) {
  std::vector<ResultRecord> recs;
  try {
    for (const auto& text : lines)
      for (size_t pos = 0; pos < text.size();) {
        size_t nl = std::min(text.find('\n', pos), text.size());
        if (nl > pos) recs.push_back(json::parse(text.substr(pos, nl - pos)).get<ResultRecord>());
        pos = nl + 1;
      }
  } catch (const std::exception& e) {  // not a record: written as it came, each round
    std::cerr << ("clusterbench: round " + std::to_string(round) + ": a record of " +
                  plan[index].bench->id() + " could not be merged (" + e.what() + ")\n")
              << std::flush;
    *last = true;
    return lines;
  }
  auto& rounds = round_records[index];
  rounds.push_back(std::move(recs));
  std::vector<ResultRecord> merged = merge_rounds(rounds, opt.rounds, round >= opt.rounds);
  // Final after the last round, or once the case was waived or failed (merge_rounds keeps it).
  *last = round >= opt.rounds || std::any_of(merged.begin(), merged.end(),
                                             [](const auto& r) { return r.status != Status::ok; });
  std::vector<std::string> out;
  for (auto& r : merged) {
    if (*last) r.extra.erase("snapshot");
    out.push_back(dump_json(json(r)));
  }
  return out;
}

std::string RunSession::State::plan_place(size_t index, double* left_s) const {
  size_t total = 0, done = 0;
  double left = 0, per_round = 0;  // per_round: one round of the round cases (--rounds)
  for (size_t i = 0; i < plan.size(); ++i) {
    const PlannedEntry& p = plan[i];
    if (!p.to_run) continue;
    ++total;
    per_round += p.in_rounds ? p.round_estimate_s : 0;
    if (i <= index)
      ++done;
    else if (round == 1 || p.in_rounds)
      left += p.in_rounds ? p.round_estimate_s : p.estimate_s;
  }
  const int r = std::min(round, opt.rounds);  // end_rounds: the rounds the case ran
  if (left_s) *left_s = rounds_ended ? 0 : left + (opt.rounds - r) * per_round;
  const bool any = std::any_of(plan.begin(), plan.end(), [](const auto& e) { return e.in_rounds; });
  if (opt.rounds == 1 || !any) return std::to_string(done) + "/" + std::to_string(total);
  return std::to_string(done) + "/" + std::to_string(total) + " round " + std::to_string(r) + "/" +
         std::to_string(opt.rounds);
}

void RunSession::State::print_case_lines(size_t index, const std::vector<std::string>& lines) {
  double left_s = 0;
  const std::string place = plan_place(index, &left_s);
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  for (const auto& line : lines) {
    ResultRecord r;
    try {
      r = json::parse(line).get<ResultRecord>();
    } catch (const std::exception&) {
      continue;  // not a record line
    }
    // A collective's own table shows it, unless it ran in rounds (its table is not printed).
    if (r.status == Status::ok && r.benchmark.rfind("collectives.", 0) == 0 &&
        !(r.extra.is_object() && r.extra.contains("rounds")))
      continue;
    if (r.status == Status::waived && !waived_said.insert(r.benchmark + "\n" + r.message).second)
      continue;
    std::cout << progress_prefix(place, elapsed, left_s) << " " << case_line(r) << "\n";
  }
  std::cout << std::flush;
  if (heartbeat) heartbeat->printed(), heartbeat->end_case();
}

void RunSession::State::write_case_lines(const PlannedEntry& p,
                                         const std::vector<std::string>& lines) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (abort_recorded) return;  // once an abort is recorded, the case's record is its
  }
  // Not under `mu`: a write the filesystem holds must not keep the watchdog from recording.
  const std::string what = p.bench->id() + " " + dump_json(p.params);
  size_t done = 0;
  try {
    for (; done < lines.size(); ++done) sink->append_line(lines[done]);
  } catch (const std::exception& e) {
    // One write each: mpirun forwards a rank's stderr by write, so a message written in pieces
    // can be split by a line of its stdout.
    std::cerr << ("clusterbench: cannot record " + what + ": " + e.what() + "\n") << std::flush;
    const std::string reason = std::string("cannot write records: ") + e.what();
    std::lock_guard<std::mutex> lock(mu);
    run.aborted = true;
    run.abort_reason = reason;
    if (!sink->writer_gone()) return;
    // The record writer was killed: this case's records and the abort are written here.
    abort_recorded = true;
    in_progress.clear();
    if (record_abort_directly(sink->dir(), reason, json::array(),
                              {lines.begin() + static_cast<long>(done), lines.end()}))
      std::cerr << ("clusterbench: recorded " + what + " and the abort directly in " + sink->dir() +
                    "\n")
                << std::flush;
  }
}

// --- finish --------------------------------------------------------------------------------------

void RunSession::State::end_health() {
  // Each leader reads its node; rank 0 puts the snapshots into run.env; reports/ computes the
  // deltas (docs/health.md).
  std::string end_health;
  if (ctx.is_leader()) {
    json end = health::read_counters(opt.fs_root);
    end["xid_watch"] = xid_watcher.stop();
    end_health = dump_json(json{{"host", ctx.host()}, {"end", std::move(end)}});
  }
  std::vector<std::string> ends = ctx.gather(end_health);
  if (!ctx.is_root()) return;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& g : ends) {
    if (g.empty()) continue;
    json j = json::parse(g);
    for (auto& e : run.env)
      if (e.host == j["host"].get<std::string>()) e.health["end"] = j["end"];
  }
}

void RunSession::State::note_time_limit() {
  if (!ctx.is_root() || (!stopped_at_limit && skipped_for_limit.empty())) return;
  json not_run = json::array();
  auto add = [&](size_t i) {
    if (plan[i].to_run)
      for (const auto& e : plan[i].expected)
        not_run.push_back({{"benchmark", plan[i].bench->id()}, {"params", e.params}});
  };
  for (size_t i : skipped_for_limit) add(i);
  if (stopped_at_limit)
    for (size_t i = stop_index; i < plan.size(); ++i) add(i);
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  sink->set_run_field("time_limit", {{"seconds", opt.time_limit_s},
                                     {"stopped_after_s", elapsed},
                                     {"skipped", skipped_for_limit.size()},
                                     {"not_run", not_run}});
  std::string names;
  for (size_t k = 0; k < skipped_for_limit.size() && k < 5; ++k) {
    const PlannedEntry& p = plan[skipped_for_limit[k]];
    names += (k ? ", " : "") + p.bench->id() + " " + dump_json(p.params) + " (" +
             console_number(p.in_rounds ? p.round_estimate_s : p.estimate_s) + " s)";  // as decided
  }
  if (skipped_for_limit.size() > 5)
    names += " and " + std::to_string(skipped_for_limit.size() - 5) + " more";
  std::cout << "clusterbench: --time-limit " << console_number(opt.time_limit_s)
            << " s: the cases ended after " << console_number(elapsed) << " s; "
            << skipped_for_limit.size()
            << " case(s) skipped, as each would have ended past the limit (estimate)"
            << (names.empty() ? "" : ": " + names)
            << (stopped_at_limit ? "; the limit was reached before the plan's end" : "") << "; "
            << not_run.size() << " planned case(s) not run (MISSING in the report)" << std::endl;
}

int RunSession::State::make_report() {
  int code = 0;
  try {
    reporter.write_json(sink->dir() + "/gbench.json", resume.active);
    {
      std::lock_guard<std::mutex> lock(mu);
      run.finished_at = utc_now_iso();
      // The verdict is not known until the report is made: null until then (a kill during the
      // report must not leave 0, "PASS", behind).
      if (run.aborted)
        run.exit_code = 3;
      else
        run.exit_code.reset();
      sink->write_run(run);
    }
    code = hooks.report(sink->dir(), opt.prometheus_path);  // the verdict, made once
  } catch (const InputError& e) {
    std::cerr << "clusterbench: " << e.what() << std::endl;
    code = 2;
  } catch (const std::exception& e) {  // a full output filesystem, most likely
    std::cerr << "clusterbench: run not complete: its report could not be made: " << e.what()
              << "; what was recorded is in " << sink->dir()
              << "/records.jsonl: once that is fixed, `clusterbench report " << sink->dir() << "`"
              << std::endl;
    code = 3;
  }
  std::lock_guard<std::mutex> lock(mu);
  run.exit_code = code;
  if (!write_run_or_warn() && code != 2 && code != 3) {
    std::cerr << "clusterbench: run not complete: run.json could not be written with the verdict "
                 "(above)"
              << std::endl;
    code = 3;
  }
  return code;
}

// --- the session ---------------------------------------------------------------------------------

RunSession::RunSession(const Context& ctx, RunOptions opt, RunHooks hooks, const Registry& registry)
    : s_(std::make_unique<State>(ctx, std::move(opt), std::move(hooks), registry)) {}

RunSession::~RunSession() = default;

void RunSession::State::watch() {
  if (!watchdog) watchdog.emplace([this](const WatchdogEvent& e) { return on_watchdog(e); });
}

void RunSession::State::phase(const std::string& what, const std::string& hint) {
  watch();
  watchdog->arm(what, given.phase_timeout_s, "phase", hint);
}

void RunSession::plan() {
  s_->phase("plan");  // --resume reads the earlier run on rank 0 and broadcasts it
  s_->plan_cases();
}

int RunSession::setup() {
  State& s = *s_;
  s.phase("set-up");
  if (!s.channel) s.channel.emplace(s.ctx, [&s](const std::string& r) { s.watchdog->trip(r); });
  test_stop_point("set-up", s.ctx.world_rank());
  if (int rc = s.inventory_and_gpus()) return rc;
  if (int rc = s.check_cases()) return rc;
  if (s.opt.dry_run) {
    s.print_dry_run();
    s.dry_run_done = true;
    return 0;
  }
  std::string error;
  long long stalled = 0;
  if (s.ctx.is_root()) {
    try {
      s.write_run_dir();
    } catch (const OutputStalled& e) {
      error = e.what();
      stalled = 1;
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (setup_failed(s.ctx, error)) return s.ctx.allreduce_sum(stalled) > 0 ? 3 : 2;
  s.run.run_id = s.ctx.bcast(s.run.run_id);
  s.run_dir = s.ctx.bcast(s.sink ? s.sink->dir() : "");
  // The chosen table's storage tiers, for io.tiers on every rank.
  s.settings.set_spec_tiers(json::parse(s.ctx.bcast(s.spec_tiers.dump())));
  std::string mask;
  for (const auto& p : s.plan) mask += p.to_run ? '1' : '0';
  mask = s.ctx.bcast(mask);
  for (size_t i = 0; i < s.plan.size() && i < mask.size(); ++i) s.plan[i].to_run = mask[i] == '1';
  return 0;
}

bool RunSession::dry_run_done() const { return s_->dry_run_done; }

void RunSession::run_cases() {
  State& s = *s_;
  s.watch();
  if (s.ctx.is_root()) s.heartbeat.emplace(8.0, std::cout, s.t0);
  if (!s.channel) s.channel.emplace(s.ctx, [&s](const std::string& r) { s.watchdog->trip(r); });
  // --rounds: the first round runs the plan; each later one its round cases again.
  if (s.ctx.is_root()) std::cout << few_rounds_note(s.plan, s.opt.rounds, true);
  for (s.round = 1; s.round <= s.opt.rounds; ++s.round)
    if (!s.run_round()) break;
  if (s.ctx.is_root()) s.end_rounds();
}

void RunSession::State::end_rounds() {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (run.aborted) return;  // the snapshots stand
  }
  size_t cut = 0;
  rounds_ended = true;
  for (const auto& [index, rounds] : round_records) {
    if (static_cast<int>(rounds.size()) >= opt.rounds || plan[index].rounds_over) continue;
    ++cut;
    round = static_cast<int>(rounds.size());  // its line says the rounds it ran
    std::vector<std::string> lines;
    for (const auto& r : merge_rounds(rounds, opt.rounds, true))
      lines.push_back(dump_json(json(r)));
    write_case_lines(plan[index], lines);
    print_case_lines(index, lines);
  }
  if (cut > 0)
    std::cout << "note: the run ended before its last round (--time-limit): " << cut
              << " case(s) ran fewer than " << opt.rounds
              << " rounds; their records hold the rounds that ran (compare needs " << kMinSamples
              << ")\n"
              << std::flush;
}

bool RunSession::State::run_round() {
  const std::string of_round = opt.rounds > 1 ? " (round " + std::to_string(round) + " of " +
                                                    std::to_string(opt.rounds) + ")"
                                              : "";
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!plan[i].to_run) continue;  // --resume: done in the earlier run
    if (round > 1 && (!plan[i].in_rounds || plan[i].rounds_over)) continue;
    phase("the start of case " + std::to_string(i + 1) + " of " + std::to_string(plan.size()) +
          of_round);
    if (const int step = time_limit_step(i); step == 2)
      return false;
    else if (step == 1)
      continue;
    run_one(i);
    // A record that cannot be written, or a case stopped in order by a signal, ends the run.
    bool aborted = false;
    if (ctx.is_root()) {
      std::lock_guard<std::mutex> lock(mu);
      aborted = run.aborted;
    }
    if (ctx.allreduce_sum(aborted ? 1 : 0) > 0) return false;
  }
  return true;
}

int RunSession::finish() {
  State& s = *s_;
  s.phase("finish (end of run, health counters)");
  for (const Benchmark* b : s.benchmarks) b->end_run();
  s.end_health();
  const long long refused = s.ctx.allreduce_sum(s.refused ? 1 : 0);
  if (s.ctx.is_root() && refused > 0)
    std::cerr << "clusterbench: " << refused << " case(s) refused (see their records)\n";
  s.note_time_limit();
  test_stop_point("report", s.ctx.world_rank());
  s.phase("report",
          "(rank 0 writes the report: its output filesystem takes no writes, or a peer did not "
          "arrive: frozen, full, stopped, dead or hung?)");
  int code = s.ctx.is_root() ? s.make_report() : 0;
  code = static_cast<int>(s.ctx.allreduce_sum(code));
  s.watchdog->disarm();
  return code;
}

int RunSession::run() {
  plan();
  if (int rc = setup()) return rc;
  if (dry_run_done()) return 0;
  run_cases();
  return finish();
}

const RunRecord& RunSession::record() const { return s_->run; }

std::string RunSession::dir() const { return s_->sink ? s_->sink->dir() : ""; }

int run_command(const RunOptions& opt, const RunHooks& hooks) {
  RunSession session(Context::get(), opt, hooks);
  return session.run();
}

// --- helpers -------------------------------------------------------------------------------------

std::string make_run_id(const std::string& host) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  // The host names a directory: keep it to characters that are safe in a path.
  std::string safe;
  for (char c : host)
    safe +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_';
  return std::string(buf) + "-" + safe.substr(0, 64);
}

EnvRecord collect_run_env(const Context& ctx, const std::string& fs_root) {
  InventoryOptions io;
  io.fs_root = fs_root;
  io.host = ctx.host();
  EnvRecord env = collect_env(io);
  env.versions.mpi = ctx.mpi_version();
  env.versions.clusterbench = clusterbench_version();
  env.health["start"] = health::read_counters(fs_root, io.query_nvml);
  return env;
}

std::vector<EnvRecord> allgather_envs(const Context& ctx, const EnvRecord& leader_env) {
  std::vector<EnvRecord> envs;
  for (const auto& g : ctx.allgather(ctx.is_leader() ? dump_json(json(leader_env)) : ""))
    if (!g.empty()) envs.push_back(json::parse(g).get<EnvRecord>());
  return envs;
}

std::string new_run_dir(const std::string& out_dir, const std::string& results_root,
                        const std::string& run_id, bool resume_hint) {
  std::string dir = out_dir;
  if (dir.empty()) {
    dir = results_root + "/" + run_id;
    for (int i = 2; fs::exists(dir); ++i)
      dir = results_root + "/" + run_id + "-" + std::to_string(i);
    return dir;
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return dir;
  if (fs::exists(dir + "/run.json") ||
      (fs::exists(dir + "/records.jsonl") && fs::file_size(dir + "/records.jsonl", ec) > 0))
    throw InputError(dir + ": already holds a run; choose an empty --out directory" +
                     (resume_hint ? " (or --resume " + dir + ")" : std::string()));
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    std::error_code size_ec;
    if (name == "records.jsonl" && e.file_size(size_ec) == 0) continue;
    found.push_back(name);
  }
  if (found.empty()) return dir;
  std::sort(found.begin(), found.end());
  std::string shown;
  for (size_t i = 0; i < found.size() && i < 3; ++i) shown += (i ? ", " : "") + found[i];
  if (found.size() > 3) shown += " and " + std::to_string(found.size() - 3) + " more";
  throw InputError(dir + ": not empty and not a clusterbench run (holds " + shown +
                   "); choose an empty or new --out directory");
}

bool setup_failed(const Context& ctx, const std::string& error) {
  if (ctx.allreduce_sum(error.empty() ? 0 : 1) == 0) return false;
  std::vector<std::string> errors = ctx.gather(error);
  for (size_t r = 0; r < errors.size(); ++r) {
    if (errors[r].empty()) continue;
    std::cerr << "clusterbench: "
              << (r == 0 || ctx.world_size() == 1 ? "" : "rank " + std::to_string(r) + ": ")
              << errors[r] << std::endl;
    break;
  }
  return true;
}

}  // namespace clusterbench
