// compute.gemm: C = A B rate in TFLOP/s (docs/metrics.md "GEMM", docs/gemm.md).
//  backend=cublaslt: per GPU (Level::gpu), the plugin's "gemm" operation (compute/gemm_gpu.cpp)
//    run as a GPU case (core/api/gpu_case.hpp), with NVML telemetry sampled while the timed region
//    runs.
//  backend=openblas: once per node on every core (Level::node): the host's rate, and the path CI
//    runs for real on GPU-less machines.
// Inputs are random and never zero; the product is checked on sampled elements against a
// long-double reference before timing; a failed check fails the case and gives no rate.
#include "compute/gemm.hpp"

#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <stdexcept>

#include "compute/cpu_blas.hpp"
#include "compute/gemm_check.hpp"
#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"
#include "core/api/gpu_case.hpp"

namespace clusterbench::compute {

nlohmann::json GemmCase::params() const {
  nlohmann::json p = {
      {"backend", backend}, {"dtype", dtype}, {"m", shape.m}, {"n", shape.n}, {"k", shape.k}};
  if (!fast_accum.empty()) p["fast_accum"] = fast_accum;
  return p;
}

GemmCase GemmCase::of(const nlohmann::json& p) {
  GemmCase c;
  c.backend = p.value("backend", "");
  c.dtype = p.value("dtype", "");
  c.shape = {p.value("m", 0LL), p.value("n", 0LL), p.value("k", 0LL)};
  c.fast_accum = p.value("fast_accum", "");
  return c;
}

double gemm_flop(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

double gemm_tflops(double flop, double seconds) {
  if (!(seconds > 0)) throw std::invalid_argument("GEMM time must be > 0 s");
  return Work::flop(flop).rate(seconds);
}

const std::vector<GemmShape>& transformer_shapes() {
  static const std::vector<GemmShape> shapes = {
      // Llama-2-7B: hidden 4096, 32 heads (QKV 3 x 4096), FFN 11008 (gate + up = 22016).
      {8192, 12288, 4096},
      {8192, 4096, 4096},
      {8192, 22016, 4096},
      {8192, 4096, 11008},
      // Llama-2-70B: hidden 8192, 64 query + 2 x 8 KV heads of 128 (QKV 10240), FFN 28672.
      {8192, 10240, 8192},
      {8192, 8192, 8192},
      {8192, 57344, 8192},
      {8192, 8192, 28672},
  };
  return shapes;
}

namespace {

long long parse_dim(const std::string& text, const std::string& entry) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v <= 0)
    throw std::invalid_argument(
        "GEMM shape '" + entry +
        "': sizes must be positive integers (N, MxNxK, A..B or transformer)");
  return v;
}

bool power_of_two(long long v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

std::vector<GemmShape> parse_gemm_shapes(const std::vector<std::string>& entries) {
  std::vector<GemmShape> out;
  auto add = [&](GemmShape s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (const auto& e : entries) {
    if (e == "transformer") {
      for (const auto& s : transformer_shapes()) add(s);
    } else if (auto dots = e.find(".."); dots != std::string::npos) {
      long long lo = parse_dim(e.substr(0, dots), e), hi = parse_dim(e.substr(dots + 2), e);
      if (!power_of_two(lo) || !power_of_two(hi) || lo > hi)
        throw std::invalid_argument("GEMM shape range '" + e +
                                    "': both ends must be powers of two, first <= last");
      for (long long v = lo; v <= hi; v *= 2) add({v, v, v});
    } else if (e.find('x') != std::string::npos) {
      size_t a = e.find('x'), b = e.find('x', a + 1);
      if (b == std::string::npos || e.find('x', b + 1) != std::string::npos)
        throw std::invalid_argument("GEMM shape '" + e + "': expected MxNxK");
      add({parse_dim(e.substr(0, a), e), parse_dim(e.substr(a + 1, b - a - 1), e),
           parse_dim(e.substr(b + 1), e)});
    } else {
      long long v = parse_dim(e, e);
      add({v, v, v});
    }
  }
  if (out.empty()) throw std::invalid_argument("no GEMM shape given");
  return out;
}

const std::vector<std::string>& cublaslt_dtypes() {
  static const std::vector<std::string> d = {"fp16", "bf16", "tf32", "fp32", "fp8_e4m3"};
  return d;
}

const std::vector<std::string>& openblas_dtypes() {
  static const std::vector<std::string> d = {"fp32", "fp64", "bf16"};
  return d;
}

std::string openblas_bf16_waiver(const void* sbgemm, const std::string& config) {
  if (sbgemm) return "";
  return "the loaded OpenBLAS (" + config +
         ") does not export cblas_sbgemm (Debian's 0.3.21 declares it in cblas.h but builds "
         "without BUILD_BFLOAT16), so BF16 GEMM cannot run on the CPU";
}

std::string GemmVerification::failure_message(const std::string& dtype, const GemmShape& s) const {
  char buf[400];
  if (products_wrong > 0) {
    std::snprintf(buf, sizeof buf,
                  "%s %lldx%lldx%lld: %lld of %lld products differed from the verified first one "
                  "(%lld elements off by more than %g relative): a wrong product was computed "
                  "and overwritten by the next; no rate is reported",
                  dtype.c_str(), s.m, s.n, s.k, products_wrong, products_checked, elements_wrong,
                  kProductCompareTolerance);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "%s %lldx%lldx%lld: sampled error %.3g x the bound at C(%lld,%lld), row checksum "
                "%.3g x the bound at row %lld (%d samples, %lld rows; pass <= 1); the product is "
                "wrong and no rate is reported",
                dtype.c_str(), s.m, s.n, s.k, max_ratio, worst_i, worst_j, checksum_max_ratio,
                checksum_worst_row, samples, checksum_rows);
  return buf;
}

nlohmann::json GemmVerification::to_json() const {
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); };
  nlohmann::json j = {{"samples", samples},
                      {"max_ratio", num(max_ratio)},
                      {"worst", {worst_i, worst_j}},
                      {"checksum",
                       {{"rows", checksum_rows},
                        {"max_ratio", num(checksum_max_ratio)},
                        {"worst_row", checksum_worst_row}}},
                      {"passed", passed()}};
  if (products_checked >= 0)
    j["products"] = {{"checked", products_checked},
                     {"wrong", products_wrong},
                     {"elements_wrong", elements_wrong}};
  return j;
}

nlohmann::json gemm_op_params(const std::string& dtype, const GemmShape& s, std::uint64_t seed,
                              int samples, int algos, bool fast_accum) {
  return {{"dtype", dtype}, {"m", s.m},       {"n", s.n},           {"k", s.k},
          {"seed", seed},   {"algos", algos}, {"samples", samples}, {"fast_accum", fast_accum}};
}

GemmVerification gemm_verification_of(const nlohmann::json& v) {
  auto ratio = [&](const char* key) {
    auto e = v.find(key);
    return e != v.end() && e->is_number() ? e->get<double>() : INFINITY;
  };
  GemmVerification out;
  out.samples = v.value("samples", 0);
  out.max_ratio = ratio("max_ratio");
  out.worst_i = v.value("worst_i", 0LL);
  out.worst_j = v.value("worst_j", 0LL);
  out.checksum_rows = v.value("checksum_rows", 0LL);
  out.checksum_max_ratio = ratio("checksum_max_ratio");
  out.checksum_worst_row = v.value("checksum_worst_row", 0LL);
  out.checks = v.value("checks", 0LL);
  auto count = [&](const char* key, long long def) {
    auto e = v.find(key);
    return e != v.end() && e->is_number_integer() ? e->get<long long>() : def;
  };
  out.products_checked = count("products_checked", -1);
  out.products_wrong = count("products_wrong", 0);
  out.elements_wrong = count("elements_wrong", 0);
  return out;
}


namespace {

using SbgemmFn = void (*)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
                          blasint, blasint, float, const std::uint16_t*, blasint,
                          const std::uint16_t*, blasint, float, float*, blasint);

constexpr std::uint64_t kDefaultSeed = 20261130;

/// A freshly drawn column-major matrix of `rows` x `cols` in type T (T = uint16_t: BF16 bits).
template <class T>
std::vector<T> draw(long long rows, long long cols, std::uint64_t seed, int which) {
  std::vector<T> out(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < out.size(); ++i) {
    double v = gemm_input_value(seed, which, i);
    if constexpr (std::is_same_v<T, std::uint16_t>)
      out[i] = float_to_bf16(static_cast<float>(v));
    else
      out[i] = static_cast<T>(v);
  }
  return out;
}

template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, std::uint16_t>)
    return bf16_to_float(v);
  else
    return static_cast<double>(v);
}

