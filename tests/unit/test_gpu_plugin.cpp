// The GPU plugin loader's choice among plugins built for different CUDA versions
// (bench/gpu/loader.cpp): the pure choice function, then the loader on the fake plugins that say
// they were built with CUDA 13.0 and 12.2 (tests/compute.cmake builds them). Then the generic
// operation ABI's host side (bench/gpu/operation.hpp) on the fake plugin, and the GPU case's
// error mapping (bench/core/api/gpu_case.hpp). Each test runs in a process of its own
// (gtest_discover_tests), so each may load its own plugin once.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "compute/burnin.hpp"
#include "compute/gemm.hpp"
#include "core/api/error.hpp"
#include "core/api/gpu_case.hpp"
#include "gpu/loader.hpp"
#include "gpu/operation.hpp"
#include "gpu/plugin/nccl_build.hpp"

namespace clusterbench {
namespace {

using Ints = std::vector<int>;

const std::string kFake13 = CB_BINARY_DIR "/tests/fake_plugins/cuda13000/libclusterbench_gpu.so";
const std::string kFake12 =
    CB_BINARY_DIR "/tests/fake_plugins/cuda12020/libclusterbench_gpu_cuda12.so";
const char* kNoDevice =
    "cudaGetDeviceCount: no CUDA-capable device is detected (cudaErrorNoDevice)";

GpuPluginCandidate loaded(const std::string& name, int built) {
  return {"/opt/cb/" + name, built, ""};
}

TEST(GpuPluginVersions, ParseAndFormat) {
  EXPECT_EQ(parse_cuda_version("12.2"), 12020);
  EXPECT_EQ(parse_cuda_version("13.0"), 13000);
  EXPECT_EQ(parse_cuda_version("12.10"), 12100);
  EXPECT_EQ(parse_cuda_version(""), 0);
  EXPECT_EQ(parse_cuda_version("12"), 0);
  EXPECT_EQ(parse_cuda_version("12."), 0);
  EXPECT_EQ(parse_cuda_version("v12.2"), 0);
  EXPECT_EQ(cuda_version_string(12020), "12.2");
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(0), "");
}

TEST(GpuPluginVersions, MinimumDriverBranch) {
  EXPECT_EQ(min_driver_branch(13000), 580);
  EXPECT_EQ(min_driver_branch(13020), 580);
  EXPECT_EQ(min_driver_branch(12020), 525);
  EXPECT_EQ(min_driver_branch(12090), 525);
  EXPECT_EQ(min_driver_branch(11080), 450);
  EXPECT_EQ(min_driver_branch(10020), 0);
}

// A plugin whose kernels are PTX needs the first driver of its own CUDA: PTX of a newer ISA than
// the driver's cannot be compiled, whatever the runtime's minor-version compatibility.
TEST(GpuPluginVersions, PtxKernelsNeedTheirOwnCudasDriver) {
  GpuPluginCandidate ptx = loaded("libclusterbench_gpu_cuda12.so", 12020);
  ptx.ptx = true;
  EXPECT_EQ(min_driver_branch(ptx), 535);
  ptx.built_cuda = 12080;
  EXPECT_EQ(min_driver_branch(ptx), 570);
  ptx.built_cuda = 13000;
  EXPECT_EQ(min_driver_branch(ptx), 580);
  ptx.ptx = false;
  ptx.built_cuda = 12020;
  EXPECT_EQ(min_driver_branch(ptx), 525);
}

TEST(ChooseGpuPlugin, PtxPluginIsNotTriedOnAnOlderDriverOfItsMajor) {
  std::vector<GpuPluginCandidate> c = {loaded("libclusterbench_gpu.so", 13000),
                                       loaded("libclusterbench_gpu_cuda12.so", 12020)};
  c[1].ptx = true;
  EXPECT_EQ(choose_gpu_plugin(12020, "535.161.08", c).order, Ints({1}));  // its own driver
  EXPECT_EQ(choose_gpu_plugin(12080, "570.86.10", c).order, Ints({1}));   // a newer one
  GpuPluginChoice ch = choose_gpu_plugin(12000, "525.60.13", c);          // driver 525
  EXPECT_TRUE(ch.order.empty());
  EXPECT_TRUE(ch.driver_insufficient);
  EXPECT_NE(ch.reason.find("libclusterbench_gpu_cuda12.so (CUDA 12.2, driver >= 535, PTX kernels)"),
            std::string::npos)
      << ch.reason;
  EXPECT_NE(ch.reason.find("Install a driver for CUDA 12.2 or newer (>= 535)"), std::string::npos)
      << ch.reason;
}

// The seed's clusters: driver 535 = CUDA 12.2, an install with both plugins.
TEST(ChooseGpuPlugin, Driver535PicksTheCuda12Plugin) {
  std::vector<GpuPluginCandidate> c = {loaded("libclusterbench_gpu.so", 13000),
                                       loaded("libclusterbench_gpu_cuda12.so", 12020)};
  GpuPluginChoice ch = choose_gpu_plugin(12020, "535.161.08", c);
  EXPECT_EQ(ch.order, Ints({1}));
  EXPECT_FALSE(ch.driver_insufficient);
  EXPECT_EQ(ch.reason, "");
}

TEST(ChooseGpuPlugin, Driver580PrefersTheNewestThatFits) {
  std::vector<GpuPluginCandidate> c = {loaded("libclusterbench_gpu.so", 13000),
                                       loaded("libclusterbench_gpu_cuda12.so", 12020)};
  EXPECT_EQ(choose_gpu_plugin(13000, "580.65.06", c).order, Ints({0, 1}));
  EXPECT_EQ(choose_gpu_plugin(13020, "", c).order, Ints({0, 1}));
  // CUDA 12.8 driver (570): the 13.0 plugin is of another major: not tried.
  EXPECT_EQ(choose_gpu_plugin(12080, "", c).order, Ints({1}));
  // Unknown driver version: every plugin, newest first; cb_gpu_init decides.
  EXPECT_EQ(choose_gpu_plugin(0, "", c).order, Ints({0, 1}));
}

TEST(ChooseGpuPlugin, MinorVersionCompatibilityAfterExactFits) {
  std::vector<GpuPluginCandidate> c = {loaded("a.so", 12060), loaded("b.so", 12020),
                                       loaded("c.so", 12040), loaded("d.so", 0)};
  // Driver 12.0: none is <= 12.0; the same major's, closest first, then the unstated one.
  EXPECT_EQ(choose_gpu_plugin(12000, "", c).order, Ints({1, 2, 0, 3}));
  // Driver 12.3: 12.2 fits; then 12.4 and 12.6 by minor-version compatibility.
  EXPECT_EQ(choose_gpu_plugin(12030, "", c).order, Ints({1, 2, 0, 3}));
  // Driver 12.6: all fit, newest first.
  EXPECT_EQ(choose_gpu_plugin(12060, "", c).order, Ints({0, 2, 1, 3}));
}

TEST(ChooseGpuPlugin, NoneFitsIsADeploymentError) {
  std::vector<GpuPluginCandidate> c = {loaded("libclusterbench_gpu.so", 13000)};
  GpuPluginChoice ch = choose_gpu_plugin(12020, "535.161.08", c);
  EXPECT_TRUE(ch.order.empty());
  EXPECT_TRUE(ch.driver_insufficient);
  EXPECT_EQ(
      ch.reason,
      "CUDA driver version is insufficient: the driver (535.161.08) supports CUDA 12.2, and no "
      "GPU plugin present fits it: libclusterbench_gpu.so (CUDA 13.0, driver >= 580). Install "
      "a driver for CUDA 13.0 or newer (>= 580), or add a plugin built with CUDA <= 12.2 "
      "(libclusterbench_gpu_cuda12.so: make package builds it)");
}

TEST(ChooseGpuPlugin, NoneFitsNamesEveryPluginPresentAndTheOldestNeed) {
  std::vector<GpuPluginCandidate> c = {loaded("libclusterbench_gpu.so", 13000),
                                       loaded("libclusterbench_gpu_cuda12.so", 12020),
                                       {"/opt/cb/libclusterbench_gpu_x.so", 0, "x: bad ELF"}};
  GpuPluginChoice ch = choose_gpu_plugin(11080, "", c);
  EXPECT_TRUE(ch.driver_insufficient);
  EXPECT_NE(ch.reason.find("the driver supports CUDA 11.8, and no GPU plugin present fits it: "
                           "libclusterbench_gpu.so (CUDA 13.0, driver >= 580), "
                           "libclusterbench_gpu_cuda12.so (CUDA 12.2, driver >= 525), "
                           "libclusterbench_gpu_x.so (cannot load). Install a driver for CUDA "
                           "12.2 or newer (>= 525)"),
            std::string::npos)
      << ch.reason;
}

TEST(ChooseGpuPlugin, NoneLoadsGivesTheLoadErrors) {
  std::vector<GpuPluginCandidate> one = {{"/x/libclusterbench_gpu.so", 0, "e1: cannot open"}};
  GpuPluginChoice ch = choose_gpu_plugin(12020, "", one);
  EXPECT_TRUE(ch.order.empty());
  EXPECT_FALSE(ch.driver_insufficient);
  EXPECT_EQ(ch.reason, "e1: cannot open");
  std::vector<GpuPluginCandidate> two = {one[0], {"/x/libclusterbench_gpu_cuda12.so", 0, "e2"}};
  EXPECT_EQ(choose_gpu_plugin(12020, "", two).reason, "e1: cannot open; e2");
}

TEST(FindGpuPlugins, NamesOfThePluginFamilyOnly) {
  char tmpl[] = "/tmp/cbplugXXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  EXPECT_EQ(find_gpu_plugins(dir), std::vector<std::string>({dir + "/libclusterbench_gpu.so"}));
  for (const char* n : {"libclusterbench_gpu_cuda12.so", "libclusterbench_gpu.so", "other.so",
                        "libclusterbench_gpu_.so", "libclusterbench_gpu.so.bak"})
    std::ofstream(dir + "/" + n) << "x";
  EXPECT_EQ(find_gpu_plugins(dir),
            std::vector<std::string>(
                {dir + "/libclusterbench_gpu.so", dir + "/libclusterbench_gpu_cuda12.so"}));
  for (const char* n : {"libclusterbench_gpu_cuda12.so", "libclusterbench_gpu.so", "other.so",
                        "libclusterbench_gpu_.so", "libclusterbench_gpu.so.bak"})
    std::remove((dir + "/" + n).c_str());
  rmdir(dir.c_str());
}

class OpenGpuPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("FAKE_GPU_DEVICES");
    unsetenv("FAKE_GPU_ERROR");
    unsetenv("FAKE_GPU_DRIVER_INSUFFICIENT");
    struct stat st;
    ASSERT_EQ(stat(kFake13.c_str(), &st), 0) << kFake13;
    ASSERT_EQ(stat(kFake12.c_str(), &st), 0) << kFake12;
  }
};

