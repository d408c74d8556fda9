// The simulated GPU node's NCCL (tests/sim_gpu, docs/simulated-gpu.md "NCCL"): exact
// collectives across ranks, their timing, the contracts (use after abort or destroy, buffers and
// streams of another device, the environment read once), logging, clean-up, statistics; and the
// error texts against the real libraries where they are installed. < 10 s.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "sim_gpu_support.hpp"

namespace {

using simtest::gpu_json;
using simtest::load_node;

/// One rank of a communicator driven from this process: its device, stream and buffers.
struct Rank {
  int dev = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t s = nullptr;
};

ncclUniqueId new_id() {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  return id;
}

/// Polls a non-blocking communicator until its pending call finished.
void wait_ready(ncclComm_t c) {
  ncclResult_t st = ncclInProgress;
  for (int i = 0; i < 100000 && st == ncclInProgress; ++i)
    ASSERT_EQ(ncclCommGetAsyncError(c, &st), ncclSuccess);
  ASSERT_EQ(st, ncclSuccess);
}

/// `n` ranks on devices 0..n-1, initialised from this thread (non-blocking: rank 0 is in
/// progress until the last has joined). `dir`: where their directory is.
std::vector<Rank> ranks(int n, std::string* dir = nullptr) {
  const ncclUniqueId id = new_id();
  if (dir) *dir = std::string(id.internal).substr(std::strlen("cbsim-nccl:"));
  std::vector<Rank> r(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    r[i].dev = i;
    EXPECT_EQ(cudaSetDevice(i), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&r[i].s, cudaStreamNonBlocking), cudaSuccess);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t got = ncclCommInitRankConfig(&r[i].comm, n, id, i, &config);
    EXPECT_EQ(got, i + 1 < n ? ncclInProgress : ncclSuccess) << "rank " << i;
    if (i == 0 && n > 1) {
      ncclResult_t st = ncclSuccess;
      EXPECT_EQ(ncclCommGetAsyncError(r[0].comm, &st), ncclSuccess);
      EXPECT_EQ(st, ncclInProgress);
    }
  }
  for (Rank& k : r) wait_ready(k.comm);
  EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
  return r;
}

/// The collectives' input: rank r's element i is (3 r + i) % 5 + 1 (collectives/collective.cpp).
double input(int rank, long long i) { return static_cast<double>((3LL * rank + i) % 5 + 1); }

/// `count` elements of `t` holding input(rank, i), on the current device.
void* upload(ncclDataType_t t, int rank, long long count) {
  const size_t es = t == ncclFloat ? 4 : 2;
  std::vector<unsigned char> h(count * es);
  for (long long i = 0; i < count; ++i) {
    const float v = static_cast<float>(input(rank, i));
    if (t == ncclFloat) std::memcpy(&h[i * 4], &v, 4);
    if (t == ncclHalf) {
      __half x = __float2half_rn(v);
      std::memcpy(&h[i * 2], &x, 2);
    }
    if (t == ncclBfloat16) {
      __nv_bfloat16 x = __float2bfloat16_rn(v);
      std::memcpy(&h[i * 2], &x, 2);
    }
  }
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, h.size()), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

