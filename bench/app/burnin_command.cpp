// `clusterbench burnin` (burnin.hpp, docs/burnin.md).
#include "app/burnin_command.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "collectives/collective.hpp"
#include "compute/burnin.hpp"
#include "core/telemetry.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "gpu/loader.hpp"
#include "env/health.hpp"
#include "env/inventory.hpp"
#include "env/nvml.hpp"
#include "core/progress.hpp"
#include "reports/burnin.hpp"
#include "reports/health.hpp"
#include "app/report_command.hpp"
#include "core/runner.hpp"
#include "core/sink.hpp"
#include "records/spec.hpp"
#include "core/version.hpp"

namespace clusterbench {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint64_t kSeed = 20261130;
constexpr int kSamples = 16;

std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal.store(sig); }

/// SIGINT/SIGTERM end the soak at the next interval boundary instead of killing the process.
class SignalGuard {
 public:
  SignalGuard() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_term_);
    sigaction(SIGINT, &sa, &old_int_);
  }
  ~SignalGuard() {
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGINT, &old_int_, nullptr);
  }

 private:
  struct sigaction old_term_ {
  }, old_int_{};
};

/// Test-only fault injection (docs/burnin.md): the world rank named by the variable, or -1.
int test_rank(const char* var) {
  const char* v = std::getenv(var);
  if (!v || !*v) return -1;
  char* end = nullptr;
  long r = std::strtol(v, &end, 10);
  return end && *end == '\0' && r >= 0 ? static_cast<int>(r) : -1;
}

const char* signal_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

/// Rewrites `dir`/records.jsonl with `lines` (one record each): temporary file, fdatasync,
/// rename, so that a kill at any moment leaves either the previous file or this one. The burn-in
/// rewrites its records after every interval (each holds its series so far), then once more with
/// the final records: no finished interval is lost, and each case key has one record.
void rewrite_records(const std::string& dir, const std::vector<std::string>& lines) {
  std::string data;
  for (const auto& l : lines) data += l + "\n";
  write_file_atomic(dir + "/records.jsonl", data);
}

/// The all_reduce loop on its own thread: during each interval it runs sum all_reduces of
/// `count` floats back to back. One more element travels with the data: each rank puts 1 there
/// once its interval is over, and every rank stops after the first operation whose sum of it is
/// non-zero, so all ranks run the same number of operations. The last result is checked against
/// the expected sums (collectives::kAllReduce) after every interval.
class AllReduceLoop {
 public:
  struct Interval {
    long long ops = 0;
    double seconds = 0;
    long long wrong = 0;
    std::string error;
  };

  AllReduceLoop(collectives::Backend* be, long long count, int device)
      : be_(be), count_(count), device_(device) {
    if (!be_) return;
    size_t bytes = static_cast<size_t>(count_ + 1) * sizeof(float);
    host_.resize(static_cast<size_t>(count_ + 1));
    for (long long i = 0; i < count_; ++i)
      host_[static_cast<size_t>(i)] = static_cast<float>(collectives::input_value(be_->rank(), i));
    host_.back() = 0;
    send_ = be_->alloc(bytes);
    recv_ = be_->alloc(bytes);
    be_->upload(send_, host_.data(), bytes);
    thread_ = std::thread([this] { loop(); });
  }
  ~AllReduceLoop() {
    if (!be_) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
    be_->release(send_);
    be_->release(recv_);
  }
  bool active() const { return be_ != nullptr; }
  long long bytes() const { return count_ * static_cast<long long>(sizeof(float)); }

