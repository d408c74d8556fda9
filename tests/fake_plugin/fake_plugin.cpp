// A fake GPU plugin for the tests (bench/gpu/plugin_abi.h).
//
// By default its CUDA start fails as a broken node's does: the error text is $FAKE_GPU_ERROR
// (default CUDA's "no CUDA-capable device is detected"); with $FAKE_GPU_DRIVER_INSUFFICIENT set it
// reports a driver too old for its CUDA (a deployment error).
//
// With $FAKE_GPU_DEVICES=N it starts: N devices whose PCI bus ids are those of
// tests/fixtures/nvml/h100x8.json in order (or $FAKE_GPU_BUS_IDS, comma-separated), so the core's
// NVML telemetry (the fake libnvidia-ml.so) samples the matching GPU. Its operations report
// simulated times, and sleep for them (at most 20 ms a call) so that the telemetry sampler runs:
//   compute.gemm:               2MNK / ($FAKE_GPU_TFLOPS, default 800) per product; verified;
//   compute.host_device_copy:   bytes moved / ($FAKE_GPU_COPY_GBPS, default 55) per copy; the
//                               host buffers really are copied once through a host "device"
//                               buffer and checked, as the real plugin does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu/plugin_abi.h"

namespace {

int g_device = 0;

int fake_devices() {
  const char* n = std::getenv("FAKE_GPU_DEVICES");
  return n && *n ? std::atoi(n) : 0;
}

double env_double(const char* name, double def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : def;
}

std::string bus_id(int device) {
  std::vector<std::string> ids = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0",
                                  "00000000:5D:00.0", "00000000:9A:00.0", "00000000:AB:00.0",
                                  "00000000:BA:00.0", "00000000:DB:00.0"};
  if (const char* list = std::getenv("FAKE_GPU_BUS_IDS")) {
    ids.clear();
    std::string s(list);
    for (size_t at = 0; at <= s.size();) {
      size_t comma = s.find(',', at);
      if (comma == std::string::npos) comma = s.size();
      ids.push_back(s.substr(at, comma - at));
      at = comma + 1;
    }
  }
  return device >= 0 && device < static_cast<int>(ids.size()) ? ids[device] : "";
}

void names(char* name, size_t name_len, char* bus, size_t bus_len) {
  std::snprintf(name, name_len, "NVIDIA H100 80GB HBM3 (fake plugin)");
  std::snprintf(bus, bus_len, "%s", bus_id(g_device).c_str());
}

// Sleeps for a simulated duration, at most 20 ms, and returns it.
double simulate(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(std::min(seconds, 0.02)));
  return seconds;
}

}  // namespace

// The CUDA version it claims to be built with; the tests build one per version (compute.cmake).
#ifndef FAKE_BUILT_CUDA
#define FAKE_BUILT_CUDA 13000
#endif

extern "C" int cb_gpu_abi_version(void) { return CB_GPU_ABI_VERSION; }

extern "C" int cb_gpu_built_cuda_version(void) { return FAKE_BUILT_CUDA; }

extern "C" int cb_gpu_init(cb_gpu_info* info, char* err, size_t errlen) {
  *info = cb_gpu_info{};
  info->built_cuda = FAKE_BUILT_CUDA;
  if (std::getenv("FAKE_GPU_DRIVER_INSUFFICIENT")) {
    info->driver_version = 12020;
    std::snprintf(err, errlen,
                  "CUDA driver version is insufficient: the driver supports CUDA 12.2, this plugin "
                  "was built with CUDA 13.0; install a driver for CUDA 13.0 or newer");
    return CB_GPU_DRIVER_INSUFFICIENT;
  }
  if (fake_devices() > 0) {
    info->device_count = fake_devices();
    info->runtime_version = info->driver_version = 13000;
    info->cublaslt_version = 130000;
    return CB_GPU_OK;
  }
  const char* text = std::getenv("FAKE_GPU_ERROR");
  std::snprintf(err, errlen, "cudaGetDeviceCount: %s",
                text ? text : "no CUDA-capable device is detected (cudaErrorNoDevice)");
  return CB_GPU_ERROR;
}

extern "C" int cb_gpu_set_device(int device, char* err, size_t errlen) {
  if (device >= 0 && device < fake_devices()) {
    g_device = device;
    return CB_GPU_OK;
  }
  std::snprintf(err, errlen, "cudaSetDevice: no CUDA-capable device is detected");
  return CB_GPU_ERROR;
}

