// CUDA runtime: devices, versions, errors, device memory and page-locked host memory.
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "node.hpp"
#include "state.hpp"

using namespace cbsim;

namespace {

/// The checks every call that needs a context makes; cudaSuccess when it may go on.
cudaError_t context_error(State& st) {
  if (cudaError_t e = init_error()) return e;
  return st.sticky;
}

const Gpu& gpu(int d) { return node().gpus[static_cast<size_t>(d)]; }
int device_count() { return static_cast<int>(node().gpus.size()); }

void fill_uuid(const std::string& uuid, cudaUUID_t& out) {
  std::memset(&out, 0, sizeof out);
  int n = 0;
  for (size_t i = 0; i + 1 < uuid.size() && n < 16; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(uuid[i])) ||
        !std::isxdigit(static_cast<unsigned char>(uuid[i + 1])))
      continue;
    out.bytes[n++] = static_cast<char>(std::strtol(uuid.substr(i, 2).c_str(), nullptr, 16));
    ++i;
  }
}

void fill_properties(const Gpu& g, cudaDeviceProp& p) {
  std::memset(&p, 0, sizeof p);
  std::snprintf(p.name, sizeof p.name, "%s", g.name.c_str());
  fill_uuid(g.uuid, p.uuid);
  p.totalGlobalMem = static_cast<size_t>(g.memory_bytes);
  p.sharedMemPerBlock = 48 << 10;
  p.regsPerBlock = 65536;
  p.warpSize = 32;
  p.memPitch = 2147483647;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsDim[0] = p.maxThreadsDim[1] = 1024, p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647, p.maxGridSize[1] = p.maxGridSize[2] = 65535;
  p.totalConstMem = 65536;
  p.major = g.major, p.minor = g.minor;
  p.textureAlignment = 512, p.texturePitchAlignment = 32;
  p.multiProcessorCount = g.sm_count;
  p.canMapHostMemory = 1, p.concurrentKernels = 1, p.ECCEnabled = 1;
  p.pciBusID = static_cast<int>(g.bus);
  p.pciDeviceID = static_cast<int>(g.device);
  p.pciDomainID = static_cast<int>(g.domain);
  p.asyncEngineCount = 2, p.unifiedAddressing = 1, p.memoryBusWidth = 5120;
  p.l2CacheSize = g.l2_bytes;
  p.maxThreadsPerMultiProcessor = 2048;
  p.streamPrioritiesSupported = 1;
  p.sharedMemPerMultiprocessor = 228 << 10;
  p.regsPerMultiprocessor = 65536;
  p.managedMemory = 1, p.concurrentManagedAccess = 1, p.computePreemptionSupported = 1;
  p.cooperativeLaunch = 1, p.sharedMemPerBlockOptin = 227 << 10;
  p.maxBlocksPerMultiProcessor = 32, p.hostRegisterSupported = 1;
  p.memoryPoolsSupported = 1, p.gpuDirectRDMASupported = 1, p.clusterLaunch = g.major >= 9;
  p.deviceNumaId = -1, p.hostNumaId = -1;
}

