// compute.host_device_copy: bytes counted per copy, GB/s, the NUMA near/far choice (from the
// two-socket fixture tree and from hand-written distance matrices), the case plan, and the
// telemetry summary of PCIe readings taken during a copy. The copies run only on a GPU
// (scripts/gpu-check.sh) or through the fake plugin (tests/integration/compute_gpu_fake.sh).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "compute/host_device_copy.hpp"
#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"
#include "core/api/telemetry.hpp"

using namespace clusterbench;
using namespace clusterbench::compute;

TEST(HostDeviceCopy, BytesMovedAndGbps) {
  EXPECT_EQ(host_copy_bytes_moved("h2d", 256LL << 20), 268435456.0);
  EXPECT_EQ(host_copy_bytes_moved("d2h", 256LL << 20), 268435456.0);
  EXPECT_EQ(host_copy_bytes_moved("bidir", 256LL << 20), 536870912.0);  // one copy each way
  EXPECT_THROW(host_copy_bytes_moved("d2d", 16), std::invalid_argument);
  // 256 MiB in 4.88 ms: 268435456 / 4.88e-3 / 1e9 = 55.0072 GB/s (GB = 1e9 B).
  EXPECT_NEAR(host_copy_bytes_moved("h2d", 256LL << 20) / 4.88e-3 / 1e9, 55.007265573770, 1e-9);
  // Both ways in 9.5 ms: 536870912 / 9.5e-3 / 1e9 = 56.5127 GB/s.
  EXPECT_NEAR(host_copy_bytes_moved("bidir", 256LL << 20) / 9.5e-3 / 1e9, 56.512727578947, 1e-9);
}

// The fixture tree of a two-socket machine (tests/fixtures/fsroot/two-socket): nodes 0 and 1,
// distances "10 21" / "21 10", loaded through HWLOC_FSROOT as inventory does.
TEST(HostDeviceCopy, NumaChoiceFromFixtureTopology) {
  std::string root = std::string(CB_FIXTURES) + "/fsroot/two-socket";
  setenv("HWLOC_FSROOT", root.c_str(), 1);
  hwloc_topology_t t = nullptr;
  ASSERT_EQ(hwloc_topology_init(&t), 0);
  for (const char* name : {"x86", "pci", "opencl", "gl", "cuda", "nvml", "rsmi", "levelzero"})
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, name);
  ASSERT_EQ(hwloc_topology_load(t), 0);
  unsetenv("HWLOC_FSROOT");
  NumaTopology topo = numa_topology(t);
  hwloc_topology_destroy(t);
  ASSERT_EQ(topo.nodes, (std::vector<int>{0, 1}));
  ASSERT_EQ(topo.distance.size(), 2u);
  EXPECT_EQ(topo.distance[0], (std::vector<unsigned long long>{10, 21}));
  EXPECT_EQ(topo.distance[1], (std::vector<unsigned long long>{21, 10}));

  EXPECT_EQ(choose_host_numa(topo, 0, "near").node, 0);
  EXPECT_EQ(choose_host_numa(topo, 0, "far").node, 1);
  EXPECT_EQ(choose_host_numa(topo, 1, "near").node, 1);
  EXPECT_EQ(choose_host_numa(topo, 1, "far").node, 0);
  NumaChoice unknown = choose_host_numa(topo, -1, "far");
  EXPECT_EQ(unknown.node, -1);
  EXPECT_NE(unknown.why_not.find("the GPU's NUMA node is unknown"), std::string::npos);
  EXPECT_EQ(choose_host_numa(topo, 3, "near").why_not,
            "NUMA node 3 of the GPU is not in the topology");
  EXPECT_THROW(choose_host_numa(topo, 0, "middle"), std::invalid_argument);
}

TEST(HostDeviceCopy, NumaChoiceByDistance) {
  // Four nodes, two sockets of two: node 0's farthest are 2 and 3 (32); the tie goes to 2.
  NumaTopology four{{0, 1, 2, 3},
                    {{10, 12, 32, 32}, {12, 10, 32, 32}, {32, 32, 10, 12}, {32, 32, 12, 10}}};
  EXPECT_EQ(choose_host_numa(four, 0, "far").node, 2);
  EXPECT_EQ(choose_host_numa(four, 3, "far").node, 0);
  EXPECT_EQ(choose_host_numa(four, 2, "near").node, 2);
  // No distance matrix: the lowest-numbered other node.
  NumaTopology plain{{0, 4, 2}, {}};
  EXPECT_EQ(choose_host_numa(plain, 0, "far").node, 2);
  EXPECT_EQ(choose_host_numa(plain, 2, "far").node, 0);
  // One node: near is that node even when sysfs gives the GPU -1; far is waived.
  NumaTopology one{{0}, {{10}}};
  EXPECT_EQ(choose_host_numa(one, -1, "near").node, 0);
  NumaChoice far = choose_host_numa(one, 0, "far");
  EXPECT_EQ(far.node, -1);
  EXPECT_EQ(far.why_not, "one NUMA node: no remote host memory");
}

