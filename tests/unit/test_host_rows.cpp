// The host rows of the guide's hardware table judged over EnvRecords (reports/specs/base.json
// and gpu-node-base.json): the memory type (DDR4/DDR5), the CPU's base clock and host memory
// against the GPUs' memory, each PASS, WARN for the right reason, or MISSING saying why; and the
// versions of its software stack: the guide's and a newer one PASS, an older one WARNs, a
// component that does not apply (no Kubernetes) is WAIVED.
#include <gtest/gtest.h>

#include "reports/report.hpp"

namespace clusterbench::report {
namespace {

const std::string kSpecs = std::string(CB_SOURCE_DIR) + "/reports/specs/";

/// The cpu-pass fixture with its nodes' EnvRecords changed by `edit`, judged by `table`.
Report judged(const std::string& table, const std::function<void(EnvRecord&)>& edit) {
  RunDir run = read_run_dir(std::string(CB_FIXTURES) + "/results/cpu-pass");
  for (auto& e : run.run.env) edit(e);
  return make_report(run, load_spec(kSpecs + table));
}

const RowResult& row(const Report& r, const std::string& id) {
  for (const auto& x : r.rows)
    if (x.req.id == id) return x;
  throw std::runtime_error("no row " + id);
}

void h200_node(EnvRecord& e, double host_gib) {
  e.memory.installed_gib = host_gib;
  e.gpus.clear();
  for (int i = 0; i < 8; ++i) {
    GpuInfo g;
    g.index = i;
    g.memory_gib = 140.4;
    e.gpus.push_back(g);
  }
  e.memory.gpu_memory_ratio = host_gib / (8 * 140.4);
}

}  // namespace

TEST(HostRows, TheGuidesStackPasses) {
  Report r = judged("h200-sxm-141g-8x.json", [](EnvRecord& e) {
    e.memory.type = e.host == "node01" ? "DDR4" : "DDR5";  // both are the guide's
    e.cpu.base_mhz = 2400;
    h200_node(e, 2048);  // 2 TiB: 1.82 x the GPUs' 1,123 GiB
  });
  EXPECT_EQ(row(r, "host.memory_type").outcome, kPass) << row(r, "host.memory_type").message;
  EXPECT_EQ(row(r, "host.cpu_base_clock").outcome, kPass);
  EXPECT_EQ(row(r, "host.memory_vs_gpu_memory").outcome, kPass);
  EXPECT_NEAR(row(r, "host.memory_vs_gpu_memory").value.get<double>(), 2048 / 1123.2, 1e-9);
}

TEST(HostRows, AnOlderOrSmallerHostWarnsForTheRightReason) {
  Report r = judged("h200-sxm-141g-8x.json", [](EnvRecord& e) {
    e.memory.type = e.host == "node01" ? "DDR3" : "mixed: DDR4, DDR5";
    e.cpu.base_mhz = 1800;
    h200_node(e, 512e9 / (1 << 30));  // the guide's 512 GB: 0.42 of 8 x H200
  });
  const RowResult& type = row(r, "host.memory_type");
  EXPECT_EQ(type.outcome, kWarn);
  ASSERT_EQ(type.items.size(), 2u);
  for (const auto& item : type.items) EXPECT_EQ(item.outcome, kWarn) << item.message;
  EXPECT_NE(type.message.find("does not match ^DDR[45]$"), std::string::npos) << type.message;
  EXPECT_EQ(row(r, "host.cpu_base_clock").outcome, kWarn);
  EXPECT_EQ(row(r, "host.cpu_base_clock").value, 1800);
  const RowResult& ratio = row(r, "host.memory_vs_gpu_memory");
  EXPECT_EQ(ratio.outcome, kWarn);
  EXPECT_NEAR(ratio.value.get<double>(), 476.837 / 1123.2, 1e-4);
  // host.memory_installed passes at the same size: only the ratio row sees it.
  EXPECT_EQ(row(r, "host.memory_installed").outcome, kPass);
}

TEST(HostRows, UnreadValuesAreMissingWithTheReason) {
  Report r = judged("h200-sxm-141g-8x.json", [](EnvRecord& e) {
    e.memory.type.reset();
    e.memory.unknown["type"] = "not read: no readable DMI type 17 entry";
    e.cpu.base_mhz.reset();
    e.cpu.unknown["base_mhz"] = "not read: no populated SMBIOS type 4 entry";
    e.memory.gpu_memory_ratio.reset();
    e.memory.unknown["gpu_memory_ratio"] = "GPU 3's memory not read";
  });
  for (const char* id : {"host.memory_type", "host.cpu_base_clock", "host.memory_vs_gpu_memory"})
    EXPECT_EQ(row(r, id).outcome, kMissing) << id;
  EXPECT_NE(row(r, "host.memory_vs_gpu_memory").message.find("GPU 3's memory not read"),
            std::string::npos)
      << row(r, "host.memory_vs_gpu_memory").message;
  EXPECT_NE(row(r, "host.cpu_base_clock").message.find("no populated SMBIOS type 4"),
            std::string::npos);
}

namespace {

SoftwareComponent at(const std::string& version) { return {"present", version, "test", {}}; }

const std::vector<std::string> kVersionRows = {
    "gpu.cudnn_version",         "gpu.nccl_version",
    "gpu.pytorch_cuda",          "gpu.deepspeed",
    "gpu.device_plugin_version", "gpu.feature_discovery_version",
    "gpu.dcgm_exporter_version", "host.os_release"};

/// The stack of (cudnn, nccl, torch's CUDA, plugin, gfd, dcgm exporter, os) on every node.
Report with_stack(const std::vector<std::string>& v, bool deepspeed) {
  return judged("h100-sxm-80g-8x.json", [&](EnvRecord& e) {
    SoftwareStack& s = e.software;
    s.cudnn = at(v[0]), s.nccl = at(v[1]), s.pytorch = at("2.1.2");
    s.pytorch_cuda = v[2];
    s.device_plugin = at(v[3]), s.gpu_feature_discovery = at(v[4]), s.dcgm_exporter = at(v[5]);
    s.os = at(v[6]);
    s.deepspeed = deepspeed ? at("0.10.0") : SoftwareComponent{"absent", std::nullopt, "no", {}};
  });
}

}  // namespace

TEST(SoftwareVersionRows, TheGuidesStackAndANewerOnePass) {
  for (const auto& stack : {std::vector<std::string>{"8.9.2", "2.18.3", "12.1", "0.14.0", "0.8.0",
                                                     "3.1.8-3.1.5", "ubuntu 22.04"},
                            std::vector<std::string>{"9.1.0", "2.21.5", "12.4", "0.17.0", "0.16.2",
                                                     "3.3.5-3.4.0", "ubuntu 24.04"}}) {
    Report r = with_stack(stack, true);
    for (const auto& id : kVersionRows)
      EXPECT_EQ(row(r, id).outcome, kPass) << id << ": " << row(r, id).message;
  }
}

TEST(SoftwareVersionRows, AnOlderStackWarnsRowByRow) {
  Report r = with_stack(
      {"7.6.5", "1.3.4", "11.8", "0.13.0", "0.7.0", "3.1.7-3.1.4", "ubuntu 20.04"}, false);
  for (const auto& id : kVersionRows)
    EXPECT_EQ(row(r, id).outcome, kWarn) << id << ": " << row(r, id).message;
  EXPECT_NE(row(r, "gpu.dcgm_exporter_version").message.find("3.1.7-3.1.4"), std::string::npos);
  EXPECT_NE(row(r, "host.os_release").message.find("ubuntu 20.04"), std::string::npos);
  // Another distribution than the guide's WARNs too.
  Report debian =
      judged("h100-sxm-80g-8x.json", [](EnvRecord& e) { e.software.os = at("debian 12"); });
  EXPECT_EQ(row(debian, "host.os_release").outcome, kWarn);
}

TEST(SoftwareVersionRows, WithoutKubernetesThePluginRowsDoNotApply) {
  Report r = judged("h100-sxm-80g-8x.json", [](EnvRecord& e) {
    for (SoftwareComponent* c : {&e.software.device_plugin, &e.software.gpu_feature_discovery})
      *c = {"not applicable",
            std::nullopt,
            "no Kubernetes on this node",
            {{"version", "not applicable: no Kubernetes on this node"}}};
  });
  for (const char* id : {"gpu.device_plugin_version", "gpu.feature_discovery_version"}) {
    EXPECT_EQ(row(r, id).outcome, kWaived) << id << ": " << row(r, id).message;
    EXPECT_NE(row(r, id).items.at(0).message.find("not applicable: no Kubernetes on this node"),
              std::string::npos);
  }
}

}  // namespace clusterbench::report
