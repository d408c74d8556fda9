// The session's finish: the health counters' end snapshots, the --time-limit note, gbench.json,
// run.json completed, and the report (session_state.hpp).
#include <iostream>

#include "core/api/error.hpp"
#include "core/session_state.hpp"

namespace clusterbench {

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

}  // namespace clusterbench
