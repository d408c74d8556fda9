// The performance model (perf.hpp).
#include "perf.hpp"

#include <algorithm>
#include <cmath>

namespace cbsim {

double gemm_seconds(const Gpu& g, GemmRate rate, double flop, int candidate) {
  double tflops = g.bf16_tflops;
  switch (rate) {
    case GemmRate::half:
      break;
    case GemmRate::tf32:
      tflops = g.tf32_tflops;
      break;
    case GemmRate::fp32:
      tflops = g.fp32_tflops;
      break;
    case GemmRate::fp8_fast:
      tflops = g.fp8_tflops;
      break;
    case GemmRate::fp8:
      tflops = g.fp8_tflops_no_fast;
      break;
  }
  const double share = std::max(0.5, 1 - 0.01 * candidate);
  return kGemmLatencySeconds + flop / (tflops * 1e12 * share * g.speed);
}

double kernel_seconds(const Gpu& g, double bytes_moved) {
  return kLaunchSeconds + bytes_moved / (g.hbm_copy_gbs * 1e9 * g.speed);
}

double d2d_seconds(const Gpu& g, double bytes) {
  return kLaunchSeconds + 2 * bytes / (g.hbm_memcpy_gbs * 1e9 * g.speed);
}

double memset_seconds(const Gpu& g, double bytes) {
  return kLaunchSeconds + bytes / (g.hbm_copy_gbs * 1e9 * g.speed);
}

double host_link_gbs(const Gpu& g, bool pinned) {
  const double gen = std::pow(2.0, std::clamp(g.pcie_gen, 1, 6) - 5);
  const double width = std::clamp(g.pcie_width, 1, 32) / 16.0;
  return 55 * gen * width * g.speed * (pinned ? 1 : 0.45);
}

double host_copy_seconds(const Gpu& g, double bytes, bool pinned) {
  return kLaunchSeconds + bytes / (host_link_gbs(g, pinned) * 1e9);
}

}  // namespace cbsim
