// Collectives: nccl-tests' busbw factors and algbw against hand-computed numbers, counts, the
// expected results, the sweep, half/bfloat16 conversion and sums, and the table's form; NCCL's
// log lines read back; who did not finish a hung case; the collectives' spec rows.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "collectives/collective.hpp"
#include "collectives/nccl_log.hpp"
#include "core/api/error.hpp"
#include "core/progress.hpp"
#include "records/spec.hpp"
#include "reports/report.hpp"

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
  cb::Layout g = cb::kAllGather.layout(1000, 2, 4, 4);  // 4000 B of float on rank 2 of 4
  EXPECT_EQ(g.send_count, 250);
  EXPECT_EQ(g.recv_count, 1000);
  EXPECT_EQ(g.send_offset_inplace, 500);
  EXPECT_EQ(cb::op_bytes(g, Dtype::f32), 4000);
  cb::Layout rs = cb::kReduceScatter.layout(1001, 3, 4, 2);  // rounded down to a multiple of n
  EXPECT_EQ(rs.send_count, 1000);
  EXPECT_EQ(rs.recv_count, 250);
  EXPECT_EQ(rs.recv_offset_inplace, 750);
  EXPECT_EQ(cb::op_bytes(rs, Dtype::f16), 2000);
  cb::Layout a = cb::kAlltoall.layout(40, 0, 3, 4);  // 13 floats per peer, aligned down to 12
  EXPECT_EQ(a.send_count, 36);
  EXPECT_EQ(a.block, 12);
  cb::Layout ar = cb::kAllReduce.layout(7, 1, 3, 4);
  EXPECT_EQ(ar.send_count, 7);
  EXPECT_EQ(ar.recv_count, 7);
  EXPECT_EQ(cb::kAllGather.layout(3, 0, 4, 4).block, 0);  // 3 elements over 4 ranks: none each
}

