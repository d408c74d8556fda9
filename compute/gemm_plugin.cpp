// Host side of the GPU plugin's GEMM entry points: see compute/gemm_plugin.hpp.
#include "compute/gemm_plugin.hpp"

#include "core/error.hpp"
#include "gpu/loader.hpp"

namespace clusterbench::compute {

PluginGemmFns PluginGemmFns::load() {
  const GpuPlugin& plugin = load_gpu_plugin();
  PluginGemmFns f;
  f.create = reinterpret_cast<decltype(f.create)>(plugin.symbol("cb_gpu_gemm_create"));
  f.run = reinterpret_cast<decltype(f.run)>(plugin.symbol("cb_gpu_gemm_run"));
  f.destroy = reinterpret_cast<decltype(f.destroy)>(plugin.symbol("cb_gpu_gemm_destroy"));
  CHECK_MSG(
      f.create && f.run && f.destroy, "GPU plugin",
      plugin.path + " lacks cb_gpu_gemm_create/run/destroy (a plugin older than compute.gemm)");
  return f;
}

cb_gemm* create_plugin_gemm(const PluginGemmFns& fns, const std::string& dtype, const GemmShape& s,
                            std::uint64_t seed, int samples, int algos, cb_gemm_info* info) {
  cb_gemm_params prm{};
  prm.dtype = dtype.c_str();
  prm.m = s.m, prm.n = s.n, prm.k = s.k;
  prm.max_algos = algos;
  prm.verify_samples = samples;
  prm.seed = seed;
  cb_gemm* g = nullptr;
  char err[1024] = {0};
  int rc = fns.create(&prm, &g, info, err, sizeof err);
  if (rc != CB_GPU_OK && g) fns.destroy(g);
  if (rc == CB_GPU_UNSUPPORTED) throw Waived(err);
  if (rc != CB_GPU_OK)
    throw_call_error("cuBLASLt", std::to_string(rc), err, "cb_gpu_gemm_create", __FILE__, __LINE__);
  return g;
}

GemmVerification plugin_gemm_verification(const cb_gemm_info& info, const std::string& dtype) {
  GemmVerification v;
  v.samples = info.samples_checked;
  v.max_rel_error = info.max_rel_error;
  v.worst_i = info.worst_i;
  v.worst_j = info.worst_j;
  v.bound = gemm_error_bound(dtype);
  return v;
}

double run_plugin_gemm(const PluginGemmFns& fns, cb_gemm* g, long long n) {
  double seconds = -1;
  char err[1024] = {0};
  int rc = fns.run(g, n, &seconds, err, sizeof err);
  if (rc != CB_GPU_OK)
    throw_call_error("cuBLASLt", std::to_string(rc), err, "cb_gpu_gemm_run", __FILE__, __LINE__);
  return seconds;
}

}  // namespace clusterbench::compute
