// A fake GPU plugin for the tests (bench/gpu/plugin_abi.h, CB_GPU_ABI_VERSION).
//
// By default its CUDA start fails as a broken node's does: the error text is $FAKE_GPU_ERROR
// (default CUDA's "no CUDA-capable device is detected"); with $FAKE_GPU_DRIVER_INSUFFICIENT set it
// reports a driver too old for its CUDA (a deployment error).
//
// With $FAKE_GPU_DEVICES=N it starts: N devices whose PCI bus ids are those of
// tests/fixtures/nvml/h100x8.json in order (or $FAKE_GPU_BUS_IDS, comma-separated), so the core's
// NVML telemetry (the fake libnvidia-ml.so) samples the matching GPU. Its operations (the kinds of
// the real plugin) report simulated times, and sleep for them (at most 20 ms a call) so that the
// telemetry sampler runs:
//   "gemm":        2MNK / ($FAKE_GPU_TFLOPS, default 800) per product; a real product of at most
//                  64 x 64 x K, the dtype's rounding emulated (fp32 accumulation), checked by
//                  compute/gemm_check.hpp at create and by cb_gpu_op_check ("checks" counts
//                  them); $FAKE_GPU_GEMM_FAULT=zero makes D zero;
//   "host_copy":   bytes moved / ($FAKE_GPU_COPY_GBPS, default 55) per copy; the host buffers
//                  really are copied once through a host "device" buffer and checked, as the real
//                  plugin does;
//   "device_copy": 2 x bytes / ($FAKE_GPU_HBM_GBPS, default 3000) per copy;
//   "pinned_h2d":  a host buffer of `bytes` (its address in the info); bytes / $FAKE_GPU_COPY_GBPS
//                  per copy;
//   "device":      the device's facts.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "compute/gemm_check.hpp"
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

thread_local std::string t_last_error;

int fail(int code, const std::string& text) {
  t_last_error = text;
  return code;
}

using json = nlohmann::json;