/// The `fast_accum` values of a case: FP8 on cuBLASLt is measured without and with fast
/// accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM); other cases have no such param ("").
std::vector<std::string> fast_accum_modes(bool gpu, const std::string& dtype) {
  if (gpu && dtype == "fp8_e4m3") return {"off", "on"};
  return {""};
}

class Gemm : public Benchmark {
 public:
  std::string id() const override { return "compute.gemm"; }
  std::string description() const override {
    return "matrix product rate: cuBLASLt per GPU (fp16 bf16 tf32 fp32 fp8_e4m3), OpenBLAS per "
           "node (fp32 fp64 bf16)";
  }
  Level level() const override { return Level::gpu; }
  bool needs_gpu() const override { return true; }
  Level case_level(const json& p) const override {
    return GemmCase::of(p).cpu() ? Level::node : Level::gpu;
  }
  bool case_needs_gpu(const json& p) const override { return !GemmCase::of(p).cpu(); }
  /// The OpenBLAS cases (a GPU's are not spread: its clocks, not the host, move them).
  bool in_rounds(const json& p) const override { return !case_needs_gpu(p); }

  std::vector<json> cases(const Settings& s) const override {
    for (const auto* k : {&threads_, &algos_, &samples_})
      if (k->given(s) && (*k)(s) < 1)
        throw InputError("--set " + id() + "." + k->spec().name + ": must be at least 1");
    auto backends = backends_(s);
    std::vector<std::string> wanted = dtypes_(s);
    for (const auto& d : wanted) {
      bool known = std::count(cublaslt_dtypes().begin(), cublaslt_dtypes().end(), d) +
                   std::count(openblas_dtypes().begin(), openblas_dtypes().end(), d);
      if (!known)
        throw InputError("--set " + id() + ".dtypes: unknown dtype '" + d +
                         "' (fp16, bf16, tf32, fp32, fp64, fp8_e4m3)");
    }
    std::vector<json> out;
    for (const auto& backend : backends) {
      bool gpu = backend == "cublaslt";
      if (!gpu && backend != "openblas")
        throw InputError("--set " + id() + ".backends: unknown backend '" + backend +
                         "' (cublaslt, openblas)");
      const Knob<std::vector<std::string>>& knob = gpu ? shapes_ : cpu_shapes_;
      std::vector<GemmShape> shapes;
      try {
        shapes = parse_gemm_shapes(knob(s));
      } catch (const std::invalid_argument& e) {
        throw InputError("--set " + id() + "." + knob.spec().name + ": " + e.what());
      }
      for (const auto& dtype : gpu ? cublaslt_dtypes() : openblas_dtypes()) {
        if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), dtype) == wanted.end())
          continue;
        for (const auto& sh : shapes)
          for (const auto& fast : fast_accum_modes(gpu, dtype))
            out.push_back(GemmCase{backend, dtype, sh, fast}.params());
      }
    }
    return out;
  }

  std::string applicable(const NodeEnv&) const override { return ""; }

  /// OpenBLAS cases are waived in a build without OpenBLAS, and BF16 where the loaded library
  /// lacks cblas_sbgemm, so that --dry-run neither counts them nor estimates their time.
  std::string case_waiver(const json& p, const NodeEnv&) const override {
    const GemmCase c = GemmCase::of(p);
    if (!c.cpu()) return "";
    if (std::string why = openblas_absent(); !why.empty()) return why;
    if (c.dtype != "bf16") return "";
    return openblas_bf16_waiver(dlsym(RTLD_DEFAULT, "cblas_sbgemm"), openblas_get_config());
  }

  /// 2mnk FLOP per product at a nominal rate through the measurement loop, plus setup.
  /// Calibrated on the idle 2-core CI machine (docs/launch.md "Estimates"): OpenBLAS 86
  /// GFLOP/s fp32 and 43 fp64 at 1024^3, 0.05 s of setup (measured 0.10-0.36 s a case in `ci`);
  /// cuBLASLt at 100 TFLOP/s with 1 s of setup (handles, buffers, the algorithm search).
  double estimate_s(const Settings& s, const json& p) const override {
    const GemmCase c = GemmCase::of(p);
    const double flop = gemm_flop(c.shape);
    const bool cpu = c.cpu();
    double rate = !cpu ? 100e12 : c.dtype == "fp64" ? 43e9 : 86e9;
    return (cpu ? 0.05 : 1.0) +
           loop_estimate_s(case_min_time(s, id()), flop / rate, s.loop_samples());
  }

  void run(CaseRun& run) const override {
    const GemmCase c = GemmCase::of(run.params());
    if (c.cpu())
      run_openblas(run, c.dtype, c.shape);
    else
      run_cublaslt(run, c.dtype, c.shape);
  }

 private:
  Knob<std::vector<std::string>> backends_ = knobs_.list(
      "backends", "cublaslt,openblas", "cublaslt (per GPU) and/or openblas (per node, on the CPU)");
  Knob<std::vector<std::string>> dtypes_ =
      knobs_.list("dtypes", "", "only these dtypes (default: every dtype of each backend)");
  Knob<std::vector<std::string>> shapes_ =
      knobs_.list("shapes", SuiteDefault("8192", "8192", "8192,1024..16384,transformer"),
                  "cuBLASLt shapes: N (cube), MxNxK, A..B (powers of two) or transformer");
  Knob<std::vector<std::string>> cpu_shapes_ = knobs_.list(
      "cpu_shapes", SuiteDefault("256..1024", "4096", "1024..8192"), "OpenBLAS shapes, as shapes");
  Knob<long long> algos_ = knobs_.integer(
      "algos", "8", "count", "cuBLASLt heuristic algorithms timed; the fastest is kept");
  Knob<long long> samples_ =
      knobs_.integer("samples", "64", "count", "output elements checked against a reference");
  Knob<long long> threads_ =
      knobs_.integer("threads", "", "count", "OpenBLAS threads (default: the physical cores)");
  Knob<long long> seed_ =
      knobs_.integer("seed", std::to_string(kDefaultSeed), "", "seed of the random inputs");

  std::uint64_t seed(const CaseRun& run) const {
    return static_cast<std::uint64_t>(seed_(run.settings()));
  }
  int samples(const CaseRun& run) const { return static_cast<int>(samples_(run.settings())); }

  void record_rate(CaseRun& run, const GemmShape& shape, const std::string& dtype,
                   const GemmVerification& ver) const {
    double flop = gemm_flop(shape);
    run.add_rate("tflops", Work::flop(flop));  // gemm_tflops per sample
    run.add_best_rate("tflops_best", Work::flop(flop));
    run.set_extra("flop_per_op", flop);
    nlohmann::json v = ver.to_json();
    v["reference"] = "long double over the stored inputs; bound of compute/gemm_check.hpp";
    run.set_extra("verification", v);
    run.set_extra("dtype", dtype);
  }

  template <class In, class Out, class Gemm3>
  void openblas_case(CaseRun& run, const std::string& dtype, const GemmShape& s,
                     const Gemm3& product) const {
    std::uint64_t sd = seed(run);
    std::vector<In> a = draw<In>(s.m, s.k, sd, 0), b = draw<In>(s.k, s.n, sd, 1);
    std::vector<Out> c(static_cast<size_t>(s.m * s.n), Out(0));
    product(a.data(), b.data(), c.data());
    GemmVerification ver = gemm_check(
        s, [&](long long i, long long q) { return as_double(a[static_cast<size_t>(i + q * s.m)]); },
        [&](long long q, long long j) { return as_double(b[static_cast<size_t>(q + j * s.k)]); },
        [&](long long i, long long j) {
          return static_cast<double>(c[static_cast<size_t>(i + j * s.m)]);
        },
        samples(run), sd, gemm_bound(dtype));
    CHECK_MSG(ver.passed(), "OpenBLAS", ver.failure_message(dtype, s));
    run.exec([&](long long ops) {
      for (long long i = 0; i < ops; ++i) product(a.data(), b.data(), c.data());
      return -1.0;
    });
    record_rate(run, s, dtype, ver);
  }

  void run_openblas(CaseRun& run, const std::string& dtype, const GemmShape& s) const {
    std::string config = openblas_get_config();
    SbgemmFn sbgemm = nullptr;
    if (dtype == "bf16") {  // case_waiver() has waived the case where this is null
      sbgemm = reinterpret_cast<SbgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
      std::string why = openblas_bf16_waiver(reinterpret_cast<void*>(sbgemm), config);
      if (!why.empty()) throw Waived(why);
    }
    int cores = run.env().cpu.physical_cores > 0 ? run.env().cpu.physical_cores : 1;
    int threads =
        static_cast<int>(threads_.given(run.settings()) ? threads_(run.settings()) : cores);
    if (threads < 1) threads = 1;
    openblas_set_num_threads(threads);
    auto m = static_cast<blasint>(s.m), n = static_cast<blasint>(s.n),
         k = static_cast<blasint>(s.k);
    if (dtype == "fp32") {
      openblas_case<float, float>(run, dtype, s, [&](const float* a, const float* b, float* c) {
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, m, b, k, 0.0f, c,
                    m);
      });
    } else if (dtype == "fp64") {
      openblas_case<double, double>(run, dtype, s,
                                    [&](const double* a, const double* b, double* c) {
                                      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n,
                                                  k, 1.0, a, m, b, k, 0.0, c, m);
                                    });
    } else if (dtype == "bf16") {
      openblas_case<std::uint16_t, float>(
          run, dtype, s, [&](const std::uint16_t* a, const std::uint16_t* b, float* c) {
            sbgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, m, b, k, 0.0f, c,
                   m);
          });
    } else {
      throw InputError("compute.gemm: dtype '" + dtype + "' is not an OpenBLAS dtype");
    }
    run.set_extra("backend", {{"library", "OpenBLAS"},
                              {"config", config},
                              {"core", openblas_get_corename()},
                              {"threads", threads},
                              {"function", dtype == "fp32"   ? "cblas_sgemm"
                                           : dtype == "fp64" ? "cblas_dgemm"
                                                             : "cblas_sbgemm"}});
    run.set_extra("input_type", dtype);
    run.set_extra("output_type", dtype == "bf16" ? "fp32" : dtype);
    run.set_extra("compute_type", dtype == "fp64" ? "fp64" : "fp32");
    run.set_extra("layout", "column-major, C = A B (NN)");
  }

  void run_cublaslt(CaseRun& run, const std::string& dtype, const GemmShape& s) const {
    const int algos = static_cast<int>(algos_(run.settings()));
    const bool fast_accum = GemmCase::of(run.params()).fast_accum == "on";
    GpuCase gpu(run, "gemm", gemm_op_params(dtype, s, seed(run), samples(run), algos, fast_accum),
                {.library = "cuBLASLt"});
    const json& info = gpu.info();
    GemmVerification ver = gemm_verification_of(info.at("verification"));
    CHECK_MSG(ver.passed(), "cuBLASLt", ver.failure_message(dtype, s));
    gpu.exec();
    record_rate(run, s, dtype, ver);
    gpu.record_telemetry();
    run.set_extra("backend", {{"library", "cuBLASLt"},
                              {"device", info.at("device")},
                              {"pci_bus_id", info.at("pci_bus_id")},
                              {"compute_capability", info.at("compute_capability")},
                              {"workspace_bytes", info.at("workspace_bytes")}});
    run.set_extra("algorithm", info.at("algorithm"));
    // How the timed batches were launched (CUDA graphs, or one by one and why); older plugins
    // do not say.
    if (info.contains("launch")) run.set_extra("launch", info.at("launch"));
    for (const char* key : {"input_type", "output_type", "compute_type"})
      run.set_extra(key, info.at(key));
    // What the plugin set; a plugin that predates the param never sets it (false).
    run.set_extra("fast_accum", info.value("fast_accum", false));
    run.set_extra("layout", "column-major, D = A^T B (TN), beta = 0");
  }
};

CLUSTERBENCH_REGISTER(Gemm);

}  // namespace
}  // namespace clusterbench::compute