TEST_F(OpenGpuPlugin, Driver122LoadsTheCuda12Plugin) {
  GpuPlugin p = open_gpu_plugin({kFake13, kFake12}, 12020, "535.161.08");
  EXPECT_EQ(p.path, kFake12);
  EXPECT_TRUE(p.loaded);
  EXPECT_FALSE(p.initialised);  // the fake's CUDA start fails as a GPU-less node's
  EXPECT_FALSE(p.driver_insufficient);
  EXPECT_EQ(p.error, kNoDevice);
  EXPECT_EQ(p.info.built_cuda, 12020);
  auto built = reinterpret_cast<int (*)()>(p.symbol("cb_gpu_built_cuda_version"));
  ASSERT_NE(built, nullptr);
  EXPECT_EQ(built(), 12020);
  EXPECT_EQ(p.present,
            std::vector<std::string>({"libclusterbench_gpu.so (CUDA 13.0, driver >= 580)",
                                      "libclusterbench_gpu_cuda12.so (CUDA 12.2, driver >= 525)"}));
}

TEST_F(OpenGpuPlugin, Driver130LoadsTheCuda13Plugin) {
  GpuPlugin p = open_gpu_plugin({kFake13, kFake12}, 13000, "580.65.06");
  EXPECT_EQ(p.path, kFake13);
  EXPECT_EQ(p.info.built_cuda, 13000);
  EXPECT_EQ(reinterpret_cast<int (*)()>(p.symbol("cb_gpu_built_cuda_version"))(), 13000);
}

