// burnin.soak (burnin_soak.hpp, docs/burnin.md).
#include "compute/burnin_soak.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "collectives/collective.hpp"
#include "compute/burnin.hpp"
#include "compute/burnin_allreduce.hpp"
#include "compute/cpu_blas.hpp"
#include "core/benchmark.hpp"
#include "core/case_line.hpp"
#include "core/error.hpp"
#include "core/progress.hpp"
#include "core/telemetry.hpp"
#include "core/watchdog.hpp"
#include "env/nvml.hpp"

namespace clusterbench::compute {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t kSeed = 20261130;
constexpr int kSamples = 16;
/// CLUSTERBENCH_TEST_BURNIN_SLOW_RANK: the extra work time a slowed product spends, as a fraction
/// of its own (1.0: the rate halves, a drop far outside a shared CPU's noise of about 20 %).
constexpr double kSlowFraction = 1.0;

/// Test-only fault injection (docs/burnin.md): the world rank named by the variable, or -1.
int test_rank(const char* var) {
  const char* v = std::getenv(var);
  if (!v || !*v) return -1;
  char* end = nullptr;
  long r = std::strtol(v, &end, 10);
  return end && *end == '\0' && r >= 0 ? static_cast<int>(r) : -1;
}

/// The soak's clock: its length cut into intervals (burnin_intervals).
struct SoakClock {
  double minutes = 0, total_s = 0, interval_s = 0;
  int intervals = 0;
  explicit SoakClock(double m)
      : minutes(m), total_s(m * 60.0), interval_s(0), intervals(burnin_intervals(m * 60.0)) {
    interval_s = total_s / intervals;
  }
};

/// What one rank's soak is, from its case params.
struct SoakShape {
  bool gpu = false;  ///< cuBLASLt on the GPU, else OpenBLAS on the CPU
  std::string dtype;
  GemmShape shape;
  explicit SoakShape(const json& p)
      : gpu(p.at("backend") == "cublaslt"),
        dtype(p.at("dtype")),
        shape{p.at("m").get<long long>(), p.at("n").get<long long>(), p.at("k").get<long long>()} {}
};

}  // namespace

namespace {

/// A soak's state and its records: the final record and, on rank 0, the snapshots of every
/// rank's series. Soak (below) runs the intervals that fill it.
class SoakRecord {
 protected:
  SoakRecord(CaseRun& run, double minutes)
      : run_(run), ctx_(run.ctx()), clock_(minutes), shape_(run.params()) {}

  /// "node01/gpu3" or "vm/rank1".
  std::string rank_label(size_t r) const {
    const Scope s = scope_of_[r]["scope"].get<Scope>();
    if (s.kind == ScopeKind::gpu) return s.host + "/gpu" + std::to_string(s.gpu_index);
    return s.host + "/rank" + std::to_string(r);
  }

  /// Rank 0, `mu_` held: one snapshot record per rank. `dead` ranks are failed with `dead_text`.
  void snapshot(const std::string& note, const std::vector<int>& dead,
                const std::string& dead_text) {
    for (size_t r = 0; r < scope_of_.size(); ++r) {
      const json& s = r == 0 && series_.size() > gathered_[0].size() ? series_ : gathered_[r];
      const bool is_dead = std::find(dead.begin(), dead.end(), static_cast<int>(r)) != dead.end();
      ResultRecord rec;
      rec.params = scope_of_[r]["params"];
      rec.scope = scope_of_[r]["scope"].get<Scope>();
      rec.combine = "per_rank";
      rec.started_at = utc_now_iso();
      rec.status = !is_dead && !s.empty() ? Status::ok : Status::failed;
      rec.message = is_dead ? dead_text : s.empty() ? "no interval finished: " + note : "";
      rec.extra = {{"minutes", clock_.minutes},
                   {"interval_s", clock_.interval_s},
                   {"intervals_planned", clock_.intervals},
                   {"series", s},
                   {"stopped_early", note}};
      rec.metrics = soak_series_metrics(s, clock_.interval_s, true);
      if (std::string why = soak_not_judged(s, note); !why.empty() && rec.status == Status::ok)
        rec.message = why, rec.extra["not_judged"] = why;
      run_.append_snapshot(rec);
    }
  }

