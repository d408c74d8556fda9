// compute.training_step: a synthetic data-parallel transformer step, one rank per GPU (CPU nodes:
// one rank per node, OpenBLAS on one thread), measured whole and in parts, and predicted from its
// parts (compute/training_model.hpp; guide: docs/training.md). A composite benchmark: it drives
// the collectives' backend and io's loader pipeline. Measures only; the rows that judge it are in
// reports/specs.
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "collectives/collective.hpp"
#include "compute/cpu_blas.hpp"
#include "compute/training_engine.hpp"
#include "compute/training_model.hpp"
#include "core/benchmark.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "core/gpu_case.hpp"
#include "core/gpu_disposition.hpp"
#include "gpu/operation.hpp"
#include "io/dataloader.hpp"
#include "io/dataset.hpp"
#include "io/scratch.hpp"

namespace clusterbench::compute {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
double median_of(std::vector<double> v) { return compute_stats(std::move(v)).median; }

/// The gradient thread: runs posted collectives in order beside the backward (DDP's reducer on
/// its own stream). wait() blocks until every posted job has run and rethrows the first error.
class CommThread {
 public:
  /// `init` runs first on the thread (an error in it is the first job's error).
  explicit CommThread(std::function<void()> init = nullptr)
      : init_(std::move(init)), thread_([this] { loop(); }) {}
  ~CommThread() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [this] { return jobs_.empty() && !running_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }
  /// Seconds spent in jobs since the last call.
  double take_busy() { return std::exchange(busy_s_, 0.0); }

