// Collectives: nccl-tests' busbw factors and algbw against hand-computed numbers, counts, the
// expected results, the sweep, half/bfloat16 conversion and sums, and the table's form.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "collectives/collective.hpp"
#include "error.hpp"

namespace cb = clusterbench::collectives;
using cb::Dtype;

namespace {
const cb::Collective* all_colls[] = {&cb::kAllReduce, &cb::kAllGather, &cb::kReduceScatter,
                                     &cb::kBroadcast, &cb::kReduce,    &cb::kAlltoall,
                                     &cb::kSendrecv};
}

// nccl-tests doc/PERFORMANCE.md: all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall
// (n-1)/n; broadcast, reduce, sendrecv 1. Values by hand for n = 2, 3, 4, 8, 64.
TEST(Collectives, BusbwFactors) {
  struct Row {
    int n;
    double all_reduce, gather;
  };
  for (Row r : {Row{2, 1.0, 0.5}, Row{3, 4.0 / 3, 2.0 / 3}, Row{4, 1.5, 0.75}, Row{8, 1.75, 0.875},
                Row{64, 1.96875, 0.984375}}) {
    EXPECT_DOUBLE_EQ(cb::kAllReduce.factor(r.n), r.all_reduce) << r.n;
    EXPECT_DOUBLE_EQ(cb::kAllGather.factor(r.n), r.gather) << r.n;
    EXPECT_DOUBLE_EQ(cb::kReduceScatter.factor(r.n), r.gather) << r.n;
    EXPECT_DOUBLE_EQ(cb::kAlltoall.factor(r.n), r.gather) << r.n;
    EXPECT_DOUBLE_EQ(cb::kBroadcast.factor(r.n), 1.0);
    EXPECT_DOUBLE_EQ(cb::kReduce.factor(r.n), 1.0);
    EXPECT_DOUBLE_EQ(cb::kSendrecv.factor(r.n), 1.0);
  }
  EXPECT_DOUBLE_EQ(cb::kAllReduce.factor(1), 0.0);  // one rank: nothing crosses a link
}

// 1 GiB in 10 ms: algbw = 1073741824 / 0.01 / 1e9 = 107.3741824 GB/s; all_reduce on 8 ranks
// x 1.75 = 187.9048192; all_gather on 4 x 0.75 = 80.5306368; alltoall on 64 x 63/64 =
// 107.3741824 - 1.6777216 = 105.6964608; sendrecv x 1.
TEST(Collectives, AlgbwAndBusbw) {
  const double s = 1073741824.0, t = 0.01;
  EXPECT_DOUBLE_EQ(cb::algbw_gbs(s, t), 107.3741824);
  EXPECT_NEAR(cb::busbw_gbs(cb::kAllReduce, s, t, 8), 187.9048192, 1e-9);
  EXPECT_NEAR(cb::busbw_gbs(cb::kAllReduce, s, t, 2), 107.3741824, 1e-9);
  EXPECT_NEAR(cb::busbw_gbs(cb::kAllGather, s, t, 4), 80.5306368, 1e-9);
  EXPECT_NEAR(cb::busbw_gbs(cb::kAlltoall, s, t, 64), 105.6964608, 1e-9);
  EXPECT_NEAR(cb::busbw_gbs(cb::kSendrecv, s, t, 3), 107.3741824, 1e-9);
  // 8 B in 20 us: 0.0004 GB/s; all_reduce, 3 ranks: x 4/3.
  EXPECT_NEAR(cb::busbw_gbs(cb::kAllReduce, 8, 20e-6, 3), 0.0004 * 4 / 3, 1e-15);
}

