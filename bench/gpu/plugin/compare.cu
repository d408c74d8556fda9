// The comparison of compare.hpp on the GPU (the kernels: compare_kernels.cuh).
#include "gpu/plugin/compare.hpp"
#include "gpu/plugin/compare_kernels.cuh"
#include "gpu/plugin/grid.hpp"

namespace clusterbench::gpu {

namespace {

template <class T>
cudaError_t launch(const void* a, const void* ref, long long count, double tol,
                   unsigned long long* counters, cudaStream_t s) {
  kernels::count_differing<T><<<grid_blocks(count, kCompareMaxBlocks), kBlockThreads, 0, s>>>(
      static_cast<const T*>(a), static_cast<const T*>(ref), count, tol, counters);
  kernels::fold<<<1, 1, 0, s>>>(counters);
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
