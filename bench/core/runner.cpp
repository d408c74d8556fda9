// The run (runner.hpp): inventory, plan, spec choice, measurement loop, sink, watchdog, report.
#include "core/runner.hpp"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

#include "core/cleanup.hpp"
#include "core/error.hpp"
#include "gpu/loader.hpp"
#include "env/health.hpp"
#include "env/inventory.hpp"
#include "core/progress.hpp"
#include "core/run_control.hpp"
#include "core/sink.hpp"
#include "records/spec.hpp"
#include "core/version.hpp"
#include "core/watchdog.hpp"

namespace clusterbench {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double suite_min_time(const std::string& suite) {
  return suite == "ci" ? 0.05 : suite == "quick" ? 0.5 : 2.0;
}

std::string specs_dir() {
  if (const char* d = std::getenv("CLUSTERBENCH_SPECS_DIR"); d && *d) return d;
  return std::string(CLUSTERBENCH_SOURCE_DIR) + "/reports/specs";
}

std::vector<const Benchmark*> select_benchmarks(const std::vector<std::string>& only) {
  std::vector<const Benchmark*> out;
  const auto& all = Registry::get().all();
  for (const auto& pattern : only) {
    bool any = std::any_of(all.begin(), all.end(),
                           [&](const auto& b) { return glob_match(pattern, b->id()); });
    if (!any) {
      std::string known;
      for (const auto& b : all) known += "\n  " + b->id();
      throw InputError("--only '" + pattern + "' matches no benchmark; known benchmarks:" + known);
    }
  }
  for (const auto& b : all) {
    bool take = only.empty() || std::any_of(only.begin(), only.end(), [&](const std::string& p) {
                  return glob_match(p, b->id());
                });
    if (take) out.push_back(b.get());
  }
  return out;
}

GpuDisposition gpu_disposition(const EnvRecord& env, bool load_plugin) {
  GpuDisposition d;
  if (env.gpu_status.on_pci == 0 && env.gpus.empty()) {
    d.reason = "no NVIDIA GPU on the PCI bus" +
               (env.fs_root.empty() || env.fs_root == "/" ? std::string() : " of " + env.fs_root);
    return d;
  }
  if (env.gpu_status.nvml != "ok" && CLUSTERBENCH_HAVE_NVML) {
    d.status = "failed";
    d.reason = "NVIDIA GPUs on the PCI bus but NVML failed: " + env.gpu_status.nvml;
    return d;
  }
  if (!load_plugin) {
    d.status = "run";
    return d;
  }
  const GpuPlugin& p = load_gpu_plugin();
  if (!p.built) {
    d.reason = p.error;  // a build without CUDA waives, with the reason
    return d;
  }
  if (!p.initialised) {
    d.status = "failed";
    d.reason = "GPU plugin " + p.path + ": " + p.error;
    d.deployment_error = p.driver_insufficient;
    return d;
  }
  if (p.info.device_count == 0) {
    d.status = "failed";
    d.reason = "NVIDIA GPUs on the PCI bus but CUDA sees none";
    return d;
  }
  d.status = "run";
  return d;
}

namespace {

/// Collects Google Benchmark's runs of the whole run; rank 0 echoes them to the console.
class CollectingReporter : public benchmark::BenchmarkReporter {
 public:
  /// No colour codes: under mpirun each rank's stdout is a pseudo-terminal even when the job's
  /// output goes to a log file, so isatty cannot tell.
  explicit CollectingReporter(bool console)
      : console_(console), console_reporter_(benchmark::ConsoleReporter::OO_Tabular) {}
  bool ReportContext(const Context& context) override {
    if (console_ && !context_printed_) context_printed_ = console_reporter_.ReportContext(context);
    return true;
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    runs_.insert(runs_.end(), runs.begin(), runs.end());
    if (console_) console_reporter_.ReportRuns(runs);
  }
  /// Writes every collected run once, with Google Benchmark's own JSON reporter.
  void write_json(const std::string& path) {
    std::ofstream out(path);
    benchmark::JSONReporter json_reporter;
    json_reporter.SetOutputStream(&out);
    json_reporter.SetErrorStream(&std::cerr);
    json_reporter.ReportContext(Context());
    json_reporter.ReportRuns(runs_);
    json_reporter.Finalize();
  }

