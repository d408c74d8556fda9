// GPU disposition (gpu_disposition.hpp).
#include "core/api/gpu_disposition.hpp"

#include "core/api/context.hpp"
#include "gpu/loader.hpp"
#include "gpu/operation.hpp"

namespace clusterbench {

const char* gpu_state_name(GpuState s) {
  switch (s) {
    case GpuState::run:
      return "run";
    case GpuState::waived:
      return "waived";
    case GpuState::failed:
      return "failed";
  }
  return "?";
}

GpuDisposition gpu_disposition(const EnvRecord& env, bool load_plugin) {
  GpuDisposition d;
  if (env.gpu_status.on_pci == 0 && env.gpus.empty()) {
    d.reason = "no NVIDIA GPU on the PCI bus" +
               (env.fs_root.empty() || env.fs_root == "/" ? std::string() : " of " + env.fs_root);
    return d;
  }
  d.state = GpuState::failed;
  if (env.gpu_status.nvml != "ok" && CLUSTERBENCH_HAVE_NVML) {
    d.reason = "NVIDIA GPUs on the PCI bus but NVML failed: " + env.gpu_status.nvml;
    return d;
  }
  if (!load_plugin) {
    d.state = GpuState::run;
    return d;
  }
  const GpuPlugin& p = load_gpu_plugin();
  if (!p.built) {
    d.state = GpuState::waived;  // a build without CUDA waives, with the reason
    d.reason = p.error;
  } else if (!p.initialised) {
    d.reason = "GPU plugin " + p.path + ": " + p.error;
    d.deployment_error = p.driver_insufficient;
  } else if (p.info.device_count == 0) {
    d.reason = "NVIDIA GPUs on the PCI bus but CUDA sees none";
  } else {
    d.state = GpuState::run;
  }
  return d;
}

std::string select_gpu(int device) {
  try {
    gpu::set_device(device);
  } catch (const gpu::OpError& e) {
    return e.text;
  }
  return "";
}

int rank_gpu_device(const Context& ctx) {
  return load_gpu_plugin().info.device_count == 1 ? 0 : ctx.local_rank();
}

GpuDisposition rank_gpu_disposition(const EnvRecord& env, const Context& ctx) {
  GpuDisposition d = gpu_disposition(env);
  if (!d.runs()) return d;
  const int dev = rank_gpu_device(ctx);
  if (std::string err = select_gpu(dev); !err.empty()) {
    d.state = GpuState::failed;
    d.reason = "cudaSetDevice(" + std::to_string(dev) + "): " + err;
  }
  return d;
}

void add_plugin_facts(EnvRecord& env) {
  if (env.gpu_status.on_pci == 0 && env.gpus.empty()) {
    env.gpu_status.plugin =
        CLUSTERBENCH_HAVE_CUDA ? "not loaded: no NVIDIA GPU on the PCI bus" : "not built";
    return;
  }
  const GpuPlugin& p = load_gpu_plugin();
  env.gpu_status.plugin = p.initialised ? "ok" : p.error;
  env.gpu_status.cuda_devices = p.info.device_count;
  env.versions.cuda_runtime = cuda_version_string(p.info.runtime_version);
  if (p.info.cublaslt_version) env.versions.cublas = std::to_string(p.info.cublaslt_version);
  if (p.info.nccl_version) env.versions.nccl = std::to_string(p.info.nccl_version);
}

}  // namespace clusterbench
