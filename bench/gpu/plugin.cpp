// libclusterbench_gpu.so entry points (bench/gpu/plugin_abi.h): CUDA start-up and versions.
// Benchmark folders add their cuBLASLt/NCCL/kernel sources to this library.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "gpu/plugin_abi.h"
#if CLUSTERBENCH_HAVE_NCCL
#include <nccl.h>
#endif

namespace {
void put(char* err, size_t len, const char* call, cudaError_t e) {
  std::snprintf(err, len, "%s: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
}
}  // namespace

extern "C" int cb_gpu_abi_version(void) { return CB_GPU_ABI_VERSION; }

extern "C" int cb_gpu_built_cuda_version(void) { return CUDART_VERSION; }

extern "C" int cb_gpu_init(cb_gpu_info* info, char* err, size_t errlen) {
  *info = cb_gpu_info{};
  info->built_cuda = CUDART_VERSION;
  cudaRuntimeGetVersion(&info->runtime_version);
  cudaDriverGetVersion(&info->driver_version);
  info->cublaslt_version = static_cast<int>(cublasLtGetVersion());
#if CLUSTERBENCH_HAVE_NCCL
  ncclGetVersion(&info->nccl_version);
#endif
  cudaError_t e = cudaGetDeviceCount(&info->device_count);
  if (e == cudaSuccess) return CB_GPU_OK;
  if (e == cudaErrorInsufficientDriver && info->driver_version > 0) {
    // A driver is present but older than the CUDA this plugin was built for: deployment error.
    std::snprintf(err, errlen,
                  "CUDA driver version is insufficient: the driver supports CUDA %d.%d, this "
                  "plugin was built with CUDA %d.%d; install a driver for CUDA %d.%d or newer, or "
                  "use a plugin built with CUDA <= %d.%d",
                  info->driver_version / 1000, (info->driver_version % 1000) / 10,
                  CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10, CUDART_VERSION / 1000,
                  (CUDART_VERSION % 1000) / 10, info->driver_version / 1000,
                  (info->driver_version % 1000) / 10);
    return CB_GPU_DRIVER_INSUFFICIENT;
  }
  put(err, errlen, "cudaGetDeviceCount", e);
  return CB_GPU_ERROR;
}

extern "C" int cb_gpu_set_device(int device, char* err, size_t errlen) {
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) {
    put(err, errlen, "cudaSetDevice", e);
    return CB_GPU_ERROR;
  }
  return CB_GPU_OK;
}
