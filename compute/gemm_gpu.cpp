// compute.gemm in the GPU plugin: the "gemm" operation (bench/gpu/plugin/op.hpp), a cuBLASLt
// matmul with FP32 accumulation. D (M x N, column-major) = op(A) B with A stored K x M (op =
// transpose, the "TN" layout FP8 requires) and B K x N; beta = 0. Inputs are random, magnitude in
// [0.25, 1) with a random sign (compute/gemm.hpp gemm_input_value), drawn on the GPU.
//   params: {"dtype": "fp16" | "bf16" | "tf32" | "fp32" | "fp8_e4m3", "m", "n", "k",
//            "algos": top-N heuristic algorithms timed (the fastest is kept),
//            "samples": output elements verified against a long-double reference, "seed",
//            "fast_accum": CUBLASLT_MATMUL_DESC_FAST_ACCUM (optional, default false; FP8's
//            fast accumulation, checked against gemm_bound(dtype, true)),
//            "verify_each": compare every product with the verified first one on the GPU
//            (optional, default false; the burn-in's check, gpu-burn's: a wrong product that the
//            next one overwrites is still counted; products launched one by one, no graph)}
//   info:   the device's facts, "input_type", "output_type", "compute_type", "fast_accum",
//           "workspace_bytes",
//           "device_bytes" (A, B, D and the workspace), "algorithm": {"id", "tile", "stages",
//           "splitk", "swizzle", "reduction_scheme", "heuristic_returned", "tried",
//           "warmup_seconds", "warmup_products", "selection_rounds",
//           "selection_products_per_timing", "candidates_median_seconds_per_op" (null: could not
//           run), "selection_seconds_per_op"} (compute/gemm_select.hpp), "launch": {"mode":
//           "cuda_graph", "products_per_graph"} or {"mode": "plain", "why"}, "verification":
//           {"samples", "max_ratio", "worst_i", "worst_j", "checksum_rows", "checksum_max_ratio",
//           "checksum_worst_row", "checks", with verify_each "products_checked",
//           "products_wrong", "elements_wrong" (running counts since create)} (ratios
//           |c - ref| / tolerance of compute/gemm_check.hpp, null when not finite; "checks"
//           counts create's check and each cb_gpu_op_check)
// CB_GPU_UNSUPPORTED: the GPU lacks the dtype or the memory, or cuBLASLt has no algorithm.
// The core-side benchmark (compute/gemm.cpp) times it and judges the verification.
#include "compute/gemm_gpu.hpp"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "compute/gemm.hpp"
#include "compute/gemm_check.hpp"
#include "compute/gemm_select.hpp"
#include "gpu/plugin/compare.hpp"
#include "gpu/plugin/op.hpp"

namespace clusterbench::compute::gpu {

namespace {

using clusterbench::gpu::DeviceBuffer;
using clusterbench::gpu::Fail;
using clusterbench::gpu::json;

#define LT_TRY(call)                                                                             \
  do {                                                                                           \
    cublasStatus_t lt_status_ = (call);                                                          \
    if (lt_status_ != CUBLAS_STATUS_SUCCESS)                                                     \
      throw Fail{CB_GPU_ERROR, std::string(#call) + ": " + cublasLtGetStatusString(lt_status_) + \
                                   " (" + cublasLtGetStatusName(lt_status_) + ")"};              \
  } while (0)

/// What one dtype name means to cuBLASLt.
struct DtypeSpec {
  cudaDataType_t ab, d;
  cublasComputeType_t compute;
  FillType fill, out_fill;
  size_t ab_bytes, d_bytes;
  const char *in_name, *out_name, *compute_name;
  int min_sm;  // major*10 + minor
};

DtypeSpec dtype_spec(const std::string& dtype) {
  using F = FillType;
  if (dtype == "fp16")
    return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F,   F::f16, F::f16, 2, 2,
            "fp16",     "fp16",     "CUBLAS_COMPUTE_32F", 0};
  if (dtype == "bf16")
    return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F,   F::bf16, F::bf16, 2, 2,
            "bf16",      "bf16",      "CUBLAS_COMPUTE_32F", 80};
  if (dtype == "tf32")
    return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32,   F::tf32, F::f32, 4, 4,
            "fp32",     "fp32",     "CUBLAS_COMPUTE_32F_FAST_TF32", 80};
  if (dtype == "fp32")
    return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F,   F::f32, F::f32, 4, 4,
            "fp32",     "fp32",     "CUBLAS_COMPUTE_32F", 0};
  if (dtype == "fp8_e4m3")
    return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F,   F::fp8_e4m3, F::bf16, 1, 2,
            "fp8_e4m3",     "bf16",      "CUBLAS_COMPUTE_32F", 89};
  throw Fail{CB_GPU_ERROR, "unknown GEMM dtype '" + dtype + "'"};
}