  // --- the record --------------------------------------------------------------------------------

  void write_record() {
    std::lock_guard<std::mutex> lock(mu_);
    recorded_ = true;
    if (status_ == Status::ok && series_.empty())
      status_ = Status::failed,
      message_ = "no interval finished" + (stopped_.empty() ? "" : ": " + stopped_);
    run_.set_extra("minutes", clock_.minutes);
    run_.set_extra("interval_s", clock_.interval_s);
    run_.set_extra("intervals_planned", clock_.intervals);
    run_.set_extra("series", series_);
    for (const Metric& m : soak_series_metrics(series_, clock_.interval_s, nvml_index_ >= 0))
      run_.add_metric(m.name, m.value, m.unit, m.higher_is_better);
    if (gemm_ || !series_.empty()) {
      run_.set_extra("time_basis", gemm_ ? gemm_->time_basis() : "");
      if (gemm_) run_.set_extra("backend", gemm_->facts());
    }
    run_.set_extra("flop_per_product", gemm_flop(shape_.shape));
    json ar = {{"backend", allreduce_ ? backend_->name() : "none"},
               {"bytes", allreduce_ ? allreduce_->bytes() : 0},
               {"ranks", ctx_.world_size()}};
    if (!backend_note_.empty()) ar["note"] = backend_note_;
    run_.set_extra("allreduce", ar);
    write_telemetry_and_faults();
    if (!stopped_.empty()) run_.mark_aborted(stopped_);
    if (std::string why = soak_not_judged(series_, stopped_);
        !why.empty() && status_ == Status::ok) {
      run_.set_extra("not_judged", why);
      run_.finish_as(Status::ok, why);
    }
    if (status_ != Status::ok) run_.finish_as(status_, message_, error_);
  }

  void write_telemetry_and_faults() {
    run_.set_extra("telemetry", nvml_index_ >= 0
                                    ? json{{"status", "ok"}, {"nvml_index", nvml_index_}}
                                    : json{{"status", telemetry_status_}});
    if (nvml_index_ >= 0) {
      run_.set_extra("clock_event_reasons", reasons_);
      run_.set_extra("clock_event_reason_names", clock_event_reason_names(reasons_));
    }
    if (!first_error_.empty()) run_.set_extra("verification_error", first_error_);
    if (!stopped_.empty()) run_.set_extra("stopped_early", stopped_);
    if (corrupt_ || slow_)
      run_.set_extra("fault_injection", corrupt_
                                            ? "CLUSTERBENCH_TEST_BURNIN_CORRUPT_RANK (test only)"
                                            : "CLUSTERBENCH_TEST_BURNIN_SLOW_RANK (test only)");
    if (setup_delay_ > 0)
      run_.set_extra("fault_injection", "CLUSTERBENCH_TEST_BURNIN_SETUP_DELAY_S (test only)");
  }

  CaseRun& run_;
  const Context& ctx_;
  const SoakClock clock_;
  const SoakShape shape_;
  Status status_ = Status::ok;
  std::string message_;
  std::optional<ErrorInfo> error_;
  std::unique_ptr<SoakGemm> gemm_;
  collectives::Backend* backend_ = nullptr;
  std::string backend_note_;
  std::unique_ptr<AllReduceLoop> allreduce_;
  int nvml_index_ = -1;
  std::string telemetry_status_;
  int setup_delay_ = -1;
  bool corrupt_ = false, slow_ = false;
  Clock::time_point t0_;
  std::atomic<int> current_{-1};    ///< the interval under way; -1 during setup
  std::mutex mu_;                   // series_, gathered_ (the signal handler's thread reads them)
  json series_ = json::array();     // this rank's intervals
  std::vector<json> scope_of_;      // rank 0: {params, scope} per rank
  std::vector<json> gathered_;      // rank 0: every rank's series
  std::set<size_t> failure_shown_;  // rank 0: ranks whose failure a console line named
  std::string first_error_, stopped_;
  bool recorded_ = false;  ///< write_record ran (mu_)
  unsigned long long reasons_ = 0;
};

/// One rank's soak: set-up, the intervals in lock-step with every rank, and its record. Rank 0
/// keeps every rank's series (gathered after each interval) and appends a snapshot of each after
/// every interval, so that a kill at any moment leaves the finished intervals on disk.
class Soak : private SoakRecord {
 public:
  Soak(CaseRun& run, double minutes) : SoakRecord(run, minutes) {}
  /// The signal handler goes first (waiting for one that runs): it reads this soak's state.
  ~Soak() { run_.on_signal(nullptr); }
  Soak(const Soak&) = delete;
  Soak& operator=(const Soak&) = delete;

