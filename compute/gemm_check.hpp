// compute.gemm's correctness check, shared by the GPU plugin (compute/gemm_gpu.cpp), the CPU
// backend and burn-in (compute/gemm.cpp, compute/burnin.cpp), the fake plugin and the tests, so
// that all of them judge a product by the same bound (docs/gemm.md "Verification").
//
// Per element (sampled):  |c - ref| <= c_out u_out |ref| + c_acc(K) sum_p |a_p b_p|
// Checksum (every element): D 1 against A (B 1), one row sum per row of D, two GEMVs.
//
// Derivation of the constants (u = unit roundoff, 2^-(mantissa bits + 1)):
//  - the reference is exact (long double over the stored, already rounded inputs), so the only
//    errors are the accumulation's and the output's rounding;
//  - output: round to nearest gives |fl(x) - x| <= u_out |x|; x itself carries the accumulation
//    error, so c_out = 2 leaves room for it;
//  - accumulation of K products in a type of roundoff u_acc: the worst case is K u_acc sum|ab|;
//    with rounding errors of random sign (Higham and Mary, "A new approach to probabilistic
//    rounding error analysis", SISC 2019) it is lambda sqrt(K) u_acc sum|ab| with probability
//    at least 1 - 2 exp(-lambda^2 / 2) per dot product; lambda = 6 (a false alarm below 1e-7
//    per element). c_acc(K) = lambda sqrt(K) u_acc;
//  - the checksum's row i sums N output errors that are independent: the same lambda over their
//    root sum of squares, tol_i = lambda (c_out u_out ||D_i||_2 + c_acc(K) sum_p |a_ip| ||B_p||_2)
//    (Minkowski bounds the accumulation terms' 2-norm by the last sum: one more GEMV).
// With the inputs of gemm_input_value (magnitudes in [0.25, 1), random sign), |ref| ~ 0.44
// sqrt(K) while c_acc(K) sum|ab| ~ 0.39 lambda K^1.5 u_acc (0.7 at K = 28672, FP32): a zero, a
// K-slice short or a foreign product stands far outside the bound for every K of the suites (4096
// to 28672) when u_acc is FP32's. FP8 with fast accumulation keeps about 14 bits (u_acc = 2^-14,
// DeepSeek-V3 report section 3.3.2): its bound is about 1000 times wider and catches gross errors
// only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "compute/gemm.hpp"

