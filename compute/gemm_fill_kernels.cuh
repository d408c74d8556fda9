// Device code of compute.gemm's GPU kernels: the input fill (the same values as gemm_input_value()
// in compute/gemm.hpp: splitmix64, magnitude in [0.25, 1), random sign) and the row checksum's
// sums (compute/gemm_check.hpp). Compiled by nvcc into the CUDA 13 plugin (gemm_fill.cu) and by
// NVRTC into the CUDA 12 plugin's PTX (bench/gpu/ptxgen): no host code, no standard headers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace clusterbench::compute::gpu::kernels {

// Mirrors gemm_input_value() in compute/gemm.hpp; keep the two identical.
__device__ inline double input_value(unsigned long long seed, int which, unsigned long long index) {
  unsigned long long z =
      seed * 0x9E3779B97F4A7C15ULL + (static_cast<unsigned long long>(which) << 62) + index;
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  double u = static_cast<double>(z >> 11) * 0x1.0p-53;
  double mag = 0.25 + 0.75 * u;
  return (z & 1) ? -mag : mag;
}

/// A float rounded to nearest even at 10 mantissa bits (compute/gemm_check.hpp
/// gemm_round_mantissa; keep the two identical).
struct Tf32 {
  float f;
};

template <class T>
__device__ T convert(double v);
template <>
__device__ inline float convert<float>(double v) {
  return static_cast<float>(v);
}
template <>
__device__ inline __half convert<__half>(double v) {
  return __double2half(v);
}
template <>
__device__ inline __nv_bfloat16 convert<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}
template <>
__device__ inline __nv_fp8_e4m3 convert<__nv_fp8_e4m3>(double v) {
  return __nv_fp8_e4m3(v);
}
template <>
__device__ inline Tf32 convert<Tf32>(double v) {
  unsigned u = __float_as_uint(static_cast<float>(v));
  u += 0xFFFu + ((u >> 13) & 1u);
  return Tf32{__uint_as_float(u & ~0x1FFFu)};
}

/// dst[i] = the input value i of matrix `which`, grid-stride.
template <class T>
__global__ void fill(T* dst, long long count, unsigned long long seed, int which) {
  long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += stride)
    dst[i] = convert<T>(input_value(seed, which, static_cast<unsigned long long>(i)));
}

template <class T>
__device__ inline double widen(T v) {
  return static_cast<double>(static_cast<float>(v));
}

/// Row sums and row 2-norms of an R x C column-major matrix X (one thread per row, coalesced):
/// sum[r * stride] = sum_j X_rj, norm[r * stride] = ||X_r||_2. For B (K x N) they are y and r;
/// for D (M x N) they fill the first two of each row's four checksum values.
template <class T>
__global__ void row_sums(const T* x, long long rows, long long cols, double* sum, double* norm,
                         int stride) {
  long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= rows) return;
  double s = 0, q = 0;
  for (long long j = 0; j < cols; ++j) {
    double v = widen(x[i + j * rows]);
    s += v, q += v * v;
  }
  sum[i * stride] = s, norm[i * stride] = sqrt(q);
}

/// (A^T y)_i and (|A|^T r)_i, one block of 256 per row i (A's column i is contiguous).
template <class T>
__global__ void a_gemv(const T* a, long long k, const double* y, const double* r, double* rows) {
  __shared__ double s1[256], s2[256];
  const long long i = blockIdx.x;
  double ref = 0, acc = 0;
  for (long long p = threadIdx.x; p < k; p += blockDim.x) {
    double v = widen(a[p + i * k]);
    ref += v * y[p], acc += fabs(v) * r[p];
  }
  s1[threadIdx.x] = ref, s2[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      s1[threadIdx.x] += s1[threadIdx.x + w], s2[threadIdx.x] += s2[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) rows[4 * i + 2] = s1[0], rows[4 * i + 3] = s2[0];
}

}  // namespace clusterbench::compute::gpu::kernels
