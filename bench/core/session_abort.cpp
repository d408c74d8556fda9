// The session at an abort: a hang, a signal, a failed communicator or a record that cannot be
// written ends the run with its failed records and an aborted run.json, written by rank 0, or by
// another rank when rank 0 is silent (session_state.hpp).
#include <filesystem>
#include <iostream>
#include <thread>

#include "core/rounds.hpp"
#include "core/session_state.hpp"

namespace clusterbench {

namespace fs = std::filesystem;

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
  if (!write_run_or_warn(kAbortWaitS)) sink->kill_stopped_writer();
}

bool RunSession::State::record_abort_directly(const std::string& dir, const std::string& text,
                                              const json& ranks,
                                              const std::vector<ResultRecord>& recs) {
  std::vector<std::string> lines;
  for (const auto& rec : recs) lines.push_back(dump_json(json(rec)));
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

}  // namespace clusterbench
