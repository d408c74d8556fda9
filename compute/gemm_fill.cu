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

/// A float rounded to nearest even at 10 mantissa bits (compute/gemm_check.hpp
/// gemm_round_mantissa; keep the two identical).
struct Tf32 {
  float f;
};
template <>
__device__ Tf32 convert<Tf32>(double v) {
  unsigned u = __float_as_uint(static_cast<float>(v));
  u += 0xFFFu + ((u >> 13) & 1u);
  return Tf32{__uint_as_float(u & ~0x1FFFu)};
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
    case FillType::tf32:
      return launch<Tf32>(dst, count, seed, which, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace clusterbench::compute::gpu

// --- The row checksum of compute/gemm_check.hpp: two GEMVs and D's row sums, in double -----------

namespace clusterbench::compute::gpu {

namespace {

template <class T>
__device__ double widen(T v) {
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

int blocks_of(long long count) { return static_cast<int>((count + 255) / 256); }

template <class T>
void launch_inputs(const void* a, const void* b, long long m, long long n, long long k,
                   double* scratch, double* rows, cudaStream_t s) {
  row_sums<T><<<blocks_of(k), 256, 0, s>>>(static_cast<const T*>(b), k, n, scratch, scratch + k, 1);
  a_gemv<T><<<static_cast<unsigned>(m), 256, 0, s>>>(static_cast<const T*>(a), k, scratch,
                                                     scratch + k, rows);
}

template <class O>
void launch_output(const void* d, long long m, long long n, double* rows, cudaStream_t s) {
  row_sums<O><<<blocks_of(m), 256, 0, s>>>(static_cast<const O*>(d), m, n, rows, rows + 1, 4);
}

}  // namespace

cudaError_t gemm_row_checksums(const void* a, const void* b, const void* d, FillType in,
                               FillType out, long long m, long long n, long long k, double* scratch,
                               double* rows, cudaStream_t stream) {
  switch (in) {
    case FillType::f32:
    case FillType::tf32:
      launch_inputs<float>(a, b, m, n, k, scratch, rows, stream);
      break;
    case FillType::f16:
      launch_inputs<__half>(a, b, m, n, k, scratch, rows, stream);
      break;
    case FillType::bf16:
      launch_inputs<__nv_bfloat16>(a, b, m, n, k, scratch, rows, stream);
      break;
    case FillType::fp8_e4m3:
      launch_inputs<__nv_fp8_e4m3>(a, b, m, n, k, scratch, rows, stream);
      break;
  }
  switch (out) {
    case FillType::f32:
      launch_output<float>(d, m, n, rows, stream);
      break;
    case FillType::f16:
      launch_output<__half>(d, m, n, rows, stream);
      break;
    case FillType::bf16:
      launch_output<__nv_bfloat16>(d, m, n, rows, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace clusterbench::compute::gpu
