// Host side of the GPU plugin's generic operation ABI (bench/gpu/plugin_abi.h cb_gpu_op_*): one
// RAII object per operation, whose errors are thrown as OpError. The core turns them into a
// case's Waived or CallError (core/gpu_case.hpp); this folder knows nothing of cases.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "gpu/plugin_abi.h"

namespace clusterbench::gpu {

using json = nlohmann::json;

/// A failed plugin call. `code` is the ABI's (CB_GPU_ERROR, CB_GPU_UNSUPPORTED: waive,
/// CB_GPU_ABORTED, ...), `kind` the operation's kind, `call` the entry point
/// ("cb_gpu_op_create"), `text` the plugin's cb_gpu_last_error(). what() reads
/// "<call>(<kind>): <text>".
class OpError : public std::runtime_error {
 public:
  OpError(int code, std::string kind, std::string call, std::string text);
  int code;
  std::string kind, call, text;
};

/// One operation of the loaded plugin (load_gpu_plugin()), on the device current on the calling
/// thread. Destroyed with the object (cb_gpu_op_destroy). Move-only.
class Operation {
 public:
  /// Creates operation `kind` with `params` (cb_gpu_op_create): it allocates, decides, runs once
  /// and verifies. Throws OpError: CB_GPU_UNSUPPORTED where this GPU cannot run it, CB_GPU_ERROR
  /// for an error, and for a plugin that is not loaded (call "dlsym", the loader's error as
  /// text).
  Operation(std::string kind, const json& params);
  ~Operation();
  Operation(Operation&& o) noexcept;
  Operation& operator=(Operation&& o) noexcept;
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  /// What create measured and decided (cb_gpu_op_info), parsed once: "device", "pci_bus_id",
  /// "compute_capability", "device_bytes" and the kind's own facts.
  const json& info() const { return info_; }
  const std::string& kind() const { return kind_; }
  /// Runs `count` operations back to back and returns their seconds by CUDA events (the whole
  /// batch). Throws OpError.
  double run(long long count);
  /// Re-checks the output the last run left (cb_gpu_op_check) and re-reads info(); returns its
  /// "verification". Throws OpError (a plugin or kind without the check: CB_GPU_ERROR).
  const json& check();

 private:
  std::string kind_;
  cb_gpu_op* op_ = nullptr;
  json info_;
};

/// The facts of the calling thread's current device: Operation("device", {}).info(), with
/// "device", "pci_bus_id", "compute_capability", "memory_bytes", "index". Throws OpError.
json current_device();

/// Selects the calling thread's device (cb_gpu_set_device). Throws OpError (kind "device").
void set_device(int device);

/// The plugin's cb_gpu_last_error() on this thread; "" without a loaded plugin.
std::string last_error();

}  // namespace clusterbench::gpu
