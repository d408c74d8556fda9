// The CUDA 12 plugin's launchers of compute's kernels: the functions that gemm_fill.cu and
// gpu_copy_kernels.cu define with nvcc in the CUDA 13 plugin, here launching the same kernels
// (the .cuh files) from the embedded PTX (gpu/plugin/ptx_module.hpp), with the same launch shapes
// (gpu/plugin/grid.hpp). The comparison kernel's launcher: bench/gpu/plugin/ptx_compare.cpp.
#include <string>

#include "compute/gemm_gpu.hpp"
#include "compute/gpu_copy_kernels.hpp"
#include "gpu/plugin/grid.hpp"
#include "gpu/plugin/ptx_module.hpp"

namespace clusterbench::compute::gpu {

namespace {

using clusterbench::gpu::grid_blocks;
using clusterbench::gpu::kBlockThreads;
using clusterbench::gpu::ptx_launch;
using clusterbench::gpu::PtxParams;

/// The kernel template's argument for an element type: the name the .cuh files instantiate.
const char* type_name(FillType t) {
  switch (t) {
    case FillType::f32:
      return "float";
    case FillType::f16:
      return "__half";
    case FillType::bf16:
      return "__nv_bfloat16";
    case FillType::fp8_e4m3:
      return "__nv_fp8_e4m3";
    case FillType::tf32:
      return "clusterbench::compute::gpu::kernels::Tf32";
  }
  return nullptr;
}

/// "clusterbench::compute::gpu::kernels::KERNEL<TYPE>", the name expression ptxgen resolved.
std::string kernel_name(const char* kernel, const char* type) {
  return std::string("clusterbench::compute::gpu::kernels::") + kernel + "<" + type + ">";
}

}  // namespace

cudaError_t fill_gemm_input(void* dst, FillType type, long long count, std::uint64_t seed,
                            int which, cudaStream_t stream) {
  const char* t = type_name(type);
  if (!t) return cudaErrorInvalidValue;
  return ptx_launch(kernel_name("fill", t).c_str(),
                    grid_blocks(count, clusterbench::gpu::kFillMaxBlocks), kBlockThreads, stream,
                    PtxParams().add(dst).add(count).add<unsigned long long>(seed).add(which));
}

cudaError_t gemm_row_checksums(const void* a, const void* b, const void* d, FillType in,
                               FillType out, long long m, long long n, long long k, double* scratch,
                               double* rows, cudaStream_t stream) {
  // tf32 inputs are stored as floats; the output is f32, f16 or bf16.
  const char* tin = type_name(in == FillType::tf32 ? FillType::f32 : in);
  if (!tin || !(out == FillType::f32 || out == FillType::f16 || out == FillType::bf16))
    return cudaErrorInvalidValue;
  const unsigned most = 0x7FFFFFFF;
  if (cudaError_t e =
          ptx_launch(kernel_name("row_sums", tin).c_str(), grid_blocks(k, most), kBlockThreads,
                     stream, PtxParams().add(b).add(k).add(n).add(scratch).add(scratch + k).add(1)))
    return e;
  if (cudaError_t e =
          ptx_launch(kernel_name("a_gemv", tin).c_str(), static_cast<unsigned>(m), kBlockThreads,
                     stream, PtxParams().add(a).add(k).add(scratch).add(scratch + k).add(rows)))
    return e;
  return ptx_launch(kernel_name("row_sums", type_name(out)).c_str(), grid_blocks(m, most),
                    kBlockThreads, stream,
                    PtxParams().add(d).add(m).add(n).add(rows).add(rows + 1).add(4));
}

cudaError_t fill_copy_pattern(uint4* dst, long long words, cudaStream_t stream) {
  return ptx_launch("clusterbench::compute::gpu::kernels::copy_fill", kCopyFillBlocks,
                    kCopyFillThreads, stream, PtxParams().add(dst).add(words));
}

cudaError_t copy_words(uint4* dst, const uint4* src, long long words, int blocks, int threads,
                       cudaStream_t stream) {
  return ptx_launch("clusterbench::compute::gpu::kernels::copy", static_cast<unsigned>(blocks),
                    static_cast<unsigned>(threads), stream,
                    PtxParams().add(dst).add(src).add(words));
}

}  // namespace clusterbench::compute::gpu
