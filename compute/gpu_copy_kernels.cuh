// Device code of compute.gpu_memory_bandwidth: a pattern fill and a 16-byte grid-stride copy.
// Compiled by nvcc into the CUDA 13 plugin (gpu_copy_kernels.cu) and by NVRTC into the CUDA 12
// plugin's PTX (bench/gpu/ptxgen): no host code, no standard headers.
#pragma once

namespace clusterbench::compute::gpu::kernels {

/// dst[i] = copy_pattern(i) (compute/gpu_copy_kernels.hpp; keep the two identical).
__global__ void copy_fill(uint4* dst, long long words) {
  long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < words;
       i += stride) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u + 1u;
    dst[i] = make_uint4(x, x ^ 0xA5A5A5A5u, static_cast<unsigned>(i >> 32) + 7u, ~x);
  }
}

/// dst[i] = src[i], grid-stride.
__global__ void copy(uint4* __restrict__ dst, const uint4* __restrict__ src, long long words) {
  long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < words;
       i += stride)
    dst[i] = src[i];
}

}  // namespace clusterbench::compute::gpu::kernels