 private:
  bool console_;
  bool context_printed_ = false;
  benchmark::ConsoleReporter console_reporter_;
  std::vector<Run> runs_;
};

/// Writes the run's Google Benchmark JSON to `path`. On --resume the earlier file's entries are
/// kept, except those this job measured again (same name), so the file covers the whole run.
void write_gbench(CollectingReporter& reporter, const std::string& path, bool resumed) {
  json earlier;
  if (resumed) {
    std::ifstream in(path);
    try {
      if (in) earlier = json::parse(in);
    } catch (const std::exception& e) {
      std::cerr << "clusterbench: " << path << ": earlier entries not kept (" << e.what() << ")\n";
    }
  }
  reporter.write_json(path);
  if (!earlier.is_object() || !earlier.contains("benchmarks")) return;
  std::ifstream in(path);
  json now = json::parse(in);
  std::set<std::string> names;
  for (const auto& b : now["benchmarks"]) names.insert(b.value("name", ""));
  json merged = json::array();
  for (const auto& b : earlier["benchmarks"])
    if (!names.count(b.value("name", ""))) merged.push_back(b);
  for (const auto& b : now["benchmarks"]) merged.push_back(b);
  now["benchmarks"] = std::move(merged);
  write_file_atomic(path, now.dump(2) + "\n");
}

/// CaseRun for one rank of one case.
class CaseRunImpl : public CaseRun {
 public:
  CaseRunImpl(const Benchmark& b, const json& params, const Settings& s, const Context& c,
              const EnvRecord& env, const Group& group, CollectingReporter& reporter,
              bool combine_max)
      : bench_(b),
        params_(params),
        settings_(s),
        ctx_(c),
        env_(env),
        group_(group),
        reporter_(reporter),
        combine_max_(combine_max) {}

  const json& params() const override { return params_; }
  const Settings& settings() const override { return settings_; }
  const Context& ctx() const override { return ctx_; }
  const EnvRecord& env() const override { return env_; }
  double min_time() const override {
    return settings_.get_double(bench_.id(), "min_time", suite_min_time(settings_.suite()));
  }

  void exec(const std::function<double(long long)>& batch, const std::string& label,
            const std::function<double(long long)>& paired) override {
    // Calibrate: one operation (this also warms up), slowest rank's time decides the batch.
    long long n = 1;
    double t1 = timed(batch, 1);
    double target = min_time() / 20.0;
    if (t1 > 0 && t1 < target) n = static_cast<long long>(std::ceil(target / t1));
    std::vector<double> nv = {static_cast<double>(n)};
    group_.allreduce_max(nv);
    n = static_cast<long long>(nv[0]);
    batch_ = n;

    std::string name = bench_.id() + "/" + params_.dump() + (label.empty() ? "" : "/" + label);
    auto* reg = benchmark::RegisterBenchmark(name.c_str(), [&, n](benchmark::State& st) {
      own_.clear();
      max_.clear();
      paired_.clear();
      for (auto _ : st) {
        std::vector<double> v = {0, 0};
        try {
          v[0] = timed(batch, n);
        } catch (const AbortRun&) {
          throw;  // the run ends now: peers may wait inside the operation, not in the lock-step
        } catch (...) {
          error_ = std::current_exception();
          v[1] = 1;
        }
        double mine = v[0];
        try {
          group_.allreduce_max(v);
        } catch (...) {
          if (!error_) error_ = std::current_exception();
          st.SkipWithError("lock-step reduction failed");
          break;
        }
        if (v[1] > 0) {
          st.SkipWithError("a rank failed");
          break;
        }
        st.SetIterationTime(v[0]);
        own_.push_back(mine / static_cast<double>(n));
        max_.push_back(v[0] / static_cast<double>(n));
        if (!paired) continue;
        st.PauseTiming();  // the entry's CPU time is the timed batch's alone
        try {
          paired_.push_back(paired(n) / static_cast<double>(n));
        } catch (const AbortRun&) {
          throw;
        } catch (...) {
          error_ = std::current_exception();
        }
        st.ResumeTiming();
        if (error_) {
          st.SkipWithError("the paired reference failed");
          break;
        }
      }
      st.counters["batch"] = static_cast<double>(n);
    });
    reg->UseManualTime();
    // Microseconds: Google Benchmark's compare.py prints times as integers of the file's unit.
    reg->MinTime(min_time())->MinWarmUpTime(min_time() / 5)->Unit(benchmark::kMicrosecond);
    benchmark::RunSpecifiedBenchmarks(&reporter_);
    benchmark::ClearRegisteredBenchmarks();
    if (error_) std::rethrow_exception(error_);
    if (own_.empty()) throw std::runtime_error("a peer rank failed this case (see its record)");
    stats_ = compute_stats(combine_max_ ? max_ : own_);
    paired_stats_ = compute_stats(paired_);
  }

  const TimeStats& stats() const override { return stats_; }
  const TimeStats& paired_stats() const override { return paired_stats_; }
  void add_metric(const std::string& name, double value, const std::string& unit,
                  bool higher_is_better) override {
    metrics_.push_back({name, value, unit, higher_is_better});
  }
  void set_extra(const std::string& key, json value) override { extra_[key] = std::move(value); }
  void add_record(const Scope& scope, std::vector<Metric> metrics, const TimeStats& time,
                  json extra) override {
    ResultRecord r;
    r.scope = scope;
    r.metrics = std::move(metrics);
    r.time = time;
    r.extra = std::move(extra);
    more_.push_back(std::move(r));
  }
  std::vector<ResultRecord> more_;  ///< add_record's, completed by run_one_case

