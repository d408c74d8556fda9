// Spec auto-selection (reports/select.hpp) over the shipped tables: the table is chosen by GPU
// model, and the GPU count is judged by gpu.count (issue 40: a node that lost a GPU, or has one of
// another model, must be judged, not refused).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "records/records.hpp"
#include "reports/select.hpp"

namespace clusterbench {
namespace {

const std::string kSpecs = std::string(CB_SOURCE_DIR) + "/reports/specs";

/// A node with `n` GPUs named `name` (NVML), device id `id`.
EnvRecord node(const std::string& host, int n, const std::string& name = "NVIDIA H100 80GB HBM3",
               const std::string& id = "0x2330") {
  EnvRecord e;
  e.host = host;
  for (int i = 0; i < n; ++i) {
    GpuInfo g;
    g.index = i, g.name = name, g.pci_device_id = id, g.source = "nvml";
    e.gpus.push_back(g);
  }
  e.gpu_status.on_pci = n;
  return e;
}

std::string file_of(const report::SpecSelection& s) { return s.path.substr(s.path.rfind('/') + 1); }

TEST(SelectSpec, EightH100MatchTheH100Table) {
  auto s = report::select_spec({node("n1", 8)}, kSpecs);
  EXPECT_EQ(file_of(s), "h100-sxm-80g-8x.json");
  EXPECT_EQ(s.reason, "8x NVIDIA H100 80GB HBM3 matched h100-sxm-80g-8x.json");
}

// The commonest GPU fault: 7 of 8 on the bus. Judged by the H100 table (gpu.count FAILs there).
TEST(SelectSpec, ANodeThatLostAGpuKeepsItsModelsTable) {
  auto s = report::select_spec({node("n1", 7)}, kSpecs);
  EXPECT_EQ(file_of(s), "h100-sxm-80g-8x.json");
  EXPECT_EQ(s.reason, "7x NVIDIA H100 80GB HBM3 matched h100-sxm-80g-8x.json");
}

// One GPU of another model among seven H100: the H100 table, whose gpu.model FAILs that GPU.
TEST(SelectSpec, OneForeignGpuIsJudgedNotRefused) {
  EnvRecord n = node("n1", 7);
  n.gpus.push_back(node("x", 1, "NVIDIA A100-SXM4-80GB", "0x20b2").gpus[0]);
  auto s = report::select_spec({n}, kSpecs);
  EXPECT_EQ(file_of(s), "h100-sxm-80g-8x.json");
}

// A fleet: the table of most GPUs; a node of another model is judged by it (FAILs gpu.model).
TEST(SelectSpec, AFleetIsJudgedByItsMajorityModel) {
  auto s = report::select_spec(
      {node("n1", 8), node("n2", 8), node("n3", 8, "NVIDIA A100-SXM4-80GB", "0x20b2")}, kSpecs);
  EXPECT_EQ(file_of(s), "h100-sxm-80g-8x.json");
  EXPECT_EQ(s.reason,
            "16 of 24 GPUs on 3 nodes matched h100-sxm-80g-8x.json by model (8 GPU(s) of another "
            "model: gpu.model judges them)");
}

TEST(SelectSpec, UnknownModelsAndMixedFleetsAreInputErrors) {
  try {
    report::select_spec({node("n1", 8, "Tesla V100-SXM2-32GB", "0x1db5")}, kSpecs);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("node n1 has 8x Tesla V100-SXM2-32GB, which no spec table"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(report::select_spec({node("n1", 8), node("cpu", 0)}, kSpecs), InputError);
  EXPECT_EQ(file_of(report::select_spec({node("cpu", 0)}, kSpecs)), "cpu-node.json");
}

}  // namespace
}  // namespace clusterbench
