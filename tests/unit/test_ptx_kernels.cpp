// The CUDA 12 plugin's kernel launchers (compute/gpu_kernels_ptx.cpp,
// bench/gpu/plugin/ptx_compare.cpp, ptx_module.cpp) against a strict fake of the driver's module
// API, reached as the plugin reaches it (the runtime's cudaGetDriverEntryPoint). The fake reads
// the embedded PTX as a driver does: it refuses a PTX ISA newer than the driver's (8.2 for driver
// 535), a target newer than the device, a kernel the module does not define, a parameter buffer
// whose size is not the entry's parameter space, and a launch on a thread without the module's
// context; each launch's parameters are decoded at the offsets the PTX gives them.
#include <cuda.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "compute/gemm_gpu.hpp"
#include "compute/gpu_copy_kernels.hpp"
#include "gpu/plugin/compare.hpp"
#include "gpu/plugin/ptx_module.hpp"

namespace {

using namespace clusterbench;

/// One .entry of a module: its parameters' sizes and offsets (natural alignment, as ptxas lays
/// out the parameter space).
struct Entry {
  std::vector<size_t> size, offset;
  size_t total = 0;
};

/// A device of the fake: the newest PTX ISA its driver reads (x10) and its SM version.
struct Device {
  int isa = 82;  // driver 535 = CUDA 12.2 = PTX ISA 8.2
  int sm = 90;
};

/// A launch as the fake saw it: the entry, the shape and the decoded parameters.
struct Launch {
  std::string entry;
  unsigned grid = 0, block = 0;
  CUstream stream = nullptr;
  std::vector<unsigned long long> params;
};

struct Module {
  int device = -1;
  std::map<std::string, Entry> entries;
};

thread_local int g_current = -1;  ///< this thread's current context (cudaSetDevice); -1: none
int g_device = 0;                 ///< what cudaGetDevice answers
std::map<int, Device> g_devices;
std::vector<Module*> g_modules;
std::vector<Launch> g_launches;
int g_loads = 0;

std::map<std::string, Entry> parse_entries(const std::string& ptx) {
  std::map<std::string, Entry> out;
  static const std::regex entry(R"(\.entry\s+([A-Za-z0-9_$]+)\s*\(([^)]*)\))");
  static const std::regex param(
      R"(\.param\s+(?:\.align\s+(\d+)\s+)?\.[usbf](\d+)\s+\S+?(?:\[(\d+)\])?\s*(,|$))");
  for (std::sregex_iterator it(ptx.begin(), ptx.end(), entry), end; it != end; ++it) {
    Entry e;
    const std::string list = (*it)[2];
    for (std::sregex_iterator p(list.begin(), list.end(), param); p != end; ++p) {
      const size_t elem = std::stoul((*p)[2]) / 8;
      const size_t size = (*p)[3].matched ? elem * std::stoul((*p)[3]) : elem;
      const size_t align = (*p)[1].matched ? std::stoul((*p)[1]) : elem;
      e.total = (e.total + align - 1) / align * align;
      e.offset.push_back(e.total), e.size.push_back(size);
      e.total += size;
    }
    out[(*it)[1]] = e;
  }
  return out;
}

CUresult fake_load(CUmodule* mod, const void* image) {
  if (g_current < 0) return CUDA_ERROR_INVALID_CONTEXT;
  const std::string ptx(static_cast<const char*>(image));
  std::smatch m;
  if (!std::regex_search(ptx, m, std::regex(R"(\.version (\d+)\.(\d+))")))
    return CUDA_ERROR_INVALID_PTX;
  const Device& d = g_devices[g_current];
  if (std::stoi(m[1]) * 10 + std::stoi(m[2]) > d.isa) return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  if (!std::regex_search(ptx, m, std::regex(R"(\.target sm_(\d+))"))) return CUDA_ERROR_INVALID_PTX;
  if (std::stoi(m[1]) > d.sm) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  auto* module = new Module{g_current, parse_entries(ptx)};
  g_modules.push_back(module);
  ++g_loads;
  *mod = reinterpret_cast<CUmodule>(module);
  return CUDA_SUCCESS;
}

/// A CUfunction of the fake: the module's entry.
struct Function {
  Module* module;
  std::string name;
};

CUresult fake_get(CUfunction* f, CUmodule mod, const char* name) {
  auto* module = reinterpret_cast<Module*>(mod);
  if (!module || !module->entries.count(name)) return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(new Function{module, name});
  return CUDA_SUCCESS;
}

CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz, unsigned shared, CUstream stream, void** params, void** extra) {
  auto* fn = reinterpret_cast<Function*>(f);
  if (!fn || g_current != fn->module->device) return CUDA_ERROR_INVALID_CONTEXT;
  if (gx == 0 || gy == 0 || gz == 0 || gx > 0x7FFFFFFFu || bx == 0 || bx * by * bz > 1024 ||
      shared != 0 || (params != nullptr) == (extra != nullptr))
    return CUDA_ERROR_INVALID_VALUE;
  const unsigned char* buf = nullptr;
  const size_t* size = nullptr;
  for (void** e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
    if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buf = static_cast<const unsigned char*>(e[1]);
    else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE)
      size = static_cast<const size_t*>(e[1]);
    else
      return CUDA_ERROR_INVALID_VALUE;
  }
  const Entry& entry = fn->module->entries.at(fn->name);
  if (!buf || !size || *size != entry.total) return CUDA_ERROR_INVALID_VALUE;
  Launch l{fn->name, gx, bx, stream, {}};
  for (size_t i = 0; i < entry.size.size(); ++i) {
    unsigned long long v = 0;
    std::memcpy(&v, buf + entry.offset[i], entry.size[i]);
    l.params.push_back(v);
  }
  g_launches.push_back(l);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long,
                                               cudaDriverEntryPointQueryResult* status) {
  const std::string s = symbol;
  *fn = s == "cuModuleLoadData"      ? reinterpret_cast<void*>(&fake_load)
        : s == "cuModuleGetFunction" ? reinterpret_cast<void*>(&fake_get)
        : s == "cuLaunchKernel"      ? reinterpret_cast<void*>(&fake_launch)
                                     : nullptr;
  if (status) *status = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}