TEST_F(OpenGpuPlugin, OnlyTheCuda13PluginOnDriver535IsADeploymentError) {
  GpuPlugin p = open_gpu_plugin({kFake13}, 12020, "535.161.08");
  EXPECT_TRUE(p.driver_insufficient);
  EXPECT_FALSE(p.loaded);
  EXPECT_EQ(p.handle, nullptr);
  EXPECT_EQ(p.path, kFake13);
  EXPECT_NE(p.error.find("libclusterbench_gpu.so (CUDA 13.0, driver >= 580). Install a driver for "
                         "CUDA 13.0 or newer (>= 580)"),
            std::string::npos)
      << p.error;
}

TEST_F(OpenGpuPlugin, AnInitThatSaysInsufficientGivesWayToTheNext) {
  // Driver version unknown: both are tried, newest first; each fake says the driver is too old.
  setenv("FAKE_GPU_DRIVER_INSUFFICIENT", "1", 1);
  GpuPlugin p = open_gpu_plugin({kFake13, kFake12}, 0, "");
  unsetenv("FAKE_GPU_DRIVER_INSUFFICIENT");
  EXPECT_TRUE(p.driver_insufficient);
  EXPECT_EQ(p.path, kFake12);  // the last one tried
  EXPECT_NE(p.error.find("[plugins present: libclusterbench_gpu.so (CUDA 13.0, driver >= 580), "
                         "libclusterbench_gpu_cuda12.so (CUDA 12.2, driver >= 525)]"),
            std::string::npos)
      << p.error;
}

