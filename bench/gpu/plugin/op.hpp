// Inside libclusterbench_gpu.so: the operation behind the generic ABI (plugin_abi.h cb_gpu_op_*).
// A kind derives from Op and, in its own source file:
//  - does its whole create in its constructor: allocate, fill, decide, run once, verify, and
//    describe what it measured in info() (the base has put the device's facts there already);
//  - enqueues `count` operations on stream() in enqueue();
//  - registers itself by name: CB_GPU_OP(MyOp, "my_kind");
// The base owns the stream and the CUDA events and times run() (EventTimer); plugin_call maps
// errors to the ABI's codes. The plugin is one shared library built from its sources, so every
// registrar runs when it is loaded.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu/plugin/plugin.hpp"

namespace clusterbench::gpu {

using json = nlohmann::json;

/// One operation of some kind on the device that was current when it was created.
class Op {
 public:
  virtual ~Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  /// Runs `count` operations back to back on stream() between two CUDA events and waits for
  /// them; returns the events' elapsed seconds. Throws Fail.
  double run(long long count);
  /// info() as JSON text, made on the first call (what cb_gpu_op_info returns).
  const std::string& info_text();
  /// Re-checks the current output and refreshes info()'s verification (cb_gpu_op_check).
  void recheck() {
    check_output();
    info_text_.clear();
  }

 protected:
  /// Creates the stream and the events on the current device and puts its facts into info():
  /// "device" (name), "pci_bus_id", "compute_capability" ("9.0"), "device_bytes" (0 until the
  /// kind sets its own). Throws Fail.
  Op();
  /// Enqueues `count` operations on stream(), asynchronously.
  virtual void enqueue(long long count) = 0;
  /// Checks the output the last run left, into info(); throws Fail. Default: no check.
  virtual void check_output() { throw Fail{CB_GPU_ERROR, "this operation kind has no check"}; }
  cudaStream_t stream() const { return stream_.get(); }
  const cudaDeviceProp& prop() const { return prop_; }
  /// Compute capability as major * 10 + minor (90 for 9.0).
  int sm() const { return prop_.major * 10 + prop_.minor; }
  /// The timer of run(), for a kind that times work of its own during create.
  EventTimer& timer() { return timer_; }
  json& info() { return info_; }

 private:
  Stream stream_;
  EventTimer timer_;
  cudaDeviceProp prop_{};
  json info_ = json::object();
  std::string info_text_;
};

/// Makes an operation of one kind from its params.
using OpFactory = std::unique_ptr<Op> (*)(const json& params);

/// Registers `kind` (OpRegistrar does, at load time). A second registration of a kind replaces
/// nothing: the first one stays.
void register_op(const char* kind, OpFactory make);

/// Creates an operation of `kind`. Throws Fail{CB_GPU_ERROR} naming the known kinds for an
/// unknown one, and whatever the kind's constructor throws.
std::unique_ptr<Op> make_op(const std::string& kind, const json& params);

/// The registered kinds, sorted.
std::vector<std::string> op_kinds();

/// Registers T (constructible from const json&) under `kind` when the plugin is loaded.
template <class T>
struct OpRegistrar {
  explicit OpRegistrar(const char* kind) {
    register_op(kind, [](const json& p) -> std::unique_ptr<Op> { return std::make_unique<T>(p); });
  }
};

}  // namespace clusterbench::gpu

/// Registers operation class `Type` under the name `kind`; place once in the kind's source file.
#define CB_GPU_OP(Type, kind) \
  static ::clusterbench::gpu::OpRegistrar<Type> cb_gpu_op_registrar_##Type(kind)  // NOLINT
