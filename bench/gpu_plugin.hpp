// Loader of libclusterbench_gpu.so: one binary starts on any node, GPU or not (DESIGN.md).
#pragma once

#include <string>

#include "gpu/plugin_abi.h"

namespace clusterbench {

/// Outcome of loading and initialising the plugin.
struct GpuPlugin {
  bool built = CLUSTERBENCH_HAVE_CUDA;  ///< whether this build has a plugin at all
  bool loaded = false;                  ///< dlopen + ABI check succeeded
  bool initialised = false;             ///< cb_gpu_init succeeded
  bool driver_insufficient = false;     ///< deployment error: exit 2
  std::string path;                     ///< file tried
  std::string error;                    ///< dlerror() or the CUDA error text
  cb_gpu_info info{};
  void* handle = nullptr;
  /// Resolves a plugin symbol; nullptr if absent or not loaded.
  void* symbol(const char* name) const;
};

/// Loads the plugin once per process: $CLUSTERBENCH_GPU_PLUGIN, else libclusterbench_gpu.so
/// beside the executable. Only call where GPUs are on the PCI bus. Never throws.
const GpuPlugin& load_gpu_plugin();

/// Version number as "major.minor" (13000 -> "13.0").
std::string cuda_version_string(int v);

}  // namespace clusterbench
