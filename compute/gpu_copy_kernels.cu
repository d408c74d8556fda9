// compute.gpu_memory_bandwidth's kernel launchers (the kernels: gpu_copy_kernels.cuh).
#include "compute/gpu_copy_kernels.cuh"
#include "compute/gpu_copy_kernels.hpp"

namespace clusterbench::compute::gpu {

cudaError_t fill_copy_pattern(uint4* dst, long long words, cudaStream_t stream) {
  kernels::copy_fill<<<kCopyFillBlocks, kCopyFillThreads, 0, stream>>>(dst, words);
  return cudaGetLastError();
}

cudaError_t copy_words(uint4* dst, const uint4* src, long long words, int blocks, int threads,
                       cudaStream_t stream) {
  kernels::copy<<<blocks, threads, 0, stream>>>(dst, src, words);
  return cudaGetLastError();
}

}  // namespace clusterbench::compute::gpu
