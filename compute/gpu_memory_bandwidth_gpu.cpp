// compute.gpu_memory_bandwidth in the GPU plugin (bench/gpu/plugin_abi.h cb_gpu_dcopy_*):
// device-to-device copies timed with CUDA events; the core-side benchmark
// (compute/gpu_memory_bandwidth.cpp) times cb_gpu_dcopy_run through the framework.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "compute/gpu_copy_kernels.hpp"
#include "gpu/plugin_abi.h"
#include "gpu/plugin_error.hpp"

namespace {

using clusterbench::gpu::Fail;

}  // namespace

struct cb_dcopy {
  int method = 0;
  long long words = 0;
  int blocks = 0, threads = 256;
  uint4 *src = nullptr, *dst = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~cb_dcopy() {
    if (src) cudaFree(src);
    if (dst) cudaFree(dst);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
  void once() {
    if (method == 0) {
      CUDA_TRY(clusterbench::compute::gpu::copy_words(dst, src, words, blocks, threads, stream));
    } else {
      CUDA_TRY(cudaMemcpyAsync(dst, src, static_cast<size_t>(words) * 16, cudaMemcpyDeviceToDevice,
                               stream));
    }
  }
};

namespace {

void create(const cb_dcopy_params* p, cb_dcopy* c, cb_dcopy_info* info) {
  int dev = 0;
  CUDA_TRY(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
  std::snprintf(info->device_name, sizeof info->device_name, "%s", prop.name);
  CUDA_TRY(cudaDeviceGetPCIBusId(info->pci_bus_id, sizeof info->pci_bus_id, dev));
  info->l2_bytes = prop.l2CacheSize;
  size_t free_b = 0, total_b = 0;
  CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  long long bytes =
      p->bytes > 0 ? p->bytes : std::max<long long>(16LL * prop.l2CacheSize, 1LL << 30);
  if (p->bytes <= 0) bytes = std::min<long long>(bytes, static_cast<long long>(free_b / 4));
  bytes = bytes / 16 * 16;
  if (bytes <= 0 || static_cast<size_t>(2 * bytes) > free_b / 10 * 9)
    throw Fail{CB_GPU_UNSUPPORTED, "two buffers of " + std::to_string(bytes) +
                                       " bytes do not fit in " + std::to_string(free_b >> 20) +
                                       " MiB of free GPU memory"};
  c->method = p->method;
  c->words = bytes / 16;
  info->bytes = bytes;
  // Enough resident blocks to fill every SM; the grid-stride loop covers the rest.
  c->blocks = prop.multiProcessorCount * std::max(1, prop.maxThreadsPerMultiProcessor / c->threads);
  info->blocks = p->method == 0 ? c->blocks : 0;
  info->threads = p->method == 0 ? c->threads : 0;
  CUDA_TRY(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  CUDA_TRY(cudaEventCreate(&c->start));
  CUDA_TRY(cudaEventCreate(&c->stop));
  CUDA_TRY(cudaMalloc(&c->src, static_cast<size_t>(bytes)));
  CUDA_TRY(cudaMalloc(&c->dst, static_cast<size_t>(bytes)));
  CUDA_TRY(clusterbench::compute::gpu::fill_copy_pattern(c->src, c->words, c->stream));
  CUDA_TRY(cudaMemsetAsync(c->dst, 0, static_cast<size_t>(bytes), c->stream));
  c->once();
  CUDA_TRY(cudaStreamSynchronize(c->stream));
  // Check 64 chunks of 256 words spread over the buffer, the last chunk included.
  std::vector<uint4> chunk(256);
  for (int s = 0; s < 64; ++s) {
    long long first = std::max<long long>(0, (c->words - 256) * s / 63);
    long long n = std::min<long long>(256, c->words - first);
    CUDA_TRY(cudaMemcpy(chunk.data(), c->dst + first, static_cast<size_t>(n) * 16,
                        cudaMemcpyDeviceToHost));
    for (long long i = 0; i < n; ++i) {
      uint4 want = clusterbench::compute::gpu::copy_pattern(first + i);
      const uint4& got = chunk[static_cast<size_t>(i)];
      info->mismatches +=
          got.x != want.x || got.y != want.y || got.z != want.z || got.w != want.w ? 1 : 0;
      ++info->checked;
    }
  }
}

}  // namespace

extern "C" int cb_gpu_dcopy_create(const cb_dcopy_params* p, cb_dcopy** out, cb_dcopy_info* info,
                                   char* err, size_t errlen) {
  *out = nullptr;
  *info = cb_dcopy_info{};
  auto* c = new cb_dcopy();
  int rc = clusterbench::gpu::plugin_call(err, errlen, [&] { create(p, c, info); });
  if (rc == CB_GPU_OK)
    *out = c;
  else
    delete c;
  return rc;
}

extern "C" int cb_gpu_dcopy_run(cb_dcopy* c, long long count, double* seconds, char* err,
                                size_t errlen) {
  return clusterbench::gpu::plugin_call(err, errlen, [&] {
    CUDA_TRY(cudaEventRecord(c->start, c->stream));
    for (long long i = 0; i < count; ++i) c->once();
    CUDA_TRY(cudaEventRecord(c->stop, c->stream));
    CUDA_TRY(cudaEventSynchronize(c->stop));
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, c->start, c->stop));
    *seconds = ms / 1e3;
  });
}

extern "C" void cb_gpu_dcopy_destroy(cb_dcopy* c) { delete c; }