/// Element values of a device buffer of `t`.
std::vector<double> values(ncclDataType_t t, const void* d, long long count) {
  const size_t es = t == ncclFloat ? 4 : 2;
  std::vector<unsigned char> h(count * es);
  EXPECT_EQ(cudaMemcpy(h.data(), d, h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<double> out(static_cast<size_t>(count));
  for (long long i = 0; i < count; ++i) {
    if (t == ncclFloat) {
      float f;
      std::memcpy(&f, &h[i * 4], 4);
      out[i] = f;
    } else if (t == ncclHalf) {
      __half x;
      std::memcpy(&x, &h[i * 2], 2);
      out[i] = __half2float(x);
    } else {
      __nv_bfloat16 x;
      std::memcpy(&x, &h[i * 2], 2);
      out[i] = __bfloat162float(x);
    }
  }
  return out;
}

void* alloc(size_t bytes) {
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
  return d;
}

class SimNccl : public ::testing::Test {
 protected:
  void SetUp() override { simtest::two_gpus(); }
};

/// Every collective of one rank of two, in its own thread, with exact results.
void rank_thread(int rank, ncclUniqueId id, ncclDataType_t t) {
  const long long n = 1000, es = t == ncclFloat ? 4 : 2;
  ASSERT_EQ(cudaSetDevice(rank), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ncclComm_t c = nullptr;
  ASSERT_EQ(ncclCommInitRank(&c, 2, id, rank), ncclSuccess);  // blocking: both threads join
  void* send = upload(t, rank, 2 * n);
  void* recv = alloc(2 * n * es);
  auto check = [&](long long count, auto want) {
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const auto got = values(t, recv, count);
    for (long long i = 0; i < count; ++i) ASSERT_EQ(got[i], want(i)) << "element " << i;
  };
  ASSERT_EQ(ncclAllReduce(send, recv, n, t, ncclSum, c, s), ncclSuccess);
  check(n, [](long long i) { return input(0, i) + input(1, i); });
  ASSERT_EQ(ncclAllGather(send, recv, n, t, c, s), ncclSuccess);
  check(2 * n, [n](long long i) { return input(static_cast<int>(i / n), i % n); });
  ASSERT_EQ(ncclReduceScatter(send, recv, n, t, ncclSum, c, s), ncclSuccess);
  check(n, [rank, n](long long i) { return input(0, rank * n + i) + input(1, rank * n + i); });
  ASSERT_EQ(ncclBroadcast(send, recv, n, t, 1, c, s), ncclSuccess);
  check(n, [](long long i) { return input(1, i); });
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);  // alltoall: block p of my send to rank p
  for (int p = 0; p < 2; ++p) {
    ASSERT_EQ(ncclSend(static_cast<char*>(send) + p * n * es, n, t, p, c, s), ncclSuccess);
    ASSERT_EQ(ncclRecv(static_cast<char*>(recv) + p * n * es, n, t, p, c, s), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  check(2 * n, [rank, n](long long i) { return input(static_cast<int>(i / n), rank * n + i % n); });
  EXPECT_EQ(ncclCommFinalize(c), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST_F(SimNccl, TwoRanksInThreadsExactInEveryType) {
  for (ncclDataType_t t : {ncclFloat, ncclHalf, ncclBfloat16}) {
    const ncclUniqueId id = new_id();
    std::thread other(rank_thread, 1, id, t);
    rank_thread(0, id, t);
    other.join();
  }
  EXPECT_EQ(cbsim_counter("nccl_ops", 0), 15);
}

TEST_F(SimNccl, PendingUntilEveryRankPostedAndTimedByTheModel) {
  auto r = ranks(2);
  const long long count = (1LL << 30) / 4;  // 1 GiB of float per rank: lazy, periodic
  const long long before = simtest::rss_bytes();
  void *send[2], *recv[2];
  cudaEvent_t a[2], b[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(cudaSetDevice(i), cudaSuccess);
    send[i] = upload(ncclFloat, i, 1 << 20);  // 4 MiB of inputs, then copied on to 1 GiB
    void* big = alloc(count * 4);
    for (long long off = 0; off < count * 4; off += 4 << 20)
      ASSERT_EQ(
          cudaMemcpy(static_cast<char*>(big) + off, send[i], 4 << 20, cudaMemcpyDeviceToDevice),
          cudaSuccess);
    send[i] = big, recv[i] = alloc(count * 4);
    ASSERT_EQ(cudaEventCreate(&a[i]), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&b[i]), cudaSuccess);
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(a[0], r[0].s), cudaSuccess);
  ASSERT_EQ(ncclReduce(send[0], recv[0], count, ncclFloat, ncclSum, 0, r[0].comm, r[0].s),
            ncclSuccess);
  ASSERT_EQ(cudaEventRecord(b[0], r[0].s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(b[0]), cudaErrorNotReady);  // rank 1 has not posted
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);          // not an error
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(a[1], r[1].s), cudaSuccess);
  ASSERT_EQ(ncclReduce(send[1], recv[1], count, ncclFloat, ncclSum, 0, r[1].comm, r[1].s),
            ncclSuccess);
  ASSERT_EQ(cudaEventRecord(b[1], r[1].s), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(b[1]), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(b[0]), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, a[0], b[0]), cudaSuccess);
  const double want = 8e-6 + count * 4.0 / 370e9;  // reduce: busbw factor 1, 370 GB/s
  EXPECT_NEAR(ms / 1e3, want, 0.003 * want);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const auto got = values(ncclFloat, static_cast<char*>(recv[0]) + count * 4 - 4000, 1000);
  for (long long i = 0; i < 1000; ++i) {
    const long long e = count - 1000 + i;
    ASSERT_EQ(got[i], input(0, e % (1 << 20)) + input(1, e % (1 << 20))) << e;
  }
  EXPECT_LT(simtest::rss_bytes() - before, 64LL << 20);
  EXPECT_EQ(cbsim_counter("nccl_ops", 0), 1);
}

TEST_F(SimNccl, UseAfterAbortOrDestroyIsRefused) {
  const ncclUniqueId id = new_id();
  ncclComm_t once = nullptr, twice = nullptr;
  ASSERT_EQ(ncclCommInitRank(&once, 1, id, 0), ncclSuccess);
  EXPECT_EQ(ncclCommInitRank(&twice, 1, id, 0), ncclInvalidUsage);  // an id serves one comm
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("has joined already"), std::string::npos);
  EXPECT_EQ(ncclCommDestroy(once), ncclSuccess);
  auto r = ranks(2);
  void* buf = alloc(4096);
  ASSERT_EQ(ncclCommAbort(r[0].comm), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buf, buf, 16, ncclFloat, ncclSum, r[0].comm, r[0].s),
            ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(r[0].comm)).find("was aborted (ncclCommAbort)"),
            std::string::npos);
  EXPECT_EQ(ncclCommDestroy(r[0].comm), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidArgument),
               "invalid argument (run with NCCL_DEBUG=WARN for details)");
  ASSERT_EQ(ncclCommDestroy(r[1].comm), ncclSuccess);
  ncclResult_t st;
  EXPECT_EQ(ncclCommGetAsyncError(r[1].comm, &st), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(r[1].comm)).find("was destroyed"), std::string::npos);
}

