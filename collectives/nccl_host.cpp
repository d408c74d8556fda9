// The NCCL backend as the core sees it (collective.hpp): the plugin's "Collectives over NCCL"
// entry points (bench/gpu/plugin_abi.h, collectives/nccl_backend.cpp) looked up with dlsym. The
// core never links NCCL; this file holds no NCCL call.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "collectives/collective.hpp"
#include "collectives/nccl_log.hpp"
#include "core/error.hpp"
#include "gpu/loader.hpp"
#include "gpu/operation.hpp"
#include "gpu/plugin_abi.h"

namespace clusterbench::collectives {

json path_env(const std::string& path) {
  if (path == "nvlink" || path == "internode") return json::object();
  if (path == "network") return {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}};
  throw InputError("--set collectives.path: unknown path '" + path +
                   "' (nvlink, network, internode)");
}

json nccl_env(const json& params) {
  json env = path_env(params.value("path", "nvlink"));
  if (params.value("algo", "auto") == "ring") env["NCCL_ALGO"] = "Ring";
  if (params.contains("nccl_ib_gid_index"))
    env["NCCL_IB_GID_INDEX"] = params.at("nccl_ib_gid_index").get<std::string>();
  if (params.contains("nccl_ib_tc")) env["NCCL_IB_TC"] = params.at("nccl_ib_tc").get<std::string>();
  return env;
}