// Issue 18 item 10: alltoall's per-peer block is count / n rounded down to whole 16-byte units
// (nccl-tests' alltoall.cu: paramcount = (count / nranks) & -(16 / eltSize)), so that every peer's
// block starts 16-byte aligned; the other collectives are unchanged.
TEST(Collectives, AlltoallBlocksAreWhole16ByteUnits) {
  struct Case {
    long long count;
    int n;
    std::size_t es;
    long long block;
  };
  for (const Case& c : {Case{1000, 3, 4, 332},  // 333 floats: 1332 B is not a multiple of 16
                        Case{1000, 3, 2, 328},  // 333 halves: 328 = 41 x 8
                        Case{1024, 4, 4, 256}, Case{1024, 4, 2, 256}, Case{4, 2, 2, 0},
                        Case{8, 2, 2, 0}, Case{16, 2, 2, 8}, Case{7, 1, 4, 4}}) {
    cb::Layout l = cb::kAlltoall.layout(c.count, 0, c.n, c.es);
    EXPECT_EQ(l.block, c.block) << c.count << " / " << c.n << " of " << c.es << " B";
    EXPECT_EQ(l.send_count, c.block * c.n);
    EXPECT_EQ(l.recv_count, c.block * c.n);
    EXPECT_EQ(l.block * static_cast<long long>(c.es) % 16, 0);
  }
  EXPECT_EQ(cb::kAllGather.layout(1000, 0, 3, 4).block, 333);  // no alignment elsewhere
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
  // Issue 46: a factor just above 1 is refused before it loops (8 B .. 8 GiB at 1.0000000001:
  // ln(2^30) / ln(1.0000000001) = 2.1e11 steps), with the numbers named; 1.01 runs (2,089
  // steps, 1,928 distinct sizes once rounded down to whole bytes).
  try {
    cb::sweep(8, 8LL << 30, 1.0000000001, "--set x.stepfactor");
    ADD_FAILURE() << "no throw";
  } catch (const clusterbench::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--set x.stepfactor: stepfactor 1.000000 from 8 to "
                                         "8589934592 B makes more than 4096 steps"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(cb::sweep(8, 8LL << 30, 1.01, "x").size(), 1928u);
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

// nccl-tests' closing lines: the sweep's wrong elements, and the mean of its busbw values.
TEST(Collectives, TableFooter) {
  EXPECT_EQ(cb::table_footer(0, 3.0 + 4.5, 2),
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 3.75 \n#\n");
  EXPECT_EQ(cb::table_footer(3, 1.0, 4),
            "# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 0.25 \n#\n");
}

// Issue 18 item 1: NCCL's in-place alltoall and sendrecv have no defined result (nccl-tests'
// alltoall.cu and sendrecv.cu: reportErrors = in_place ? 0 : 1): never judged, their in-place
// #wrong shows n/a.
TEST(Collectives, NcclInPlaceAlltoallAndSendrecvAreNotChecked) {
  EXPECT_FALSE(cb::nccl_checks_inplace(cb::kAlltoall));
  EXPECT_FALSE(cb::nccl_checks_inplace(cb::kSendrecv));
  for (const cb::Collective* c :
       {&cb::kAllReduce, &cb::kAllGather, &cb::kReduceScatter, &cb::kBroadcast, &cb::kReduce})
    EXPECT_TRUE(cb::nccl_checks_inplace(*c)) << c->name;
  std::string row =
      cb::table_row(1024, 256, "float", "none", -1, 10, 0.1, 0.1, 0, 11, 0.09, 0.09, -1);
  EXPECT_NE(row.find("     11.00     0.09     0.09    n/a\n"), std::string::npos) << row;
}

// Issue 40 item 8: such an in-place form's time measures no defined result, so the sweep's
// closing busbw average leaves it out (the table prints its whole in-place form n/a); a defined
// in-place form is averaged with the out-of-place one.
TEST(Collectives, UndefinedInPlaceTimeIsNotAveraged) {
  cb::CollectiveTable t;
  cb::table_add(t, 2.0, 0, 50.0, -1);  // alltoall: in-place 50 GB/s, result undefined
  EXPECT_EQ(t.busbw_n, 1);
  EXPECT_DOUBLE_EQ(t.busbw_sum, 2.0);
  cb::table_add(t, 3.0, 0, 5.0, 1);  // all_reduce: both forms, one wrong in place
  EXPECT_EQ(t.busbw_n, 3);
  EXPECT_DOUBLE_EQ(t.busbw_sum, 10.0);
  EXPECT_EQ(t.wrong, 1);
  cb::table_add(t, 1.0, 0, -1, -1);  // no in-place form
  EXPECT_EQ(t.busbw_n, 4);
  EXPECT_EQ(cb::table_footer(t.wrong, t.busbw_sum, t.busbw_n),
            "# Out of bounds values : 1 FAILED\n# Avg bus bandwidth    : 2.75 \n#\n");
}

// One rank (scripts/gpu-check.sh's NCCL sweep): busbw's factor is 0 for all_reduce and the
// gathering ops, so the case is a correctness check; the expected values still hold: a rank's own
// input comes back (all_reduce of one = the input; all_gather of one block = the block).
TEST(Collectives, OneRankExpectedValues) {
  EXPECT_DOUBLE_EQ(cb::kAllGather.factor(1), 0.0);
  EXPECT_DOUBLE_EQ(cb::kAlltoall.factor(1), 0.0);
  EXPECT_DOUBLE_EQ(cb::busbw_gbs(cb::kAllReduce, 1 << 20, 1e-3, 1), 0.0);
  for (const cb::Collective* c : all_colls) {
    cb::Layout l = c->layout(64, 0, 1, 4);
    EXPECT_EQ(l.block, 64) << c->name;
    std::vector<float> result(static_cast<size_t>(l.recv_count));
    for (long long i = 0; i < l.recv_count; ++i)
      result[i] = static_cast<float>(cb::input_value(0, i));
    EXPECT_EQ(cb::count_wrong(*c, Dtype::f32, result.data(), l.recv_count, 0, 1, l.block,
                              c->rooted ? 0 : -1),
              0)
        << c->name;
    result[5] = 0;  // one element off its expected (3*0 + 5) % 5 + 1 = 1
    EXPECT_EQ(cb::count_wrong(*c, Dtype::f32, result.data(), l.recv_count, 0, 1, l.block,
                              c->rooted ? 0 : -1),
              1)
        << c->name;
  }
}

// NCCL's INFO lines (format of NCCL 2.21's debug.cc: "host:pid:tid [dev] NCCL INFO ...", the bare
// VERSION line) of rank 0 of 16 on two 8x H100 nodes with RoCE NICs: tests/fixtures/nccl/.
TEST(NcclLog, InitAndTuningLines) {
  std::ifstream in(std::string(CB_FIXTURES) + "/nccl/h100x8-2nodes-rank0.log");
  ASSERT_TRUE(in) << CB_FIXTURES;
  cb::NcclLogFacts f = cb::parse_nccl_log(in);
  EXPECT_EQ(f.version, "2.21.5+cuda12.4");
  EXPECT_EQ(f.network, "IB");
  EXPECT_EQ(f.nics, (std::vector<std::string>{"mlx5_0:1/RoCE", "mlx5_1:1/RoCE", "mlx5_2:1/RoCE"}));
  // Distinct transports without the per-channel NIC index.
  EXPECT_EQ(f.transports, (std::vector<std::string>{"P2P/CUMEM/read", "NET/IB/GDRDMA"}));
  EXPECT_EQ(f.nvls, 1);
  EXPECT_EQ(f.connected, (std::vector<std::string>{"all rings", "all trees"}));
  EXPECT_EQ(f.env, (clusterbench::json{{"NCCL_IB_GID_INDEX", "3"}, {"NCCL_IB_TC", "106"}}));
  ASSERT_EQ(f.choices.size(), 3u);
  const cb::NcclChoice* ar = cb::last_choice(f, "AllReduce");
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->bytes, 1073741824);
  EXPECT_EQ(ar->algo, "NVLS");
  EXPECT_EQ(ar->proto, "SIMPLE");
  EXPECT_EQ(ar->channels, 16);
  EXPECT_EQ(cb::last_choice(f, "Broadcast")->channels, 32);
  EXPECT_EQ(cb::last_choice(f, "AllGather"), nullptr);
  clusterbench::json j = cb::to_json(f);
  EXPECT_EQ(j["version"], "2.21.5+cuda12.4");
  EXPECT_EQ(j["nvls"], true);
  EXPECT_EQ(j["transports"].size(), 2u);
}

// Older and other forms: "Ring NN :" (NCCL 2.5), "[send] via NET/Socket/3", "P2P/direct pointer",
// NVLS unavailable, the VERSION line with the INFO prefix, CRLF endings.
TEST(NcclLog, OtherForms) {
  std::istringstream in(
      "node7:5330:5330 [3] NCCL INFO NCCL version 2.18.3+cuda12.2\r\n"
      "node7:5330:5499 [3] NCCL INFO Ring 00 : 155[3d000] -> 157[b2000] via P2P/IPC\n"
      "node7:5330:5499 [3] NCCL INFO Channel 03/0 : 15[7] -> 6[6] [send] via NET/Socket/3\n"
      "node7:5330:5499 [3] NCCL INFO Channel 00 : 11[3e000] -> 9[1b000] via P2P/direct pointer\n"
      "node7:5330:5499 [3] NCCL INFO NVLS multicast support is not available on dev 3\n"
      "node7:5330:5499 [3] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.7<0>\n"
      "node7:5330:5499 [3] NCCL INFO Using network Socket\n"
      "node7:5330:5499 [3] NCCL INFO AllGather: 4096 Bytes -> Algo RING proto LL\n");
  cb::NcclLogFacts f = cb::parse_nccl_log(in);
  EXPECT_EQ(f.version, "2.18.3+cuda12.2");
  EXPECT_EQ(f.transports,
            (std::vector<std::string>{"P2P/IPC", "NET/Socket", "P2P/direct pointer"}));
  EXPECT_EQ(f.nvls, 0);
  EXPECT_EQ(f.network, "Socket");
  EXPECT_TRUE(f.nics.empty());
  ASSERT_EQ(f.choices.size(), 1u);
  EXPECT_EQ(f.choices[0].algo, "RING");
  EXPECT_EQ(f.choices[0].channels, 0);  // no channel{Lo..Hi} part
}

// busbw is wire bandwidth under the ring only (docs/design.md "Collectives").
TEST(NcclLog, WireAlgorithmsAndNames) {
  EXPECT_TRUE(cb::algorithm_is_wire("RING"));
  EXPECT_TRUE(cb::algorithm_is_wire("Ring"));
  for (const char* a : {"TREE", "NVLS", "NVLS_TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "PAT"})
    EXPECT_FALSE(cb::algorithm_is_wire(a)) << a;
  EXPECT_EQ(cb::nccl_func_name("reduce_scatter"), "ReduceScatter");
  EXPECT_EQ(cb::nccl_func_name("sendrecv"), "");
}

// The NCCL environment of a case: the path's, the forced ring, RoCE settings passed through.
TEST(Collectives, NcclEnv) {
  using clusterbench::json;
  EXPECT_EQ(cb::nccl_env({{"path", "nvlink"}, {"algo", "auto"}}), json::object());
  EXPECT_EQ(cb::nccl_env({{"path", "network"},
                          {"algo", "ring"},
                          {"nccl_ib_gid_index", "3"},
                          {"nccl_ib_tc", "106"}}),
            (json{{"NCCL_P2P_DISABLE", "1"},
                  {"NCCL_SHM_DISABLE", "1"},
                  {"NCCL_ALGO", "Ring"},
                  {"NCCL_IB_GID_INDEX", "3"},
                  {"NCCL_IB_TC", "106"}}));
  EXPECT_THROW(cb::nccl_env({{"path", "pcie"}}), clusterbench::InputError);
}

// Who did not finish: rank 2 never started operation 3 that ranks 0 and 1 wait in; rank 3 did
// not answer at all.
TEST(Progress, NamesTheRanksBehindAndSilent) {
  using clusterbench::RankProgress;
  std::vector<std::string> hosts = {"n0", "n1", "n2", "n3"};
  std::vector<RankProgress> all = {{0, 7, 3, 2, true}, {1, 7, 3, 2, true}, {2, 7, 2, 2, true}};
  clusterbench::Unfinished u = clusterbench::describe_unfinished(all, hosts);
  EXPECT_EQ(u.text,
            "; did not finish: rank 2 on n2 (never started operation 3 of the case; 2 started, 2 "
            "finished); waiting for it: rank 0 on n0, rank 1 on n1");
  ASSERT_EQ(u.ranks.size(), 3u);
  EXPECT_EQ(u.ranks[2]["state"], "behind");
  EXPECT_EQ(u.ranks[0]["state"], "waiting");
  EXPECT_EQ(u.ranks[0]["started"], 3);

  all.push_back({3, -1, 0, 0, false});
  all[2] = {2, 6, 9, 9, true};  // still in the case before
  u = clusterbench::describe_unfinished(all, hosts);
  EXPECT_NE(u.text.find("rank 2 on n2 (still in an earlier case), rank 3 on n3 (no answer"),
            std::string::npos)
      << u.text;
  EXPECT_EQ(u.ranks[3]["state"], "silent");
  EXPECT_FALSE(u.ranks[3].contains("started"));

  // Everyone inside the same operation: none behind, the text says so; all done: nothing.
  u = clusterbench::describe_unfinished({{0, 4, 5, 4, true}, {1, 4, 5, 4, true}}, {"a", "b"});
  EXPECT_EQ(u.text,
            "; did not finish: rank 0 on a, rank 1 on b (every one inside operation 5 of the case, "
            "none behind: a link or the library hangs)");
  u = clusterbench::describe_unfinished({{0, 4, 5, 5, true}, {1, 4, 5, 5, true}}, {"a", "b"});
  EXPECT_EQ(u.text, "");
  EXPECT_EQ(u.ranks[1]["state"], "finished");
}

namespace {
namespace rep = clusterbench::report;
using clusterbench::json;

/// One all_reduce record as the NCCL backend writes it (cluster scope, rank 0's).
clusterbench::ResultRecord allreduce_record(const std::string& span, const std::string& algo,
                                            double busbw, const std::string& chose) {
  clusterbench::ResultRecord r;
  r.run_id = "r";
  r.benchmark = "collectives.all_reduce";
  r.params = {{"backend", "nccl"}, {"path", "nvlink"}, {"span", span},
              {"algo", algo},      {"dtype", "float"}, {"bytes", 1073741824}};
  r.scope.kind = clusterbench::ScopeKind::cluster;
  r.case_key = clusterbench::make_case_key(r.benchmark, r.params, r.scope);
  r.metrics = {{"busbw", busbw, "GB/s", true}};
  r.extra = {{"nccl_algorithm", chose}, {"busbw_is_wire", cb::algorithm_is_wire(chose)}};
  return r;
}

const rep::RowResult& row_of(const rep::Report& r, const std::string& id) {
  for (const auto& row : r.rows)
    if (row.req.id == id) return row;
  throw std::runtime_error("no row " + id);
}

rep::Report judge(const std::string& table, std::vector<clusterbench::ResultRecord> recs) {
  clusterbench::RunDir run;
  run.run.run_id = "r";
  run.records.records = std::move(recs);
  return rep::make_report(
      run, clusterbench::load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/" + table));
}
}  // namespace

// The collectives' spec rows, by hand. H100: in-node >= 0.90 x 360 = 324 GB/s (fail), with NVLS
// >= 0.90 x 475 = 427.5 (warn); across nodes >= 0.90 x 24 x 8 = 172.8 (warn) and the seed alert
// >= 0.5 x 25 x 8 = 100 (fail). A100: in-node >= 0.90 x 230 = 207.
TEST(CollectivesSpec, RowsPassAndFailAsHandComputed) {
  rep::Report ok =
      judge("h100-sxm-80g-8x.json", {allreduce_record("in-node", "auto", 470, "NVLS"),
                                     allreduce_record("inter-node", "ring", 180, "RING")});
  EXPECT_EQ(row_of(ok, "collectives.nvlink_allreduce_busbw").outcome, rep::kPass);
  EXPECT_EQ(row_of(ok, "collectives.nvlink_allreduce_busbw_nvls").outcome, rep::kPass);
  EXPECT_EQ(row_of(ok, "collectives.internode_allreduce_busbw").outcome, rep::kPass);
  EXPECT_EQ(row_of(ok, "collectives.network_busbw_alert").outcome, rep::kPass);
  // NVLS chosen: the report says busbw is not wire bandwidth; the ring row says nothing.
  EXPECT_NE(row_of(ok, "collectives.nvlink_allreduce_busbw")
                .message.find("busbw is not wire bandwidth: NCCL chose NVLS"),
            std::string::npos)
      << row_of(ok, "collectives.nvlink_allreduce_busbw").message;
  EXPECT_EQ(row_of(ok, "collectives.internode_allreduce_busbw").message.find("not wire"),
            std::string::npos);

  // Ring at 360 in-node: passes the ring row, WARNs the NVLS row. 163.2 across nodes (85% of
  // 192): WARN; 90 (< 100): the seed alert FAILs.
  rep::Report mid =
      judge("h100-sxm-80g-8x.json", {allreduce_record("in-node", "auto", 360, "RING"),
                                     allreduce_record("inter-node", "ring", 163.2, "RING")});
  EXPECT_EQ(row_of(mid, "collectives.nvlink_allreduce_busbw").outcome, rep::kPass);
  EXPECT_EQ(row_of(mid, "collectives.nvlink_allreduce_busbw_nvls").outcome, rep::kWarn);
  EXPECT_EQ(row_of(mid, "collectives.internode_allreduce_busbw").outcome, rep::kWarn);
  EXPECT_EQ(row_of(mid, "collectives.network_busbw_alert").outcome, rep::kPass);

  rep::Report bad =
      judge("h200-sxm-141g-8x.json", {allreduce_record("in-node", "auto", 306, "RING"),
                                      allreduce_record("inter-node", "ring", 90, "RING")});
  EXPECT_EQ(row_of(bad, "collectives.nvlink_allreduce_busbw").outcome, rep::kFail);  // 85% of 360
  EXPECT_EQ(row_of(bad, "collectives.network_busbw_alert").outcome, rep::kFail);
  EXPECT_EQ(bad.exit_code, 1);

  rep::Report a100 =
      judge("a100-sxm-80g-8x.json", {allreduce_record("in-node", "auto", 230, "RING")});
  EXPECT_EQ(row_of(a100, "collectives.nvlink_allreduce_busbw").outcome, rep::kPass);
  a100 = judge("a100-sxm-80g-8x.json", {allreduce_record("in-node", "auto", 195.5, "RING")});
  EXPECT_EQ(row_of(a100, "collectives.nvlink_allreduce_busbw").outcome, rep::kFail);
  // A single-node run has no inter-node record: the seed alert row is MISSING (incomplete).
  EXPECT_EQ(row_of(a100, "collectives.network_busbw_alert").outcome, rep::kMissing);
}

// nics_per_node is each table's field; the network rows' values follow from it.
TEST(CollectivesSpec, NetworkRowsFollowNicsPerNode) {
  for (const char* table :
       {"a100-sxm-80g-8x.json", "h100-sxm-80g-8x.json", "h200-sxm-141g-8x.json"}) {
    std::string dir = std::string(CB_SOURCE_DIR) + "/reports/specs/";
    json t = json::parse(std::ifstream(dir + table));
    ASSERT_TRUE(t.contains("nics_per_node")) << table;
    double nics = t["nics_per_node"].get<double>();
    clusterbench::Spec s = clusterbench::load_spec(dir + table);
    for (const auto& r : s.requirements) {
      if (r.id == "collectives.internode_allreduce_busbw") {
        EXPECT_NEAR(r.value.get<double>(), 0.90 * 24 * nics, 1e-9) << table;
      }
      if (r.id == "collectives.network_busbw_alert") {
        EXPECT_NEAR(r.value.get<double>(), 0.5 * 25 * nics, 1e-9) << table;
      }
      // Every one of the node's NICs ACTIVE at rate (7 of 8 is a GPU without its rail).
      if (r.id == "net.ports_active_at_rate") {
        EXPECT_EQ(r.severity, "fail") << table;
        EXPECT_NEAR(r.value.get<double>(), nics, 1e-9) << table;
      }
    }
  }
}

namespace {
/// The message of the InputError `f` throws ("" when it throws none).
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const clusterbench::InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// The declared knobs give the plans the sweep table of docs/collectives.md describes.
TEST(CollectiveKnobs, SuiteDefaultsPlanTheSweep) {
  using clusterbench::Settings;
  const clusterbench::Benchmark* b = clusterbench::Registry::get().find("collectives.all_reduce");
  ASSERT_NE(b, nullptr);
  auto ci = b->cases(Settings("ci", {}));
  ASSERT_EQ(ci.size(), 7u);  // 8 B x 8 up to 2 MiB, float, MPI
  EXPECT_EQ(ci.front(), json({{"backend", "mpi"}, {"dtype", "float"}, {"bytes", 8}}));
  EXPECT_EQ(ci.back()["bytes"], 2 << 20);
  auto quick = b->cases(Settings("quick", {}));
  ASSERT_EQ(quick.size(), 2u * 31);  // mpi, nccl x 8 B x 2 up to 8 GiB
  EXPECT_EQ(quick.back()["bytes"], 8LL << 30);
  EXPECT_EQ(quick.back()["path"], "nvlink");
  EXPECT_EQ(quick.back()["algo"], "auto");  // in-node, nvlink: NCCL's choice
  EXPECT_EQ(b->cases(Settings("full", {})).size(), 2u * 3 * 31);
  auto ring = b->cases(Settings("quick", {"collectives.path=network", "collectives.backends=nccl",
                                          "collectives.maxbytes=64"}));
  ASSERT_EQ(ring.size(), 4u);
  EXPECT_EQ(ring[0]["algo"], "ring");  // a network path is wire bandwidth
  std::vector<std::string> names;
  for (const auto* k : b->knob_specs()) names.push_back(k->name);
  EXPECT_EQ(names, (std::vector<std::string>{"min_time", "minbytes", "maxbytes", "stepfactor",
                                             "dtypes", "backends", "path", "algo", "ib_gid_index",
                                             "ib_tc", "timeout", "reference", "fault"}));
}

TEST(CollectiveKnobs, BadValuesAreInputErrorsAtPlanTime) {
  using clusterbench::Settings;
  const clusterbench::Benchmark* b = clusterbench::Registry::get().find("collectives.all_reduce");
  ASSERT_NE(b, nullptr);
  auto plan = [&](const std::string& set) {
    return input_error([&] { b->cases(Settings("ci", {set})); });
  };
  EXPECT_EQ(plan("collectives.maxbytes=1G"),
            "--set collectives.maxbytes: the ci suite stays <= 64M");
  EXPECT_EQ(plan("collectives.dtypes=double"),
            "--set collectives.dtypes: unknown type 'double' (float, half, bfloat16)");
  EXPECT_EQ(plan("collectives.backends=gloo"),
            "--set collectives.backends: unknown backend 'gloo' (mpi, nccl)");
  EXPECT_EQ(plan("collectives.algo=tree"),
            "--set collectives.algo: 'tree' (auto: NCCL's choice, ring)");
  EXPECT_EQ(plan("collectives.reference=yes"),
            "--set collectives.reference: unknown value 'yes' (false, true)");
  EXPECT_EQ(plan("collectives.stepfactor=x"), "--set collectives.stepfactor: 'x' is not a number");
  EXPECT_EQ(plan("collectives.timeout=soon"), "--set collectives.timeout: 'soon' is not a number");
  // Issue 46: std::stod reads hex, inf and nan; a setting takes decimal numbers only.
  EXPECT_EQ(plan("collectives.timeout=0x10"), "--set collectives.timeout: '0x10' is not a number");
  EXPECT_EQ(plan("collectives.stepfactor=inf"),
            "--set collectives.stepfactor: 'inf' is not a number");
  EXPECT_NE(plan("collectives.maxbytes=0x100").find("'0x100' is not a size"), std::string::npos);
  EXPECT_EQ(plan("collectives.fault=wrong"),
            "--set collectives.fault: 'wrong' is not wrong:RANK, hang:RANK:BYTES or "
            "abort:RANK:BYTES");
  EXPECT_EQ(plan("collectives.path=pcie").find("unknown path 'pcie'") != std::string::npos, true);
}