TEST_F(SimNccl, BuffersAndStreamsMustBeTheCommunicatorsDevice) {
  auto r = ranks(2);
  void* mine = alloc(4096);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  void* foreign = alloc(4096);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(ncclAllReduce(foreign, mine, 16, ncclFloat, ncclSum, r[0].comm, r[0].s),
            ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(r[0].comm)).find("memory of CUDA device 1"),
            std::string::npos);
  std::vector<float> host(16);
  EXPECT_EQ(ncclAllReduce(mine, host.data(), 16, ncclFloat, ncclSum, r[0].comm, r[0].s),
            ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(mine, mine, 2048, ncclFloat, ncclSum, r[0].comm, r[0].s),
            ncclInvalidArgument);  // 8 KiB in 4 KiB
  EXPECT_EQ(ncclAllReduce(mine, mine, 16, ncclFloat, ncclSum, r[0].comm, r[1].s),
            ncclInvalidArgument);  // rank 1's stream is on device 1
  EXPECT_NE(std::string(ncclGetLastError(r[0].comm)).find("stream belongs to CUDA device 1"),
            std::string::npos);
  for (Rank& k : r) EXPECT_EQ(ncclCommDestroy(k.comm), ncclSuccess);
}

TEST_F(SimNccl, MismatchedCollectivesAreAnAsyncErrorAndFinalizeWaits) {
  auto r = ranks(2);
  void* b0 = alloc(4096);
  ASSERT_EQ(ncclAllReduce(b0, b0, 16, ncclFloat, ncclSum, r[0].comm, r[0].s), ncclSuccess);
  ASSERT_EQ(ncclCommFinalize(r[0].comm), ncclInProgress);  // its operation is pending
  ncclResult_t st = ncclSuccess;
  ASSERT_EQ(ncclCommGetAsyncError(r[0].comm, &st), ncclSuccess);
  EXPECT_EQ(st, ncclInProgress);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  void* b1 = alloc(4096);
  ASSERT_EQ(ncclAllGather(b1, b1, 8, ncclFloat, r[1].comm, r[1].s), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(r[1].s), cudaSuccess);
  ASSERT_EQ(ncclCommGetAsyncError(r[1].comm, &st), ncclSuccess);
  EXPECT_EQ(st, ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(r[1].comm)).find("called different collectives"),
            std::string::npos);
  ASSERT_EQ(ncclCommGetAsyncError(r[0].comm, &st), ncclSuccess);
  EXPECT_EQ(st, ncclInvalidUsage);  // rank 0 sees it too, its operation done
  for (Rank& k : r) EXPECT_EQ(ncclCommAbort(k.comm), ncclSuccess);
}

