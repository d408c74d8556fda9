// CUDA runtime: cudaMemcpy[Async] and cudaMemset[Async] over the lazy content. The kind must
// match the pointers (cudaErrorInvalidValue otherwise, as CUDA with unified addressing checks);
// a copy's rate depends on whether its host side is page-locked; pageable copies return only
// when done, as CUDA's do.
#include <cstdio>
#include <cstring>
#include <list>

#include "node.hpp"
#include "perf.hpp"
#include "state.hpp"

using namespace cbsim;

namespace {

/// Materialized uploads of recent host buffers: a timed loop uploads one buffer many times,
/// and comparing it with the last upload is cheaper than building it again.
struct UploadCache {
  struct Entry {
    std::uint64_t ptr = 0, len = 0;
    SourcePtr src;
  };
  std::list<Entry> entries;  // most recent first
};

Segs upload(State&, const unsigned char* p, std::uint64_t n) {
  static UploadCache cache;
  const auto key = reinterpret_cast<std::uint64_t>(p);
  for (auto it = cache.entries.begin(); it != cache.entries.end(); ++it) {
    if (it->ptr != key || it->len != n) continue;
    if (std::memcmp(bytes_of(*it->src).data(), p, n) == 0) {
      cache.entries.splice(cache.entries.begin(), cache.entries, it);
      return single(n, cache.entries.front().src);
    }
    cache.entries.erase(it);
    break;
  }
  Segs segs = from_host(p, n);
  if (segs.size() == 1 && segs[0].src->kind() == SrcKind::bytes && n >= (1 << 20)) {
    cache.entries.push_front({key, n, segs[0].src});
    if (cache.entries.size() > 4) cache.entries.pop_back();
  }
  return segs;
}

/// Warns once per process when device memory that was never written is read back.
void note_uninit(State& st, const Alloc& a, std::uint64_t off, std::uint64_t n) {
  const std::uint64_t bad = uninit_bytes(*a.content, off, n);
  if (!bad) return;
  st.dev[static_cast<size_t>(a.device)].counters.uninit_read_bytes += static_cast<long long>(bad);
  static bool warned = false;
  if (warned) return;
  warned = true;
  std::fprintf(stderr,
               "cbsim: %llu bytes read back from device memory never written (device %d, "
               "allocation of %llu bytes at %#llx, offset %llu); they read as 0xFF\n",
               static_cast<unsigned long long>(bad), a.device,
               static_cast<unsigned long long>(a.size), static_cast<unsigned long long>(a.base),
               static_cast<unsigned long long>(off));
}

enum class Dir { h2d, d2h, d2d, h2h };

/// The direction of a copy from its kind and pointers; cudaErrorInvalidValue when a pointer is
/// not what the kind says (or a device range leaves its allocation).
cudaError_t direction(State& st, cudaMemcpyKind kind, std::uint64_t dst, std::uint64_t src,
                      std::uint64_t n, Dir& dir) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
    return cudaErrorInvalidMemcpyDirection;
  const bool dst_dev = find_alloc(st, dst) != nullptr, src_dev = find_alloc(st, src) != nullptr;
  bool want_dst = dst_dev, want_src = src_dev;
  if (kind != cudaMemcpyDefault) {
    want_dst = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    want_src = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  }
  if (want_dst != dst_dev || want_src != src_dev) return cudaErrorInvalidValue;
  if ((dst_dev && !find_alloc(st, dst, n)) || (src_dev && !find_alloc(st, src, n)))
    return cudaErrorInvalidValue;
  dir = dst_dev ? (src_dev ? Dir::d2d : Dir::h2d) : (src_dev ? Dir::d2h : Dir::h2h);
  return cudaSuccess;
}

