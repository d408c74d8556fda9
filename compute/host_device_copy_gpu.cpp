// compute.host_device_copy in the GPU plugin (bench/gpu/plugin_abi.h cb_gpu_hcopy_*): copies
// between caller-owned host buffers (NUMA-bound by the core) and device buffers, timed with CUDA
// events; the core-side benchmark (compute/host_device_copy.cpp) times cb_gpu_hcopy_run through
// the framework. Pinned buffers are registered here (cudaHostRegister), pageable ones are not.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/plugin_abi.h"
#include "gpu/plugin_error.hpp"

namespace {

using clusterbench::gpu::Fail;

void device_names(char* name, size_t name_len, char* bus, size_t bus_len) {
  int dev = 0;
  CUDA_TRY(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
  std::snprintf(name, name_len, "%s", prop.name);
  CUDA_TRY(cudaDeviceGetPCIBusId(bus, static_cast<int>(bus_len), dev));
}

}  // namespace

struct cb_hcopy {
  int direction = CB_HCOPY_H2D;
  size_t bytes = 0;
  void *host_src = nullptr, *host_dst = nullptr;
  bool src_registered = false, dst_registered = false;
  void *dev_in = nullptr, *dev_out = nullptr;  // H2D lands in dev_in; D2H reads dev_out
  cudaStream_t up = nullptr, down = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr, down_done = nullptr;
  ~cb_hcopy() {
    if (up) cudaStreamSynchronize(up);
    if (down) cudaStreamSynchronize(down);
    if (src_registered) cudaHostUnregister(host_src);
    if (dst_registered) cudaHostUnregister(host_dst);
    if (dev_in) cudaFree(dev_in);
    if (dev_out) cudaFree(dev_out);
    for (cudaEvent_t e : {start, stop, down_done})
      if (e) cudaEventDestroy(e);
    if (up) cudaStreamDestroy(up);
    if (down) cudaStreamDestroy(down);
  }
  bool h2d() const { return direction != CB_HCOPY_D2H; }
  bool d2h() const { return direction != CB_HCOPY_H2D; }
  // One batch: `count` copies of each direction; bidir runs them on two streams at once.
  void enqueue(long long count) {
    CUDA_TRY(cudaEventRecord(start, up));
    if (d2h()) CUDA_TRY(cudaStreamWaitEvent(down, start, 0));
    for (long long i = 0; i < count; ++i) {
      if (h2d()) CUDA_TRY(cudaMemcpyAsync(dev_in, host_src, bytes, cudaMemcpyHostToDevice, up));
      if (d2h()) CUDA_TRY(cudaMemcpyAsync(host_dst, dev_out, bytes, cudaMemcpyDeviceToHost, down));
    }
    if (d2h()) {
      CUDA_TRY(cudaEventRecord(down_done, down));
      CUDA_TRY(cudaStreamWaitEvent(up, down_done, 0));
    }
    CUDA_TRY(cudaEventRecord(stop, up));
  }
};

namespace {

// Compares 64 chunks of 256 16-byte words of `got` (device or host) with `want` (host).
void check_words(const void* got, bool got_on_device, const unsigned char* want, size_t bytes,
                 cb_hcopy_info* info) {
  const long long words = static_cast<long long>(bytes / 16);
  std::vector<unsigned char> chunk(256 * 16);
  for (int s = 0; s < 64; ++s) {
    long long first = std::max<long long>(0, (words - 256) * s / 63);
    long long n = std::min<long long>(256, words - first);
    const auto* src = static_cast<const unsigned char*>(got) + first * 16;
    if (got_on_device) {
      CUDA_TRY(cudaMemcpy(chunk.data(), src, static_cast<size_t>(n) * 16, cudaMemcpyDeviceToHost));
    } else {
      std::memcpy(chunk.data(), src, static_cast<size_t>(n) * 16);
    }
    for (long long i = 0; i < n; ++i) {
      info->mismatches += std::memcmp(chunk.data() + i * 16, want + (first + i) * 16, 16) ? 1 : 0;
      ++info->checked;
    }
  }
}

void create(const cb_hcopy_params* p, cb_hcopy* c, cb_hcopy_info* info) {
  device_names(info->device_name, sizeof info->device_name, info->pci_bus_id,
               sizeof info->pci_bus_id);
  if (p->bytes <= 0 || p->bytes % 16 || !p->host_src ||
      (p->direction != CB_HCOPY_H2D && !p->host_dst))
    throw Fail{CB_GPU_ERROR, "cb_gpu_hcopy_create: bad parameters (bytes " +
                                 std::to_string(p->bytes) + ", a multiple of 16, host buffers)"};
  c->direction = p->direction;
  c->bytes = static_cast<size_t>(p->bytes);
  c->host_src = p->host_src;
  c->host_dst = p->host_dst;
  size_t free_b = 0, total_b = 0;
  CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  if (2 * c->bytes > free_b / 10 * 9)
    throw Fail{CB_GPU_UNSUPPORTED, "two device buffers of " + std::to_string(c->bytes) +
                                       " bytes do not fit in " + std::to_string(free_b >> 20) +
                                       " MiB of free GPU memory"};
  if (p->pinned) {
    CUDA_TRY(cudaHostRegister(c->host_src, c->bytes, cudaHostRegisterDefault));
    c->src_registered = true;
    if (c->d2h()) {
      CUDA_TRY(cudaHostRegister(c->host_dst, c->bytes, cudaHostRegisterDefault));
      c->dst_registered = true;
    }
  }
  CUDA_TRY(cudaStreamCreateWithFlags(&c->up, cudaStreamNonBlocking));
  CUDA_TRY(cudaStreamCreateWithFlags(&c->down, cudaStreamNonBlocking));
  for (cudaEvent_t* e : {&c->start, &c->stop, &c->down_done}) CUDA_TRY(cudaEventCreate(e));
  CUDA_TRY(cudaMalloc(&c->dev_in, c->bytes));
  CUDA_TRY(cudaMalloc(&c->dev_out, c->bytes));
  // D2H reads dev_out: give it the source's contents, so the host destination can be checked.
  CUDA_TRY(cudaMemset(c->dev_in, 0, c->bytes));
  CUDA_TRY(cudaMemcpy(c->dev_out, c->host_src, c->bytes, cudaMemcpyHostToDevice));
  if (c->d2h()) std::memset(c->host_dst, 0, c->bytes);
  c->enqueue(1);
  CUDA_TRY(cudaEventSynchronize(c->stop));
  const auto* want = static_cast<const unsigned char*>(c->host_src);
  if (c->h2d()) check_words(c->dev_in, true, want, c->bytes, info);
  if (c->d2h()) check_words(c->host_dst, false, want, c->bytes, info);
}

}  // namespace

extern "C" int cb_gpu_current_device(cb_gpu_device_info* info, char* err, size_t errlen) {
  *info = cb_gpu_device_info{};
  return clusterbench::gpu::plugin_call(err, errlen, [&] {
    device_names(info->device_name, sizeof info->device_name, info->pci_bus_id,
                 sizeof info->pci_bus_id);
  });
}

extern "C" int cb_gpu_hcopy_create(const cb_hcopy_params* p, cb_hcopy** out, cb_hcopy_info* info,
                                   char* err, size_t errlen) {
  *out = nullptr;
  *info = cb_hcopy_info{};
  cb_hcopy* c = nullptr;
  int rc = clusterbench::gpu::plugin_call(err, errlen, [&] {
    c = new cb_hcopy();
    create(p, c, info);
  });
  if (rc == CB_GPU_OK)
    *out = c;
  else
    delete c;
  return rc;
}

extern "C" int cb_gpu_hcopy_run(cb_hcopy* c, long long count, double* seconds, char* err,
                                size_t errlen) {
  return clusterbench::gpu::plugin_call(err, errlen, [&] {
    c->enqueue(count);
    CUDA_TRY(cudaEventSynchronize(c->stop));
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, c->start, c->stop));
    *seconds = ms / 1e3;
  });
}

extern "C" void cb_gpu_hcopy_destroy(cb_hcopy* c) { delete c; }
