// STREAM's four kernels for compute.memory_bandwidth, vectorised for the CPU they run on: on
// x86-64 one version per instruction set (AVX-512, AVX2, SSE2), chosen once at run time from
// the CPU's flags (function multiversioning by hand, so that one binary runs on every node of a
// mixed fleet), with optional non-temporal (streaming) stores. Elsewhere: plain loops.
#pragma once

#include <string>
#include <utility>

namespace clusterbench::compute {

/// copy: c = a; scale: b = q c; add: c = a + b; triad: a = b + q c (McCalpin's stream.c).
enum class StreamKernel { copy, scale, add, triad };

/// The kernel of a name ("copy", "scale", "add", "triad"); throws std::invalid_argument.
StreamKernel stream_kernel_of(const std::string& name);

/// The instruction set the kernels use on this CPU: "avx512f", "avx2", "sse2" or "generic".
std::string stream_isa();

/// Thread `t` of `threads`' share [begin, end) of n elements: contiguous, in thread order,
/// boundaries on multiples of 8 elements (64 bytes: a cache line, one AVX-512 vector), so that
/// the first touch and every pass give each thread the same pages.
std::pair<long long, long long> stream_chunk(int t, int threads, long long n);

/// One kernel over elements [begin, end) of the arrays (no aliasing between them), scalar q.
/// `nontemporal`: stores bypass the caches (no read for ownership of the written array), for
/// arrays much larger than the last-level cache; an sfence ends the range. `isa` picks the
/// version ("" = stream_isa()); one the CPU lacks throws std::invalid_argument.
void stream_range(StreamKernel k, double* a, double* b, double* c, long long begin, long long end,
                  double q, bool nontemporal, const std::string& isa = "");

}  // namespace clusterbench::compute