extern "C" cudaError_t cudaGetDevice(int* dev) {
  *dev = g_device;
  return cudaSuccess;
}
extern "C" cudaError_t cudaSetDevice(int dev) {
  g_current = dev;
  return cudaSuccess;
}
cudaError_t g_pending = cudaSuccess;  ///< the runtime's pending error (cudaGetLastError)
extern "C" cudaError_t cudaGetLastError() {
  cudaError_t e = g_pending;
  g_pending = cudaSuccess;
  return e;
}

namespace {

/// The lowered name of name expression `name` in the embedded table.
std::string lowered(const std::string& name) {
  for (int i = 0; i < gpu::kPtxKernelCount; ++i)
    if (name == gpu::kPtxKernels[i].name) return gpu::kPtxKernels[i].lowered;
  ADD_FAILURE() << name << " not in the PTX table";
  return {};
}

unsigned long long bits(const void* p) { return reinterpret_cast<unsigned long long>(p); }
unsigned long long bits(double d) {
  unsigned long long v;
  std::memcpy(&v, &d, sizeof v);
  return v;
}

class PtxKernels : public ::testing::Test {
 protected:
  void SetUp() override { g_launches.clear(); }
  /// Runs on device `dev` (a fresh index loads the module anew).
  void use(int dev, Device d = {}) { g_device = dev, g_devices[dev] = d; }
};

const std::string kFill = "clusterbench::compute::gpu::kernels::fill<";
const std::string kRowSums = "clusterbench::compute::gpu::kernels::row_sums<";
const std::string kGemv = "clusterbench::compute::gpu::kernels::a_gemv<";

TEST_F(PtxKernels, EveryListedKernelIsAnEntryOfIsa82ForCompute80) {
  std::ifstream list(CB_PTX_KERNELS_LIST);
  int kernels = 0;
  for (std::string line; std::getline(list, line);) kernels += line.rfind("kernel ", 0) == 0;
  EXPECT_EQ(kernels, gpu::kPtxKernelCount);
  const std::string ptx = gpu::kPtxText;
  EXPECT_NE(ptx.find(".version 8.2"), std::string::npos);
  EXPECT_NE(ptx.find(".target sm_80"), std::string::npos);
  const auto entries = parse_entries(ptx);
  for (int i = 0; i < gpu::kPtxKernelCount; ++i)
    EXPECT_TRUE(entries.count(gpu::kPtxKernels[i].lowered)) << gpu::kPtxKernels[i].name;
}

TEST_F(PtxKernels, FillLaunchesEachTypesKernelWithItsParameters) {
  use(0);
  auto* dst = reinterpret_cast<void*>(0x7f0000001000);
  auto* stream = reinterpret_cast<cudaStream_t>(0x77);
  const std::pair<compute::gpu::FillType, const char*> types[] = {
      {compute::gpu::FillType::f32, "float"},
      {compute::gpu::FillType::f16, "__half"},
      {compute::gpu::FillType::bf16, "__nv_bfloat16"},
      {compute::gpu::FillType::fp8_e4m3, "__nv_fp8_e4m3"},
      {compute::gpu::FillType::tf32, "clusterbench::compute::gpu::kernels::Tf32"}};
  for (auto [type, name] : types)
    ASSERT_EQ(compute::gpu::fill_gemm_input(dst, type, 1000, 42, 1, stream), cudaSuccess) << name;
  ASSERT_EQ(g_launches.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const Launch& l = g_launches[i];
    EXPECT_EQ(l.entry, lowered(kFill + types[i].second + ">"));
    EXPECT_EQ(l.grid, 4u);  // ceil(1000 / 256)
    EXPECT_EQ(l.block, 256u);
    EXPECT_EQ(l.stream, reinterpret_cast<CUstream>(stream));
    EXPECT_EQ(l.params, (std::vector<unsigned long long>{bits(dst), 1000, 42, 1}));
  }
  // A grid-stride loop past 65,536 blocks.
  ASSERT_EQ(
      compute::gpu::fill_gemm_input(dst, compute::gpu::FillType::f16, 1LL << 34, 7, 0, stream),
      cudaSuccess);
  EXPECT_EQ(g_launches.back().grid, 65536u);
}

TEST_F(PtxKernels, RowChecksumsLaunchTheThreeKernelsOnTheirRows) {
  use(0);
  double scratch[2 * 700], rows[4 * 300];
  const void *a = reinterpret_cast<void*>(0xa000), *b = reinterpret_cast<void*>(0xb000),
             *d = reinterpret_cast<void*>(0xd000);
  using compute::gpu::FillType;
  // m = 300 rows of D, n = 5, k = 700 rows of B: B's row sums take ceil(700 / 256) = 3 blocks,
  // A^T's GEMV one block per row of D, D's row sums ceil(300 / 256) = 2 blocks, 256 threads each.
  const std::tuple<FillType, FillType, const char*, const char*> cases[] = {
      {FillType::tf32, FillType::bf16, "float>", "__nv_bfloat16>"},
      {FillType::f32, FillType::f32, "float>", "float>"},
      {FillType::f16, FillType::f16, "__half>", "__half>"},
      {FillType::bf16, FillType::bf16, "__nv_bfloat16>", "__nv_bfloat16>"},
      {FillType::fp8_e4m3, FillType::f16, "__nv_fp8_e4m3>", "__half>"}};
  for (auto [in, out, tin, tout] : cases) {
    g_launches.clear();
    ASSERT_EQ(
        compute::gpu::gemm_row_checksums(a, b, d, in, out, 300, 5, 700, scratch, rows, nullptr),
        cudaSuccess)
        << tin;
    ASSERT_EQ(g_launches.size(), 3u);
    const Launch &bsum = g_launches[0], &gemv = g_launches[1], &dsum = g_launches[2];
    EXPECT_EQ(bsum.entry, lowered(kRowSums + tin));
    EXPECT_EQ(bsum.grid, 3u);
    EXPECT_EQ(bsum.params, (std::vector<unsigned long long>{bits(b), 700, 5, bits(scratch),
                                                            bits(scratch + 700), 1}));
    EXPECT_EQ(gemv.entry, lowered(kGemv + tin));
    EXPECT_EQ(gemv.grid, 300u);
    EXPECT_EQ(gemv.params, (std::vector<unsigned long long>{bits(a), 700, bits(scratch),
                                                            bits(scratch + 700), bits(rows)}));
    EXPECT_EQ(dsum.entry, lowered(kRowSums + tout));
    EXPECT_EQ(dsum.grid, 2u);
    EXPECT_EQ(dsum.params,
              (std::vector<unsigned long long>{bits(d), 300, 5, bits(rows), bits(rows + 1), 4}));
    for (const Launch& l : g_launches) EXPECT_EQ(l.block, 256u);
  }
  // fp8 is an input type only.
  g_launches.clear();
  EXPECT_EQ(compute::gpu::gemm_row_checksums(a, b, d, FillType::fp8_e4m3, FillType::fp8_e4m3, 3, 5,
                                             7, scratch, rows, nullptr),
            cudaErrorInvalidValue);
  EXPECT_TRUE(g_launches.empty());
}

TEST_F(PtxKernels, CopyAndCompareKernels) {
  use(0);
  auto* dst = reinterpret_cast<uint4*>(0x10000);
  auto* src = reinterpret_cast<const uint4*>(0x20000);
  ASSERT_EQ(compute::gpu::fill_copy_pattern(dst, 1 << 20, nullptr), cudaSuccess);
  ASSERT_EQ(compute::gpu::copy_words(dst, src, 1 << 20, 1056, 512, nullptr), cudaSuccess);
  unsigned long long counters[3];
  ASSERT_EQ(gpu::compare_elements(dst, src, gpu::CompareType::f16, 100000, 0.01, counters, nullptr),
            cudaSuccess);
  ASSERT_EQ(g_launches.size(), 4u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(g_launches[i].block, i == 1 ? 512u : 256u);
  EXPECT_EQ(g_launches[0].entry, lowered("clusterbench::compute::gpu::kernels::copy_fill"));
  EXPECT_EQ(g_launches[0].grid, 4096u);
  EXPECT_EQ(g_launches[0].params, (std::vector<unsigned long long>{bits(dst), 1 << 20}));
  EXPECT_EQ(g_launches[1].entry, lowered("clusterbench::compute::gpu::kernels::copy"));
  EXPECT_EQ(g_launches[1].grid, 1056u);
  EXPECT_EQ(g_launches[1].block, 512u);
  EXPECT_EQ(g_launches[1].params, (std::vector<unsigned long long>{bits(dst), bits(src), 1 << 20}));
  EXPECT_EQ(g_launches[2].entry, lowered("clusterbench::gpu::kernels::count_differing<__half>"));
  EXPECT_EQ(g_launches[2].grid, 391u);  // ceil(100000 / 256)
  EXPECT_EQ(g_launches[2].params, (std::vector<unsigned long long>{bits(dst), bits(src), 100000,
                                                                   bits(0.01), bits(counters)}));
  EXPECT_EQ(g_launches[3].entry, lowered("clusterbench::gpu::kernels::fold"));
  EXPECT_EQ(g_launches[3].grid, 1u);
  EXPECT_EQ(g_launches[3].block, 1u);
  EXPECT_EQ(g_launches[3].params, (std::vector<unsigned long long>{bits(counters)}));
  // The other element types; more than 4,096 blocks' worth: a grid-stride loop over 4,096.
  for (auto [type, name] : {std::pair{gpu::CompareType::f32, "float"},
                            std::pair{gpu::CompareType::bf16, "__nv_bfloat16"}}) {
    g_launches.clear();
    ASSERT_EQ(gpu::compare_elements(dst, src, type, 1LL << 30, 0, counters, nullptr), cudaSuccess);
    ASSERT_EQ(g_launches.size(), 2u);
    EXPECT_EQ(g_launches[0].entry,
              lowered(std::string("clusterbench::gpu::kernels::count_differing<") + name + ">"));
    EXPECT_EQ(g_launches[0].grid, 4096u);
  }
}

TEST_F(PtxKernels, AnotherThreadLaunchesInItsOwnCurrentContext) {
  use(0);
  ASSERT_EQ(compute::gpu::fill_copy_pattern(nullptr, 16, nullptr), cudaSuccess);
  cudaError_t there = cudaErrorUnknown;
  std::thread([&] { there = compute::gpu::fill_copy_pattern(nullptr, 16, nullptr); }).join();
  EXPECT_EQ(there, cudaSuccess);  // the fake refuses a launch with no current context
  EXPECT_EQ(g_launches.size(), 2u);
}

TEST_F(PtxKernels, ALaunchReportsAndClearsThePendingError) {
  use(0);
  g_pending = cudaErrorIllegalAddress;  // an earlier kernel's fault, not yet read
  EXPECT_EQ(compute::gpu::fill_copy_pattern(nullptr, 16, nullptr), cudaErrorIllegalAddress);
  EXPECT_EQ(compute::gpu::fill_copy_pattern(nullptr, 16, nullptr), cudaSuccess);
}

TEST_F(PtxKernels, LoadingAheadCompilesOncePerDevice) {
  use(9);
  const int before = g_loads;
  EXPECT_EQ(gpu::ptx_load_module(9), cudaSuccess);
  EXPECT_EQ(gpu::ptx_load_module(9), cudaSuccess);
  ASSERT_EQ(compute::gpu::fill_copy_pattern(nullptr, 16, nullptr), cudaSuccess);
  EXPECT_EQ(g_loads, before + 1);
  g_devices[10] = Device{80, 90};  // driver 525
  EXPECT_EQ(gpu::ptx_load_module(10), cudaErrorUnsupportedPtxVersion);
}

TEST_F(PtxKernels, TheModuleLoadsOncePerDevice) {
  use(3);
  const int before = g_loads;
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(compute::gpu::fill_copy_pattern(nullptr, 16, nullptr), cudaSuccess);
  EXPECT_EQ(g_loads, before + 1);
  use(4);
  ASSERT_EQ(compute::gpu::fill_copy_pattern(nullptr, 16, nullptr), cudaSuccess);
  EXPECT_EQ(g_loads, before + 2);
}

TEST_F(PtxKernels, AnOlderDriverOrDeviceRefusesTheModule) {
  use(6, Device{80, 90});  // driver 525: CUDA 12.0, PTX ISA 8.0
  EXPECT_EQ(compute::gpu::fill_copy_pattern(nullptr, 16, nullptr), cudaErrorUnsupportedPtxVersion);
  use(7, Device{82, 75});  // a Turing GPU: below the PTX's sm_80
  EXPECT_EQ(compute::gpu::fill_copy_pattern(nullptr, 16, nullptr), cudaErrorNoKernelImageForDevice);
  EXPECT_TRUE(g_launches.empty());
}

}  // namespace
