// compute.gpu_memory_bandwidth: bytes counted per copy and the case plan (docs/metrics.md
// "GPU memory bandwidth"). The copies themselves run only on a GPU (scripts/gpu-check.sh).
#include <gtest/gtest.h>

#include "compute/gpu_memory_bandwidth.hpp"
#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"

using namespace clusterbench;
using namespace clusterbench::compute;

TEST(GpuMemoryBandwidth, CopyCountsBytesReadPlusWritten) {
  EXPECT_EQ(device_copy_bytes_moved(1LL << 30), 2147483648.0);  // 1 GiB read + 1 GiB written
  // 2 GiB moved in 0.8 ms: 2147483648 / 8e-4 / 1e9 = 2684.35 GB/s.
  EXPECT_NEAR(device_copy_bytes_moved(1LL << 30) / 8e-4 / 1e9, 2684.354560, 1e-6);
}

TEST(GpuMemoryBandwidth, CasesPerMethodAndGpuLevel) {
  const Benchmark* b = Registry::get().find("compute.gpu_memory_bandwidth");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->level(), Level::gpu);
  EXPECT_TRUE(b->needs_gpu());
  auto cases = b->cases(Settings("ci", {}));
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0], json({{"method", "kernel"}}));
  EXPECT_EQ(cases[1], json({{"method", "memcpy"}}));
  EXPECT_TRUE(b->case_needs_gpu(cases[1]));
  auto one = b->cases(Settings("ci", {"compute.gpu_memory_bandwidth.methods=memcpy"}));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_THROW(b->cases(Settings("ci", {"compute.gpu_memory_bandwidth.methods=dma"})), InputError);
}
