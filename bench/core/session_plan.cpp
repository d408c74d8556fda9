// The session's plan: the suite's benchmarks and their cases, their rows of run.json, a resume
// against the earlier run, the dry run, and a case's place in the plan (session_state.hpp).
#include <algorithm>
#include <iostream>

#include "core/api/error.hpp"
#include "core/rounds.hpp"
#include "core/selection.hpp"
#include "core/session_state.hpp"
#include "records/spec.hpp"

namespace clusterbench {

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

std::string few_rounds_note(const std::vector<PlannedEntry>& plan, int rounds, bool to_run_only) {
  const bool any = std::any_of(plan.begin(), plan.end(), [&](const PlannedEntry& p) {
    return p.in_rounds && (p.to_run || !to_run_only);
  });
  if (!any || rounds >= kMinSamples) return "";
  return "note: " + std::to_string(rounds) + (rounds == 1 ? " round" : " rounds") +
         ": fewer than " + std::to_string(kMinSamples) +
         " repetitions a case; compare cannot judge these cases (docs/compare.md)\n";
}

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

std::string RunSession::State::plan_place(size_t index, double* left_s) const {
  size_t total = 0, done = 0;
  std::vector<CaseCost> costs;
  costs.reserve(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    const PlannedEntry& p = plan[i];
    costs.push_back(
        {p.to_run, p.in_rounds, p.in_rounds ? p.round_estimate_s : p.estimate_s, p.measured_s});
    if (!p.to_run) continue;
    ++total;
    if (i <= index) ++done;
  }
  const int r = std::min(round, opt.rounds);  // end_rounds: the rounds the case ran
  if (left_s) *left_s = rounds_ended ? 0 : time_left(costs, index, round, opt.rounds);
  const bool any = std::any_of(plan.begin(), plan.end(), [](const auto& e) { return e.in_rounds; });
  if (opt.rounds == 1 || !any) return std::to_string(done) + "/" + std::to_string(total);
  return std::to_string(done) + "/" + std::to_string(total) + " round " + std::to_string(r) + "/" +
         std::to_string(opt.rounds);
}

}  // namespace clusterbench
