// NVML telemetry around a timed region (gpu_telemetry.hpp).
#include "compute/gpu_telemetry.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace clusterbench::compute {

namespace {
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
}  // namespace

json summarize_telemetry(const std::vector<GpuTelemetry>& samples, int nvml_index,
                         const std::string& status) {
  std::vector<double> clocks;
  double temp_max = NAN, power_max = NAN, cap = NAN;
  unsigned long long mask = 0;
  int valid = 0, slowdown = 0;
  std::string last_status = status;
  for (const auto& s : samples) {
    if (!s.ok) {
      last_status = s.status;
      continue;
    }
    ++valid;
    if (std::isfinite(s.sm_clock_mhz)) clocks.push_back(s.sm_clock_mhz);
    if (std::isfinite(s.temperature_c)) temp_max = std::fmax(temp_max, s.temperature_c);
    if (std::isfinite(s.power_w)) power_max = std::fmax(power_max, s.power_w);
    if (std::isfinite(s.power_limit_w)) cap = s.power_limit_w;
    if (s.clock_event_reasons_valid) {
      mask |= s.clock_event_reasons;
      if (s.clock_event_reasons & kSlowdownReasonMask) ++slowdown;
    }
  }
  json out = {{"nvml_index", nvml_index}, {"samples", valid}};
  if (valid == 0) {
    out["status"] = last_status.empty() ? "no telemetry sample" : last_status;
    return out;
  }
  out["status"] = "ok";
  std::sort(clocks.begin(), clocks.end());
  if (clocks.empty()) {
    out["sm_clock_mhz"] = nullptr;
  } else {
    out["sm_clock_mhz"] = {{"min", clocks.front()},
                           {"median", clocks[(clocks.size() - 1) / 2]},
                           {"max", clocks.back()}};
  }
  out["temperature_c_max"] = finite_or_null(temp_max);
  out["power_w_max"] = finite_or_null(power_max);
  out["power_limit_w"] = finite_or_null(cap);
  out["clock_event_reasons"] = mask;
  out["clock_event_reason_names"] = clock_event_reason_names(mask);
  out["slowdown_samples"] = slowdown;
  return out;
}

int nvml_index_for_bus_id(const EnvRecord& env, const std::string& bus_id) {
  if (bus_id.empty()) return -1;
  std::string want = normalize_nvml_bus_id(bus_id);
  for (size_t i = 0; i < env.gpus.size(); ++i)
    if (!env.gpus[i].pci_bus_id.empty() && normalize_nvml_bus_id(env.gpus[i].pci_bus_id) == want)
      return env.gpus[i].source == "nvml" ? env.gpus[i].index : -1;
  return -1;
}

TelemetrySampler::TelemetrySampler(int nvml_index, double period_s, std::string why_not)
    : index_(nvml_index), why_not_(std::move(why_not)) {
  if (index_ < 0) return;
  auto period = std::chrono::duration<double>(period_s);
  thread_ = std::thread([this, period] {
    while (!stop_.load()) {
      GpuTelemetry t = sample_telemetry(index_);
      {
        std::lock_guard<std::mutex> lock(mu_);
        samples_.push_back(std::move(t));
      }
      auto until = std::chrono::steady_clock::now() + period;
      while (!stop_.load() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
}

TelemetrySampler::~TelemetrySampler() { stop(); }

json TelemetrySampler::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (index_ < 0) return {{"nvml_index", -1}, {"samples", 0}, {"status", why_not_}};
  std::lock_guard<std::mutex> lock(mu_);
  return summarize_telemetry(samples_, index_, "");
}

}  // namespace clusterbench::compute
