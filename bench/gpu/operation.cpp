// Host side of the generic operation ABI: see operation.hpp.
#include "gpu/operation.hpp"

#include <type_traits>
#include <utility>

#include "gpu/loader.hpp"

namespace clusterbench::gpu {

namespace {

/// The plugin's operation entry points, looked up once per process.
struct OpAbi {
  decltype(&cb_gpu_op_create) create = nullptr;
  decltype(&cb_gpu_op_info) info = nullptr;
  decltype(&cb_gpu_op_run) run = nullptr;
  decltype(&cb_gpu_op_destroy) destroy = nullptr;
  decltype(&cb_gpu_set_device) set_device = nullptr;
  decltype(&cb_gpu_last_error) last_error = nullptr;
  std::string missing;  ///< why they cannot be used; "" when they can
};

const OpAbi& abi() {
  static const OpAbi fns = [] {
    const GpuPlugin& p = load_gpu_plugin();
    OpAbi f;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p.symbol(name));
    };
    get(f.create, "cb_gpu_op_create");
    get(f.info, "cb_gpu_op_info");
    get(f.run, "cb_gpu_op_run");
    get(f.destroy, "cb_gpu_op_destroy");
    get(f.set_device, "cb_gpu_set_device");
    get(f.last_error, "cb_gpu_last_error");
    if (!p.handle)
      f.missing = "GPU plugin " + p.path + " is not loaded: " + p.error;
    else if (!f.create || !f.info || !f.run || !f.destroy || !f.set_device || !f.last_error)
      f.missing = "GPU plugin " + p.path + " lacks the operation entry points of ABI version " +
                  std::to_string(CB_GPU_ABI_VERSION);
    return f;
  }();
  return fns;
}

const OpAbi& usable_abi(const std::string& kind) {
  const OpAbi& f = abi();
  if (!f.missing.empty()) throw OpError(CB_GPU_ERROR, kind, "dlsym", f.missing);
  return f;
}

}  // namespace

OpError::OpError(int code_, std::string kind_, std::string call_, std::string text_)
    : std::runtime_error(call_ + "(" + kind_ + "): " + text_),
      code(code_),
      kind(std::move(kind_)),
      call(std::move(call_)),
      text(std::move(text_)) {}

Operation::Operation(std::string kind, const json& params) : kind_(std::move(kind)) {
  const OpAbi& f = usable_abi(kind_);
  int rc = f.create(kind_.c_str(), params.dump().c_str(), &op_);
  if (rc != CB_GPU_OK) {
    if (op_) f.destroy(op_);
    op_ = nullptr;
    throw OpError(rc, kind_, "cb_gpu_op_create", f.last_error());
  }
  info_ = json::parse(f.info(op_));
}

Operation::~Operation() {
  if (op_) abi().destroy(op_);
}

Operation::Operation(Operation&& o) noexcept
    : kind_(std::move(o.kind_)), op_(std::exchange(o.op_, nullptr)), info_(std::move(o.info_)) {}

Operation& Operation::operator=(Operation&& o) noexcept {
  std::swap(kind_, o.kind_);
  std::swap(op_, o.op_);
  std::swap(info_, o.info_);
  return *this;
}

double Operation::run(long long count) {
  const OpAbi& f = usable_abi(kind_);
  double seconds = -1;
  int rc = f.run(op_, count, &seconds);
  if (rc != CB_GPU_OK) throw OpError(rc, kind_, "cb_gpu_op_run", f.last_error());
  return seconds;
}

const json& Operation::check() {
  const OpAbi& f = usable_abi(kind_);
  using CheckFn = int (*)(cb_gpu_op*);
  auto fn = reinterpret_cast<CheckFn>(load_gpu_plugin().symbol("cb_gpu_op_check"));
  if (!fn) throw OpError(CB_GPU_ERROR, kind_, "dlsym", "the GPU plugin has no cb_gpu_op_check");
  int rc = fn(op_);
  if (rc != CB_GPU_OK) throw OpError(rc, kind_, "cb_gpu_op_check", f.last_error());
  info_ = json::parse(f.info(op_));
  return info_.at("verification");
}

json current_device() { return Operation("device", json::object()).info(); }

void set_device(int device) {
  const OpAbi& f = usable_abi("device");
  char err[1024] = {0};
  int rc = f.set_device(device, err, sizeof err);
  if (rc != CB_GPU_OK) throw OpError(rc, "device", "cb_gpu_set_device", err);
}

std::string last_error() {
  const OpAbi& f = abi();
  return f.last_error ? f.last_error() : "";
}

}  // namespace clusterbench::gpu