// nccl-tests' getCollByteCount: count = bytes / element size; gathering ops use count / n per rank.
TEST(Collectives, Layouts) {
  cb::Layout g = cb::kAllGather.layout(1000, 2, 4);  // 4000 B of float on rank 2 of 4
  EXPECT_EQ(g.send_count, 250);
  EXPECT_EQ(g.recv_count, 1000);
  EXPECT_EQ(g.send_offset_inplace, 500);
  EXPECT_EQ(cb::op_bytes(g, Dtype::f32), 4000);
  cb::Layout rs = cb::kReduceScatter.layout(1001, 3, 4);  // rounded down to a multiple of n
  EXPECT_EQ(rs.send_count, 1000);
  EXPECT_EQ(rs.recv_count, 250);
  EXPECT_EQ(rs.recv_offset_inplace, 750);
  EXPECT_EQ(cb::op_bytes(rs, Dtype::f16), 2000);
  cb::Layout a = cb::kAlltoall.layout(10, 0, 3);
  EXPECT_EQ(a.send_count, 9);
  EXPECT_EQ(a.block, 3);
  cb::Layout ar = cb::kAllReduce.layout(7, 1, 3);
  EXPECT_EQ(ar.send_count, 7);
  EXPECT_EQ(ar.recv_count, 7);
  EXPECT_EQ(cb::kAllGather.layout(3, 0, 4).block, 0);  // 3 elements over 4 ranks: none each
}

// input_value(r, i) = (3r + i) % 5 + 1.
TEST(Collectives, ExpectedResults) {
  EXPECT_EQ(cb::input_value(0, 0), 1);
  EXPECT_EQ(cb::input_value(2, 3), 5);  // (6 + 3) % 5 + 1
  // all_reduce over 3 ranks, element 0: 1 + 4 + 2 = 7.
  EXPECT_EQ(cb::kAllReduce.expected(1, 3, 0, 10, -1), 7);
  // all_gather, block 4: element 9 is rank 2's element 1: (6 + 1) % 5 + 1 = 3.
  EXPECT_EQ(cb::kAllGather.expected(0, 3, 9, 4, -1), 3);
  // reduce_scatter, rank 1 of 2, block 4, element 0 = sum of element 4: 5 + 3 = 8.
  EXPECT_EQ(cb::kReduceScatter.expected(1, 2, 0, 4, -1), 8);
  // alltoall, rank 1 of 3, block 2: element 4 comes from rank 2's element 1*2+0: (6+2)%5+1 = 4.
  EXPECT_EQ(cb::kAlltoall.expected(1, 3, 4, 2, -1), 4);
  EXPECT_EQ(cb::kBroadcast.expected(3, 4, 6, 6, 0), cb::input_value(0, 6));
  EXPECT_TRUE(std::isnan(cb::kReduce.expected(1, 4, 0, 5, 0)));  // off the root: no result
  EXPECT_EQ(cb::kReduce.expected(0, 2, 0, 5, 0), 1 + 4);
  EXPECT_EQ(cb::kSendrecv.expected(0, 4, 2, 5, -1), cb::input_value(3, 2));  // from rank n-1
}

