// cuBLASLt: handles, descriptors, layouts and preferences with their attributes. An attribute
// of the wrong size is CUBLAS_STATUS_INVALID_VALUE, as in libcublasLt 13 (sizes checked
// against it); values are checked where cuBLASLt checks them, at the heuristic and the matmul.
#include <cstring>

#include "cublaslt_impl.hpp"
#include "state.hpp"

using namespace cbsim;

namespace {

/// Size in bytes of a matmul descriptor attribute (0: unknown), as libcublasLt 13 accepts.
size_t desc_attr_size(cublasLtMatmulDescAttributes_t a) {
  switch (static_cast<int>(a)) {
    case 8:
    case 10:
    case 11:
    case 12:
    case 13:
    case 14:
    case 17:
    case 18:
    case 19:
    case 20:
    case 21:
    case 23:
    case 24:
    case 36:
    case 38:
      return 8;
    case 25:
      return 1;
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 15:
    case 16:
    case 22:
    case 26:
    case 31:
    case 32:
    case 33:
    case 34:
    case 35:
    case 37:
      return 4;
    default:
      return 0;
  }
}

/// Size of a matrix layout attribute: TYPE, ORDER, BATCH_COUNT, BATCH_MODE 4; ROWS, COLS, LD,
/// STRIDED_BATCH_OFFSET, PLANE_OFFSET 8.
size_t layout_attr_size(cublasLtMatrixLayoutAttribute_t a) {
  const int i = static_cast<int>(a);
  if (i == 0 || i == 1 || i == 5 || i == 8) return 4;
  if (i >= 2 && i <= 7) return 8;
  return 0;
}

/// Size of a preference attribute: MAX_WORKSPACE_BYTES and IMPL_MASK 8, the others 4.
size_t pref_attr_size(cublasLtMatmulPreferenceAttributes_t a) {
  const int i = static_cast<int>(a);
  if (i == 1 || i == 12) return 8;
  if (i == 0 || i == 3 || (i >= 5 && i <= 9)) return 4;
  return 0;
}

template <class T>
T as(const void* buf) {
  T v;
  std::memcpy(&v, buf, sizeof v);
  return v;
}

void set_desc(LtDesc& d, int attr, const void* buf) {
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
      d.compute = as<cublasComputeType_t>(buf);
      break;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
      d.scale = as<cudaDataType_t>(buf);
      break;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      d.pointer_mode = as<std::int32_t>(buf);
      break;
    case CUBLASLT_MATMUL_DESC_TRANSA:
      d.transa = as<std::int32_t>(buf);
      break;
    case CUBLASLT_MATMUL_DESC_TRANSB:
      d.transb = as<std::int32_t>(buf);
      break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      d.epilogue = as<std::uint32_t>(buf);
      break;
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM:
      d.fast_accum = as<std::int8_t>(buf);
      break;
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
      d.a_scale = as<const void*>(buf);
      break;
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
      d.b_scale = as<const void*>(buf);
      break;
    default:
      break;  // accepted; no effect on the simulated product
  }
}

void set_layout(LtLayout& l, int attr, const void* buf) {
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
      l.type = static_cast<cudaDataType_t>(as<std::uint32_t>(buf));
      break;
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
      l.order = as<std::int32_t>(buf);
      break;
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
      l.rows = as<std::uint64_t>(buf);
      break;
    case CUBLASLT_MATRIX_LAYOUT_COLS:
      l.cols = as<std::uint64_t>(buf);
      break;
    case CUBLASLT_MATRIX_LAYOUT_LD:
      l.ld = as<std::int64_t>(buf);
      break;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      l.batch = as<std::int32_t>(buf);
      break;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      l.stride = as<std::int64_t>(buf);
      break;
    default:
      break;
  }
}

}  // namespace

namespace cbsim {

LtRegistry& lt() {
  static LtRegistry* r = new LtRegistry;  // never destroyed: handles may outlive static dtors
  return *r;
}

bool lt_elem(cudaDataType_t t, Elem& out) {
  switch (t) {
    case CUDA_R_32F:
      out = Elem::f32;
      return true;
    case CUDA_R_16F:
      out = Elem::f16;
      return true;
    case CUDA_R_16BF:
      out = Elem::bf16;
      return true;
    case CUDA_R_8F_E4M3:
      out = Elem::e4m3;
      return true;
    case CUDA_R_64F:
      out = Elem::f64;
      return true;
    default:
      return false;
  }
}

}  // namespace cbsim

extern "C" {

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  if (init_error() != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = new cublasLtContext{current_device()};
  std::lock_guard<std::mutex> lock(lt().mu);
  lt().handles.insert(h);
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  std::lock_guard<std::mutex> lock(lt().mu);
  if (!lt().handles.erase(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  auto* d = new cublasLtMatmulDescOpaque_t{};
  std::lock_guard<std::mutex> lock(lt().mu);
  LtDesc v;
  v.compute = compute, v.scale = scale;
  lt().descs[d] = v;
  *desc = d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  std::lock_guard<std::mutex> lock(lt().mu);
  if (!lt().descs.erase(desc)) return CUBLAS_STATUS_INVALID_VALUE;
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t sizeInBytes) {
  std::lock_guard<std::mutex> lock(lt().mu);
  auto it = lt().descs.find(desc);
  const size_t want = desc_attr_size(attr);
  if (it == lt().descs.end() || !buf || want == 0 || sizeInBytes != want)
    return CUBLAS_STATUS_INVALID_VALUE;
  set_desc(it->second, static_cast<int>(attr), buf);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  auto* l = new cublasLtMatrixLayoutOpaque_t{};
  std::lock_guard<std::mutex> lock(lt().mu);
  LtLayout v;
  v.type = type, v.rows = rows, v.cols = cols, v.ld = ld;
  lt().layouts[l] = v;
  *layout = l;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  std::lock_guard<std::mutex> lock(lt().mu);
  if (!lt().layouts.erase(layout)) return CUBLAS_STATUS_INVALID_VALUE;
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  std::lock_guard<std::mutex> lock(lt().mu);
  auto it = lt().layouts.find(layout);
  const size_t want = layout_attr_size(attr);
  if (it == lt().layouts.end() || !buf || want == 0 || sizeInBytes != want)
    return CUBLAS_STATUS_INVALID_VALUE;
  set_layout(it->second, static_cast<int>(attr), buf);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  auto* p = new cublasLtMatmulPreferenceOpaque_t{};
  std::lock_guard<std::mutex> lock(lt().mu);
  lt().prefs[p] = 0;
  *pref = p;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  std::lock_guard<std::mutex> lock(lt().mu);
  if (!lt().prefs.erase(pref)) return CUBLAS_STATUS_INVALID_VALUE;
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t sizeInBytes) {
  std::lock_guard<std::mutex> lock(lt().mu);
  auto it = lt().prefs.find(pref);
  const size_t want = pref_attr_size(attr);
  if (it == lt().prefs.end() || !buf || want == 0 || sizeInBytes != want)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) it->second = as<std::uint64_t>(buf);
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
