// Statistics of the simulated devices: cbsim_counter() for in-process tests, and with
// $CBSIM_STATS=FILE one JSON line per device appended at process exit (docs/simulated-gpu.md
// "Statistics").
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "state.hpp"

namespace cbsim {
void reset_state();
}

using namespace cbsim;

namespace {

long long counter_of(const Counters& c, const std::string& name) {
  const std::pair<const char*, long long> all[] = {{"kernel_launches", c.kernel_launches},
                                                   {"matmuls", c.matmuls},
                                                   {"graph_launches", c.graph_launches},
                                                   {"graph_kernels", c.graph_kernels},
                                                   {"graph_matmuls", c.graph_matmuls},
                                                   {"memcpys", c.memcpys},
                                                   {"memsets", c.memsets},
                                                   {"nccl_ops", c.nccl_ops},
                                                   {"peak_device_bytes", c.peak_device_bytes},
                                                   {"uninit_read_bytes", c.uninit_read_bytes},
                                                   {"illegal_addresses", c.illegal_addresses}};
  for (const auto& [n, v] : all)
    if (name == n) return v;
  return -1;
}

nlohmann::json line(int device, const Counters& c) {
  return {{"pid", getpid()},
          {"device", device},
          {"kernel_launches", c.kernel_launches},
          {"matmuls", c.matmuls},
          {"graph_launches", c.graph_launches},
          {"graph_kernels", c.graph_kernels},
          {"graph_matmuls", c.graph_matmuls},
          {"memcpys", c.memcpys},
          {"memsets", c.memsets},
          {"nccl_ops", c.nccl_ops},
          {"peak_device_bytes", c.peak_device_bytes},
          {"uninit_read_bytes", c.uninit_read_bytes},
          {"illegal_addresses", c.illegal_addresses}};
}

/// Appends the devices' lines to $CBSIM_STATS (one write, so that ranks do not interleave).
void write_stats() {
  const char* path = std::getenv("CBSIM_STATS");
  if (!path || !*path) return;
  State& st = state();
  std::string text;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    for (size_t d = 0; d < st.dev.size(); ++d) {
      const Counters& c = st.dev[d].counters;
      if (c.kernel_launches || c.matmuls || c.memcpys || c.memsets || c.nccl_ops ||
          c.peak_device_bytes)
        text += line(static_cast<int>(d), c).dump() + "\n";
    }
  }
  if (text.empty()) return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}

/// Registers write_stats at load (the plugin is loaded once; exit runs it).
struct StatsAtExit {
  StatsAtExit() { std::atexit(write_stats); }
} g_stats_at_exit;

}  // namespace

/// A counter of `device` ("kernel_launches", "matmuls", "graph_launches", "graph_kernels",
/// "graph_matmuls", "memcpys", "memsets", "nccl_ops", "peak_device_bytes", "uninit_read_bytes",
/// "illegal_addresses"); -1 for an unknown name or device.
extern "C" long long cbsim_counter(const char* name, int device) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!name || device < 0 || device >= static_cast<int>(st.dev.size())) return -1;
  return counter_of(st.dev[static_cast<size_t>(device)].counters, name);
}

/// What made the context sticky ("" while it is not).
extern "C" const char* cbsim_fault_text(void) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  return st.fault_text.c_str();
}

/// Forgets all state and reads the node description again (in-process tests only).
extern "C" void cbsim_reset(void) { reset_state(); }
