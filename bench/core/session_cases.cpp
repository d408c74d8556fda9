// The session's cases: one at a time on every rank, under the watchdog's deadline, their records
// gathered and written by rank 0 and each printed as a console line; --rounds and --time-limit
// (session_state.hpp).
#include <algorithm>
#include <iostream>

#include "core/rounds.hpp"
#include "core/session_state.hpp"

namespace clusterbench {

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
  const auto case_t0 = Clock::now();
  CaseResult r = run_case(*p.bench, p.params, ce);
  plan[index].measured_s = std::chrono::duration<double>(Clock::now() - case_t0).count();
  refused = refused || r.refused;
  // Records cross ranks as JSON lines; rank 0 keeps its own as they are.
  std::vector<std::string> gathered = ctx.gather(ctx.is_root() ? "" : records_text(r.records));
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
    std::vector<ResultRecord> recs =
        records_to_write(p.bench->case_level(p.params), std::move(r.records), gathered);
    bool last = true;
    std::vector<ResultRecord> own;  // this round's records, for its console lines
    if (p.in_rounds) {
      own = recs;
      recs = merge_round(index, std::move(recs), &last);
    }
    write_case_records(p, recs);
    print_case_lines(index, last ? recs : own, r.table_printed, !last);
    over = last && round < opt.rounds;  // waived or failed: its record is final now
  }
  // A case waived or failed in a round is not run again (rank 0 decides for all). Rank 0 has
  // written its records by now: what it waits for here is the other ranks, not the filesystem.
  if (p.in_rounds && round < opt.rounds) {
    if (ctx.is_root())
      watchdog->arm("waiting for the other ranks after " + what, given.phase_timeout_s, "phase",
                    "(a rank stopped or dead?)");
    plan[index].rounds_over = ctx.allreduce_sum(over) > 0;
  }
}

std::vector<ResultRecord> RunSession::State::merge_round(size_t index,
                                                         std::vector<ResultRecord> recs,
                                                         bool* last) {
  auto& rounds = round_records[index];
  rounds.push_back(std::move(recs));
  std::vector<ResultRecord> merged = merge_rounds(rounds, opt.rounds, round >= opt.rounds);
  // Final after the last round, or once the case was waived or failed (merge_rounds keeps it).
  *last = round >= opt.rounds || std::any_of(merged.begin(), merged.end(),
                                             [](const auto& r) { return r.status != Status::ok; });
  if (*last)
    for (auto& r : merged) r.extra.erase("snapshot");
  return merged;
}

void RunSession::State::print_case_lines(size_t index, const std::vector<ResultRecord>& recs,
                                         bool table_printed, bool round_only) {
  double left_s = 0;
  const std::string place = plan_place(index, &left_s);
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  for (const ResultRecord& r : recs) {
    // A case that printed its own table (a collective's rows) shows its numbers there.
    if (r.status == Status::ok && table_printed) continue;
    if (r.status == Status::waived && !waived_said.insert(r.benchmark + "\n" + r.message).second)
      continue;
    std::cout << progress_prefix(place, elapsed, left_s) << (round_only ? " this round: " : " ")
              << case_line(r) << "\n";
  }
  std::cout << std::flush;
  if (heartbeat) heartbeat->printed(), heartbeat->end_case();
}

void RunSession::State::write_case_records(const PlannedEntry& p,
                                           const std::vector<ResultRecord>& recs) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (abort_recorded) return;  // once an abort is recorded, the case's record is its
  }
  // Not under `mu`: a write the filesystem holds must not keep the watchdog from recording.
  const std::string what = p.bench->id() + " " + dump_json(p.params);
  size_t done = 0;
  try {
    for (; done < recs.size(); ++done) sink->append(recs[done]);
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
                              {recs.begin() + static_cast<long>(done), recs.end()}))
      std::cerr << ("clusterbench: recorded " + what + " and the abort directly in " + sink->dir() +
                    "\n")
                << std::flush;
  }
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
    const std::vector<ResultRecord> recs = merge_rounds(rounds, opt.rounds, true);
    write_case_records(plan[index], recs);
    print_case_lines(index, recs, false);
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

}  // namespace clusterbench
