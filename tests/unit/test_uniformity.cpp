// Fleet uniformity (reports/uniformity.cpp) on the fixture tests/fixtures/results/uniformity-5
// (tests/fixtures/make_uniformity_fixture.py): node03 runs another driver, node05 other tuning;
// nothing else differs. Budget: < 3 s (the 1000-node case included).
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "records/records.hpp"
#include "reports/uniformity.hpp"
#include "reports/uniformity_render.hpp"

namespace clusterbench::report {
namespace {

using Strings = std::vector<std::string>;

const std::string kFleet = std::string(CB_FIXTURES) + "/results/uniformity-5";

const UniformityField& field(const Uniformity& u, const std::string& name) {
  for (const auto& f : u.fields)
    if (f.name == name) return f;
  throw std::runtime_error("no field " + name);
}

TEST(Uniformity, NamesExactlyTheDriverAndTuningNodes) {
  RunDir run = read_run_dir(kFleet);
  ASSERT_EQ(run.run.env.size(), 5u);
  Uniformity u = check_uniformity(run.run.env);

  EXPECT_EQ(u.hosts, (Strings{"node03", "node05"}));
  ASSERT_EQ(u.deviations.size(), 3u);
  const auto& d0 = u.deviations[0];
  EXPECT_EQ(d0.host, "node03");
  EXPECT_EQ(d0.field, "versions.driver");
  EXPECT_EQ(d0.value, "535.104.05");
  EXPECT_EQ(d0.reference, "535.161.08");
  EXPECT_EQ(d0.reason, "differs from 4 of 5 nodes");
  EXPECT_EQ(u.deviations[1].host, "node05");
  EXPECT_EQ(u.deviations[1].field, "tuning.governor");
  EXPECT_EQ(u.deviations[1].value, "powersave");
  EXPECT_EQ(u.deviations[1].reference, "performance");
  EXPECT_EQ(u.deviations[2].host, "node05");
  EXPECT_EQ(u.deviations[2].field, "tuning.nr_hugepages");
  EXPECT_EQ(u.deviations[2].value, "0");
  EXPECT_EQ(u.deviations[2].reference, "8192");

  // Every field of the issue is compared, with the fixture's common values as references.
  EXPECT_EQ(field(u, "versions.nccl").reference, "2.18.5");
  EXPECT_EQ(field(u, "versions.kernel").reference, "5.15.0-105-generic");
  EXPECT_EQ(field(u, "firmware.bios").reference, "2.1 (03/15/2024)");
  EXPECT_EQ(field(u, "firmware.gpu_vbios").reference, "96.00.74.00.0D");
  EXPECT_EQ(field(u, "firmware.nic").reference, "28.39.2048");
  EXPECT_EQ(field(u, "firmware.nvme").reference, "SAMSUNG MZQL27T6HBLA-00A07 GDC7302Q");
  EXPECT_EQ(field(u, "affinity.gpu_numa").reference, "0 0 0 0 1 1 1 1");
  EXPECT_EQ(field(u, "affinity.nic_numa").reference,
            "mlx5_0/1:0 mlx5_1/1:0 mlx5_2/1:0 mlx5_3/1:0 mlx5_4/1:1 mlx5_5/1:1 mlx5_6/1:1 "
            "mlx5_7/1:1");
  EXPECT_EQ(field(u, "gpudirect.iommu_cmdline").reference, "intel_iommu=on iommu=pt");
  EXPECT_EQ(field(u, "gpudirect.acs").reference, "no P2P redirect");
  EXPECT_EQ(field(u, "gpudirect.peermem").reference, "nvidia_peermem");
  EXPECT_EQ(field(u, "gpu.persistence_mode").reference, "enabled");
  EXPECT_EQ(field(u, "gpu.mig_mode").reference, "disabled");
  const auto& driver = field(u, "versions.driver");
  EXPECT_EQ(driver.agreeing, 4);
  EXPECT_EQ(driver.nodes, 5);
  EXPECT_TRUE(driver.majority);

  json j = uniformity_json(u);
  EXPECT_EQ(j["hosts"], json({"node03", "node05"}));
  EXPECT_EQ(j["deviations"].size(), 3u);

  std::string md = render_uniformity_markdown(u);
  EXPECT_NE(md.find("2 of 5 node(s) differ: node03, node05."), std::string::npos) << md;
  EXPECT_NE(md.find("| node03 | versions.driver | 535.104.05 | 535.161.08 | differs from 4 of 5 "
                    "nodes |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| tuning.governor | performance | 4/5 | node05 |"), std::string::npos) << md;

  std::string con = render_uniformity_console(u);
  EXPECT_EQ(con,
            "uniformity: 2 of 5 node(s) differ\n"
            "  node03: versions.driver = 535.104.05 (reference 535.161.08; differs from 4 of 5 "
            "nodes)\n"
            "  node05: tuning.governor = powersave (reference performance; differs from 4 of 5 "
            "nodes)\n"
            "  node05: tuning.nr_hugepages = 0 (reference 8192; differs from 4 of 5 nodes)\n");
  EXPECT_EQ(render_uniformity_console(u, 1).substr(con.find("  node05")),
            "  ... and 2 more (report.md, Uniformity)\n");

  std::string html = render_uniformity_html(u);
  EXPECT_NE(html.find("<h2 id=\"uniformity\">"), std::string::npos);
  EXPECT_NE(html.find("<td>node03</td><td><code>versions.driver</code></td><td>535.104.05</td>"),
            std::string::npos)
      << html;
}

// MIG on and persistence off are flagged even where every node agrees; unknown modes are not.
TEST(Uniformity, ExpectedGpuModes) {
  RunDir run = read_run_dir(kFleet);
  std::vector<EnvRecord> env = run.run.env;
  for (auto& e : env) {
    e.versions.driver = "535.161.08";
    e.tuning = env[0].tuning;
    e.gpus[6].mig_mode = "enabled";  // everywhere: the majority, still not expected
  }
  env[1].gpus[2].persistence_mode = "disabled";
  for (auto& g : env[3].gpus) g.persistence_mode = "";  // unknown: majority only
  Uniformity u = check_uniformity(env);
  const auto& mig = field(u, "gpu.mig_mode");
  EXPECT_EQ(mig.reference, "disabled except gpu6=enabled");
  EXPECT_EQ(mig.deviations.size(), 5u);
  EXPECT_EQ(mig.deviations[0].reason, "expected disabled");
  const auto& pm = field(u, "gpu.persistence_mode");
  ASSERT_EQ(pm.deviations.size(), 2u);
  EXPECT_EQ(pm.deviations[0].host, "node02");
  EXPECT_EQ(pm.deviations[0].value, "enabled except gpu2=disabled");
  EXPECT_EQ(pm.deviations[0].reason, "differs from 3 of 5 nodes; expected enabled");
  EXPECT_EQ(pm.deviations[1].host, "node04");
  EXPECT_EQ(pm.deviations[1].value, "unknown");
  EXPECT_EQ(pm.deviations[1].reason, "differs from 3 of 5 nodes");
}

// Old run.json files lack the new fields: every node reads "unknown", nothing is flagged.
TEST(Uniformity, OldRecordsAndSingleNode) {
  RunDir old = read_run_dir(std::string(CB_FIXTURES) + "/results/fleet-4x8");
  Uniformity u = check_uniformity(old.run.env);
  EXPECT_TRUE(u.hosts.empty()) << render_uniformity_console(u);
  EXPECT_EQ(field(u, "gpu.mig_mode").reference, "unknown");

  Uniformity none = check_uniformity({});
  EXPECT_TRUE(none.deviations.empty());
  EXPECT_EQ(render_uniformity_console(none),
            "uniformity: " + std::to_string(uniformity_field_names().size()) +
                " fields identical on 0 node(s)\n");
}

// Two nodes that disagree: no majority; the first node's value is the reference.
TEST(Uniformity, TieHasNoMajority) {
  RunDir run = read_run_dir(kFleet);
  std::vector<EnvRecord> env = {run.run.env[0], run.run.env[2]};
  Uniformity u = check_uniformity(env);
  const auto& driver = field(u, "versions.driver");
  EXPECT_FALSE(driver.majority);
  EXPECT_EQ(driver.reference, "535.161.08");
  ASSERT_EQ(driver.deviations.size(), 1u);
  EXPECT_EQ(driver.deviations[0].reason, "differs from 1 of 2 nodes (no majority)");
}

// The 1000-node goal: linear passes. Checks the result; prints the time (no timing assertion).
TEST(Uniformity, ThousandNodes) {
  RunDir run = read_run_dir(kFleet);
  std::vector<EnvRecord> env;
  env.reserve(1000);
  for (int i = 0; i < 1000; ++i) {
    env.push_back(run.run.env[0]);
    env.back().host = "node" + std::to_string(1000 + i);
  }
  env[777].tuning.thp = "always";
  auto t0 = std::chrono::steady_clock::now();
  Uniformity u = check_uniformity(env);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ perf ] check_uniformity over 1000 nodes: " << s * 1e3 << " ms\n";
  EXPECT_EQ(u.hosts, Strings{"node1777"});
  ASSERT_EQ(u.deviations.size(), 1u);
  EXPECT_EQ(u.deviations[0].reason, "differs from 999 of 1000 nodes");
}

}  // namespace
}  // namespace clusterbench::report
