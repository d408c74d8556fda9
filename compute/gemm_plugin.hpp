// Host side of the GPU plugin's GEMM entry points (bench/gpu/plugin_abi.h cb_gpu_gemm_*), shared
// by compute.gemm and the burn-in: lookup, creation with its error mapping, the sampled
// verification's result, and timed runs.
#pragma once

#include <cstdint>
#include <string>

#include "compute/gemm.hpp"
#include "gpu/plugin_abi.h"

namespace clusterbench::compute {

/// The plugin's cb_gpu_gemm_create/run/destroy.
struct PluginGemmFns {
  int (*create)(const cb_gemm_params*, cb_gemm**, cb_gemm_info*, char*, size_t) = nullptr;
  int (*run)(cb_gemm*, long long, double*, char*, size_t) = nullptr;
  void (*destroy)(cb_gemm*) = nullptr;

  /// Looks them up in the loaded plugin (load_gpu_plugin). Throws CallError naming the plugin's
  /// path when one is missing (a plugin older than compute.gemm).
  static PluginGemmFns load();
};

/// Creates one m x n x k product of `dtype` in the plugin: random inputs from `seed`, the best of
/// the top `algos` heuristic algorithms, `samples` output elements verified. Throws Waived for
/// CB_GPU_UNSUPPORTED (no algorithm, dtype not on this GPU) and CallError for other errors
/// (the handle is destroyed first). The caller destroys the returned handle with fns.destroy.
cb_gemm* create_plugin_gemm(const PluginGemmFns& fns, const std::string& dtype, const GemmShape& s,
                            std::uint64_t seed, int samples, int algos, cb_gemm_info* info);

/// The plugin's sampled verification of `info` against dtype's bound (gemm_error_bound).
GemmVerification plugin_gemm_verification(const cb_gemm_info& info, const std::string& dtype);

/// Runs `n` products of `g`; returns their seconds from CUDA events. Throws CallError.
double run_plugin_gemm(const PluginGemmFns& fns, cb_gemm* g, long long n);

}  // namespace clusterbench::compute
