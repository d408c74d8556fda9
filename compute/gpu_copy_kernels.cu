// compute.gpu_memory_bandwidth's kernels: a pattern fill and a 16-byte grid-stride copy.
#include "compute/gpu_copy_kernels.hpp"

namespace clusterbench::compute::gpu {

namespace {

__global__ void fill(uint4* dst, long long words) {
  long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < words;
       i += stride) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u + 1u;  // copy_pattern(i)
    dst[i] = make_uint4(x, x ^ 0xA5A5A5A5u, static_cast<unsigned>(i >> 32) + 7u, ~x);
  }
}

__global__ void copy(uint4* __restrict__ dst, const uint4* __restrict__ src, long long words) {
  long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < words;
       i += stride)
    dst[i] = src[i];
}

}  // namespace

cudaError_t fill_copy_pattern(uint4* dst, long long words, cudaStream_t stream) {
  fill<<<4096, 256, 0, stream>>>(dst, words);
  return cudaGetLastError();
}

cudaError_t copy_words(uint4* dst, const uint4* src, long long words, int blocks, int threads,
                       cudaStream_t stream) {
  copy<<<blocks, threads, 0, stream>>>(dst, src, words);
  return cudaGetLastError();
}

}  // namespace clusterbench::compute::gpu