TEST_F(OpenGpuPlugin, MissingFilesGiveDlopensText) {
  GpuPlugin p = open_gpu_plugin({"/nonexistent/libclusterbench_gpu.so"}, 12020, "");
  EXPECT_FALSE(p.loaded);
  EXPECT_FALSE(p.driver_insufficient);
  EXPECT_EQ(p.path, "/nonexistent/libclusterbench_gpu.so");
  EXPECT_NE(p.error.find("cannot open shared object file"), std::string::npos) << p.error;
  // A missing file beside a usable one: the usable one is chosen.
  GpuPlugin q = open_gpu_plugin({"/nonexistent/libclusterbench_gpu.so", kFake12}, 12020, "");
  EXPECT_EQ(q.path, kFake12);
  EXPECT_EQ(q.present[0], "libclusterbench_gpu.so (cannot load)");
}

// Neither plugin loads (a node without CUDA's libraries): the preferred one is named, and the
// other's reason follows, so the operator sees both libraries missing.
TEST_F(OpenGpuPlugin, NoneLoadsNamesThePreferredThenTheOthers) {
  const std::string dir = ::testing::TempDir() + "/cb-unloadable";
  ::mkdir(dir.c_str(), 0755);
  const std::string p13 = dir + "/libclusterbench_gpu.so",
                    p12 = dir + "/libclusterbench_gpu_cuda12.so";
  for (auto [path, cuda] : {std::pair{p13, 13000}, std::pair{p12, 12020}}) {
    std::ofstream(path) << "not an ELF file";
    std::ofstream(path + ".cuda") << "clusterbench-gpu-plugin abi=" << CB_GPU_ABI_VERSION
                                  << " cuda=" << cuda << "\n";
  }
  GpuPlugin p = open_gpu_plugin({p12, p13}, 0, "");
  EXPECT_FALSE(p.loaded);
  EXPECT_EQ(p.path, p13);  // the newest fits first
  const auto first = p.error.find("file too short"), other = p.error.find("; " + p12 + ": ");
  EXPECT_NE(first, std::string::npos) << p.error;
  ASSERT_NE(other, std::string::npos) << p.error;
  EXPECT_LT(first, other);
  EXPECT_NE(p.error.find("file too short", other), std::string::npos) << p.error;
}

