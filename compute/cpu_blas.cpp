// Whether this build links OpenBLAS (compute/cpu_blas.hpp): the one place that reads
// CLUSTERBENCH_NO_OPENBLAS, which compute/CMakeLists.txt defines for the
// -DCLUSTERBENCH_GPU_CHECK=ON build.
#include "compute/cpu_blas.hpp"

namespace clusterbench::compute {

std::string openblas_absent() {
#ifdef CLUSTERBENCH_NO_OPENBLAS
  return "this build has no OpenBLAS (-DCLUSTERBENCH_GPU_CHECK=ON, the GPU check's bundle): the "
         "CPU GEMM and the CPU burn-in cannot run; use a full build";
#else
  return "";
#endif
}

}  // namespace clusterbench::compute
