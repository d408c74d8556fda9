// compute.gpu_memory_bandwidth: each GPU copies one device buffer to another, by the plugin's
// kernel (16-byte loads and stores) and by cudaMemcpyAsync device-to-device. GB/s counts bytes
// read plus bytes written (docs/metrics.md "GPU memory bandwidth"). Buffers are at least 16x the
// L2 cache (1 GiB minimum). One copy is checked word for word on 64 sampled chunks before timing.
#include "compute/gpu_memory_bandwidth.hpp"

#include <algorithm>
#include <memory>

#include "core/benchmark.hpp"
#include "compute/gpu_telemetry.hpp"
#include "core/error.hpp"
#include "gpu/loader.hpp"

namespace clusterbench::compute {

double device_copy_bytes_moved(long long bytes) { return 2.0 * static_cast<double>(bytes); }

namespace {

const std::vector<std::string> kMethods = {"kernel", "memcpy"};

struct DcopyDeleter {
  void (*destroy)(cb_dcopy*) = nullptr;
  void operator()(cb_dcopy* c) const {
    if (c && destroy) destroy(c);
  }
};

class GpuMemoryBandwidth : public Benchmark {
 public:
  std::string id() const override { return "compute.gpu_memory_bandwidth"; }
  std::string description() const override {
    return "GPU memory bandwidth: device-to-device copy by a kernel and by cudaMemcpyAsync, "
           "bytes read + written";
  }
  Level level() const override { return Level::gpu; }
  bool needs_gpu() const override { return true; }
  std::vector<std::string> knobs() const override { return {"methods", "bytes", "min_time"}; }
  std::vector<json> cases(const Settings& s) const override {
    std::vector<json> out;
    for (const auto& m : s.get_choices(id(), "methods", kMethods)) {
      out.push_back({{"method", m}});
    }
    return out;
  }
  std::string applicable(const NodeEnv&) const override { return ""; }

  void run(CaseRun& run) const override {
    const GpuPlugin& plugin = load_gpu_plugin();
    using CreateFn = int (*)(const cb_dcopy_params*, cb_dcopy**, cb_dcopy_info*, char*, size_t);
    using RunFn = int (*)(cb_dcopy*, long long, double*, char*, size_t);
    using DestroyFn = void (*)(cb_dcopy*);
    auto create = reinterpret_cast<CreateFn>(plugin.symbol("cb_gpu_dcopy_create"));
    auto run_fn = reinterpret_cast<RunFn>(plugin.symbol("cb_gpu_dcopy_run"));
    auto destroy = reinterpret_cast<DestroyFn>(plugin.symbol("cb_gpu_dcopy_destroy"));
    CHECK_MSG(create && run_fn && destroy, "GPU plugin",
              plugin.path + " lacks cb_gpu_dcopy_create/run/destroy (an older plugin)");
    std::string method = run.params().at("method");
    cb_dcopy_params prm{};
    prm.bytes = run.settings().get_size(id(), "bytes", 0);
    prm.method = method == "kernel" ? 0 : 1;
    cb_dcopy_info info{};
    cb_dcopy* raw = nullptr;
    char err[1024] = {0};
    int rc = create(&prm, &raw, &info, err, sizeof err);
    std::unique_ptr<cb_dcopy, DcopyDeleter> c(raw, DcopyDeleter{destroy});
    if (rc == CB_GPU_UNSUPPORTED) throw Waived(err);
    if (rc != CB_GPU_OK)
      throw_call_error("CUDA", std::to_string(rc), err, "cb_gpu_dcopy_create", __FILE__, __LINE__);
    CHECK_MSG(info.checked > 0 && info.mismatches == 0, "CUDA",
              "device copy of " + std::to_string(info.bytes) + " bytes (" + method +
                  "): " + std::to_string(info.mismatches) + " of " + std::to_string(info.checked) +
                  " checked 16-byte words are wrong; no rate is reported");

    int nvml_index = nvml_index_for_bus_id(run.env(), info.pci_bus_id);
    TelemetrySampler sampler(
        nvml_index, 0.05,
        nvml_index >= 0 ? "" : "running without telemetry: NVML " + Nvml::get().status(),
        2.0 * static_cast<double>(info.bytes));
    run.exec([&](long long ops) {
      double seconds = -1;
      char e[1024] = {0};
      int r = run_fn(c.get(), ops, &seconds, e, sizeof e);
      if (r != CB_GPU_OK)
        throw_call_error("CUDA", std::to_string(r), e, "cb_gpu_dcopy_run", __FILE__, __LINE__);
      return seconds;
    });
    json tel = sampler.stop();
    double moved = device_copy_bytes_moved(info.bytes);
    const TimeStats& t = run.stats();
    run.add_metric("bandwidth", moved / t.median / 1e9, "GB/s");
    run.add_metric("bandwidth_best", moved / t.min / 1e9, "GB/s");
    run.set_extra("buffer_bytes", info.bytes);
    run.set_extra("bytes_per_op", moved);
    run.set_extra("l2_bytes", info.l2_bytes);
    run.set_extra("device", info.device_name);
    run.set_extra("pci_bus_id", info.pci_bus_id);
    if (method == "kernel")
      run.set_extra("launch", {{"blocks", info.blocks}, {"threads", info.threads}});
    run.set_extra("verification",
                  {{"checked_words", info.checked}, {"mismatches", info.mismatches}});
    run.set_extra("telemetry", tel);
  }
};

CLUSTERBENCH_REGISTER(GpuMemoryBandwidth);

}  // namespace
}  // namespace clusterbench::compute