/// Widens one stored element to double (host-side decoders of cuda_fp16/bf16/fp8.h).
double decode(FillType t, const unsigned char* p) {
  switch (t) {
    case FillType::f32:
    case FillType::tf32: {
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

/// The cuBLASLt objects of one product, destroyed with it.
struct LtObjects {
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  ~LtObjects() {
    for (cublasLtMatrixLayout_t l : {la, lb, ld})
      if (l) cublasLtMatrixLayoutDestroy(l);
    if (op) cublasLtMatmulDescDestroy(op);
    if (lt) cublasLtDestroy(lt);
  }
};

using Heuristics = std::vector<cublasLtMatmulHeuristicResult_t>;

/// An instantiated CUDA graph, destroyed with the object.
struct GraphExec {
  cudaGraphExec_t exec = nullptr;
  GraphExec() = default;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(GraphExec&& o) noexcept {
    std::swap(exec, o.exec);
    return *this;
  }
  ~GraphExec() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

/// A product on the device and what judges it, for the checks that read it back.
struct GemmProduct {
  const DtypeSpec& spec;
  const GemmShape& s;
  const GemmBound& bound;
  const DeviceBuffer &a, &b, &d;
};

/// out.size() bytes of `buffer` from `offset`, to the host.
void fetch(std::vector<unsigned char>& out, const DeviceBuffer& buffer, size_t offset) {
  CUDA_TRY(cudaMemcpy(out.data(), static_cast<const unsigned char*>(buffer.get()) + offset,
                      out.size(), cudaMemcpyDeviceToHost));
}

/// The sampled elements' worst |c - ref| / tolerance, with where it is.
json sampled_check(const GemmProduct& p, int samples, std::uint64_t seed) {
  const size_t eb = p.spec.ab_bytes;
  std::vector<unsigned char> row(static_cast<size_t>(p.s.k) * eb), col(row.size()),
      out(p.spec.d_bytes);
  json v = {{"samples", 0}, {"max_ratio", 0.0}, {"worst_i", 0}, {"worst_j", 0}};
  double worst = 0;
  for (const auto& [i, j] : gemm_sample_points(p.s, samples, seed)) {
    fetch(row, p.a, static_cast<size_t>(i * p.s.k) * eb);
    fetch(col, p.b, static_cast<size_t>(j * p.s.k) * eb);
    fetch(out, p.d, static_cast<size_t>(i + j * p.s.m) * p.spec.d_bytes);
    double e = gemm_element_ratio(
        p.s.k, [&](long long q) { return decode(p.spec.fill, row.data() + q * eb); },
        [&](long long q) { return decode(p.spec.fill, col.data() + q * eb); },
        decode(p.spec.out_fill, out.data()), p.bound);
    if (v["samples"] == 0 || !(e <= worst)) {
      worst = e;
      v["worst_i"] = i;
      v["worst_j"] = j;
    }
    v["samples"] = v["samples"].get<int>() + 1;
  }
  v["max_ratio"] = worst;
  return v;
}

/// Every row's checksum against its bound (gemm_row_checksums): the worst ratio and its row.
void checksum_check(const GemmProduct& p, cudaStream_t stream, json& v) {
  DeviceBuffer scratch(static_cast<size_t>(2 * p.s.k) * sizeof(double)),
      rows(static_cast<size_t>(4 * p.s.m) * sizeof(double));
  CUDA_TRY(gemm_row_checksums(p.a.get(), p.b.get(), p.d.get(), p.spec.fill, p.spec.out_fill, p.s.m,
                              p.s.n, p.s.k, static_cast<double*>(scratch.get()),
                              static_cast<double*>(rows.get()), stream));
  CUDA_TRY(cudaStreamSynchronize(stream));
  std::vector<double> host(static_cast<size_t>(4 * p.s.m));
  CUDA_TRY(
      cudaMemcpy(host.data(), rows.get(), host.size() * sizeof(double), cudaMemcpyDeviceToHost));
  double worst = 0;
  long long worst_row = 0;
  for (long long i = 0; i < p.s.m; ++i) {
    const double* r = host.data() + 4 * i;
    double ratio = gemm_row_ratio(r[0], r[1], r[2], r[3], p.s.k, p.bound);
    if (i == 0 || !(ratio <= worst)) worst = ratio, worst_row = i;
  }
  v["checksum_rows"] = p.s.m;
  v["checksum_max_ratio"] = worst;  // JSON has no inf: a non-finite ratio is written as null
  v["checksum_worst_row"] = worst_row;
}

class GemmOp : public clusterbench::gpu::Op {
 public:
  explicit GemmOp(const json& p)
      : spec_(dtype_spec(p.at("dtype").get<std::string>())),
        s_{p.at("m").get<long long>(), p.at("n").get<long long>(), p.at("k").get<long long>()},
        fast_accum_(p.value("fast_accum", false)),
        verify_each_(p.value("verify_each", false)),
        bound_(gemm_bound(p.at("dtype").get<std::string>(), fast_accum_)),
        samples_(p.at("samples").get<int>()),
        seed_(p.at("seed").get<std::uint64_t>()),
        shape_(p.at("dtype").get<std::string>() + " " + std::to_string(s_.m) + "x" +
               std::to_string(s_.n) + "x" + std::to_string(s_.k)) {
    const auto seed = p.at("seed").get<std::uint64_t>();
    check_device();
    allocate(seed);
    describe_product();
    select_algorithm(heuristics(p.at("algos").get<int>()));
    capture_graph();
    verify();
    if (verify_each_) start_comparing();
  }

 private:
  /// `count` products: graphs of graph_products_ products, then the rest one by one.
  void enqueue(long long count) override {
    long long i = 0;
    if (graph_products_ > 0)
      for (; i + graph_products_ <= count; i += graph_products_)
        CUDA_TRY(cudaGraphLaunch(graph_.exec, stream()));
    for (; i < count; ++i) {
      matmul(algo_);
      if (ref_.get()) compare_with_first();
    }
  }

  /// verify_each: the verified product becomes the reference every later one is compared with.
  void start_comparing() {
    ref_ = DeviceBuffer(d_bytes());
    counters_ = DeviceBuffer(3 * sizeof(unsigned long long));
    CUDA_TRY(cudaMemcpyAsync(ref_.get(), d_.get(), d_bytes(), cudaMemcpyDeviceToDevice, stream()));
    CUDA_TRY(cudaMemsetAsync(counters_.get(), 0, 3 * sizeof(unsigned long long), stream()));
    CUDA_TRY(cudaStreamSynchronize(stream()));
    info()["device_bytes"] =
        info()["device_bytes"].get<long long>() + static_cast<long long>(3 * sizeof(long long));
  }

  void compare_with_first() {
    const auto type = spec_.out_fill == FillType::bf16  ? clusterbench::gpu::CompareType::bf16
                      : spec_.out_fill == FillType::f16 ? clusterbench::gpu::CompareType::f16
                                                        : clusterbench::gpu::CompareType::f32;
    CUDA_TRY(clusterbench::gpu::compare_elements(
        d_.get(), ref_.get(), type, s_.m * s_.n, kProductCompareTolerance,
        static_cast<unsigned long long*>(counters_.get()), stream()));
    ++compared_;
  }

  void matmul(const cublasLtMatmulAlgo_t& with) {
    LT_TRY(cublasLtMatmul(lt_.lt, lt_.op, &alpha_, a_.get(), lt_.la, b_.get(), lt_.lb, &beta_,
                          d_.get(), lt_.ld, d_.get(), lt_.ld, &with, ws_.get(), kWorkspaceBytes,
                          stream()));
  }

  size_t a_bytes() const { return static_cast<size_t>(s_.m * s_.k) * spec_.ab_bytes; }
  size_t b_bytes() const { return static_cast<size_t>(s_.k * s_.n) * spec_.ab_bytes; }
  size_t d_bytes() const { return static_cast<size_t>(s_.m * s_.n) * spec_.d_bytes; }

  /// The dtype on this GPU's compute capability, and room for the product: else UNSUPPORTED.
  void check_device() {
    info()["input_type"] = spec_.in_name;
    info()["output_type"] = spec_.out_name;
    info()["compute_type"] = spec_.compute_name;
    if (sm() < spec_.min_sm)
      throw Fail{CB_GPU_UNSUPPORTED,
                 shape_ + ": needs compute capability " + std::to_string(spec_.min_sm / 10) + "." +
                     std::to_string(spec_.min_sm % 10) + " or newer; " + prop().name + " is " +
                     std::to_string(prop().major) + "." + std::to_string(prop().minor)};
    size_t free_b = clusterbench::gpu::free_device_bytes();
    size_t need = a_bytes() + b_bytes() + d_bytes() * (verify_each_ ? 2 : 1) + kWorkspaceBytes;
    if (need > free_b / 10 * 9)
      throw Fail{CB_GPU_UNSUPPORTED, shape_ + ": needs " + std::to_string(need >> 20) + " MiB, " +
                                         std::to_string(free_b >> 20) + " MiB of GPU memory free"};
    info()["workspace_bytes"] = static_cast<long long>(kWorkspaceBytes);
    info()["device_bytes"] = static_cast<long long>(need);
  }

  void allocate(std::uint64_t seed) {
    LT_TRY(cublasLtCreate(&lt_.lt));
    a_ = DeviceBuffer(a_bytes());
    b_ = DeviceBuffer(b_bytes());
    d_ = DeviceBuffer(d_bytes());
    ws_ = DeviceBuffer(kWorkspaceBytes);
    CUDA_TRY(fill_gemm_input(a_.get(), spec_.fill, s_.m * s_.k, seed, 0, stream()));
    CUDA_TRY(fill_gemm_input(b_.get(), spec_.fill, s_.k * s_.n, seed, 1, stream()));
  }

  /// D (M x N) = A^T B with A stored K x M and B K x N, column-major: the TN layout FP8 requires.
  void describe_product() {
    LT_TRY(cublasLtMatmulDescCreate(&lt_.op, spec_.compute, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescSetAttribute(lt_.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_TRY(cublasLtMatmulDescSetAttribute(lt_.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    const std::int8_t fast = fast_accum_ ? 1 : 0;  // cuBLASLt's default is 0
    LT_TRY(cublasLtMatmulDescSetAttribute(lt_.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                          sizeof fast));
    info()["fast_accum"] = fast_accum_;
    LT_TRY(cublasLtMatrixLayoutCreate(&lt_.la, spec_.ab, s_.k, s_.m, s_.k));
    LT_TRY(cublasLtMatrixLayoutCreate(&lt_.lb, spec_.ab, s_.k, s_.n, s_.k));
    LT_TRY(cublasLtMatrixLayoutCreate(&lt_.ld, spec_.d, s_.m, s_.n, s_.m));
  }

  /// The top `max_algos` (1..64) algorithms of cuBLASLt's heuristic for the workspace.
  Heuristics heuristics(int max_algos) {
    cublasLtMatmulPreference_t pref = nullptr;
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = kWorkspaceBytes;
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    int want = std::max(1, std::min(max_algos, 64));
    Heuristics results(static_cast<size_t>(want));
    int returned = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulAlgoGetHeuristic(lt_.lt, lt_.op, lt_.la, lt_.lb, lt_.ld, lt_.ld, pref,
                                          want, results.data(), &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && returned == 0))
      throw Fail{CB_GPU_UNSUPPORTED,
                 shape_ + ": cuBLASLt has no algorithm for this shape and type on " + prop().name};
    LT_TRY(st);
    results.resize(static_cast<size_t>(returned));
    return results;
  }

  /// Seconds per product of `reps` products with `with`, by CUDA events; -1 when the algorithm
  /// cannot run (its error in `why`: one the heuristic offered may still fail).
  double seconds_per_product(const cublasLtMatmulAlgo_t& with, long long reps, std::string& why) {
    try {
      return timer().time(stream(), [&] {
        for (long long i = 0; i < reps; ++i) matmul(with);
      }) / static_cast<double>(reps);
    } catch (const Fail& f) {
      why = f.text;
      CUDA_TRY(cudaStreamSynchronize(stream()));
      return -1;
    }
  }

  /// About kGemmWarmupSeconds of products with the first candidate that runs (compute/
  /// gemm_select.hpp), so that no candidate is timed on an idle-clocked GPU.
  GemmWarmup warm_up(const Heuristics& results, const std::vector<int>& usable, std::string& why) {
    for (int i : usable) {
      const cublasLtMatmulAlgo_t& algo = results[static_cast<size_t>(i)].algo;
      if (seconds_per_product(algo, 1, why) < 0) continue;
      return gemm_warm_up(kGemmWarmupSeconds, [&](long long reps) {
        double t = seconds_per_product(algo, reps, why);
        if (t < 0) throw Fail{CB_GPU_ERROR, shape_ + ": warm-up: " + why};
        return t * static_cast<double>(reps);
      });
    }
    throw Fail{CB_GPU_ERROR, shape_ + ": none of the " + std::to_string(results.size()) +
                                 " heuristic algorithms ran: " + why};
  }

  /// Warms up, then times the runnable candidates interleaved over kGemmSelectionRounds rounds
  /// and keeps the one of the smallest median (gemm_select_interleaved).
  void select_algorithm(const Heuristics& results) {
    std::vector<int> usable;
    for (int i = 0; i < static_cast<int>(results.size()); ++i)
      if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS) usable.push_back(i);
    std::string why;
    const GemmWarmup warm = warm_up(results, usable, why);
    const long long reps = gemm_timing_reps(warm.seconds_per_product);
    GemmSelection sel =
        gemm_select_interleaved(static_cast<int>(usable.size()), kGemmSelectionRounds, [&](int c) {
          return seconds_per_product(
              results[static_cast<size_t>(usable[static_cast<size_t>(c)])].algo, reps, why);
        });
    if (sel.best < 0)
      throw Fail{CB_GPU_ERROR, shape_ + ": none of the " + std::to_string(results.size()) +
                                   " heuristic algorithms ran: " + why};
    algo_ = results[static_cast<size_t>(usable[static_cast<size_t>(sel.best)])].algo;
    best_seconds_ = sel.best_seconds;
    json medians = json::array();
    for (const GemmCandidateTimes& c : sel.candidates)
      medians.push_back(c.failed ? json() : json(c.median()));
    info()["algorithm"] = {
        {"id", algo_attr(algo_, CUBLASLT_ALGO_CONFIG_ID)},
        {"tile", algo_attr(algo_, CUBLASLT_ALGO_CONFIG_TILE_ID)},
        {"stages", algo_attr(algo_, CUBLASLT_ALGO_CONFIG_STAGES_ID)},
        {"splitk", algo_attr(algo_, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)},
        {"swizzle", algo_attr(algo_, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)},
        {"reduction_scheme", algo_attr(algo_, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME)},
        {"heuristic_returned", static_cast<int>(results.size())},
        {"tried", sel.tried()},
        {"warmup_seconds", warm.seconds},
        {"warmup_products", warm.products},
        {"selection_rounds", sel.rounds},
        {"selection_products_per_timing", reps},
        {"candidates_median_seconds_per_op", medians},
        {"selection_seconds_per_op", sel.best_seconds}};
  }

  /// One timed batch's products as a CUDA graph (a small shape's GPU work is a
  /// few microseconds, less than a host launch), of gemm_graph_products(the kept algorithm's
  /// time) products; enqueue() launches it count / that many times. Where capture fails, the
  /// products are launched one by one, and info()["launch"] says why.
  void capture_graph() {
    if (verify_each_) {
      info()["launch"] = {{"mode", "plain"},
                          {"why", "verify_each: each product is compared as it is made"}};
      return;
    }
    const long long products = gemm_graph_products(best_seconds_);
    cudaGraph_t g = nullptr;
    std::string why;
    cudaError_t e = cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
      why = clusterbench::gpu::cuda_error_text("cudaStreamBeginCapture", e);
    } else {
      try {
        for (long long i = 0; i < products; ++i) matmul(algo_);
      } catch (const Fail& f) {
        why = f.text;
      }
      e = cudaStreamEndCapture(stream(), &g);
      if (why.empty() && e != cudaSuccess)
        why = clusterbench::gpu::cuda_error_text("cudaStreamEndCapture", e);
    }
    if (why.empty() && (e = cudaGraphInstantiate(&graph_.exec, g, 0)) != cudaSuccess)
      why = clusterbench::gpu::cuda_error_text("cudaGraphInstantiate", e);
    if (g) cudaGraphDestroy(g);
    if (!why.empty()) {
      (void)cudaGetLastError();  // a failed capture leaves no error for the next call
      graph_ = GraphExec{};
      info()["launch"] = {{"mode", "plain"}, {"why", "CUDA graph capture failed: " + why}};
      return;
    }
    graph_products_ = products;
    info()["launch"] = {{"mode", "cuda_graph"}, {"products_per_graph", products}};
  }

  /// Copies `bytes` at byte offset `offset` of `buffer` to the host.
  /// The kept algorithm's product as the timed batches make it (the graph where there is one),
  /// from a cleared D, checked (check_output).
  void verify() {
    CUDA_TRY(cudaMemsetAsync(d_.get(), 0, d_bytes(), stream()));
    enqueue(std::max(graph_products_, 1LL));
    check_output();
  }

  /// Checks D as the last product left it: `samples` elements against a long-double reference
  /// and every row by checksum (compute/gemm_check.hpp), into info()["verification"], whose
  /// "checks" counts the checks of this operation.
  void check_output() override {
    CUDA_TRY(cudaStreamSynchronize(stream()));
    const GemmProduct product{spec_, s_, bound_, a_, b_, d_};
    json v = sampled_check(product, samples_, seed_);
    checksum_check(product, stream(), v);
    v["checks"] = ++checks_;
    if (ref_.get()) {
      unsigned long long c[3] = {0, 0, 0};
      CUDA_TRY(cudaMemcpy(c, counters_.get(), sizeof c, cudaMemcpyDeviceToHost));
      v["products_checked"] = compared_;
      v["products_wrong"] = static_cast<long long>(c[1]);
      v["elements_wrong"] = static_cast<long long>(c[0]);
    }
    info()["verification"] = v;
  }

  DtypeSpec spec_;
  GemmShape s_;
  bool fast_accum_;   ///< CUBLASLT_MATMUL_DESC_FAST_ACCUM (FP8's fast accumulation)
  bool verify_each_;  ///< every product compared with the first (start_comparing)
  GemmBound bound_;
  int samples_;
  std::uint64_t seed_;
  long long checks_ = 0;
  std::string shape_;
  LtObjects lt_;
  DeviceBuffer a_, b_, d_, ws_;
  DeviceBuffer ref_, counters_;  ///< verify_each: the first product, {elements, products, scratch}
  long long compared_ = 0;       ///< products compared with ref_
  cublasLtMatmulAlgo_t algo_{};
  double best_seconds_ = 0;       ///< the kept algorithm's median seconds per product
  GraphExec graph_;               ///< products_per_graph products (capture_graph)
  long long graph_products_ = 0;  ///< 0: no graph, products are launched one by one
  float alpha_ = 1.0f, beta_ = 0.0f;
};

CB_GPU_OP(GemmOp, "gemm");

}  // namespace
}  // namespace clusterbench::compute::gpu
