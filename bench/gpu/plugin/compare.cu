// The comparison kernel of compare.hpp: a grid-stride pass counting differing elements into the
// call's scratch counter, then one thread folding it into the running counts.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gpu/plugin/compare.hpp"

namespace clusterbench::gpu {

namespace {

__device__ float widen(float v) { return v; }
__device__ float widen(__half v) { return __half2float(v); }
__device__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }

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

__global__ void fold(unsigned long long* counters) {
  if (counters[2]) counters[0] += counters[2], counters[1] += 1, counters[2] = 0;
}

template <class T>
cudaError_t launch(const void* a, const void* ref, long long count, double tol,
                   unsigned long long* counters, cudaStream_t s) {
  const long long blocks = (count + 255) / 256;
  const unsigned grid = static_cast<unsigned>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
  count_differing<T><<<grid, 256, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(ref),
                                          count, tol, counters);
  fold<<<1, 1, 0, s>>>(counters);
  return cudaGetLastError();
}

}  // namespace

cudaError_t compare_elements(const void* a, const void* ref, CompareType type, long long count,
                             double rel_tolerance, unsigned long long* counters,
                             cudaStream_t stream) {
  switch (type) {
    case CompareType::f32:
      return launch<float>(a, ref, count, rel_tolerance, counters, stream);
    case CompareType::f16:
      return launch<__half>(a, ref, count, rel_tolerance, counters, stream);
    case CompareType::bf16:
      return launch<__nv_bfloat16>(a, ref, count, rel_tolerance, counters, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace clusterbench::gpu