 private:
  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    try {
      if (init_) init_();
    } catch (...) {
      error_ = std::current_exception();
    }
    for (;;) {
      cv_.wait(lk, [this] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      running_ = true;
      lk.unlock();
      const auto t0 = Clock::now();
      std::exception_ptr err;
      try {
        if (!error_) job();
      } catch (...) {
        err = std::current_exception();
      }
      lk.lock();
      busy_s_ += since(t0);
      if (err && !error_) error_ = err;
      running_ = false;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false, running_ = false;
  std::exception_ptr error_;
  double busy_s_ = 0;
  std::function<void()> init_;
  std::thread thread_;
};

/// Seconds of each phase in one measured step, on this rank's main thread (comm: the gradient
/// thread's busy time).
struct StepPhases {
  double compute = 0, loader_wait = 0, comm_wait = 0, optimizer = 0, comm_busy = 0;
};

/// One rank's synthetic model on an engine, with the loader: runs the parts alone and the whole
/// step.
class Trainer {
 public:
  Trainer(const TrainingConfig& c, Engine& engine, io::Loader& loader)
      : c_(c), e_(engine), loader_(loader) {}
  Engine& engine() { return e_; }
  /// One loader batch taken and given back; its wait.
  double take_batch() {
    io::LoadedBatch b = loader_.next();
    loader_.release(b);
    return b.wait_s;
  }
  /// Takes every batch the loader holds ready, so that a measurement starts from an empty pipe.
  void drain_loader() {
    for (int i = 0; i < loader_.slots(); ++i) take_batch();
  }
  /// d2h, Adam, h2d (offload) or Adam alone; then all_gather (ZeRO-2).
  void optimizer_step() {
    if (c_.offload) e_.d2h();
    e_.optimizer();
    if (c_.offload) e_.h2d();
    e_.all_gather();
  }
  /// One optimizer step (docs/training.md "The step"). `overlap` false is the test fault
  /// (serial_comm): each bucket's collective runs on this thread when it is ready.
  StepPhases step(CommThread& comm, bool overlap);

 private:
  TrainingConfig c_;
  Engine& e_;
  io::Loader& loader_;
};

StepPhases Trainer::step(CommThread& comm, bool overlap) {
  StepPhases ph;
  for (int a = 0; a < c_.accum; ++a) {
    auto t0 = Clock::now();
    io::LoadedBatch b = loader_.next();
    ph.loader_wait += since(t0);
    const bool last = a + 1 == c_.accum;
    t0 = Clock::now();
    for (int l = 0; l < c_.layers; ++l) e_.forward_layer();
    size_t k = 0;
    int in_bucket = 0;
    for (int l = c_.layers - 1; l >= 0; --l) {
      e_.backward_layer(l);
      if (!last || ++in_bucket < e_.buckets()[k]) continue;
      if (overlap) {
        comm.post([this, k] { e_.reduce(k); });
      } else {
        ph.compute += since(t0);
        const auto tc = Clock::now();
        e_.reduce(k);
        ph.comm_busy += since(tc);
        t0 = Clock::now();
      }
      ++k, in_bucket = 0;
    }
    ph.compute += since(t0);
    loader_.release(b);
  }
  auto t0 = Clock::now();
  comm.wait();
  ph.comm_wait = since(t0);
  ph.comm_busy += comm.take_busy();
  t0 = Clock::now();
  optimizer_step();
  ph.optimizer = since(t0);
  return ph;
}

/// Times `op` through the harness (lock-step over the ranks) and returns this rank's own median
/// seconds per operation.
double time_part(CaseRun& run, const std::string& label, const std::function<void()>& op) {
  std::vector<double> own;
  run.exec(
      [&](long long n) {
        const auto t0 = Clock::now();
        for (long long i = 0; i < n; ++i) op();
        own.push_back(since(t0) / static_cast<double>(n));
        return -1.0;
      },
      label);
  return median_of(own);
}

/// The parts alone, each at the step's real shapes (docs/training.md "The parts").
StepParts measure_parts(CaseRun& run, const TrainingConfig& c, Trainer& t, const std::string& tag) {
  Engine& e = t.engine();
  StepParts p;
  p.forward_layer = time_part(run, "forward_layer" + tag, [&] { e.forward_layer(); });
  p.backward_layer = time_part(run, "backward_layer" + tag, [&] { e.backward_layer(0); });
  double first = -1, last = -1;
  const auto& b = e.buckets();
  for (size_t k = 0; k < b.size(); ++k) {
    // Buckets of one size share one measurement.
    double& slot = b[k] == b.front() ? first : last;
    if (slot < 0)
      slot =
          time_part(run, "bucket_" + std::to_string(b[k]) + "_layers" + tag, [&] { e.reduce(k); });
    p.bucket_comm.push_back(slot);
  }
  p.optimizer = time_part(run, "optimizer" + tag, [&] { e.optimizer(); });
  if (c.offload) p.d2h = time_part(run, "d2h" + tag, [&] { e.d2h(); });
  if (c.offload) p.h2d = time_part(run, "h2d" + tag, [&] { e.h2d(); });
  if (c.zero == 2) p.all_gather = time_part(run, "all_gather" + tag, [&] { e.all_gather(); });
  t.drain_loader();
  p.loader_batch = time_part(run, "loader" + tag, [&] { t.take_batch(); });
  return p;
}

/// The parts as record evidence, in seconds.
json parts_json(const StepParts& p) {
  return {{"forward_layer_s", p.forward_layer},
          {"backward_layer_s", p.backward_layer},
          {"bucket_comm_s", p.bucket_comm},
          {"optimizer_s", p.optimizer},
          {"d2h_s", p.d2h},
          {"h2d_s", p.h2d},
          {"all_gather_s", p.all_gather},
          {"loader_batch_s", p.loader_batch}};
}
StepParts parts_of(const json& j) {
  StepParts p;
  p.forward_layer = j.at("forward_layer_s"), p.backward_layer = j.at("backward_layer_s");
  p.bucket_comm = j.at("bucket_comm_s").get<std::vector<double>>();
  p.optimizer = j.at("optimizer_s"), p.d2h = j.at("d2h_s"), p.h2d = j.at("h2d_s");
  p.all_gather = j.at("all_gather_s"), p.loader_batch = j.at("loader_batch_s");
  return p;
}
/// Element-wise max of two ranks' parts: the slowest rank gates every lock-step collective.
StepParts slowest(StepParts a, const StepParts& b) {
  a.forward_layer = std::max(a.forward_layer, b.forward_layer);
  a.backward_layer = std::max(a.backward_layer, b.backward_layer);
  for (size_t k = 0; k < a.bucket_comm.size(); ++k)
    a.bucket_comm[k] = std::max(a.bucket_comm[k], b.bucket_comm[k]);
  a.optimizer = std::max(a.optimizer, b.optimizer), a.d2h = std::max(a.d2h, b.d2h);
  a.h2d = std::max(a.h2d, b.h2d), a.all_gather = std::max(a.all_gather, b.all_gather);
  a.loader_batch = std::max(a.loader_batch, b.loader_batch);
  return a;
}

/// "network: all_reduce at 0.035 GB/s busbw is 83% of the step" and the like.
std::string bottleneck_text(const TrainingConfig& c, const StepParts& p, const StepPrediction& r,
                            int ranks) {
  char buf[256];
  const int pct = static_cast<int>(std::lround(100 * r.bottleneck_share));
  if (r.bottleneck == "network") {
    const double bytes = static_cast<double>(bucket_layers(c).front() * layer_grad_bytes(c));
    std::snprintf(buf, sizeof buf, "network: %s at %.3g GB/s busbw is %d%% of the step",
                  c.zero == 0 ? "all_reduce" : "reduce_scatter",
                  bucket_busbw_gbs(c.zero, bytes, p.bucket_comm.front(), ranks), pct);
  } else if (r.bottleneck == "compute") {
    const double flop = gemms_flop(forward_gemms(c)) + gemms_flop(backward_gemms(c));
    std::snprintf(buf, sizeof buf, "compute: the layer GEMMs at %.3g TFLOP/s are %d%% of the step",
                  flop / (p.forward_layer + p.backward_layer) / 1e12, pct);
  } else if (r.bottleneck == "loader") {
    std::snprintf(buf, sizeof buf, "loader: %.3g s per batch with %d worker(s) is %d%% of the step",
                  p.loader_batch, c.workers, pct);
  } else {
    std::snprintf(buf, sizeof buf, "optimizer: Adam%s over %lld parameters is %d%% of the step",
                  c.offload ? " on the host (offload)" : "",
                  c.zero == 2 ? model_params(c) / ranks : model_params(c), pct);
  }
  return buf;
}

/// Median of each measured phase over the steps, in ms.
json phase_medians(const std::vector<StepPhases>& ph) {
  std::vector<double> compute, loader, wait, opt, busy;
  for (const auto& x : ph) {
    compute.push_back(x.compute * 1e3), loader.push_back(x.loader_wait * 1e3);
    wait.push_back(x.comm_wait * 1e3), opt.push_back(x.optimizer * 1e3);
    busy.push_back(x.comm_busy * 1e3);
  }
  return {{"compute", median_of(compute)},
          {"loader_wait", median_of(loader)},
          {"comm_wait", median_of(wait)},
          {"optimizer", median_of(opt)},
          {"comm_busy", median_of(busy)}};
}

/// Element-wise median of parts over rounds (all of one configuration, so of one bucket count).
StepParts median_parts(const std::vector<StepParts>& v) {
  auto med = [&](auto field) {
    std::vector<double> x;
    for (const auto& p : v) x.push_back(field(p));
    return median_of(x);
  };
  StepParts m;
  m.forward_layer = med([](const StepParts& p) { return p.forward_layer; });
  m.backward_layer = med([](const StepParts& p) { return p.backward_layer; });
  for (size_t k = 0; k < v.front().bucket_comm.size(); ++k)
    m.bucket_comm.push_back(med([k](const StepParts& p) { return p.bucket_comm[k]; }));
  m.optimizer = med([](const StepParts& p) { return p.optimizer; });
  m.d2h = med([](const StepParts& p) { return p.d2h; });
  m.h2d = med([](const StepParts& p) { return p.h2d; });
  m.all_gather = med([](const StepParts& p) { return p.all_gather; });
  m.loader_batch = med([](const StepParts& p) { return p.loader_batch; });
  return m;
}

/// One round as a scope item sees it: the parts (the slowest rank's), their prediction and the
/// measured steps (seconds, one per timed step).
struct RoundView {
  StepParts parts;
  StepPrediction predicted;
  std::vector<double> steps;
};

/// Each step against its own round's prediction: step / predicted, in order.
std::vector<double> ratios(const std::vector<RoundView>& rounds) {
  std::vector<double> out;
  for (const auto& r : rounds)
    for (double x : r.steps) out.push_back(x / r.predicted.step);
  return out;
}
std::vector<double> all_steps(const std::vector<RoundView>& rounds) {
  std::vector<double> out;
  for (const auto& r : rounds) out.insert(out.end(), r.steps.begin(), r.steps.end());
  return out;
}
json rounds_json(const std::vector<RoundView>& rounds) {
  json out = json::array();
  for (const auto& r : rounds)
    out.push_back({{"parts", parts_json(r.parts)},
                   {"predicted_step_s", r.predicted.step},
                   {"steps_s", r.steps}});
  return out;
}

/// The measured step, its ratio to its round's prediction and each rank's model FLOP rate (the
/// layers' GEMM FLOP of a step over the step: what MFU divides by the GPU's dense peak), each
/// with one rep per step: the metrics a cluster record and a node record share.
std::vector<Metric> step_metrics(const TrainingConfig& c, const std::vector<RoundView>& rounds,
                                 const StepPrediction& med) {
  std::vector<double> ms, rs = ratios(rounds), model;
  for (double x : all_steps(rounds)) {
    ms.push_back(x * 1e3);
    model.push_back(step_model_flop(c) / x / 1e12);
  }
  return {Metric("step_time", median_of(ms), "ms", false, ms),
          Metric("predicted_step_time", med.step * 1e3, "ms", false),
          Metric("step_over_prediction", median_of(rs), "ratio", false, rs),
          Metric("model_tflops", median_of(model), "TFLOP/s", true, model)};
}

/// The cluster record's metrics. `med`: the prediction from the rounds' median parts `p`.
void add_step_metrics(CaseRun& run, const TrainingConfig& c, const std::vector<RoundView>& rounds,
                      const StepParts& p, const StepPrediction& med, int ranks) {
  for (auto& m : step_metrics(c, rounds, med)) run.add(std::move(m));
  const double tokens = static_cast<double>(c.accum) * tokens_per_micro_step(c);
  const double layer_flop = gemms_flop(forward_gemms(c)) + gemms_flop(backward_gemms(c));
  std::vector<double> per_gpu, cluster, share;
  for (const auto& r : rounds) {
    const double rate = layer_flop / (r.parts.forward_layer + r.parts.backward_layer);
    for (double x : r.steps) {
      per_gpu.push_back(tokens / x), cluster.push_back(tokens * ranks / x);
      share.push_back(100 * step_model_flop(c) / x / rate);
    }
  }
  run.add_metric("tokens_per_s_per_gpu", median_of(per_gpu), "tokens/s", true, per_gpu);
  run.add_metric("tokens_per_s", median_of(cluster), "tokens/s", true, cluster);
  // The step's model FLOP at the GEMM rate its own round measured, over the step: the share of
  // the step its GEMMs account for (not MFU, which is against the GPU's peak: docs/training.md).
  run.add_metric("gemm_time_share", median_of(share), "%", true, share);
  run.add_metric("gemm_tflops", layer_flop / (p.forward_layer + p.backward_layer) / 1e12,
                 "TFLOP/s");
  run.add_metric("predicted_compute", med.compute * 1e3, "ms", false);
  run.add_metric("predicted_comm", med.comm * 1e3, "ms", false);
  run.add_metric("predicted_exposed_comm", med.exposed_comm * 1e3, "ms", false);
  run.add_metric("predicted_optimizer", med.optimizer * 1e3, "ms", false);
  run.add_metric("predicted_loader", med.loader * 1e3, "ms", false);
  const double bytes = static_cast<double>(bucket_layers(c).front() * layer_grad_bytes(c));
  if (ranks > 1)
    run.add_metric("bucket_busbw", bucket_busbw_gbs(c.zero, bytes, p.bucket_comm.front(), ranks),
                   "GB/s");
}

/// Every rank's rounds, gathered: rank -> round -> {parts, steps}.
struct Gathered {
  std::vector<std::string> hosts;                       ///< by rank
  std::vector<std::vector<StepParts>> parts;            ///< [rank][round]
  std::vector<std::vector<std::vector<double>>> steps;  ///< [rank][round] own step seconds
};
Gathered parse_gathered(const std::vector<std::string>& texts) {
  Gathered g;
  for (const auto& text : texts) {
    const json j = json::parse(text);
    g.hosts.push_back(j.at("host"));
    g.parts.emplace_back(), g.steps.emplace_back();
    for (const auto& r : j.at("rounds")) {
      g.parts.back().push_back(parts_of(r.at("parts")));
      g.steps.back().push_back(r.at("steps").get<std::vector<double>>());
    }
  }
  return g;
}

/// The rounds of the ranks `ranks` (a node, or every rank): each round's parts the slowest of
/// theirs, with the collectives of `comm_of` (the cluster's round, whoever waits for whom) when
/// given; each step the slowest of theirs.
std::vector<RoundView> view(const TrainingConfig& c, const Gathered& g,
                            const std::vector<size_t>& ranks,
                            const std::vector<RoundView>* comm_of) {
  std::vector<RoundView> out(g.parts.front().size());
  for (size_t r = 0; r < out.size(); ++r) {
    RoundView& v = out[r];
    v.parts = g.parts[ranks.front()][r];
    v.steps = g.steps[ranks.front()][r];
    for (size_t i : ranks) {
      v.parts = slowest(v.parts, g.parts[i][r]);
      for (size_t k = 0; k < v.steps.size() && k < g.steps[i][r].size(); ++k)
        v.steps[k] = std::max(v.steps[k], g.steps[i][r][k]);
    }
    if (comm_of) {
      v.parts.bucket_comm = (*comm_of)[r].parts.bucket_comm;
      v.parts.all_gather = (*comm_of)[r].parts.all_gather;
    }
    v.predicted = predict_step(c, v.parts);
    // A node's collectives end when the slowest rank reaches them: its step cannot be shorter
    // than the cluster's prediction (else the node with the fastest parts is blamed for waiting).
    if (comm_of) v.predicted.step = std::max(v.predicted.step, (*comm_of)[r].predicted.step);
  }
  return out;
}

/// Rank 0: one node-scope record per node, its measured steps against the predictions from its
/// own compute, optimizer and loader parts (the slowest of its ranks) and the cluster's
/// collectives, round by round, each at least the cluster's (a node waits for the slowest rank;
/// `cluster_step`: the cluster's prediction from its median parts, seconds).
void add_node_records(CaseRun& run, const TrainingConfig& c, const Gathered& g,
                      const std::vector<RoundView>& cluster, double cluster_step) {
  std::vector<std::string> order;
  for (const auto& h : g.hosts)
    if (std::find(order.begin(), order.end(), h) == order.end()) order.push_back(h);
  for (const auto& host : order) {
    std::vector<size_t> ranks;
    for (size_t i = 0; i < g.hosts.size(); ++i)
      if (g.hosts[i] == host) ranks.push_back(i);
    const auto rounds = view(c, g, ranks, &cluster);
    std::vector<StepParts> ps;
    for (const auto& r : rounds) ps.push_back(r.parts);
    const StepParts p = median_parts(ps);
    StepPrediction med = predict_step(c, p);
    med.step = std::max(med.step, cluster_step);  // as each round's (view)
    Scope sc;
    sc.kind = ScopeKind::node, sc.host = host;
    run.add_record(
        sc, step_metrics(c, rounds, med), compute_stats(all_steps(rounds)),
        {{"parts", parts_json(p)},
         {"rounds", rounds_json(rounds)},
         {"bottleneck", med.bottleneck},
         {"bottleneck_text", bottleneck_text(c, p, med, static_cast<int>(g.hosts.size()))}});
  }
}

/// The loader's dataset in a scratch directory under $TMPDIR (else /tmp): sequences of `seq`
/// int32 tokens, every loader slot's batch twice over (at least 64 files). Refused (exit 2) where
/// the directory lacks room or cannot be written, naming it.
std::unique_ptr<io::ScratchDir> make_token_dataset(const TrainingConfig& c) {
  const std::string parent = io::system_tmpdir();
  io::DatasetSpec spec;
  spec.count = std::max(64LL, 4LL * c.micro_batch * c.workers * c.prefetch);
  spec.size = 32 + 4LL * c.seq;
  const long long need = spec.count * spec.size, avail = io::free_bytes(parent);
  if (avail >= 0 && avail < need + (64LL << 20))
    throw Refused("refused: the loader's dataset needs " + std::to_string(need) + " B in " +
                  parent + " ($TMPDIR), which has " + std::to_string(avail) + " B free");
  try {
    auto dir = std::make_unique<io::ScratchDir>(parent, "training");
    spec.dir = dir->path();
    io::make_dataset(spec);
    return dir;
  } catch (const std::exception& e) {
    throw Refused("refused: cannot write the loader's dataset of " + std::to_string(spec.count) +
                  " files under " + parent +
                  " ($TMPDIR; set it to a writable local directory): " + e.what());
  }
}

/// Restores the MPI backend's blocking waits when the case ends.
struct PollSleep {
  collectives::Backend* be;
  PollSleep(collectives::Backend* b, double s) : be(b) {
    if (be) be->set_poll_sleep(s);
  }
  ~PollSleep() {
    if (be) be->set_poll_sleep(0);
  }
};

class TrainingStep : public Benchmark {
 public:
  std::string id() const override { return "compute.training_step"; }
  std::string description() const override {
    return "a synthetic data-parallel transformer step (GEMMs, bucketed gradient collectives "
           "overlapped with the backward, Adam, the loader), measured whole and predicted from "
           "its parts measured alone";
  }
  Level level() const override { return Level::cluster; }
  bool in_suite(const std::string& suite) const override {
    return suite == "quick" || suite == "full";
  }
  bool calls_mpi_from_threads() const override { return true; }  // the gradient thread
  std::vector<json> cases(const Settings&) const override { return {json::object()}; }
  /// The preset by node (GPU nodes 7b, others ci) with every given knob over it.
  json params_on(const json&, const EnvRecord& env, const Settings& s) const override {
    return resolve(s, env.gpu_status.on_pci > 0 || !env.gpus.empty());
  }
  /// The configuration of a node with (`gpu`) or without a GPU, as case params.
  json resolve(const Settings& s, bool gpu) const {
    std::string preset = preset_(s);
    if (preset.empty() && preset_.given(s))
      throw InputError(
          "--set compute.training_step.preset=: empty; name 7b or ci (or leave it out)");
    if (preset.empty()) preset = gpu ? "7b" : "ci";
    TrainingConfig c;
    try {
      c = training_preset(preset);
    } catch (const std::invalid_argument& e) {
      throw InputError(std::string("--set compute.training_step.preset: ") + e.what());
    }
    // Each integer within what its field holds: a value past it is an error, never wrapped.
    auto set = [&](const Knob<long long>& k, auto& field, const char* name) {
      if (!k.given(s)) return;
      const long long v = k(s);
      using T = std::decay_t<decltype(field)>;
      if (v < 0 || v > static_cast<long long>(std::numeric_limits<T>::max()))
        throw InputError(std::string("--set compute.training_step.") + name + "=" +
                         std::to_string(v) + ": out of range (0.." +
                         std::to_string(static_cast<long long>(std::numeric_limits<T>::max())) +
                         ")");
      field = static_cast<T>(v);
    };
    set(layers_, c.layers, "layers"), set(hidden_, c.hidden, "hidden"), set(ffn_, c.ffn, "ffn");
    set(heads_, c.heads, "heads"), set(seq_, c.seq, "seq");
    set(micro_batch_, c.micro_batch, "micro_batch"), set(accum_, c.accum, "accum");
    set(zero_, c.zero, "zero"), set(bucket_, c.bucket_bytes, "bucket");
    set(workers_, c.workers, "workers"), set(prefetch_, c.prefetch, "prefetch");
    if (dtype_.given(s)) c.dtype = dtype_(s);
    if (offload_.given(s)) c.offload = offload_(s) == "true";
    // The preset's loss scale is fp16's with offload: --set dtype=bf16 or offload=false drops it.
    c.loss_scale = loss_scale_.given(s) ? loss_scale_(s) == "dynamic"
                                        : c.loss_scale && c.dtype == "fp16" && c.offload;
    json p = config_params(c);
    p["engine"] = gpu ? "gpu" : "cpu";
    return p;
  }
  std::string applicable(const NodeEnv&) const override { return ""; }
  /// The GPU engine runs where the node has GPUs (the GPU disposition waives or fails it there);
  /// the CPU engine runs fp32 GEMMs on OpenBLAS.
  bool case_needs_gpu(const json& p) const override { return p.value("engine", "") == "gpu"; }
  std::string case_waiver(const json& p, const NodeEnv&) const override {
    if (p.value("engine", "") == "gpu") return "";
    if (p.value("dtype", "") != "fp32") return "the CPU engine runs fp32 GEMMs (OpenBLAS sgemm)";
    return openblas_absent();
  }
  void check(const json& params, const NodeEnv& node) const override {
    const json p = params.contains("layers") ? params : params_on(params, node.env, node.settings);
    const TrainingConfig c = config_of(p);
    const std::string why = training_config_error(c);
    if (!why.empty()) throw InputError("--set compute.training_step: " + why);
    const Settings& s = node.settings;
    if (!(poll_us_(s) >= 0 && poll_us_(s) <= 1e5) ||
        !(slow_loader_(s) >= 0 && slow_loader_(s) <= 60))
      throw InputError(
          "--set compute.training_step.poll_us must be in 0..100000 us and .slow_loader in 0..60 "
          "s");
    // A count of 0 is refused, not run as 1: what runs is what the user asked for.
    for (const auto& [knob, name] : {std::pair{&rounds_, "rounds"}, {&threads_, "threads"}})
      if (knob->given(s) && (*knob)(s) < 1)
        throw InputError("--set compute.training_step." + std::string(name) + "=" +
                         std::to_string((*knob)(s)) + ": must be at least 1");
    check_memory(c, p.value("engine", "cpu") == "gpu", node);
    check_same_on_every_rank(p, node.ctx);
  }
  /// Every rank must run one configuration (they meet in the same collectives): refuses one that
  /// differs, naming the first field and the rank.
  static void check_same_on_every_rank(const json& p, const Context& ctx) {
    const auto all = ctx.allgather(p.dump());
    const json first = json::parse(all.front());
    for (size_t r = 1; r < all.size(); ++r) {
      const json other = json::parse(all[r]);
      for (const auto& [key, value] : first.items())
        if (other.value(key, json()) != value)
          throw InputError("--set compute.training_step: rank " + std::to_string(r) + " has " +
                           key + "=" + other.value(key, json()).dump() + ", rank 0 " + key + "=" +
                           value.dump() + ": every rank must run one configuration");
    }
  }
  /// Refuses a configuration whose host memory, over this node's ranks, exceeds half of the
  /// node's memory (MemTotal): it would swap or be killed mid-run.
  static void check_memory(const TrainingConfig& c, bool gpu, const NodeEnv& node) {
    const auto& total = node.env.memory.usable_gib;
    if (!total) return;
    const double need = host_bytes_per_rank(c, node.ctx.world_size(), gpu) * node.ctx.local_size();
    const double have = *total * 1073741824.0;
    if (need <= have / 2) return;
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "--set compute.training_step: the model needs %.3g GiB of host memory on this "
                  "node (%d rank(s)), more than half of its %.3g GiB: choose fewer layers, a "
                  "smaller hidden/ffn or micro_batch, or zero=2",
                  need / 1073741824.0, node.ctx.local_size(), *total);
    throw InputError(buf);
  }
  double estimate_s(const Settings& s, const json& params) const override;
  void run(CaseRun& run) const override;

 private:
  void record_case(CaseRun& run, const TrainingConfig& c, const Gathered& g,
                   const std::vector<StepPhases>& phases, const Engine& e) const;

  Knob<std::string> preset_ =
      knobs_.text("preset", "",
                  "7b (GPT-style 6.4B body, the guide's loop, DeepSpeed and loader settings) or ci "
                  "(a small model for CPUs); default: 7b on GPU nodes, ci elsewhere");
  Knob<long long> layers_ = knobs_.integer("layers", "", "count", "transformer layers");
  Knob<long long> hidden_ = knobs_.integer("hidden", "", "count", "hidden size h");
  Knob<long long> ffn_ = knobs_.integer("ffn", "", "count", "MLP inner size f");
  Knob<long long> heads_ = knobs_.integer("heads", "", "count", "attention heads (divide h)");
  Knob<long long> seq_ = knobs_.integer("seq", "", "count", "sequence length in tokens");
  Knob<long long> micro_batch_ =
      knobs_.integer("micro_batch", "", "count", "sequences per micro-step (one loader batch)");
  Knob<long long> accum_ =
      knobs_.integer("accum", "", "count", "gradient-accumulation steps per optimizer step");
  Knob<std::string> dtype_ = knobs_.text("dtype", "", "GEMM dtype: fp32 (CPU), fp16 or bf16 (GPU)");
  Knob<std::string> loss_scale_ = knobs_.choice(
      "loss_scale", {"dynamic", "none"}, "fp16's dynamic loss scale (2^16, window 1000): offload");
  Knob<long long> zero_ = knobs_.integer("zero", "", "stage", "ZeRO stage: 0 or 2");
  Knob<std::string> offload_ =
      knobs_.choice("offload", {"false", "true"}, "ZeRO-2: optimizer on the host");
  Knob<long long> bucket_ = knobs_.size("bucket", "", "gradient bucket size (DDP bucket_cap_mb)");
  Knob<long long> workers_ = knobs_.integer("workers", "", "count", "loader worker threads");
  Knob<long long> prefetch_ =
      knobs_.integer("prefetch", "", "count", "batches each loader worker holds ahead");
  Knob<long long> threads_ =
      knobs_.integer("threads", "1", "count", "OpenBLAS threads of the CPU engine");
  Knob<double> poll_us_ =
      knobs_.number("poll_us", "100", "us",
                    "MPI: the gradient thread tests its collective this often, asleep "
                    "in between, leaving the core to the GEMMs");
  Knob<long long> rounds_ = knobs_.integer(
      "rounds", "3", "count",
      "rounds of (the parts alone, then the whole step); each step is judged against its round");
  Knob<double> slow_loader_ =
      knobs_.number("slow_loader", "0", "s",
                    "test-only: each loader batch takes this much longer (parts and "
                    "step alike)");
  Knob<std::string> serial_comm_ = knobs_.choice(
      "serial_comm", {"false", "true"},
      "test-only fault: the whole step reduces each bucket on the compute thread (no overlap); "
      "the parts are unchanged");
};

/// OpenBLAS on one thread at about 40 GFLOP/s (the CI machine's; a GPU at 500 TFLOP/s), the layer
/// parts and the step each through the measurement loop, plus 1 s of setup (dataset, buffers). The
/// network's time is not known before the run: a shaped link makes the case longer.
double TrainingStep::estimate_s(const Settings& s, const json& params) const {
  const TrainingConfig c = config_of(params.contains("layers") ? params : resolve(s, false));
  const double mt = case_min_time(s, id());
  const double rate = params.value("engine", "cpu") == "gpu" ? 500e12 : 40e9;
  const double f = gemms_flop(forward_gemms(c)) / rate, b = gemms_flop(backward_gemms(c)) / rate;
  const double step = c.accum * c.layers * (f + b) + c.accum * slow_loader_(s);
  const double round = loop_estimate_s(mt, f) + loop_estimate_s(mt, b) + loop_estimate_s(mt, step) +
                       3 * loop_estimate_s(mt, b) + loop_estimate_s(mt, slow_loader_(s));
  return 1 + static_cast<double>(std::max(1LL, rounds_(s))) * round;
}

void TrainingStep::run(CaseRun& run) const {
  const Settings& s = run.settings();
  const TrainingConfig c = config_of(run.params());
  if (run.group_size() != run.ctx().world_size())
    throw std::runtime_error("a rank could not take part in the step (its record says why)");
  openblas_set_num_threads(static_cast<int>(std::max(1LL, threads_(s))));
  const bool gpu = run.params().value("engine", "cpu") == "gpu";
  collectives::Backend* be = run.ctx().uses_mpi() && !gpu ? collectives::mpi_backend() : nullptr;
  PollSleep quiet(be, poll_us_(s) * 1e-6);
  // The loader's dataset: sequences of `seq` int32 tokens, every slot's batch twice over.
  const auto dir = make_token_dataset(c);
  io::LoaderOptions opt;
  opt.workers = c.workers, opt.batch = c.micro_batch, opt.prefetch = c.prefetch;
  opt.delay_s = slow_loader_(s);
  io::Loader loader(io::list_dataset(dir->path()), opt, io::plain_memory());
  std::unique_ptr<Engine> engine;
  if (gpu) {
    engine =
        make_gpu_engine(c, run.ctx(), rank_gpu_device(run.ctx()), collectives::run_nccl_env(s));
  } else {
    engine = make_cpu_engine(c, be);
  }
  Trainer t(c, *engine, loader);
  CommThread comm([&engine] { engine->on_comm_thread(); });
  const bool overlap = serial_comm_(s) != "true";
  std::vector<StepPhases> phases;
  json mine = {{"host", run.ctx().host()}, {"rounds", json::array()}};
  // Rounds of (parts alone, then the whole step), so that a slow spell of a shared host falls on
  // the parts and the step of one round alike, and each step is judged against its own round.
  const long long rounds = std::max(1LL, rounds_(s));
  for (long long r = 0; r < rounds; ++r) {
    const std::string tag = "_r" + std::to_string(r + 1);
    const StepParts own = measure_parts(run, c, t, tag);
    std::vector<double> own_steps;
    t.drain_loader();
    run.exec(
        [&](long long n) {
          for (long long i = 0; i < n; ++i) {
            const auto t0 = Clock::now();
            phases.push_back(t.step(comm, overlap));
            own_steps.push_back(since(t0));
          }
          return -1.0;
        },
        "step" + tag);
    // The timed steps only: the calibration and warm-up steps come first.
    const size_t timed = std::min(own_steps.size(), run.samples().size());
    own_steps.erase(own_steps.begin(), own_steps.end() - static_cast<long>(timed));
    mine["rounds"].push_back({{"parts", parts_json(own)}, {"steps", own_steps}});
  }
  run.set_extra("overlap", overlap);
  run.set_extra("slow_loader_s", slow_loader_(s));
  // The gradient thread calls MPI while the main thread computes: MPI_THREAD_SERIALIZED.
  run.set_extra("mpi_thread_level", Context::mpi_thread_level());
  record_case(run, c, parse_gathered(run.ctx().allgather(mine.dump())), phases, *engine);
}

/// The cluster record (every rank's slowest parts and steps, round by round) and, on rank 0, the
/// node records.
void TrainingStep::record_case(CaseRun& run, const TrainingConfig& c, const Gathered& g,
                               const std::vector<StepPhases>& phases, const Engine& e) const {
  std::vector<size_t> everyone(g.hosts.size());
  for (size_t i = 0; i < everyone.size(); ++i) everyone[i] = i;
  const auto rounds = view(c, g, everyone, nullptr);
  std::vector<StepParts> ps;
  for (const auto& r : rounds) ps.push_back(r.parts);
  const StepParts p = median_parts(ps);
  const StepPrediction med = predict_step(c, p);
  add_step_metrics(run, c, rounds, p, med, e.ranks());
  json per_rank = json::array();
  for (size_t i = 0; i < g.hosts.size(); ++i)
    per_rank.push_back({{"host", g.hosts[i]}, {"parts", parts_json(median_parts(g.parts[i]))}});
  run.set_extra("config", config_params(c));
  run.set_extra("parts", parts_json(p));
  run.set_extra("rounds", rounds_json(rounds));
  run.set_extra("per_rank_parts", per_rank);
  run.set_extra("phases_ms", phase_medians(phases));
  run.set_extra("buckets", e.buckets());
  run.set_extra("bottleneck", med.bottleneck);
  run.set_extra("bottleneck_share", med.bottleneck_share);
  const std::string text = bottleneck_text(c, p, med, e.ranks());
  run.set_extra("bottleneck_text", text);
  run.set_extra("model_params", model_params(c));
  run.set_extra("formula", "docs/metrics.md \"Training step\"");
  if (run.ctx().is_root()) add_node_records(run, c, g, rounds, med.step);
  // The verdict's evidence where people read: the record's message (report.md) and the console.
  char buf[160];
  std::snprintf(buf, sizeof buf, "measured %.4g ms, predicted %.4g ms from its parts (x%.3f); ",
                median_of(all_steps(rounds)) * 1e3, med.step * 1e3, median_of(ratios(rounds)));
  run.finish_as(Status::ok, buf + text);
}

CLUSTERBENCH_REGISTER(TrainingStep);

}  // namespace
}  // namespace clusterbench::compute