  void start() {
    if (!be_) return;
    std::lock_guard<std::mutex> lock(mu_);
    end_.store(false);
    ++started_;
    cv_.notify_all();
  }
  /// Marks this rank's interval over and waits for the loop to stop (with every rank's).
  Interval finish() {
    if (!be_) return {};
    end_.store(true);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return finished_ == started_; });
    return last_;
  }

 private:
  void loop() {
    if (device_ >= 0) {
      // NCCL from this thread: CUDA's current device is per thread.
      auto set = reinterpret_cast<int (*)(int, char*, size_t)>(
          load_gpu_plugin().symbol("cb_gpu_set_device"));
      char err[256] = {0};
      if (set) set(device_, err, sizeof err);
    }
    long long seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return quit_ || started_ > seen; });
        if (quit_) return;
        seen = started_;
      }
      Interval r = run_interval();
      std::lock_guard<std::mutex> lock(mu_);
      last_ = r;
      finished_ = seen;
      cv_.notify_all();
    }
  }

  Interval run_interval() {
    Interval r;
    if (!error_.empty()) {
      r.error = error_;
      return r;
    }
    const auto& c = collectives::kAllReduce;
    collectives::Layout l = c.layout(count_ + 1, be_->rank(), be_->size());
    float* flag_dst = static_cast<float*>(send_) + count_;
    const float* flag_src = static_cast<const float*>(recv_) + count_;
    auto t0 = Clock::now();
    try {
      while (true) {
        float flag = end_.load() ? 1.0f : 0.0f, sum = 0;
        be_->upload(flag_dst, &flag, sizeof flag);
        double sec = be_->run(c, collectives::Dtype::f32, send_, recv_, l, 0, false, 1);
        ++r.ops;
        if (sec >= 0) r.seconds += sec;
        be_->download(&sum, flag_src, sizeof sum);
        if (sum > 0) break;
      }
      if (r.seconds == 0) r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      std::vector<float> out(static_cast<size_t>(count_));
      be_->download(out.data(), recv_, out.size() * sizeof(float));
      r.wrong = collectives::count_wrong(c, collectives::Dtype::f32, out.data(), count_,
                                         be_->rank(), be_->size(), count_, 0);
    } catch (const std::exception& e) {
      error_ = r.error = e.what();  // the communicator cannot be trusted any more
    }
    return r;
  }

  collectives::Backend* be_;
  long long count_;
  int device_;
  std::vector<float> host_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false;
  long long started_ = 0, finished_ = 0;
  std::atomic<bool> end_{false};
  Interval last_;
  std::string error_;
};

/// What one rank soaks, and how it came out of setup.
struct RankSetup {
  std::string status = "ok";  ///< ok | waived | failed
  std::string message;
  std::optional<ErrorInfo> error;
  bool gpu = false;
  json params;
  Scope scope;
};

json median_of(std::vector<double> xs) {
  if (xs.empty()) return nullptr;
  std::sort(xs.begin(), xs.end());
  size_t m = xs.size() / 2;
  return xs.size() % 2 ? xs[m] : 0.5 * (xs[m - 1] + xs[m]);
}

/// Rate over the intervals whose planned span [i d, (i + 1) d] (d = `interval_s`) lies within
/// [from, to] seconds of the soak; interval `fallback` alone when the soak is shorter than two
/// minutes (its first and last minute would overlap).
double rate_within(const json& series, double interval_s, double from, double to, size_t fallback) {
  double flop = 0, sec = 0;
  if (interval_s * static_cast<double>(series.size()) >= 120 - 1e-6) {
    for (const auto& iv : series) {
      double i = iv["index"].get<double>();
      if (i * interval_s >= from - 1e-6 && (i + 1) * interval_s <= to + 1e-6)
        flop += iv["flop"].get<double>(), sec += iv["seconds"].get<double>();
    }
  }
  if (sec <= 0 && fallback < series.size())
    flop = series[fallback]["flop"].get<double>(), sec = series[fallback]["seconds"].get<double>();
  return sec > 0 ? flop / sec / 1e12 : 0;
}

/// The record's metrics from its series (all measured values; reports/ judges them).
void add_series_metrics(ResultRecord& rec, const json& series, double interval_s, bool telemetry) {
  if (series.empty()) return;
  std::vector<double> rates, busbw;
  double temp = NAN;
  long long errors = 0;
  for (const auto& iv : series) {
    rates.push_back(iv["rate_tflops"].get<double>());
    if (iv["allreduce"].contains("busbw_gbs"))
      busbw.push_back(iv["allreduce"]["busbw_gbs"].get<double>());
    if (!iv["verification"]["passed"].get<bool>() || iv["allreduce"].value("wrong", 0LL) > 0 ||
        iv["allreduce"].contains("error"))
      ++errors;
    if (iv.contains("telemetry") && iv["telemetry"]["temperature_c_max"].is_number())
      temp = std::fmax(temp, iv["telemetry"]["temperature_c_max"].get<double>());
  }
  double end = interval_s * (series.back()["index"].get<double>() + 1);
  rec.metrics.push_back({"rate_median", median_of(rates).get<double>(), "TFLOP/s", true});
  rec.metrics.push_back(
      {"rate_first_minute", rate_within(series, interval_s, 0, 60, 0), "TFLOP/s", true});
  rec.metrics.push_back(
      {"rate_last_minute",
       rate_within(series, interval_s, std::max(0.0, end - 60), end, series.size() - 1), "TFLOP/s",
       true});
  rec.metrics.push_back(
      {"rate_worst_interval", *std::min_element(rates.begin(), rates.end()), "TFLOP/s", true});
  rec.metrics.push_back({"verification_errors", static_cast<double>(errors), "count", false});
  if (!busbw.empty())
    rec.metrics.push_back({"allreduce_busbw_median", median_of(busbw).get<double>(), "GB/s", true});
  if (telemetry && std::isfinite(temp))
    rec.metrics.push_back({"temperature_max", temp, "C", false});
  rec.metrics.push_back({"intervals", static_cast<double>(series.size()), "count", true});
}

