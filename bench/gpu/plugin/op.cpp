// The generic operation ABI (plugin_abi.h cb_gpu_op_*) over the registered Op kinds (op.hpp),
// and the "device" kind: the current device's facts, for a caller that needs them before it
// creates its real operation (compute.host_device_copy places its host memory by them).
#include "gpu/plugin/op.hpp"

#include <map>

namespace clusterbench::gpu {

namespace {

std::map<std::string, OpFactory>& registry() {
  static std::map<std::string, OpFactory> kinds;  // built while the plugin's statics initialise
  return kinds;
}

/// "device": nothing but the facts the base class puts into info() (and "memory_bytes", the
/// device's total memory); run() times an empty batch.
class DeviceFacts : public Op {
 public:
  explicit DeviceFacts(const json&) {
    info()["memory_bytes"] = static_cast<long long>(prop().totalGlobalMem);
    info()["index"] = device_index();
  }

 private:
  static int device_index() {
    int dev = 0;
    CUDA_TRY(cudaGetDevice(&dev));
    return dev;
  }
  void enqueue(long long) override {}
};

CB_GPU_OP(DeviceFacts, "device");

}  // namespace

Op::Op() {
  int dev = 0;
  CUDA_TRY(cudaGetDevice(&dev));
  CUDA_TRY(cudaGetDeviceProperties(&prop_, dev));
  char bus[32] = {0};
  CUDA_TRY(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
  info_["device"] = prop_.name;
  info_["pci_bus_id"] = bus;
  info_["compute_capability"] = std::to_string(prop_.major) + "." + std::to_string(prop_.minor);
  info_["device_bytes"] = 0;
}

double Op::run(long long count) {
  return timer_.time(stream(), [&] { enqueue(count); });
}

const std::string& Op::info_text() {
  if (info_text_.empty()) info_text_ = info_.dump();
  return info_text_;
}

void register_op(const char* kind, OpFactory make) { registry().emplace(kind, make); }

std::vector<std::string> op_kinds() {
  std::vector<std::string> out;
  for (const auto& [kind, make] : registry()) out.push_back(kind);
  return out;
}

std::unique_ptr<Op> make_op(const std::string& kind, const json& params) {
  auto it = registry().find(kind);
  if (it == registry().end()) {
    std::string known;
    for (const auto& k : op_kinds()) known += (known.empty() ? "" : ", ") + k;
    throw Fail{CB_GPU_ERROR,
               "this GPU plugin has no operation '" + kind + "' (it has: " + known + ")"};
  }
  try {
    return it->second(params);
  } catch (const json::exception& e) {  // a missing or mistyped parameter
    throw Fail{CB_GPU_ERROR, kind + " " + params.dump() + ": " + e.what()};
  }
}

}  // namespace clusterbench::gpu

/// The ABI's opaque handle: one operation of any kind.
struct cb_gpu_op {
  std::unique_ptr<clusterbench::gpu::Op> op;
};

extern "C" int cb_gpu_op_create(const char* kind, const char* params_json, cb_gpu_op** out) {
  using namespace clusterbench::gpu;
  *out = nullptr;
  return plugin_call([&] {
    json params = json::parse(params_json && *params_json ? params_json : "{}");
    auto handle = std::make_unique<cb_gpu_op>();
    handle->op = make_op(kind ? kind : "", params);
    handle->op->info_text();
    *out = handle.release();
  });
}

extern "C" const char* cb_gpu_op_info(const cb_gpu_op* op) {
  return op ? op->op->info_text().c_str() : "{}";
}

extern "C" int cb_gpu_op_run(cb_gpu_op* op, long long count, double* seconds) {
  return clusterbench::gpu::plugin_call([&] { *seconds = op->op->run(count); });
}

extern "C" void cb_gpu_op_destroy(cb_gpu_op* op) { delete op; }

extern "C" int cb_gpu_op_check(cb_gpu_op* op) {
  return clusterbench::gpu::plugin_call([&] { op->op->recheck(); });
}
