// io.dataloader: the training input pipeline as PyTorch's DataLoader runs it (loader.cpp) over a
// directory of sample files, swept over the worker count. Formulas: docs/metrics.md
// "dataloader"; design and knobs: docs/dataloader.md.
#include "io/dataloader.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <thread>

#include "core/benchmark.hpp"
#include "core/error.hpp"
#include "gpu/loader.hpp"
#include "io/dataset.hpp"
#include "io/scratch.hpp"

namespace clusterbench::io {

namespace {

using Clock = std::chrono::steady_clock;

/// The generated dataset, made once per process and removed at exit (every worker count of the
/// sweep reads the same files).
struct GeneratedDataset {
  std::string key;
  std::unique_ptr<ScratchDir> dir;
  long long bytes = 0;
};
GeneratedDataset& generated() {
  static GeneratedDataset g;
  return g;
}

using HostAllocFn = int (*)(size_t, void**, char*, size_t);
using HostFreeFn = void (*)(void*);
using H2dFn = int (*)(const void*, size_t, double*, char*, size_t);
using SetDeviceFn = int (*)(int, char*, size_t);

class Dataloader : public Benchmark {
 public:
  std::string id() const override { return "io.dataloader"; }
  std::string description() const override {
    return "DataLoader-like input pipeline: workers, batch 32, prefetch 2, pinned staging, sweep";
  }
  Level level() const override { return Level::node; }
  std::vector<std::string> knobs() const override {
    return {"workers", "batch",        "prefetch", "pinned",  "dataset", "scratch",
            "count",   "size",         "size_max", "direct",  "cache",   "compute_ms",
            "verify",  "steps_per_op", "min_time", "in_order"};
  }
  std::vector<json> cases(const Settings& s) const override {
    // Word-valued knobs are checked here, when the plan is made: a typo is exit 2, not a case
    // that fails after the others ran (run() reads them again with the same defaults).
    s.get_choice(id(), "cache", {"warm", "cold"});
    s.get_choice(id(), "in_order", {"true", "false"});
    s.get_choice(id(), "verify",
                 {s.by_suite<std::string>("full", "header", "header"), "full", "header"});
    s.get_choice(id(), "direct", {"false", "true"});
    s.get_choice(id(), "pinned", {"true", "false"});
    for (const char* knob : {"batch", "prefetch", "steps_per_op"})
      if (s.has(id(), knob) && s.get_double(id(), knob, 1) < 1)
        throw InputError("--set io.dataloader." + std::string(knob) + ": must be at least 1");
    if (s.get_double(id(), "compute_ms", 0) < 0)
      throw InputError("--set io.dataloader.compute_ms: must not be negative");
    std::vector<json> out;
    auto def = s.by_suite<std::vector<std::string>>(
        {"1", "2", "4", "8"}, {"1", "2", "4", "8", "16"}, {"1", "2", "4", "8", "16", "32"});
    for (const auto& w : s.get_list(id(), "workers", def)) {
      int n = std::atoi(w.c_str());
      if (n < 1)
        throw InputError("--set io.dataloader.workers: '" + w + "' is not a positive count");
      out.push_back({{"workers", n}});
    }
    return out;
  }
  std::string applicable(const NodeEnv&) const override { return ""; }