namespace clusterbench::compute {

/// The error model of one dtype: unit roundoffs of the output and of the accumulation, c_out and
/// lambda (the derivation above).
struct GemmBound {
  double u_out = 0, u_acc = 0, c_out = 2, lambda = 6;
  /// c_acc(K) = lambda sqrt(K) u_acc (probabilistic accumulation bound).
  double c_acc(long long k) const { return lambda * std::sqrt(static_cast<double>(k)) * u_acc; }
  /// The allowed |c - ref| of one element whose reference is `ref` and sum_p |a_p b_p| is
  /// `abs_sum`.
  double tolerance(long long k, double ref, double abs_sum) const {
    return c_out * u_out * std::fabs(ref) + c_acc(k) * abs_sum;
  }
};

/// The bound of `dtype` (fp64, fp32, tf32, fp16, bf16, fp8_e4m3; output fp64, fp32, fp32, fp16,
/// bf16, bf16; accumulation fp64 for fp64, else fp32, or 2^-14 for fp8 with `fast_accum`).
/// Throws std::invalid_argument on an unknown dtype.
inline GemmBound gemm_bound(const std::string& dtype, bool fast_accum = false) {
  const double fp64 = 0x1p-53, fp32 = 0x1p-24, fp16 = 0x1p-11, bf16 = 0x1p-8;
  if (dtype == "fp64") return {fp64, fp64};
  if (dtype == "fp32" || dtype == "tf32") return {fp32, fp32};
  if (dtype == "fp16") return {fp16, fp32};
  if (dtype == "bf16") return {bf16, fp32};
  if (dtype == "fp8_e4m3") return {bf16, fast_accum ? 0x1p-14 : fp32};
  throw std::invalid_argument("unknown GEMM dtype '" + dtype + "'");
}

/// |c - ref| / tolerance of one element over its K stored inputs a(p), b(p); pass <= 1. +inf for
/// a NaN c or an error where the tolerance is 0.
template <class GetA, class GetB>
double gemm_element_ratio(long long k, const GetA& a, const GetB& b, double c,
                          const GemmBound& bound) {
  long double ref = 0, abs_sum = 0;
  for (long long p = 0; p < k; ++p) {
    long double prod = static_cast<long double>(a(p)) * static_cast<long double>(b(p));
    ref += prod;
    abs_sum += std::fabs(prod);
  }
  if (std::isnan(c)) return INFINITY;
  double err = static_cast<double>(std::fabs(static_cast<long double>(c) - ref));
  double tol = bound.tolerance(k, static_cast<double>(ref), static_cast<double>(abs_sum));
  return tol > 0 ? err / tol : err == 0 ? 0 : INFINITY;
}

/// The checksum of one row of D, from four per-row numbers the GEMVs give: d_sum = sum_j D_ij,
/// d_norm = ||D_i||_2, ref_sum = (A (B 1))_i, acc = sum_p |a_ip| ||B_p||_2. Returns
/// |d_sum - ref_sum| / tol_i (pass <= 1); +inf when a number is NaN.
inline double gemm_row_ratio(double d_sum, double d_norm, double ref_sum, double acc, long long k,
                             const GemmBound& bound) {
  double tol = bound.lambda * (bound.c_out * bound.u_out * d_norm + bound.c_acc(k) * acc);
  double err = std::fabs(d_sum - ref_sum);
  if (std::isnan(err) || std::isnan(tol)) return INFINITY;
  return tol > 0 ? err / tol : err == 0 ? 0 : INFINITY;
}

/// The row checksums of D = A B on the host: y = B 1 and r_p = ||B_p||_2 (one pass over B), then
/// per row the GEMVs A y and |A| r and D's row sum and norm. Returns the worst row's ratio and
/// sets `worst_row`. a(i, p), b(p, j), d(i, j) give stored values as double.
template <class GetA, class GetB, class GetD>
double gemm_checksum(const GemmShape& s, const GetA& a, const GetB& b, const GetD& d,
                     const GemmBound& bound, long long& worst_row) {
  std::vector<long double> y(static_cast<size_t>(s.k), 0), r(static_cast<size_t>(s.k), 0);
  for (long long p = 0; p < s.k; ++p) {
    for (long long j = 0; j < s.n; ++j) {
      long double v = b(p, j);
      y[static_cast<size_t>(p)] += v;
      r[static_cast<size_t>(p)] += v * v;
    }
    r[static_cast<size_t>(p)] = std::sqrt(r[static_cast<size_t>(p)]);
  }
  double worst = 0;
  worst_row = 0;
  for (long long i = 0; i < s.m; ++i) {
    long double ref = 0, acc = 0, sum = 0, sq = 0;
    for (long long p = 0; p < s.k; ++p) {
      long double v = a(i, p);
      ref += v * y[static_cast<size_t>(p)];
      acc += std::fabs(v) * r[static_cast<size_t>(p)];
    }
    for (long long j = 0; j < s.n; ++j) {
      long double v = d(i, j);
      sum += v;
      sq += v * v;
    }
    double ratio = gemm_row_ratio(static_cast<double>(sum), static_cast<double>(std::sqrt(sq)),
                                  static_cast<double>(ref), static_cast<double>(acc), s.k, bound);
    if (i == 0 || !(ratio <= worst)) worst = ratio, worst_row = i;
  }
  return worst;
}

/// The whole check on the host: `samples` elements (gemm_sample_points from `seed`) against the
/// per-element bound, and every row's checksum.
template <class GetA, class GetB, class GetD>
GemmVerification gemm_check(const GemmShape& s, const GetA& a, const GetB& b, const GetD& d,
                            int samples, std::uint64_t seed, const GemmBound& bound) {
  GemmVerification v;
  for (const auto& [i, j] : gemm_sample_points(s, samples, seed)) {
    double e = gemm_element_ratio(
        s.k, [&](long long p) { return a(i, p); }, [&](long long p) { return b(p, j); }, d(i, j),
        bound);
    if (v.samples == 0 || !(e <= v.max_ratio)) v.max_ratio = e, v.worst_i = i, v.worst_j = j;
    ++v.samples;
  }
  v.checksum_max_ratio = gemm_checksum(s, a, b, d, bound, v.checksum_worst_row);
  v.checksum_rows = s.m;
  return v;
}

// --- Host rounding of the GEMM types (the tests' emulation, the fake plugin, the CPU backend) ---

/// `f` rounded to nearest even, keeping `bits` explicit mantissa bits of a float (10: tf32 and
/// the mantissa of fp16; 7: bf16). Finite inputs; the exponent range is the caller's concern.
inline float gemm_round_mantissa(float f, int bits) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const int drop = 23 - bits;
  u += (1u << (drop - 1)) - 1 + ((u >> drop) & 1);
  u &= ~((1u << drop) - 1);
  std::memcpy(&f, &u, 4);
  return f;
}

/// How the GPU stores an input of `dtype` (fp8_e4m3: 3 mantissa bits, normals from 2^-6, max
/// 448; fp16: 10 bits; bf16: 7; tf32: 10 bits in a float; fp32, fp64 unchanged but fp32 as a
/// float), as a function of the value: resolve the dtype once for a whole matrix. Inputs of
/// gemm_input_value are normal in every type. Throws std::invalid_argument on an unknown dtype.
inline double (*gemm_input_rounding(const std::string& dtype))(double) {
  if (dtype == "fp64") return [](double v) { return v; };
  if (dtype == "fp32") return [](double v) { return static_cast<double>(static_cast<float>(v)); };
  if (dtype == "tf32" || dtype == "fp16")
    return [](double v) {
      return static_cast<double>(gemm_round_mantissa(static_cast<float>(v), 10));
    };
  if (dtype == "bf16")
    return
        [](double v) { return static_cast<double>(gemm_round_mantissa(static_cast<float>(v), 7)); };
  if (dtype == "fp8_e4m3")
    return [](double v) {
      return static_cast<double>(
          std::fmin(448.0f, std::fmax(-448.0f, gemm_round_mantissa(static_cast<float>(v), 3))));
    };
  throw std::invalid_argument("unknown GEMM dtype '" + dtype + "'");
}

/// `v` as the GPU stores an input of `dtype` (gemm_input_rounding).
inline double gemm_round_input(const std::string& dtype, double v) {
  return gemm_input_rounding(dtype)(v);
}

/// `v` (a float accumulator) as D of `dtype` stores it: fp16 (10 bits), bf16 (7 bits, also for
/// fp8_e4m3), else unchanged. Normal range assumed.
inline double gemm_round_output(const std::string& dtype, float v) {
  if (dtype == "fp16") return gemm_round_mantissa(v, 10);
  if (dtype == "bf16" || dtype == "fp8_e4m3") return gemm_round_mantissa(v, 7);
  return v;
}

}  // namespace clusterbench::compute
