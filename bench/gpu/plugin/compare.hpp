// Inside libclusterbench_gpu.so: one element-wise comparison kernel (compare.cu) for what must
// repeat exactly: each burn-in product against the verified first one (compute/gemm_gpu.cpp
// verify_each, gpu-burn's check) and each all_reduce result against the first checked one
// (collectives/nccl_backend.cpp cb_nccl_compare).
#pragma once

#include <cuda_runtime.h>

namespace clusterbench::gpu {

/// Element types the comparison reads.
enum class CompareType { f32, f16, bf16 };

/// Compares `count` elements of `a` with `ref` (both device memory of the current device, of
/// `type`): element i differs when |a_i - ref_i| > rel_tolerance * |ref_i| (0: any difference),
/// or one of them is not a number. Adds the differing elements to counters[0] and, when any
/// element of this call differed, 1 to counters[1]; counters[2] is the call's scratch (0 before
/// and after). `counters`: 3 unsigned long long in device memory. Asynchronous on `stream`
/// (capturable); returns the launch error.
cudaError_t compare_elements(const void* a, const void* ref, CompareType type, long long count,
                             double rel_tolerance, unsigned long long* counters,
                             cudaStream_t stream);

}  // namespace clusterbench::gpu