extern "C" int cb_gpu_current_device(cb_gpu_device_info* info, char*, size_t) {
  *info = cb_gpu_device_info{};
  names(info->device_name, sizeof info->device_name, info->pci_bus_id, sizeof info->pci_bus_id);
  return CB_GPU_OK;
}

// --- compute.gemm --------------------------------------------------------------------------------

struct cb_gemm {
  double flop = 0;
};

extern "C" int cb_gpu_gemm_create(const cb_gemm_params* p, cb_gemm** out, cb_gemm_info* info, char*,
                                  size_t) {
  *info = cb_gemm_info{};
  const std::string d = p->dtype;
  const bool wide = d == "tf32" || d == "fp32";
  std::snprintf(info->input_type, sizeof info->input_type, "%s", wide ? "fp32" : d.c_str());
  std::snprintf(info->output_type, sizeof info->output_type, "%s",
                wide              ? "fp32"
                : d == "fp8_e4m3" ? "bf16"
                                  : d.c_str());
  std::snprintf(info->compute_type, sizeof info->compute_type, "%s",
                d == "tf32" ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F");
  names(info->device_name, sizeof info->device_name, info->pci_bus_id, sizeof info->pci_bus_id);
  info->sm_major = 9;
  info->algos_returned = info->algos_tried = 1;
  info->samples_checked = p->verify_samples;
  info->max_rel_error = 1e-7;
  *out = new cb_gemm{2.0 * static_cast<double>(p->m) * static_cast<double>(p->n) *
                     static_cast<double>(p->k)};
  return CB_GPU_OK;
}

extern "C" int cb_gpu_gemm_run(cb_gemm* g, long long count, double* seconds, char*, size_t) {
  *seconds =
      simulate(static_cast<double>(count) * g->flop / (env_double("FAKE_GPU_TFLOPS", 800) * 1e12));
  return CB_GPU_OK;
}

extern "C" void cb_gpu_gemm_destroy(cb_gemm* g) { delete g; }

// --- compute.host_device_copy
// ---------------------------------------------------------------------

struct cb_hcopy {
  double moved = 0;
};

extern "C" int cb_gpu_hcopy_create(const cb_hcopy_params* p, cb_hcopy** out, cb_hcopy_info* info,
                                   char* err, size_t errlen) {
  *out = nullptr;
  *info = cb_hcopy_info{};
  names(info->device_name, sizeof info->device_name, info->pci_bus_id, sizeof info->pci_bus_id);
  if (p->bytes <= 0 || p->bytes % 16 || !p->host_src ||
      (p->direction != CB_HCOPY_H2D && !p->host_dst)) {
    std::snprintf(err, errlen, "cb_gpu_hcopy_create: bad parameters");
    return CB_GPU_ERROR;
  }
  const size_t bytes = static_cast<size_t>(p->bytes);
  std::vector<unsigned char> device(bytes);
  std::memcpy(device.data(), p->host_src, bytes);  // one H2D
  const void* got = device.data();
  if (p->direction != CB_HCOPY_H2D) {  // one D2H into the caller's destination
    std::memcpy(p->host_dst, device.data(), bytes);
    got = p->host_dst;
  }
  const long long words = p->bytes / 16;
  for (long long i = 0; i < words; i += std::max<long long>(1, words / 4096)) {
    info->mismatches += std::memcmp(static_cast<const unsigned char*>(got) + i * 16,
                                    static_cast<const unsigned char*>(p->host_src) + i * 16, 16)
                            ? 1
                            : 0;
    ++info->checked;
  }
  *out = new cb_hcopy{static_cast<double>(p->bytes) * (p->direction == CB_HCOPY_BIDIR ? 2 : 1)};
  return CB_GPU_OK;
}

extern "C" int cb_gpu_hcopy_run(cb_hcopy* c, long long count, double* seconds, char*, size_t) {
  *seconds = simulate(static_cast<double>(count) * c->moved /
                      (env_double("FAKE_GPU_COPY_GBPS", 55) * 1e9));
  return CB_GPU_OK;
}

extern "C" void cb_gpu_hcopy_destroy(cb_hcopy* c) { delete c; }
