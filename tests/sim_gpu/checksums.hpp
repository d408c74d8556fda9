// The verification kernels over lazy content: gemm_row_checksums (compute/gemm_gpu.hpp) and
// compare_elements. For a product D the row sums use linearity, sum_j D_ij =
// alpha (op(A) (op(B) 1))_i, in O(MK + KN) instead of O(MNK), plus each overridden element's
// delta; ||D_i||_2 is exact when M N K <= 2^26 (and N K <= 2^24), else estimated from 8
// evenly spaced columns, sqrt(N / 8 sum_s D_{i j_s}^2) (docs/simulated-gpu.md "Kernels").
#pragma once

#include <cstdint>

#include "state.hpp"

namespace cbsim {

struct ChecksumArgs {
  const void *a, *b, *d;
  int in, out;  ///< FillType as int
  long long m, n, k;
  double *scratch, *rows;
};

struct CompareArgs {
  const void *d, *ref;
  int out;  ///< FillType as int
  long long count;
  double rel_tolerance;
  unsigned long long* counters;
};

/// The kernels as they run on `s`.
void run_row_checksums(State& st, Stream& s, const ChecksumArgs& c, Res& res, double& seconds);
void run_compare(State& st, Stream& s, const CompareArgs& c, Res& res, double& seconds);

/// The allocation of [ptr, ptr + len) on the stream's device, or nullptr after making the
/// context sticky with an illegal address naming `kernel` and `arg`.
Alloc* kernel_range(State& st, const Stream& s, const char* kernel, const char* arg,
                    const void* ptr, std::uint64_t len);
/// Writes `len` bytes at `ptr` of allocation `a`.
void write_bytes(Alloc& a, const void* ptr, const void* bytes, std::uint64_t len);

}  // namespace cbsim
