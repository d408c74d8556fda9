// libclusterbench_gpu.so's start-up entry points (bench/gpu/plugin_abi.h): CUDA start-up,
// versions, the device, the last error; and the helpers of plugin.hpp. Benchmark folders add
// their operations' sources (and NCCL's) to this library.
#include "gpu/plugin/plugin.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "gpu/plugin_abi.h"
#if CLUSTERBENCH_PTX_KERNELS
#include "gpu/plugin/ptx_module.hpp"
#endif
#if CLUSTERBENCH_HAVE_NCCL
#include <nccl.h>
#endif

namespace clusterbench::gpu {

namespace {

thread_local std::string t_last_error;

std::string version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

/// A driver is present but older than the CUDA this plugin was built for: a deployment error.
Fail driver_insufficient(int driver) {
  return Fail{CB_GPU_DRIVER_INSUFFICIENT,
              "CUDA driver version is insufficient: the driver supports CUDA " + version(driver) +
                  ", this plugin was built with CUDA " + version(CUDART_VERSION) +
                  "; install a driver for CUDA " + version(CUDART_VERSION) +
                  " or newer, or use a plugin built with CUDA <= " + version(driver)};
}

void init(cb_gpu_info* info) {
  *info = cb_gpu_info{};
  info->built_cuda = CUDART_VERSION;
  cudaRuntimeGetVersion(&info->runtime_version);
  cudaDriverGetVersion(&info->driver_version);
  info->cublaslt_version = static_cast<int>(cublasLtGetVersion());
#if CLUSTERBENCH_HAVE_NCCL
  ncclGetVersion(&info->nccl_version);
#endif
  cudaError_t e = cudaGetDeviceCount(&info->device_count);
  if (e == cudaErrorInsufficientDriver && info->driver_version > 0)
    throw driver_insufficient(info->driver_version);
#if CLUSTERBENCH_PTX_KERNELS
  // The runtime starts on an older driver of its major (minor-version compatibility), but the
  // kernels are PTX of this CUDA's ISA, which only a driver for this CUDA or newer compiles.
  if (e == cudaSuccess && info->driver_version > 0 && info->driver_version < CUDART_VERSION) {
    Fail f = driver_insufficient(info->driver_version);
    f.text += " (this plugin's kernels are PTX, which an older driver cannot compile)";
    throw f;
  }
#endif
  if (e != cudaSuccess) throw Fail{CB_GPU_ERROR, cuda_error_text("cudaGetDeviceCount", e)};
}

}  // namespace

void set_last_error(const std::string& text) { t_last_error = text; }

std::string cuda_error_text(const char* call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
}

EventTimer::EventTimer() {
  CUDA_TRY(cudaEventCreate(&start_));
  cudaError_t e = cudaEventCreate(&stop_);
  if (e != cudaSuccess) {
    cudaEventDestroy(start_);
    throw Fail{CB_GPU_ERROR, cuda_error_text("cudaEventCreate(&stop_)", e)};
  }
}

EventTimer::~EventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

double EventTimer::time(cudaStream_t stream, const std::function<void()>& enqueue,
                        const std::function<void(cudaEvent_t)>& wait) {
  CUDA_TRY(cudaEventRecord(start_, stream));
  enqueue();
  CUDA_TRY(cudaEventRecord(stop_, stream));
  if (wait)
    wait(stop_);
  else
    CUDA_TRY(cudaEventSynchronize(stop_));
  float ms = 0;
  CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_));
  return ms / 1e3;
}

Stream::Stream() { CUDA_TRY(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }

Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) { CUDA_TRY(cudaMalloc(&p_, bytes)); }

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}

size_t free_device_bytes() {
  size_t free_b = 0, total_b = 0;
  CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

}  // namespace clusterbench::gpu

extern "C" int cb_gpu_abi_version(void) { return CB_GPU_ABI_VERSION; }

extern "C" int cb_gpu_built_cuda_version(void) { return CUDART_VERSION; }

extern "C" int cb_gpu_init(cb_gpu_info* info, char* err, size_t errlen) {
  return clusterbench::gpu::plugin_call(err, errlen, [&] { clusterbench::gpu::init(info); });
}

extern "C" int cb_gpu_set_device(int device, char* err, size_t errlen) {
  return clusterbench::gpu::plugin_call(err, errlen, [&] {
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess)
      throw clusterbench::gpu::Fail{CB_GPU_ERROR,
                                    clusterbench::gpu::cuda_error_text("cudaSetDevice", e)};
#if CLUSTERBENCH_PTX_KERNELS
    // The driver compiles the PTX kernels here, before any timing, rather than at a first launch.
    e = clusterbench::gpu::ptx_load_module(device);
    if (e != cudaSuccess)
      throw clusterbench::gpu::Fail{
          CB_GPU_ERROR, clusterbench::gpu::cuda_error_text("loading the PTX kernels", e)};
#endif
  });
}

extern "C" const char* cb_gpu_last_error(void) { return clusterbench::gpu::t_last_error.c_str(); }
