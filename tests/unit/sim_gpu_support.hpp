// Helpers of the simulated GPU node's unit tests (test_sim_gpu.cpp, test_sim_gpu_nccl.cpp): a
// node description written to a temporary file and loaded, the simulation's test entry points.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

extern "C" long long cbsim_counter(const char* name, int device);
extern "C" const char* cbsim_fault_text(void);
extern "C" void cbsim_reset(void);

namespace simtest {

/// One H100 of the description, at bus `bus` (hex), with `sim` as its "sim" object.
inline std::string gpu_json(const std::string& bus, const std::string& sim = "{}",
                            const std::string& name = "NVIDIA H100 80GB HBM3",
                            const std::string& pcie = "5, \"width_current\": 16") {
  return "{\"name\": \"" + name + "\", \"uuid\": \"GPU-00000000-0000-0000-0000-0000000000" + bus +
         "\", \"pci_bus_id\": \"00000000:" + bus +
         ":00.0\", \"memory_total_bytes\": 85520809984, \"pcie\": {\"gen_current\": " + pcie +
         "}, \"nvlink_up\": 18, \"sim\": " + sim + "}";
}

/// Writes a node description with `gpus` (JSON objects) and loads it into the simulation.
inline void load_node(const std::string& gpus, int driver = 13000,
                      const std::string& sim = "{\"wall_sleep_cap_s\": 0.001}") {
  static const std::string path = "/tmp/cbsim-test-node-" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << "{\"driver_version\": \"580.95.05\", \"cuda_driver_version\": " << driver
                      << ", \"sim\": " << sim << ", \"gpus\": [" << gpus << "]}";
  setenv("CBSIM_NODE", path.c_str(), 1);
  cbsim_reset();
}

/// Two healthy H100s.
inline void two_gpus() { load_node(gpu_json("18") + ", " + gpu_json("2A")); }

/// Resident memory of this process, bytes.
inline long long rss_bytes() {
  long long pages = 0, resident = 0;
  std::ifstream("/proc/self/statm") >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

/// Runs `body` in a forked child (a context made sticky must not leak into the test process);
/// the child's gtest failures make it exit 1.
template <class Body>
void in_child(Body body) {
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    body();
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "child died";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's checks failed (its output is above)";
}

}  // namespace simtest
