// cuBLASLt: the problem's checks (shapes, type combinations, FP8's compute capability and TN
// layout), the heuristic's candidates, and cublasLtMatmul: an asynchronous product on the
// stream, every operand a device allocation of the stream's device and in bounds (else an
// illegal address, sticky), D written as a lazily evaluated product (product.hpp).
#include <chrono>
#include <cstring>
#include <functional>

#include "cublaslt_impl.hpp"
#include "node.hpp"
#include "perf.hpp"
#include "product.hpp"
#include "state.hpp"

using namespace cbsim;

namespace {

constexpr std::uint64_t kAlgoMagic = 0x63627369ULL;  // "cbsi"
constexpr int kCandidates = 8;

/// A matmul as cuBLASLt sees it.
struct Problem {
  LtDesc desc;
  LtLayout a, b, c, d;
  Elem ta{}, tb{}, tc{}, td{};
  std::uint64_t m = 0, n = 0, k = 0;
  int batch = 1;
  GemmRate rate = GemmRate::half;
  Elem input_round = Elem::f32;
  std::uint64_t hash = 0;
};

bool col_major_ok(const LtLayout& l) {
  return l.order == CUBLASLT_ORDER_COL &&
         l.ld >= static_cast<std::int64_t>(std::max<std::uint64_t>(l.rows, 1)) && l.batch >= 1;
}

/// The type combination's rate, or false when cublasLtMatmul has no such combination.
bool combination(Problem& p) {
  const cublasComputeType_t c = p.desc.compute;
  const bool f32 = c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_PEDANTIC;
  if (p.tc != p.td) return false;
  if (c == CUBLAS_COMPUTE_16F || c == CUBLAS_COMPUTE_16F_PEDANTIC)
    return p.desc.scale == CUDA_R_16F && p.ta == Elem::f16 && p.tb == Elem::f16 &&
           p.td == Elem::f16 && (p.rate = GemmRate::half, true);
  if (c == CUBLAS_COMPUTE_64F || c == CUBLAS_COMPUTE_64F_PEDANTIC)
    return p.desc.scale == CUDA_R_64F && p.ta == Elem::f64 && p.tb == Elem::f64 &&
           p.td == Elem::f64 && (p.rate = GemmRate::fp32, true);
  if (p.desc.scale != CUDA_R_32F) return false;
  if (c == CUBLAS_COMPUTE_32F_FAST_TF32 || c == CUBLAS_COMPUTE_32F_FAST_16F ||
      c == CUBLAS_COMPUTE_32F_FAST_16BF) {
    p.rate = c == CUBLAS_COMPUTE_32F_FAST_TF32 ? GemmRate::tf32 : GemmRate::half;
    p.input_round = c == CUBLAS_COMPUTE_32F_FAST_TF32  ? Elem::tf32
                    : c == CUBLAS_COMPUTE_32F_FAST_16F ? Elem::f16
                                                       : Elem::bf16;
    return p.ta == Elem::f32 && p.tb == Elem::f32 && p.td == Elem::f32;
  }
  if (!f32) return false;
  if (p.ta == Elem::e4m3 && p.tb == Elem::e4m3) {
    p.rate = p.desc.fast_accum ? GemmRate::fp8_fast : GemmRate::fp8;
    return p.td == Elem::bf16 || p.td == Elem::f16 || p.td == Elem::f32;
  }
  if (p.ta != p.tb) return false;
  p.rate = p.ta == Elem::f32 ? GemmRate::fp32 : GemmRate::half;
  if (p.ta == Elem::f32) return p.td == Elem::f32;
  return (p.ta == Elem::f16 || p.ta == Elem::bf16) && (p.td == p.ta || p.td == Elem::f32);
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  return h;
}

/// Builds and checks the problem; CUBLAS_STATUS_INVALID_VALUE for inconsistent shapes or
/// unknown objects, CUBLAS_STATUS_NOT_SUPPORTED for what cuBLASLt cannot do here. Caller holds
/// lt().mu.
cublasStatus_t make_problem(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                            cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                            cublasLtMatrixLayout_t d, int device, Problem& p) {
  LtRegistry& r = lt();
  if (!r.descs.count(desc) || !r.layouts.count(a) || !r.layouts.count(b) || !r.layouts.count(c) ||
      !r.layouts.count(d))
    return CUBLAS_STATUS_INVALID_VALUE;
  p.desc = r.descs[desc], p.a = r.layouts[a], p.b = r.layouts[b], p.c = r.layouts[c];
  p.d = r.layouts[d];
  for (const LtLayout* l : {&p.a, &p.b, &p.c, &p.d})
    if (!col_major_ok(*l)) return CUBLAS_STATUS_INVALID_VALUE;
  const bool ta = p.desc.transa != CUBLAS_OP_N, tb = p.desc.transb != CUBLAS_OP_N;
  p.m = p.d.rows, p.n = p.d.cols, p.k = ta ? p.a.rows : p.a.cols;
  if ((ta ? p.a.cols : p.a.rows) != p.m || (tb ? p.b.cols : p.b.rows) != p.k ||
      (tb ? p.b.rows : p.b.cols) != p.n || p.c.rows != p.m || p.c.cols != p.n)
    return CUBLAS_STATUS_INVALID_VALUE;
  p.batch = p.d.batch;
  if (p.a.batch != p.batch || p.b.batch != p.batch || p.c.batch != p.batch)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!lt_elem(p.a.type, p.ta) || !lt_elem(p.b.type, p.tb) || !lt_elem(p.c.type, p.tc) ||
      !lt_elem(p.d.type, p.td) || !combination(p) || p.desc.epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const Gpu& g = node().gpus[static_cast<size_t>(device)];
  if (p.ta == Elem::e4m3 && (g.major * 10 + g.minor < 89 || !ta || tb))
    return CUBLAS_STATUS_NOT_SUPPORTED;  // FP8: Ada/Hopper and newer, the TN layout only
  std::uint64_t h = 0;
  for (std::uint64_t v :
       {static_cast<std::uint64_t>(p.desc.compute), static_cast<std::uint64_t>(p.desc.scale),
        static_cast<std::uint64_t>(p.a.type), static_cast<std::uint64_t>(p.b.type),
        static_cast<std::uint64_t>(p.d.type), std::uint64_t{ta}, std::uint64_t{tb}, p.m, p.n, p.k,
        static_cast<std::uint64_t>(p.batch)})
    h = mix(h, v);
  p.hash = h;
  return CUBLAS_STATUS_SUCCESS;
}

/// Candidate i of the heuristic as an algo: ids, tiles and stages in the ranges cuBLASLt uses,
/// split-K (and its workspace) on every fourth candidate where the workspace allows it.
cublasLtMatmulAlgo_t candidate(const Problem& p, int i, std::uint64_t max_ws, std::uint64_t& ws) {
  static const std::uint16_t ids[] = {66, 71, 70, 31, 21, 23, 6, 0};
  std::uint64_t splitk = 1;
  ws = std::min<std::uint64_t>(max_ws, static_cast<std::uint64_t>(i % 3) << 20);
  const std::uint64_t split_ws = p.m * p.n * 4 * 2;
  if (i % 4 == 3 && split_ws <= max_ws) splitk = 2, ws = split_ws;
  cublasLtMatmulAlgo_t algo{};
  algo.data[0] = (kAlgoMagic << 32) | static_cast<std::uint64_t>(i);
  algo.data[1] = p.hash;
  algo.data[2] = ids[i % 8] | (static_cast<std::uint64_t>(18 + i) << 16) |
                 (static_cast<std::uint64_t>(8 + i % 4) << 32) | (splitk << 48);
  algo.data[3] = static_cast<std::uint64_t>(i % 2) | (std::uint64_t{splitk > 1} << 16);
  algo.data[4] = ws;
  return algo;
}

/// A scalar (alpha, beta) of the scale type from the host.
double host_scalar(cudaDataType_t scale, const void* p) {
  switch (scale) {
    case CUDA_R_64F:
      return *static_cast<const double*>(p);
    case CUDA_R_16F:
      return load(Elem::f16, p, 0);
    default:
      return *static_cast<const float*>(p);
  }
}

/// Bytes an operand spans from its pointer.
std::uint64_t extent(const LtLayout& l, Elem t) {
  const auto ld = static_cast<std::uint64_t>(l.ld);
  std::uint64_t last = (l.cols ? l.cols - 1 : 0) * ld + l.rows;
  last += static_cast<std::uint64_t>(l.batch - 1) * static_cast<std::uint64_t>(l.stride);
  return last * elem_size(t);
}

/// The arguments of one cublasLtMatmul, kept for its execution (and graph replays).
struct Call {
  Problem p;
  std::uint64_t a = 0, b = 0, c = 0, d = 0, ws = 0, ws_size = 0;
  double alpha = 1, beta = 0;
  const void* alpha_dev = nullptr;  ///< device pointer mode
  const void* beta_dev = nullptr;
  int candidate = 0;
};

/// A device scalar or FP8 scale (a float) read at execution; false when it is not device memory.
bool device_scalar(State& st, int device, const void* ptr, cudaDataType_t t, double& out) {
  const std::uint64_t p = reinterpret_cast<std::uint64_t>(ptr);
  const std::uint64_t size = t == CUDA_R_64F ? 8 : t == CUDA_R_16F ? 2 : 4;
  Alloc* a = find_alloc(st, p, size);
  if (!a || a->device != device) return false;
  unsigned char buf[8];
  read(*a->content, p - a->base, size, buf);
  out = size == 8   ? load(Elem::f64, buf, 0)
        : size == 2 ? load(Elem::f16, buf, 0)
                    : load(Elem::f32, buf, 0);
  return true;
}

Operand operand(State& st, std::uint64_t ptr, const LtLayout& l, Elem t, bool trans) {
  Alloc* a = find_alloc(st, ptr, extent(l, t));
  Operand o;
  o.data = slice(*a->content, ptr - a->base, extent(l, t));
  o.type = t, o.rows = l.rows, o.cols = l.cols, o.ld = static_cast<std::uint64_t>(l.ld);
  o.stride = l.stride, o.trans = trans;
  return o;
}

/// The "wrong_product" fault of the device: the product that gets a wrong element, if this one.
bool wrong_product_now(State& st, int device) {
  DeviceState& ds = st.dev[static_cast<size_t>(device)];
  const WrongProduct& w = node().gpus[static_cast<size_t>(device)].wrong_product;
  const auto now = std::chrono::steady_clock::now();
  if (!ds.seen_matmul) ds.seen_matmul = true, ds.first_matmul = now;
  if (!w.enabled || ds.wrong_left == 0) return false;
  if (ds.wrong_left < 0) {
    if (w.from_compare && !ds.seen_compare) return false;
    const auto from = w.from_compare ? ds.first_compare : ds.first_matmul;
    if (std::chrono::duration<double>(now - from).count() < w.after_s) return false;
    ds.wrong_left = w.count;
  }
  --ds.wrong_left;
  return true;
}

/// Why an operand range is not device memory of `device` ("" when it is).
std::string bad_range(State& st, const char* what, std::uint64_t p, std::uint64_t len, int device) {
  Alloc* a = find_alloc(st, p, std::max<std::uint64_t>(len, 1));
  if (a && a->device == device) return "";
  Alloc* any = find_alloc(st, p);
  char buf[256];
  std::snprintf(
      buf, sizeof buf, "cublasLtMatmul: %s %#llx + %llu bytes %s", what,
      static_cast<unsigned long long>(p), static_cast<unsigned long long>(len),
      any ? (any->device != device ? "is memory of another device" : "leaves its allocation")
          : "is not device memory");
  return buf;
}

/// cublasLtMatmul as it runs on the stream.
void run_matmul(State& st, Stream& s, const Call& k, Res& res, double& seconds) {
  const Problem& p = k.p;
  std::string why = bad_range(st, "A", k.a, extent(p.a, p.ta), s.device);
  if (why.empty()) why = bad_range(st, "B", k.b, extent(p.b, p.tb), s.device);
  if (why.empty()) why = bad_range(st, "D", k.d, extent(p.d, p.td), s.device);
  if (why.empty() && k.ws_size) why = bad_range(st, "workspace", k.ws, k.ws_size, s.device);
  double alpha = k.alpha, beta = k.beta, sa = 1, sb = 1;
  if (why.empty() && k.alpha_dev &&
      (!device_scalar(st, s.device, k.alpha_dev, p.desc.scale, alpha) ||
       !device_scalar(st, s.device, k.beta_dev, p.desc.scale, beta)))
    why = "cublasLtMatmul: alpha or beta is not device memory of the stream's device";
  if (why.empty() && beta != 0) why = bad_range(st, "C", k.c, extent(p.c, p.tc), s.device);
  if (why.empty() && p.desc.a_scale && !device_scalar(st, s.device, p.desc.a_scale, CUDA_R_32F, sa))
    why = "cublasLtMatmul: the A scale pointer is not device memory of the stream's device";
  if (why.empty() && p.desc.b_scale && !device_scalar(st, s.device, p.desc.b_scale, CUDA_R_32F, sb))
    why = "cublasLtMatmul: the B scale pointer is not device memory of the stream's device";
  if (!why.empty()) {
    ++st.dev[static_cast<size_t>(s.device)].counters.illegal_addresses;
    return set_sticky(st, cudaErrorIllegalAddress, why);
  }
  auto desc = std::make_shared<ProductDesc>();
  desc->a = operand(st, k.a, p.a, p.ta, p.desc.transa != CUBLAS_OP_N);
  desc->b = operand(st, k.b, p.b, p.tb, p.desc.transb != CUBLAS_OP_N);
  if (beta != 0) desc->c = operand(st, k.c, p.c, p.tc, false);
  desc->out = p.td, desc->input_round = p.input_round;
  desc->m = p.m, desc->n = p.n, desc->k = p.k, desc->ldd = static_cast<std::uint64_t>(p.d.ld);
  desc->d_stride = p.d.stride, desc->batch = p.batch;
  desc->alpha = alpha * sa * sb, desc->beta = beta;
  if (wrong_product_now(st, s.device)) {
    const std::uint64_t e = p.m / 2 + (p.n / 2) * desc->ldd;
    desc->overrides[e] = round_to(p.td, -product_element(*desc, e) + 1000);
  }
  auto src = std::make_shared<ProductSource>(desc);
  Alloc* da = find_alloc(st, k.d, extent(p.d, p.td));
  for (const Seg& seg : product_segments(desc, src))
    da->content = replace(da->content, k.d - da->base + seg.off, single(seg.len, src, seg.src_off));
  const double flop = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) *
                      static_cast<double>(p.k) * p.batch;
  res = Res::compute;
  seconds = gemm_seconds(node().gpus[static_cast<size_t>(s.device)], p.rate, flop, k.candidate);
}

