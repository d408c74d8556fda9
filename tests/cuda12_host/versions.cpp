// Part of the CUDA 12 host check (tests/compute.cmake): compiled with the plugin's host sources
// against PyPI's cu12 wheels, it fails the build unless those headers are CUDA 12.2+ (not the CUDA
// 13 toolkit's) and exports the versions compiled against for the test to read.
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#if CLUSTERBENCH_HAVE_NCCL
#include <nccl.h>
#endif

static_assert(CUDART_VERSION >= 12020 && CUDART_VERSION < 13000,
              "the CUDA 12 host check must compile against CUDA 12.2+ headers");
static_assert(CUBLAS_VER_MAJOR == 12, "the CUDA 12 host check must use cuBLAS 12 headers");

/// CUDART_VERSION, CUBLAS_VERSION and NCCL_VERSION_CODE (0 without NCCL) compiled against.
extern "C" const int cb_cuda12_host_versions[3] = {CUDART_VERSION, CUBLAS_VERSION,
#if CLUSTERBENCH_HAVE_NCCL
                                                   NCCL_VERSION_CODE
#else
                                                   0
#endif
};
