// compute.host_device_copy in the GPU plugin: the "host_copy" operation
// (bench/gpu/plugin/op.hpp), copies between caller-owned host buffers (NUMA-bound by the core)
// and device buffers of the current device. Pinned buffers are registered here
// (cudaHostRegister, unregistered when the operation is destroyed), pageable ones are not.
//   params: {"bytes": per direction, a multiple of 16, "direction": "h2d" | "d2h" | "bidir" (an
//            H2D and a D2H of `bytes` each, on two streams at once; pageable: each direction
//            issued from a host thread of its own), "pinned": bool,
//            "host_src": address of `bytes` (the source of H2D and the reference of every
//            check; registered only where H2D runs), "host_dst": address of `bytes` (the
//            destination of D2H, which must not overlap host_src; registered only where D2H
//            runs; unused by h2d)}
//   info:   the device's facts, "device_bytes" (two device buffers), "host_threads" (host threads
//           issuing the copies: 2 for pageable bidir, else 1), "verification":
//           {"checked_words", "mismatches"} (16-byte words after one copy each way)
// The core-side benchmark (compute/host_device_copy.cpp) times it through the framework.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu/plugin/op.hpp"

namespace clusterbench::compute::gpu {

namespace {

using clusterbench::gpu::DeviceBuffer;
using clusterbench::gpu::Fail;
using clusterbench::gpu::json;

/// Host memory registered with CUDA (pinned) for the object's lifetime.
class Registration {
 public:
  Registration() = default;
  Registration(void* p, size_t bytes) {
    CUDA_TRY(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
    p_ = p;
  }
  ~Registration() {
    if (p_) cudaHostUnregister(p_);
  }
  Registration& operator=(Registration&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }

 private:
  void* p_ = nullptr;
};

/// A CUDA event of the operation's own, destroyed with it.
struct Event {
  cudaEvent_t e = nullptr;
  Event() { CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming)); }
  ~Event() { cudaEventDestroy(e); }
};

void* address(const json& p, const char* key) {
  return reinterpret_cast<void*>(p.value(key, std::uintptr_t{0}));
}

/// Whether [a, a + bytes) and [b, b + bytes) share a byte.
bool overlap(const void* a, const void* b, size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

class HostCopy : public clusterbench::gpu::Op {
 public:
  explicit HostCopy(const json& p)
      : h2d_(p.at("direction") != "d2h"),
        d2h_(p.at("direction") != "h2d"),
        pageable_bidir_(h2d_ && d2h_ && !p.value("pinned", false)),
        bytes_(p.at("bytes").get<long long>()),
        host_src_(address(p, "host_src")),
        host_dst_(address(p, "host_dst")) {
    check(p.at("direction").get<std::string>());
    // Only what the timed copies touch is pinned: H2D reads host_src, D2H writes host_dst. CUDA
    // refuses a second registration of any part of a range, so two operations may share a
    // buffer only where at most one of them registers it.
    if (p.value("pinned", false)) {
      if (h2d_) src_pin_ = Registration(host_src_, size());
      if (d2h_) dst_pin_ = Registration(host_dst_, size());
    }
    dev_in_ = DeviceBuffer(size());
    dev_out_ = DeviceBuffer(size());
    // D2H reads dev_out: give it the source's contents, so the host destination can be checked.
    CUDA_TRY(cudaMemset(dev_in_.get(), 0, size()));
    CUDA_TRY(cudaMemcpy(dev_out_.get(), host_src_, size(), cudaMemcpyHostToDevice));
    if (d2h_) std::memset(host_dst_, 0, size());
    enqueue(1);
    CUDA_TRY(cudaStreamSynchronize(stream()));
    info()["device_bytes"] = 2 * bytes_;
    info()["host_threads"] = pageable_bidir_ ? 2 : 1;
    info()["verification"] = verify();
  }
  ~HostCopy() override {
    cudaStreamSynchronize(stream());
    cudaStreamSynchronize(down_.get());
  }

 private:
  size_t size() const { return static_cast<size_t>(bytes_); }

  void check(const std::string& direction) const {
    if (direction != "h2d" && direction != "d2h" && direction != "bidir")
      throw Fail{CB_GPU_ERROR, "host_copy: unknown direction '" + direction + "'"};
    if (bytes_ <= 0 || bytes_ % 16 || !host_src_ || (d2h_ && !host_dst_))
      throw Fail{CB_GPU_ERROR, "host_copy: bad parameters (bytes " + std::to_string(bytes_) +
                                   ", a multiple of 16, host buffers)"};
    if (d2h_ && overlap(host_src_, host_dst_, size()))
      throw Fail{CB_GPU_ERROR,
                 "host_copy: host_src and host_dst overlap; the D2H copy is checked against "
                 "host_src, so they must be two buffers"};
    size_t free_b = clusterbench::gpu::free_device_bytes();
    if (2 * size() > free_b / 10 * 9)
      throw Fail{CB_GPU_UNSUPPORTED, "two device buffers of " + std::to_string(bytes_) +
                                         " bytes do not fit in " + std::to_string(free_b >> 20) +
                                         " MiB of free GPU memory"};
  }

  /// `count` copies of each direction: H2D on stream(), D2H on a second stream forked from it
  /// and joined back, so that bidir runs both at once within the timed events.
  void enqueue(long long count) override {
    if (pageable_bidir_) return enqueue_threads(count);
    if (d2h_) {
      CUDA_TRY(cudaEventRecord(fork_.e, stream()));
      CUDA_TRY(cudaStreamWaitEvent(down_.get(), fork_.e, 0));
    }
    for (long long i = 0; i < count; ++i) {
      if (h2d_)
        CUDA_TRY(
            cudaMemcpyAsync(dev_in_.get(), host_src_, size(), cudaMemcpyHostToDevice, stream()));
      if (d2h_)
        CUDA_TRY(cudaMemcpyAsync(host_dst_, dev_out_.get(), size(), cudaMemcpyDeviceToHost,
                                 down_.get()));
    }
    if (d2h_) {
      CUDA_TRY(cudaEventRecord(join_.e, down_.get()));
      CUDA_TRY(cudaStreamWaitEvent(stream(), join_.e, 0));
    }
  }

  /// Pageable bidir: CUDA returns from a copy into pageable host memory only when it is done,
  /// so one thread issuing both directions would run them nearly one after the other. The D2H
  /// copies are issued from a thread of their own, on the second stream (forked and joined as in
  /// enqueue), while this thread issues the H2D copies.
  void enqueue_threads(long long count) {
    int dev = 0;
    CUDA_TRY(cudaGetDevice(&dev));
    CUDA_TRY(cudaEventRecord(fork_.e, stream()));
    CUDA_TRY(cudaStreamWaitEvent(down_.get(), fork_.e, 0));
    cudaError_t down_error = cudaSuccess;
    std::thread down([&] {
      down_error = cudaSetDevice(dev);  // the current device is per thread
      for (long long i = 0; down_error == cudaSuccess && i < count; ++i)
        down_error =
            cudaMemcpyAsync(host_dst_, dev_out_.get(), size(), cudaMemcpyDeviceToHost, down_.get());
    });
    cudaError_t up_error = cudaSuccess;
    for (long long i = 0; up_error == cudaSuccess && i < count; ++i)
      up_error =
          cudaMemcpyAsync(dev_in_.get(), host_src_, size(), cudaMemcpyHostToDevice, stream());
    down.join();
    CUDA_TRY(up_error);
    CUDA_TRY(down_error);
    CUDA_TRY(cudaEventRecord(join_.e, down_.get()));
    CUDA_TRY(cudaStreamWaitEvent(stream(), join_.e, 0));
  }

  /// Compares 64 chunks of 256 16-byte words of `got` (device or host) with the source.
  void check_words(const void* got, bool on_device, long long& checked,
                   long long& mismatches) const {
    const auto* want = static_cast<const unsigned char*>(host_src_);
    const long long words = bytes_ / 16;
    std::vector<unsigned char> chunk(256 * 16);
    for (int s = 0; s < 64; ++s) {
      long long first = std::max<long long>(0, (words - 256) * s / 63);
      long long n = std::min<long long>(256, words - first);
      const auto* src = static_cast<const unsigned char*>(got) + first * 16;
      if (on_device)
        CUDA_TRY(
            cudaMemcpy(chunk.data(), src, static_cast<size_t>(n) * 16, cudaMemcpyDeviceToHost));
      else
        std::memcpy(chunk.data(), src, static_cast<size_t>(n) * 16);
      for (long long i = 0; i < n; ++i, ++checked)
        mismatches += std::memcmp(chunk.data() + i * 16, want + (first + i) * 16, 16) ? 1 : 0;
    }
  }

  json verify() const {
    long long checked = 0, mismatches = 0;
    if (h2d_) check_words(dev_in_.get(), true, checked, mismatches);
    if (d2h_) check_words(host_dst_, false, checked, mismatches);
    return {{"checked_words", checked}, {"mismatches", mismatches}};
  }

  const bool h2d_, d2h_;
  const bool pageable_bidir_;  ///< each direction from its own host thread (enqueue_threads)
  const long long bytes_;
  void *host_src_, *host_dst_;
  clusterbench::gpu::Stream down_;
  Event fork_, join_;
  Registration src_pin_, dst_pin_;
  DeviceBuffer dev_in_, dev_out_;  // H2D lands in dev_in; D2H reads dev_out
};

CB_GPU_OP(HostCopy, "host_copy");

}  // namespace
}  // namespace clusterbench::compute::gpu
