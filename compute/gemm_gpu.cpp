// compute.gemm in the GPU plugin: cuBLASLt matmul with FP32 accumulation (bench/gpu/plugin_abi.h
// cb_gpu_gemm_*). The core-side benchmark (compute/gemm.cpp) times cb_gpu_gemm_run through the
// framework and judges the verification this file measures.
#include "compute/gemm_gpu.hpp"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "compute/gemm.hpp"
#include "gpu/plugin_abi.h"
#include "gpu/plugin_error.hpp"

namespace {

using clusterbench::compute::gpu::FillType;

using clusterbench::gpu::Fail;

#define LT_TRY(call)                                                                            \
  do {                                                                                          \
    cublasStatus_t s_ = (call);                                                                 \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                            \
      throw Fail{CB_GPU_ERROR, std::string(#call) + ": " + cublasLtGetStatusString(s_) + " (" + \
                                   cublasLtGetStatusName(s_) + ")"};                            \
  } while (0)

/// What one dtype name means to cuBLASLt.
struct DtypeSpec {
  cudaDataType_t ab, d;
  cublasComputeType_t compute;
  FillType fill;
  size_t ab_bytes, d_bytes;
  const char *in_name, *out_name, *compute_name;
  int min_sm;  // major*10 + minor
};

DtypeSpec dtype_spec(const std::string& dtype) {
  if (dtype == "fp16")
    return {
        CUDA_R_16F,           CUDA_R_16F, CUBLAS_COMPUTE_32F, FillType::f16, 2, 2, "fp16", "fp16",
        "CUBLAS_COMPUTE_32F", 0};
  if (dtype == "bf16")
    return {
        CUDA_R_16BF,          CUDA_R_16BF, CUBLAS_COMPUTE_32F, FillType::bf16, 2, 2, "bf16", "bf16",
        "CUBLAS_COMPUTE_32F", 80};
  if (dtype == "tf32")
    return {CUDA_R_32F,
            CUDA_R_32F,
            CUBLAS_COMPUTE_32F_FAST_TF32,
            FillType::f32,
            4,
            4,
            "fp32",
            "fp32",
            "CUBLAS_COMPUTE_32F_FAST_TF32",
            80};
  if (dtype == "fp32")
    return {
        CUDA_R_32F,           CUDA_R_32F, CUBLAS_COMPUTE_32F, FillType::f32, 4, 4, "fp32", "fp32",
        "CUBLAS_COMPUTE_32F", 0};
  if (dtype == "fp8_e4m3")
    return {CUDA_R_8F_E4M3,
            CUDA_R_16BF,
            CUBLAS_COMPUTE_32F,
            FillType::fp8_e4m3,
            1,
            2,
            "fp8_e4m3",
            "bf16",
            "CUBLAS_COMPUTE_32F",
            89};
  throw Fail{CB_GPU_ERROR, "unknown GEMM dtype '" + dtype + "'"};
}

/// Widens one stored element to double (host-side decoders of cuda_fp16/bf16/fp8.h).
double decode(FillType t, const unsigned char* p) {
  switch (t) {
    case FillType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case FillType::f16: {
      __half h;
      std::memcpy(&h, p, 2);
      return __half2float(h);
    }
    case FillType::bf16: {
      __nv_bfloat16 h;
      std::memcpy(&h, p, 2);
      return __bfloat162float(h);
    }
    case FillType::fp8_e4m3: {
      __nv_fp8_e4m3 h;
      std::memcpy(&h, p, 1);
      return static_cast<float>(h);
    }
  }
  return 0;
}

long long algo_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t a) {
  size_t size = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, a, nullptr, 0, &size) != CUBLAS_STATUS_SUCCESS ||
      size == 0 || size > 8)
    return -1;
  unsigned long long v = 0;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, a, &v, size, &written) != CUBLAS_STATUS_SUCCESS)
    return -1;
  return static_cast<long long>(v);
}

constexpr size_t kWorkspaceBytes = 32u << 20;  // NVIDIA's recommendation for Hopper

}  // namespace

struct cb_gemm {
  DtypeSpec spec{};
  long long m = 0, n = 0, k = 0;
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void *a = nullptr, *b = nullptr, *d = nullptr, *ws = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulAlgo_t algo{};
  float alpha = 1.0f, beta = 0.0f;

  ~cb_gemm() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (op) cublasLtMatmulDescDestroy(op);
    for (void* p : {a, b, d, ws})
      if (p) cudaFree(p);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
    if (lt) cublasLtDestroy(lt);
  }

  void matmul(const cublasLtMatmulAlgo_t& with) {
    LT_TRY(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &with, ws,
                          kWorkspaceBytes, stream));
  }

  /// Seconds per product of `reps` products with `with`, by CUDA events.
  double time(const cublasLtMatmulAlgo_t& with, int reps) {
    CUDA_TRY(cudaEventRecord(start, stream));
    for (int i = 0; i < reps; ++i) matmul(with);
    CUDA_TRY(cudaEventRecord(stop, stream));
    CUDA_TRY(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, start, stop));
    return ms / 1e3 / reps;
  }
};

