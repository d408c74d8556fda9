// dlopen of libclusterbench_gpu.so. Its absence or failure is recorded, never fatal here: the
// runner turns it into `failed` GPU cases (or exit 2 for an insufficient driver).
#include "gpu_plugin.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>

namespace clusterbench {

namespace {
std::string exe_dir() {
  char buf[PATH_MAX] = {0};
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}
}  // namespace

std::string cuda_version_string(int v) {
  if (v <= 0) return "";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

void* GpuPlugin::symbol(const char* name) const {
  return handle ? dlsym(handle, name) : nullptr;
}

const GpuPlugin& load_gpu_plugin() {
  static GpuPlugin plugin;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* override_path = std::getenv("CLUSTERBENCH_GPU_PLUGIN");
    plugin.path = override_path && *override_path ? override_path
                                                  : exe_dir() + "/libclusterbench_gpu.so";
    if (override_path && *override_path) plugin.built = true;  // a plugin was named: try it
    if (!plugin.built) {
      plugin.error = "this build has no GPU plugin (nvcc was not found at build time)";
      return;
    }
    plugin.handle = dlopen(plugin.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!plugin.handle) {
      const char* e = dlerror();
      plugin.error = e ? e : ("cannot load " + plugin.path);
      return;
    }
    auto abi = reinterpret_cast<int (*)()>(plugin.symbol("cb_gpu_abi_version"));
    auto init = reinterpret_cast<int (*)(cb_gpu_info*, char*, size_t)>(plugin.symbol("cb_gpu_init"));
    if (!abi || !init || abi() != CB_GPU_ABI_VERSION) {
      plugin.error = plugin.path + ": not a clusterbench GPU plugin of ABI version " +
                     std::to_string(CB_GPU_ABI_VERSION);
      return;
    }
    plugin.loaded = true;
    char err[1024] = {0};
    int rc = init(&plugin.info, err, sizeof err);
    if (rc == CB_GPU_OK) {
      plugin.initialised = true;
    } else {
      plugin.error = err;
      plugin.driver_insufficient = rc == CB_GPU_DRIVER_INSUFFICIENT;
    }
  });
  return plugin;
}

}  // namespace clusterbench
