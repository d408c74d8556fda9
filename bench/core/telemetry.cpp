// NVML telemetry around a timed region (telemetry.hpp).
#include "core/api/telemetry.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace clusterbench {

namespace {

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

/// PCIe link readings of the valid samples that have them.
struct PcieSummary {
  int samples = 0, below_max = 0;
  int gen_min = 0, gen_top = 0, width_min = 0, width_top = 0, gen_max = 0, width_max = 0;

  void add(const GpuTelemetry& s) {
    if (s.pcie_gen_current <= 0 || s.pcie_width_current <= 0) return;
    gen_min = samples ? std::min(gen_min, s.pcie_gen_current) : s.pcie_gen_current;
    width_min = samples ? std::min(width_min, s.pcie_width_current) : s.pcie_width_current;
    gen_top = std::max(gen_top, s.pcie_gen_current);
    width_top = std::max(width_top, s.pcie_width_current);
    gen_max = std::max(gen_max, s.pcie_gen_max);
    width_max = std::max(width_max, s.pcie_width_max);
    if (s.pcie_gen_current < s.pcie_gen_max || s.pcie_width_current < s.pcie_width_max) ++below_max;
    ++samples;
  }
  json to_json() const {
    if (samples == 0) return nullptr;
    return {{"gen_current_min", gen_min},
            {"gen_current_max", gen_top},
            {"width_current_min", width_min},
            {"width_current_max", width_top},
            {"gen_max", gen_max},
            {"width_max", width_max},
            {"below_max_samples", below_max},
            {"samples", samples}};
  }
};

/// Everything summarize_telemetry() reports, accumulated sample by sample.
struct TelemetrySummary {
  std::vector<double> clocks;
  double temp_max = NAN, power_max = NAN, cap = NAN;
  double used_max = NAN, total = NAN, other_pct_max = NAN;
  unsigned long long mask = 0;
  int valid = 0, slowdown = 0, power_cap = 0;
  PcieSummary pcie;

  void add(const GpuTelemetry& s, double own_bytes) {
    ++valid;
    if (std::isfinite(s.sm_clock_mhz)) clocks.push_back(s.sm_clock_mhz);
    if (std::isfinite(s.temperature_c)) temp_max = std::fmax(temp_max, s.temperature_c);
    if (std::isfinite(s.power_w)) power_max = std::fmax(power_max, s.power_w);
    if (std::isfinite(s.power_limit_w)) cap = s.power_limit_w;
    if (s.clock_event_reasons_valid) {
      mask |= s.clock_event_reasons;
      if (s.clock_event_reasons & kSlowdownReasonMask) ++slowdown;
      if (s.clock_event_reasons & kPowerCapReason) ++power_cap;
    }
    pcie.add(s);
    if (std::isfinite(s.memory_used_bytes) && std::isfinite(s.memory_total_bytes) &&
        s.memory_total_bytes > 0) {
      used_max = std::fmax(used_max, s.memory_used_bytes);
      total = s.memory_total_bytes;
      double other = std::max(0.0, s.memory_used_bytes - own_bytes);
      other_pct_max = std::fmax(other_pct_max, other / s.memory_total_bytes * 100.0);
    }
  }

  json clock_json() {
    if (clocks.empty()) return nullptr;
    std::sort(clocks.begin(), clocks.end());
    return {{"min", clocks.front()},
            {"median", clocks[(clocks.size() - 1) / 2]},
            {"max", clocks.back()}};
  }

  /// The summary of at least one valid sample.
  void write(json& out, double own_bytes) {
    out["status"] = "ok";
    out["sm_clock_mhz"] = clock_json();
    out["temperature_c_max"] = finite_or_null(temp_max);
    out["power_w_max"] = finite_or_null(power_max);
    out["power_limit_w"] = finite_or_null(cap);
    out["clock_event_reasons"] = mask;
    out["clock_event_reason_names"] = clock_event_reason_names(mask);
    out["slowdown_samples"] = slowdown;
    out["power_cap_samples"] = power_cap;
    out["pcie"] = pcie.to_json();
    out["memory"] = {{"used_bytes_max", finite_or_null(used_max)},
                     {"total_bytes", finite_or_null(total)},
                     {"own_bytes", own_bytes},
                     {"used_other_pct_max", finite_or_null(other_pct_max)}};
  }
};

}  // namespace

json summarize_telemetry(const std::vector<GpuTelemetry>& samples, int nvml_index,
                         const std::string& status, double own_bytes) {
  TelemetrySummary sum;
  std::string last_status = status;
  for (const auto& s : samples) {
    if (s.ok)
      sum.add(s, own_bytes);
    else
      last_status = s.status;
  }
  json out = {{"nvml_index", nvml_index}, {"samples", sum.valid}};
  if (sum.valid == 0)
    out["status"] = last_status.empty() ? "no telemetry sample" : last_status;
  else
    sum.write(out, own_bytes);
  return out;
}

std::vector<Metric> telemetry_metrics(const json& tel) {
  std::vector<Metric> out;
  if (tel.value("samples", 0) <= 0) return out;
  auto number = [&](const json& v, const char* name, const char* unit, bool higher) {
    if (v.is_number()) out.push_back({name, v.get<double>(), unit, higher});
  };
  if (tel.contains("sm_clock_mhz") && tel["sm_clock_mhz"].is_object())
    number(tel["sm_clock_mhz"]["median"], "sm_clock_median", "MHz", true);
  number(tel.value("temperature_c_max", json()), "temperature_max", "C", false);
  number(tel.value("power_w_max", json()), "power_max", "W", false);
  number(tel.value("slowdown_samples", json()), "slowdown_samples", "count", false);
  number(tel.value("power_cap_samples", json()), "power_cap_samples", "count", false);
  if (tel.contains("memory") && tel["memory"].is_object())
    number(tel["memory"].value("used_other_pct_max", json()), "memory_used_other", "%", false);
  if (tel.contains("pcie") && tel["pcie"].is_object()) {
    const json& p = tel["pcie"];
    number(p.value("gen_current_min", json()), "pcie_gen_min", "count", true);
    number(p.value("width_current_min", json()), "pcie_width_min", "count", true);
    number(p.value("below_max_samples", json()), "pcie_below_max_samples", "count", false);
  }
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

TelemetryTarget telemetry_target(const EnvRecord& env, const std::string& bus_id) {
  TelemetryTarget t;
  t.nvml_index = nvml_index_for_bus_id(env, bus_id);
  if (t.nvml_index < 0)
    t.why_not = Nvml::get().ok() ? "no NVML GPU has the CUDA device's bus id " + bus_id
                                 : "running without telemetry: NVML " + Nvml::get().status();
  return t;
}

TelemetrySampler::TelemetrySampler(int nvml_index, double period_s, std::string why_not,
                                   double own_bytes)
    : index_(nvml_index), why_not_(std::move(why_not)), own_bytes_(own_bytes) {
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
  return summarize_telemetry(samples_, index_, "", own_bytes_);
}

}  // namespace clusterbench
