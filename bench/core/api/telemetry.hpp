// NVML telemetry sampled on a background thread while a GPU benchmark's timed region runs
// (docs/metrics.md "GPU telemetry"). The GPU cases get it through core/api/gpu_case.hpp; the
// burn-in samples its soak with it directly. NVML is bench/env's dlopen.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "env/nvml.hpp"
#include "records/records.hpp"

namespace clusterbench {

/// Clocks-event reason bits that mean the GPU slowed down for heat or a hardware signal, not for
/// its power cap: hw_slowdown 0x8, sw_thermal_slowdown 0x20, hw_thermal_slowdown 0x40,
/// hw_power_brake_slowdown 0x80 (nvml.h nvmlClocksEventReason*). sw_power_cap (0x4) is normal
/// for a GEMM at TDP and is not counted.
inline constexpr unsigned long long kSlowdownReasonMask = 0x8 | 0x20 | 0x40 | 0x80;

/// Summary of samples, as stored in a record's extra.telemetry:
/// {"nvml_index", "samples", "status", "sm_clock_mhz": {min, median, max},
///  "temperature_c_max", "power_w_max", "power_limit_w", "clock_event_reasons" (OR of the
///  masks), "clock_event_reason_names", "slowdown_samples", "power_cap_samples" (samples with
///  sw_power_cap 0x4: recorded, never judged),
///  "pcie": {"gen_current_min", "gen_current_max", "width_current_min", "width_current_max",
///           "gen_max", "width_max", "below_max_samples"} (samples whose current generation or
///           width is below the link's max; null without PCIe readings),
///  "memory": {"used_bytes_max", "total_bytes", "own_bytes", "used_other_pct_max"}}.
/// used_other_pct_max = max over samples of max(0, used - own_bytes) / total x 100: the memory
/// held outside the benchmark's own buffers (`own_bytes`), in % (the seed guide's "memory used
/// > 95%" alert, judged without our buffers). Values NVML could not give are null. With no valid
/// sample, {"samples": 0, "status": why}.
json summarize_telemetry(const std::vector<GpuTelemetry>& samples, int nvml_index,
                         const std::string& status, double own_bytes = 0);

/// sw_power_cap (nvml.h nvmlClocksEventReasonSwPowerCap).
inline constexpr unsigned long long kPowerCapReason = 0x4;

/// The metrics a GPU case records from summarize_telemetry()'s summary `tel` (none without a
/// valid sample): sm_clock_median (MHz), temperature_max (C), power_max (W), slowdown_samples and
/// power_cap_samples (count), memory_used_other (%, memory.used_other_pct_max), and with PCIe
/// readings pcie_gen_min, pcie_width_min (count: lowest current generation and width seen) and
/// pcie_below_max_samples (count). All but sm_clock_median are lower-is-better or neutral.
std::vector<Metric> telemetry_metrics(const json& tel);

/// NVML index of the GPU whose PCI bus id (any case, 4- or 8-digit domain) is `bus_id`, by the
/// env's GPUs (NVML's index order); -1 when none matches or `bus_id` is empty.
int nvml_index_for_bus_id(const EnvRecord& env, const std::string& bus_id);

/// The GPU to sample for the CUDA device with PCI bus id `bus_id`: its NVML index
/// (nvml_index_for_bus_id), or -1 and why not ("no NVML GPU has the CUDA device's bus id ...",
/// or "running without telemetry: NVML <status>" when NVML is not working).
struct TelemetryTarget {
  int nvml_index = -1;
  std::string why_not;
};
TelemetryTarget telemetry_target(const EnvRecord& env, const std::string& bus_id);

/// Samples GPU `nvml_index` every `period_s` seconds from construction to stop(). With index -1
/// it samples nothing and stop() says why (`why_not`). `own_bytes`: the benchmark's own device
/// buffers, left out of the memory-used judgement (summarize_telemetry).
class TelemetrySampler {
 public:
  TelemetrySampler(int nvml_index, double period_s, std::string why_not = "", double own_bytes = 0);
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;
  /// Stops the thread (idempotent) and returns summarize_telemetry() of what it saw.
  json stop();

 private:
  int index_;
  std::string why_not_;
  double own_bytes_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<GpuTelemetry> samples_;
  std::string status_;
  std::thread thread_;
};

}  // namespace clusterbench
