// io.dataloader in the GPU plugin: the "pinned_h2d" operation (bench/gpu/plugin/op.hpp), one
// pinned staging slot of the loader and its host-to-device copy. The loader creates one per slot.
//   params: {"bytes": the slot's size}
//   info:   the device's facts, "host_address" (the pinned buffer, cudaHostAllocPortable, as an
//           integer; valid while the operation lives), "bytes", "device_bytes" (the device
//           buffer the batch is copied into)
//   run(n): n copies of the whole buffer to the device.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "gpu/plugin/op.hpp"

namespace clusterbench::io::gpu {

namespace {

using clusterbench::gpu::DeviceBuffer;
using clusterbench::gpu::Fail;
using clusterbench::gpu::json;

/// Pinned host memory, freed with the object.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes) {
    CUDA_TRY(cudaHostAlloc(&p_, bytes, cudaHostAllocPortable));
  }
  ~PinnedBuffer() {
    if (p_) cudaFreeHost(p_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

size_t positive_bytes(const json& p) {
  long long b = p.at("bytes").get<long long>();
  if (b <= 0) throw Fail{CB_GPU_ERROR, "pinned_h2d: bytes must be > 0, not " + std::to_string(b)};
  return static_cast<size_t>(b);
}

class PinnedH2d : public clusterbench::gpu::Op {
 public:
  explicit PinnedH2d(const json& p) : bytes_(positive_bytes(p)), host_(bytes_), dev_(bytes_) {
    info()["host_address"] = reinterpret_cast<std::uintptr_t>(host_.get());
    info()["bytes"] = static_cast<long long>(bytes_);
    info()["device_bytes"] = static_cast<long long>(bytes_);
  }
  ~PinnedH2d() override { cudaStreamSynchronize(stream()); }

 private:
  void enqueue(long long count) override {
    for (long long i = 0; i < count; ++i)
      CUDA_TRY(cudaMemcpyAsync(dev_.get(), host_.get(), bytes_, cudaMemcpyHostToDevice, stream()));
  }

  size_t bytes_;
  PinnedBuffer host_;
  DeviceBuffer dev_;
};

CB_GPU_OP(PinnedH2d, "pinned_h2d");

}  // namespace
}  // namespace clusterbench::io::gpu