TEST_F(SimNccl, DirectoriesAreRemovedAndStaleOnesSwept) {
  ASSERT_EQ(access("/dev/shm", W_OK), 0) << "these checks look at /dev/shm";
  const std::string stale = "/dev/shm/cbsim-nccl-0000000000stale";
  ASSERT_EQ(mkdir(stale.c_str(), 0700), 0);
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  std::ofstream(stale + "/owner") << dead << "\n";
  struct timeval old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(utimes(stale.c_str(), old), 0);
  std::string dir;
  auto r = ranks(2, &dir);  // its ncclGetUniqueId sweeps the stale one
  EXPECT_NE(access(stale.c_str(), F_OK), 0);
  EXPECT_EQ(dir.rfind("/dev/shm/cbsim-nccl-", 0), 0u) << dir;
  EXPECT_EQ(access(dir.c_str(), F_OK), 0);
  EXPECT_EQ(ncclCommDestroy(r[0].comm), ncclSuccess);
  EXPECT_EQ(access(dir.c_str(), F_OK), 0);  // rank 1 still holds it
  EXPECT_EQ(ncclCommDestroy(r[1].comm), ncclSuccess);
  EXPECT_NE(access(dir.c_str(), F_OK), 0);
}

/// The child of EnvironmentIsReadOnce, in a fresh process (NCCL reads its environment once per
/// process): runs only there.
TEST(SimNcclChild, EnvironmentIsReadOnce) {
  if (!std::getenv("CBSIM_TEST_CHILD")) GTEST_SKIP() << "run by SimNccl.EnvironmentIsReadOnce";
  simtest::two_gpus();
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);  // NCCL's first use: its environment is read
  setenv("NCCL_IB_GID_INDEX", "5", 1);
  setenv("NCCL_P2P_DISABLE", "1", 1);  // too late: the network path is not taken
  setenv("NCCL_SHM_DISABLE", "1", 1);
  auto r = ranks(2);
  void* b[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(cudaSetDevice(i), cudaSuccess);
    b[i] = upload(ncclFloat, i, 1 << 20);
    ASSERT_EQ(ncclAllReduce(b[i], b[i], 1 << 20, ncclFloat, ncclSum, r[i].comm, r[i].s),
              ncclSuccess);
  }
  for (int i = 0; i < 2; ++i) ASSERT_EQ(cudaStreamSynchronize(r[i].s), cudaSuccess);
}

