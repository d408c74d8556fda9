// The GEMM side of `clusterbench burnin` (compute/burnin_soak.cpp, docs/burnin.md): one matrix
// product kept busy back to back for a whole interval, on the GPU through the plugin's "gemm"
// operation (cuBLASLt, compute/gemm_gpu.cpp) or on the CPU through OpenBLAS, and checked after
// every interval the way compute.gemm checks (compute/gemm_check.hpp). Measures only: the verdicts
// are made in reports/burnin.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "compute/gemm.hpp"
#include "records/records.hpp"

namespace clusterbench::compute {

/// What one interval of products did.
struct SoakWork {
  long long products = 0;
  double seconds = 0;       ///< the time the rate is taken over (SoakGemm::time_basis())
  double wall_seconds = 0;  ///< steady_clock time of the same products
};

/// A GEMM of one shape and dtype, run back to back (one product = gemm_flop(shape()) FLOP).
class SoakGemm {
 public:
  virtual ~SoakGemm() = default;
  /// Runs products until `deadline` (the last one may end a product's time after it).
  /// `extra_fraction` > 0 is test fault injection: after each product (GPU: batch), that fraction
  /// of its measured time is spent more inside the measured time, so the rate falls to
  /// 1 / (1 + extra_fraction) of what it was. Throws CallError on a library error.
  virtual SoakWork run_until(std::chrono::steady_clock::time_point deadline,
                             double extra_fraction) = 0;
  /// Sampled check of a product (compute.gemm's check, `samples` points drawn from `seed`).
  /// Both check the soaked product's own last output (CPU: the last product of run_until; GPU: the
  /// plugin re-checks the soaked operation's D in place, cb_gpu_op_check), sampled elements and
  /// every row's checksum (compute/gemm_check.hpp).
  /// `corrupt` is test fault injection: one sampled output element is made wrong first (CPU), or
  /// the check's result is (GPU).
  virtual GemmVerification verify(std::uint64_t seed, bool corrupt) = 0;
  /// What the record's extra says about the backend: library, function, threads, time basis.
  virtual json facts() const = 0;
  /// "thread_cpu" (the calling thread's CPU time: OpenBLAS on one thread per rank, so that ranks
  /// sharing cores measure their own work) or "cuda_events".
  virtual std::string time_basis() const = 0;
  /// The PCI bus id of the device (GPU), "" on the CPU.
  virtual std::string pci_bus_id() const { return ""; }
};

/// OpenBLAS on the calling thread (openblas_set_num_threads(1)): dtype "fp32" (cblas_sgemm) or
/// "fp64" (cblas_dgemm), column-major NN, inputs gemm_input_value(seed, ...). Throws
/// std::invalid_argument for another dtype.
std::unique_ptr<SoakGemm> make_openblas_soak(const std::string& dtype, const GemmShape& shape,
                                             std::uint64_t seed, int samples);

/// Estimated seconds of one OpenBLAS product of `shape` on the calling thread (its CPU time): the
/// shortest of three products of a probe cube p^3, p = min(128, the shape's largest side), scaled
/// by m n k / p^3. Takes a few milliseconds, whatever the shape, so that a shape too large for the
/// soak's intervals is refused before its inputs are allocated. Small products run below the peak
/// rate, so the estimate errs on the long side. Throws std::invalid_argument as make_openblas_soak.
double estimate_openblas_product_seconds(const std::string& dtype, const GemmShape& shape);

/// cuBLASLt through the GPU plugin's "gemm" operation (gpu::Operation) on the current device.
/// Throws Waived (CB_GPU_UNSUPPORTED: the GPU lacks the dtype or memory) or CallError (the
/// plugin's error text; a plugin that is not loaded).
std::unique_ptr<SoakGemm> make_cublaslt_soak(const std::string& dtype, const GemmShape& shape,
                                             std::uint64_t seed, int samples);

}  // namespace clusterbench::compute
