// GEMM engines of the burn-in (compute/burnin.hpp).
#include "compute/burnin.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "compute/cpu_blas.hpp"
#include "compute/gemm_check.hpp"
#include "core/error.hpp"
#include "core/gpu_case.hpp"

namespace clusterbench::compute {

namespace {

using Clock = std::chrono::steady_clock;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <class T>
class OpenblasSoak : public SoakGemm {
 public:
  OpenblasSoak(std::string dtype, const GemmShape& s, std::uint64_t seed, int samples)
      : dtype_(std::move(dtype)), s_(s), samples_(samples) {
    a_.resize(static_cast<size_t>(s.m * s.k));
    b_.resize(static_cast<size_t>(s.k * s.n));
    c_.assign(static_cast<size_t>(s.m * s.n), T(0));
    for (size_t i = 0; i < a_.size(); ++i) a_[i] = static_cast<T>(gemm_input_value(seed, 0, i));
    for (size_t i = 0; i < b_.size(); ++i) b_[i] = static_cast<T>(gemm_input_value(seed, 1, i));
    openblas_set_num_threads(1);
    product();    // warm-up, and a product for a check before the first interval
    first_ = c_;  // every later product is compared with this one (verify checks it first)
  }

  SoakWork run_until(Clock::time_point deadline, double extra_fraction) override {
    SoakWork w;
    auto wall0 = Clock::now();
    double cpu0 = thread_cpu_seconds();
    double comparing = 0;
    do {
      double t0 = thread_cpu_seconds();
      product();
      if (extra_fraction > 0) {
        // Busy, not asleep: the injected slowdown must show in this thread's CPU time.
        double until = thread_cpu_seconds() + extra_fraction * (thread_cpu_seconds() - t0);
        while (thread_cpu_seconds() < until) {
        }
      }
      const double c0 = thread_cpu_seconds();
      compare_with_first();
      comparing += thread_cpu_seconds() - c0;
      ++w.products;
    } while (Clock::now() < deadline);
    w.seconds = thread_cpu_seconds() - cpu0 - comparing;  // the rate is the products' own
    w.wall_seconds = std::chrono::duration<double>(Clock::now() - wall0).count();
    return w;
  }

  GemmVerification verify(std::uint64_t seed, bool corrupt) override {
    if (corrupt) c_[0] += static_cast<T>(1);  // C(0,0) is always sampled
    GemmVerification v = gemm_check(
        s_, [&](long long i, long long q) { return static_cast<double>(a_[idx(i + q * s_.m)]); },
        [&](long long q, long long j) { return static_cast<double>(b_[idx(q + j * s_.k)]); },
        [&](long long i, long long j) { return static_cast<double>(c_[idx(i + j * s_.m)]); },
        samples_, seed, gemm_bound(dtype_));
    v.products_checked = std::exchange(compared_, 0);
    v.products_wrong = std::exchange(wrong_products_, 0);
    v.elements_wrong = std::exchange(wrong_elements_, 0);
    return v;
  }

  json facts() const override {
    return {{"library", "OpenBLAS"},
            {"config", openblas_get_config()},
            {"core", openblas_get_corename()},
            {"threads", 1},
            {"function", std::is_same_v<T, float> ? "cblas_sgemm" : "cblas_dgemm"},
            {"layout", "column-major, C = A B (NN)"}};
  }
  std::string time_basis() const override { return "thread_cpu"; }

 private:
  static size_t idx(long long i) { return static_cast<size_t>(i); }
  void product() {
    auto m = static_cast<blasint>(s_.m), n = static_cast<blasint>(s_.n),
         k = static_cast<blasint>(s_.k);
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a_.data(), m, b_.data(),
                  k, 0.0f, c_.data(), m);
    else
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a_.data(), m, b_.data(),
                  k, 0.0, c_.data(), m);
  }
  /// Each product against the first (gpu-burn's check, as the GPU soak does on the device).
  void compare_with_first() {
    long long wrong = 0;
    for (size_t i = 0; i < c_.size(); ++i) {
      const double x = static_cast<double>(c_[i]), r = static_cast<double>(first_[i]);
      if (!(std::fabs(x - r) <= kProductCompareTolerance * std::fabs(r))) ++wrong;
    }
    ++compared_;
    if (wrong) ++wrong_products_, wrong_elements_ += wrong;
  }

  std::string dtype_;
  GemmShape s_;
  int samples_;
  std::vector<T> a_, b_, c_, first_;
  long long compared_ = 0, wrong_products_ = 0, wrong_elements_ = 0;  ///< since last verify()
};

/// The plugin's "gemm" operation (compute/gemm_gpu.cpp), run back to back by the soak.
class CublasltSoak : public SoakGemm {
 public:
  CublasltSoak(std::string dtype, const GemmShape& s, std::uint64_t seed, int samples)
      : dtype_(std::move(dtype)), s_(s), samples_(samples), op_(create(seed, 8)) {
    GemmVerification v = gemm_verification_of(op_.info().at("verification"));
    CHECK_MSG(v.passed(), "cuBLASLt", v.failure_message(dtype_, s_));
  }

