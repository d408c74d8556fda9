// compute.gemm: matrix product rate on each GPU (cuBLASLt, in the GPU plugin) and on the host CPU
// (OpenBLAS). Formulas: docs/metrics.md "GEMM"; guide: docs/gemm.md. The inline functions here are
// shared with the plugin's compute/gemm_gpu.cpp, so both sides draw and check the same way.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/api/bf16.hpp"

namespace clusterbench::compute {

/// One product's shape: C (M x N) = A (M x K) B (K x N).
struct GemmShape {
  long long m = 0, n = 0, k = 0;
  bool operator==(const GemmShape&) const = default;
};

/// One case of compute.gemm, typed: the params of its case key are written (params()) and read
/// (of()) here only.
struct GemmCase {
  std::string backend;  ///< "cublaslt" (per GPU) or "openblas" (per node, on the CPU)
  std::string dtype;    ///< "fp16", "bf16", "tf32", "fp32", "fp64", "fp8_e4m3"
  GemmShape shape;
  /// FP8 on cuBLASLt: "off" or "on" (CUBLASLT_MATMUL_DESC_FAST_ACCUM); "" (no param) otherwise.
  std::string fast_accum;

  /// Whether the case runs on the CPU (OpenBLAS, once per node).
  bool cpu() const { return backend == "openblas"; }
  /// {"backend", "dtype", "m", "n", "k"[, "fast_accum"]}.
  nlohmann::json params() const;
  /// The case of `params`; a key that is absent reads as empty (a string) or 0 (a size).
  static GemmCase of(const nlohmann::json& params);
};

/// FLOP of one product: 2 M N K (K multiplies and K adds per output; docs/metrics.md "GEMM").
double gemm_flop(const GemmShape& s);

/// Rate in TFLOP/s = flop / seconds / 1e12. Throws std::invalid_argument unless seconds > 0.
double gemm_tflops(double flop, double seconds);

/// The transformer-layer shapes of the `transformer` entry: the four products of one layer
/// (QKV projection, attention output, MLP up with gate, MLP down) for 8192 tokens, of
/// Llama-2-7B (hidden 4096, FFN 11008) and Llama-2-70B (hidden 8192, FFN 28672, 8 KV heads).
/// M = tokens, N = output features, K = input features.
const std::vector<GemmShape>& transformer_shapes();

/// Parses a `shapes` setting: comma-separated entries, each
///   "8192"          a cube (M = N = K),
///   "4096x8192x1024" M x N x K,
///   "1024..16384"   the cubes of every power of two from the first to the last (both powers of
///                   two, first <= last),
///   "transformer"   transformer_shapes().
/// Duplicates are dropped, order kept. Throws std::invalid_argument naming the bad entry
/// (zero or negative sizes, a non-power-of-two range end, unknown words).
std::vector<GemmShape> parse_gemm_shapes(const std::vector<std::string>& entries);

/// The dtypes of each backend, in case order.
const std::vector<std::string>& cublaslt_dtypes();  ///< fp16 bf16 tf32 fp32 fp8_e4m3
const std::vector<std::string>& openblas_dtypes();  ///< fp32 fp64 bf16

/// Why BF16 cannot run on the OpenBLAS backend, or "" when `sbgemm` (the address dlsym gave for
/// cblas_sbgemm) is non-null. `config` is openblas_get_config()'s text.
std::string openblas_bf16_waiver(const void* sbgemm, const std::string& config);

/// Input element `index` of matrix `which` (0 = A, 1 = B) for `seed`: magnitude in [0.25, 1) with
/// a random sign (splitmix64), so never zero, and still non-zero after rounding to any dtype here
/// (FP8 E4M3's smallest normal is 2^-6). Callers round it to their storage type and verify
/// against the rounded values they stored.
inline double gemm_input_value(std::uint64_t seed, int which, std::uint64_t index) {
  std::uint64_t z =
      seed * 0x9E3779B97F4A7C15ULL + (static_cast<std::uint64_t>(which) << 62) + index;
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  double u = static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1)
  double mag = 0.25 + 0.75 * u;
  return (z & 1) ? -mag : mag;
}

