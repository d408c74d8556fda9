// Inside libclusterbench_gpu.so: what every plugin source uses, written once. Errors are thrown
// as Fail (or any std::exception) and leave through plugin_call, which sets the thread's last
// error (cb_gpu_last_error) and returns the ABI's code; GPU work is timed by EventTimer.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <utility>

#include "gpu/plugin_abi.h"

namespace clusterbench::gpu {

/// An error leaving the plugin: CB_GPU_ERROR (failed), CB_GPU_UNSUPPORTED (waived),
/// CB_GPU_ABORTED (communicator aborted).
struct Fail {
  int code;
  std::string text;
};

/// Sets the calling thread's last error (cb_gpu_last_error).
void set_last_error(const std::string& text);

/// Runs `body`; returns CB_GPU_OK, or the Fail's code (CB_GPU_ERROR for any other exception)
/// with its text as the thread's last error. No exception crosses the C ABI.
template <typename Body>
int plugin_call(Body&& body) {
  try {
    body();
    return CB_GPU_OK;
  } catch (const Fail& f) {
    set_last_error(f.text);
    return f.code;
  } catch (const std::exception& e) {
    set_last_error(e.what());
    return CB_GPU_ERROR;
  } catch (...) {
    set_last_error("unknown exception in the GPU plugin");
    return CB_GPU_ERROR;
  }
}

/// plugin_call for the entry points that also hand the text back in a buffer (cb_gpu_init,
/// cb_gpu_set_device): the last error is copied into err[errlen].
template <typename Body>
int plugin_call(char* err, size_t errlen, Body&& body) {
  int rc = plugin_call(std::forward<Body>(body));
  if (rc != CB_GPU_OK && err && errlen) std::snprintf(err, errlen, "%s", cb_gpu_last_error());
  return rc;
}

/// "call: error string (error name)" of a failed CUDA runtime call.
std::string cuda_error_text(const char* call, cudaError_t e);

/// Two CUDA events around enqueued work: the one timing of every GPU operation and of the NCCL
/// backend (nvbench's and nccl-tests' way: events on the work's own stream).
class EventTimer {
 public:
  EventTimer();  ///< creates the events; throws Fail
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  /// Records the start event on `stream`, calls `enqueue`, records the stop event, waits for it
  /// (`wait(stop)`, default cudaEventSynchronize) and returns the seconds between the events.
  double time(cudaStream_t stream, const std::function<void()>& enqueue,
              const std::function<void(cudaEvent_t stop)>& wait = nullptr);

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

/// A non-blocking CUDA stream of the current device, destroyed with the object.
class Stream {
 public:
  Stream();  ///< cudaStreamCreateWithFlags(cudaStreamNonBlocking); throws Fail
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

/// Device memory of the current device, freed with the object.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  ///< cudaMalloc; throws Fail
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
  }
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

/// Free memory of the current device (cudaMemGetInfo), in bytes.
size_t free_device_bytes();

}  // namespace clusterbench::gpu

/// A CUDA runtime call that must succeed: throws Fail{CB_GPU_ERROR, "call: text (name)"}.
#define CUDA_TRY(call)                                                                  \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess)                                                              \
      throw ::clusterbench::gpu::Fail{CB_GPU_ERROR,                                     \
                                      ::clusterbench::gpu::cuda_error_text(#call, e_)}; \
  } while (0)