bool nccl_checks_inplace(const Collective& c) {
  return std::strcmp(c.name, "alltoall") != 0 && std::strcmp(c.name, "sendrecv") != 0;
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

/// A plugin result: CB_GPU_ABORTED ends the run; any other failure fails the case. The text is
/// the plugin's last error on this thread.
void check(int rc, const char* call, const char* file, int line) {
  if (rc == CB_GPU_OK) return;
  const std::string err = gpu::last_error();
  if (rc == CB_GPU_ABORTED)
    throw AbortRun(std::string(call) + ": " + err + " (" + origin_host() + " rank " +
                   std::to_string(origin_rank()) + ")");
  throw_call_error("NCCL", std::to_string(rc), err, call, file, line);
}
#define CB_PLUGIN(call) check((call), #call, __FILE__, __LINE__)

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

/// NCCL's own logging into a file, on around a probe and off again (NCCL_DEBUG=INFO,
/// NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE, then cb_nccl_reset_debug), whatever the user's NCCL_DEBUG:
/// theirs (the cluster architecture guide sets NCCL_DEBUG=INFO) is put back after each probe,
/// and NCCL re-reads it. Without ncclResetDebugInit (NCCL < 2.19) only the init can be logged,
/// and the logging stays on for it (INIT, NET and ENV only: nothing per operation); there, a user's
/// NCCL_DEBUG is left alone, as it could not be given back.
class NcclLogging {
 public:
  NcclLogging() : user_set_(std::getenv("NCCL_DEBUG") != nullptr) {
    // One harmless reset before NCCL logs anything tells whether this NCCL can.
    auto reset = reinterpret_cast<int (*)()>(load_gpu_plugin().symbol("cb_nccl_reset_debug"));
    if (reset && reset() == CB_GPU_OK) reset_ = reset;
  }
  /// Why nothing can be logged, or "".
  std::string unavailable() const {
    return user_set_ && !reset_ ? "not run: NCCL_DEBUG is set in the environment and this NCCL "
                                  "(< 2.19) cannot give the user's logging back after a probe"
                                : "";
  }
  bool can_reset() const { return reset_ != nullptr; }
  /// Starts logging `subsys` into a fresh file; false when it cannot.
  bool begin(const char* subsys, bool need_reset) {
    if (!unavailable().empty()) return false;
    bool reset = reset_ != nullptr;
    if (need_reset && !reset) return false;
    path_ =
        "/tmp/clusterbench-nccl-" + std::to_string(getpid()) + "-" + std::to_string(++n_) + ".log";
    for (auto& [name, value] : saved_) {  // the user's, put back by end()
      const char* v = std::getenv(name.c_str());
      value = v ? std::optional<std::string>(v) : std::nullopt;
    }
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", subsys, 1);
    setenv("NCCL_DEBUG_FILE", path_.c_str(), 1);
    if (reset) reset_();
    on_ = true;
    return true;
  }
  /// Stops logging (where NCCL can), the user's settings back, and returns what the file says;
  /// the file is removed.
  NcclLogFacts end() {
    if (!on_) return {};
    on_ = false;
    if (reset_) {
      for (const auto& [name, value] : saved_)
        value ? (void)setenv(name.c_str(), value->c_str(), 1) : (void)unsetenv(name.c_str());
      reset_();
    }
    std::ifstream in(path_);
    NcclLogFacts f = parse_nccl_log(in);
    std::remove(path_.c_str());
    return f;
  }

 private:
  bool user_set_;
  int (*reset_)() = nullptr;
  bool on_ = false;
  int n_ = 0;
  std::string path_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_ = {
      {"NCCL_DEBUG", std::nullopt},
      {"NCCL_DEBUG_SUBSYS", std::nullopt},
      {"NCCL_DEBUG_FILE", std::nullopt}};
};

class NcclBackend : public Backend {
 public:
  NcclBackend(const Context& ctx, const json& env, double timeout_s)
      : rank_(ctx.world_rank()), size_(ctx.world_size()), env_(env) {
    for (const auto& [k, v] : env_.items()) setenv(k.c_str(), v.get<std::string>().c_str(), 1);
    // The init is the first probe: version, transports, network, NVLS, as NCCL logs them.
    bool logging = log_.begin(log_.can_reset() ? "INIT,NET,GRAPH,ENV" : "INIT,NET,ENV", false);
    unsigned char id[CB_NCCL_ID_BYTES] = {0};
    std::string id_bytes;
    if (ctx.is_root()) {
      CB_PLUGIN(lookup<decltype(&cb_nccl_unique_id)>("cb_nccl_unique_id")(id));
      id_bytes.assign(reinterpret_cast<const char*>(id), sizeof id);
    }
    id_bytes = ctx.bcast(id_bytes);
    CHECK_MSG(id_bytes.size() == CB_NCCL_ID_BYTES, "clusterbench", "ncclUniqueId not received");
    std::memcpy(id, id_bytes.data(), sizeof id);
    auto init = lookup<decltype(&cb_nccl_comm_init)>("cb_nccl_comm_init");
    CB_PLUGIN(init(id, size_, rank_, timeout_s, &comm_));
    run_ = lookup<decltype(&cb_nccl_run)>("cb_nccl_run");
    alloc_ = lookup<decltype(&cb_nccl_alloc)>("cb_nccl_alloc");
    free_ = lookup<decltype(&cb_nccl_free)>("cb_nccl_free");
    copy_ = lookup<decltype(&cb_nccl_copy)>("cb_nccl_copy");
    compare_ = lookup<decltype(&cb_nccl_compare)>("cb_nccl_compare");
    if (logging) init_facts_ = to_json(log_.end());
    if (!log_.unavailable().empty()) init_facts_["probe"] = log_.unavailable();
  }
  const json& env() const { return env_; }
  ~NcclBackend() override {
    if (comm_) lookup<decltype(&cb_nccl_comm_destroy)>("cb_nccl_comm_destroy")(comm_);
  }
  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void* alloc(std::size_t bytes) override {
    void* p = nullptr;
    CB_PLUGIN(alloc_(bytes, &p));
    return p;
  }
  void release(void* p) override { free_(p); }
  void upload(void* dst, const void* host, std::size_t bytes) override {
    CB_PLUGIN(copy_(comm_, dst, host, bytes, 1));
  }
  void download(void* host, const void* src, std::size_t bytes) override {
    CB_PLUGIN(copy_(comm_, host, src, bytes, 0));
  }
  double run(const Collective& c, Dtype t, const void* send, void* recv, const Layout& l, int root,
             bool, long long ops) override {
    double seconds = -1;
    size_t count = static_cast<size_t>(l.send_count);
    CB_PLUGIN(run_(comm_, coll_code(c), dtype_code(t), send, recv, count,
                   static_cast<size_t>(l.block), root, ops, &seconds));
    return seconds;
  }
  long long count_differing(const void* data, const void* ref, long long count, Dtype t) override {
    long long differing = -1;
    CB_PLUGIN(compare_(comm_, data, ref, static_cast<size_t>(count), dtype_code(t), &differing));
    return differing;
  }
  bool supports_inplace(const Collective&) const override { return true; }
  bool checks_inplace(const Collective& c) const override { return nccl_checks_inplace(c); }
  long long inplace_result_offset(const Collective&, const Layout& l) const override {
    return l.recv_offset_inplace;
  }
  json facts() const override {
    std::string version = init_facts_.value("version", "");
    return {{"backend_version",
             version.empty() ? std::to_string(load_gpu_plugin().info.nccl_version) : version},
            {"nccl_env", env_},
            {"nccl", init_facts_}};
  }
  json probe(const Collective& c, Dtype t, const void* send, void* recv, const Layout& l,
             int root) override {
    std::string func = nccl_func_name(c.name);
    // alltoall and sendrecv are grouped ncclSend/ncclRecv: no collective algorithm, every byte
    // crosses a link as counted.
    if (func.empty()) return {{"nccl_algorithm", "P2P"}, {"busbw_is_wire", true}};
    bool logging = log_.begin("TUNING", true);
    try {
      run(c, t, send, recv, l, root, false, 1);
    } catch (...) {
      log_.end();  // never leave per-operation logging on for the cases after
      throw;
    }
    if (!logging) {
      std::string why = log_.unavailable().empty()
                            ? "unknown: this NCCL cannot switch its logging on (ncclResetDebugInit)"
                            : "unknown: probe " + log_.unavailable();
      return {{"nccl_algorithm", why}};
    }
    NcclLogFacts f = log_.end();
    const NcclChoice* ch = last_choice(f, func);
    if (!ch) {
      // NCCL logs the choice on rank 0 only; other ranks' records are not written.
      if (rank_ != 0) return json::object();
      return {{"nccl_algorithm", "unknown: NCCL logged no choice for " + func}};
    }
    return {{"nccl_algorithm", ch->algo},
            {"nccl_protocol", ch->proto},
            {"nccl_channels", ch->channels},
            {"busbw_is_wire", algorithm_is_wire(ch->algo)}};
  }

 private:
  int rank_, size_;
  json env_;
  json init_facts_ = json::object();
  NcclLogging log_;
  cb_nccl_comm* comm_ = nullptr;
  decltype(&cb_nccl_run) run_ = nullptr;
  decltype(&cb_nccl_alloc) alloc_ = nullptr;
  decltype(&cb_nccl_free) free_ = nullptr;
  decltype(&cb_nccl_copy) copy_ = nullptr;
  decltype(&cb_nccl_compare) compare_ = nullptr;
};

}  // namespace

Backend& nccl_backend(const Context& ctx, const json& env, double timeout_s) {
  // One communicator for the run, created in the first NCCL case by every rank together (NCCL
  // init costs seconds; nccl-tests, too, initialises once). Never destroyed: at exit CUDA may be
  // torn down already.
  static NcclBackend* backend = nullptr;
  if (!backend) backend = new NcclBackend(ctx, env, timeout_s);
  if (backend->env() != env)
    throw std::runtime_error("NCCL reads its environment once per run: this case asks for " +
                             env.dump() + " but the communicator has " + backend->env().dump() +
                             " (give path, algo, ib_gid_index and ib_tc to all collectives)");
  return *backend;
}

}  // namespace clusterbench::collectives