  void run() {
    gather_scopes();
    run_.on_signal([this](const std::string& reason) { return on_signal(reason); });
    setup_gemm();
    setup_allreduce();
    setup_telemetry();
    soak();
    write_record();
  }

 private:
  // --- set-up ------------------------------------------------------------------------------------

  /// Rank 0 learns every rank's params and scope, for the snapshots it writes.
  void gather_scopes() {
    for (const auto& g :
         ctx_.gather(json{{"params", run_.params()}, {"scope", run_.scope()}}.dump()))
      scope_of_.push_back(json::parse(g));
    gathered_.assign(scope_of_.size(), json::array());
  }

  void setup_gemm() {
    if (shape_.gpu && !run_.gpu().runs())
      status_ = run_.gpu().state == GpuState::waived ? Status::waived : Status::failed,
      message_ = run_.gpu().reason;
    // Test only (docs/burnin.md): set-up takes this many seconds longer, so that a test can
    // signal the burn-in during its set-up.
    setup_delay_ = test_rank("CLUSTERBENCH_TEST_BURNIN_SETUP_DELAY_S");
    if (setup_delay_ > 0)
      std::cerr << "clusterbench: burn-in: test set-up delay of " << setup_delay_
                << " s begins (CLUSTERBENCH_TEST_BURNIN_SETUP_DELAY_S)" << std::endl;
    for (auto until = Clock::now() + std::chrono::seconds(std::max(0, setup_delay_));
         Clock::now() < until && !run_.signal_received();)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (status_ != Status::ok || run_.signal_received()) return;
    try {
      gemm_ = shape_.gpu ? make_cublaslt_soak(shape_.dtype, shape_.shape, kSeed, kSamples)
                         : make_openblas_soak(shape_.dtype, shape_.shape, kSeed, kSamples);
    } catch (const Waived& w) {
      status_ = Status::waived, message_ = w.what();
    } catch (const CallError& e) {
      status_ = Status::failed, message_ = e.what(), error_ = e.info();
    } catch (const std::exception& e) {
      status_ = Status::failed, message_ = e.what();
    }
  }

  void setup_allreduce() {
    const bool all_gpu = ctx_.allreduce_sum(gemm_ && shape_.gpu ? 1 : 0) == ctx_.world_size();
    backend_ = nullptr;
    if (all_gpu && !start_nccl()) return;  // every rank's GPU soaks, but NCCL did not start
    const bool nccl = backend_ != nullptr;
    if (!backend_) backend_ = collectives::mpi_backend();
    const Settings& s = run_.settings();
    long long bytes = s.has("burnin.soak", "allreduce_bytes")
                          ? s.get_size("burnin.soak", "allreduce_bytes", 0)
                      : nccl ? 256LL << 20
                             : 1LL << 20;
    if (backend_)
      allreduce_ = std::make_unique<AllReduceLoop>(backend_, std::max(1LL, bytes / 4),
                                                   nccl ? rank_gpu_device(ctx_) : -1);
  }