/// Validates the call's arguments (everything but the device pointers, checked as it runs).
cublasStatus_t prepare(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                       const void* beta, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                       cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld,
                       const cublasLtMatmulAlgo_t* algo, Call& k) {
  std::lock_guard<std::mutex> lock(lt().mu);
  if (!lt().handles.count(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (cublasStatus_t s = make_problem(desc, la, lb, lc, ld, current_device(), k.p)) return s;
  if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  if (k.p.desc.pointer_mode == 0) {
    k.alpha = host_scalar(k.p.desc.scale, alpha), k.beta = host_scalar(k.p.desc.scale, beta);
  } else {
    k.alpha_dev = alpha, k.beta_dev = beta;
  }
  std::uint64_t need = 0;
  if (algo) {
    if ((algo->data[0] >> 32) != kAlgoMagic || algo->data[1] != k.p.hash)
      return CUBLAS_STATUS_INVALID_VALUE;  // not an algo of this problem's heuristic
    k.candidate = static_cast<int>(algo->data[0] & 0xFFFF);
    need = algo->data[4];
  }
  if (k.ws_size < need || (k.ws_size && !k.ws)) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned) {
  if (!returned || !results || requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  std::lock_guard<std::mutex> lock(lt().mu);
  if (!lt().handles.count(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!lt().prefs.count(pref)) return CUBLAS_STATUS_INVALID_VALUE;
  if (init_error() != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  Problem p;
  if (cublasStatus_t s = make_problem(desc, a, b, c, d, current_device(), p)) return s;
  const std::uint64_t max_ws = lt().prefs[pref];
  const int n = std::min(requested, kCandidates);
  for (int i = 0; i < n; ++i) {
    cublasLtMatmulHeuristicResult_t& r = results[i];
    std::memset(&r, 0, sizeof r);
    std::uint64_t ws = 0;
    r.algo = candidate(p, i, max_ws, ws);
    r.workspaceSize = ws;
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = 1.0f;
  }
  *returned = n;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    void* buf, size_t sizeInBytes,
                                                    size_t* sizeWritten) {
  const int a = static_cast<int>(attr);
  if (!algo || a < 0 || a > 8) return CUBLAS_STATUS_INVALID_VALUE;
  const size_t size = a >= 7 ? 2 : 4;
  if (sizeInBytes == 0 && !buf) {
    if (!sizeWritten) return CUBLAS_STATUS_INVALID_VALUE;
    *sizeWritten = size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || sizeInBytes < size) return CUBLAS_STATUS_INVALID_VALUE;
  const std::uint64_t w2 = algo->data[2], w3 = algo->data[3];
  const std::uint64_t fields[] = {w2 & 0xFFFF,
                                  (w2 >> 16) & 0xFFFF,
                                  w2 >> 48,
                                  (w3 >> 16) & 0xFFFF,
                                  w3 & 0xFFFF,
                                  0,
                                  (w2 >> 32) & 0xFFFF,
                                  0,
                                  0};
  const auto v = static_cast<std::uint32_t>(fields[a]);
  std::memcpy(buf, &v, size);
  if (sizeWritten) *sizeWritten = size;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                              cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspaceSizeInBytes, cudaStream_t stream) {
  Call k;
  k.ws = reinterpret_cast<std::uint64_t>(workspace), k.ws_size = workspaceSizeInBytes;
  if (cublasStatus_t s = prepare(handle, desc, alpha, beta, Adesc, Bdesc, Cdesc, Ddesc, algo, k))
    return s;
  k.a = reinterpret_cast<std::uint64_t>(A), k.b = reinterpret_cast<std::uint64_t>(B);
  k.c = reinterpret_cast<std::uint64_t>(C), k.d = reinterpret_cast<std::uint64_t>(D);
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (init_error() != cudaSuccess || st.sticky) return CUBLAS_STATUS_EXECUTION_FAILED;
  Stream* s = resolve(st, stream);
  if (!s || s->device != current_device()) {  // the kernel launch fails
    fail(cudaErrorInvalidResourceHandle);
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  cudaError_t e = enqueue(st, *s, [k] {
    return work_op(kWorkMatmul, [k](State& st2, Stream& s2, Res& res, double& sec) {
      run_matmul(st2, s2, k, res, sec);
    });
  });
  if (e != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
