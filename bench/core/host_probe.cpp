// The host probe (host_probe.hpp).
#include "core/host_probe.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
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
}  // namespace

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
