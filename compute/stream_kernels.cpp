// STREAM kernels (stream_kernels.hpp). Each version handles its range in three parts: scalar
// elements up to the first 64-byte boundary of the written array, whole vectors (aligned
// stores, or streaming stores), and a scalar tail.
#include "compute/stream_kernels.hpp"

#include <cstdint>
#include <stdexcept>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace clusterbench::compute {

StreamKernel stream_kernel_of(const std::string& name) {
  if (name == "copy") return StreamKernel::copy;
  if (name == "scale") return StreamKernel::scale;
  if (name == "add") return StreamKernel::add;
  if (name == "triad") return StreamKernel::triad;
  throw std::invalid_argument("unknown STREAM kernel '" + name + "'");
}

std::pair<long long, long long> stream_chunk(int t, int threads, long long n) {
  const long long lines = (n + 7) / 8;  // 8-element blocks, split as evenly as they go
  const long long per = lines / threads, extra = lines % threads;
  auto start = [&](long long i) { return 8 * (i * per + (i < extra ? i : extra)); };
  long long begin = start(t), end = start(t + 1);
  return {begin < n ? begin : n, end < n ? end : n};
}

namespace {

/// The array a kernel writes.
double* written(StreamKernel k, double* a, double* b, double* c) {
  return k == StreamKernel::copy || k == StreamKernel::add ? c : k == StreamKernel::scale ? b : a;
}

/// Elements [i, end) one at a time.
void scalar(StreamKernel k, double* a, double* b, double* c, long long i, long long end, double q) {
  for (; i < end; ++i) switch (k) {
      case StreamKernel::copy:
        c[i] = a[i];
        break;
      case StreamKernel::scale:
        b[i] = q * c[i];
        break;
      case StreamKernel::add:
        c[i] = a[i] + b[i];
        break;
      case StreamKernel::triad:
        a[i] = b[i] + q * c[i];
        break;
    }
}

/// First index >= begin (and <= end) at which the written array is 64-byte aligned.
long long aligned_from(const double* dst, long long begin, long long end) {
  long long i = begin;
  while (i < end && (reinterpret_cast<std::uintptr_t>(dst + i) & 63) != 0) ++i;
  return i;
}

#if defined(__x86_64__)
// One version per instruction set: W doubles per vector; LOAD/STORE/STREAM/ADD/MUL/SET1 are the
// set's intrinsics. A macro, since each body must carry its own target attribute.
#define CB_STREAM_VERSION(NAME, TARGET, VEC, W, LOAD, STORE, STREAM, ADD, MUL, SET1)             \
  __attribute__((target(TARGET))) void NAME(StreamKernel k, double* a, double* b, double* c,     \
                                            long long begin, long long end, double q, bool nt) { \
    double* dst = written(k, a, b, c);                                                           \
    long long i = aligned_from(dst, begin, end);                                                 \
    scalar(k, a, b, c, begin, i, q);                                                             \
    const VEC vq = SET1(q);                                                                      \
    for (; i + (W) <= end; i += (W)) {                                                           \
      VEC v;                                                                                     \
      switch (k) {                                                                               \
        case StreamKernel::copy:                                                                 \
          v = LOAD(a + i);                                                                       \
          break;                                                                                 \
        case StreamKernel::scale:                                                                \
          v = MUL(vq, LOAD(c + i));                                                              \
          break;                                                                                 \
        case StreamKernel::add:                                                                  \
          v = ADD(LOAD(a + i), LOAD(b + i));                                                     \
          break;                                                                                 \
        default:                                                                                 \
          v = ADD(LOAD(b + i), MUL(vq, LOAD(c + i)));                                            \
          break;                                                                                 \
      }                                                                                          \
      if (nt)                                                                                    \
        STREAM(dst + i, v);                                                                      \
      else                                                                                       \
        STORE(dst + i, v);                                                                       \
    }                                                                                            \
    scalar(k, a, b, c, i, end, q);                                                               \
    if (nt) _mm_sfence();                                                                        \
  }

CB_STREAM_VERSION(range_avx512, "avx512f", __m512d, 8, _mm512_loadu_pd, _mm512_store_pd,
                  _mm512_stream_pd, _mm512_add_pd, _mm512_mul_pd, _mm512_set1_pd)
CB_STREAM_VERSION(range_avx2, "avx2", __m256d, 4, _mm256_loadu_pd, _mm256_store_pd,
                  _mm256_stream_pd, _mm256_add_pd, _mm256_mul_pd, _mm256_set1_pd)
CB_STREAM_VERSION(range_sse2, "sse2", __m128d, 2, _mm_loadu_pd, _mm_store_pd, _mm_stream_pd,
                  _mm_add_pd, _mm_mul_pd, _mm_set1_pd)
#undef CB_STREAM_VERSION
#endif

/// Whether this CPU runs a version.
bool supported(const std::string& isa) {
#if defined(__x86_64__)
  if (isa == "avx512f") return __builtin_cpu_supports("avx512f");
  if (isa == "avx2") return __builtin_cpu_supports("avx2");
  if (isa == "sse2") return true;  // part of x86-64
#endif
  return isa == "generic";
}

}  // namespace

std::string stream_isa() {
  for (const char* isa : {"avx512f", "avx2", "sse2"})
    if (supported(isa)) return isa;
  return "generic";
}

void stream_range(StreamKernel k, double* a, double* b, double* c, long long begin, long long end,
                  double q, bool nontemporal, const std::string& isa) {
  static const std::string best = stream_isa();
  const std::string& use = isa.empty() ? best : isa;
  if (!supported(use)) throw std::invalid_argument("STREAM: this CPU has no " + use);
#if defined(__x86_64__)
  if (use == "avx512f") return range_avx512(k, a, b, c, begin, end, q, nontemporal);
  if (use == "avx2") return range_avx2(k, a, b, c, begin, end, q, nontemporal);
  if (use == "sse2") return range_sse2(k, a, b, c, begin, end, q, nontemporal);
#endif
  (void)nontemporal;
  scalar(k, a, b, c, begin, end, q);
}

}  // namespace clusterbench::compute
