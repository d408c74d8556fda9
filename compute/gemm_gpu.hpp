// Plugin-internal: the fill kernel's launcher (compute/gemm_fill.cu), used by compute/gemm_gpu.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace clusterbench::compute::gpu {

/// Storage types the fill kernel writes.
enum class FillType { f32, f16, bf16, fp8_e4m3 };

/// Writes `count` elements of matrix `which` (0 = A, 1 = B) to `dst` in `type`: element i is
/// gemm_input_value(seed, which, i) (compute/gemm.hpp) rounded to the type. Asynchronous on
/// `stream`; returns the launch error.
cudaError_t fill_gemm_input(void* dst, FillType type, long long count, std::uint64_t seed,
                            int which, cudaStream_t stream);

}  // namespace clusterbench::compute::gpu
