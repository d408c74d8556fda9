// The one way a GPU benchmark case runs its operation (docs/design.md "One GPU operation
// interface"): create the plugin's operation (bench/gpu/operation.hpp), map its errors to the
// case's, time it under the measurement loop (CaseRun::exec, CUDA-event seconds) with NVML
// telemetry sampled around it, and record the telemetry. A benchmark's run() then reads:
//
//   GpuCase gpu(run, "gemm", params, {.library = "cuBLASLt"});
//   check(gpu.info()["verification"]);          // what the plugin measured at create
//   gpu.exec();
//   run.add_metric("tflops", flop / run.stats().median / 1e12, "TFLOP/s");
//   gpu.record_telemetry();
#pragma once

#include <functional>
#include <string>

#include "core/api/benchmark.hpp"
#include "gpu/operation.hpp"

namespace clusterbench {

/// How a GPU case runs (GpuCase).
struct GpuCaseOptions {
  /// The library a failure names in the case's CallError ("cuBLASLt", "CUDA").
  std::string library = "CUDA";
  /// Starts the NVML sampler after the first timed batch, so that every sample is taken under
  /// load (an idle PCIe link downclocks: the host copies read the link during the copy).
  bool telemetry_after_first_batch = false;
  /// Records the telemetry metrics (telemetry_metrics()) besides extra.telemetry.
  bool telemetry_metrics = true;
  /// Called right before and right after each timed batch (after, also when the batch throws):
  /// e.g. a node-wide lock held while the batch runs, so that one GPU of a node copies at a time.
  std::function<void()> before_batch = nullptr, after_batch = nullptr;
};

/// [[noreturn]] The case's error for a failed plugin call: Waived (CB_GPU_UNSUPPORTED, with the
/// plugin's reason), AbortRun (CB_GPU_ABORTED), else CallError naming `library`, the code, the
/// call ("cb_gpu_op_run(gemm)") and the plugin's text.
[[noreturn]] void throw_gpu_case_error(const gpu::OpError& e, const std::string& library);

/// Runs `f` (calls on a gpu::Operation) with its gpu::OpError mapped by throw_gpu_case_error.
template <class F>
auto gpu_call(const std::string& library, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const gpu::OpError& e) {
    throw_gpu_case_error(e, library);
  }
}

/// One GPU benchmark case on one operation of the plugin, on this rank's device.
class GpuCase {
 public:
  /// Creates operation `kind` with `params` (it allocates, decides, runs once and verifies).
  /// Throws Waived or CallError (throw_gpu_case_error).
  GpuCase(CaseRun& run, const std::string& kind, const json& params, GpuCaseOptions options = {});

  /// What the operation's create measured and decided (gpu::Operation::info).
  const json& info() const { return op_.info(); }
  gpu::Operation& operation() { return op_; }

  /// Times the operation under run.exec: each batch of n is op.run(n), seconds by CUDA events.
  /// NVML samples the GPU whose bus id is info()["pci_bus_id"] every 50 ms meanwhile (from the
  /// start, or after the first batch), leaving info()["device_bytes"] (the operation's own
  /// memory) out of the memory-used judgement. Throws as the constructor does.
  void exec();

  /// Records the telemetry of exec(): its metrics (unless the options say not) and
  /// extra.telemetry (summarize_telemetry). Call it after the case's own metrics, which come
  /// first in the record. Returns the summary.
  const json& record_telemetry();

 private:
  double timed_batch(long long n);

  CaseRun& run_;
  GpuCaseOptions opt_;
  gpu::Operation op_;
  json telemetry_ = {{"samples", 0}, {"status", "not started"}};
};

}  // namespace clusterbench
