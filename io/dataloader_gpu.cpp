// io.dataloader's GPU side, compiled into libclusterbench_gpu.so (the only place that links
// CUDA): pinned staging buffers (cudaHostAlloc) and the host-to-device copy of each batch.
// Looked up by the core with dlsym (additive to plugin ABI version 1), as compute.gemm's are.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace {
int fail(cudaError_t e, const char* call, char* err, size_t errlen) {
  std::snprintf(err, errlen, "%s: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
  return 1;
}
}  // namespace

extern "C" {

/// Pinned host memory of `bytes` (cudaHostAllocPortable); *out = nullptr on error.
int cb_gpu_dl_host_alloc(size_t bytes, void** out, char* err, size_t errlen) {
  *out = nullptr;
  cudaError_t e = cudaHostAlloc(out, bytes, cudaHostAllocPortable);
  return e == cudaSuccess ? 0 : fail(e, "cudaHostAlloc", err, errlen);
}

void cb_gpu_dl_host_free(void* p) {
  if (p) cudaFreeHost(p);
}

/// Copies `bytes` from pinned `src` to a device buffer of this process's device (grown as
/// needed, kept between calls), waits for it, and returns the seconds it took (CUDA events).
int cb_gpu_dl_h2d(const void* src, size_t bytes, double* seconds, char* err, size_t errlen) {
  static void* dev = nullptr;
  static size_t dev_bytes = 0;
  static cudaStream_t stream = nullptr;
  static cudaEvent_t start = nullptr, stop = nullptr;
  cudaError_t e;
  if (!stream) {
    if ((e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess)
      return fail(e, "cudaStreamCreate", err, errlen);
    if ((e = cudaEventCreate(&start)) != cudaSuccess || (e = cudaEventCreate(&stop)) != cudaSuccess)
      return fail(e, "cudaEventCreate", err, errlen);
  }
  if (bytes > dev_bytes) {
    if (dev) cudaFree(dev);
    dev = nullptr;
    if ((e = cudaMalloc(&dev, bytes)) != cudaSuccess) return fail(e, "cudaMalloc", err, errlen);
    dev_bytes = bytes;
  }
  if ((e = cudaEventRecord(start, stream)) != cudaSuccess)
    return fail(e, "cudaEventRecord", err, errlen);
  if ((e = cudaMemcpyAsync(dev, src, bytes, cudaMemcpyHostToDevice, stream)) != cudaSuccess)
    return fail(e, "cudaMemcpyAsync", err, errlen);
  if ((e = cudaEventRecord(stop, stream)) != cudaSuccess)
    return fail(e, "cudaEventRecord", err, errlen);
  if ((e = cudaEventSynchronize(stop)) != cudaSuccess)
    return fail(e, "cudaEventSynchronize", err, errlen);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  *seconds = ms / 1e3;
  return 0;
}

}  // extern "C"
