// The host launchers of the plugin's kernels (compute/gemm_fill.cu, compute/gpu_copy_kernels.cu)
// over the lazy content: the same signatures, the same launch rules (the stream must belong to
// the current device: cudaErrorInvalidResourceHandle otherwise, as CUDA returns for a launch on
// another device's stream), every pointer checked as the kernel runs (a foreign or
// out-of-bounds pointer is an illegal address, sticky). The row checksums of a product use
// linearity (checksums.cpp).
#include <cmath>
#include <cstring>

#include "checksums.hpp"
#include "compute/gemm_gpu.hpp"
#include "compute/gpu_copy_kernels.hpp"
#include "gpu/plugin/compare.hpp"
#include "node.hpp"
#include "perf.hpp"
#include "product.hpp"
#include "state.hpp"

namespace cbsim {

namespace {

using Body = std::function<void(State&, Stream&, Res&, double&)>;

/// A kernel launch on `stream`: the launch's error is the thread's last error, as a <<<>>>
/// launch leaves it.
void launch(cudaStream_t stream, const Body& body) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = init_error()) return void(fail(e));
  if (st.sticky) return;
  Stream* s = resolve(st, stream);
  if (!s || s->device != current_device()) return void(fail(cudaErrorInvalidResourceHandle));
  if (cudaError_t e = enqueue(st, *s, [body] { return work_op(kWorkKernel, body); })) fail(e);
}

const Gpu& gpu_of(const Stream& s) { return node().gpus[static_cast<size_t>(s.device)]; }

}  // namespace

Alloc* kernel_range(State& st, const Stream& s, const char* kernel, const char* arg,
                    const void* ptr, std::uint64_t len) {
  const auto p = reinterpret_cast<std::uint64_t>(ptr);
  Alloc* a = find_alloc(st, p, std::max<std::uint64_t>(len, 1));
  if (a && a->device == s.device) return a;
  Alloc* any = find_alloc(st, p);
  char why[256];
  std::snprintf(why, sizeof why, "%s: %s %#llx + %llu bytes %s", kernel, arg,
                static_cast<unsigned long long>(p), static_cast<unsigned long long>(len),
                !any                      ? "is not device memory"
                : any->device != s.device ? "is memory of another device"
                                          : "leaves its allocation");
  ++st.dev[static_cast<size_t>(s.device)].counters.illegal_addresses;
  set_sticky(st, cudaErrorIllegalAddress, why);
  return nullptr;
}

void write_bytes(Alloc& a, const void* ptr, const void* bytes, std::uint64_t len) {
  const auto* b = static_cast<const unsigned char*>(bytes);
  a.content = replace(a.content, reinterpret_cast<std::uint64_t>(ptr) - a.base,
                      single(len, bytes_source(std::vector<unsigned char>(b, b + len))));
}

}  // namespace cbsim

namespace clusterbench::compute::gpu {

using cbsim::Alloc;
using cbsim::Res;
using cbsim::State;
using cbsim::Stream;

cudaError_t fill_gemm_input(void* dst, FillType type, long long count, std::uint64_t seed,
                            int which, cudaStream_t stream) {
  const int fill = static_cast<int>(type);
  const std::uint64_t len =
      static_cast<std::uint64_t>(std::max(0LL, count)) * cbsim::elem_size(cbsim::fill_elem(fill));
  cbsim::launch(stream, [=](State& st, Stream& s, Res& res, double& sec) {
    res = Res::compute, sec = cbsim::kernel_seconds(cbsim::gpu_of(s), static_cast<double>(len));
    if (len == 0) return;
    Alloc* a = cbsim::kernel_range(st, s, "fill_gemm_input", "dst", dst, len);
    if (a)
      a->content = cbsim::replace(a->content, reinterpret_cast<std::uint64_t>(dst) - a->base,
                                  cbsim::single(len, cbsim::gemm_fill_source(fill, seed, which)));
  });
  return cudaGetLastError();
}

cudaError_t gemm_row_checksums(const void* a, const void* b, const void* d, FillType in,
                               FillType out, long long m, long long n, long long k, double* scratch,
                               double* rows, cudaStream_t stream) {
  if (out != FillType::f32 && out != FillType::f16 && out != FillType::bf16)
    return cudaErrorInvalidValue;
  cbsim::ChecksumArgs c{a, b,       d,   static_cast<int>(in), static_cast<int>(out), m, n,
                        k, scratch, rows};
  cbsim::launch(stream, [c](State& st, Stream& s, Res& res, double& sec) {
    cbsim::run_row_checksums(st, s, c, res, sec);
  });
  return cudaGetLastError();
}

cudaError_t fill_copy_pattern(uint4* dst, long long words, cudaStream_t stream) {
  const std::uint64_t len = static_cast<std::uint64_t>(std::max(0LL, words)) * 16;
  cbsim::launch(stream, [=](State& st, Stream& s, Res& res, double& sec) {
    res = Res::compute, sec = cbsim::kernel_seconds(cbsim::gpu_of(s), static_cast<double>(len));
    if (len == 0) return;
    Alloc* a = cbsim::kernel_range(st, s, "fill_copy_pattern", "dst", dst, len);
    if (a)
      a->content = cbsim::replace(a->content, reinterpret_cast<std::uint64_t>(dst) - a->base,
                                  cbsim::single(len, cbsim::copy_fill_source()));
  });
  return cudaGetLastError();
}

cudaError_t copy_words(uint4* dst, const uint4* src, long long words, int blocks, int threads,
                       cudaStream_t stream) {
  if (blocks <= 0 || threads <= 0 || threads > 1024) {
    cbsim::fail(cudaErrorInvalidConfiguration);
    return cudaGetLastError();
  }
  const std::uint64_t len = static_cast<std::uint64_t>(std::max(0LL, words)) * 16;
  cbsim::launch(stream, [=](State& st, Stream& s, Res& res, double& sec) {
    res = Res::compute,
    sec = cbsim::kernel_seconds(cbsim::gpu_of(s), 2.0 * static_cast<double>(len));
    if (len == 0) return;
    Alloc* sa = cbsim::kernel_range(st, s, "copy_words", "src", src, len);
    Alloc* da = sa ? cbsim::kernel_range(st, s, "copy_words", "dst", dst, len) : nullptr;
    if (!da) return;
    cbsim::Segs piece =
        cbsim::slice(*sa->content, reinterpret_cast<std::uint64_t>(src) - sa->base, len);
    da->content =
        cbsim::replace(da->content, reinterpret_cast<std::uint64_t>(dst) - da->base, piece);
  });
  return cudaGetLastError();
}

}  // namespace clusterbench::compute::gpu

namespace clusterbench::gpu {

cudaError_t compare_elements(const void* a, const void* ref, CompareType type, long long count,
                             double rel_tolerance, unsigned long long* counters,
                             cudaStream_t stream) {
  // CompareType's f32, f16, bf16 are FillType's first three, the element types run_compare reads.
  using clusterbench::compute::gpu::FillType;
  const FillType fill = type == CompareType::f16    ? FillType::f16
                        : type == CompareType::bf16 ? FillType::bf16
                                                    : FillType::f32;
  cbsim::CompareArgs c{a, ref, static_cast<int>(fill), count, rel_tolerance, counters};
  cbsim::launch(stream, [c](cbsim::State& st, cbsim::Stream& s, cbsim::Res& res, double& sec) {
    cbsim::run_compare(st, s, c, res, sec);
  });
  return cudaGetLastError();
}

}  // namespace clusterbench::gpu