  /// The run's NCCL communicator (collectives::run_nccl_env, the one the collectives and the
  /// training step share) for the all_reduce loop. Where it does not start on some rank, no rank
  /// loads the links: each record fails, naming the error or the rank that had it, rather than
  /// soaking host buffers over MPI as if the GPUs' interconnect had been tested.
  bool start_nccl() {
    std::string why;
    try {
      backend_ = &collectives::nccl_backend(ctx_, collectives::run_nccl_env(run_.settings()), 600);
    } catch (const std::exception& e) {
      why = e.what();
    }
    const int failed_on = static_cast<int>(ctx_.allreduce_min(
        why.empty() ? static_cast<double>(ctx_.world_size()) : ctx_.world_rank()));
    if (failed_on >= ctx_.world_size()) return true;
    backend_ = nullptr;
    status_ = Status::failed;
    message_ = why.empty() ? "NCCL did not start on rank " + std::to_string(failed_on) +
                                 " (its record says why): the all_reduce loop did not run"
                           : "NCCL did not start, so the all_reduce loop did not run: " + why;
    backend_note_ = message_;
    return false;
  }

  void setup_telemetry() {
    if (!shape_.gpu) {
      telemetry_status_ = "no NVIDIA GPU on this node: no NVML telemetry (CPU soak)";
    } else if (!gemm_) {
      telemetry_status_ = "not sampled: this GPU's soak did not start";
    } else {
      nvml_index_ = nvml_index_for_bus_id(run_.env(), gemm_->pci_bus_id());
      if (nvml_index_ < 0)
        telemetry_status_ = Nvml::get().ok()
                                ? "no NVML GPU has the CUDA device's bus id " + gemm_->pci_bus_id()
                                : "running without telemetry: NVML " + Nvml::get().status();
    }
  }

  // --- the intervals -----------------------------------------------------------------------------

  /// "stopped by SIGTERM during ..." when a rank was signalled (agreed by every rank).
  bool stop_requested(const std::string& during) {
    if (ctx_.allreduce_sum(run_.signal_received() ? 1 : 0) == 0) return false;
    const int sig = run_.signal_received();
    stopped_ = std::string("stopped by ") +
               (sig ? Watchdog::signal_name(sig) : "a signal to a peer") + " during " + during;
    return true;
  }

  void soak() {
    const int corrupt_rank = test_rank("CLUSTERBENCH_TEST_BURNIN_CORRUPT_RANK");
    const int slow_rank = test_rank("CLUSTERBENCH_TEST_BURNIN_SLOW_RANK");
    corrupt_ = corrupt_rank == ctx_.world_rank(), slow_ = slow_rank == ctx_.world_rank();
    if (stop_requested("setup, before the soak began")) return;
    // Nothing to soak anywhere (every GPU waived or failed): no point in waiting out the time.
    if (ctx_.allreduce_sum(gemm_ ? 1 : 0) == 0) return;
    ctx_.quiet_barrier();
    t0_ = Clock::now();
    for (int i = 0; i < clock_.intervals; ++i) {
      current_.store(i);
      interval(i);
      if (stop_requested("interval " + std::to_string(i + 1) + " of " +
                         std::to_string(clock_.intervals)))
        break;
    }
  }

  /// One interval on this rank: GEMM until the deadline, the all_reduce loop beside it.
  void interval(int i) {
    const auto begin = Clock::now();
    const auto deadline = t0_ + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(clock_.interval_s * (i + 1)));
    const bool slowed = slow_ && i >= clock_.intervals / 2;
    if (allreduce_) allreduce_->start();
    std::optional<TelemetrySampler> sampler;
    if (gemm_ && shape_.gpu) sampler.emplace(nvml_index_, 0.1, telemetry_status_);
    json iv = {{"index", i}, {"t_start_s", std::chrono::duration<double>(begin - t0_).count()}};
    if (gemm_) gemm_interval(i, deadline, slowed, iv);
    while (!gemm_ && Clock::now() < deadline && !run_.signal_received())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (slowed) iv["fault_injection"] = "slowed: twice its work time (test only)";
    allreduce_interval(i, iv);
    if (sampler) {
      json tel = sampler->stop();
      if (tel.value("samples", 0) > 0)
        reasons_ |= tel["clock_event_reasons"].get<unsigned long long>();
      iv["telemetry"] = tel;
    }
    const bool kept = gemm_ && iv.value("products", 0LL) > 0;
    if (kept) {
      std::lock_guard<std::mutex> lock(mu_);
      series_.push_back(iv);
    }
    std::string failed = status_ == Status::failed ? message_ : "";
    publish(i, kept             ? iv.dump()
               : failed.empty() ? std::string()
                                : json{{"index", i}, {"failed", failed}}.dump());
  }

