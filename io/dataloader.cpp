// io.dataloader: the training input pipeline as PyTorch's DataLoader runs it (loader.cpp) over a
// directory of sample files, swept over the worker count. Formulas: docs/metrics.md
// "dataloader"; design and knobs: docs/dataloader.md. Where a GPU runs, the staging slots are the
// GPU plugin's "pinned_h2d" operations (io/dataloader_gpu.cpp), one per slot, and each batch is
// copied to the device.
#include "io/dataloader.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <thread>
#include <utility>

#include "core/benchmark.hpp"
#include "core/error.hpp"
#include "core/gpu_case.hpp"
#include "core/gpu_disposition.hpp"
#include "gpu/loader.hpp"
#include "io/dataset.hpp"
#include "io/scratch.hpp"

namespace clusterbench::io {

namespace {

using Clock = std::chrono::steady_clock;

/// The generated dataset, made once per run and removed when its cases are over (every worker
/// count of the sweep reads the same files; Benchmark::end_run).
struct GeneratedDataset {
  std::string key;
  std::unique_ptr<ScratchDir> dir;
  long long bytes = 0;
};
GeneratedDataset& generated() {
  static GeneratedDataset g;
  return g;
}

/// The library pinned staging's failures name (the records of earlier versions say "cuda").
constexpr const char* kStagingLibrary = "cuda";

/// Pinned staging: one "pinned_h2d" operation of the GPU plugin per slot (its pinned buffer is
/// the slot), on the rank's own GPU (rank_gpu_device: its local rank), as a training process
/// stages to its GPU. Lives longer than the Loader that allocates from it.
class PinnedStaging {
 public:
  explicit PinnedStaging(int device) : device_(device) {
    const GpuPlugin& plugin = load_gpu_plugin();
    CHECK_MSG(plugin.initialised, "gpu plugin",
              "GPUs are on the PCI bus but pinned staging is unavailable: " + plugin.error);
    gpu_call(kStagingLibrary, [&] { gpu::set_device(device_); });
  }
  int device() const { return device_; }
  /// The loader's allocator over this staging.
  StagingMemory memory() {
    return {[this](size_t n) { return alloc(n); }, [this](void* p) { slots_.erase(p); }};
  }
  /// Copies the slot at `data` to the device; returns the seconds (CUDA events).
  double h2d(const void* data) {
    gpu::Operation& op = slots_.at(data);
    return gpu_call(kStagingLibrary, [&] { return op.run(1); });
  }

 private:
  void* alloc(size_t bytes) {
    gpu::Operation op = gpu_call(kStagingLibrary, [&] {
      return gpu::Operation("pinned_h2d", {{"bytes", static_cast<long long>(bytes)}});
    });
    auto* p = reinterpret_cast<void*>(op.info().at("host_address").get<std::uintptr_t>());
    slots_.emplace(p, std::move(op));
    return p;
  }
  int device_;
  std::map<const void*, gpu::Operation> slots_;
};

/// What the consumer saw over the whole case.
struct Consumption {
  std::vector<double> waits, h2d_s;
  long long consumed = 0, samples = 0, bytes = 0;
  double compute_total = 0;
  Clock::time_point after_first{};
};

class Dataloader : public Benchmark {
 public:
  std::string id() const override { return "io.dataloader"; }
  bool in_rounds(const json&) const override { return true; }
  std::string description() const override {
    return "DataLoader-like input pipeline: workers, batch 32, prefetch 2, pinned staging, sweep";
  }
  Level level() const override { return Level::node; }
  std::vector<json> cases(const Settings& s) const override {
    // Every knob is read here, when the plan is made: a typo is exit 2, not a case that fails
    // after the others ran.
    for (const auto* k : {&cache_, &in_order_, &verify_, &direct_, &pinned_}) (*k)(s);
    for (const auto* k : {&batch_, &prefetch_, &steps_per_op_})
      if (k->given(s) && (*k)(s) < 1)
        throw InputError("--set io.dataloader." + k->spec().name + ": must be at least 1");
    if (compute_ms_(s) < 0)
      throw InputError("--set io.dataloader.compute_ms: must not be negative");
    std::vector<json> out;
    for (const auto& w : workers_(s)) {
      int n = std::atoi(w.c_str());
      if (n < 1)
        throw InputError("--set io.dataloader.workers: '" + w + "' is not a positive count");
      out.push_back({{"workers", n}});
    }
    return out;
  }
  std::string applicable(const NodeEnv&) const override { return ""; }
  /// The generated dataset goes when the run's cases are over, not at exit: under mpirun a
  /// rank that exits non-zero first gets the others killed before their exit handlers run.
  void end_run() const override { generated() = GeneratedDataset{}; }

