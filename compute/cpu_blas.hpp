// The CPU BLAS of compute.gemm's openblas backend and of the CPU burn-in (compute/gemm.cpp,
// compute/burnin.cpp): OpenBLAS's cblas.h. The -DCLUSTERBENCH_GPU_CHECK=ON build (the GPU check's
// bundle) links no OpenBLAS: it defines CLUSTERBENCH_NO_OPENBLAS and links
// compute/openblas_none.cpp, whose functions throw, and the cases that would call them are waived
// first with openblas_absent()'s reason.
#pragma once

#include <cblas.h>

#include <string>

namespace clusterbench::compute {

/// Why this build runs no OpenBLAS case (the CPU GEMM, the CPU burn-in), or "" where OpenBLAS is
/// linked (compute/cpu_blas.cpp).
std::string openblas_absent();

}  // namespace clusterbench::compute
