// Plugin-internal: device-copy kernels of compute.gpu_memory_bandwidth (gpu_copy_kernels.cu; CUDA 12: gpu_kernels_ptx.cpp).
#pragma once

#include <cuda_runtime.h>

namespace clusterbench::compute::gpu {

/// The pattern fill's launch shape: a grid-stride loop of 4,096 blocks of 256 threads.
inline constexpr unsigned kCopyFillBlocks = 4096, kCopyFillThreads = 256;

/// Fills `words` 16-byte words at `dst` with copy_pattern(i). Asynchronous on `stream`.
cudaError_t fill_copy_pattern(uint4* dst, long long words, cudaStream_t stream);

/// dst[i] = src[i] for `words` 16-byte words: grid-stride, `blocks` x `threads`.
cudaError_t copy_words(uint4* dst, const uint4* src, long long words, int blocks, int threads,
                       cudaStream_t stream);

/// The pattern of word i: every 32-bit lane distinct, never all zero.
inline uint4 copy_pattern(long long i) {
  unsigned x = static_cast<unsigned>(i) * 2654435761u + 1u;
  return make_uint4(x, x ^ 0xA5A5A5A5u, static_cast<unsigned>(i >> 32) + 7u, ~x);
}

}  // namespace clusterbench::compute::gpu