  void run(CaseRun& run) const override {
    const Settings& s = run.settings();
    const LoaderOptions opt = options(run);
    const bool full_verify = verify_(s) == "full";
    const auto [dataset_dir, generated_here] = dataset(run);
    auto files = list_dataset(dataset_dir);

    // Staging memory: pinned through the GPU plugin where a GPU runs, plain otherwise.
    const bool want_pinned = pinned_(s) == "true";
    std::optional<PinnedStaging> pinned;
    if (want_pinned && run.env().gpu_status.on_pci > 0) pinned.emplace(rank_gpu_device(run.ctx()));

    // Cold cache: nothing of the dataset in the page cache before the loader starts (untimed,
    // like fio's invalidate=1); a dataset generated just now would otherwise be read from it,
    // and with O_DIRECT each first read would pay for dropping the file's cached pages.
    if (opt.cold) drop_page_cache(files);
    Loader loader(files, opt, pinned ? pinned->memory() : plain_memory());
    // One timed operation is `steps` batches, more than the loader can hold prefetched, so a
    // time per operation is a steady-state rate, not a drain of the prefetch queue.
    const long long steps =
        steps_per_op_.given(s) ? steps_per_op_(s) : std::max(8, 4 * loader.slots());
    const double compute_s = compute_ms_(s) / 1e3;
    Consumption c;
    run.exec([&](long long n) {
      for (long long i = 0; i < n * steps; ++i)
        consume(loader, pinned ? &*pinned : nullptr, full_verify, compute_s, c);
      return -1.0;
    });
    double wall_after_first = std::chrono::duration<double>(Clock::now() - c.after_first).count();
    record_rates(run, c, steps * opt.batch, compute_s, wall_after_first);
    run.set_extra("pinned", pinned.has_value());
    run.set_extra("pinned_note",
                  pinned ? "cudaHostAlloc through the GPU plugin; batches copied to GPU " +
                               std::to_string(pinned->device()) + " (this rank's)"
                  : !want_pinned ? std::string("--set io.dataloader.pinned=false: plain memory")
                                 : std::string("no NVIDIA GPU on this node: plain host memory, no "
                                               "H2D copy"));
    if (pinned) run.set_extra("staging_device", pinned->device());
    record_facts(run, opt, c, loader);
    run.set_extra("steps_per_op", steps);
    run.set_extra("verify", full_verify ? "full" : "header");
    run.set_extra("dataset", dataset_dir);
    run.set_extra("dataset_generated", generated_here);
    run.set_extra("dataset_files", static_cast<long long>(files.size()));
    if (compute_s > 0) {
      run.set_extra("compute_seconds_after_first", c.compute_total);
      run.set_extra("wall_seconds_after_first", wall_after_first);
    }
  }

 private:
  Knob<std::vector<std::string>> workers_ =
      knobs_.list("workers", SuiteDefault("1,2,4,8", "1,2,4,8,16", "1,2,4,8,16,32"),
                  "loader worker threads, one case each");
  Knob<long long> batch_ = knobs_.integer("batch", "32", "count", "samples per batch");
  Knob<long long> prefetch_ =
      knobs_.integer("prefetch", "2", "count", "batches prefetched per worker");
  Knob<std::string> pinned_ = knobs_.choice(
      "pinned", {"true", "false"}, "stage batches in pinned memory and copy them to GPU 0");
  Knob<std::string> dataset_ =
      knobs_.text("dataset", "", "an existing dataset directory, only read (default: generated)");
  Knob<std::string> scratch_ = knobs_.text(
      "scratch", "", "where the dataset is generated (default: the local NVMe scratch)");
  Knob<long long> count_ =
      knobs_.integer("count", SuiteDefault("512", "4000", "100000"), "count", "sample files");
  Knob<long long> size_ =
      knobs_.size("size", SuiteDefault("16K", "128K", "128K"), "bytes per sample file");
  Knob<long long> size_max_ =
      knobs_.size("size_max", "0", "sizes uniform in [size, size_max] (0: all of size)");
  Knob<std::string> direct_ =
      knobs_.choice("direct", {"false", "true"}, "read the samples with O_DIRECT");
  Knob<std::string> cache_ = knobs_.choice(
      "cache", {"warm", "cold"}, "cold: the dataset's pages are dropped from the page cache first");
  Knob<double> compute_ms_ =
      knobs_.number("compute_ms", "0", "", "emulated training step per batch, milliseconds");
  Knob<std::string> verify_ =
      knobs_.choice("verify", {"full", "header"}, "check every byte of a batch or its headers",
                    SuiteDefault("full", "header", "header"));
  Knob<long long> steps_per_op_ = knobs_.integer(
      "steps_per_op", "", "count", "batches per timed operation (default: max(8, 4 x slots))");
  Knob<std::string> in_order_ = knobs_.choice("in_order", {"true", "false"},
                                              "batches in sampler order (DataLoader's default)");

  LoaderOptions options(const CaseRun& run) const {
    const Settings& s = run.settings();
    LoaderOptions opt;
    opt.workers = run.params().at("workers").get<int>();
    opt.batch = static_cast<int>(batch_(s));
    opt.prefetch = static_cast<int>(prefetch_(s));
    opt.direct = direct_(s) == "true";
    opt.cold = cache_(s) == "cold";
    opt.in_order = in_order_(s) == "true";
    return opt;
  }