  SoakWork run_until(Clock::time_point deadline, double extra_fraction) override {
    SoakWork w;
    auto wall0 = Clock::now();
    do {
      double sec = gpu_call(kLibrary, [&] { return op_.run(batch_); });
      if (extra_fraction > 0) {
        std::this_thread::sleep_for(std::chrono::duration<double>(extra_fraction * sec));
        sec *= 1 + extra_fraction;
      }
      w.products += batch_;
      w.seconds += sec;
      // Batches of about 50 ms: short against an interval, long against a launch.
      if (sec > 0 && sec < 0.025) batch_ = std::min<long long>(batch_ * 2, 1 << 20);
    } while (Clock::now() < deadline);
    w.wall_seconds = std::chrono::duration<double>(Clock::now() - wall0).count();
    return w;
  }

  /// The soaked operation's own last product, re-checked in place (cb_gpu_op_check): the
  /// sampled elements and every row's checksum (compute/gemm_check.hpp); and every product since
  /// the last call, each compared on the GPU with the verified first one as it was made
  /// (verify_each): a wrong product the next one overwrote is counted here.
  GemmVerification verify(std::uint64_t, bool corrupt) override {
    GemmVerification v =
        gemm_verification_of(gpu_call(kLibrary, [&]() -> json { return op_.check(); }));
    if (v.products_checked >= 0) {  // a plugin that compares each product: since last time
      const GemmVerification total = v;
      v.products_checked -= seen_.products_checked;
      v.products_wrong -= seen_.products_wrong;
      v.elements_wrong -= seen_.elements_wrong;
      seen_ = total;
    }
    if (corrupt) v.max_ratio = INFINITY;  // test fault injection (docs/burnin.md)
    return v;
  }

  json facts() const override {
    const json& info = op_.info();
    return {{"library", kLibrary},
            {"device", info.at("device")},
            {"pci_bus_id", info.at("pci_bus_id")},
            {"compute_capability", info.at("compute_capability")},
            {"algorithm_id", info.at("algorithm").at("id")},
            {"input_type", info.at("input_type")},
            {"output_type", info.at("output_type")},
            {"compute_type", info.at("compute_type")},
            {"layout", "column-major, D = A^T B (TN), beta = 0"}};
  }
  std::string time_basis() const override { return "cuda_events"; }
  std::string pci_bus_id() const override { return op_.info().at("pci_bus_id"); }

 private:
  static constexpr const char* kLibrary = "cuBLASLt";
  /// The soaked product of the soak's shape from `seed`, the best of `algos` algorithms,
  /// verified.
  gpu::Operation create(std::uint64_t seed, int algos) const {
    json p = gemm_op_params(dtype_, s_, seed, samples_, algos);
    p["verify_each"] = true;
    return gpu_call(kLibrary, [&] { return gpu::Operation("gemm", p); });
  }

  std::string dtype_;
  GemmShape s_;
  int samples_;
  gpu::Operation op_;
  long long batch_ = 1;
  /// The running product counts at the last verify() (products_checked 0 before the first).
  GemmVerification seen_ = [] {
    GemmVerification v;
    v.products_checked = 0;
    return v;
  }();
};

}  // namespace

std::unique_ptr<SoakGemm> make_openblas_soak(const std::string& dtype, const GemmShape& shape,
                                             std::uint64_t seed, int samples) {
  if (dtype == "fp32") return std::make_unique<OpenblasSoak<float>>(dtype, shape, seed, samples);
  if (dtype == "fp64") return std::make_unique<OpenblasSoak<double>>(dtype, shape, seed, samples);
  throw std::invalid_argument("burn-in on OpenBLAS: dtype '" + dtype + "' (fp32, fp64)");
}

double estimate_openblas_product_seconds(const std::string& dtype, const GemmShape& shape) {
  if (dtype != "fp32" && dtype != "fp64")
    throw std::invalid_argument("burn-in on OpenBLAS: dtype '" + dtype + "' (fp32, fp64)");
  long long p = std::max(1LL, std::min(128LL, std::max({shape.m, shape.n, shape.k})));
  GemmShape probe{p, p, p};
  std::unique_ptr<SoakGemm> g = make_openblas_soak(dtype, probe, 1, 1);  // one warm-up product
  double best = INFINITY;
  for (int i = 0; i < 3; ++i) {
    SoakWork w = g->run_until(Clock::now(), 0);  // exactly one product
    best = std::min(best, w.seconds);
  }
  double scale = static_cast<double>(shape.m) * static_cast<double>(shape.n) *
                 static_cast<double>(shape.k) / static_cast<double>(p * p * p);
  return std::max(best, 1e-9) * scale;
}

std::unique_ptr<SoakGemm> make_cublaslt_soak(const std::string& dtype, const GemmShape& shape,
                                             std::uint64_t seed, int samples) {
  return std::make_unique<CublasltSoak>(dtype, shape, seed, samples);
}

}  // namespace clusterbench::compute
