// compute.gpu_memory_bandwidth in the GPU plugin: the "device_copy" operation
// (bench/gpu/plugin/op.hpp), one device buffer copied to another on the current device.
//   params: {"bytes": 0 = max(16 x L2, 1 GiB) capped at a quarter of the free memory,
//            "method": "kernel" (the plugin's 16-byte grid-stride copy) | "memcpy"
//            (cudaMemcpyAsync device-to-device)}
//   info:   the device's facts, "l2_bytes", "bytes" (per buffer), "device_bytes" (both buffers),
//           "blocks", "threads" (the kernel's launch; 0 for memcpy), "verification":
//           {"checked_words", "mismatches"} (16-byte words of one copy, 64 sampled chunks)
// The core-side benchmark (compute/gpu_memory_bandwidth.cpp) times it through the framework.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compute/gpu_copy_kernels.hpp"
#include "gpu/plugin/op.hpp"

namespace clusterbench::compute::gpu {

namespace {

using clusterbench::gpu::DeviceBuffer;
using clusterbench::gpu::Fail;
using clusterbench::gpu::json;

class DeviceCopy : public clusterbench::gpu::Op {
 public:
  explicit DeviceCopy(const json& p) : kernel_(method(p.value("method", "kernel"))) {
    const long long bytes = buffer_bytes(p.value("bytes", 0LL));
    words_ = bytes / 16;
    // Enough resident blocks to fill every SM; the grid-stride loop covers the rest.
    blocks_ =
        prop().multiProcessorCount * std::max(1, prop().maxThreadsPerMultiProcessor / threads_);
    src_ = DeviceBuffer(static_cast<size_t>(bytes));
    dst_ = DeviceBuffer(static_cast<size_t>(bytes));
    CUDA_TRY(fill_copy_pattern(words(src_), words_, stream()));
    CUDA_TRY(cudaMemsetAsync(dst_.get(), 0, static_cast<size_t>(bytes), stream()));
    enqueue(1);
    CUDA_TRY(cudaStreamSynchronize(stream()));
    info()["l2_bytes"] = prop().l2CacheSize;
    info()["bytes"] = bytes;
    info()["device_bytes"] = 2 * bytes;
    info()["blocks"] = kernel_ ? blocks_ : 0;
    info()["threads"] = kernel_ ? threads_ : 0;
    info()["verification"] = verify();
  }

 private:
  static bool method(const std::string& m) {
    if (m != "kernel" && m != "memcpy")
      throw Fail{CB_GPU_ERROR, "device_copy: unknown method '" + m + "' (kernel, memcpy)"};
    return m == "kernel";
  }
  static uint4* words(const DeviceBuffer& b) { return static_cast<uint4*>(b.get()); }

  /// The buffer size asked for, or the default; UNSUPPORTED when two do not fit.
  long long buffer_bytes(long long asked) const {
    size_t free_b = clusterbench::gpu::free_device_bytes();
    long long bytes = asked > 0 ? asked : std::max<long long>(16LL * prop().l2CacheSize, 1LL << 30);
    if (asked <= 0) bytes = std::min<long long>(bytes, static_cast<long long>(free_b / 4));
    bytes = bytes / 16 * 16;
    if (bytes <= 0 || static_cast<size_t>(2 * bytes) > free_b / 10 * 9)
      throw Fail{CB_GPU_UNSUPPORTED, "two buffers of " + std::to_string(bytes) +
                                         " bytes do not fit in " + std::to_string(free_b >> 20) +
                                         " MiB of free GPU memory"};
    return bytes;
  }

  void enqueue(long long count) override {
    for (long long i = 0; i < count; ++i) {
      if (kernel_) {
        CUDA_TRY(copy_words(words(dst_), words(src_), words_, blocks_, threads_, stream()));
      } else {
        CUDA_TRY(cudaMemcpyAsync(dst_.get(), src_.get(), static_cast<size_t>(words_) * 16,
                                 cudaMemcpyDeviceToDevice, stream()));
      }
    }
  }

  /// Checks 64 chunks of 256 words spread over the destination, the last chunk included.
  json verify() const {
    long long checked = 0, mismatches = 0;
    std::vector<uint4> chunk(256);
    for (int s = 0; s < 64; ++s) {
      long long first = std::max<long long>(0, (words_ - 256) * s / 63);
      long long n = std::min<long long>(256, words_ - first);
      CUDA_TRY(cudaMemcpy(chunk.data(), words(dst_) + first, static_cast<size_t>(n) * 16,
                          cudaMemcpyDeviceToHost));
      for (long long i = 0; i < n; ++i) {
        uint4 want = copy_pattern(first + i);
        const uint4& got = chunk[static_cast<size_t>(i)];
        mismatches += got.x != want.x || got.y != want.y || got.z != want.z || got.w != want.w;
        ++checked;
      }
    }
    return {{"checked_words", checked}, {"mismatches", mismatches}};
  }

  bool kernel_;
  long long words_ = 0;
  int blocks_ = 0, threads_ = 256;
  DeviceBuffer src_, dst_;
};

CB_GPU_OP(DeviceCopy, "device_copy");

}  // namespace
}  // namespace clusterbench::compute::gpu
