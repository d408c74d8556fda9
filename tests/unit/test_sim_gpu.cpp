// The simulated GPU node (tests/sim_gpu, docs/simulated-gpu.md): the CUDA runtime's and
// cuBLASLt's contracts, the lazy memory, the products and the timing model. NCCL and the
// statistics: test_sim_gpu_nccl.cpp. < 10 s.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "compute/gemm.hpp"
#include "compute/gemm_check.hpp"
#include "compute/gemm_gpu.hpp"
#include "compute/gpu_copy_kernels.hpp"
#include "gpu/plugin/compare.hpp"
#include "sim_gpu_support.hpp"
#include "tests/sim_gpu/numeric.hpp"

namespace {

using namespace clusterbench::compute::gpu;
using simtest::gpu_json;
using simtest::load_node;

class SimGpu : public ::testing::Test {
 protected:
  void SetUp() override { simtest::two_gpus(); }
};

/// A TN product D (m x n) = A^T B of `in` inputs (A stored k x m, B k x n) on stream `s`.
struct Gemm {
  cublasLtHandle_t h = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulHeuristicResult_t algo[8]{};
  int algos = 0;
  void *a = nullptr, *b = nullptr, *d = nullptr, *ws = nullptr;
  float alpha = 1, beta = 0;
  Gemm(long long m, long long n, long long k, FillType fill, cudaDataType_t in, cudaDataType_t out,
       cudaStream_t s, int batch = 1) {
    const size_t es = fill == FillType::bf16 ? 2 : 4, eo = out == CUDA_R_32F ? 4 : 2;
    EXPECT_EQ(cublasLtCreate(&h), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaMalloc(&a, m * k * es * batch), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&b, k * n * es * batch), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&d, m * n * eo * batch), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&ws, 1 << 20), cudaSuccess);
    EXPECT_EQ(fill_gemm_input(a, fill, m * k * batch, 7, 0, s), cudaSuccess);
    EXPECT_EQ(fill_gemm_input(b, fill, k * n * batch, 7, 1, s), cudaSuccess);
    EXPECT_EQ(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
    int ta = CUBLAS_OP_T;
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, 4),
              CUBLAS_STATUS_SUCCESS);
    cublasLtMatrixLayoutCreate(&la, in, k, m, k);
    cublasLtMatrixLayoutCreate(&lb, in, k, n, k);
    cublasLtMatrixLayoutCreate(&ld, out, m, n, m);
    if (batch > 1) {
      for (auto [l, stride] : {std::pair{la, m * k}, {lb, k * n}, {ld, m * n}}) {
        long long st = stride;
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4);
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st, 8);
      }
    }
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    size_t max_ws = 1 << 20;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws,
                                         8);
    EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 8, algo, &algos),
              CUBLAS_STATUS_SUCCESS);
    cublasLtMatmulPreferenceDestroy(pref);
  }
  cublasStatus_t run(cudaStream_t s, int candidate = 0) {
    return cublasLtMatmul(h, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &algo[candidate].algo,
                          ws, 1 << 20, s);
  }
};

// --- CUDA runtime ----------------------------------------------------------------------------

TEST_F(SimGpu, DevicesFromTheNodeDescription) {
  int n = 0, v = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 2);
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 1), cudaSuccess);
  EXPECT_STREQ(p.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p.totalGlobalMem, 85520809984ULL);
  EXPECT_EQ(p.major * 10 + p.minor, 90);
  EXPECT_EQ(p.multiProcessorCount, 132);
  EXPECT_EQ(p.maxThreadsPerMultiProcessor, 2048);
  EXPECT_EQ(p.l2CacheSize, 50 << 20);
  EXPECT_EQ(p.pciBusID, 0x2A);
  char bus[32];
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 1), cudaSuccess);
  EXPECT_STREQ(bus, "0000:2A:00.0");
  EXPECT_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
  EXPECT_EQ(v, 13000);
  EXPECT_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
  EXPECT_STREQ(cudaGetErrorString(cudaGetLastError()), "invalid device ordinal");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read once
}

