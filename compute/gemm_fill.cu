// compute.gemm's input fill on the GPU: the same values as gemm_input_value() in compute/gemm.hpp
// (splitmix64, magnitude in [0.25, 1), random sign), generated where they are used so that a
// 16384^2 operand does not cross PCIe.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "compute/gemm_gpu.hpp"

namespace clusterbench::compute::gpu {

namespace {

// Mirrors gemm_input_value() in compute/gemm.hpp; keep the two identical.
__device__ double input_value(std::uint64_t seed, int which, std::uint64_t index) {
  std::uint64_t z =
      seed * 0x9E3779B97F4A7C15ULL + (static_cast<std::uint64_t>(which) << 62) + index;
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  double u = static_cast<double>(z >> 11) * 0x1.0p-53;
  double mag = 0.25 + 0.75 * u;
  return (z & 1) ? -mag : mag;
}

template <class T>
__device__ T convert(double v);
template <>
__device__ float convert<float>(double v) {
  return static_cast<float>(v);
}
template <>
__device__ __half convert<__half>(double v) {
  return __double2half(v);
}
template <>
__device__ __nv_bfloat16 convert<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}
template <>
__device__ __nv_fp8_e4m3 convert<__nv_fp8_e4m3>(double v) {
  return __nv_fp8_e4m3(v);
}

template <class T>
__global__ void fill(T* dst, long long count, std::uint64_t seed, int which) {
  long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += stride)
    dst[i] = convert<T>(input_value(seed, which, static_cast<std::uint64_t>(i)));
}

template <class T>
cudaError_t launch(void* dst, long long count, std::uint64_t seed, int which, cudaStream_t s) {
  int blocks = static_cast<int>((count + 255) / 256 < 65536 ? (count + 255) / 256 : 65536);
  if (blocks < 1) blocks = 1;
  fill<T><<<blocks, 256, 0, s>>>(static_cast<T*>(dst), count, seed, which);
  return cudaGetLastError();
}

}  // namespace

cudaError_t fill_gemm_input(void* dst, FillType type, long long count, std::uint64_t seed,
                            int which, cudaStream_t stream) {
  switch (type) {
    case FillType::f32:
      return launch<float>(dst, count, seed, which, stream);
    case FillType::f16:
      return launch<__half>(dst, count, seed, which, stream);
    case FillType::bf16:
      return launch<__nv_bfloat16>(dst, count, seed, which, stream);
    case FillType::fp8_e4m3:
      return launch<__nv_fp8_e4m3>(dst, count, seed, which, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace clusterbench::compute::gpu
