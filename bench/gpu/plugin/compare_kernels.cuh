// Device code of compare.hpp's comparison: a grid-stride pass counting differing elements into
// the call's scratch counter, then one thread folding it into the running counts. Compiled by
// nvcc into the CUDA 13 plugin (compare.cu) and by NVRTC into the CUDA 12 plugin's PTX
// (bench/gpu/ptxgen): no host code, no standard headers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace clusterbench::gpu::kernels {

__device__ inline float widen(float v) { return v; }
__device__ inline float widen(__half v) { return __half2float(v); }
__device__ inline float widen(__nv_bfloat16 v) { return __bfloat162float(v); }

/// counters[2] += the elements i where |a_i - ref_i| > tol |ref_i| or either is not a number.
template <class T>
__global__ void count_differing(const T* a, const T* ref, long long count, double tol,
                                unsigned long long* counters) {
  unsigned long long mine = 0;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    const double x = widen(a[i]), r = widen(ref[i]);
    if (!(fabs(x - r) <= tol * fabs(r))) ++mine;  // NaN compares false: counted
  }
  if (mine) atomicAdd(&counters[2], mine);
}

/// counters[0] += counters[2], counters[1] += 1 when it is not 0; counters[2] = 0.
__global__ void fold(unsigned long long* counters) {
  if (counters[2]) counters[0] += counters[2], counters[1] += 1, counters[2] = 0;
}

}  // namespace clusterbench::gpu::kernels
