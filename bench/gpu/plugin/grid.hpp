// Plugin-internal: the launch shape of the plugin's grid-stride kernels, shared by their nvcc
// launchers (the .cu files) and the CUDA 12 plugin's PTX launchers (compute/gpu_kernels_ptx.cpp,
// ptx_compare.cpp).
#pragma once

namespace clusterbench::gpu {

/// Threads per block of the plugin's kernels.
inline constexpr unsigned kBlockThreads = 256;

/// The most blocks of the comparison's grid-stride pass (compare.hpp).
inline constexpr long long kCompareMaxBlocks = 4096;

/// The most blocks of the GEMM input fill's grid-stride pass (compute/gemm_gpu.hpp).
inline constexpr long long kFillMaxBlocks = 65536;

/// Blocks of kBlockThreads for `count` elements, one element per thread: ceil(count / 256),
/// at least 1 and at most `cap` (a grid-stride loop covers the rest).
inline unsigned grid_blocks(long long count, long long cap) {
  long long blocks = (count + kBlockThreads - 1) / kBlockThreads;
  if (blocks > cap) blocks = cap;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

}  // namespace clusterbench::gpu
