// The host probe (host_probe.hpp).
#include "core/api/host_probe.hpp"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace clusterbench {

namespace {
using Clock = std::chrono::steady_clock;
constexpr long kSteps = 1L << 20;
constexpr size_t kWords = (32u << 20) / sizeof(uint64_t);
volatile uint64_t g_sink = 0;  // keeps both loops from being optimised away

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
/// The first online CPU other than `self` that this process may be scheduled on (cgroup limits
/// apply: sched_setaffinity fails outside them), -1 when there is none.
int other_cpu(int self) {
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (c == self) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    pthread_t me = pthread_self();
    cpu_set_t saved;
    if (pthread_getaffinity_np(me, sizeof saved, &saved) != 0) return -1;
    const bool ok = pthread_setaffinity_np(me, sizeof one, &one) == 0;
    pthread_setaffinity_np(me, sizeof saved, &saved);
    if (ok) return c;
  }
  return -1;
}

/// The ping-pong of core_to_core_ns: `line` holds an even value when the main side's turn has
/// come, odd when the helper's; the helper leaves on a negative value.
struct alignas(64) PingLine {
  std::atomic<long> v{0};
};

void pin_self(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

/// Round trips until `budget_s` has passed; the median of the batches' mean round trip, ns, or -1
/// when the helper stopped answering for 5 ms.
double ping(PingLine& line, double budget_s) {
  constexpr int kBatch = 64;
  std::vector<double> batches;
  long v = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(budget_s);
  while (Clock::now() < end || batches.empty()) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kBatch; ++i, v += 2) {
      line.v.store(v + 1, std::memory_order_release);
      for (unsigned spin = 1; line.v.load(std::memory_order_acquire) != v + 2; ++spin)
        if ((spin & 1023) == 0 && seconds_since(t0) > 0.005) return -1;
    }
    batches.push_back(seconds_since(t0) * 1e9 / kBatch);
  }
  std::nth_element(batches.begin(), batches.begin() + batches.size() / 2, batches.end());
  return batches[batches.size() / 2];
}

}  // namespace

double core_to_core_ns(double budget_s) {
  const int self = sched_getcpu();
  const int other = self < 0 ? -1 : other_cpu(self);
  if (other < 0) return -1;
  cpu_set_t saved;
  if (pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) != 0) return -1;
  pin_self(self);
  PingLine line;
  std::atomic<bool> ready{false};
  std::thread helper([&line, &ready, other] {
    pin_self(other);
    ready.store(true, std::memory_order_release);
    for (long seen = 0;;) {
      const long v = line.v.load(std::memory_order_acquire);
      if (v < 0) return;
      // Only the value seen is answered: a stop (-1) stored meanwhile is not overwritten.
      long expected = v;
      if (v != seen && (v & 1) && line.v.compare_exchange_strong(expected, v + 1)) seen = v + 1;
    }
  });
  // The helper's start and move to its CPU are not timed; nor is a first batch (caches, clocks).
  const auto t0 = Clock::now();
  while (!ready.load(std::memory_order_acquire) && seconds_since(t0) < 0.005)
    std::this_thread::yield();
  const double ns = ready.load() && ping(line, 0) > 0 ? ping(line, budget_s) : -1;
  line.v.store(-1, std::memory_order_release);
  helper.join();
  pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  return ns;
}

json host_probe() {
  static std::vector<uint64_t> buffer(kWords, 1);  // touched once, by the first case's thread
  uint64_t x = g_sink | 1;
  auto t0 = Clock::now();
  for (long i = 0; i < kSteps; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  const double cpu_s = seconds_since(t0);
  g_sink = x;
  uint64_t sum = 0;
  t0 = Clock::now();
  for (uint64_t w : buffer) sum += w;
  const double mem_s = seconds_since(t0);
  g_sink = sum;
  return {{"cpu_mops", cpu_s > 0 ? kSteps / cpu_s / 1e6 : 0.0},
          {"mem_gbps", mem_s > 0 ? kWords * sizeof(uint64_t) / mem_s / 1e9 : 0.0}};
}

CpuUse cpu_use_now() {
  timespec cpu{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  return {std::chrono::duration<double>(Clock::now().time_since_epoch()).count(),
          static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9};
}

double cpu_share(const CpuUse& from, const CpuUse& to) {
  const double wall = to.wall_s - from.wall_s;
  return wall > 0 ? std::max(0.0, (to.cpu_s - from.cpu_s) / wall) : 0;
}

}  // namespace clusterbench
