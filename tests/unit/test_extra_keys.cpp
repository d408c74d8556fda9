// What report and compare keep of a record's `extra` (report_extra_keys, read_records's `keep`):
// the keys they read and the table's, all of a failed record's, and every shipped table's keys
// among those read without a second pass.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "records/run_dir.hpp"
#include "records/spec.hpp"
#include "reports/compare.hpp"
#include "reports/report.hpp"

using namespace clusterbench;

namespace {

std::string write_records(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "cb_extra_" + name + ".jsonl";
  std::ofstream(path) << text;
  return path;
}

const char* kLine =
    R"({"schema":"clusterbench.result/1","run_id":"r","benchmark":"io.fio","params":{"p":1},)"
    R"("case_key":"io.fio|{\"p\":1}|n1","status":"%s","message":"","metrics":[],)"
    R"("scope":{"kind":"node","host":"n1"},"extra":{"fio_json":{"jobs":[1,2,{"a":"b"}]},)"
    R"("host_probe":{"cpu_share":0.9},"repeat":3,"rounds":{"run":2},"scratch_device":{"nvme":true}}})";

std::string line(const char* status) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, kLine, status);
  return std::string(buf) + "\n";
}

}  // namespace

TEST(ExtraKeys, OkRecordsKeepOnlyTheKeysAsked) {
  const ExtraKeys keep = report::report_extra_keys(nullptr);
  const auto path = write_records("ok", line("ok") + line("failed"));
  const RecordsFile lean = read_records(path, &keep);
  ASSERT_EQ(lean.records.size(), 2u);
  const json& ok = lean.records[0].extra;
  EXPECT_EQ(ok, json::parse(R"({"scratch_device":{"nvme":true}})"));
  // A failed record keeps its evidence, every key of it.
  EXPECT_TRUE(lean.records[1].extra.contains("fio_json"));
  EXPECT_EQ(lean.records[1].extra.at("repeat"), 3);
  // Without `keep` (a run, a resume): all of it.
  EXPECT_EQ(read_records(path).records[0].extra.at("fio_json").at("jobs").at(2).at("a"), "b");
}

TEST(ExtraKeys, CompareKeepsTheHostProbeAndTheRounds) {
  const ExtraKeys keep = report::compare_extra_keys();
  const RecordsFile lean = read_records(write_records("cmp", line("ok")), &keep);
  EXPECT_EQ(lean.records.at(0).extra,
            json::parse(R"({"host_probe":{"cpu_share":0.9},"rounds":{"run":2}})"));
}

TEST(ExtraKeys, BrokenEvidenceIsStillABrokenLine) {
  const ExtraKeys keep = report::report_extra_keys(nullptr);
  std::string bad = line("ok");
  bad.replace(bad.find("[1,2,"), 5, "[1,,");  // not JSON inside a key nobody reads
  const auto path = write_records("bad", bad + line("ok"));
  EXPECT_THROW(read_records(path, &keep), InputError);
}

TEST(ExtraKeys, TheTableAddsTheKeysItSelectsOn) {
  Spec spec;
  Requirement r;
  r.select.benchmark = "io.fio";
  r.select.require = {{"/extra/job_options/direct", 1}};
  r.select.describe = "on {/extra/scratch_reason} ({/params/p})";
  r.select.distinct = "/extra/tier/filesystem_id";
  spec.requirements.push_back(r);
  const ExtraKeys keys = report::report_extra_keys(&spec);
  for (const char* k : {"job_options", "scratch_reason", "tier", "unmeasured"})
    EXPECT_EQ(keys.count(k), 1u) << k;
  EXPECT_EQ(keys.count("params"), 0u);
}

TEST(ExtraKeys, EveryShippedTableIsReadInOnePass) {
  const ExtraKeys own = report::report_extra_keys(nullptr);
  int tables = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(CB_SOURCE_DIR) + "/reports/specs")) {
    if (e.path().extension() != ".json") continue;
    ++tables;
    const Spec spec = load_spec(e.path().string());
    EXPECT_EQ(report::report_extra_keys(&spec), own) << e.path() << " selects on another key";
  }
  EXPECT_GT(tables, 5);
}
