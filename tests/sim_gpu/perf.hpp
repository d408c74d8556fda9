// The performance model of the simulated GPUs (docs/simulated-gpu.md "Performance model"):
// modelled seconds of each kind of work, scaled by the GPU's "speed".
#pragma once

#include "node.hpp"

namespace cbsim {

/// Which tensor-core rate a GEMM runs at.
enum class GemmRate { half, tf32, fp32, fp8_fast, fp8 };

constexpr double kLaunchSeconds = 2e-6;       ///< a kernel or copy's fixed cost
constexpr double kGemmLatencySeconds = 5e-6;  ///< a cuBLASLt product's fixed cost
constexpr double kNcclLatencySeconds = 8e-6;  ///< an NCCL operation's fixed cost

/// One product of `flop` (2 M N K batch) with heuristic candidate `candidate` (candidate i runs
/// at 1 - 0.01 i of the best rate).
double gemm_seconds(const Gpu& g, GemmRate rate, double flop, int candidate);
/// A kernel reading and writing `bytes_moved` bytes of HBM at the copy kernel's rate.
double kernel_seconds(const Gpu& g, double bytes_moved);
/// cudaMemcpy device to device (2 x bytes of HBM traffic), cudaMemset (bytes written).
double d2d_seconds(const Gpu& g, double bytes);
double memset_seconds(const Gpu& g, double bytes);
/// A host copy of `bytes` over the GPU's PCIe link: 55 GB/s pinned at Gen5 x16, halved per
/// generation below, scaled by the width; pageable memory at 0.45 of that.
double host_copy_seconds(const Gpu& g, double bytes, bool pinned);
/// The host link's rate in GB/s (for the tests).
double host_link_gbs(const Gpu& g, bool pinned);

}  // namespace cbsim