TEST_F(SimNccl, EnvironmentIsReadOnceLoggedAndCountedAtExit) {
  const std::string log = "/tmp/cbsim-nccl-log-" + std::to_string(getpid());
  const std::string stats = "/tmp/cbsim-stats-" + std::to_string(getpid());
  std::remove(stats.c_str());
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("CBSIM_TEST_CHILD", "1", 1);
    setenv("CBSIM_STATS", stats.c_str(), 1);
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT,NET,ENV,TUNING", 1);
    setenv("NCCL_DEBUG_FILE", (log + ".%p").c_str(), 1);
    setenv("NCCL_IB_GID_INDEX", "3", 1);
    execl("/proc/self/exe", "test_sim_gpu_nccl",
          "--gtest_filter=SimNcclChild.EnvironmentIsReadOnce", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed";
  std::stringstream text;
  text << std::ifstream(log + "." + std::to_string(pid)).rdbuf();
  const std::string t = text.str();
  std::remove((log + "." + std::to_string(pid)).c_str());
  for (const char* want :
       {"NCCL INFO NCCL version 2.27.3+cuda13.0",
        "NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.",
        "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
        "NCCL INFO NVLS multicast support is available on dev 0", "NCCL INFO Connected all rings",
        "NCCL INFO AllReduce: 4194304 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}"})
    EXPECT_NE(t.find(want), std::string::npos) << want << "\n" << t;
  EXPECT_EQ(t.find("set by environment to 5"), std::string::npos) << t;
  EXPECT_EQ(t.find("Using network"), std::string::npos) << t;
  EXPECT_TRUE(std::regex_search(t, std::regex(R"(^\S+:\d+:\d+ \[0\] NCCL INFO )")));
  std::ifstream in(stats);
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    EXPECT_TRUE(
        std::regex_search(line, std::regex("^\\{\"device\":" + std::to_string(lines) + ",")))
        << line;
    for (const char* key :
         {"\"pid\":", "\"kernel_launches\":", "\"matmuls\":0",
          "\"graph_launches\":", "\"memcpys\":", "\"nccl_ops\":1", "\"peak_device_bytes\":"})
      EXPECT_NE(line.find(key), std::string::npos) << key << " in " << line;
  }
  EXPECT_EQ(lines, 2);
  std::remove(stats.c_str());
}

/// The real library's function `name`, or nullptr where it is not installed.
void* real(const char* lib, const char* name) {
  void* h = dlopen((std::string(CB_CUDA_LIB_DIR) + "/" + lib).c_str(), RTLD_NOW | RTLD_LOCAL);
  return h ? dlsym(h, name) : nullptr;
}

TEST(SimGpuTexts, ErrorTextsAreTheRealLibraries) {
  auto cuda_string =
      reinterpret_cast<const char* (*)(int)>(real("libcudart.so.13", "cudaGetErrorString"));
  auto cuda_name =
      reinterpret_cast<const char* (*)(int)>(real("libcudart.so.13", "cudaGetErrorName"));
  auto lt_string =
      reinterpret_cast<const char* (*)(int)>(real("libcublasLt.so.13", "cublasLtGetStatusString"));
  auto lt_name =
      reinterpret_cast<const char* (*)(int)>(real("libcublasLt.so.13", "cublasLtGetStatusName"));
  auto nccl_string =
      reinterpret_cast<const char* (*)(int)>(real("libnccl.so.2", "ncclGetErrorString"));
  if (!cuda_string || !cuda_name || !lt_string || !lt_name || !nccl_string)
    GTEST_SKIP() << "the CUDA 13 libraries are not in " << CB_CUDA_LIB_DIR;
  for (int e :
       {0,   1,   2,   3,   4,   9,   16,  17,  21,  35,  100, 101, 214, 400, 401, 600, 700,
        709, 712, 713, 719, 800, 801, 900, 901, 902, 903, 904, 905, 906, 907, 908, 999, 12345}) {
    EXPECT_STREQ(cudaGetErrorString(static_cast<cudaError_t>(e)), cuda_string(e)) << e;
    EXPECT_STREQ(cudaGetErrorName(static_cast<cudaError_t>(e)), cuda_name(e)) << e;
  }
  for (int s : {0, 1, 3, 7, 8, 11, 13, 14, 15, 16, 99}) {
    EXPECT_STREQ(cublasLtGetStatusString(static_cast<cublasStatus_t>(s)), lt_string(s)) << s;
    EXPECT_STREQ(cublasLtGetStatusName(static_cast<cublasStatus_t>(s)), lt_name(s)) << s;
  }
  for (int r = 0; r <= 8; ++r)
    EXPECT_STREQ(ncclGetErrorString(static_cast<ncclResult_t>(r)), nccl_string(r)) << r;
}

}  // namespace