  void gemm_interval(int i, Clock::time_point deadline, bool slowed, json& iv) {
    try {
      // Chunks of at most a second, so that a signal ends the interval early.
      SoakWork w;
      while (Clock::now() < deadline && !run_.signal_received()) {
        auto until = std::min(deadline, Clock::now() + std::chrono::seconds(1));
        SoakWork c = gemm_->run_until(until, slowed ? kSlowFraction : 0.0);
        w.products += c.products, w.seconds += c.seconds, w.wall_seconds += c.wall_seconds;
      }
      if (Clock::now() < deadline) iv["partial"] = true;
      auto v = gemm_->verify(kSeed + 1 + static_cast<std::uint64_t>(i), corrupt_ && i >= 1);
      const double flop = gemm_flop(shape_.shape) * static_cast<double>(w.products);
      iv["products"] = w.products;
      iv["flop"] = flop;
      iv["seconds"] = w.seconds;
      iv["wall_seconds"] = w.wall_seconds;
      iv["rate_tflops"] = w.seconds > 0 ? flop / w.seconds / 1e12 : 0.0;
      iv["rate_wall_tflops"] = w.wall_seconds > 0 ? flop / w.wall_seconds / 1e12 : 0.0;
      iv["verification"] = v.to_json();
      if (!v.passed() && first_error_.empty())
        first_error_ =
            "interval " + std::to_string(i) + ": " + v.failure_message(shape_.dtype, shape_.shape);
    } catch (const std::exception& e) {
      status_ = Status::failed, message_ = "interval " + std::to_string(i) + ": " + e.what();
      if (const auto* ce = dynamic_cast<const CallError*>(&e)) error_ = ce->info();
      gemm_.reset();
    }
  }

  void allreduce_interval(int i, json& iv) {
    AllReduceLoop::Interval ar = allreduce_ ? allreduce_->finish() : AllReduceLoop::Interval{};
    iv["t_end_s"] = std::chrono::duration<double>(Clock::now() - t0_).count();
    const long long bytes = allreduce_ ? allreduce_->bytes() : 0;
    json arj = {{"ops", ar.ops},
                {"bytes", bytes},
                {"wrong", ar.wrong},
                {"compared", ar.compared},
                {"wrong_ops", ar.wrong_ops}};
    if (ar.ops > 0 && ar.seconds > 0) {
      arj["seconds"] = ar.seconds;
      arj["busbw_gbs"] =
          collectives::busbw_gbs(collectives::kAllReduce, static_cast<double>(bytes),
                                 ar.seconds / static_cast<double>(ar.ops), ctx_.world_size());
    }
    if (!ar.error.empty()) arj["error"] = ar.error;
    const std::string at = "interval " + std::to_string(i) + ": all_reduce: ";
    if (ar.wrong > 0 && first_error_.empty())
      first_error_ =
          at + std::to_string(ar.wrong) + " of " + std::to_string(bytes / 4) + " elements wrong";
    if (ar.wrong_ops > 0 && first_error_.empty())
      first_error_ = at + std::to_string(ar.wrong_ops) + " of " + std::to_string(ar.compared) +
                     " results differed from the first checked one";
    if (!ar.error.empty() && first_error_.empty()) first_error_ = at + ar.error;
    iv["allreduce"] = arj;
  }