  /// The dataset: an existing directory (only read), or one generated in the scratch directory
  /// (once per process). Returns the directory and whether it was generated.
  std::pair<std::string, bool> dataset(const CaseRun& run) const {
    const Settings& s = run.settings();
    if (dataset_.given(s)) return {dataset_(s), false};
    DatasetSpec spec;
    spec.count = count_(s);
    spec.size = size_(s);
    spec.size_max = size_max_(s);
    std::string parent =
        scratch_.given(s)
            ? scratch_(s)
            : default_scratch(run.env().block_devices, read_mountinfo(), system_tmpdir(),
                              [](const std::string& d) { return free_bytes(d); })
                  .dir;
    long long need = spec.count * std::max(spec.size, spec.size_max);
    long long avail = free_bytes(parent);
    if (avail >= 0 && avail < need + (64LL << 20))
      throw Waived("refused: the dataset needs " + std::to_string(need) + " B in " + parent +
                   ", which has " + std::to_string(avail) + " B free");
    std::string key = parent + "|" + std::to_string(spec.count) + "|" + std::to_string(spec.size) +
                      "|" + std::to_string(spec.size_max);
    GeneratedDataset& g = generated();
    if (g.key != key) {
      g.dir.reset();
      g.dir = std::make_unique<ScratchDir>(parent, "dataset");
      spec.dir = g.dir->path();
      g.bytes = make_dataset(spec);
      g.key = key;
    }
    return {g.dir->path(), true};
  }

  /// Takes the next batch, checks it, copies it to the GPU (pinned staging), gives its slot back
  /// and runs the emulated training step on it.
  static void consume(Loader& loader, PinnedStaging* pinned, bool full_verify, double compute_s,
                      Consumption& c) {
    LoadedBatch b = loader.next();
    std::string why = loader.verify(b, full_verify);
    CHECK_MSG(why.empty(), "dataloader", "wrong batch: " + why);
    if (pinned) c.h2d_s.push_back(pinned->h2d(b.data));
    loader.release(b);
    if (compute_s > 0) {
      auto c0 = Clock::now();
      std::this_thread::sleep_for(std::chrono::duration<double>(compute_s));
      if (c.consumed > 0)
        c.compute_total += std::chrono::duration<double>(Clock::now() - c0).count();
    }
    if (c.consumed > 0) c.waits.push_back(b.wait_s);
    c.samples += static_cast<long long>(b.indices.size());
    c.bytes += b.total_bytes;
    if (++c.consumed == 1) c.after_first = Clock::now();
  }

  /// samples/s, GB/s, batch waits and accelerator utilisation (docs/metrics.md "dataloader").
  static void record_rates(CaseRun& run, Consumption& c, long long samples_per_op, double compute_s,
                           double wall_after_first) {
    double bytes_per_sample =
        c.samples > 0 ? static_cast<double>(c.bytes) / static_cast<double>(c.samples) : 0;
    const double per_op = static_cast<double>(samples_per_op);
    run.add_rate("samples_per_s", per_op, "samples/s");
    run.add_rate("bandwidth", per_op * bytes_per_sample / 1e9, "GB/s");
    std::sort(c.waits.begin(), c.waits.end());
    if (!c.waits.empty()) {
      run.add_metric("batch_wait_p50", nearest_rank(c.waits, 0.50) * 1e6, "us", false);
      run.add_metric("batch_wait_p99", nearest_rank(c.waits, 0.99) * 1e6, "us", false);
    }
    if (compute_s > 0 && wall_after_first > 0)
      run.add_metric("accelerator_utilisation", 100.0 * c.compute_total / wall_after_first, "%");
    run.set_extra("bytes_per_sample_mean", bytes_per_sample);
    run.set_extra("compute_ms", compute_s * 1e3);
  }

  static void record_facts(CaseRun& run, const LoaderOptions& opt, const Consumption& c,
                           const Loader& loader) {
    run.set_extra("workers", opt.workers);
    run.set_extra("batch_size", opt.batch);
    run.set_extra("prefetch", opt.prefetch);
    run.set_extra("in_order", opt.in_order);
    run.set_extra("direct", opt.direct);
    run.set_extra("cache", opt.cold ? "cold" : "warm");
    run.set_extra("batches_consumed", c.consumed);
    run.set_extra("batches_verified", c.consumed);
    run.set_extra("samples_consumed", c.samples);
    run.set_extra("bytes_consumed", c.bytes);
    run.set_extra("epochs", static_cast<double>(c.consumed) /
                                static_cast<double>(loader.batches_per_epoch()));
    if (!c.h2d_s.empty())
      run.set_extra("h2d_seconds_total", std::accumulate(c.h2d_s.begin(), c.h2d_s.end(), 0.0));
  }
};

CLUSTERBENCH_REGISTER(Dataloader);

}  // namespace
}  // namespace clusterbench::io