constexpr std::uint64_t kAllocAlign = 512;  // cudaMalloc's granularity as accounted here

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 0;
  if (cudaError_t e = init_error()) return fail(e);
  *count = device_count();
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = current_device();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  current_device() = device;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = node().loaded ? node().driver_cuda : 0;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!prop) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  fill_properties(gpu(device), *prop);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!pciBusId || len <= 0) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  const Gpu& g = gpu(device);
  std::snprintf(pciBusId, static_cast<size_t>(len), "%04X:%02X:%02X.0", g.domain, g.bus, g.device);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  const int d = current_device();
  const auto total = static_cast<std::uint64_t>(gpu(d).memory_bytes);
  const std::uint64_t taken = st.dev[static_cast<size_t>(d)].used +
                              static_cast<std::uint64_t>(node().context_reserve_bytes);
  *total_bytes = total;
  *free_bytes = taken < total ? total - taken : 0;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.sticky != cudaSuccess) return st.sticky;
  cudaError_t e = last_error();
  last_error() = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  return st.sticky != cudaSuccess ? st.sticky : last_error();
}

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!devPtr) return fail(cudaErrorInvalidValue);
  *devPtr = nullptr;
  if (cudaError_t e = capture_guard(st)) return fail(e);
  if (size == 0) return cudaSuccess;
  const int d = current_device();
  DeviceState& ds = st.dev[static_cast<size_t>(d)];
  const std::uint64_t accounted = (size + kAllocAlign - 1) / kAllocAlign * kAllocAlign;
  const auto total = static_cast<std::uint64_t>(gpu(d).memory_bytes);
  const auto reserve = static_cast<std::uint64_t>(node().context_reserve_bytes);
  if (ds.used + accounted + reserve > total) return fail(cudaErrorMemoryAllocation);
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t reserved = (size + page - 1) / page * page;
  void* p = mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return fail(cudaErrorMemoryAllocation);
  Alloc a{d, reinterpret_cast<std::uint64_t>(p), size, reserved, make_content(size)};
  st.allocs[a.base] = a;
  ds.used += accounted;
  ds.counters.peak_device_bytes =
      std::max(ds.counters.peak_device_bytes, static_cast<long long>(ds.used));
  *devPtr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* devPtr) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!devPtr) return cudaSuccess;
  if (cudaError_t e = capture_guard(st)) return fail(e);
  auto it = st.allocs.find(reinterpret_cast<std::uint64_t>(devPtr));
  if (it == st.allocs.end()) return fail(cudaErrorInvalidValue);
  const int d = it->second.device;
  // cudaFree waits for the device's work (which may use the memory).
  wait_for(lock, st, [&](double& t) {
    for (Stream* s : st.streams)
      if (s->device == d && !s->queue.empty()) return false;
    if (!legacy_stream(st, d)->queue.empty()) return false;
    t = 0;
    return true;
  });
  it = st.allocs.find(reinterpret_cast<std::uint64_t>(devPtr));
  if (it == st.allocs.end()) return fail(cudaErrorInvalidValue);
  Alloc& a = it->second;
  munmap(devPtr, a.reserved);
  st.dev[static_cast<size_t>(d)].used -= (a.size + kAllocAlign - 1) / kAllocAlign * kAllocAlign;
  st.allocs.erase(it);
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!pHost || flags > 0xF) return fail(cudaErrorInvalidValue);
  *pHost = nullptr;
  if (cudaError_t e = capture_guard(st)) return fail(e);
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  void* p = std::aligned_alloc(page, (std::max<size_t>(size, 1) + page - 1) / page * page);
  if (!p) return fail(cudaErrorMemoryAllocation);
  st.host[reinterpret_cast<std::uint64_t>(p)] =
      HostRange{reinterpret_cast<std::uint64_t>(p), size, true};
  *pHost = p;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return cudaHostAlloc(ptr, size, 0); }

cudaError_t cudaFreeHost(void* ptr) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!ptr) return cudaSuccess;
  if (cudaError_t e = capture_guard(st)) return fail(e);
  auto it = st.host.find(reinterpret_cast<std::uint64_t>(ptr));
  if (it == st.host.end() || !it->second.allocated) return fail(cudaErrorInvalidValue);
  st.host.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!ptr || size == 0 || flags > 0xF) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = capture_guard(st)) return fail(e);
  const auto p = reinterpret_cast<std::uint64_t>(ptr);
  for (const auto& [base, r] : st.host)
    if (p < r.base + std::max<std::uint64_t>(r.size, 1) && r.base < p + size)
      return fail(cudaErrorHostMemoryAlreadyRegistered);
  st.host[p] = HostRange{p, size, false};
  return cudaSuccess;
}

cudaError_t cudaHostUnregister(void* ptr) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (cudaError_t e = capture_guard(st)) return fail(e);
  auto it = st.host.find(reinterpret_cast<std::uint64_t>(ptr));
  if (it == st.host.end() || it->second.allocated) return fail(cudaErrorHostMemoryNotRegistered);
  st.host.erase(it);
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* ptr) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!attr) return fail(cudaErrorInvalidValue);
  std::memset(attr, 0, sizeof *attr);
  attr->device = -1;
  const auto p = reinterpret_cast<std::uint64_t>(ptr);
  if (Alloc* a = find_alloc(st, p)) {
    attr->type = cudaMemoryTypeDevice;
    attr->device = a->device;
    attr->devicePointer = const_cast<void*>(ptr);
  } else if (pinned(st, p, 1)) {
    attr->type = cudaMemoryTypeHost;
    attr->device = current_device();
    attr->hostPointer = attr->devicePointer = const_cast<void*>(ptr);
  } else {
    attr->type = cudaMemoryTypeUnregistered;
    attr->hostPointer = const_cast<void*>(ptr);
  }
  return cudaSuccess;
}

}  // extern "C"
