// GPU plugins' loader: one binary starts on any node, GPU or not (docs/design.md). An install can
// hold several plugins built against different CUDA versions (libclusterbench_gpu.so, e.g. CUDA 13,
// and libclusterbench_gpu_cuda12.so, CUDA 12.2+); the loader picks the one the driver supports.
#pragma once

#include <string>
#include <vector>

#include "gpu/plugin_abi.h"

namespace clusterbench {

/// Outcome of loading and initialising the plugin.
struct GpuPlugin {
  bool built = CLUSTERBENCH_HAVE_CUDA;  ///< whether this build has a plugin at all
  bool loaded = false;                  ///< dlopen + ABI check succeeded
  bool initialised = false;             ///< cb_gpu_init succeeded
  bool driver_insufficient = false;     ///< deployment error: exit 2
  std::string path;                     ///< file chosen (or tried)
  std::string error;                    ///< dlerror() or the CUDA error text
  /// The plugins considered, e.g. "libclusterbench_gpu.so (CUDA 13.0)", for the messages.
  std::vector<std::string> present;
  int driver_cuda = 0;  ///< CUDA version the driver supports (12020 = 12.2); 0: unknown
  cb_gpu_info info{};
  void* handle = nullptr;
  /// Resolves a plugin symbol; nullptr if absent or not loaded.
  void* symbol(const char* name) const;
};

/// Loads the plugin once per process and never throws. Only call where GPUs are on the PCI bus.
/// $CLUSTERBENCH_GPU_PLUGIN names the one file to use. Otherwise every libclusterbench_gpu.so and
/// libclusterbench_gpu_*.so in $CLUSTERBENCH_GPU_PLUGIN_DIR (default: beside the executable) is a
/// candidate, and choose_gpu_plugin() picks by the driver's CUDA version: NVML's
/// nvmlSystemGetCudaDriverVersion, else libcuda's cuDriverGetVersion.
const GpuPlugin& load_gpu_plugin();

/// One plugin file the loader considered.
struct GpuPluginCandidate {
  std::string path;
  int built_cuda = 0;  ///< cb_gpu_built_cuda_version(), e.g. 12020; 0: the plugin does not say
  std::string error;   ///< why it cannot be used (dlopen's text, wrong ABI); "" when it loaded
  /// Its kernels are PTX that the driver compiles (side file "kernels=ptx"): a driver older than
  /// its CUDA cannot read them, so CUDA minor-version compatibility does not apply.
  bool ptx = false;
};

/// The plugins to try, best first, for a driver that supports CUDA `driver_cuda` (0: unknown).
struct GpuPluginChoice {
  std::vector<int> order;            ///< indices into the candidates; empty: none can be used
  bool driver_insufficient = false;  ///< plugins loaded, but every one needs a newer driver
  std::string reason;                ///< why `order` is empty (names the driver needed)
};

/// Chooses among `candidates` (pure; the loader and the tests call it):
///  1. loadable plugins built for a CUDA <= the driver's, newest first;
///  2. then those of the driver's CUDA major built for a newer minor (CUDA minor-version
///     compatibility: a CUDA 12.x build runs on any driver >= 525), oldest first, except a plugin
///     whose kernels are PTX (it needs its own CUDA's driver);
///  3. then those that do not say their CUDA version (cb_gpu_init decides).
/// With the driver's version unknown every loadable plugin is tried, newest first. When plugins
/// load but none fits, `driver_insufficient` is set (exit 2) and `reason` names the driver's CUDA
/// (and `driver_version`, e.g. "535.161.08", where known), the driver each plugin needs
/// (min_driver_branch) and the plugins present. When none loads, `reason` joins the load errors.
GpuPluginChoice choose_gpu_plugin(int driver_cuda, const std::string& driver_version,
                                  const std::vector<GpuPluginCandidate>& candidates);

/// Oldest Linux driver branch that runs code built with CUDA `cuda` (e.g. 13000), from the CUDA
/// Compatibility guide's minor-version table: CUDA 13.x >= 580, 12.x >= 525, 11.x >= 450; 0 for
/// other majors. (The 12.2 GA driver was 535; the seed's clusters run 535.)
int min_driver_branch(int cuda);

/// The oldest driver branch candidate `c` runs on: min_driver_branch of its CUDA, or for PTX
/// kernels the first branch of its exact CUDA version (12.2: 535; 13.0: 580).
int min_driver_branch(const GpuPluginCandidate& c);

/// Loads and initialises one plugin out of `files`, as load_gpu_plugin() does but without caching
/// (the tests call it). Each candidate is described by its side file FILE.cuda ("clusterbench-gpu-
/// plugin abi=N cuda=NNNNN", written at build time), so only the chosen one is loaded: two plugins
/// built against two NCCLs would otherwise share one libnccl.so.2 (both builds' SONAME). A
/// candidate without a side file is loaded, read and unloaded before the next is looked at. The
/// chosen ones are loaded one at a time; one whose CUDA start says the driver is too old is
/// unloaded before the next is tried.
GpuPlugin open_gpu_plugin(const std::vector<std::string>& files, int driver_cuda,
                          const std::string& driver_version);

/// The candidate plugin files of `dir`: libclusterbench_gpu.so and libclusterbench_gpu_*.so, in
/// name order; {dir + "/libclusterbench_gpu.so"} when there are none (its dlopen error is then
/// the message).
std::vector<std::string> find_gpu_plugins(const std::string& dir);

/// Version number as "major.minor" (13000 -> "13.0").
std::string cuda_version_string(int v);

/// "major.minor" text ("12.2") as a CUDA version number (12020); 0 when it is not one.
int parse_cuda_version(const std::string& text);

}  // namespace clusterbench
