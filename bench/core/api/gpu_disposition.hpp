// Whether GPU cases run on this rank, and if not, why (docs/design.md "GPU plugin").
#pragma once

#include <string>

#include "records/records.hpp"

namespace clusterbench {

class Context;

/// What becomes of this rank's GPU cases.
enum class GpuState {
  run,     ///< the plugin is loaded, CUDA started, the device selected
  waived,  ///< no NVIDIA GPU on the PCI bus, or a build without CUDA: `waived` records
  failed,  ///< GPUs on the bus but NVML, the plugin or CUDA failed: `failed` records
};

/// "run", "waived" or "failed": the record status GPU cases take (run: "ok").
const char* gpu_state_name(GpuState s);

/// The disposition with its reason: the exact error text where GPUs fail.
struct GpuDisposition {
  GpuState state = GpuState::waived;
  std::string reason;
  /// A plugin built for a newer CUDA than the driver supports: a deployment error, exit 2.
  bool deployment_error = false;
  bool runs() const { return state == GpuState::run; }
};

/// Decides the disposition from the node's EnvRecord and, where GPUs are on the bus, the plugin
/// (loaded once per process). `load_plugin` false stops before the plugin (tests).
GpuDisposition gpu_disposition(const EnvRecord& env, bool load_plugin = true);

/// The disposition of this rank: gpu_disposition(), then, when it runs, cudaSetDevice of the
/// rank's GPU (the local rank; device 0 when CUDA sees one device). A failed cudaSetDevice
/// makes it `failed` with the error text.
GpuDisposition rank_gpu_disposition(const EnvRecord& env, const Context& ctx);

/// Selects `device` for the calling thread (CUDA's current device is per thread). "" on success,
/// else the error text.
std::string select_gpu(int device);

/// The device this rank uses: its local rank, or 0 when CUDA sees one device.
int rank_gpu_device(const Context& ctx);

/// Writes the plugin's facts (status, CUDA devices, runtime, cuBLAS and NCCL versions) into the
/// node's EnvRecord; a node without GPUs on its bus says the plugin was not loaded.
void add_plugin_facts(EnvRecord& env);

}  // namespace clusterbench