  /// Every rank's interval to rank 0, which appends a snapshot of every rank's series so far.
  /// Every rank's interval to rank 0, which appends a snapshot of every rank's series so far
  /// and prints the interval's line (burnin_interval_line). A rank whose GEMM failed sends
  /// {"failed": why} instead of an interval; it is named once, in the interval it failed.
  void publish(int i, const std::string& mine) {
    std::vector<std::string> ivs = ctx_.gather(mine);
    if (!ctx_.is_root()) return;
    std::vector<json> payloads(ivs.size());
    std::vector<std::string> labels;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t r = 0; r < ivs.size() && r < gathered_.size(); ++r) {
        if (ivs[r].empty()) continue;
        payloads[r] = json::parse(ivs[r]);
        if (!payloads[r].contains("failed"))
          gathered_[r].push_back(payloads[r]);
        else if (!failure_shown_.insert(r).second)
          payloads[r] = nullptr;  // said when it happened
      }
      if (!run_.signal_received())
        snapshot("in progress: " + std::to_string(i + 1) + " of " +
                     std::to_string(clock_.intervals) +
                     " intervals written; replaced by the final record when the soak ends",
                 {}, "");
      for (size_t r = 0; r < scope_of_.size(); ++r) labels.push_back(rank_label(r));
    }
    labels.resize(payloads.size(), "rank?");
    console_progress(burnin_interval_line(i, clock_.intervals, labels, payloads));
  }

  /// The watchdog's thread, on SIGTERM/SIGINT/SIGHUP (mpirun sends SIGTERM when a rank dies, then
  /// SIGKILL a second later): rank 0 writes the finished intervals at once, then asks every rank
  /// over the progress channel whether it is there; a rank that does not answer died, and the
  /// records name it (abort now). Otherwise the soak ends in order at the interval's end.
  std::optional<std::string> on_signal(const std::string&) {
    if (!ctx_.is_root()) return std::nullopt;
    const int sig = run_.signal_received();
    const int current = current_.load();
    const std::string during = current < 0 ? " during setup, before the soak began"
                                           : " during interval " + std::to_string(current + 1) +
                                                 " of " + std::to_string(clock_.intervals);
    const std::string what = std::string("terminated by ") + Watchdog::signal_name(sig) + during +
                             " (a rank died, or the job was cancelled)";
    {
      std::lock_guard<std::mutex> lock(mu_);
      // The case saw the signal first and wrote its record (which says when it stopped).
      if (recorded_) return std::nullopt;
      snapshot(what + ": the finished intervals, written when the signal arrived", {}, "");
      run_.mark_aborted(what);
    }
    ProgressChannel* channel = ProgressChannel::current();
    if (!channel) return std::nullopt;
    std::vector<int> dead;
    std::string names;
    for (const auto& p : channel->collect(0.5))
      if (!p.answered) {
        dead.push_back(p.rank);
        names += std::string(names.empty() ? "" : ", ") + "rank " + std::to_string(p.rank) + " (" +
                 ctx_.rank_hosts()[static_cast<size_t>(p.rank)] + ")";
      }
    if (dead.empty()) return std::nullopt;  // every rank is there: the soak ends in order
    const std::string reason = names + " died" + during + ": no answer to rank 0 after " +
                               Watchdog::signal_name(sig) +
                               " (mpirun ends the job when a rank dies)";
    std::lock_guard<std::mutex> lock(mu_);
    snapshot("stopped: " + reason, dead, reason);
    return reason;
  }
};

class BurninSoak : public Benchmark {
 public:
  std::string id() const override { return "burnin.soak"; }
  std::string description() const override {
    return "sustained GEMM on every GPU (CPU ranks: OpenBLAS) beside an all_reduce loop, checked "
           "every interval (clusterbench burnin)";
  }
  Level level() const override { return Level::rank; }
  bool in_suite(const std::string& suite) const override { return suite == "burnin"; }
  bool calls_mpi_from_threads() const override { return true; }  // the all_reduce thread
  std::vector<json> cases(const Settings&) const override { return {json::object()}; }