  std::vector<Metric> metrics_;
  json extra_ = json::object();
  long long batch_ = 0;

 private:
  static double timed(const std::function<double(long long)>& batch, long long n) {
    auto t0 = Clock::now();
    double t = batch(n);
    if (t < 0) t = std::chrono::duration<double>(Clock::now() - t0).count();
    return t;
  }
  const Benchmark& bench_;
  const json& params_;
  const Settings& settings_;
  const Context& ctx_;
  const EnvRecord& env_;
  const Group& group_;
  CollectingReporter& reporter_;
  bool combine_max_;
  std::vector<double> own_, max_, paired_;
  std::exception_ptr error_;
  TimeStats stats_, paired_stats_;
};

/// Scope of this rank's record for a benchmark level.
Scope scope_for(Level level, const Context& ctx, const EnvRecord& env) {
  Scope s;
  s.host = ctx.host();
  if (level == Level::node) {
    s.kind = "node";
  } else if (level == Level::gpu) {
    s.kind = "gpu";
    s.rank = ctx.world_rank();
    s.gpu_index = ctx.local_rank();
    if (s.gpu_index < static_cast<int>(env.gpus.size())) {
      s.uuid = env.gpus[static_cast<size_t>(s.gpu_index)].uuid;
      s.pci_bus_id = env.gpus[static_cast<size_t>(s.gpu_index)].pci_bus_id;
    }
  } else {
    s.kind = "cluster";
    s.host.clear();
  }
  return s;
}

/// Whether this rank takes part in cases of a level: node cases run on leaders only.
bool in_domain(Level level, const Context& ctx) { return level != Level::node || ctx.is_leader(); }

std::string env_of_rank_host(const std::vector<EnvRecord>& envs, const std::string& host,
                             const EnvRecord*& out) {
  for (const auto& e : envs)
    if (e.host == host) {
      out = &e;
      return "";
    }
  return "no EnvRecord for host " + host;
}

/// Expected scopes of a planned case across the whole job (rank 0 computes the plan).
std::vector<Scope> expected_scopes(const Benchmark& b, const json& params, const Context& ctx,
                                   const std::vector<EnvRecord>& envs) {
  std::vector<Scope> scopes;
  if (b.case_level(params) == Level::node) {
    for (const auto& h : ctx.hosts()) {
      Scope s;
      s.kind = "node";
      s.host = h;
      scopes.push_back(s);
    }
  } else if (b.case_level(params) == Level::gpu) {
    std::map<std::string, int> local;
    for (int r = 0; r < ctx.world_size(); ++r) {
      const std::string& h = ctx.rank_hosts()[static_cast<size_t>(r)];
      Scope s;
      s.kind = "gpu";
      s.host = h;
      s.rank = r;
      s.gpu_index = local[h]++;
      const EnvRecord* e = nullptr;
      env_of_rank_host(envs, h, e);
      if (e && s.gpu_index < static_cast<int>(e->gpus.size())) {
        s.uuid = e->gpus[static_cast<size_t>(s.gpu_index)].uuid;
        s.pci_bus_id = e->gpus[static_cast<size_t>(s.gpu_index)].pci_bus_id;
      }
      scopes.push_back(s);
    }
  } else {
    Scope s;
    s.kind = "cluster";
    scopes.push_back(s);
  }
  return scopes;
}

std::vector<std::string> expected_keys(const Benchmark& b, const json& params, const Context& ctx,
                                       const std::vector<EnvRecord>& envs) {
  std::vector<std::string> keys;
  for (const auto& s : expected_scopes(b, params, ctx, envs))
    keys.push_back(make_case_key(b.id(), params, s));
  return keys;
}

std::string describe_case(const Benchmark& b, const json& params) {
  return b.id() + " " + params.dump();
}

/// While cases run: records an abort as the watchdog does (rank 0 writes the case's failed
/// record and run.json; other ranks give it time to), for a benchmark that throws AbortRun.
const std::function<void(const std::string&)>* g_record_abort = nullptr;

/// Set when a case of this rank throws Refused (extra.refused): the run exits 2.
bool g_refused = false;
/// --allow-shared-gpus: the other processes on this node's GPUs, written into GPU case records.
json g_shared_gpus = json::array();

/// What every rank contributes for one case: a serialised record, or "" when not in the domain.
std::string run_one_case(const Benchmark& b, const json& params, const Settings& settings,
                         const Context& ctx, const EnvRecord& env, const GpuDisposition& gpu,
                         const std::string& run_id, CollectingReporter& reporter) {
  Level level = b.case_level(params);
  bool domain = in_domain(level, ctx);
  ResultRecord rec;
  rec.run_id = run_id;
  rec.benchmark = b.id();
  rec.params = params;
  rec.scope = scope_for(level, ctx, env);
  rec.combine = level == Level::cluster ? "max" : "per_rank";
  rec.case_key = make_case_key(b.id(), params, rec.scope);
  rec.started_at = utc_now_iso();

  // Applicability, agreed: a rank that does not apply records why and does not join the group.
  std::string reason;
  std::string status = "ok";
  if (domain) {
    if (b.case_needs_gpu(params) && gpu.status != "run") {
      status = gpu.status;
      reason = gpu.reason;
    } else {
      NodeEnv node{env, gpu.status, gpu.reason, ctx, settings};
      try {
        reason = b.applicable(node);
        if (reason.empty()) reason = b.case_waiver(params, node);
      } catch (const std::exception& e) {
        reason = std::string("applicability check failed: ") + e.what();
        status = "failed";
      }
      if (!reason.empty() && status == "ok") status = "waived";
    }
  }
  if (level == Level::cluster) {
    // A cluster case runs on every rank or on none.
    long long skipping = ctx.allreduce_sum(domain && status != "ok" ? 1 : 0);
    if (skipping > 0 && status == "ok") {
      status = "waived";
      reason = "not applicable on another rank (its record says why)";
    }
  }
  bool member = domain && status == "ok";
  auto group = ctx.split(member);
  auto t0 = Clock::now();
  std::vector<ResultRecord> more;
  if (member) {
    CaseRunImpl run(b, params, settings, ctx, env, *group, reporter, level == Level::cluster);
    try {
      b.run(run);
      for (const auto& m : run.metrics_)
        if (!std::isfinite(m.value))
          throw std::runtime_error("metric '" + m.name + "' is not a finite number (" +
                                   std::to_string(m.value) + ")");
      rec.time = run.stats();
      rec.metrics = run.metrics_;
      rec.extra = run.extra_;
      if (run.batch_ > 0) rec.extra["batch"] = run.batch_;
      more = std::move(run.more_);
    } catch (const Refused& w) {
      status = "waived";
      reason = w.what();
      rec.extra["refused"] = true;
      g_refused = true;
    } catch (const Waived& w) {
      status = "waived";
      reason = w.what();
    } catch (const CallError& e) {
      status = "failed";
      reason = e.what();
      rec.error = e.info();
    } catch (const AbortRun& e) {
      std::cerr << "clusterbench: " << ctx.host() << " rank " << ctx.world_rank()
                << ": aborting the run: " << e.what() << std::endl;
      // Another rank's abort reaches rank 0 this way, which writes the record (progress.hpp).
      if (ProgressChannel* ch = ProgressChannel::current()) ch->post_abort(e.what());
      if (g_record_abort) (*g_record_abort)(e.what());
      run_abort_cleanups();
      ctx.abort(3);
    } catch (const std::exception& e) {
      status = "failed";
      reason = e.what();
      ErrorInfo info;
      info.host = ctx.host();
      info.rank = ctx.world_rank();
      rec.error = info;
    }
  }
  rec.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  rec.status = status;
  rec.message = reason;
  if (b.case_needs_gpu(params) && !g_shared_gpus.empty())
    rec.extra["shared_gpus"] = {{"allowed", "--allow-shared-gpus"}, {"processes", g_shared_gpus}};
  if (!domain) return "";
  if (level == Level::cluster && ctx.world_rank() != 0 && status == "ok") return "";
  std::string lines = json(rec).dump();
  // add_record's records, one per line after the case's own (JSON text holds no raw newline).
  for (auto& m : more) {
    if (status != "ok" || level != Level::cluster) break;
    m.run_id = rec.run_id, m.benchmark = rec.benchmark, m.params = rec.params;
    m.combine = rec.combine, m.status = "ok", m.started_at = rec.started_at;
    m.duration_s = rec.duration_s;
    m.case_key = make_case_key(b.id(), params, m.scope);
    lines += "\n" + json(m).dump();
  }
  return lines;
}

/// Rank 0: picks the record lines to write for a case from what every rank sent.
std::vector<std::string> lines_to_write(Level level, const std::vector<std::string>& gathered) {
  std::vector<std::string> out;
  if (level != Level::cluster) {
    for (const auto& g : gathered)
      if (!g.empty()) out.push_back(g);
    return out;
  }
  // One record for the cluster: the first failed/waived rank's, else rank 0's.
  for (const auto& g : gathered) {
    if (g.empty()) continue;
    auto j = json::parse(g.substr(0, g.find('\n')));
    if (j.value("status", "ok") != "ok") {
      j["scope"] = json{{"kind", "cluster"}};
      return {j.dump()};
    }
  }
  if (!gathered.empty() && !gathered[0].empty())
    for (size_t pos = 0; pos < gathered[0].size();) {
      size_t nl = std::min(gathered[0].find('\n', pos), gathered[0].size());
      out.push_back(gathered[0].substr(pos, nl - pos));
      pos = nl + 1;
    }
  return out;
}

}  // namespace

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
  for (const auto& g : ctx.allgather(ctx.is_leader() ? json(leader_env).dump() : ""))
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
  if (ctx.is_root() && !error.empty()) std::cerr << "clusterbench: " << error << std::endl;
  return true;
}