TEST_F(SimGpu, VisibleDevicesAndOldDriver) {
  setenv("CUDA_VISIBLE_DEVICES", "1,7,0", 1);  // 7 names no GPU: the list stops there
  simtest::two_gpus();
  unsetenv("CUDA_VISIBLE_DEVICES");
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 1);
  char bus[32];
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 0), cudaSuccess);
  EXPECT_STREQ(bus, "0000:2A:00.0");
  load_node(gpu_json("18"), 12020);
  int driver = 0;
  EXPECT_EQ(cudaGetDeviceCount(&n), cudaErrorInsufficientDriver);
  EXPECT_EQ(cudaDriverGetVersion(&driver), cudaSuccess);
  EXPECT_EQ(driver, 12020);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInsufficientDriver),
               "CUDA driver version is insufficient for CUDA runtime version");
}

TEST_F(SimGpu, DeviceMemoryIsAccountedAndChecked) {
  size_t free0 = 0, total = 0, free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  EXPECT_EQ(total, 85520809984ULL);
  EXPECT_EQ(free0, total - (512ULL << 20));  // the context's reserve
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 1ULL << 30), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free0 - free1, 1ULL << 30);
  void* big = nullptr;
  EXPECT_EQ(cudaMalloc(&big, free1 + 1), cudaErrorMemoryAllocation);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
  int host = 0;
  EXPECT_EQ(cudaFree(&host), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(static_cast<char*>(p) + 16), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaErrorInvalidValue);  // twice
  EXPECT_EQ(cbsim_counter("peak_device_bytes", 0), 1LL << 30);
}

TEST_F(SimGpu, HostDereferenceOfADevicePointerCrashes) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 4096), cudaSuccess);
  EXPECT_EXIT(
      {
        volatile int v = *static_cast<volatile int*>(p);
        (void)v;
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

TEST_F(SimGpu, HostRegistrationRules) {
  std::vector<char> buf(1 << 20);
  char* p = buf.data();
  ASSERT_EQ(cudaHostRegister(p, buf.size(), cudaHostRegisterDefault), cudaSuccess);
  // The training step's bug: one buffer as both source and destination, registered twice.
  EXPECT_EQ(cudaHostRegister(p, buf.size(), cudaHostRegisterDefault),
            cudaErrorHostMemoryAlreadyRegistered);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorHostMemoryAlreadyRegistered),
               "part or all of the requested memory range is already mapped");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorHostMemoryAlreadyRegistered),
               "cudaErrorHostMemoryAlreadyRegistered");
  EXPECT_EQ(cudaHostRegister(p + 4096, 16, 0), cudaErrorHostMemoryAlreadyRegistered);  // inside
  EXPECT_EQ(cudaHostUnregister(p + 4096), cudaErrorHostMemoryNotRegistered);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorHostMemoryNotRegistered),
               "pointer does not correspond to a registered memory region");
  EXPECT_EQ(cudaHostUnregister(p), cudaSuccess);
  EXPECT_EQ(cudaHostUnregister(p), cudaErrorHostMemoryNotRegistered);
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 4096, cudaHostAllocPortable), cudaSuccess);
  EXPECT_EQ(cudaHostRegister(pinned, 64, 0), cudaErrorHostMemoryAlreadyRegistered);
  EXPECT_EQ(cudaHostUnregister(pinned), cudaErrorHostMemoryNotRegistered);
  EXPECT_EQ(cudaFreeHost(p), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

TEST_F(SimGpu, MemcpyKindMustMatchThePointers) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  std::vector<char> h(8192, 1);
  EXPECT_EQ(cudaMemcpy(h.data(), h.data() + 4096, 16, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d, d, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);  // dst is device
  EXPECT_EQ(cudaMemcpy(h.data(), h.data(), 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d, h.data(), 8192, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);  // bounds
  EXPECT_EQ(cudaMemcpy(d, h.data(), 16, static_cast<cudaMemcpyKind>(7)),
            cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemset(h.data(), 0, 16), cudaErrorInvalidValue);
  ASSERT_EQ(cudaMemset(d, 0x5A, 4096), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(h.data(), d, 4096, cudaMemcpyDefault), cudaSuccess);  // inferred D2H
  EXPECT_EQ(h[0], 0x5A);
  EXPECT_EQ(h[4095], 0x5A);
}

TEST_F(SimGpu, NeverWrittenMemoryReadsAsNaN) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  float f = 0;
  ASSERT_EQ(cudaMemcpy(&f, d, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::isnan(f));
  EXPECT_EQ(cbsim_counter("uninit_read_bytes", 0), 4);
}

TEST_F(SimGpu, EventsBelongToTheirDevice) {
  cudaStream_t s0;
  cudaEvent_t e1, plain, untimed, never;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&plain), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&never), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&e1), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(e1, s0), cudaErrorInvalidResourceHandle);  // event of device 1
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(plain, s0), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(untimed, s0), cudaSuccess);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, plain, untimed), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventElapsedTime(&ms, plain, never), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventElapsedTime(&ms, plain, plain), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(s0, e1, 0), cudaSuccess);  // across devices: allowed
  EXPECT_EQ(cudaEventQuery(plain), cudaSuccess);
}

