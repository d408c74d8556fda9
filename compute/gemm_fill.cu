// compute.gemm's input fill and row checksum on the GPU (the kernels: gemm_fill_kernels.cuh),
// generated where they are used so that a 16384^2 operand does not cross PCIe.
#include "compute/gemm_fill_kernels.cuh"
#include "compute/gemm_gpu.hpp"
#include "gpu/plugin/grid.hpp"

namespace clusterbench::compute::gpu {

namespace {

using clusterbench::gpu::grid_blocks;
using clusterbench::gpu::kBlockThreads;
using kernels::Tf32;

template <class T>
cudaError_t launch(void* dst, long long count, std::uint64_t seed, int which, cudaStream_t s) {
  kernels::fill<T><<<grid_blocks(count, clusterbench::gpu::kFillMaxBlocks), kBlockThreads, 0, s>>>(
      static_cast<T*>(dst), count, seed, which);
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

// --- The row checksum of compute/gemm_check.hpp: two GEMVs and D's row sums, in double -----------

namespace {

template <class T>
void launch_inputs(const void* a, const void* b, long long m, long long n, long long k,
                   double* scratch, double* rows, cudaStream_t s) {
  kernels::row_sums<T><<<grid_blocks(k, 0x7FFFFFFF), kBlockThreads, 0, s>>>(
      static_cast<const T*>(b), k, n, scratch, scratch + k, 1);
  kernels::a_gemv<T><<<static_cast<unsigned>(m), kBlockThreads, 0, s>>>(static_cast<const T*>(a), k,
                                                                        scratch, scratch + k, rows);
}

template <class O>
void launch_output(const void* d, long long m, long long n, double* rows, cudaStream_t s) {
  kernels::row_sums<O><<<grid_blocks(m, 0x7FFFFFFF), kBlockThreads, 0, s>>>(
      static_cast<const O*>(d), m, n, rows, rows + 1, 4);
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
