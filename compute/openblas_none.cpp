// OpenBLAS in a -DCLUSTERBENCH_GPU_CHECK=ON build: not linked (36.5 MB of the 48 MiB
// bundle a GPU machine can take). The cblas.h functions compute/ calls are defined here: the
// GEMMs throw, naming the build; compute.gemm's openblas cases and the CPU burn-in are waived
// before they could call them (compute/cpu_blas.hpp openblas_absent()).
#include <stdexcept>
#include <string>

#include "compute/cpu_blas.hpp"

namespace {

[[noreturn]] void absent(const char* function) {
  throw std::logic_error(std::string(function) + ": " + clusterbench::compute::openblas_absent());
}

char kNone[] = "none (this build has no OpenBLAS)";

}  // namespace

extern "C" {

void openblas_set_num_threads(int) {}
char* openblas_get_config(void) { return kNone; }
char* openblas_get_corename(void) { return kNone; }

void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER, OPENBLAS_CONST enum CBLAS_TRANSPOSE,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE, OPENBLAS_CONST blasint,
                 OPENBLAS_CONST blasint, OPENBLAS_CONST blasint, OPENBLAS_CONST float,
                 OPENBLAS_CONST float*, OPENBLAS_CONST blasint, OPENBLAS_CONST float*,
                 OPENBLAS_CONST blasint, OPENBLAS_CONST float, float*, OPENBLAS_CONST blasint) {
  absent("cblas_sgemm");
}

void cblas_dgemm(OPENBLAS_CONST enum CBLAS_ORDER, OPENBLAS_CONST enum CBLAS_TRANSPOSE,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE, OPENBLAS_CONST blasint,
                 OPENBLAS_CONST blasint, OPENBLAS_CONST blasint, OPENBLAS_CONST double,
                 OPENBLAS_CONST double*, OPENBLAS_CONST blasint, OPENBLAS_CONST double*,
                 OPENBLAS_CONST blasint, OPENBLAS_CONST double, double*, OPENBLAS_CONST blasint) {
  absent("cblas_dgemm");
}

}  // extern "C"
