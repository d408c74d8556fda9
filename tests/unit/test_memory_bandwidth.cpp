// compute.memory_bandwidth: STREAM's byte counts and validation (docs/metrics.md "STREAM").
#include <gtest/gtest.h>

#include <vector>

#include "compute/memory_bandwidth.hpp"
#include "compute/stream_kernels.hpp"
#include "core/api/benchmark.hpp"

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

TEST(StreamKernels, ChunksCoverTheArrayOnCacheLineBoundaries) {
  // 100 elements = 13 blocks of 8 (the last one short) over 3 threads: 5, 4, 4 blocks.
  EXPECT_EQ(stream_chunk(0, 3, 100), (std::pair<long long, long long>{0, 40}));
  EXPECT_EQ(stream_chunk(1, 3, 100), (std::pair<long long, long long>{40, 72}));
  EXPECT_EQ(stream_chunk(2, 3, 100), (std::pair<long long, long long>{72, 100}));
  for (long long n : {0LL, 1LL, 7LL, 8LL, 1001LL, 80000000LL})
    for (int threads : {1, 2, 3, 7, 64}) {
      long long next = 0;
      for (int t = 0; t < threads; ++t) {
        auto [b, e] = stream_chunk(t, threads, n);
        EXPECT_EQ(b, next) << n << "/" << threads;
        EXPECT_LE(b, e);
        EXPECT_TRUE(b % 8 == 0 || b == n) << b;
        next = e;
      }
      EXPECT_EQ(next, n) << n << "/" << threads;
    }
}

TEST(StreamKernels, EveryVersionComputesWhatStreamDoes) {
  // Each instruction set this CPU has, regular and streaming stores, an odd range that starts
  // off a 64-byte boundary: the same values as the scalar loop, element by element, and nothing
  // outside the range touched.
  std::vector<std::string> isas = {"generic"};
  for (std::string isa : {"sse2", "avx2", "avx512f"}) try {
      double x[8] = {};
      stream_range(StreamKernel::copy, x, x, x, 0, 0, 3, false, isa);
      isas.push_back(isa);
    } catch (const std::invalid_argument&) {
    }
  EXPECT_EQ(isas.back(), stream_isa() == "generic" ? "generic" : stream_isa());
  const long long n = 1037, lo = 3, hi = 1031;
  for (const auto& isa : isas)
    for (bool nt : {false, true})
      for (auto k :
           {StreamKernel::copy, StreamKernel::scale, StreamKernel::add, StreamKernel::triad}) {
        std::vector<double> a(n), b(n), c(n);
        for (long long i = 0; i < n; ++i) a[i] = 0.5 * i, b[i] = 1.0 + i, c[i] = 2.0 - i;
        auto a0 = a, b0 = b, c0 = c;
        stream_range(k, a.data(), b.data(), c.data(), lo, hi, 3.0, nt, isa);
        for (long long i = 0; i < n; ++i) {
          bool in = lo <= i && i < hi;
          double want_c = k == StreamKernel::copy  ? a0[i]
                          : k == StreamKernel::add ? a0[i] + b0[i]
                                                   : c0[i];
          double want_b = k == StreamKernel::scale ? 3.0 * c0[i] : b0[i];
          double want_a = k == StreamKernel::triad ? b0[i] + 3.0 * c0[i] : a0[i];
          ASSERT_EQ(c[i], in ? want_c : c0[i]) << isa << " nt=" << nt << " i=" << i;
          ASSERT_EQ(b[i], in ? want_b : b0[i]) << isa << " nt=" << nt << " i=" << i;
          ASSERT_EQ(a[i], in ? want_a : a0[i]) << isa << " nt=" << nt << " i=" << i;
        }
      }
  EXPECT_THROW(stream_kernel_of("fma"), std::invalid_argument);
  EXPECT_EQ(stream_kernel_of("triad"), StreamKernel::triad);
}