TEST_F(SimGpu, LaunchOnAnotherDevicesStreamFailsWithoutPoisoning) {
  void* d = nullptr;
  cudaStream_t s0;
  ASSERT_EQ(cudaMalloc(&d, 1 << 16), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(fill_copy_pattern(static_cast<uint4*>(d), 16, s0), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // returned and cleared: not sticky
  void* other = nullptr;
  EXPECT_EQ(cudaMalloc(&other, 16), cudaSuccess);
  EXPECT_EQ(cbsim_counter("kernel_launches", 0), 0);
}

TEST_F(SimGpu, IllegalAddressesAreSticky) {
  simtest::in_child([] {  // a foreign pointer: device 1's memory in a kernel on device 0
    void *d1 = nullptr, *q = nullptr;
    cudaStream_t s;
    ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d1, 1 << 16), cudaSuccess);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(fill_copy_pattern(static_cast<uint4*>(d1), 16, s), cudaErrorIllegalAddress);
    EXPECT_NE(std::string(cbsim_fault_text()).find("memory of another device"), std::string::npos);
    EXPECT_EQ(cudaMalloc(&q, 16), cudaErrorIllegalAddress);
    EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorIllegalAddress);
    EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
    EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);  // never cleared
    EXPECT_STREQ(cudaGetErrorString(cudaErrorIllegalAddress),
                 "an illegal memory access was encountered");
  });
  simtest::in_child([] {  // out of bounds: a copy of more words than the allocation holds
    void *src = nullptr, *dst = nullptr;
    ASSERT_EQ(cudaMalloc(&src, 1 << 16), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dst, 1 << 16), cudaSuccess);
    EXPECT_EQ(copy_words(static_cast<uint4*>(dst), static_cast<const uint4*>(src), (1 << 12) + 1,
                         132, 256, nullptr),
              cudaErrorIllegalAddress);
    EXPECT_NE(std::string(cbsim_fault_text()).find("leaves its allocation"), std::string::npos);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  });
  simtest::in_child([] {  // a cuBLASLt product whose B layout is larger than B's allocation
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    Gemm g(64, 64, 64, FillType::bf16, CUDA_R_16BF, CUDA_R_16BF, s);
    cublasLtMatrixLayout_t wide;
    cublasLtMatrixLayoutCreate(&wide, CUDA_R_16BF, 64, 64, 128);  // ld 128: twice B's bytes
    EXPECT_EQ(cublasLtMatmul(g.h, g.op, &g.alpha, g.a, g.la, g.b, wide, &g.beta, g.d, g.ld, g.d,
                             g.ld, nullptr, g.ws, 1 << 20, s),
              CUBLAS_STATUS_SUCCESS);  // asynchronous: the fault shows at the next call
    EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorIllegalAddress);
    EXPECT_EQ(g.run(s), CUBLAS_STATUS_EXECUTION_FAILED);
  });
}

