// compute.gpu_memory_bandwidth: each GPU copies one device buffer to another, by the plugin's
// kernel (16-byte loads and stores) and by cudaMemcpyAsync device-to-device: the plugin's
// "device_copy" operation (compute/gpu_memory_bandwidth_gpu.cpp) run as a GPU case. GB/s counts
// bytes read plus bytes written (docs/metrics.md "GPU memory bandwidth"). Buffers are at least 16x
// the L2 cache (1 GiB minimum). One copy is checked word for word on 64 sampled chunks before
// timing.
#include "compute/gpu_memory_bandwidth.hpp"

#include "core/benchmark.hpp"
#include "core/error.hpp"
#include "core/gpu_case.hpp"

namespace clusterbench::compute {

double device_copy_bytes_moved(long long bytes) { return 2.0 * static_cast<double>(bytes); }

namespace {

const std::vector<std::string> kMethods = {"kernel", "memcpy"};

class GpuMemoryBandwidth : public Benchmark {
 public:
  std::string id() const override { return "compute.gpu_memory_bandwidth"; }
  std::string description() const override {
    return "GPU memory bandwidth: device-to-device copy by a kernel and by cudaMemcpyAsync, "
           "bytes read + written";
  }
  Level level() const override { return Level::gpu; }
  bool needs_gpu() const override { return true; }
  std::vector<json> cases(const Settings& s) const override {
    std::vector<json> out;
    for (const auto& m : methods_(s)) out.push_back({{"method", m}});
    return out;
  }
  std::string applicable(const NodeEnv&) const override { return ""; }

  void run(CaseRun& run) const override {
    const std::string method = run.params().at("method");
    // Telemetry goes into extra.telemetry only: this benchmark records no telemetry metrics.
    GpuCase gpu(run, "device_copy", {{"bytes", bytes_(run.settings())}, {"method", method}},
                {.library = "CUDA", .telemetry_metrics = false});
    const json& info = gpu.info();
    const long long bytes = info.at("bytes"), checked = info.at("verification").at("checked_words"),
                    mismatches = info.at("verification").at("mismatches");
    CHECK_MSG(checked > 0 && mismatches == 0, "CUDA",
              "device copy of " + std::to_string(bytes) + " bytes (" + method +
                  "): " + std::to_string(mismatches) + " of " + std::to_string(checked) +
                  " checked 16-byte words are wrong; no rate is reported");
    gpu.exec();
    double moved = device_copy_bytes_moved(bytes);
    const TimeStats& t = run.stats();
    run.add_rate("bandwidth", moved / 1e9, "GB/s");
    run.add_metric("bandwidth_best", moved / t.min / 1e9, "GB/s");
    run.set_extra("buffer_bytes", bytes);
    run.set_extra("bytes_per_op", moved);
    run.set_extra("l2_bytes", info.at("l2_bytes"));
    run.set_extra("device", info.at("device"));
    run.set_extra("pci_bus_id", info.at("pci_bus_id"));
    if (method == "kernel")
      run.set_extra("launch", {{"blocks", info.at("blocks")}, {"threads", info.at("threads")}});
    run.set_extra("verification", info.at("verification"));
    gpu.record_telemetry();
  }

 private:
  Knob<std::vector<std::string>> methods_ =
      knobs_.choices("methods", kMethods, "copy by the plugin's kernel and/or cudaMemcpyAsync");
  Knob<long long> bytes_ = knobs_.size(
      "bytes", "0", "bytes per buffer (0: max(16 x L2, 1 GiB), at most a quarter of free memory)");
};

CLUSTERBENCH_REGISTER(GpuMemoryBandwidth);

}  // namespace
}  // namespace clusterbench::compute
