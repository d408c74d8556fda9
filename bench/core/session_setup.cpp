// The session's set-up: inventory, GPU disposition, busy GPUs, checks, the spec table and the run
// directory with run.json written before the first case (session_state.hpp).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "core/api/error.hpp"
#include "core/session_state.hpp"
#include "core/version.hpp"
#include "env/inventory.hpp"
#include "records/spec.hpp"

namespace clusterbench {

namespace fs = std::filesystem;

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