TEST_F(SimGpu, LastErrorIsPerThread) {
  EXPECT_EQ(cudaSetDevice(9), cudaErrorInvalidDevice);
  cudaError_t other = cudaErrorUnknown;
  std::thread([&] { other = cudaPeekAtLastError(); }).join();
  EXPECT_EQ(other, cudaSuccess);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// --- Stream capture ----------------------------------------------------------------------------

TEST_F(SimGpu, CaptureRecordsAndReplays) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void *src = nullptr, *dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, 1 << 16), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, 1 << 16), cudaSuccess);
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeThreadLocal),
            cudaErrorStreamCaptureUnsupported);  // the legacy stream cannot capture
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaErrorIllegalState);
  // A launcher returns cudaGetLastError(): an earlier failed call's error until it is read.
  EXPECT_EQ(fill_copy_pattern(static_cast<uint4*>(src), 4096, s), cudaErrorIllegalState);
  ASSERT_EQ(fill_copy_pattern(static_cast<uint4*>(src), 4096, s), cudaSuccess);
  ASSERT_EQ(copy_words(static_cast<uint4*>(dst), static_cast<uint4*>(src), 4096, 132, 256, s),
            cudaSuccess);
  EXPECT_EQ(cbsim_counter("kernel_launches", 0), 0);  // recorded, not run
  cudaGraph_t g = nullptr;
  std::thread([&] {  // a thread-local capture ends only on its own thread
    EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureWrongThread);
  })
      .join();
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cbsim_counter("kernel_launches", 0), 3);  // the first fill was launched too
  EXPECT_EQ(cbsim_counter("graph_kernels", 0), 3);
  EXPECT_EQ(cbsim_counter("graph_launches", 0), 1);
  uint4 w{};
  ASSERT_EQ(cudaMemcpy(&w, static_cast<uint4*>(dst) + 4095, 16, cudaMemcpyDeviceToHost),
            cudaSuccess);
  const uint4 want = copy_pattern(4095);
  EXPECT_EQ(std::memcmp(&w, &want, 16), 0);
  cudaGraph_t none = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &none), cudaErrorIllegalState);  // not capturing
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaErrorInvalidValue);
}

TEST_F(SimGpu, IllegalCallsInvalidateTheCapture) {
  cudaStream_t s, s2;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  char h[16];
  cudaGraph_t g = reinterpret_cast<cudaGraph_t>(0x1);
  // A synchronous copy while the thread captures (thread-local mode).
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(h, d, 16, cudaMemcpyDeviceToHost), cudaErrorStreamCaptureUnsupported);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorStreamCaptureUnsupported),
               "operation not permitted when stream is capturing");
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(g, nullptr);
  // Synchronizing the capturing stream, allocating, querying an event recorded in the capture.
  cudaEvent_t e;
  ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaErrorCapturedEvent);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
  // A fork to another stream that is not joined back.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s2, e, 0), cudaSuccess);  // s2 joins the capture
  ASSERT_EQ(fill_copy_pattern(static_cast<uint4*>(d), 16, s2), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureUnjoined);
  // A dependency on work recorded outside the capture.
  cudaEvent_t outside;
  ASSERT_EQ(cudaEventCreate(&outside), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(outside, s2), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(s, outside, 0), cudaErrorStreamCaptureIsolation);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  (void)cudaGetLastError();
}

// --- Lazy memory and timing ------------------------------------------------------------------

TEST_F(SimGpu, GiBBuffersCostNoHostMemory) {
  const long long before = simtest::rss_bytes();
  const long long words = (1LL << 30) / 16;
  void *src = nullptr, *dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, 1ULL << 30), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, 1ULL << 30), cudaSuccess);
  ASSERT_EQ(fill_copy_pattern(static_cast<uint4*>(src), words, nullptr), cudaSuccess);
  ASSERT_EQ(
      copy_words(static_cast<uint4*>(dst), static_cast<uint4*>(src), words, 132, 256, nullptr),
      cudaSuccess);
  ASSERT_EQ(cudaMemcpy(static_cast<char*>(src) + (1 << 29), dst, 1 << 20, cudaMemcpyDeviceToDevice),
            cudaSuccess);  // a D2D copy over the middle: src now holds dst's first MiB there
  std::vector<uint4> chunk(256);
  for (long long first : {0LL, words / 2 + 7, words - 256}) {
    ASSERT_EQ(
        cudaMemcpy(chunk.data(), static_cast<uint4*>(dst) + first, 4096, cudaMemcpyDeviceToHost),
        cudaSuccess);
    for (int i = 0; i < 256; ++i) {
      const uint4 want = copy_pattern(first + i);
      ASSERT_EQ(std::memcmp(&chunk[i], &want, 16), 0) << "word " << first + i;
    }
  }
  ASSERT_EQ(
      cudaMemcpy(chunk.data(), static_cast<char*>(src) + (1 << 29), 4096, cudaMemcpyDeviceToHost),
      cudaSuccess);
  const uint4 want0 = copy_pattern(0);
  EXPECT_EQ(std::memcmp(&chunk[0], &want0, 16), 0);
  EXPECT_LT(simtest::rss_bytes() - before, 64LL << 20);
}

