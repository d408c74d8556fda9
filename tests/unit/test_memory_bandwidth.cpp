// compute.memory_bandwidth: STREAM's byte counts and validation (docs/metrics.md "STREAM").
#include <gtest/gtest.h>

#include <vector>

#include "core/benchmark.hpp"
#include "compute/memory_bandwidth.hpp"

using namespace clusterbench;
using namespace clusterbench::compute;

TEST(Stream, BytesCountedPerKernel) {
  // copy c=a and scale b=qc touch 2 arrays, add c=a+b and triad a=b+qc touch 3; 8-byte doubles.
  EXPECT_EQ(stream_bytes_per_element("copy"), 2 * 8);
  EXPECT_EQ(stream_bytes_per_element("scale"), 2 * 8);
  EXPECT_EQ(stream_bytes_per_element("add"), 3 * 8);
  EXPECT_EQ(stream_bytes_per_element("triad"), 3 * 8);
  EXPECT_THROW(stream_bytes_per_element("fma"), std::invalid_argument);
}

TEST(Stream, ExpectedValuesAndValidation) {
  EXPECT_DOUBLE_EQ(stream_expected("copy"), 1.0);
  EXPECT_DOUBLE_EQ(stream_expected("scale"), 3.0);
  EXPECT_DOUBLE_EQ(stream_expected("add"), 3.0);
  EXPECT_DOUBLE_EQ(stream_expected("triad"), 5.0);
  std::vector<double> good(1000, 5.0);
  EXPECT_EQ(stream_relative_error("triad", good.data(), 1000), 0.0);
  std::vector<double> bad = good;
  bad[10] = 0.0;  // one element wrong by 5: average relative error 5/1000/5 = 1e-3
  EXPECT_DOUBLE_EQ(stream_relative_error("triad", bad.data(), 1000), 1e-3);
}

TEST(Stream, RegisteredWithOneCasePerKernel) {
  const Benchmark* b = Registry::get().find("compute.memory_bandwidth");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->level(), Level::node);
  auto cases = b->cases(Settings("ci", {}));
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[3], json({{"kernel", "triad"}}));
  auto two = b->cases(Settings("ci", {"compute.memory_bandwidth.kernels=copy,add"}));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1], json({{"kernel", "add"}}));
  EXPECT_THROW(b->cases(Settings("ci", {"compute.memory_bandwidth.kernels=copy,fma"})), InputError);
}
