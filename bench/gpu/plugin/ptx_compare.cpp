// The CUDA 12 plugin's launcher of the comparison kernel (compare.hpp): what compare.cu defines
// with nvcc in the CUDA 13 plugin, here from the embedded PTX (ptx_module.hpp).
#include <string>

#include "gpu/plugin/compare.hpp"
#include "gpu/plugin/grid.hpp"
#include "gpu/plugin/ptx_module.hpp"

namespace clusterbench::gpu {

cudaError_t compare_elements(const void* a, const void* ref, CompareType type, long long count,
                             double rel_tolerance, unsigned long long* counters,
                             cudaStream_t stream) {
  const char* t = type == CompareType::f32    ? "float"
                  : type == CompareType::f16  ? "__half"
                  : type == CompareType::bf16 ? "__nv_bfloat16"
                                              : nullptr;
  if (!t) return cudaErrorInvalidValue;
  const std::string name = std::string("clusterbench::gpu::kernels::count_differing<") + t + ">";
  if (cudaError_t e =
          ptx_launch(name.c_str(), grid_blocks(count, kCompareMaxBlocks), kBlockThreads, stream,
                     PtxParams().add(a).add(ref).add(count).add(rel_tolerance).add(counters)))
    return e;
  return ptx_launch("clusterbench::gpu::kernels::fold", 1, 1, stream, PtxParams().add(counters));
}

}  // namespace clusterbench::gpu