// Issue 18 item 5: each fake plugin links its own stand-in libnccl.so.2 (one SONAME, two
// folders). Choosing must not load the other plugin: only the chosen one's NCCL is mapped, and it
// is the one the chosen plugin calls.
std::vector<std::string> mapped_nccls() {
  std::vector<std::string> found;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto at = line.find('/');
    if (at == std::string::npos || line.find("/libnccl.so") == std::string::npos) continue;
    const std::string path = line.substr(at);
    if (found.empty() || found.back() != path) found.push_back(path);
  }
  return found;
}

TEST_F(OpenGpuPlugin, Driver535MapsOnlyTheCuda12PluginsNccl) {
  GpuPlugin p = open_gpu_plugin({kFake13, kFake12}, 12020, "535.161.08");
  ASSERT_EQ(p.path, kFake12);
  auto nccl = reinterpret_cast<const char* (*)()>(p.symbol("fake_plugin_nccl_identity"));
  ASSERT_NE(nccl, nullptr);
  EXPECT_STREQ(nccl(), "nccl-for-cuda12020");
  EXPECT_EQ(mapped_nccls(),
            std::vector<std::string>({CB_BINARY_DIR "/tests/fake_nccl/cuda12020/libnccl.so.2"}));
}

TEST_F(OpenGpuPlugin, Driver580MapsOnlyTheCuda13PluginsNccl) {
  GpuPlugin p = open_gpu_plugin({kFake12, kFake13}, 13000, "580.65.06");
  ASSERT_EQ(p.path, kFake13);
  auto nccl = reinterpret_cast<const char* (*)()>(p.symbol("fake_plugin_nccl_identity"));
  ASSERT_NE(nccl, nullptr);
  EXPECT_STREQ(nccl(), "nccl-for-cuda13000");
  EXPECT_EQ(mapped_nccls(),
            std::vector<std::string>({CB_BINARY_DIR "/tests/fake_nccl/cuda13000/libnccl.so.2"}));
}

// --- the generic operation ABI on the fake plugin ------------------------------------------------

class GpuOperation : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("CLUSTERBENCH_GPU_PLUGIN", kFake13.c_str(), 1);
    setenv("FAKE_GPU_DEVICES", "1", 1);
    unsetenv("FAKE_GPU_TFLOPS");
  }
};

TEST_F(GpuOperation, CreateDescribesRunTimes) {
  gpu::Operation op("gemm", compute::gemm_op_params("bf16", {1024, 2048, 512}, 7, 16, 4));
  EXPECT_EQ(op.kind(), "gemm");
  const json& info = op.info();
  EXPECT_EQ(info.at("pci_bus_id"), "00000000:18:00.0");
  EXPECT_EQ(info.at("compute_capability"), "9.0");
  EXPECT_EQ(info.at("verification").at("samples"), 16);
  // A (K x M) and B (K x N) in bf16, D (M x N) in bf16: the product's own device memory.
  EXPECT_EQ(info.at("device_bytes").get<double>(),
            2.0 * (512 * 1024 + 512 * 2048) + 2.0 * 1024 * 2048);
  compute::GemmVerification v = compute::gemm_verification_of(info.at("verification"));
  EXPECT_TRUE(v.passed());
  // The fake's 800 TFLOP/s: 10 products of 2 M N K FLOP.
  EXPECT_NEAR(op.run(10), 10 * 2.0 * 1024 * 2048 * 512 / 800e12, 1e-15);
  gpu::Operation moved = std::move(op);
  EXPECT_EQ(moved.info().at("device"), "NVIDIA H100 80GB HBM3 (fake plugin)");
}

