// The CUDA 12 plugin's kernel launches (ptx_module.hpp): the driver's module API reached through
// the runtime (cudaGetDriverEntryPoint), so the plugin links only libcudart.so.12 as before. A
// driver error is returned as the runtime error of the same number: CUDA 12 numbers them alike.
#include "gpu/plugin/ptx_module.hpp"

#include <cuda.h>

#include <map>
#include <mutex>
#include <string>

namespace clusterbench::gpu {

namespace {

using LoadData = CUresult (*)(CUmodule*, const void*);
using GetFunction = CUresult (*)(CUfunction*, CUmodule, const char*);
using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void**, void**);

/// The three driver entry points, looked up once.
struct Driver {
  LoadData load = nullptr;
  GetFunction get = nullptr;
  LaunchKernel launch = nullptr;
  cudaError_t error = cudaSuccess;
};

template <class F>
cudaError_t entry_point(const char* symbol, F& out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaError_t e = cudaGetDriverEntryPoint(symbol, &fn, cudaEnableDefault, &found)) return e;
  if (found != cudaDriverEntryPointSuccess || !fn) return cudaErrorSymbolNotFound;
  out = reinterpret_cast<F>(fn);
  return cudaSuccess;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    if ((r.error = entry_point("cuModuleLoadData", r.load)) ||
        (r.error = entry_point("cuModuleGetFunction", r.get)) ||
        (r.error = entry_point("cuLaunchKernel", r.launch)))
      r.load = nullptr;
    return r;
  }();
  return d;
}

/// The lowered name of name expression `name`, nullptr when the module has no such kernel.
const char* lowered_name(const char* name) {
  for (int i = 0; i < kPtxKernelCount; ++i)
    if (std::strcmp(kPtxKernels[i].name, name) == 0) return kPtxKernels[i].lowered;
  return nullptr;
}

/// The modules and kernels resolved so far, per device: a module lives in the device's primary
/// context, which the runtime keeps for the process's lifetime (it is never unloaded).
struct Loaded {
  std::mutex mutex;
  std::map<int, CUmodule> modules;
  std::map<std::pair<int, std::string>, CUfunction> functions;
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

/// The module on device `dev`, loaded there first (caller holds the lock).
cudaError_t module_of(int dev, CUmodule& out) {
  const Driver& d = driver();
  if (!d.load) return d.error;
  auto mod = loaded().modules.find(dev);
  if (mod == loaded().modules.end()) {
    // The device's primary context, current on this thread, before the module goes into it.
    if (cudaError_t e = cudaSetDevice(dev)) return e;
    CUmodule m = nullptr;
    if (CUresult r = d.load(&m, kPtxText)) return static_cast<cudaError_t>(r);
    mod = loaded().modules.emplace(dev, m).first;
  }
  out = mod->second;
  return cudaSuccess;
}

/// The kernel `name` on device `dev`, loading the module there first; a driver error otherwise.
cudaError_t function_of(const char* name, int dev, CUfunction& out) {
  std::lock_guard<std::mutex> lock(loaded().mutex);
  auto key = std::make_pair(dev, std::string(name));
  if (auto it = loaded().functions.find(key); it != loaded().functions.end()) {
    out = it->second;
    return cudaSuccess;
  }
  const char* lowered = lowered_name(name);
  if (!lowered) return cudaErrorSymbolNotFound;
  CUmodule m = nullptr;
  if (cudaError_t e = module_of(dev, m)) return e;
  if (CUresult r = driver().get(&out, m, lowered)) return static_cast<cudaError_t>(r);
  loaded().functions.emplace(key, out);
  return cudaSuccess;
}

}  // namespace

cudaError_t ptx_load_module(int dev) {
  std::lock_guard<std::mutex> lock(loaded().mutex);
  CUmodule m = nullptr;
  return module_of(dev, m);
}

cudaError_t ptx_launch(const char* name, unsigned grid, unsigned block, cudaStream_t stream,
                       const PtxParams& params) {
  int dev = 0;
  if (cudaError_t e = cudaGetDevice(&dev)) return e;
  // The driver launches in the thread's current context: the runtime makes the device's primary
  // context current on a thread at its first runtime call that needs it, which a launch through
  // the driver is not. Once per thread and device.
  thread_local int bound = -1;
  if (bound != dev) {
    if (cudaError_t e = cudaSetDevice(dev)) return e;
    bound = dev;
  }
  CUfunction f = nullptr;
  if (cudaError_t e = function_of(name, dev, f)) return e;
  size_t size = params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<unsigned char*>(params.data()),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  if (CUresult r = driver().launch(f, grid, 1, 1, block, 1, 1, 0,
                                   reinterpret_cast<CUstream>(stream), nullptr, extra))
    return static_cast<cudaError_t>(r);
  return cudaGetLastError();
}

}  // namespace clusterbench::gpu
