// Plugin-internal: the fill kernel's launcher (compute/gemm_fill.cu), used by compute/gemm_gpu.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace clusterbench::compute::gpu {

/// Storage types the fill kernel writes; tf32 is a float rounded to 10 mantissa bits (so the
/// tensor cores use the stored value exactly and the check's reference needs no input term).
enum class FillType { f32, f16, bf16, fp8_e4m3, tf32 };

/// Writes `count` elements of matrix `which` (0 = A, 1 = B) to `dst` in `type`: element i is
/// gemm_input_value(seed, which, i) (compute/gemm.hpp) rounded to the type. Asynchronous on
/// `stream`; returns the launch error.
cudaError_t fill_gemm_input(void* dst, FillType type, long long count, std::uint64_t seed,
                            int which, cudaStream_t stream);

/// The per-row numbers of the row checksum (compute/gemm_check.hpp gemm_row_ratio) of
/// D (M x N, column-major, `out` type) = A^T B with A stored K x M and B K x N (`in` type): for
/// each row i, `rows` receives 4 doubles at 4 i: sum_j D_ij, ||D_i||_2, (A^T (B 1))_i and
/// sum_p |A_pi| ||B_p||_2. `scratch` holds 2 K doubles, `rows` 4 M. Asynchronous on `stream`.
cudaError_t gemm_row_checksums(const void* a, const void* b, const void* d, FillType in,
                               FillType out, long long m, long long n, long long k, double* scratch,
                               double* rows, cudaStream_t stream);

}  // namespace clusterbench::compute::gpu