// Issue 18 item 3: each interval of the burn-in re-checks the soaked operation's own output
// (cb_gpu_op_check), not a fresh product: the fake plugin counts the checks of that operation.
TEST_F(GpuOperation, BurnInReChecksTheSoakedProduct) {
  auto soak = compute::make_cublaslt_soak("bf16", {256, 256, 4096}, 7, 16);
  for (int i = 1; i <= 3; ++i) {
    soak->run_until(std::chrono::steady_clock::now(), 0);
    compute::GemmVerification v = soak->verify(100 + static_cast<std::uint64_t>(i), false);
    EXPECT_TRUE(v.passed()) << v.failure_message("bf16", {256, 256, 4096});
    EXPECT_EQ(v.checks, 1 + i);  // create's check, then one per interval, same operation
  }
}

// Issue 18 item 11: fast accumulation reaches the plugin and comes back in its info.
TEST_F(GpuOperation, Fp8FastAccumulationIsAnOperationParam) {
  for (bool fast : {false, true}) {
    gpu::Operation op("gemm", compute::gemm_op_params("fp8_e4m3", {64, 64, 4096}, 7, 16, 1, fast));
    EXPECT_EQ(op.info().at("fast_accum"), fast);
    EXPECT_TRUE(compute::gemm_verification_of(op.info().at("verification")).passed());
  }
}

// The fake's D goes through compute/gemm_check.hpp: a zero D fails create's check.
TEST_F(GpuOperation, FakeGemmZeroProductFailsTheSharedCheck) {
  setenv("FAKE_GPU_GEMM_FAULT", "zero", 1);
  gpu::Operation op("gemm", compute::gemm_op_params("fp8_e4m3", {64, 64, 28672}, 7, 16, 1));
  unsetenv("FAKE_GPU_GEMM_FAULT");
  EXPECT_FALSE(compute::gemm_verification_of(op.info().at("verification")).passed());
}

TEST_F(GpuOperation, ErrorsCarryCodeKindCallAndThePluginsText) {
  try {
    gpu::Operation op("no_such_kind", json::object());
    FAIL() << "created an unknown kind";
  } catch (const gpu::OpError& e) {
    EXPECT_EQ(e.code, CB_GPU_ERROR);
    EXPECT_EQ(e.kind, "no_such_kind");
    EXPECT_EQ(e.call, "cb_gpu_op_create");
    EXPECT_EQ(e.text, "this GPU plugin has no operation 'no_such_kind'");
    EXPECT_EQ(std::string(e.what()),
              "cb_gpu_op_create(no_such_kind): this GPU plugin has no operation 'no_such_kind'");
  }
  EXPECT_THROW(gpu::Operation("host_copy", {{"bytes", 15}, {"direction", "h2d"}}), gpu::OpError);
  EXPECT_EQ(gpu::last_error(), "host_copy: bad parameters");
}

TEST_F(GpuOperation, PinnedStagingBufferAndDeviceFacts) {
  gpu::Operation slot("pinned_h2d", {{"bytes", 4096}});
  auto* p = reinterpret_cast<unsigned char*>(slot.info().at("host_address").get<std::uintptr_t>());
  ASSERT_NE(p, nullptr);
  p[4095] = 1;  // the caller writes its batch there
  EXPECT_GT(slot.run(1), 0);
  json dev = gpu::current_device();
  EXPECT_EQ(dev.at("pci_bus_id"), "00000000:18:00.0");
  EXPECT_EQ(dev.at("index"), 0);
}

TEST(GpuOperationUnloaded, APluginThatCannotLoadIsAnErrorNamingIt) {
  setenv("CLUSTERBENCH_GPU_PLUGIN", "/nonexistent/libclusterbench_gpu.so", 1);
  try {
    gpu::Operation op("gemm", json::object());
    FAIL() << "created an operation without a plugin";
  } catch (const gpu::OpError& e) {
    EXPECT_EQ(e.code, CB_GPU_ERROR);
    EXPECT_EQ(e.call, "dlsym");
    EXPECT_EQ(e.text.rfind("GPU plugin /nonexistent/libclusterbench_gpu.so is not loaded: ", 0), 0u)
        << e.text;
  }
}

