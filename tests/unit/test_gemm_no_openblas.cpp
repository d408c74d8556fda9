// compute/ as the -DCLUSTERBENCH_GPU_CHECK=ON build makes it (issue 18, the GPU check's bundle):
// OpenBLAS is not linked (compute/openblas_none.cpp, CLUSTERBENCH_NO_OPENBLAS). The CPU GEMM and
// the CPU burn-in are waived with a reason naming the option; the GPU cases are not; the soak's
// check estimates nothing on the CPU; a stray call throws; and no libopenblas is mapped.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "compute/burnin.hpp"
#include "compute/cpu_blas.hpp"
#include "core/api/benchmark.hpp"
#include "core/api/context.hpp"
#include "core/api/gpu_disposition.hpp"

using namespace clusterbench;
using namespace clusterbench::compute;

namespace {

const char* const kOption = "-DCLUSTERBENCH_GPU_CHECK=ON";

class NoOpenblas : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Context::init_local("node07"); }
  EnvRecord env_;  // no GPU: the burn-in soaks the CPU
  GpuDisposition gpu_;
  Settings settings_{"ci", {}};
  NodeEnv node() const { return {env_, gpu_, Context::get(), settings_}; }
};

}  // namespace

TEST_F(NoOpenblas, CpuGemmCasesAreWaivedNamingTheOption) {
  EXPECT_NE(openblas_absent().find(kOption), std::string::npos) << openblas_absent();
  const Benchmark* b = Registry::get().find("compute.gemm");
  ASSERT_NE(b, nullptr);
  int cpu = 0, gpu = 0;
  for (const json& c : b->cases(settings_)) {
    const std::string why = b->case_waiver(c, node());
    if (c.at("backend") == "openblas") {
      ++cpu;
      EXPECT_EQ(why, openblas_absent()) << c;
    } else {
      ++gpu;
      EXPECT_EQ(why, "") << c;
    }
  }
  EXPECT_EQ(cpu, 9);
  EXPECT_EQ(gpu, 6);
}

TEST_F(NoOpenblas, CpuBurninIsWaivedAndItsCheckEstimatesNothing) {
  const Benchmark* b = Registry::get().find("burnin.soak");
  ASSERT_NE(b, nullptr);
  const json p = b->params_on(json::object(), env_, settings_);
  ASSERT_EQ(p.at("backend"), "openblas");
  EXPECT_EQ(b->case_waiver(p, node()), openblas_absent());
  EXPECT_NO_THROW(b->check(p, node()));  // its CPU estimate would run a product
  json gpu_case = p;
  gpu_case["backend"] = "cublaslt";
  gpu_case["dtype"] = "bf16";
  EXPECT_EQ(b->case_waiver(gpu_case, node()), "");
}

TEST_F(NoOpenblas, AStrayCallThrowsAndNoOpenblasIsMapped) {
  try {
    make_openblas_soak("fp32", {8, 8, 8}, 1, 1);  // its constructor runs a product
    FAIL() << "the stub's cblas_sgemm returned";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("cblas_sgemm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(kOption), std::string::npos) << e.what();
  }
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) EXPECT_EQ(line.find("libopenblas"), std::string::npos) << line;
}
