// The run session (session.hpp): its steps in order. The state and each step's work are in
// session_state.hpp and session_{plan,setup,cases,abort,finish}.cpp.
#include "core/session.hpp"

#include <iostream>

#include "core/session_state.hpp"

namespace clusterbench {

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

}  // namespace clusterbench