namespace {

void create(const cb_gemm_params* p, cb_gemm* g, cb_gemm_info* info) {
  std::string dtype = p->dtype ? p->dtype : "";
  g->spec = dtype_spec(dtype);
  g->m = p->m;
  g->n = p->n;
  g->k = p->k;
  const std::string shape =
      dtype + " " + std::to_string(p->m) + "x" + std::to_string(p->n) + "x" + std::to_string(p->k);

  int dev = 0;
  CUDA_TRY(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
  std::snprintf(info->device_name, sizeof info->device_name, "%s", prop.name);
  CUDA_TRY(cudaDeviceGetPCIBusId(info->pci_bus_id, sizeof info->pci_bus_id, dev));
  info->sm_major = prop.major;
  info->sm_minor = prop.minor;
  std::snprintf(info->input_type, sizeof info->input_type, "%s", g->spec.in_name);
  std::snprintf(info->output_type, sizeof info->output_type, "%s", g->spec.out_name);
  std::snprintf(info->compute_type, sizeof info->compute_type, "%s", g->spec.compute_name);
  int sm = prop.major * 10 + prop.minor;
  if (sm < g->spec.min_sm)
    throw Fail{CB_GPU_UNSUPPORTED,
               shape + ": needs compute capability " + std::to_string(g->spec.min_sm / 10) + "." +
                   std::to_string(g->spec.min_sm % 10) + " or newer; " + prop.name + " is " +
                   std::to_string(prop.major) + "." + std::to_string(prop.minor)};

  size_t a_bytes = static_cast<size_t>(p->m * p->k) * g->spec.ab_bytes;
  size_t b_bytes = static_cast<size_t>(p->k * p->n) * g->spec.ab_bytes;
  size_t d_bytes = static_cast<size_t>(p->m * p->n) * g->spec.d_bytes;
  size_t free_b = 0, total_b = 0;
  CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  size_t need = a_bytes + b_bytes + d_bytes + kWorkspaceBytes;
  if (need > free_b / 10 * 9)
    throw Fail{CB_GPU_UNSUPPORTED, shape + ": needs " + std::to_string(need >> 20) + " MiB, " +
                                       std::to_string(free_b >> 20) + " MiB of GPU memory free"};

  LT_TRY(cublasLtCreate(&g->lt));
  CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  CUDA_TRY(cudaEventCreate(&g->start));
  CUDA_TRY(cudaEventCreate(&g->stop));
  CUDA_TRY(cudaMalloc(&g->a, a_bytes));
  CUDA_TRY(cudaMalloc(&g->b, b_bytes));
  CUDA_TRY(cudaMalloc(&g->d, d_bytes));
  CUDA_TRY(cudaMalloc(&g->ws, kWorkspaceBytes));
  info->workspace_bytes = static_cast<long long>(kWorkspaceBytes);
  CUDA_TRY(clusterbench::compute::gpu::fill_gemm_input(g->a, g->spec.fill, p->m * p->k, p->seed, 0,
                                                       g->stream));
  CUDA_TRY(clusterbench::compute::gpu::fill_gemm_input(g->b, g->spec.fill, p->k * p->n, p->seed, 1,
                                                       g->stream));

  // D (M x N) = A^T B with A stored K x M and B K x N, column-major: the TN layout FP8 requires.
  LT_TRY(cublasLtMatmulDescCreate(&g->op, g->spec.compute, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  LT_TRY(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  LT_TRY(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  LT_TRY(cublasLtMatrixLayoutCreate(&g->la, g->spec.ab, p->k, p->m, p->k));
  LT_TRY(cublasLtMatrixLayoutCreate(&g->lb, g->spec.ab, p->k, p->n, p->k));
  LT_TRY(cublasLtMatrixLayoutCreate(&g->ld, g->spec.d, p->m, p->n, p->m));

  cublasLtMatmulPreference_t pref = nullptr;
  LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = kWorkspaceBytes;
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  int want = std::max(1, std::min(p->max_algos, 64));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(want));
  int returned = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(g->lt, g->op, g->la, g->lb, g->ld, g->ld, pref, want,
                                        results.data(), &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && returned == 0))
    throw Fail{CB_GPU_UNSUPPORTED,
               shape + ": cuBLASLt has no algorithm for this shape and type on " + prop.name};
  LT_TRY(st);
  info->algos_returned = returned;

  // Time each returned algorithm (about 20 ms each after a warm-up product); keep the fastest.
  double best = 0;
  int best_index = -1;
  std::string last_error;
  for (int i = 0; i < returned; ++i) {
    if (results[static_cast<size_t>(i)].state != CUBLAS_STATUS_SUCCESS) continue;
    const cublasLtMatmulAlgo_t& algo = results[static_cast<size_t>(i)].algo;
    try {
      double t1 = g->time(algo, 1);
      int reps = static_cast<int>(std::clamp(0.02 / std::max(t1, 1e-7), 1.0, 50.0));
      double t = g->time(algo, reps);
      ++info->algos_tried;
      if (best_index < 0 || t < best) best = t, best_index = i;
    } catch (const Fail& f) {
      last_error = f.text;  // an algorithm the heuristic offered but cannot run: try the next
      CUDA_TRY(cudaStreamSynchronize(g->stream));
    }
  }
  if (best_index < 0)
    throw Fail{CB_GPU_ERROR, shape + ": none of the " + std::to_string(returned) +
                                 " heuristic algorithms ran: " + last_error};
  g->algo = results[static_cast<size_t>(best_index)].algo;
  info->algo_best_seconds = best;
  info->algo_id = algo_attr(g->algo, CUBLASLT_ALGO_CONFIG_ID);
  info->algo_tile = algo_attr(g->algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
  info->algo_stages = algo_attr(g->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  info->algo_splitk = algo_attr(g->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  info->algo_swizzle = algo_attr(g->algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  info->algo_reduction = algo_attr(g->algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);

  // Verification of the kept algorithm's product on sampled elements (compute/gemm.hpp).
  CUDA_TRY(cudaMemsetAsync(g->d, 0, d_bytes, g->stream));
  g->matmul(g->algo);
  CUDA_TRY(cudaStreamSynchronize(g->stream));
  clusterbench::compute::GemmShape s{p->m, p->n, p->k};
  std::vector<unsigned char> row(static_cast<size_t>(p->k) * g->spec.ab_bytes), col(row.size()),
      out(g->spec.d_bytes);
  FillType out_type = g->spec.d == CUDA_R_16F    ? FillType::f16
                      : g->spec.d == CUDA_R_16BF ? FillType::bf16
                                                 : FillType::f32;
  for (const auto& [i, j] :
       clusterbench::compute::gemm_sample_points(s, p->verify_samples, p->seed)) {
    const auto* pa =
        static_cast<const unsigned char*>(g->a) + static_cast<size_t>(i * p->k) * g->spec.ab_bytes;
    const auto* pb =
        static_cast<const unsigned char*>(g->b) + static_cast<size_t>(j * p->k) * g->spec.ab_bytes;
    const auto* pd = static_cast<const unsigned char*>(g->d) +
                     static_cast<size_t>(i + j * p->m) * g->spec.d_bytes;
    CUDA_TRY(cudaMemcpy(row.data(), pa, row.size(), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(col.data(), pb, col.size(), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(out.data(), pd, out.size(), cudaMemcpyDeviceToHost));
    size_t eb = g->spec.ab_bytes;
    double e = clusterbench::compute::gemm_sample_error(
        p->k, [&](long long q) { return decode(g->spec.fill, row.data() + q * eb); },
        [&](long long q) { return decode(g->spec.fill, col.data() + q * eb); },
        decode(out_type, out.data()));
    if (info->samples_checked == 0 || !(e <= info->max_rel_error)) {
      info->max_rel_error = e;
      info->worst_i = i;
      info->worst_j = j;
    }
    ++info->samples_checked;
  }
}

}  // namespace

extern "C" int cb_gpu_gemm_create(const cb_gemm_params* p, cb_gemm** out, cb_gemm_info* info,
                                  char* err, size_t errlen) {
  *out = nullptr;
  *info = cb_gemm_info{};
  auto* g = new cb_gemm();
  int rc = clusterbench::gpu::plugin_call(err, errlen, [&] { create(p, g, info); });
  if (rc == CB_GPU_OK)
    *out = g;
  else
    delete g;
  return rc;
}

extern "C" int cb_gpu_gemm_run(cb_gemm* g, long long count, double* seconds, char* err,
                               size_t errlen) {
  return clusterbench::gpu::plugin_call(err, errlen, [&] {
    CUDA_TRY(cudaEventRecord(g->start, g->stream));
    for (long long i = 0; i < count; ++i) g->matmul(g->algo);
    CUDA_TRY(cudaEventRecord(g->stop, g->stream));
    CUDA_TRY(cudaEventSynchronize(g->stop));
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, g->start, g->stop));
    *seconds = ms / 1e3;
  });
}

extern "C" void cb_gpu_gemm_destroy(cb_gemm* g) { delete g; }
