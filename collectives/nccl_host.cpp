// The NCCL backend as the core sees it (collective.hpp): the plugin's "Collectives over NCCL"
// entry points (bench/gpu/plugin_abi.h, collectives/nccl_backend.cpp) looked up with dlsym. The
// core never links NCCL; this file holds no NCCL call.
#include <cstdlib>
#include <cstring>

#include "collectives/collective.hpp"
#include "error.hpp"
#include "gpu/plugin_abi.h"
#include "gpu_plugin.hpp"

namespace clusterbench::collectives {

json path_env(const std::string& path) {
  if (path == "nvlink" || path == "internode") return json::object();
  if (path == "network") return {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}};
  throw InputError("--set collectives.path: unknown path '" + path +
                   "' (nvlink, network, internode)");
}

namespace {

template <typename F>
F lookup(const char* name) {
  auto* f = reinterpret_cast<F>(load_gpu_plugin().symbol(name));
  if (!f)
    throw_call_error("clusterbench", "dlsym", "the GPU plugin has no NCCL (built without it?)",
                     name, __FILE__, __LINE__);
  return f;
}

/// A plugin result: CB_GPU_ABORTED ends the run; any other failure fails the case.
void check(int rc, const char* call, const char* err, const char* file, int line) {
  if (rc == CB_GPU_OK) return;
  if (rc == CB_GPU_ABORTED)
    throw AbortRun(std::string(call) + ": " + err + " (" + origin_host() + " rank " +
                   std::to_string(origin_rank()) + ")");
  throw_call_error("NCCL", std::to_string(rc), err, call, file, line);
}
#define CB_PLUGIN(call) check((call), #call, err, __FILE__, __LINE__)

int coll_code(const Collective& c) {
  const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                         "reduce",     "alltoall",   "sendrecv"};
  for (int i = 0; i < 7; ++i)
    if (std::strcmp(c.name, names[i]) == 0) return i;  // CB_COLL_* order
  throw std::logic_error(std::string("NCCL backend: unknown collective ") + c.name);
}

int dtype_code(Dtype t) {
  return t == Dtype::f32 ? CB_DTYPE_FLOAT : t == Dtype::f16 ? CB_DTYPE_HALF : CB_DTYPE_BFLOAT16;
}

class NcclBackend : public Backend {
 public:
  NcclBackend(const Context& ctx, const std::string& path, double timeout_s)
      : rank_(ctx.world_rank()), size_(ctx.world_size()), path_(path), env_(path_env(path)) {
    for (const auto& [k, v] : env_.items()) setenv(k.c_str(), v.get<std::string>().c_str(), 1);
    char err[1024] = {0};
    unsigned char id[CB_NCCL_ID_BYTES] = {0};
    std::string id_bytes;
    if (ctx.is_root()) {
      CB_PLUGIN(lookup<decltype(&cb_nccl_unique_id)>("cb_nccl_unique_id")(id, err, sizeof err));
      id_bytes.assign(reinterpret_cast<const char*>(id), sizeof id);
    }
    id_bytes = ctx.bcast(id_bytes);
    CHECK_MSG(id_bytes.size() == CB_NCCL_ID_BYTES, "clusterbench", "ncclUniqueId not received");
    std::memcpy(id, id_bytes.data(), sizeof id);
    auto init = lookup<decltype(&cb_nccl_comm_init)>("cb_nccl_comm_init");
    CB_PLUGIN(init(id, size_, rank_, timeout_s, &comm_, err, sizeof err));
    run_ = lookup<decltype(&cb_nccl_run)>("cb_nccl_run");
    alloc_ = lookup<decltype(&cb_nccl_alloc)>("cb_nccl_alloc");
    free_ = lookup<decltype(&cb_nccl_free)>("cb_nccl_free");
    copy_ = lookup<decltype(&cb_nccl_copy)>("cb_nccl_copy");
  }
  ~NcclBackend() override {
    if (comm_) lookup<decltype(&cb_nccl_comm_destroy)>("cb_nccl_comm_destroy")(comm_);
  }
  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void* alloc(std::size_t bytes) override {
    char err[1024] = {0};
    void* p = nullptr;
    CB_PLUGIN(alloc_(bytes, &p, err, sizeof err));
    return p;
  }
  void release(void* p) override { free_(p); }
  void upload(void* dst, const void* host, std::size_t bytes) override {
    char err[1024] = {0};
    CB_PLUGIN(copy_(dst, host, bytes, 1, err, sizeof err));
  }
  void download(void* host, const void* src, std::size_t bytes) override {
    char err[1024] = {0};
    CB_PLUGIN(copy_(host, src, bytes, 0, err, sizeof err));
  }
  double run(const Collective& c, Dtype t, const void* send, void* recv, const Layout& l, int root,
             bool, long long ops) override {
    char err[1024] = {0};
    double seconds = -1;
    size_t count = static_cast<size_t>(l.send_count);
    CB_PLUGIN(run_(comm_, coll_code(c), dtype_code(t), send, recv, count,
                   static_cast<size_t>(l.block), root, ops, &seconds, err, sizeof err));
    return seconds;
  }
  bool supports_inplace(const Collective&) const override { return true; }
  long long inplace_result_offset(const Collective&, const Layout& l) const override {
    return l.recv_offset_inplace;
  }
  json facts() const override {
    return {{"backend_version", std::to_string(load_gpu_plugin().info.nccl_version)},
            {"path", path_},
            {"nccl_env", env_}};
  }

 private:
  int rank_, size_;
  std::string path_;
  json env_;
  cb_nccl_comm* comm_ = nullptr;
  decltype(&cb_nccl_run) run_ = nullptr;
  decltype(&cb_nccl_alloc) alloc_ = nullptr;
  decltype(&cb_nccl_free) free_ = nullptr;
  decltype(&cb_nccl_copy) copy_ = nullptr;
};

}  // namespace

Backend& nccl_backend(const Context& ctx, const std::string& path, double timeout_s) {
  // One communicator for the run, created in the first NCCL case by every rank together (NCCL
  // init costs seconds; nccl-tests, too, initialises once). Never destroyed: at exit CUDA may be
  // torn down already.
  static NcclBackend* backend = nullptr;
  if (!backend) backend = new NcclBackend(ctx, path, timeout_s);
  return *backend;
}

}  // namespace clusterbench::collectives
