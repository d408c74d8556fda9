// The runtime's state and its lookups (state.hpp).
#include <sys/mman.h>

#include <atomic>
#include <cstdio>

#include "node.hpp"
#include "state.hpp"

namespace cbsim {

namespace {

State* g_state = nullptr;

void create_devices(State& st) {
  st.dev.clear();
  st.dev.resize(node().gpus.size());
  for (size_t i = 0; i < st.dev.size(); ++i) {
    st.dev[i].legacy = std::make_unique<Stream>();
    st.dev[i].legacy->device = static_cast<int>(i);
    st.dev[i].legacy->legacy = true;
  }
}

}  // namespace

State& state() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_state = new State;  // never destroyed: work may still be queued at exit
    create_devices(*g_state);
  });
  return *g_state;
}

/// Forgets every allocation, stream, event and error and reads the node description again
/// (in-process tests only; the caller guarantees no other thread uses the runtime).
void reset_state() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  for (auto& [base, a] : st.allocs) munmap(reinterpret_cast<void*>(a.base), a.reserved);
  st.allocs.clear();
  st.host.clear();
  st.streams.clear();
  st.owned.clear();
  st.events.clear();
  st.graphs.clear();
  st.execs.clear();
  st.sticky = cudaSuccess;
  st.fault_text.clear();
  reload_node();
  create_devices(st);
  current_device() = 0;
  host_now() = 0;
  last_error() = cudaSuccess;
}

int& current_device() {
  thread_local int d = 0;
  return d;
}

double& host_now() {
  thread_local double t = 0;
  return t;
}

cudaError_t& last_error() {
  thread_local cudaError_t e = cudaSuccess;
  return e;
}

std::uint64_t thread_id() {
  static std::atomic<std::uint64_t> next{1};
  thread_local std::uint64_t id = next.fetch_add(1);
  return id;
}

cudaError_t init_error() {
  const Node& n = node();
  if (!n.loaded || n.gpus.empty()) return cudaErrorNoDevice;
  if (n.driver_cuda < CUDART_VERSION) return cudaErrorInsufficientDriver;
  return cudaSuccess;
}

cudaError_t fail(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) last_error() = e;
  return e;
}

void set_sticky(State& st, cudaError_t e, const std::string& why) {
  if (st.sticky != cudaSuccess) return;
  st.sticky = e;
  st.fault_text = why;
  std::fprintf(stderr, "cbsim: %s: %s (%s); every later CUDA call fails with it\n", why.c_str(),
               cudaGetErrorString(e), cudaGetErrorName(e));
}

Alloc* find_alloc(State& st, std::uint64_t p, std::uint64_t len) {
  auto it = st.allocs.upper_bound(p);
  if (it == st.allocs.begin()) return nullptr;
  --it;
  Alloc& a = it->second;
  if (p < a.base || p >= a.base + std::max<std::uint64_t>(a.size, 1)) return nullptr;
  if (len > a.size || p - a.base > a.size - len) return nullptr;
  return &a;
}

bool pinned(State& st, std::uint64_t p, std::uint64_t len) {
  auto it = st.host.upper_bound(p);
  if (it == st.host.begin()) return false;
  --it;
  const HostRange& r = it->second;
  return p >= r.base && p + len <= r.base + r.size;
}

Stream* legacy_stream(State& st, int device) {
  return st.dev[static_cast<size_t>(device)].legacy.get();
}

Stream* resolve(State& st, cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread)
    return legacy_stream(st, current_device());
  Stream* p = reinterpret_cast<Stream*>(s);
  return st.streams.count(p) ? p : nullptr;
}

}  // namespace cbsim
