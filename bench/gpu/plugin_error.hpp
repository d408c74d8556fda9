// Errors inside libclusterbench_gpu.so and how they leave it through the C ABI (plugin_abi.h):
// code throws Fail (or any std::exception); every extern "C" entry point runs its body through
// plugin_call, which turns the exception into a return code and the message into `err`.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <string>

#include "gpu/plugin_abi.h"

namespace clusterbench::gpu {

/// An error leaving the plugin: CB_GPU_ERROR (failed), CB_GPU_UNSUPPORTED (waived), ...
struct Fail {
  int code;
  std::string text;
};

/// Runs `body`; returns CB_GPU_OK, or the Fail's code (CB_GPU_ERROR for other exceptions) with
/// the message copied into err[errlen]. No exception crosses the C ABI.
template <typename Body>
int plugin_call(char* err, size_t errlen, Body&& body) {
  auto put = [&](const std::string& text) {
    if (err && errlen) std::snprintf(err, errlen, "%s", text.c_str());
  };
  try {
    body();
    return CB_GPU_OK;
  } catch (const Fail& f) {
    put(f.text);
    return f.code;
  } catch (const std::exception& e) {
    put(e.what());
    return CB_GPU_ERROR;
  }
}

}  // namespace clusterbench::gpu

/// A CUDA runtime call that must succeed: throws Fail{CB_GPU_ERROR, "call: text (name)"}.
#define CUDA_TRY(call)                                                                             \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess)                                                                         \
      throw ::clusterbench::gpu::Fail{                                                             \
          CB_GPU_ERROR,                                                                            \
          std::string(#call) + ": " + cudaGetErrorString(e_) + " (" + cudaGetErrorName(e_) + ")"}; \
  } while (0)