TEST(Collectives, CountWrong) {
  // What rank 1 of 2 should hold after an all_reduce of 6 floats, with two elements damaged.
  float r[6];
  for (int i = 0; i < 6; ++i)
    r[i] = static_cast<float>(cb::input_value(0, i) + cb::input_value(1, i));
  EXPECT_EQ(cb::count_wrong(cb::kAllReduce, Dtype::f32, r, 6, 1, 2, 6, -1), 0);
  r[2] += 1;
  r[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(cb::count_wrong(cb::kAllReduce, Dtype::f32, r, 6, 1, 2, 6, -1), 2);
}

TEST(Collectives, Sweep) {
  EXPECT_EQ(cb::sweep(8, 64, 2, "x"), (std::vector<long long>{8, 16, 32, 64}));
  // ci: 8 B .. 2 MiB x 8.
  EXPECT_EQ(cb::sweep(8, 2 << 20, 8, "x"),
            (std::vector<long long>{8, 64, 512, 4096, 32768, 262144, 2097152}));
  EXPECT_EQ(cb::sweep(1000, 5000, 3, "x"), (std::vector<long long>{1000, 3000}));
  EXPECT_EQ(cb::sweep(8, 8LL << 30, 2, "x").size(), 31u);  // 8 B .. 8 GiB: 2^3 .. 2^33
  EXPECT_EQ(cb::sweep(1.5e3, 1.5e3, 2, "x"), (std::vector<long long>{1500}));
  EXPECT_THROW(cb::sweep(0, 8, 2, "x"), clusterbench::InputError);
  EXPECT_THROW(cb::sweep(16, 8, 2, "x"), clusterbench::InputError);
  EXPECT_THROW(cb::sweep(8, 16, 1, "x"), clusterbench::InputError);
}

TEST(Collectives, Sizes) {
  EXPECT_EQ(clusterbench::parse_size("64M", "x"), 64LL << 20);
  EXPECT_EQ(clusterbench::parse_size("8G", "x"), 8LL << 30);
  EXPECT_EQ(cb::parse_dtype("bfloat16", "x"), Dtype::bf16);
  EXPECT_THROW(cb::parse_dtype("double", "x"), clusterbench::InputError);
}

// binary16: 1 = 0x3c00, 65504 (max) = 0x7bff, 2^-24 (smallest subnormal) = 0x0001; ties to even.
TEST(Collectives, HalfConversion) {
  EXPECT_EQ(cb::float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(cb::float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(cb::float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(cb::float_to_half(65536.0f), 0x7c00);  // overflow: +inf
  EXPECT_EQ(cb::float_to_half(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(cb::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie: to even (down)
  EXPECT_EQ(cb::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: to even (up)
  EXPECT_EQ(cb::half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(cb::half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(cb::half_to_float(0xfc00)));
  for (int h = 0; h < 0x7c00; ++h)  // every finite positive half round-trips
    ASSERT_EQ(cb::float_to_half(cb::half_to_float(static_cast<std::uint16_t>(h))), h);
}

// bfloat16 keeps float's exponent: 1 = 0x3f80, 3 = 0x4040; 1 + 2^-8 ties to even (down).
TEST(Collectives, Bf16Conversion) {
  EXPECT_EQ(cb::float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(cb::float_to_bf16(3.0f), 0x4040);
  EXPECT_EQ(cb::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(cb::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(cb::bf16_to_float(0x4049), 3.140625f);
  EXPECT_TRUE(std::isnan(cb::bf16_to_float(cb::float_to_bf16(std::nanf("")))));
}

// The user-defined sum MPI gets for half and bfloat16: each sum rounded to the type.
TEST(Collectives, HalfAndBf16Sum) {
  std::uint16_t a[3] = {cb::float_to_half(1.5f), cb::float_to_half(2048.0f),
                        cb::float_to_half(-3.0f)};
  std::uint16_t b[3] = {cb::float_to_half(2.25f), cb::float_to_half(1.0f), cb::float_to_half(3.0f)};
  cb::sum_into(Dtype::f16, a, b, 3);
  EXPECT_EQ(cb::half_to_float(b[0]), 3.75f);
  EXPECT_EQ(cb::half_to_float(b[1]), 2048.0f);  // 2049 is not a half: ties to even, 2048
  EXPECT_EQ(cb::half_to_float(b[2]), 0.0f);
  std::uint16_t c[2] = {cb::float_to_bf16(256.0f), cb::float_to_bf16(0.5f)};
  std::uint16_t d[2] = {cb::float_to_bf16(1.0f), cb::float_to_bf16(0.25f)};
  cb::sum_into(Dtype::bf16, c, d, 2);
  EXPECT_EQ(cb::bf16_to_float(d[0]), 256.0f);  // 257 needs 9 bits: rounds to 256
  EXPECT_EQ(cb::bf16_to_float(d[1]), 0.75f);
  float e[2] = {1.5f, 2.0f}, f[2] = {0.25f, -2.0f};
  cb::sum_into(Dtype::f32, e, f, 2);
  EXPECT_EQ(f[0], 1.75f);
  EXPECT_EQ(f[1], 0.0f);
}

// nccl-tests' row: size count type redop root, then time algbw busbw #wrong twice.
TEST(Collectives, TableRow) {
  std::string row = cb::table_row(1048576, 262144, "float", "sum", -1, 512.25, 2.05, 3.07, 0, 500.5,
                                  2.1, 3.14, 0);
  EXPECT_EQ(row,
            "     1048576        262144     float     sum     -1    512.25     2.05     3.07      0"
            "    500.50     2.10     3.14      0\n");
  std::string na = cb::table_row(8, 2, "half", "none", 0, 10, 0, 0, 1, -1, 0, 0, 0);
  EXPECT_NE(na.find("      1       n/a      n/a      n/a    n/a\n"), std::string::npos) << na;
  std::string h = cb::table_header();
  EXPECT_NE(h.find("out-of-place"), std::string::npos);
  EXPECT_NE(h.find("#wrong"), std::string::npos);
  for (const cb::Collective* c : all_colls) EXPECT_TRUE(c->layout != nullptr) << c->name;
}