TEST(HostDeviceCopy, CasesAndGpuLevel) {
  const Benchmark* b = Registry::get().find("compute.host_device_copy");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->level(), Level::gpu);
  EXPECT_TRUE(b->needs_gpu());
  auto cases = b->cases(Settings("ci", {}));
  ASSERT_EQ(cases.size(), 24u);  // 3 directions x 2 memories x 2 placements x 2 concurrencies
  EXPECT_EQ(cases[0],
            json({{"direction", "h2d"}, {"memory", "pinned"}, {"numa", "near"}, {"gpus", "all"}}));
  EXPECT_EQ(
      cases[23],
      json({{"direction", "bidir"}, {"memory", "pageable"}, {"numa", "far"}, {"gpus", "one"}}));
  auto some = b->cases(Settings(
      "ci",
      {"compute.host_device_copy.directions=h2d,d2h", "compute.host_device_copy.memory=pinned",
       "compute.host_device_copy.numa=near", "compute.host_device_copy.gpus=one"}));
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[1],
            json({{"direction", "d2h"}, {"memory", "pinned"}, {"numa", "near"}, {"gpus", "one"}}));
  EXPECT_THROW(b->cases(Settings("ci", {"compute.host_device_copy.memory=managed"})), InputError);
  // Estimates (run --dry-run): ci copies 64 MiB at a nominal 25 GB/s, fills at 5 GB/s, and a
  // one-at-a-time case waits for 8 GPUs' turns.
  const double b64 = 67108864;
  Settings ci("ci", {});
  EXPECT_DOUBLE_EQ(b->estimate_s(ci, cases[0]),
                   0.5 + b64 / 5e9 + loop_estimate_s(0.05, b64 / 25e9));
  EXPECT_DOUBLE_EQ(b->estimate_s(ci, cases[23]),
                   0.5 + 2 * b64 / 5e9 + 8 * loop_estimate_s(0.05, 2 * b64 / 25e9));
}

TEST(HostDeviceCopy, PcieReadingsDuringTheCopy) {
  auto sample = [](int gen, int width) {
    GpuTelemetry t;
    t.ok = true;
    t.status = "ok";
    t.pcie_gen_current = gen;
    t.pcie_width_current = width;
    t.pcie_gen_max = 5;
    t.pcie_width_max = 16;
    t.memory_total_bytes = 80e9;
    t.memory_used_bytes = 2e9;
    return t;
  };
  // One reading at Gen4 (trained below the link's max) among three at Gen5 x16.
  json j =
      summarize_telemetry({sample(5, 16), sample(4, 16), sample(5, 16), sample(5, 8)}, 0, "", 1e9);
  EXPECT_EQ(j["pcie"]["gen_current_min"], 4);
  EXPECT_EQ(j["pcie"]["width_current_min"], 8);
  EXPECT_EQ(j["pcie"]["gen_max"], 5);
  EXPECT_EQ(j["pcie"]["width_max"], 16);
  EXPECT_EQ(j["pcie"]["below_max_samples"], 2);
  // Memory held outside our 1e9 B of buffers: (2e9 - 1e9) / 80e9 = 1.25 %.
  EXPECT_DOUBLE_EQ(j["memory"]["used_other_pct_max"].get<double>(), 1.25);
  std::map<std::string, Metric> m;
  for (const Metric& x : telemetry_metrics(j)) m[x.name] = x;
  EXPECT_EQ(m.at("pcie_below_max_samples").value, 2);
  EXPECT_EQ(m.at("pcie_gen_min").value, 4);
  EXPECT_EQ(m.at("pcie_width_min").value, 8);
  EXPECT_EQ(m.at("memory_used_other").unit, "%");
  EXPECT_DOUBLE_EQ(m.at("memory_used_other").value, 1.25);
  // No PCIe readings: no PCIe metrics (the spec row is then MISSING, never PASS).
  GpuTelemetry bare;
  bare.ok = true;
  json none = summarize_telemetry({bare}, 0, "");
  EXPECT_TRUE(none["pcie"].is_null());
  for (const Metric& x : telemetry_metrics(none)) EXPECT_NE(x.name, "pcie_below_max_samples");
}
