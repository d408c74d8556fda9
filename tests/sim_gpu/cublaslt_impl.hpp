// The simulated cuBLASLt's objects: handles, matmul descriptors, matrix layouts, preferences,
// each registered so that a destroyed or foreign handle is refused as cuBLASLt refuses it.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "numeric.hpp"

struct cublasLtContext {
  int device = 0;
};

namespace cbsim {

/// A matmul descriptor's attributes.
struct LtDesc {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  std::int32_t pointer_mode = 0;
  std::int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  std::uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  std::int8_t fast_accum = 0;
  const void* a_scale = nullptr;
  const void* b_scale = nullptr;
};

/// A matrix layout's attributes.
struct LtLayout {
  cudaDataType_t type = CUDA_R_32F;
  std::int32_t order = CUBLASLT_ORDER_COL;
  std::uint64_t rows = 0, cols = 0;
  std::int64_t ld = 0;
  std::int32_t batch = 1;
  std::int64_t stride = 0;
};

/// Every live object, by handle.
struct LtRegistry {
  std::mutex mu;
  std::set<cublasLtHandle_t> handles;
  std::map<cublasLtMatmulDesc_t, LtDesc> descs;
  std::map<cublasLtMatrixLayout_t, LtLayout> layouts;
  std::map<cublasLtMatmulPreference_t, std::uint64_t> prefs;  ///< max workspace bytes
};
LtRegistry& lt();

/// The element type of a cuBLASLt data type; false when the simulation has none.
bool lt_elem(cudaDataType_t t, Elem& out);

}  // namespace cbsim
