// A GPU benchmark case on one plugin operation: see gpu_case.hpp.
#include "core/api/gpu_case.hpp"

#include <optional>
#include <utility>

#include "core/api/error.hpp"
#include "core/api/telemetry.hpp"

namespace clusterbench {

namespace {

constexpr double kTelemetryPeriodS = 0.05;

/// Calls `f` when it goes out of scope.
template <class F>
struct ScopeExit {
  F f;
  ~ScopeExit() { f(); }
};
template <class F>
ScopeExit(F) -> ScopeExit<F>;

}  // namespace

void throw_gpu_case_error(const gpu::OpError& e, const std::string& library) {
  if (e.code == CB_GPU_UNSUPPORTED) throw Waived(e.text);
  if (e.code == CB_GPU_ABORTED)
    throw AbortRun(e.call + "(" + e.kind + "): " + e.text + " (" + origin_host() + " rank " +
                   std::to_string(origin_rank()) + ")");
  const std::string call = e.call + "(" + e.kind + ")";
  throw_call_error(library.c_str(), std::to_string(e.code), e.text, call.c_str(), __FILE__,
                   __LINE__);
}

GpuCase::GpuCase(CaseRun& run, const std::string& kind, const json& params, GpuCaseOptions options)
    : run_(run),
      opt_(std::move(options)),
      op_(gpu_call(opt_.library, [&] { return gpu::Operation(kind, params); })) {}

double GpuCase::timed_batch(long long n) {
  if (opt_.before_batch) opt_.before_batch();
  ScopeExit after{[&] {
    if (opt_.after_batch) opt_.after_batch();
  }};
  return gpu_call(opt_.library, [&] { return op_.run(n); });
}

void GpuCase::exec() {
  const TelemetryTarget target = telemetry_target(run_.env(), info().value("pci_bus_id", ""));
  const double own_bytes = info().value("device_bytes", 0.0);
  std::optional<TelemetrySampler> sampler;
  auto start = [&] {
    sampler.emplace(target.nvml_index, kTelemetryPeriodS, target.why_not, own_bytes);
  };
  if (!opt_.telemetry_after_first_batch) start();
  run_.exec([&](long long n) {
    double seconds = timed_batch(n);
    if (!sampler) start();
    return seconds;
  });
  if (sampler) telemetry_ = sampler->stop();
}

const json& GpuCase::record_telemetry() {
  if (opt_.telemetry_metrics)
    for (const Metric& m : telemetry_metrics(telemetry_))
      run_.add_metric(m.name, m.value, m.unit, m.higher_is_better);
  run_.set_extra("telemetry", telemetry_);
  return telemetry_;
}

}  // namespace clusterbench