int run_command(const RunOptions& given, const RunHooks& hooks) {
  Context& ctx = Context::get();
  const auto run_t0 = Clock::now();
  // --resume: the earlier run's options, checked against the given ones (run_control.hpp).
  ResumeState resume;
  const RunOptions opt = resolve_resume(given, ctx, resume);
  Settings settings(opt.suite, opt.set);
  auto benchmarks = select_benchmarks(opt.only);
  for (const Benchmark* b : benchmarks) {
    double mt = settings.get_double(b->id(), "min_time", suite_min_time(opt.suite));
    if (!(mt > 0) || mt > 3600)
      throw InputError("--set " + b->id() + ".min_time: " + std::to_string(mt) +
                       " must be in (0, 3600] seconds");
  }
  for (const auto& [key, value] : settings.values()) {
    bool known = key.rfind("run.", 0) == 0;
    // The benchmark (id.knob) or area (area.knob) the key names, and whether one of them reads it.
    std::string named;
    for (const auto& b : Registry::get().all()) {
      std::string area = b->id().substr(0, b->id().find('.'));
      std::string knob;
      if (key.rfind(b->id() + ".", 0) == 0)
        knob = key.substr(b->id().size() + 1), named = b->id();
      else if (key.rfind(area + ".", 0) == 0 && key.find('.', area.size() + 1) == std::string::npos)
        knob = key.substr(area.size() + 1), named = named.empty() ? area : named;
      auto knobs = b->knobs();
      if (!knob.empty() && (knob == "min_time" || std::count(knobs.begin(), knobs.end(), knob)))
        known = true;
    }
    if (!known && !named.empty())
      throw InputError("--set " + key + ": " + named +
                       " has no such knob (`clusterbench list` shows its knobs)");
    if (!known)
      throw InputError("--set " + key +
                       ": no benchmark or area of that name (see `clusterbench list`)");
  }

  // Inventory: each node's leader collects; everyone learns every node's EnvRecord.
  EnvRecord env;
  health::XidWatcher xid_watcher;  // leaders: NVML XID events from here to the end snapshot
  if (ctx.is_leader()) {
    env = collect_run_env(ctx, opt.fs_root);
    xid_watcher.start();
  }
  std::vector<EnvRecord> envs = allgather_envs(ctx, env);
  const EnvRecord* my_env = nullptr;
  env_of_rank_host(envs, ctx.host(), my_env);

  GpuDisposition gpu = gpu_disposition(*my_env);
  if (gpu.status == "run") {
    const GpuPlugin& p = load_gpu_plugin();
    auto set_device = reinterpret_cast<int (*)(int, char*, size_t)>(p.symbol("cb_gpu_set_device"));
    char err[512] = {0};
    int dev = p.info.device_count == 1 ? 0 : ctx.local_rank();  // one visible GPU: device 0
    if (!set_device || set_device(dev, err, sizeof err) != CB_GPU_OK) {
      gpu.status = "failed";
      gpu.reason = std::string("cudaSetDevice(") + std::to_string(dev) + "): " + err;
    }
  }
  // Plugin facts into this node's EnvRecord (leader's view).
  if (ctx.is_leader() && (env.gpu_status.on_pci > 0 || !env.gpus.empty())) {
    const GpuPlugin& p = load_gpu_plugin();
    env.gpu_status.plugin = p.initialised ? "ok" : p.error;
    env.gpu_status.cuda_devices = p.info.device_count;
    env.versions.cuda_runtime = cuda_version_string(p.info.runtime_version);
    if (p.info.cublaslt_version) env.versions.cublas = std::to_string(p.info.cublaslt_version);
    if (p.info.nccl_version) env.versions.nccl = std::to_string(p.info.nccl_version);
  } else if (ctx.is_leader()) {
    env.gpu_status.plugin =
        CLUSTERBENCH_HAVE_CUDA ? "not loaded: no NVIDIA GPU on the PCI bus" : "not built";
  }
  std::vector<std::string> gathered_env = ctx.gather(ctx.is_leader() ? json(env).dump() : "");

  // A driver older than the plugin's CUDA is a deployment error on any rank: exit 2 everywhere.
  if (ctx.allreduce_sum(gpu.deployment_error ? 1 : 0) > 0) {
    if (gpu.deployment_error)
      std::cerr << "clusterbench: " << ctx.host() << ": " << gpu.reason << std::endl;
    return 2;
  }

  // Busy GPUs: other jobs' processes on this job's GPUs refuse the run before any GPU case.
  bool gpu_cases = false;
  for (const Benchmark* b : benchmarks)
    for (const auto& p : b->cases(settings)) gpu_cases = gpu_cases || b->case_needs_gpu(p);
  std::vector<BusyGpu> busy;
  if (gpu_cases) {
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
    g_shared_gpus = json::array();
    for (const auto& bg : busy)
      if (bg.host == ctx.host()) g_shared_gpus.push_back(bg);
  }

  // --dry-run: the plan with each case's estimated duration on this node; nothing runs.
  if (opt.dry_run) {
    if (ctx.is_root()) {
      if (resume.active) read_resume_records(resume);
      NodeEnv node{*my_env, gpu.status, gpu.reason, ctx, settings};
      std::vector<CaseEstimate> rows;
      for (const Benchmark* b : benchmarks)
        for (const auto& p : b->cases(settings)) {
          PlannedCase pc{b->id(), p, level_name(b->case_level(p)), expected_keys(*b, p, ctx, envs)};
          if (!needs_rerun(pc, resume)) {
            rows.push_back({b->id(), p, pc.level, 0, "done in the earlier run"});
            continue;
          }
          rows.push_back(estimate_case(*b, p, settings, node));
        }
      std::string header = "clusterbench --dry-run: suite " + opt.suite + ", " +
                           std::to_string(ctx.world_size()) + " rank(s) on " +
                           std::to_string(ctx.hosts().size()) + " node(s); nothing is run\n";
      // The spec is checked as a real run would check it (a missing or malformed table: exit 2).
      std::string spec_path = opt.spec_path, selected_by = "--spec";
      if (spec_path.empty()) {
        auto sel = hooks.choose_spec(envs);
        spec_path = sel.path;
        selected_by = sel.selected_by;
      }
      Spec spec = load_spec(spec_path);
      header += "spec: " + spec.name + " (" + spec_path + ", " + selected_by + ")\n";
      if (!busy.empty())
        header +=
            "note: other processes use the GPUs (a run refuses without "
            "--allow-shared-gpus):\n" +
            describe_busy(busy);
      std::cout << render_dry_run(rows, header) << std::flush;
    }
    return 0;
  }

  // Rank 0: run id, directory, spec choice, plan, run.json. Failures here are input errors.
  std::string plan_mask;          // per planned case: '1' runs, '0' done earlier (--resume)
  std::vector<double> estimates;  // per planned case, seconds (Benchmark::estimate_s)
  RunRecord run;
  std::unique_ptr<Sink> sink;
  std::string setup_error;
  if (ctx.is_root()) {
    try {
      run.run_id = resume.active ? resume.run.run_id : make_run_id(ctx.host());
      run.argv = opt.argv;
      run.version = clusterbench_version();
      run.suite = opt.suite;
      run.only = opt.only;
      run.set = opt.set;
      run.world_size = ctx.world_size();
      run.hosts = ctx.hosts();
      run.started_at = utc_now_iso();
      // The EnvRecords with the plugin's facts (`envs` stays as it is: my_env points into it).
      for (const auto& g : gathered_env)
        if (!g.empty()) run.env.push_back(json::parse(g).get<EnvRecord>());
      if (!opt.spec_path.empty()) {
        run.spec.path = opt.spec_path;
        run.spec.selected_by = "--spec";
      } else {
        run.spec = hooks.choose_spec(run.env);
      }
      Spec spec = load_spec(run.spec.path);
      run.spec.path = fs::absolute(run.spec.path).lexically_normal().string();
      run.spec.name = spec.name;
      run.spec.sha256 = sha256_file(run.spec.path);
      for (const Benchmark* b : benchmarks)
        for (const auto& p : b->cases(settings))
          run.plan.push_back(
              {b->id(), p, level_name(b->case_level(p)), expected_keys(*b, p, ctx, envs)});
      NodeEnv node{*my_env, gpu.status, gpu.reason, ctx, settings};
      for (const Benchmark* b : benchmarks)
        for (const auto& p : b->cases(settings))
          estimates.push_back(estimate_case(*b, p, settings, node).seconds);
      if (resume.active) {
        // The earlier run's spec, hosts and plan, or a refusal that names what differs.
        std::vector<std::string> diffs = plan_differences(resume.run, run);
        if (run.spec.sha256 != resume.run.spec.sha256)
          diffs.push_back("spec: earlier " + resume.run.spec.path + " (sha256 " +
                          resume.run.spec.sha256 + "), now " + run.spec.path + " (sha256 " +
                          run.spec.sha256 + ")");
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
      int reruns = 0;
      for (const auto& pc : run.plan) {
        plan_mask += needs_rerun(pc, resume) ? '1' : '0';
        reruns += plan_mask.back() == '1';
      }
      const std::string dir =
          resume.active ? resume.dir : new_run_dir(opt.out_dir, opt.results_root, run.run_id, true);
      if (!opt.prometheus_path.empty())  // checked before any case runs, not after the suite
        hooks.check_output(opt.prometheus_path, "--prometheus", dir);
      sink = std::make_unique<Sink>(dir);
      if (resume.active) {
        // Each resume appends to "resumes": when, how, what it reran, and how the run had ended.
        json resumes = resume.run_json.value("resumes", json::array());
        resumes.push_back({{"started_at", utc_now_iso()},
                           {"argv", opt.argv},
                           {"cases_rerun", reruns},
                           {"cases_done", static_cast<int>(run.plan.size()) - reruns},
                           {"earlier_exit_code", resume.run_json.value("exit_code", json(nullptr))},
                           {"earlier_finished_at", resume.run.finished_at},
                           {"earlier_aborted", resume.run.aborted}});
        sink->set_run_field("resumes", resumes);
        std::cout << "clusterbench: resuming " << dir << ": " << reruns << " of " << run.plan.size()
                  << " planned case(s) to run\n";
      }
      if (!busy.empty()) sink->set_run_field("shared_gpus", busy);
      sink->write_run(run);
      if (opt.out_dir.empty() && !resume.active) update_latest_link(opt.results_root, dir);
      std::cout << "clusterbench " << run.version << ": run " << run.run_id << ", "
                << ctx.world_size() << " rank(s) on " << run.hosts.size() << " node(s), suite "
                << run.suite << "\nspec: " << run.spec.path << " (" << run.spec.selected_by
                << ")\nresults: " << dir << "\n"
                << std::flush;
    } catch (const std::exception& e) {
      setup_error = e.what();
    }
  }
  if (setup_failed(ctx, setup_error)) return 2;
  std::string run_id = ctx.bcast(run.run_id);
  plan_mask = ctx.bcast(plan_mask);
  bool stopped_at_limit = false;  // --time-limit: the cases from stop_index on did not run
  size_t stop_index = 0, next_case = 0;

  // The cases, one at a time, every rank in the same order.
  CollectingReporter reporter(ctx.is_root());
  std::mutex run_mu;
  std::vector<ResultRecord> in_progress;  // rank 0: what the watchdog records if a case hangs
  std::optional<Watchdog> watchdog;
  const std::function<void(const std::string&)> record_abort = [&](const std::string& reason) {
    if (!ctx.is_root()) {
      std::cerr << "clusterbench: " << ctx.host() << " rank " << ctx.world_rank() << ": " << reason
                << std::endl;
      // Every rank's deadline passes at about the same time: give rank 0 time to write the
      // failed record and run.json before this rank's MPI_Abort kills it.
      std::this_thread::sleep_for(std::chrono::seconds(3));
      return;
    }
    // The ranks and hosts that did not finish (bench/progress.hpp), asked before the lock; not
    // after a signal: mpirun is ending the job (a rank died) and kills us soon after.
    const bool signalled = reason.rfind("terminated by signal", 0) == 0;
    const Unfinished who = signalled ? Unfinished{} : who_did_not_finish(ctx);
    std::lock_guard<std::mutex> lock(run_mu);
    if (run.aborted) return;  // recorded already: the deadline and a peer's abort raced
    for (auto& rec : in_progress) {
      rec.status = "failed";
      rec.message = "aborted: " + reason + who.text;
      if (!who.ranks.empty()) rec.extra["ranks"] = who.ranks;
      try {
        sink->append(rec);
      } catch (const std::exception& e) {
        std::cerr << "clusterbench: " << e.what() << std::endl;
      }
    }
    run.aborted = true;
    run.abort_reason = reason + who.text;
    run.finished_at = utc_now_iso();
    run.exit_code = 3;
    try {
      sink->write_run(run);
    } catch (const std::exception& e) {
      std::cerr << "clusterbench: " << e.what() << std::endl;
    }
    std::cerr << "clusterbench: run aborted: " << reason << std::endl;
  };
  g_record_abort = &record_abort;
  watchdog.emplace(record_abort);
  std::optional<ProgressChannel> progress_channel;  // names who did not finish a hung case
  progress_channel.emplace(ctx, [&](const std::string& reason) { watchdog->trip(reason); });
  // The hang deadline: --case-timeout, else the suite's (300/1200/3600 s) or, for a case whose
  // own estimate is longer (a fio runtime of minutes), twice that estimate plus a minute.
  auto case_timeout = [&](const Benchmark& b, const json& params) {
    if (opt.case_timeout_s > 0) return opt.case_timeout_s;
    double suite_s = settings.by_suite(300.0, 1200.0, 3600.0);
    return std::max(suite_s, 2 * b.estimate_s(settings, params) + 60);
  };
  for (const Benchmark* b : benchmarks) {
    if (stopped_at_limit) break;
    for (const auto& params : b->cases(settings)) {
      const size_t case_index = next_case++;
      if (case_index < plan_mask.size() && plan_mask[case_index] == '0') continue;  // --resume
      if (opt.time_limit_s > 0) {
        // Rank 0 decides: no case starts past the limit, nor one estimated to end past it.
        long long stop = 0;
        if (ctx.is_root()) {
          double elapsed = std::chrono::duration<double>(Clock::now() - run_t0).count();
          double est = case_index < estimates.size() ? estimates[case_index] : 0;
          stop = elapsed >= opt.time_limit_s || elapsed + est > opt.time_limit_s;
        }
        if (ctx.allreduce_sum(stop) > 0) {
          stopped_at_limit = true;
          stop_index = case_index;
          break;
        }
      }
      std::string what = describe_case(*b, params);
      if (ctx.is_root()) {
        std::lock_guard<std::mutex> lock(run_mu);
        in_progress.clear();
        for (const auto& scope : expected_scopes(*b, params, ctx, envs)) {
          ResultRecord rec;
          rec.run_id = run_id;
          rec.benchmark = b->id();
          rec.params = params;
          rec.scope = scope;
          rec.case_key = make_case_key(b->id(), params, scope);
          rec.started_at = utc_now_iso();
          in_progress.push_back(rec);
        }
      }
      progress::next_case();
      watchdog->arm(what, case_timeout(*b, params));
      std::string line = run_one_case(*b, params, settings, ctx, *my_env, gpu, run_id, reporter);
      std::vector<std::string> gathered = ctx.gather(line);
      watchdog->disarm();
      if (ctx.is_root()) {
        std::lock_guard<std::mutex> lock(run_mu);
        in_progress.clear();
        try {
          // Once the watchdog has recorded an abort, the case's record is its; write nothing more.
          if (!run.aborted)
            for (const auto& l : lines_to_write(b->case_level(params), gathered))
              sink->append_line(l);
        } catch (const std::exception& e) {
          std::cerr << "clusterbench: cannot record " << what << ": " << e.what() << std::endl;
          run.aborted = true;
          run.abort_reason = std::string("cannot write records: ") + e.what();
        }
      }
      if (ctx.allreduce_sum(ctx.is_root() && run.aborted ? 1 : 0) > 0) break;
    }
  }
  progress_channel.reset();
  watchdog.reset();
  g_record_abort = nullptr;

  // Health counters at the end (docs/health.md): each leader reads its node, rank 0 puts the
  // snapshots into run.env; reports/ computes the deltas.
  std::string end_health;
  if (ctx.is_leader()) {
    json end = health::read_counters(opt.fs_root);
    end["xid_watch"] = xid_watcher.stop();
    end_health = json{{"host", ctx.host()}, {"end", std::move(end)}}.dump();
  }
  std::vector<std::string> ends = ctx.gather(end_health);
  if (ctx.is_root()) {
    for (const auto& g : ends) {
      if (g.empty()) continue;
      json j = json::parse(g);
      for (auto& e : run.env)
        if (e.host == j["host"].get<std::string>()) e.health["end"] = j["end"];
    }
  }
  const long long refused = ctx.allreduce_sum(g_refused ? 1 : 0);
  if (ctx.is_root() && stopped_at_limit) {
    json not_run = json::array();
    for (size_t i = stop_index; i < run.plan.size(); ++i)
      if (i >= plan_mask.size() || plan_mask[i] == '1')
        not_run.push_back({{"benchmark", run.plan[i].benchmark}, {"params", run.plan[i].params}});
    double elapsed = std::chrono::duration<double>(Clock::now() - run_t0).count();
    sink->set_run_field(
        "time_limit",
        {{"seconds", opt.time_limit_s}, {"stopped_after_s", elapsed}, {"not_run", not_run}});
    std::cout << "clusterbench: --time-limit " << opt.time_limit_s << " s: stopped after "
              << elapsed << " s, as the next case would have ended past the limit (estimate); "
              << not_run.size() << " planned case(s) not run (MISSING in the report)" << std::endl;
  }

  // End: run.json completed, Google Benchmark JSON once, the report.
  int code = 0;
  if (ctx.is_root()) {
    try {
      write_gbench(reporter, sink->dir() + "/gbench.json", resume.active);
      run.finished_at = utc_now_iso();
      // The verdict is not known until the report is made: null until then (a kill during the
      // report must not leave 0, "PASS", behind).
      if (run.aborted)
        run.exit_code = 3;
      else
        run.exit_code.reset();
      sink->write_run(run);
      code = hooks.report(sink->dir(), opt.prometheus_path);
      if (run.aborted) code = 3;
      if (refused > 0) {
        code = 2;  // a refused case (extra.refused): exit 2 outranks every verdict
        std::cerr << "clusterbench: " << refused << " case(s) refused (see their records)\n";
      } else if (stopped_at_limit && code == 0) {
        code = 4;  // --time-limit left planned cases MISSING: the acceptance is incomplete
      }
      run.exit_code = code;
      sink->write_run(run);
    } catch (const InputError& e) {
      std::cerr << "clusterbench: " << e.what() << std::endl;
      code = 2;
    } catch (const std::exception& e) {
      std::cerr << "clusterbench: " << e.what() << std::endl;
      code = 3;
    }
    if (run.exit_code != code) {  // the report could not be made: run.json says so too
      run.exit_code = code;
      try {
        sink->write_run(run);
      } catch (const std::exception& e) {
        std::cerr << "clusterbench: " << e.what() << std::endl;
      }
    }
  }
  return static_cast<int>(ctx.allreduce_sum(code));
}

}  // namespace clusterbench
