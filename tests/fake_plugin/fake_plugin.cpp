// A GPU plugin whose CUDA start fails as a broken node's does, for the tests: the error text is
// $FAKE_GPU_ERROR (default CUDA's "no CUDA-capable device is detected"); with
// $FAKE_GPU_DRIVER_INSUFFICIENT set it reports a driver too old for its CUDA (a deployment error).
#include <cstdio>
#include <cstdlib>

#include "gpu/plugin_abi.h"

extern "C" int cb_gpu_abi_version(void) { return CB_GPU_ABI_VERSION; }

extern "C" int cb_gpu_init(cb_gpu_info* info, char* err, size_t errlen) {
  *info = cb_gpu_info{};
  info->built_cuda = 13000;
  if (std::getenv("FAKE_GPU_DRIVER_INSUFFICIENT")) {
    info->driver_version = 12020;
    std::snprintf(err, errlen,
                  "CUDA driver version is insufficient: the driver supports CUDA 12.2, this plugin "
                  "was built with CUDA 13.0; install a driver for CUDA 13.0 or newer");
    return CB_GPU_DRIVER_INSUFFICIENT;
  }
  const char* text = std::getenv("FAKE_GPU_ERROR");
  std::snprintf(err, errlen, "cudaGetDeviceCount: %s",
                text ? text : "no CUDA-capable device is detected (cudaErrorNoDevice)");
  return CB_GPU_ERROR;
}

extern "C" int cb_gpu_set_device(int, char* err, size_t errlen) {
  std::snprintf(err, errlen, "cudaSetDevice: no CUDA-capable device is detected");
  return CB_GPU_ERROR;
}