/// The facts every operation's info starts with, as the real plugin's Op base gives them.
json device_facts() {
  return {{"device", "NVIDIA H100 80GB HBM3 (fake plugin)"},
          {"pci_bus_id", bus_id(g_device)},
          {"compute_capability", "9.0"},
          {"device_bytes", 0}};
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

#ifdef FAKE_NCCL
extern "C" const char* fake_nccl_identity(void);
/// The identity of the stand-in libnccl.so.2 this plugin's NCCL calls reach (tests/fake_plugin/
/// fake_nccl.cpp): the one it was linked against, unless another plugin's was loaded first.
extern "C" const char* fake_plugin_nccl_identity(void) { return fake_nccl_identity(); }
#endif

extern "C" const char* cb_gpu_last_error(void) { return t_last_error.c_str(); }

extern "C" int cb_gpu_init(cb_gpu_info* info, char* err, size_t errlen) {
  *info = cb_gpu_info{};
  info->built_cuda = FAKE_BUILT_CUDA;
  if (std::getenv("FAKE_GPU_DRIVER_INSUFFICIENT")) {
    info->driver_version = 12020;
    std::snprintf(err, errlen,
                  "CUDA driver version is insufficient: the driver supports CUDA 12.2, this plugin "
                  "was built with CUDA 13.0; install a driver for CUDA 13.0 or newer");
    return fail(CB_GPU_DRIVER_INSUFFICIENT, err);
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
  return fail(CB_GPU_ERROR, err);
}

extern "C" int cb_gpu_set_device(int device, char* err, size_t errlen) {
  if (device >= 0 && device < fake_devices()) {
    g_device = device;
    return CB_GPU_OK;
  }
  std::snprintf(err, errlen, "cudaSetDevice: no CUDA-capable device is detected");
  return fail(CB_GPU_ERROR, err);
}

// --- operations ----------------------------------------------------------------------------------

namespace {

/// A fake operation: its info, and the simulated seconds of one operation.
struct FakeOp {
  json info = device_facts();
  double seconds_per_op = 0;
  std::vector<unsigned char> host;  // pinned_h2d's buffer
  std::string info_text;
  // gemm: the stand-in product D = A B (A m x k row-major, B k x n column-major, D m x n) and
  // its check's settings.
  clusterbench::compute::GemmShape small;
  std::vector<double> a, b, d;
  clusterbench::compute::GemmBound bound;
  int samples = 0;
  std::uint64_t seed = 0;
  long long checks = 0;
};

/// The stand-in product of `op.small` with the dtype's rounding: inputs rounded to the dtype,
/// products summed in float, the sum rounded to the output type.
void fake_product(const std::string& dtype, FakeOp& op) {
  namespace c = clusterbench::compute;
  const auto& s = op.small;
  op.a.resize(static_cast<size_t>(s.m * s.k));
  op.b.resize(static_cast<size_t>(s.k * s.n));
  for (size_t i = 0; i < op.a.size(); ++i)
    op.a[i] = c::gemm_round_input(dtype, c::gemm_input_value(op.seed, 0, i));
  for (size_t i = 0; i < op.b.size(); ++i)
    op.b[i] = c::gemm_round_input(dtype, c::gemm_input_value(op.seed, 1, i));
  op.d.assign(static_cast<size_t>(s.m * s.n), 0.0);
  const char* fault = std::getenv("FAKE_GPU_GEMM_FAULT");
  if (fault && std::string(fault) == "zero") return;
  for (long long i = 0; i < s.m; ++i)
    for (long long j = 0; j < s.n; ++j) {
      float acc = 0;
      for (long long p = 0; p < s.k; ++p)
        acc += static_cast<float>(op.a[static_cast<size_t>(i * s.k + p)]) *
               static_cast<float>(op.b[static_cast<size_t>(p + j * s.k)]);
      op.d[static_cast<size_t>(i + j * s.m)] = c::gemm_round_output(dtype, acc);
    }
}

/// compute/gemm_check.hpp over the stand-in D, as the real plugin's info()["verification"].
json fake_check(FakeOp& op) {
  const auto& s = op.small;
  auto v = clusterbench::compute::gemm_check(
      s, [&](long long i, long long p) { return op.a[static_cast<size_t>(i * s.k + p)]; },
      [&](long long p, long long j) { return op.b[static_cast<size_t>(p + j * s.k)]; },
      [&](long long i, long long j) { return op.d[static_cast<size_t>(i + j * s.m)]; }, op.samples,
      op.seed, op.bound);
  auto num = [](double x) { return std::isfinite(x) ? json(x) : json(); };
  return {{"samples", v.samples},
          {"max_ratio", num(v.max_ratio)},
          {"worst_i", v.worst_i},
          {"worst_j", v.worst_j},
          {"checksum_rows", v.checksum_rows},
          {"checksum_max_ratio", num(v.checksum_max_ratio)},
          {"checksum_worst_row", v.checksum_worst_row},
          {"checks", ++op.checks}};
}

void make_gemm(const json& p, FakeOp& op) {
  const std::string d = p.at("dtype");
  const bool wide = d == "tf32" || d == "fp32";
  const double m = p.at("m"), n = p.at("n"), k = p.at("k");
  // The device memory the real plugin reports: A and B of the input type, D of the output
  // type (the fake has no workspace).
  const double in_b = d == "fp8_e4m3" ? 1 : wide ? 4 : 2, out_b = wide ? 4 : 2;
  op.info["input_type"] = wide ? "fp32" : d;
  op.info["output_type"] = wide ? "fp32" : d == "fp8_e4m3" ? "bf16" : d;
  op.info["compute_type"] = d == "tf32" ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F";
  op.info["workspace_bytes"] = 0;
  op.info["device_bytes"] = in_b * (k * m + k * n) + out_b * m * n;
  op.info["algorithm"] = {{"id", 0},
                          {"tile", 0},
                          {"stages", 0},
                          {"splitk", 0},
                          {"swizzle", 0},
                          {"reduction_scheme", 0},
                          {"heuristic_returned", 1},
                          {"tried", 1},
                          {"selection_seconds_per_op", 0.0}};
  const long long pm = p.at("m"), pn = p.at("n"), pk = p.at("k");
  op.small = {std::min(pm, 64LL), std::min(pn, 64LL), pk};
  op.bound = clusterbench::compute::gemm_bound(d, p.value("fast_accum", false));
  op.info["fast_accum"] = p.value("fast_accum", false);
  op.samples = p.at("samples");
  op.seed = p.at("seed");
  fake_product(d, op);
  op.info["verification"] = fake_check(op);
  op.seconds_per_op = 2.0 * m * n * k / (env_double("FAKE_GPU_TFLOPS", 800) * 1e12);
}

void* address(const json& p, const char* key) {
  return reinterpret_cast<void*>(p.value(key, std::uintptr_t{0}));
}

int make_host_copy(const json& p, FakeOp& op) {
  const long long bytes = p.at("bytes");
  const std::string dir = p.at("direction");
  auto* src = static_cast<const unsigned char*>(address(p, "host_src"));
  auto* dst = static_cast<unsigned char*>(address(p, "host_dst"));
  if (bytes <= 0 || bytes % 16 || !src || (dir != "h2d" && !dst))
    return fail(CB_GPU_ERROR, "host_copy: bad parameters");
  std::vector<unsigned char> device(src, src + bytes);  // one H2D
  const unsigned char* got = device.data();
  if (dir != "h2d") {  // one D2H into the caller's destination
    std::memcpy(dst, device.data(), static_cast<size_t>(bytes));
    got = dst;
  }
  long long checked = 0, mismatches = 0;
  const long long words = bytes / 16;
  for (long long i = 0; i < words; i += std::max<long long>(1, words / 4096), ++checked)
    mismatches += std::memcmp(got + i * 16, src + i * 16, 16) ? 1 : 0;
  op.info["device_bytes"] = 2 * bytes;
  op.info["verification"] = {{"checked_words", checked}, {"mismatches", mismatches}};
  op.seconds_per_op = static_cast<double>(bytes) * (dir == "bidir" ? 2 : 1) /
                      (env_double("FAKE_GPU_COPY_GBPS", 55) * 1e9);
  return CB_GPU_OK;
}

void make_device_copy(const json& p, FakeOp& op) {
  long long bytes = p.value("bytes", 0LL);
  if (bytes <= 0) bytes = 1LL << 30;
  bytes = bytes / 16 * 16;
  const bool kernel = p.value("method", "kernel") == "kernel";
  op.info["l2_bytes"] = 50 << 20;
  op.info["bytes"] = bytes;
  op.info["device_bytes"] = 2 * bytes;
  op.info["blocks"] = kernel ? 132 * 8 : 0;
  op.info["threads"] = kernel ? 256 : 0;
  op.info["verification"] = {{"checked_words", 64 * 256}, {"mismatches", 0}};
  op.seconds_per_op =
      2.0 * static_cast<double>(bytes) / (env_double("FAKE_GPU_HBM_GBPS", 3000) * 1e9);
}

void make_pinned_h2d(const json& p, FakeOp& op) {
  const long long bytes = p.at("bytes");
  op.host.assign(static_cast<size_t>(bytes), 0);
  op.info["host_address"] = reinterpret_cast<std::uintptr_t>(op.host.data());
  op.info["bytes"] = bytes;
  op.info["device_bytes"] = bytes;
  op.seconds_per_op = static_cast<double>(bytes) / (env_double("FAKE_GPU_COPY_GBPS", 55) * 1e9);
}

int make(const std::string& kind, const json& p, FakeOp& op) {
  if (fake_devices() <= 0)
    return fail(CB_GPU_ERROR, "cudaGetDevice: no CUDA-capable device is detected");
  if (kind == "host_copy") return make_host_copy(p, op);
  if (kind == "gemm") {
    make_gemm(p, op);
  } else if (kind == "device_copy") {
    make_device_copy(p, op);
  } else if (kind == "pinned_h2d") {
    make_pinned_h2d(p, op);
  } else if (kind == "device") {
    op.info["memory_bytes"] = 85520809984LL;
    op.info["index"] = g_device;
  } else {
    return fail(CB_GPU_ERROR, "this GPU plugin has no operation '" + kind + "'");
  }
  return CB_GPU_OK;
}

}  // namespace

struct cb_gpu_op {
  FakeOp op;
};

extern "C" int cb_gpu_op_create(const char* kind, const char* params_json, cb_gpu_op** out) {
  *out = nullptr;
  auto handle = std::make_unique<cb_gpu_op>();
  try {
    int rc = make(kind, json::parse(params_json), handle->op);
    if (rc != CB_GPU_OK) return rc;
  } catch (const std::exception& e) {
    return fail(CB_GPU_ERROR, std::string(kind) + ": " + e.what());
  }
  handle->op.info_text = handle->op.info.dump();
  *out = handle.release();
  return CB_GPU_OK;
}

extern "C" const char* cb_gpu_op_info(const cb_gpu_op* op) { return op->op.info_text.c_str(); }

extern "C" int cb_gpu_op_run(cb_gpu_op* op, long long count, double* seconds) {
  *seconds = simulate(static_cast<double>(count) * op->op.seconds_per_op);
  return CB_GPU_OK;
}

extern "C" void cb_gpu_op_destroy(cb_gpu_op* op) { delete op; }

extern "C" int cb_gpu_op_check(cb_gpu_op* op) {
  if (op->op.small.k == 0) return fail(CB_GPU_ERROR, "this operation kind has no check");
  op->op.info["verification"] = fake_check(op->op);
  op->op.info_text = op->op.info.dump();
  return CB_GPU_OK;
}