  /// GPU nodes soak the GPU (cuBLASLt, bf16, 8192^3 unless set), others the CPU (OpenBLAS, fp32,
  /// 256^3): a case key says what its rank ran.
  json params_on(const json&, const EnvRecord& env, const Settings& s) const override {
    const bool gpu = env.gpu_status.on_pci > 0 || !env.gpus.empty();
    std::string dtype = dtype_(s);
    if (dtype.empty()) dtype = gpu ? "bf16" : "fp32";
    const long long n = shape_.given(s) ? shape_(s) : gpu ? 8192 : 256;
    return {
        {"backend", gpu ? "cublaslt" : "openblas"}, {"dtype", dtype}, {"m", n}, {"n", n}, {"k", n}};
  }
  Level case_level(const json& p) const override {
    return p.value("backend", "") == "cublaslt" ? Level::gpu : Level::rank;
  }
  std::string applicable(const NodeEnv&) const override { return ""; }
  /// The CPU soak is waived in a build without OpenBLAS (compute/cpu_blas.hpp).
  std::string case_waiver(const json& p, const NodeEnv&) const override {
    return p.value("backend", "") == "openblas" ? openblas_absent() : "";
  }
  void check(const json& params, const NodeEnv& node) const override;
  double estimate_s(const Settings& s, const json&) const override { return minutes_(s) * 60 + 30; }

  void run(CaseRun& run) const override {
    if (run.group_size() != run.ctx().world_size())
      throw std::runtime_error("a rank could not start the soak (its record says why)");
    Soak(run, minutes_(run.settings())).run();
  }

 private:
  Knob<double> minutes_ = knobs_.number("minutes", "10", "", "soak length in minutes");
  Knob<std::string> dtype_ =
      knobs_.text("dtype", "", "GEMM dtype (default bf16 on GPUs, fp32 on CPUs)");
  Knob<long long> shape_ =
      knobs_.integer("shape", "", "count", "GEMM cube size (default 8192 on GPUs, 256 on CPUs)");
  Knob<long long> allreduce_bytes_ =
      knobs_.size("allreduce_bytes", "", "all_reduce size (default 256M with NCCL, 1M with MPI)");
};

void BurninSoak::check(const json& params, const NodeEnv& node) const {
  const SoakShape shape(params);
  if (!shape.gpu && shape.dtype != "fp32" && shape.dtype != "fp64")
    throw InputError("--dtype " + shape.dtype + ": the CPU burn-in runs fp32 or fp64");
  const auto& gpu_dtypes = cublaslt_dtypes();
  if (shape.gpu && std::find(gpu_dtypes.begin(), gpu_dtypes.end(), shape.dtype) == gpu_dtypes.end())
    throw InputError("--dtype " + shape.dtype +
                     ": the GPU burn-in runs fp16, bf16, tf32, fp32 or fp8_e4m3");
  // A product must fit many times in an interval, and a signal must stop the soak within about a
  // second (a product cannot be interrupted): refuse a shape whose product is estimated longer,
  // before anything is allocated or written. CPU ranks estimate from a small probe product.
  const SoakClock clock(minutes_(node.settings));
  const double max_product_s = burnin_max_product_seconds(clock.interval_s);
  // Without OpenBLAS the CPU soak is waived (case_waiver): nothing to estimate.
  const bool cpu = !shape.gpu && openblas_absent().empty();
  double est_s = cpu ? estimate_openblas_product_seconds(shape.dtype, shape.shape) : 0.0;
  est_s = node.ctx.allreduce_max(est_s);
  if (est_s <= max_product_s) return;
  const long long n = shape.shape.m;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "--shape %lld: one %s %lldx%lldx%lld product takes about %.3g s on this CPU "
                "(estimated, slowest rank), more than %.3g s (a tenth of the %.3g-s interval, "
                "at most 1 s): a product must fit many times in one interval and a signal must "
                "stop the soak within a second; choose a smaller --shape or more --minutes",
                n, shape.dtype.c_str(), n, n, n, est_s, max_product_s, clock.interval_s);
  throw InputError(buf);
}

CLUSTERBENCH_REGISTER(BurninSoak);

}  // namespace
}  // namespace clusterbench::compute