TEST_F(SimGpu, ElapsedTimeFollowsTheModel) {
  cudaStream_t s, s2;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t a, b, fork, join;
  for (cudaEvent_t* e : {&a, &b, &fork, &join}) ASSERT_EQ(cudaEventCreate(e), cudaSuccess);
  Gemm g(4096, 4096, 4096, FillType::bf16, CUDA_R_16BF, CUDA_R_16BF, s);
  auto elapsed = [&](const std::function<void()>& work) {
    EXPECT_EQ(cudaEventRecord(a, s), cudaSuccess);
    work();
    EXPECT_EQ(cudaEventRecord(b, s), cudaSuccess);
    EXPECT_EQ(cudaEventSynchronize(b), cudaSuccess);
    float ms = 0;
    EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
    return ms / 1e3;
  };
  // 10 products of 2 x 4096^3 FLOP at 795 TFLOP/s plus 5 us each; candidate 3 at 97%.
  const double one = 5e-6 + 2.0 * 4096 * 4096 * 4096 / 795e12;
  EXPECT_NEAR(elapsed([&] {
                for (int i = 0; i < 10; ++i) EXPECT_EQ(g.run(s), CUBLAS_STATUS_SUCCESS);
              }),
              10 * one, 0.003 * 10 * one);
  const double slower = 5e-6 + 2.0 * 4096 * 4096 * 4096 / (795e12 * 0.97);
  EXPECT_NEAR(elapsed([&] { g.run(s, 3); }), slower, 0.003 * slower);
  // 64 MiB over PCIe Gen5 x16: 55 GB/s pinned, 0.45 of it pageable; both directions at once on
  // two streams take as long as one.
  const size_t bytes = 64 << 20;
  std::vector<char> pageable(bytes, 3);
  void *pinned = nullptr, *dev = nullptr, *dev2 = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, bytes, 0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dev, bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dev2, bytes), cudaSuccess);
  const double pin = 2e-6 + bytes / 55e9, page = 2e-6 + bytes / (0.45 * 55e9);
  EXPECT_NEAR(elapsed([&] { cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s); }), pin,
              0.003 * pin);
  EXPECT_NEAR(
      elapsed([&] { cudaMemcpyAsync(dev, pageable.data(), bytes, cudaMemcpyHostToDevice, s); }),
      page, 0.003 * page);
  EXPECT_NEAR(elapsed([&] {
                cudaEventRecord(fork, s);
                cudaStreamWaitEvent(s2, fork, 0);
                cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s);
                cudaMemcpyAsync(pinned, dev2, bytes, cudaMemcpyDeviceToHost, s2);
                cudaEventRecord(join, s2);
                cudaStreamWaitEvent(s, join, 0);
              }),
              pin, 0.01 * pin);
  // The copy kernel: 2 x 1 GiB of HBM traffic at 3000 GB/s.
  void* big = nullptr;
  ASSERT_EQ(cudaMalloc(&big, 2ULL << 30), cudaSuccess);
  const double copy = 2e-6 + 2.0 * (1 << 30) / 3000e9;
  EXPECT_NEAR(elapsed([&] {
                copy_words(static_cast<uint4*>(big), static_cast<uint4*>(big) + (1 << 26), 1 << 26,
                           1056, 256, s);
              }),
              copy, 0.003 * copy);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