/// Rank 0's record of a rank from what it gathered (`params`, `scope` and the series so far),
/// written after every interval and when the job is torn down; the rank's own final record
/// replaces it when the soak ends in order. `dead`: the rank died (status failed, naming it).
std::string snapshot_line(const std::string& run_id, const std::string& started_at,
                          const BurninOptions& opt, double interval_s, int n_intervals,
                          const json& params, const Scope& scope, const json& series,
                          const std::string& note, const std::string& dead) {
  ResultRecord rec;
  rec.run_id = run_id;
  rec.benchmark = report::kBurninBenchmark;
  rec.params = params;
  rec.scope = scope;
  rec.combine = "per_rank";
  rec.case_key = make_case_key(rec.benchmark, rec.params, rec.scope);
  rec.started_at = started_at;
  rec.status = dead.empty() && !series.empty() ? "ok" : "failed";
  rec.message = !dead.empty() ? dead : series.empty() ? "no interval finished: " + note : "";
  rec.extra["minutes"] = opt.minutes;
  rec.extra["interval_s"] = interval_s;
  rec.extra["intervals_planned"] = n_intervals;
  rec.extra["series"] = series;
  rec.extra["stopped_early"] = note;
  if (!series.empty()) add_series_metrics(rec, series, interval_s, true);
  return json(rec).dump();
}

/// A record line with the health counter deltas of its GPU (a CPU rank: of its node's other
/// devices) over the soak, from its node's start and end snapshots (reports/health.hpp).
std::string with_health_deltas(const std::string& line, const std::vector<EnvRecord>& envs) {
  json rec = json::parse(line);
  Scope s = rec["scope"].get<Scope>();
  for (const auto& e : envs) {
    if (e.host != s.host) continue;
    json deltas = json::array();
    for (const auto& v : report::health_deltas(e.health.value("start", json()),
                                               e.health.value("end", json()), e.host))
      if (s.kind == "gpu" ? v.gpu_index == s.gpu_index : v.gpu_index < 0)
        deltas.push_back(
            {{"metric", v.metric}, {"item", v.item}, {"value", v.value}, {"detail", v.detail}});
    rec["extra"]["health_deltas"] = deltas;
  }
  return rec.dump();
}

}  // namespace