/// Output elements to sample: (0,0), (M-1,N-1), then pseudo-random (i, j) from `seed`;
/// `count` pairs in all (fewer only when M N is smaller).
inline std::vector<std::pair<long long, long long>> gemm_sample_points(const GemmShape& s,
                                                                       int count,
                                                                       std::uint64_t seed) {
  std::vector<std::pair<long long, long long>> out;
  long long total = s.m * s.n;
  if (count <= 0 || total <= 0) return out;
  out.emplace_back(0, 0);
  if (count > 1 && total > 1) out.emplace_back(s.m - 1, s.n - 1);
  for (std::uint64_t t = 0; static_cast<long long>(out.size()) < std::min<long long>(count, total);
       ++t) {
    double u = (std::fabs(gemm_input_value(seed ^ 0x5A5A5A5AULL, 0, t)) - 0.25) / 0.75;
    double v = (std::fabs(gemm_input_value(seed ^ 0xA5A5A5A5ULL, 1, t)) - 0.25) / 0.75;
    long long i = std::min(s.m - 1, static_cast<long long>(u * static_cast<double>(s.m)));
    long long j = std::min(s.n - 1, static_cast<long long>(v * static_cast<double>(s.n)));
    bool seen = false;
    for (const auto& q : out) seen = seen || (q.first == i && q.second == j);
    if (!seen || t > static_cast<std::uint64_t>(16 * count)) out.emplace_back(i, j);
  }
  return out;
}

/// Result of the product check (compute/gemm_check.hpp): the sampled elements' worst
/// |c - ref| / tolerance and the row checksums' worst ratio; each passes at <= 1.
struct GemmVerification {
  int samples = 0;
  double max_ratio = 0;  ///< worst sampled element, at C(worst_i, worst_j)
  long long worst_i = 0, worst_j = 0;
  long long checksum_rows = 0;    ///< rows of D checked by D 1 = A (B 1)
  double checksum_max_ratio = 0;  ///< worst row, at checksum_worst_row
  long long checksum_worst_row = 0;
  long long checks = 0;  ///< checks of this operation so far (plugin), 0 where not counted
  /// Every product compared with the verified first one (the burn-in, gpu-burn's way): products
  /// compared and those with a differing element since the last check; -1: not compared.
  long long products_checked = -1, products_wrong = 0, elements_wrong = 0;
  bool passed() const {
    return samples > 0 && max_ratio <= 1 && checksum_max_ratio <= 1 && products_wrong == 0;
  }
  /// "bf16 1024x1024x28672: sampled error 3.1e+01 x the bound at C(5,7), row checksum 2.0e+00 x
  /// the bound at row 3 (64 samples, 1024 rows)"; for a failed record's message.
  std::string failure_message(const std::string& dtype, const GemmShape& s) const;
  /// The record's form: samples, max_ratio, worst [i, j], checksum {rows, max_ratio, worst_row}.
  nlohmann::json to_json() const;
};

/// The params of the GPU plugin's "gemm" operation (compute/gemm_gpu.cpp): an m x n x k product
/// of `dtype`, inputs drawn from `seed`, the best of the top `algos` heuristic algorithms,
/// `samples` output elements verified (and every row by checksum); `fast_accum` (FP8 only:
/// CUBLASLT_MATMUL_DESC_FAST_ACCUM, checked against gemm_bound(dtype, true)).
nlohmann::json gemm_op_params(const std::string& dtype, const GemmShape& s, std::uint64_t seed,
                              int samples, int algos, bool fast_accum = false);

/// Relative tolerance of the burn-in's per-product comparison (|d - ref| > tol |ref| differs):
/// gpu-burn's 1e-3. A product of one algorithm on one GPU repeats bit for bit; a silently wrong
/// one (a flipped bit, a dropped K-slice) is off by far more.
inline constexpr double kProductCompareTolerance = 1e-3;

/// The plugin's verification (the "gemm" operation's info()["verification"]: samples,
/// max_ratio, worst_i, worst_j, checksum_rows, checksum_max_ratio, checksum_worst_row, and with
/// verify_each the running counts products_checked, products_wrong, elements_wrong). A ratio
/// that is not a number (JSON has no inf: the plugin writes a non-finite one as null) is +inf.
GemmVerification gemm_verification_of(const nlohmann::json& v);

/// BF16 bits of a float, rounded to nearest even, and back (core/api/bf16.hpp).
using clusterbench::bf16_to_float;
using clusterbench::float_to_bf16;

}  // namespace clusterbench::compute