TEST_F(SimGpu, AnotherThreadsWorkDoesNotMoveThisThreadsClock) {
  // A thread that has waited for a lot of GPU work (its clock far ahead) must not delay a small
  // copy of another thread on the same engine (the burn-in's GEMM thread and all_reduce thread).
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64 << 20), cudaSuccess);
  std::vector<char> h(64 << 20);
  std::thread([&] {
    for (int i = 0; i < 20; ++i)  // 20 x 2.7 ms of copies to pageable memory, waited for
      ASSERT_EQ(cudaMemcpy(h.data(), d, h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  }).join();
  cudaStream_t s;
  cudaEvent_t a, b;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(a, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(h.data(), d, 4096, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(b, s), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(b), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  const double want = 2e-6 + 4096 / (0.45 * 55e9);  // pageable
  EXPECT_NEAR(ms / 1e3, want, 0.003 * want);
}

// --- Products --------------------------------------------------------------------------------

float bf16_value(std::uint16_t h) {
  std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint16_t bf16_bits(float f) {  // round to nearest even (finite values)
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

/// `count` bf16 values at device pointer `p`.
std::vector<std::uint16_t> download(const void* p, size_t count) {
  std::vector<std::uint16_t> h(count);
  EXPECT_EQ(cudaMemcpy(h.data(), p, count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

/// D(i, j) of batch b as the GPU computes it from the stored A (k x m) and B (k x n): FP32
/// accumulation in order of K, rounded once to bf16.
std::uint16_t host_element(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                           long long m, long long n, long long k, long long i, long long j,
                           long long batch = 0) {
  float acc = 0;
  for (long long p = 0; p < k; ++p)
    acc += bf16_value(a[batch * m * k + p + i * k]) * bf16_value(b[batch * k * n + p + j * k]);
  return bf16_bits(acc);
}

TEST_F(SimGpu, ProductElementsAreTheGpusArithmetic) {
  const long long m = 48, n = 40, k = 96;
  Gemm g(m, n, k, FillType::bf16, CUDA_R_16BF, CUDA_R_16BF, nullptr);
  ASSERT_EQ(g.run(nullptr), CUBLAS_STATUS_SUCCESS);
  const auto a = download(g.a, m * k), b = download(g.b, k * n), d = download(g.d, m * n);
  // The fill kernel's values: gemm_input_value rounded to bf16 (compute/gemm_check.hpp).
  for (long long e : {0LL, 1LL, m * k - 1})
    EXPECT_EQ(bf16_value(a[e]), clusterbench::compute::gemm_round_input(
                                    "bf16", clusterbench::compute::gemm_input_value(
                                                7, 0, static_cast<std::uint64_t>(e))));
  for (long long i = 0; i < m; ++i)
    for (long long j = 0; j < n; ++j)
      ASSERT_EQ(d[i + j * m], host_element(a, b, m, n, k, i, j)) << i << "," << j;
  // The row checksums kernel: D's row sums, exact norms (M N K <= 2^26), the reference GEMVs.
  void *scratch = nullptr, *rows = nullptr;
  ASSERT_EQ(cudaMalloc(&scratch, 16 * k), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&rows, 32 * m), cudaSuccess);
  ASSERT_EQ(gemm_row_checksums(g.a, g.b, g.d, FillType::bf16, FillType::bf16, m, n, k,
                               static_cast<double*>(scratch), static_cast<double*>(rows), nullptr),
            cudaSuccess);
  std::vector<double> r(4 * m);
  ASSERT_EQ(cudaMemcpy(r.data(), rows, 32 * m, cudaMemcpyDeviceToHost), cudaSuccess);
  for (long long i = 0; i < m; ++i) {
    double sum = 0, sq = 0, ref = 0;
    for (long long j = 0; j < n; ++j) {
      const double v = bf16_value(d[i + j * m]);
      sum += v, sq += v * v;
      for (long long p = 0; p < k; ++p) ref += bf16_value(a[p + i * k]) * bf16_value(b[p + j * k]);
    }
    // The exact sum (D's elements are rounded): within the checksum's own bound (lambda c_out
    // u_out ||D_i||, compute/gemm_check.hpp).
    EXPECT_NEAR(r[4 * i], sum, 6 * 2 * 0x1p-8 * std::sqrt(sq)) << i;
    EXPECT_NEAR(r[4 * i + 1], std::sqrt(sq), 1e-9 * std::sqrt(sq)) << i;
    EXPECT_NEAR(r[4 * i + 2], ref, 1e-9 * std::fabs(ref) + 1e-9) << i;
  }
}

TEST(SimGpuNumeric, FillValuesAreTheStoredElements) {
  // The fast path that products and checksums read (values) and the bytes a copy to the host
  // reads agree bit for bit, for every fill type, on indices of both signs.
  for (int fill = 0; fill < 5; ++fill) {
    std::vector<float> v(100000);
    cbsim::gemm_fill_values(fill, 11, 1, 12345, v.size(), v.data());
    for (size_t i = 0; i < v.size(); ++i) {
      unsigned char b[8];
      cbsim::gemm_fill_element(fill, 11, 1, 12345 + i, b);
      ASSERT_EQ(v[i], static_cast<float>(cbsim::load(cbsim::fill_elem(fill), b, 0)))
          << fill << " " << i;
    }
  }
}

TEST_F(SimGpu, BatchedProducts) {
  const long long m = 16, n = 24, k = 32;
  Gemm g(m, n, k, FillType::bf16, CUDA_R_16BF, CUDA_R_16BF, nullptr, 3);
  ASSERT_EQ(g.run(nullptr), CUBLAS_STATUS_SUCCESS);
  const auto a = download(g.a, 3 * m * k), b = download(g.b, 3 * k * n);
  const auto d = download(g.d, 3 * m * n);
  for (long long i : {0LL, 7LL, m - 1})
    for (long long j : {0LL, 11LL, n - 1})
      EXPECT_EQ(d[2 * m * n + i + j * m], host_element(a, b, m, n, k, i, j, 2));
}

TEST_F(SimGpu, WrongProductFaultAndThePerProductComparison) {
  load_node(gpu_json("18", "{\"wrong_product\": {\"after_s\": 0}}"));
  const long long m = 32, n = 32, k = 64;
  Gemm g(m, n, k, FillType::bf16, CUDA_R_16BF, CUDA_R_16BF, nullptr);
  ASSERT_EQ(g.run(nullptr), CUBLAS_STATUS_SUCCESS);  // the first product: one wrong element
  const auto a = download(g.a, m * k), b = download(g.b, k * n);
  auto bad = download(g.d, m * n);
  const long long at = m / 2 + (n / 2) * m;
  const std::uint16_t right = host_element(a, b, m, n, k, m / 2, n / 2);
  EXPECT_EQ(bad[at], bf16_bits(-bf16_value(right) + 1000));
  bad[at] = right;
  for (long long e = 0; e < m * n; ++e)
    ASSERT_EQ(bad[e], host_element(a, b, m, n, k, e % m, e / m));
  void *ref = nullptr, *counters = nullptr;
  ASSERT_EQ(cudaMalloc(&ref, m * n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&counters, 24), cudaSuccess);
  ASSERT_EQ(cudaMemset(counters, 0, 24), cudaSuccess);
  ASSERT_EQ(cublasLtMatmul(g.h, g.op, &g.alpha, g.a, g.la, g.b, g.lb, &g.beta, ref, g.ld, ref, g.ld,
                           &g.algo[0].algo, g.ws, 1 << 20, nullptr),
            CUBLAS_STATUS_SUCCESS);  // the next product is right again
  auto* c = static_cast<unsigned long long*>(counters);
  ASSERT_EQ(clusterbench::gpu::compare_elements(g.d, ref, clusterbench::gpu::CompareType::bf16,
                                                m * n, 1e-2, c, nullptr),
            cudaSuccess);
  ASSERT_EQ(clusterbench::gpu::compare_elements(ref, ref, clusterbench::gpu::CompareType::bf16,
                                                m * n, 1e-2, c, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaMemset(ref, 0, m * n * 2), cudaSuccess);  // no longer a product: element-wise
  ASSERT_EQ(clusterbench::gpu::compare_elements(g.d, ref, clusterbench::gpu::CompareType::bf16,
                                                m * n, 1e-2, c, nullptr),
            cudaSuccess);
  unsigned long long got[3];
  ASSERT_EQ(cudaMemcpy(got, counters, 24, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got[0], 1 + static_cast<unsigned long long>(m * n));
  EXPECT_EQ(got[1], 2u);
  EXPECT_EQ(got[2], 0u);
}

TEST_F(SimGpu, RowChecksumsSeeAWrongElementOfALargeProduct) {
  // M N K = 2^29: D's row norms are estimated from 8 sampled columns (checksums.hpp), one of
  // them the overridden element's; it must still stand out in its row's checksum, and only
  // there (an estimate that scaled the override by N / 8 would hide it).
  load_node(gpu_json("18", "{\"wrong_product\": {\"after_s\": 0}}"));
  const long long m = 64, n = 8192, k = 1024;
  Gemm g(m, n, k, FillType::bf16, CUDA_R_16BF, CUDA_R_16BF, nullptr);
  ASSERT_EQ(g.run(nullptr), CUBLAS_STATUS_SUCCESS);
  void *scratch = nullptr, *rows = nullptr;
  ASSERT_EQ(cudaMalloc(&scratch, 16 * k), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&rows, 32 * m), cudaSuccess);
  ASSERT_EQ(gemm_row_checksums(g.a, g.b, g.d, FillType::bf16, FillType::bf16, m, n, k,
                               static_cast<double*>(scratch), static_cast<double*>(rows), nullptr),
            cudaSuccess);
  std::vector<double> r(4 * m);
  ASSERT_EQ(cudaMemcpy(r.data(), rows, 32 * m, cudaMemcpyDeviceToHost), cudaSuccess);
  const auto bound = clusterbench::compute::gemm_bound("bf16");
  for (long long i = 0; i < m; ++i) {
    const double ratio = clusterbench::compute::gemm_row_ratio(r[4 * i], r[4 * i + 1], r[4 * i + 2],
                                                               r[4 * i + 3], k, bound);
    if (i == m / 2)
      EXPECT_GT(ratio, 1) << "the wrong row passes";
    else
      ASSERT_LE(ratio, 1) << "row " << i;
  }
}

// --- cuBLASLt contracts --------------------------------------------------------------------------

TEST_F(SimGpu, CublasLtRefusesWhatCublasLtRefuses) {
  Gemm g(64, 64, 64, FillType::bf16, CUDA_R_16BF, CUDA_R_16BF, nullptr);
  EXPECT_EQ(g.algos, 8);
  for (int i = 0; i < g.algos; ++i) {
    EXPECT_EQ(g.algo[i].state, CUBLAS_STATUS_SUCCESS);
    EXPECT_LE(g.algo[i].workspaceSize, 1u << 20);
  }
  size_t size = 0;
  EXPECT_EQ(cublasLtMatmulAlgoConfigGetAttribute(&g.algo[0].algo, CUBLASLT_ALGO_CONFIG_ID, nullptr,
                                                 0, &size),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(size, 4u);
  long long t8 = CUBLAS_OP_T;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &t8, 8),
            CUBLAS_STATUS_INVALID_VALUE);
  int fast4 = 1;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast4, 4),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_STREQ(cublasLtGetStatusString(CUBLAS_STATUS_INVALID_VALUE),
               "an unsupported value or parameter was passed to the function");
  // An algo of another shape; a workspace smaller than the algo's.
  Gemm other(32, 64, 64, FillType::bf16, CUDA_R_16BF, CUDA_R_16BF, nullptr);
  EXPECT_EQ(cublasLtMatmul(g.h, g.op, &g.alpha, g.a, g.la, g.b, g.lb, &g.beta, g.d, g.ld, g.d, g.ld,
                           &other.algo[0].algo, g.ws, 1 << 20, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  ASSERT_GT(g.algo[1].workspaceSize, 1024u);
  EXPECT_EQ(cublasLtMatmul(g.h, g.op, &g.alpha, g.a, g.la, g.b, g.lb, &g.beta, g.d, g.ld, g.d, g.ld,
                           &g.algo[1].algo, g.ws, 1024, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  // ld < rows: accepted by the layout, refused by the heuristic (as libcublasLt 13 does).
  cublasLtMatrixLayout_t bad;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&bad, CUDA_R_16BF, 64, 64, 32), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulHeuristicResult_t r[8];
  int n = 0;
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(g.h, g.op, g.la, bad, g.ld, g.ld, pref, 8, r, &n),
            CUBLAS_STATUS_INVALID_VALUE);
  // Mixed input types; a stream of another device (the launch fails).
  cublasLtMatrixLayout_t f16;
  cublasLtMatrixLayoutCreate(&f16, CUDA_R_16F, 64, 64, 64);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(g.h, g.op, g.la, f16, g.ld, g.ld, pref, 8, r, &n),
            CUBLAS_STATUS_NOT_SUPPORTED);
  cudaStream_t s0;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(g.run(s0), CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cublasLtDestroy(g.h), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(g.run(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  cublasLtMatmulPreferenceDestroy(pref);
}

/// The FP8 problem D (bf16) = op(A) op(B) with e4m3 inputs: SUCCESS or why not.
cublasStatus_t fp8_heuristic(bool tn) {
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, ld;
  EXPECT_EQ(cublasLtCreate(&h), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  int ta = tn ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, 4);
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, 64, 64, 64);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, 64, 64, 64);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, 64, 64, 64);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulHeuristicResult_t r[8];
  int n = 0;
  return cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 8, r, &n);
}

TEST_F(SimGpu, Fp8NeedsHopperAndTheTnLayout) {
  EXPECT_EQ(fp8_heuristic(true), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(fp8_heuristic(false), CUBLAS_STATUS_NOT_SUPPORTED);
  load_node(gpu_json("18", "{}", "NVIDIA A100-SXM4-80GB"));
  EXPECT_EQ(fp8_heuristic(true), CUBLAS_STATUS_NOT_SUPPORTED);
}

}  // namespace