int burnin_command(const BurninOptions& opt) {
  Context& ctx = Context::get();
  if (!(opt.minutes > 0) || opt.minutes > 7 * 24 * 60)
    throw InputError("--minutes " + std::to_string(opt.minutes) + ": must be in (0, 10080]");
  if (opt.shape != kBurninUnset && (opt.shape < 1 || opt.shape > 65536))
    throw InputError("--shape " + std::to_string(opt.shape) + ": must be in [1, 65536]");
  if (opt.allreduce_bytes != kBurninUnset &&
      (opt.allreduce_bytes < 4 || opt.allreduce_bytes > (4LL << 30) || opt.allreduce_bytes % 4))
    throw InputError("--allreduce-bytes " + std::to_string(opt.allreduce_bytes) +
                     ": must be in [4, 4G] and a multiple of 4 (fp32 elements)");
  const double total_s = opt.minutes * 60.0;
  const int n_intervals = burnin_intervals(total_s);
  const double interval_s = total_s / n_intervals;

  // Inventory, as `run` takes it: each node's leader collects, everyone learns every node's.
  EnvRecord env;
  health::XidWatcher xid_watcher;  // leaders: NVML XID events from here to the end snapshot
  if (ctx.is_leader()) {
    // With the health counters' start snapshot, as `run` takes it (docs/health.md): the report
    // judges their deltas over the soak.
    env = collect_run_env(ctx, opt.fs_root);
    xid_watcher.start();
  }
  std::vector<EnvRecord> envs = allgather_envs(ctx, env);
  const EnvRecord* my_env = &envs.front();
  for (const auto& e : envs)
    if (e.host == ctx.host()) my_env = &e;

  // GPU disposition (DESIGN.md "GPU plugin"): soak the GPU, or waive/fail; no GPU: the CPU.
  bool node_has_gpus = my_env->gpu_status.on_pci > 0 || !my_env->gpus.empty();
  GpuDisposition gpu = node_has_gpus ? gpu_disposition(*my_env) : GpuDisposition{};
  int device = -1;
  if (gpu.status == "run") {
    const GpuPlugin& p = load_gpu_plugin();
    auto set = reinterpret_cast<int (*)(int, char*, size_t)>(p.symbol("cb_gpu_set_device"));
    char err[512] = {0};
    device = p.info.device_count == 1 ? 0 : ctx.local_rank();
    if (!set || set(device, err, sizeof err) != CB_GPU_OK) {
      gpu.status = "failed";
      gpu.reason = "cudaSetDevice(" + std::to_string(device) + "): " + err;
      device = -1;
    }
  }
  if (ctx.allreduce_sum(gpu.deployment_error ? 1 : 0) > 0) {
    if (gpu.deployment_error)
      std::cerr << "clusterbench: " << ctx.host() << ": " << gpu.reason << "\n";
    return 2;
  }

  RankSetup me;
  me.gpu = node_has_gpus;
  std::string dtype = !opt.dtype.empty() ? opt.dtype : me.gpu ? "bf16" : "fp32";
  long long n = opt.shape != kBurninUnset ? opt.shape : me.gpu ? 8192 : 256;
  me.params = {{"backend", me.gpu ? "cublaslt" : "openblas"},
               {"dtype", dtype},
               {"m", n},
               {"n", n},
               {"k", n}};
  me.scope.host = ctx.host();
  me.scope.rank = ctx.world_rank();
  if (me.gpu) {
    me.scope.kind = "gpu";
    me.scope.gpu_index = ctx.local_rank();
    if (me.scope.gpu_index < static_cast<int>(my_env->gpus.size())) {
      me.scope.uuid = my_env->gpus[static_cast<size_t>(me.scope.gpu_index)].uuid;
      me.scope.pci_bus_id = my_env->gpus[static_cast<size_t>(me.scope.gpu_index)].pci_bus_id;
    }
    if (gpu.status != "run") me.status = gpu.status, me.message = gpu.reason;
  } else {
    me.scope.kind = "rank";  // a CPU rank: several may share a host
  }
  if (!me.gpu && dtype != "fp32" && dtype != "fp64")
    throw InputError("--dtype " + dtype + ": the CPU burn-in runs fp32 or fp64");
  const auto& gpu_dtypes = compute::cublaslt_dtypes();
  if (me.gpu && std::find(gpu_dtypes.begin(), gpu_dtypes.end(), dtype) == gpu_dtypes.end())
    throw InputError("--dtype " + dtype +
                     ": the GPU burn-in runs fp16, bf16, tf32, fp32 or fp8_e4m3");
  // A product must fit many times in an interval, and a signal must stop the soak within about a
  // second (a product cannot be interrupted): refuse a shape whose product is estimated longer,
  // before anything is allocated or written. CPU ranks estimate from a small probe product.
  const double max_product_s = burnin_max_product_seconds(interval_s);
  double est_s = me.gpu ? 0.0 : compute::estimate_openblas_product_seconds(dtype, {n, n, n});
  est_s = ctx.allreduce_max(est_s);
  if (est_s > max_product_s) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "--shape %lld: one %s %lldx%lldx%lld product takes about %.3g s on this CPU "
                  "(estimated, slowest rank), more than %.3g s (a tenth of the %.3g-s interval, "
                  "at most 1 s): a product must fit many times in one interval and a signal must "
                  "stop the soak within a second; choose a smaller --shape or more --minutes",
                  n, dtype.c_str(), n, n, n, est_s, max_product_s, interval_s);
    throw InputError(buf);
  }
  // SIGINT/SIGTERM from here on end the burn-in in order (exit 3, what was measured written),
  // during setup too; the default action would kill the process without a word.
  SignalGuard signals;
  g_signal.store(0);

  // Rank 0: run id, directory, spec, plan, run.json (as `run` writes them).
  std::vector<std::string> scopes = ctx.gather(json{
      {"params", me.params}, {"scope", me.scope}, {"env", ctx.is_leader() ? json(env) : json()}}
                                                   .dump());
  RunRecord run;
  std::unique_ptr<Sink> sink;
  std::string setup_error;
  if (ctx.is_root()) {
    try {
      run.run_id = make_run_id(ctx.host());
      run.argv = opt.argv;
      run.version = clusterbench_version();
      run.suite = "burnin";
      run.world_size = ctx.world_size();
      run.hosts = ctx.hosts();
      run.started_at = utc_now_iso();
      bool any_gpu = false;
      for (const auto& s : scopes) {
        json j = json::parse(s);
        if (!j["env"].is_null()) run.env.push_back(j["env"].get<EnvRecord>());
        Scope sc = j["scope"].get<Scope>();
        any_gpu = any_gpu || sc.kind == "gpu";
        std::string key = make_case_key(report::kBurninBenchmark, j["params"], sc);
        auto it = std::find_if(run.plan.begin(), run.plan.end(),
                               [&](const PlannedCase& p) { return p.params == j["params"]; });
        if (it == run.plan.end())
          run.plan.push_back({report::kBurninBenchmark, j["params"], "gpu", {key}});
        else
          it->case_keys.push_back(key);
      }
      run.spec.path = opt.spec_path.empty()
                          ? specs_dir() + (any_gpu ? "/burnin-gpu.json" : "/burnin-cpu.json")
                          : opt.spec_path;
      run.spec.selected_by = opt.spec_path.empty() ? std::string("auto: burn-in of ") +
                                                         (any_gpu ? "GPUs" : "CPU ranks")
                                                   : "--spec";
      Spec spec = load_spec(run.spec.path);
      run.spec.path = fs::absolute(run.spec.path).lexically_normal().string();
      run.spec.name = spec.name;
      run.spec.sha256 = sha256_file(run.spec.path);
      const std::string dir = new_run_dir(opt.out_dir, opt.results_root, run.run_id, false);
      sink = std::make_unique<Sink>(dir);
      sink->write_run(run);
      if (opt.out_dir.empty()) update_latest_link(opt.results_root, dir);
      std::cout << "clusterbench " << run.version << ": burn-in " << run.run_id << ", "
                << ctx.world_size() << " rank(s) on " << run.hosts.size() << " node(s), "
                << opt.minutes << " min in " << n_intervals << " intervals of " << interval_s
                << " s\nspec: " << run.spec.path << "\nresults: " << dir << "\n"
                << std::flush;
    } catch (const std::exception& e) {
      setup_error = e.what();
    }
  }
  if (setup_failed(ctx, setup_error)) return 2;
  std::string run_id = ctx.bcast(run.run_id);

  // The engines: GEMM on this rank, the all_reduce loop over every rank.
  std::unique_ptr<compute::SoakGemm> gemm;
  compute::GemmShape shape{n, n, n};
  // Test only (docs/burnin.md): setup takes this many seconds longer, so that a test can signal
  // the burn-in during its setup.
  const int setup_delay = test_rank("CLUSTERBENCH_TEST_BURNIN_SETUP_DELAY_S");
  if (setup_delay > 0) {
    auto until = Clock::now() + std::chrono::seconds(setup_delay);
    while (Clock::now() < until && !g_signal.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (me.status == "ok" && !g_signal.load()) {
    try {
      gemm = me.gpu ? compute::make_cublaslt_soak(dtype, shape, kSeed, kSamples)
                    : compute::make_openblas_soak(dtype, shape, kSeed, kSamples);
    } catch (const Waived& w) {
      me.status = "waived", me.message = w.what();
    } catch (const CallError& e) {
      me.status = "failed", me.message = e.what(), me.error = e.info();
    } catch (const std::exception& e) {
      me.status = "failed", me.message = e.what();
    }
  }
  bool all_gpu = ctx.allreduce_sum(gemm && me.gpu ? 1 : 0) == ctx.world_size();
  collectives::Backend* backend = nullptr;
  std::string backend_note;
  if (all_gpu) {
    try {
      backend = &collectives::nccl_backend(ctx, "nvlink", 600);
    } catch (const std::exception& e) {
      backend_note = std::string("NCCL unavailable, MPI on host buffers instead: ") + e.what();
    }
    if (ctx.allreduce_sum(backend ? 0 : 1) > 0) backend = nullptr;
  }
  if (!backend) backend = collectives::mpi_backend();
  long long ar_bytes = opt.allreduce_bytes != kBurninUnset ? opt.allreduce_bytes
                       : all_gpu && backend                ? 256LL << 20
                                                           : 1LL << 20;
  AllReduceLoop allreduce(backend, std::max(1LL, ar_bytes / 4), backend && all_gpu ? device : -1);

  // Telemetry: NVML on a GPU rank, said so where there is none.
  int nvml_index = -1;
  std::string telemetry_status;
  if (!me.gpu) {
    telemetry_status = "no NVIDIA GPU on this node: no NVML telemetry (CPU soak)";
  } else if (!gemm) {
    telemetry_status = "not sampled: this GPU's soak did not start";
  } else {
    nvml_index = nvml_index_for_bus_id(*my_env, gemm->pci_bus_id());
    if (nvml_index < 0)
      telemetry_status = Nvml::get().ok()
                             ? "no NVML GPU has the CUDA device's bus id " + gemm->pci_bus_id()
                             : "running without telemetry: NVML " + Nvml::get().status();
  }

  // The soak: intervals in lock-step, every rank's deadlines from one start.
  int corrupt_rank = test_rank("CLUSTERBENCH_TEST_BURNIN_CORRUPT_RANK");
  int slow_rank = test_rank("CLUSTERBENCH_TEST_BURNIN_SLOW_RANK");
  bool corrupt = corrupt_rank == ctx.world_rank(), slow = slow_rank == ctx.world_rank();
  json series = json::array();
  std::string first_error;
  unsigned long long reasons = 0;
  std::string stopped;
  if (ctx.allreduce_sum(g_signal.load() ? 1 : 0) > 0) {
    int sig = g_signal.load();
    stopped = std::string("stopped by ") + (sig ? signal_name(sig) : "a signal to a peer") +
              " during setup, before the soak began";
  }
  // Nothing to soak anywhere (every GPU waived or failed): no point in waiting out the time.
  const int soaked = stopped.empty() && ctx.allreduce_sum(gemm ? 1 : 0) > 0 ? n_intervals : 0;

  // Rank 0 keeps every rank's series, gathered after each interval, and rewrites records.jsonl
  // with them (rewrite_records), so that a SIGKILL of rank 0 leaves the finished intervals on
  // disk. When the job is torn down (a rank died: mpirun sends SIGTERM to the others, then
  // SIGKILL a second later) rank 0's watcher thread writes the records and marks run.json
  // aborted (exit 3) at once, then asks every rank over the progress channel (progress.hpp)
  // whether it is there: a rank that does not answer died, and the records name it.
  ProgressChannel channel(ctx, [](const std::string&) {});
  std::mutex out_mu;  // rank 0: run, gathered, series, final_written
  std::vector<json> gathered(static_cast<size_t>(ctx.is_root() ? ctx.world_size() : 0),
                             json::array());
  std::vector<json> scope_of;  // rank 0: {params, scope} per rank
  if (ctx.is_root())
    for (const auto& sc : scopes) scope_of.push_back(json::parse(sc));
  bool final_written = false;
  std::atomic<int> current{0};
  auto snapshot = [&](const std::string& note, const std::vector<int>& dead,
                      const std::string& dead_text) {
    std::vector<std::string> out;
    for (int r = 0; r < ctx.world_size(); ++r) {
      const json& s =
          r == 0 && series.size() > gathered[0].size() ? series : gathered[static_cast<size_t>(r)];
      bool is_dead = std::find(dead.begin(), dead.end(), r) != dead.end();
      const json& j = scope_of[static_cast<size_t>(r)];
      out.push_back(snapshot_line(run_id, run.started_at, opt, interval_s, n_intervals, j["params"],
                                  j["scope"].get<Scope>(), s, note, is_dead ? dead_text : ""));
    }
    rewrite_records(sink->dir(), out);
  };
  std::atomic<bool> watcher_stop{false};
  std::thread watcher;
  if (ctx.is_root() && sink) {
    watcher = std::thread([&] {
      while (!watcher_stop.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        int sig = g_signal.load();
        if (!sig) continue;
        std::string during = " during interval " + std::to_string(current.load() + 1) + " of " +
                             std::to_string(n_intervals);
        std::string what = std::string("terminated by ") + signal_name(sig) + during +
                           " (a rank died, or the job was cancelled)";
        try {
          std::lock_guard<std::mutex> lock(out_mu);
          if (final_written) return;
          snapshot(what + ": the finished intervals, written when the signal arrived", {}, "");
          run.aborted = true;
          run.abort_reason = what;
          run.finished_at = utc_now_iso();
          run.exit_code = 3;
          sink->write_run(run);
        } catch (const std::exception& e) {
          std::cerr << "clusterbench: " << e.what() << std::endl;
        }
        std::vector<RankProgress> all = channel.collect(0.5);
        std::vector<int> dead;
        std::string names;
        for (const auto& p : all)
          if (!p.answered) {
            dead.push_back(p.rank);
            names += std::string(names.empty() ? "" : ", ") + "rank " + std::to_string(p.rank) +
                     " (" + ctx.rank_hosts()[static_cast<size_t>(p.rank)] + ")";
          }
        if (dead.empty()) return;  // every rank is there: the soak ends in order
        std::string reason = names + " died" + during + ": no answer to rank 0 after " +
                             signal_name(sig) + " (mpirun ends the job when a rank dies)";
        try {
          std::lock_guard<std::mutex> lock(out_mu);
          if (final_written) return;
          snapshot("stopped: " + reason, dead, reason);
          run.abort_reason = reason;
          run.finished_at = utc_now_iso();
          sink->write_run(run);
        } catch (const std::exception& e) {
          std::cerr << "clusterbench: " << e.what() << std::endl;
        }
        std::cerr << "clusterbench: burn-in aborted: " << reason << std::endl;
        Context::get().abort(3);
      }
    });
  }

  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop.store(true);
      if (thread.joinable()) thread.join();
    }
  } joiner{watcher_stop, watcher};

  ctx.quiet_barrier();
  auto t0 = Clock::now();
  for (int i = 0; i < soaked; ++i) {
    current.store(i);
    auto begin = Clock::now();
    auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(interval_s * (i + 1)));
    bool slowed = slow && i >= n_intervals / 2;
    allreduce.start();
    std::optional<TelemetrySampler> sampler;
    if (gemm && me.gpu) sampler.emplace(nvml_index, 0.1, telemetry_status);
    json iv = {{"index", i}, {"t_start_s", std::chrono::duration<double>(begin - t0).count()}};
    if (gemm) {
      try {
        // Chunks of at most a second, so that a signal ends the interval early.
        compute::SoakWork w;
        while (Clock::now() < deadline && !g_signal.load()) {
          auto until = std::min(deadline, Clock::now() + std::chrono::seconds(1));
          compute::SoakWork c = gemm->run_until(until, slowed ? 0.25 : 0.0);
          w.products += c.products, w.seconds += c.seconds, w.wall_seconds += c.wall_seconds;
        }
        if (Clock::now() < deadline) iv["partial"] = true;
        auto v = gemm->verify(kSeed + 1 + static_cast<std::uint64_t>(i), corrupt && i >= 1);
        double flop = compute::gemm_flop(shape) * static_cast<double>(w.products);
        iv["products"] = w.products;
        iv["flop"] = flop;
        iv["seconds"] = w.seconds;
        iv["wall_seconds"] = w.wall_seconds;
        iv["rate_tflops"] = w.seconds > 0 ? flop / w.seconds / 1e12 : 0.0;
        iv["rate_wall_tflops"] = w.wall_seconds > 0 ? flop / w.wall_seconds / 1e12 : 0.0;
        iv["verification"] = {{"samples", v.samples},
                              {"max_rel_error", v.max_rel_error},
                              {"bound", v.bound},
                              {"passed", v.passed()}};
        if (!v.passed() && first_error.empty())
          first_error = "interval " + std::to_string(i) + ": " + v.failure_message(dtype, shape);
      } catch (const std::exception& e) {
        me.status = "failed", me.message = "interval " + std::to_string(i) + ": " + e.what();
        if (const auto* ce = dynamic_cast<const CallError*>(&e)) me.error = ce->info();
        gemm.reset();
      }
    }
    while (!gemm && Clock::now() < deadline && !g_signal.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (slowed) iv["fault_injection"] = "slowed by 25% of its work time (test only)";
    AllReduceLoop::Interval ar = allreduce.finish();
    iv["t_end_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
    json arj = {{"ops", ar.ops}, {"bytes", allreduce.bytes()}, {"wrong", ar.wrong}};
    if (ar.ops > 0 && ar.seconds > 0) {
      double per_op = ar.seconds / static_cast<double>(ar.ops);
      arj["seconds"] = ar.seconds;
      arj["busbw_gbs"] =
          collectives::busbw_gbs(collectives::kAllReduce, static_cast<double>(allreduce.bytes()),
                                 per_op, ctx.world_size());
    }
    if (!ar.error.empty()) arj["error"] = ar.error;
    if (ar.wrong > 0 && first_error.empty())
      first_error = "interval " + std::to_string(i) + ": all_reduce: " + std::to_string(ar.wrong) +
                    " of " + std::to_string(allreduce.bytes() / 4) + " elements wrong";
    if (!ar.error.empty() && first_error.empty())
      first_error = "interval " + std::to_string(i) + ": all_reduce: " + ar.error;
    iv["allreduce"] = arj;
    if (sampler) {
      json tel = sampler->stop();
      if (tel.value("samples", 0) > 0)
        reasons |= tel["clock_event_reasons"].get<unsigned long long>();
      iv["telemetry"] = tel;
    }
    bool kept = gemm && iv.value("products", 0LL) > 0;
    if (kept) {
      std::lock_guard<std::mutex> lock(out_mu);
      series.push_back(iv);
    }
    // Every rank's interval to rank 0, which rewrites the records with the series so far.
    std::vector<std::string> ivs = ctx.gather(kept ? iv.dump() : std::string());
    if (ctx.is_root()) {
      std::lock_guard<std::mutex> lock(out_mu);
      for (size_t r = 0; r < ivs.size() && r < gathered.size(); ++r)
        if (!ivs[r].empty()) gathered[r].push_back(json::parse(ivs[r]));
      if (!g_signal.load() && !final_written) {
        try {
          snapshot("in progress: " + std::to_string(i + 1) + " of " + std::to_string(n_intervals) +
                       " intervals written; replaced by the final record when the soak ends",
                   {}, "");
        } catch (const std::exception& e) {
          std::cerr << "clusterbench: " << e.what() << std::endl;
        }
      }
    }
    if (ctx.allreduce_sum(g_signal.load() ? 1 : 0) > 0) {
      int sig = g_signal.load();
      stopped = std::string("stopped by ") + (sig ? signal_name(sig) : "a signal to a peer") +
                " during interval " + std::to_string(i + 1) + " of " + std::to_string(n_intervals);
      break;
    }
  }

  // This rank's record.
  ResultRecord rec;
  rec.run_id = run_id;
  rec.benchmark = report::kBurninBenchmark;
  rec.params = me.params;
  rec.scope = me.scope;
  rec.combine = "per_rank";
  rec.case_key = make_case_key(rec.benchmark, rec.params, rec.scope);
  rec.started_at = run.started_at.empty() ? utc_now_iso() : run.started_at;
  rec.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  rec.status = me.status;
  rec.message = me.message;
  rec.error = me.error;
  if (me.status == "ok" && series.empty()) {
    rec.status = "failed";
    rec.message = "no interval finished" + (stopped.empty() ? "" : ": " + stopped);
  }
  rec.extra["minutes"] = opt.minutes;
  rec.extra["interval_s"] = interval_s;
  rec.extra["intervals_planned"] = n_intervals;
  rec.extra["series"] = series;
  if (!series.empty()) add_series_metrics(rec, series, interval_s, nvml_index >= 0);
  if (gemm || !series.empty()) {
    rec.extra["time_basis"] = gemm ? gemm->time_basis() : "";
    if (gemm) rec.extra["backend"] = gemm->facts();
  }
  rec.extra["flop_per_product"] = compute::gemm_flop(shape);
  rec.extra["allreduce"] = {{"backend", allreduce.active() ? backend->name() : "none"},
                            {"bytes", allreduce.bytes()},
                            {"ranks", ctx.world_size()}};
  if (!backend_note.empty()) rec.extra["allreduce"]["note"] = backend_note;
  rec.extra["telemetry"] = nvml_index >= 0 ? json{{"status", "ok"}, {"nvml_index", nvml_index}}
                                           : json{{"status", telemetry_status}};
  if (nvml_index >= 0) {
    rec.extra["clock_event_reasons"] = reasons;
    rec.extra["clock_event_reason_names"] = clock_event_reason_names(reasons);
  }
  if (!first_error.empty()) rec.extra["verification_error"] = first_error;
  if (!stopped.empty()) rec.extra["stopped_early"] = stopped;
  if (corrupt || slow)
    rec.extra["fault_injection"] = corrupt ? "CLUSTERBENCH_TEST_BURNIN_CORRUPT_RANK (test only)"
                                           : "CLUSTERBENCH_TEST_BURNIN_SLOW_RANK (test only)";
  if (setup_delay > 0)
    rec.extra["fault_injection"] = "CLUSTERBENCH_TEST_BURNIN_SETUP_DELAY_S (test only)";

  // Health end snapshots into the EnvRecords; rank 0 writes the records and completes run.json.
  json end_health;
  if (ctx.is_leader()) {
    end_health = health::read_counters(opt.fs_root);
    end_health["xid_watch"] = xid_watcher.stop();
  }
  std::vector<std::string> lines = ctx.gather(json(rec).dump());
  std::vector<std::string> healths =
      ctx.gather(json{{"host", ctx.host()}, {"end", end_health}}.dump());
  int code = 0;
  if (ctx.is_root()) {
    try {
      for (const auto& h : healths) {
        json j = json::parse(h);
        if (j["end"].is_null()) continue;
        for (auto& e : run.env)
          if (e.host == j["host"]) e.health["end"] = j["end"];
      }
      std::vector<std::string> final_lines;
      for (const auto& l : lines) final_lines.push_back(with_health_deltas(l, run.env));
      std::lock_guard<std::mutex> lock(out_mu);
      rewrite_records(sink->dir(), final_lines);
      final_written = true;
      run.finished_at = utc_now_iso();
      run.aborted = !stopped.empty();
      run.abort_reason = stopped;
      if (run.aborted)  // else null until the report's verdict (never a premature 0)
        run.exit_code = 3;
      else
        run.exit_code.reset();
      sink->write_run(run);
      code = report_command(sink->dir(), "", false);
      if (run.aborted) code = 3;
      run.exit_code = code;
      sink->write_run(run);
    } catch (const InputError& e) {
      std::cerr << "clusterbench: " << e.what() << std::endl;
      code = 2;
    } catch (const std::exception& e) {
      std::cerr << "clusterbench: " << e.what() << std::endl;
      code = 3;
    }
  }
  return static_cast<int>(ctx.allreduce_sum(code));
}

}  // namespace clusterbench