/// The copy as it runs: the device ranges looked up again (memory freed since is an illegal
/// address), the bytes moved, the engine and time.
void run_copy(State& st, Stream& s, Dir dir, std::uint64_t dst, std::uint64_t src, std::uint64_t n,
              Res& res, double& seconds) {
  const Gpu& g = node().gpus[static_cast<size_t>(s.device)];
  Alloc* da = dir == Dir::h2d || dir == Dir::d2d ? find_alloc(st, dst, n) : nullptr;
  Alloc* sa = dir == Dir::d2h || dir == Dir::d2d ? find_alloc(st, src, n) : nullptr;
  if ((dir == Dir::h2d || dir == Dir::d2d) && !da)
    return set_sticky(st, cudaErrorIllegalAddress, "cudaMemcpy into freed device memory");
  if ((dir == Dir::d2h || dir == Dir::d2d) && !sa)
    return set_sticky(st, cudaErrorIllegalAddress, "cudaMemcpy from freed device memory");
  switch (dir) {
    case Dir::h2d:
      da->content = replace(da->content, dst - da->base,
                            upload(st, reinterpret_cast<const unsigned char*>(src), n));
      res = Res::h2d, seconds = host_copy_seconds(g, static_cast<double>(n), pinned(st, src, n));
      return;
    case Dir::d2h:
      note_uninit(st, *sa, src - sa->base, n);
      read(*sa->content, src - sa->base, n, reinterpret_cast<unsigned char*>(dst));
      res = Res::d2h, seconds = host_copy_seconds(g, static_cast<double>(n), pinned(st, dst, n));
      return;
    case Dir::d2d:
      da->content = replace(da->content, dst - da->base, slice(*sa->content, src - sa->base, n));
      res = Res::compute, seconds = d2d_seconds(g, static_cast<double>(n));
      return;
    case Dir::h2h:
      std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
      res = Res::none, seconds = kLaunchSeconds;
      return;
  }
}

/// Waits until `s` has run everything queued on it (a copy that returns only when done).
void finish(std::unique_lock<std::mutex>& lock, State& st, Stream& s) {
  wait_for(lock, st, [&](double& t) {
    t = s.t;
    return s.queue.empty();
  });
}

cudaError_t copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream,
                 bool sync) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (cudaError_t e = init_error()) return fail(e);
  if (st.sticky) return fail(st.sticky);
  if (sync)
    if (cudaError_t e = capture_guard(st)) return fail(e);
  Stream* s = resolve(st, stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  const auto d = reinterpret_cast<std::uint64_t>(dst), sp = reinterpret_cast<std::uint64_t>(src);
  Dir dir{};
  if (cudaError_t e = direction(st, kind, d, sp, count, dir)) return fail(e);
  const bool pageable =
      (dir == Dir::h2d && !pinned(st, sp, count)) || (dir == Dir::d2h && !pinned(st, d, count));
  cudaError_t e = enqueue(st, *s, [=] {
    return work_op(kWorkCopy, [=](State& st2, Stream& s2, Res& res, double& sec) {
      run_copy(st2, s2, dir, d, sp, count, res, sec);
    });
  });
  if (e != cudaSuccess) return fail(e);
  if ((sync || pageable) && !s->capture) finish(lock, st, *s);
  return st.sticky ? fail(st.sticky) : cudaSuccess;
}

cudaError_t set(void* devPtr, int value, size_t count, cudaStream_t stream, bool sync) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (cudaError_t e = init_error()) return fail(e);
  if (st.sticky) return fail(st.sticky);
  if (sync)
    if (cudaError_t e = capture_guard(st)) return fail(e);
  Stream* s = resolve(st, stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  const auto p = reinterpret_cast<std::uint64_t>(devPtr);
  if (!find_alloc(st, p, count)) return fail(cudaErrorInvalidValue);
  const auto byte = static_cast<unsigned char>(value);
  cudaError_t e = enqueue(st, *s, [=] {
    return work_op(kWorkMemset, [=](State& st2, Stream& s2, Res& res, double& sec) {
      Alloc* a = find_alloc(st2, p, count);
      if (!a) return set_sticky(st2, cudaErrorIllegalAddress, "cudaMemset of freed device memory");
      a->content = replace(a->content, p - a->base, single(count, constant_source(byte)));
      res = Res::compute;
      sec = memset_seconds(node().gpus[static_cast<size_t>(s2.device)], static_cast<double>(count));
    });
  });
  return e != cudaSuccess ? fail(e) : cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy(dst, src, count, kind, nullptr, true);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return copy(dst, src, count, kind, stream, false);
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return set(devPtr, value, count, nullptr, true);
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return set(devPtr, value, count, stream, false);
}

}  // extern "C"