TEST(GpuCaseErrors, UnsupportedWaivesAbortedAbortsOthersFailNamingTheLibrary) {
  EXPECT_THROW(throw_gpu_case_error(gpu::OpError(CB_GPU_UNSUPPORTED, "gemm", "cb_gpu_op_create",
                                                 "fp8_e4m3 needs compute capability 8.9"),
                                    "cuBLASLt"),
               Waived);
  EXPECT_THROW(
      throw_gpu_case_error(gpu::OpError(CB_GPU_ABORTED, "x", "cb_gpu_op_run", "gone"), "CUDA"),
      AbortRun);
  try {
    throw_gpu_case_error(gpu::OpError(CB_GPU_ERROR, "gemm", "cb_gpu_op_run", "an illegal address"),
                         "cuBLASLt");
    FAIL();
  } catch (const CallError& e) {
    EXPECT_EQ(e.info().library, "cuBLASLt");
    EXPECT_EQ(e.info().code, "1");
    EXPECT_EQ(e.info().call, "cb_gpu_op_run(gemm)");
    EXPECT_EQ(e.text(), "an illegal address");
  }
  // gpu_call maps what its body throws, and passes a result through.
  EXPECT_THROW(gpu_call("CUDA",
                        []() -> int {
                          throw gpu::OpError(CB_GPU_UNSUPPORTED, "device_copy", "cb_gpu_op_create",
                                             "full");
                        }),
               Waived);
  EXPECT_EQ(gpu_call("CUDA", [] { return 3; }), 3);
}

}  // namespace

// Issue 40 item 8: a CUDA 12 plugin must not bind a CUDA 13 libnccl.so.2 (same soname) and fail
// only at communicator init. The build is read from the version text NCCL embeds; the strings are
// those of NCCL 2.28.9 (CUDA 13.0 toolkit) and of the nvidia-nccl-cu12 2.18.3 wheel.
TEST(GpuPlugin, NcclBuildFromItsVersionText) {
  using clusterbench::gpu::nccl_build_mismatch;
  using clusterbench::gpu::nccl_build_of;
  std::string lib = std::string(
                        "\x7f"
                        "ELF...junk NCCL version mismatch with remote peer %s") +
                    std::string(1, '\0') + "NCCL version 2.28.9+cuda13.0" + std::string(1, '\0') +
                    "NCCL version 2.28.9 compiled with CUDA 13.0";
  auto b = nccl_build_of(lib);
  EXPECT_EQ(b.version, "2.28.9");
  EXPECT_EQ(b.cuda, 13000);
  EXPECT_EQ(nccl_build_of("NCCL version 2.18.3+cuda12.1").cuda, 12010);
  EXPECT_EQ(nccl_build_of("no version here").cuda, 0);
  EXPECT_EQ(nccl_build_of("NCCL version +cuda12.1").cuda, 0);
  // A CUDA 12 plugin over a CUDA 13 NCCL: refused, naming the library and both versions.
  const std::string why = nccl_build_mismatch("/usr/lib/libnccl.so.2", b, 12020);
  EXPECT_NE(why.find("/usr/lib/libnccl.so.2 is NCCL 2.28.9 built for CUDA 13.0"), std::string::npos)
      << why;
  EXPECT_NE(why.find("built with CUDA 12.2"), std::string::npos) << why;
  // Same major (a 12.1 NCCL under a 12.2 plugin), or unknown: no refusal.
  EXPECT_EQ(nccl_build_mismatch("x", nccl_build_of("NCCL version 2.18.3+cuda12.1"), 12020), "");
  EXPECT_EQ(nccl_build_mismatch("x", nccl_build_of(""), 12020), "");
}

}  // namespace clusterbench