  void run(CaseRun& run) const override {
    const Settings& s = run.settings();
    LoaderOptions opt;
    opt.workers = run.params().at("workers").get<int>();
    opt.batch = static_cast<int>(s.get_double(id(), "batch", 32));
    opt.prefetch = static_cast<int>(s.get_double(id(), "prefetch", 2));
    opt.direct = s.get(id(), "direct", "false") == "true";
    std::string cache = s.get(id(), "cache", "warm");  // values checked by cases()
    opt.cold = cache == "cold";
    opt.in_order = s.get(id(), "in_order", "true") == "true";
    double compute_s = s.get_double(id(), "compute_ms", 0) / 1e3;
    bool full_verify =
        s.get(id(), "verify", s.by_suite<std::string>("full", "header", "header")) == "full";

    // The dataset: an existing directory (only read), or one generated in the scratch directory.
    std::string dataset_dir;
    bool generated_here = false;
    if (s.has(id(), "dataset")) {
      dataset_dir = s.get(id(), "dataset", "");
    } else {
      DatasetSpec spec;
      spec.count = s.get_size(id(), "count", s.by_suite(512LL, 4000LL, 100000LL));
      spec.size = s.get_size(id(), "size", s.by_suite(16LL << 10, 128LL << 10, 128LL << 10));
      spec.size_max = s.get_size(id(), "size_max", 0);
      std::string parent =
          s.has(id(), "scratch")
              ? s.get(id(), "scratch", "")
              : default_scratch(run.env().block_devices, read_mountinfo(), system_tmpdir(),
                                [](const std::string& d) { return free_bytes(d); })
                    .dir;
      long long need = spec.count * std::max(spec.size, spec.size_max);
      long long avail = free_bytes(parent);
      if (avail >= 0 && avail < need + (64LL << 20))
        throw Waived("refused: the dataset needs " + std::to_string(need) + " B in " + parent +
                     ", which has " + std::to_string(avail) + " B free");
      std::string key = parent + "|" + std::to_string(spec.count) + "|" +
                        std::to_string(spec.size) + "|" + std::to_string(spec.size_max);
      GeneratedDataset& g = generated();
      if (g.key != key) {
        g.dir.reset();
        g.dir = std::make_unique<ScratchDir>(parent, "dataset");
        spec.dir = g.dir->path();
        g.bytes = make_dataset(spec);
        g.key = key;
      }
      dataset_dir = g.dir->path();
      generated_here = true;
    }
    auto files = list_dataset(dataset_dir);

    // Staging memory: pinned through the GPU plugin where a GPU runs, plain otherwise.
    StagingMemory mem = plain_memory();
    bool want_pinned = s.get(id(), "pinned", "true") == "true";
    bool pinned = false;
    std::string pinned_note;
    H2dFn h2d = nullptr;
    if (want_pinned && run.env().gpu_status.on_pci > 0) {
      const GpuPlugin& plugin = load_gpu_plugin();
      auto halloc = reinterpret_cast<HostAllocFn>(plugin.symbol("cb_gpu_dl_host_alloc"));
      auto hfree = reinterpret_cast<HostFreeFn>(plugin.symbol("cb_gpu_dl_host_free"));
      h2d = reinterpret_cast<H2dFn>(plugin.symbol("cb_gpu_dl_h2d"));
      auto setdev = reinterpret_cast<SetDeviceFn>(plugin.symbol("cb_gpu_set_device"));
      CHECK_MSG(
          plugin.initialised && halloc && hfree && h2d, "gpu plugin",
          "GPUs are on the PCI bus but pinned staging is unavailable: " +
              (plugin.error.empty() ? std::string("plugin lacks cb_gpu_dl_*") : plugin.error));
      char err[512] = "";
      if (setdev && setdev(0, err, sizeof err) != 0) CHECK_MSG(false, "cuda", err);
      mem = {[halloc](size_t n) -> void* {
               void* p = nullptr;
               char e[256];
               return halloc(n, &p, e, sizeof e) == 0 ? p : nullptr;
             },
             [hfree](void* p) { hfree(p); }};
      pinned = true;
      pinned_note = "cudaHostAlloc through the GPU plugin; batches copied to GPU 0";
    } else {
      pinned_note = !want_pinned ? "--set io.dataloader.pinned=false: plain memory"
                                 : "no NVIDIA GPU on this node: plain host memory, no H2D copy";
    }

    // Cold cache: nothing of the dataset in the page cache before the loader starts (untimed,
    // like fio's invalidate=1); a dataset generated just now would otherwise be read from it,
    // and with O_DIRECT each first read would pay for dropping the file's cached pages.
    if (opt.cold) drop_page_cache(files);
    Loader loader(files, opt, mem);
    std::vector<double> waits, h2d_s;
    long long consumed = 0, samples = 0, bytes = 0;
    double compute_total = 0;
    Clock::time_point after_first{};
    std::string bad;
    // One timed operation is `steps` batches, more than the loader can hold prefetched, so a
    // time per operation is a steady-state rate, not a drain of the prefetch queue.
    long long steps =
        static_cast<long long>(s.get_double(id(), "steps_per_op", std::max(8, 4 * loader.slots())));
    run.exec([&](long long n) {
      for (long long i = 0; i < n * steps; ++i) {
        LoadedBatch b = loader.next();
        std::string why = loader.verify(b, full_verify);
        CHECK_MSG(why.empty(), "dataloader", "wrong batch: " + why);
        if (h2d) {
          double t = 0;
          char err[512] = "";
          if (h2d(b.data, loader.slot_bytes(), &t, err, sizeof err) != 0)
            CHECK_MSG(false, "cuda", err);
          h2d_s.push_back(t);
        }
        loader.release(b);
        if (compute_s > 0) {  // the emulated training step on this batch
          auto c0 = Clock::now();
          std::this_thread::sleep_for(std::chrono::duration<double>(compute_s));
          if (consumed > 0)
            compute_total += std::chrono::duration<double>(Clock::now() - c0).count();
        }
        if (consumed > 0) waits.push_back(b.wait_s);
        samples += static_cast<long long>(b.indices.size());
        bytes += b.total_bytes;
        if (++consumed == 1) after_first = Clock::now();
      }
      return -1.0;
    });
    double wall_after_first = std::chrono::duration<double>(Clock::now() - after_first).count();

    const TimeStats& t = run.stats();
    double bytes_per_sample =
        samples > 0 ? static_cast<double>(bytes) / static_cast<double>(samples) : 0;
    double sps = static_cast<double>(steps * opt.batch) / t.median;
    run.add_metric("samples_per_s", sps, "samples/s");
    run.add_metric("bandwidth", sps * bytes_per_sample / 1e9, "GB/s");
    std::sort(waits.begin(), waits.end());
    if (!waits.empty()) {
      run.add_metric("batch_wait_p50", nearest_rank(waits, 0.50) * 1e6, "us", false);
      run.add_metric("batch_wait_p99", nearest_rank(waits, 0.99) * 1e6, "us", false);
    }
    if (compute_s > 0 && wall_after_first > 0)
      run.add_metric("accelerator_utilisation", 100.0 * compute_total / wall_after_first, "%");
    run.set_extra("workers", opt.workers);
    run.set_extra("batch_size", opt.batch);
    run.set_extra("steps_per_op", steps);
    run.set_extra("prefetch", opt.prefetch);
    run.set_extra("in_order", opt.in_order);
    run.set_extra("pinned", pinned);
    run.set_extra("pinned_note", pinned_note);
    run.set_extra("direct", opt.direct);
    run.set_extra("cache", cache);
    run.set_extra("compute_ms", compute_s * 1e3);
    run.set_extra("verify", full_verify ? "full" : "header");
    run.set_extra("dataset", dataset_dir);
    run.set_extra("dataset_generated", generated_here);
    run.set_extra("dataset_files", static_cast<long long>(files.size()));
    run.set_extra("batches_consumed", consumed);
    run.set_extra("batches_verified", consumed);
    run.set_extra("samples_consumed", samples);
    run.set_extra("bytes_consumed", bytes);
    run.set_extra("bytes_per_sample_mean", bytes_per_sample);
    run.set_extra("epochs",
                  static_cast<double>(consumed) / static_cast<double>(loader.batches_per_epoch()));
    if (!h2d_s.empty())
      run.set_extra("h2d_seconds_total", std::accumulate(h2d_s.begin(), h2d_s.end(), 0.0));
    if (compute_s > 0) {
      run.set_extra("compute_seconds_after_first", compute_total);
      run.set_extra("wall_seconds_after_first", wall_after_first);
    }
  }
};

CLUSTERBENCH_REGISTER(Dataloader);

}  // namespace
}  // namespace clusterbench::io
