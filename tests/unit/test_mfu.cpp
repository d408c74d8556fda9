// Model FLOPs utilisation (reports/mfu.hpp) and the spec tables' dense_peaks it divides by.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "reports/mfu.hpp"
#include "reports/render.hpp"
#include "reports/report.hpp"

namespace clusterbench::report {
namespace {

std::string table(const std::string& name, const json& extra,
                  const std::string& schema = kSpecSchema) {
  std::string dir = ::testing::TempDir() + "cb_mfu";
  std::filesystem::create_directories(dir);
  json doc = {{"schema", schema}, {"name", name}, {"requirements", json::array()}};
  doc.update(extra);
  std::ofstream(dir + "/" + name + ".json") << doc.dump();
  return dir + "/" + name + ".json";
}

std::string load_error(const json& extra, const std::string& schema = kSpecSchema) {
  try {
    load_spec(table("bad", extra, schema));
  } catch (const InputError& e) {
    return e.what();
  }
  return "loaded";
}

ResultRecord step(const std::string& host, const std::string& dtype, std::vector<double> reps) {
  ResultRecord r;
  r.benchmark = "compute.training_step";
  r.params = {{"preset", "7b"}, {"dtype", dtype}};
  r.scope.kind = host.empty() ? ScopeKind::cluster : ScopeKind::node;
  r.scope.host = host;
  r.case_key = make_case_key(r.benchmark, r.params, r.scope);
  std::vector<double> sorted = reps;
  std::sort(sorted.begin(), sorted.end());
  r.metrics.push_back({"step_time", 100, "ms", false});
  r.metrics.push_back({"model_tflops", sorted[sorted.size() / 2], "TFLOP/s", true, reps});
  return r;
}

TEST(DensePeaks, LoadedInheritedAndChecked) {
  std::string parent = table("parent", {{"dense_peaks", {{"bf16", 989.4}, {"fp8", 1979}}},
                                        {"dense_peaks_source", "data sheet"}});
  Spec child =
      load_spec(table("child", {{"extends", "parent.json"}, {"dense_peaks", {{"fp8", 1900}}}}));
  EXPECT_EQ(child.dense_peaks.at("bf16"), 989.4);
  EXPECT_EQ(child.dense_peaks.at("fp8"), 1900);  // the child's replaces the parent's
  EXPECT_EQ(child.dense_peaks_source, "data sheet");
  EXPECT_NE(load_error({{"dense_peaks", {{"int4", 1}}}}).find("'int4' is not a dtype"),
            std::string::npos);
  EXPECT_NE(
      load_error({{"dense_peaks", {{"bf16", 0}}}}).find("dense_peaks.bf16 must be a positive"),
      std::string::npos);
  EXPECT_NE(load_error({{"dense_peaks", {{"bf16", "fast"}}}}).find("must be a positive"),
            std::string::npos);
  EXPECT_NE(load_error({{"dense_peaks", json::array()}}).find("must be an object"),
            std::string::npos);
  EXPECT_NE(load_error({{"dense_peaks", {{"bf16", 1}}}}, "clusterbench.spec/4")
                .find("'dense_peaks' needs schema"),
            std::string::npos);
  // The shipped H100 and H200 tables: the data sheet's dense BF16 peak, half of 1,979.
  for (const std::string t : {"h100-sxm-80g-8x", "h200-sxm-141g-8x"})
    EXPECT_DOUBLE_EQ(load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/" + t + ".json")
                         .dense_peaks.at("bf16"),
                     989.4);
}

// A bf16 step at 400 TFLOP/s per GPU on an H100 table (989.4 dense): 40.43% MFU, each step's
// too; an fp32 step (the CPU engine) has no tensor peak: unknown, with the reason, not 0%.
TEST(Mfu, AgainstTheDensePeakOfTheStepsDtype) {
  Spec spec = load_spec(table(
      "gpu", {{"dense_peaks", {{"bf16", 989.4}}}, {"dense_peaks_source", "H100 data sheet"}}));
  RunDir run;
  run.records.records = {step("node01", "bf16", {390, 400, 410}), step("", "bf16", {400}),
                         step("node02", "fp32", {1, 1, 1})};
  MfuView v = model_flops_utilisation(run, spec);
  ASSERT_EQ(v.items.size(), 2u);
  EXPECT_EQ(v.items[0].item, "node01");
  EXPECT_NEAR(v.items[0].percent, 100 * 400 / 989.4, 1e-9);  // 40.43%
  ASSERT_EQ(v.items[0].reps.size(), 3u);
  EXPECT_NEAR(v.items[0].reps[0], 100 * 390 / 989.4, 1e-9);
  EXPECT_EQ(v.items[1].item, "cluster");
  ASSERT_EQ(v.unknown.size(), 1u);
  EXPECT_EQ(v.unknown[0], "node02: table gpu gives no dense peak for fp32");
  const std::string md = render_mfu_markdown(v);
  EXPECT_NE(md.find("| node01 | bf16 | 400 | 989.4 | 40.43% |"), std::string::npos) << md;
  EXPECT_NE(md.find("MFU unknown: node02"), std::string::npos) << md;
  json j = mfu_json(v);
  EXPECT_NEAR(j["items"][0]["percent"].get<double>(), 40.428542, 1e-6);
  EXPECT_EQ(j["source"], "H100 data sheet");
  // What cannot be an MFU is unknown with its reason, never a crash or a number: a dtype that is
  // not a string, a rate in another unit, a rate above the dense peak (issue 46's breaker).
  ResultRecord odd = step("node03", "bf16", {400});
  odd.params["dtype"] = 16;
  ResultRecord giga = step("node04", "bf16", {400000});
  giga.metrics[1].unit = "GFLOP/s";
  ResultRecord over = step("node05", "bf16", {2000});
  run.records.records = {odd, giga, over};
  v = model_flops_utilisation(run, spec);
  EXPECT_TRUE(v.items.empty());
  ASSERT_EQ(v.unknown.size(), 3u);
  EXPECT_EQ(v.unknown[0], "node03: table gpu gives no dense peak for the record's dtype");
  EXPECT_EQ(v.unknown[1], "node04: model_tflops is 400000 GFLOP/s, not a rate in TFLOP/s");
  EXPECT_NE(v.unknown[2].find("above the table's dense bf16 peak 989.4"), std::string::npos);
  // No training step: no section.
  EXPECT_EQ(render_mfu_markdown(model_flops_utilisation(RunDir{}, spec)), "");
}

}  // namespace
}  // namespace clusterbench::report
