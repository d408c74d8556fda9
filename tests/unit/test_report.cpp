// make_report and the renderers over hand-written run directories (tests/fixtures/results).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "reports/first_page.hpp"
#include "reports/html.hpp"
#include "reports/render.hpp"
#include "reports/report.hpp"

namespace clusterbench::report {
namespace {

const std::string kFixtures = CB_FIXTURES;
const std::string kSpecs = kFixtures + "/specs/";

const std::string kTriadNode01 =
    R"(compute.memory_bandwidth|{"kernel":"triad","threads":64}|node01)";
const std::string kTriadNode02 =
    R"(compute.memory_bandwidth|{"kernel":"triad","threads":64}|node02)";
const std::string kGpu7 = "gpu01/gpu7[GPU-5d2f8a3c-71e4-4b09-8c6a-0e9b1f2a3c47]";
const std::string kGpu5 = "gpu01/gpu5[GPU-5d2f8a3c-71e4-4b09-8c6a-0e9b1f2a3c45]";
const std::string kGpu3 = "gpu01/gpu3[GPU-5d2f8a3c-71e4-4b09-8c6a-0e9b1f2a3c43]";
const std::string kGpu2 = "gpu01/gpu2[GPU-5d2f8a3c-71e4-4b09-8c6a-0e9b1f2a3c42]";

RunDir fixture_run(const std::string& name) { return read_run_dir(kFixtures + "/results/" + name); }

std::string temp_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "cb_report_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// A spec made of `rows`, written to a file and loaded the way `report` loads one.
Spec spec_of(const std::string& name, const json& rows) {
  json doc = {{"schema", kSpecSchema}, {"name", name}, {"requirements", rows}};
  std::string path = temp_dir("spec_" + name) + "/" + name + ".json";
  std::ofstream(path) << doc.dump(2);
  return load_spec(path);
}

/// A spec row with the usual defaults; `over` overrides fields.
json row(const std::string& id, const json& select, const json& over) {
  json r = {{"id", id},
            {"title", id + " title"},
            {"source", "test source"},
            {"severity", "fail"},
            {"select", select},
            {"scope", "node"},
            {"aggregate", "each"},
            {"op", ">="},
            {"value", 0},
            {"unit", ""}};
  r.update(over);
  return r;
}

const json kTriad = {{"benchmark", "compute.memory_bandwidth"},
                     {"params", {{"kernel", "triad"}}},
                     {"metric", "bandwidth"}};
const json kGemm = {
    {"benchmark", "compute.gemm"}, {"params", {{"dtype", "bf16"}}}, {"metric", "throughput"}};

const RowResult& find_row(const Report& r, const std::string& id) {
  for (const auto& row : r.rows)
    if (row.req.id == id) return row;
  throw std::runtime_error("no row " + id);
}

const ItemResult& find_item(const RowResult& row, const std::string& item) {
  for (const auto& it : row.items)
    if (it.item == item) return it;
  throw std::runtime_error("no item " + item + " in row " + row.req.id);
}

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

// --- whole spec files over whole fixtures -----------------------------------------------------

TEST(Evaluate, CpuNodeSpecPassesEveryRowOnHealthyCpuNodes) {
  RunDir run = fixture_run("cpu-pass");
  Spec spec = load_spec(kSpecs + "cpu-node.json");
  Report r = make_report(run, spec);
  ASSERT_EQ(r.rows.size(), 7u);
  for (const auto& row : r.rows) EXPECT_EQ(row.outcome, kPass) << row.req.id << ": " << row.message;
  EXPECT_EQ(r.counts.at(kPass), 7);
  EXPECT_EQ(r.counts.at(kFail), 0);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(exit_code(r), 0);
  EXPECT_EQ(r.run_id, "20261130T084500Z-node01");
  EXPECT_EQ(r.spec_name, "cpu-node");
  EXPECT_EQ(r.spec_sha256, sha256_file(kSpecs + "cpu-node.json"));
  EXPECT_EQ(r.spec_sha256.size(), 64u);
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"node01", "node02"}));
  EXPECT_TRUE(r.warnings.empty());

  const RowResult& triad = find_row(r, "compute.membw.triad");
  EXPECT_DOUBLE_EQ(triad.value.get<double>(), 298.7);  // min over node02's one record
  EXPECT_EQ(triad.worst_item, "node02");
  EXPECT_EQ(triad.message, "min 298.7 GB/s on node02 (at least 245 GB/s); 2 items: 2 PASS");
  // The copy records share the benchmark but not the params subset: not evidence.
  EXPECT_EQ(triad.evidence, (std::vector<std::string>{kTriadNode01, kTriadNode02}));
  EXPECT_DOUBLE_EQ(find_item(triad, "node01").value.get<double>(), 312.4);

  // Overridden by id in cpu-node.json: warn severity, 32 cores, still the first row.
  EXPECT_EQ(r.rows[0].req.id, "host.cpu.cores");
  EXPECT_EQ(r.rows[0].req.severity, "warn");
  EXPECT_EQ(r.rows[0].value, 64);

  // max over the node's disks: node01 has 3.84 TB NVMe and a 0.48 TB SATA boot disk.
  const RowResult& nvme = find_row(r, "host.nvme.capacity");
  EXPECT_DOUBLE_EQ(find_item(nvme, "node01").value.get<double>(), 3.84);
  EXPECT_DOUBLE_EQ(find_row(r, "host.ib.rate").value.get<double>(), 200);
}

TEST(Evaluate, StrictSpecFailsTheSlowNodeWithExit1) {
  Report r = make_report(fixture_run("cpu-pass"), load_spec(kSpecs + "cpu-strict.json"));
  ASSERT_EQ(r.rows.size(), 5u);  // 7 inherited, host.ib.rate and host.tuning.hugepages removed
  const RowResult& triad = find_row(r, "compute.membw.triad");
  EXPECT_EQ(triad.outcome, kFail);
  EXPECT_DOUBLE_EQ(triad.value.get<double>(), 298.7);
  EXPECT_EQ(triad.worst_item, "node02");
  EXPECT_EQ(triad.message, "298.7 GB/s on node02 (below 300 GB/s); 2 items: 1 FAIL, 1 PASS");
  EXPECT_EQ(find_item(triad, "node01").outcome, kPass);
  EXPECT_EQ(find_item(triad, "node02").outcome, kFail);
  EXPECT_EQ(find_item(triad, "node02").records, (std::vector<std::string>{kTriadNode02}));
  EXPECT_EQ(r.counts.at(kFail), 1);
  EXPECT_EQ(r.counts.at(kPass), 4);
  EXPECT_EQ(r.exit_code, 1);
}

TEST(Evaluate, KilledGpuRunIsIncompleteWithMissingGpuAndPlannedCase) {
  RunDir run = fixture_run("gpu-killed");
  Report r = make_report(run, load_spec(kSpecs + "h100-sxm-80g-8x.json"));
  ASSERT_EQ(r.rows.size(), 13u);
  EXPECT_EQ(r.counts.at(kPass), 10);
  EXPECT_EQ(r.counts.at(kWarn), 1);
  EXPECT_EQ(r.counts.at(kMissing), 2);
  EXPECT_EQ(r.counts.at(kFail), 0);
  EXPECT_EQ(r.exit_code, 4);

  // 7 of 8 GPUs have a GEMM record: the 8th is MISSING, never PASS.
  const RowResult& gemm = find_row(r, "gpu.gemm.bf16");
  EXPECT_EQ(gemm.outcome, kMissing);
  EXPECT_EQ(gemm.worst_item, kGpu7);
  ASSERT_EQ(gemm.items.size(), 8u);
  EXPECT_EQ(find_item(gemm, kGpu7).outcome, kMissing);
  EXPECT_NE(
      find_item(gemm, kGpu7).message.find(R"(no record of compute.gemm {"dtype":"bf16","k":8192,)"),
      std::string::npos)
      << find_item(gemm, kGpu7).message;
  EXPECT_NE(find_item(gemm, kGpu7).message.find("; the run ended before it finished"),
            std::string::npos);
  EXPECT_NE(gemm.message.find("8 items: 1 MISSING, 7 PASS"), std::string::npos) << gemm.message;
  EXPECT_DOUBLE_EQ(find_item(gemm, kGpu5).value.get<double>(), 689.9);
  EXPECT_EQ(gemm.evidence.size(), 7u);

  // The all_reduce case was planned; the kill came first. Only the plan knows it.
  const RowResult& ar = find_row(r, "nccl.all_reduce.busbw");
  EXPECT_EQ(ar.outcome, kMissing);
  EXPECT_EQ(ar.worst_item, "cluster");
  EXPECT_NE(
      ar.message.find(
          R"(cluster: no record of collectives.all_reduce {"bytes":1073741824,"dtype":"float","op":"sum"}; the run ended before it finished)"),
      std::string::npos)
      << ar.message;

  // gpu3 trained at Gen4: a warn row gives WARN, naming that GPU.
  const RowResult& gen = find_row(r, "gpu.pcie.gen");
  EXPECT_EQ(gen.outcome, kWarn);
  EXPECT_EQ(gen.worst_item, kGpu3);
  EXPECT_EQ(gen.value, 4);

  EXPECT_EQ(find_row(r, "gpu.count").value, 8);
  EXPECT_EQ(find_row(r, "gpu.count").outcome, kPass);
  EXPECT_EQ(find_row(r, "gpu.memory").items.size(), 8u);

  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("no finished_at"), std::string::npos);
}

TEST(Evaluate, AbortedRunExits3EvenWithAFailedRow) {
  RunDir run = fixture_run("aborted");
  json rows = json::array(
      {row("compute.membw.triad", kTriad, {{"aggregate", "min"}, {"value", 245}, {"unit", "GB/s"}}),
       row("nccl.all_reduce.busbw",
           {{"benchmark", "collectives.all_reduce"},
            {"params", {{"op", "sum"}}},
            {"metric", "busbw"}},
           {{"scope", "cluster"}, {"value", 10}, {"unit", "GB/s"}})});
  Report r = make_report(run, spec_of("aborted", rows));
  EXPECT_TRUE(r.aborted);
  EXPECT_NE(r.abort_reason.find("no progress for 120 s"), std::string::npos);
  EXPECT_EQ(find_row(r, "compute.membw.triad").outcome, kPass);
  EXPECT_DOUBLE_EQ(find_row(r, "compute.membw.triad").value.get<double>(), 301.2);
  const RowResult& ar = find_row(r, "nccl.all_reduce.busbw");
  EXPECT_EQ(ar.outcome, kFail);
  EXPECT_EQ(ar.worst_item, "cluster");
  EXPECT_NE(ar.message.find("watchdog: no progress for 120 s in MPI_Allreduce"), std::string::npos);
  EXPECT_EQ(r.exit_code, 3);
}

// --- outcomes, one at a time ------------------------------------------------------------------

TEST(Evaluate, WarnSeverityTurnsAFailingComparisonIntoWarn) {
  Spec spec =
      spec_of("warn", json::array({row("triad.warn", kTriad,
                                       {{"severity", "warn"}, {"value", 300}, {"unit", "GB/s"}})}));
  Report r = make_report(fixture_run("cpu-pass"), spec);
  EXPECT_EQ(r.rows[0].outcome, kWarn);
  EXPECT_EQ(r.rows[0].worst_item, "node02");
  EXPECT_DOUBLE_EQ(r.rows[0].value.get<double>(), 298.7);
  EXPECT_EQ(r.counts.at(kWarn), 1);
  EXPECT_EQ(r.exit_code, 0);
}

TEST(Evaluate, WaivedRecordsMakeAFailRowWaivedAndTheRunIncomplete) {
  Spec spec = spec_of(
      "waived",
      json::array({row("gemm", kGemm, {{"scope", "gpu"}, {"value", 600}, {"unit", "TFLOP/s"}})}));
  Report r = make_report(fixture_run("cpu-pass"), spec);
  const RowResult& g = r.rows[0];
  EXPECT_EQ(g.outcome, kWaived);
  ASSERT_EQ(g.items.size(), 2u);  // no GPU in the env: the node-level waivers are the items
  EXPECT_EQ(g.items[0].item, "node01");
  EXPECT_EQ(g.items[0].outcome, kWaived);
  EXPECT_EQ(g.items[0].message, "node01: waived: no NVIDIA GPU on the PCI bus");
  EXPECT_EQ(g.evidence.size(), 2u);
  EXPECT_EQ(r.exit_code, 4);

  // The same waiver in a warn row leaves the acceptance complete.
  Spec warn = spec_of(
      "waived_warn",
      json::array(
          {row("gemm", kGemm,
               {{"scope", "gpu"}, {"severity", "warn"}, {"value", 600}, {"unit", "TFLOP/s"}})}));
  Report w = make_report(fixture_run("cpu-pass"), warn);
  EXPECT_EQ(w.rows[0].outcome, kWaived);
  EXPECT_EQ(w.exit_code, 0);
}

TEST(Evaluate, FailedRecordInAWarnRowIsWarn) {
  json sel = {{"benchmark", "collectives.all_reduce"}, {"metric", "busbw"}};
  Spec spec = spec_of(
      "failwarn",
      json::array(
          {row("ar", sel,
               {{"scope", "cluster"}, {"severity", "warn"}, {"value", 10}, {"unit", "GB/s"}})}));
  RunDir run = fixture_run("aborted");
  run.run.aborted = false;  // judge the row alone
  Report r = make_report(run, spec);
  EXPECT_EQ(r.rows[0].outcome, kWarn);
  EXPECT_EQ(r.exit_code, 0);
}

TEST(Evaluate, ExpectedGpuWithoutRecordIsMissingEvenWithoutAPlan) {
  RunDir run = fixture_run("gpu-killed");
  run.run.plan.clear();
  Spec spec = spec_of(
      "gpus",
      json::array({row("gemm", kGemm, {{"scope", "gpu"}, {"value", 600}, {"unit", "TFLOP/s"}})}));
  Report r = make_report(run, spec);
  EXPECT_EQ(r.rows[0].outcome, kMissing);
  EXPECT_EQ(r.rows[0].worst_item, kGpu7);
  EXPECT_EQ(find_item(r.rows[0], kGpu7).message,
            kGpu7 + R"(: no record of compute.gemm {"dtype":"bf16"})");
  EXPECT_EQ(r.exit_code, 4);

  // With only 7 GPUs in the env every item passes; the worst is the slowest GPU.
  run.run.env[0].gpus.resize(7);
  Report p = make_report(run, spec);
  EXPECT_EQ(p.rows[0].outcome, kPass);
  EXPECT_EQ(p.rows[0].worst_item, kGpu5);
  EXPECT_DOUBLE_EQ(p.rows[0].value.get<double>(), 689.9);
  EXPECT_EQ(p.rows[0].message,
            "689.9 TFLOP/s on " + kGpu5 + " (at least 600 TFLOP/s); 7 items: 7 PASS");
  EXPECT_EQ(p.exit_code, 0);
}

TEST(Evaluate, RowWithNoRecordsAndNoPlanIsMissing) {
  json sel = {
      {"benchmark", "io.fio"}, {"params", {{"profile", "seqread"}}}, {"metric", "bandwidth"}};
  Spec spec = spec_of(
      "notrun",
      json::array({row("fio", sel, {{"scope", "cluster"}, {"value", 5}, {"unit", "GB/s"}})}));
  Report r = make_report(fixture_run("cpu-pass"), spec);
  EXPECT_EQ(r.rows[0].outcome, kMissing);
  EXPECT_TRUE(r.rows[0].items.empty());
  EXPECT_EQ(r.rows[0].message,
            R"(no record of io.fio {"profile":"seqread"} and no planned case: not run)");
  EXPECT_EQ(r.exit_code, 4);
}

TEST(Evaluate, AggregatesWithinANode) {
  RunDir run = fixture_run("gpu-killed");
  run.run.plan.clear();
  json rows = json::array(
      {row("median", kGemm, {{"aggregate", "median"}, {"value", 700}, {"unit", "TFLOP/s"}}),
       row("sum", kGemm, {{"aggregate", "sum"}, {"value", 5000}, {"unit", "TFLOP/s"}}),
       row("count", kGemm, {{"aggregate", "count"}, {"op", "=="}, {"value", 8}, {"unit", "count"}}),
       row("cluster.min", kGemm,
           {{"scope", "cluster"}, {"aggregate", "min"}, {"value", 600}, {"unit", "TFLOP/s"}})});
  Report r = make_report(run, spec_of("aggregates", rows));
  // Sorted: 689.9 698.7 701.3 705.1 707.6 710.0 712.4.
  EXPECT_DOUBLE_EQ(r.rows[0].value.get<double>(), 705.1);
  EXPECT_EQ(r.rows[0].outcome, kPass);
  EXPECT_EQ(r.rows[0].message, "median 705.1 TFLOP/s on gpu01 (at least 700 TFLOP/s)");
  EXPECT_NEAR(r.rows[1].value.get<double>(), 4925.0, 1e-9);
  EXPECT_EQ(r.rows[1].outcome, kFail);
  EXPECT_EQ(r.rows[2].value, 7);
  EXPECT_EQ(r.rows[2].outcome, kFail);
  EXPECT_DOUBLE_EQ(r.rows[3].value.get<double>(), 689.9);
  EXPECT_EQ(r.rows[3].worst_item, "cluster");
  EXPECT_EQ(r.rows[3].outcome, kPass);
  EXPECT_EQ(r.rows[3].evidence.size(), 7u);
  EXPECT_EQ(r.exit_code, 1);
}

TEST(Evaluate, EnvRows) {
  RunDir run = fixture_run("cpu-pass");
  json rows = json::array(
      {row("gpu.count", {{"env", "/gpus/*"}},
           {{"aggregate", "count"}, {"op", "=="}, {"value", 8}, {"unit", "count"}}),
       row("gpu.memory", {{"env", "/gpus/*/memory_gib"}},
           {{"scope", "gpu"}, {"value", 79}, {"unit", "GiB"}}),
       row("cores.sum", {{"env", "/cpu/physical_cores"}},
           {{"scope", "cluster"},
            {"aggregate", "sum"},
            {"op", "=="},
            {"value", 128},
            {"unit", "count"}}),
       row("cpu.model", {{"env", "/cpu/model"}}, {{"op", "matches"}, {"value", "Xeon.*8358"}}),
       row("thp", {{"env", "/tuning/thp"}}, {{"op", "in"}, {"value", {"madvise", "never"}}}),
       row("nic.state", {{"env", "/nics/*/state"}}, {{"op", "in"}, {"value", {"ACTIVE", "up"}}}),
       row("governor", {{"env", "/tuning/governor"}}, {{"op", "!="}, {"value", "powersave"}})});
  Report r = make_report(run, spec_of("env", rows));

  EXPECT_EQ(r.rows[0].outcome, kFail);  // no GPU counted as 0, not as unknown
  EXPECT_EQ(r.rows[0].value, 0);
  EXPECT_EQ(r.rows[0].message, "count 0 on node01 (expected 8); 2 items: 2 FAIL");

  EXPECT_EQ(r.rows[1].outcome, kMissing);
  EXPECT_EQ(r.rows[1].items.size(), 2u);
  EXPECT_EQ(r.rows[1].items[0].message, "node01: no GPU in the inventory");

  EXPECT_EQ(r.rows[2].outcome, kPass);
  EXPECT_EQ(r.rows[2].value, 128);
  EXPECT_EQ(r.rows[2].worst_item, "cluster");

  EXPECT_EQ(r.rows[3].outcome, kPass);

  EXPECT_EQ(r.rows[4].outcome, kFail);  // node02 runs THP "always"
  EXPECT_EQ(r.rows[4].worst_item, "node02");
  EXPECT_EQ(r.rows[4].value, "always");

  EXPECT_EQ(r.rows[5].outcome, kPass);
  ASSERT_EQ(r.rows[5].items.size(), 4u);
  EXPECT_EQ(r.rows[5].items[0].item, "node01/nic[mlx5_0/1]");
  EXPECT_EQ(r.rows[5].items[1].item, "node01/nic[eno1]");

  EXPECT_EQ(r.rows[6].outcome, kPass);
  EXPECT_EQ(r.exit_code, 1);
}

TEST(Evaluate, EmptyEnvStringIsUnknownAndMissing) {
  RunDir run = fixture_run("gpu-killed");
  run.run.env[0].gpus[2].ecc_mode = "";
  Report r = make_report(run, load_spec(kSpecs + "h100-sxm-80g-8x.json"));
  const RowResult& ecc = find_row(r, "gpu.ecc");
  EXPECT_EQ(ecc.outcome, kMissing);
  EXPECT_EQ(ecc.worst_item, kGpu2);
  EXPECT_EQ(find_item(ecc, kGpu2).message, kGpu2 + ": unknown (empty) value at /gpus/2/ecc_mode");
  EXPECT_EQ(find_item(ecc, "gpu01/gpu1[GPU-5d2f8a3c-71e4-4b09-8c6a-0e9b1f2a3c41]").outcome, kPass);
}

TEST(Evaluate, WorstPassingItemIsTheOneClosestToFailing) {
  // <= row: the highest value is the worst.
  Spec spec = spec_of(
      "le",
      json::array({row("triad.le", kTriad, {{"op", "<="}, {"value", 400}, {"unit", "GB/s"}})}));
  Report r = make_report(fixture_run("cpu-pass"), spec);
  EXPECT_EQ(r.rows[0].outcome, kPass);
  EXPECT_EQ(r.rows[0].worst_item, "node01");
  EXPECT_DOUBLE_EQ(r.rows[0].value.get<double>(), 312.4);
}

TEST(Evaluate, RowsSayHowTheVerdictStandsInTheNoise) {
  RunDir run = fixture_run("cpu-pass");
  // node02's triad (298.7 GB/s) with 7 repetitions around it: sorted factors 0.96 ... 1.04, so
  // p25 = 0.98 and p75 = 1.02 of the median (nearest rank 2 and 6 of 7): spread 4%.
  for (auto& r : run.records.records)
    for (auto& m : r.metrics)
      if (r.scope.host == "node02" && r.params.value("kernel", "") == "triad")
        for (double f : {1.04, 0.96, 1.0, 0.98, 1.02, 0.99, 1.01}) m.reps.push_back(m.value * f);
  json rows = json::array({row("close", kTriad, {{"value", 300}, {"unit", "GB/s"}}),
                           row("clear", kTriad, {{"value", 250}, {"unit", "GB/s"}}),
                           row("below", kTriad, {{"op", "<="}, {"value", 350}, {"unit", "GB/s"}})});
  Report r = make_report(run, spec_of("noise", rows));
  // The median decides: 298.7 < 300 FAILs, although 3 of 7 repetitions pass.
  EXPECT_EQ(r.rows[0].outcome, kFail);
  EXPECT_EQ(r.rows[0].message.substr(0, r.rows[0].message.find(';')),
            "298.7 GB/s on node02 (below 300 GB/s), spread 4%, margin -0.4%, within noise");
  EXPECT_EQ(r.rows[0].noise["within_noise"], true);
  EXPECT_EQ(r.rows[0].noise["repetitions"], 7);
  EXPECT_NEAR(r.rows[0].noise["spread"].get<double>(), 0.04, 1e-12);
  EXPECT_NEAR(r.rows[0].noise["margin"].get<double>(), (298.7 - 300) / 300, 1e-12);
  EXPECT_NEAR(r.rows[0].noise["range"][0].get<double>(), 298.7 * 0.96, 1e-9);
  // 250 lies below every repetition: a PASS a rerun would not change.
  EXPECT_EQ(r.rows[1].outcome, kPass);
  EXPECT_EQ(r.rows[1].message.substr(0, r.rows[1].message.find(';')),
            "298.7 GB/s on node02 (at least 250 GB/s), spread 4%, margin +19.5%");
  EXPECT_EQ(r.rows[1].noise["within_noise"], false);
  // A <= row's worst item is node01, whose record has no repetitions: no noise to state.
  EXPECT_EQ(r.rows[2].worst_item, "node01");
  EXPECT_TRUE(r.rows[2].noise.is_null());
  // report.json carries it per row.
  json j = render_json(r);
  EXPECT_EQ(j["rows"][0]["within_noise"], true);
  EXPECT_EQ(j["rows"][1]["noise"]["repetitions"], 7);
}

// --- errors -------------------------------------------------------------------------------------

TEST(Evaluate, UnitMismatchIsAnInputErrorNamingSpecRowAndField) {
  Spec spec = spec_of(
      "units",
      json::array({row("compute.membw.triad", kTriad, {{"value", 245}, {"unit", "Gb/s"}})}));
  try {
    make_report(fixture_run("cpu-pass"), spec);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("units.json"), std::string::npos) << m;
    EXPECT_NE(m.find("spec row 'compute.membw.triad'"), std::string::npos) << m;
    EXPECT_NE(m.find("field 'unit' is 'Gb/s'"), std::string::npos) << m;
    EXPECT_NE(m.find("metric 'bandwidth' of compute.memory_bandwidth is in 'GB/s'"),
              std::string::npos)
        << m;
  }
}

TEST(Evaluate, UnknownEnvPointerIsAnInputError) {
  Spec spec;
  spec.name = "hand";
  spec.path = "hand.json";
  Requirement q;
  q.id = "gpu.clock";
  q.select.env = "/gpus/*/frobnicate";
  q.value = 1980;
  q.unit = "MHz";
  spec.requirements.push_back(q);
  try {
    make_report(fixture_run("gpu-killed"), spec);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("gpu.clock"), std::string::npos) << m;
    EXPECT_NE(m.find("/gpus/*/frobnicate"), std::string::npos) << m;
  }
}

// --- exit codes ---------------------------------------------------------------------------------

Report report_with(std::vector<std::pair<Outcome, std::string>> rows /* outcome, severity */,
                   bool aborted) {
  Report r;
  r.aborted = aborted;
  for (auto& [outcome, severity] : rows) {
    RowResult row;
    row.outcome = outcome;
    row.req.severity = severity;
    r.rows.push_back(row);
  }
  return r;
}

TEST(ExitCode, PrecedenceIsAbortedThenFailThenIncompleteThenPass) {
  EXPECT_EQ(exit_code(report_with({{kPass, "fail"}, {kWarn, "warn"}}, false)), 0);
  EXPECT_EQ(exit_code(report_with({{kWarn, "fail"}}, false)), 0);
  EXPECT_EQ(exit_code(report_with({{kMissing, "warn"}, {kWaived, "warn"}}, false)), 0);
  EXPECT_EQ(exit_code(report_with({{kMissing, "fail"}, {kPass, "fail"}}, false)), 4);
  EXPECT_EQ(exit_code(report_with({{kWaived, "fail"}}, false)), 4);
  EXPECT_EQ(exit_code(report_with({{kMissing, "fail"}, {kFail, "fail"}}, false)), 1);
  EXPECT_EQ(exit_code(report_with({{kFail, "fail"}, {kMissing, "fail"}}, true)), 3);
  EXPECT_EQ(exit_code(report_with({}, true)), 3);
  EXPECT_EQ(exit_code(report_with({}, false)), 0);
  EXPECT_EQ(verdict(0), "PASS");
  EXPECT_EQ(verdict(1), "FAIL");
  EXPECT_EQ(verdict(3), "ABORTED");
  EXPECT_EQ(verdict(4), "INCOMPLETE");
}

// The codes the runner used to set after the report (refused 2, aborted 3, --time-limit 4) are
// the report's own: make_report decides every one of them.
TEST(ExitCode, RefusedAndTimeLimitAreDecidedByTheReport) {
  Report refused = report_with({{kFail, "fail"}}, true);
  refused.refused = {"compute.gemm|{}|n1: refused: busy GPU"};
  EXPECT_EQ(exit_code(refused), 2);  // outranks the abort and the FAIL
  Report limited = report_with({{kPass, "fail"}}, false);
  limited.time_limit = TimeLimitStop{10, 9.5, {{"compute.gemm", json::object()}}};
  EXPECT_EQ(exit_code(limited), 4);
  limited.rows[0].outcome = kFail;
  EXPECT_EQ(exit_code(limited), 1);  // a FAIL outranks the incomplete run
  Report fitted = report_with({{kPass, "fail"}}, false);
  fitted.time_limit = TimeLimitStop{10, 9.5, {}};
  EXPECT_EQ(exit_code(fitted), 0);  // stopped with nothing left out: complete
}

TEST(MakeReport, TimeLimitFromRunJsonMakesTheRunIncomplete) {
  RunDir run = fixture_run("cpu-pass");
  Report complete = make_report(run, load_spec(kSpecs + "cpu-node.json"));
  ASSERT_EQ(complete.exit_code, 0);
  json j = run.run;
  j["time_limit"] = {
      {"seconds", 60},
      {"stopped_after_s", 58.5},
      {"not_run", {{{"benchmark", "compute.gemm"}, {"params", {{"dtype", "bf16"}}}}}}};
  run.run = j.get<RunRecord>();
  ASSERT_TRUE(run.run.time_limit);
  EXPECT_EQ(run.run.time_limit->not_run.at(0).benchmark, "compute.gemm");
  Report r = make_report(run, load_spec(kSpecs + "cpu-node.json"));
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.counts.at(kPass), 7);
  EXPECT_NE(std::find(r.warnings.begin(), r.warnings.end(),
                      "--time-limit 60 s stopped the run after 58.5 s: 1 planned case(s) not run "
                      "(MISSING)"),
            r.warnings.end());
  EXPECT_EQ(render_json(r)["verdict"], "INCOMPLETE");
}

// Everything the renderers show is in the Report: computed once, by make_report.
TEST(MakeReport, HoldsFleetUniformityLinksAndTheRun) {
  RunDir run = fixture_run("cpu-pass");
  Report r = make_report(run, load_spec(kSpecs + "cpu-node.json"));
  ASSERT_TRUE(r.run);
  EXPECT_EQ(r.run->records.records.size(), run.records.records.size());
  ASSERT_TRUE(r.spec);
  EXPECT_EQ(r.spec->name, "cpu-node");
  EXPECT_EQ(r.fleet.nodes.size(), r.hosts.size());
  EXPECT_FALSE(r.uniformity.fields.empty());
  EXPECT_TRUE(r.links.empty());   // no link records
  EXPECT_TRUE(r.soaks.empty());   // no soak family in the table
  EXPECT_TRUE(r.health.empty());  // no health row
  json j = render_json(r);
  EXPECT_EQ(j["fleet"]["nodes"].size(), r.fleet.nodes.size());
  EXPECT_EQ(j["uniformity"]["fields"].size(), r.uniformity.fields.size());
}

// --- text that reads well ------------------------------------------------------------------------

TEST(Text, NumbersHaveFourSignificantDigitsAndComparisonsAreWords) {
  EXPECT_EQ(format_number(2.61034), "2.61");
  EXPECT_EQ(format_number(0.274878), "0.2749");
  EXPECT_EQ(format_number(32.418), "32.42");
  EXPECT_EQ(format_number(40826.1), "40826");
  EXPECT_EQ(format_number(1.01083e+06), "1010830");
  EXPECT_EQ(format_number(2147483647), "2147483647");
  EXPECT_EQ(format_number(1.2e-05), "1.2e-05");
  EXPECT_EQ(comparison_text(">=", "64", true), "below 64");
  EXPECT_EQ(comparison_text(">=", "64", false), "at least 64");
  EXPECT_EQ(comparison_text("<=", "0", true), "above 0");
  EXPECT_EQ(comparison_text("matches", "^4096$", true), "does not match ^4096$");
  EXPECT_EQ(comparison_text("==", "performance", true), "expected performance");
  EXPECT_EQ(comparison_text("in", "[\"a\"]", true), "not one of [\"a\"]");
  EnvRecord e;
  e.nics.resize(2);
  e.nics[1].name = "eno2";
  e.gpus.resize(1);
  e.gpus[0].index = 3;
  e.gpus[0].pci_bus_id = "0000:3a:00.0";
  EXPECT_EQ(pointer_words("/nics/1/rate_gbps", &e), "the rate of NIC eno2");
  EXPECT_EQ(pointer_words("/gpus/0/memory_gib", &e), "the memory of GPU 3 (0000:3a:00.0)");
  EXPECT_EQ(pointer_words("/memory/installed_gib", &e), "the installed memory");
  EXPECT_EQ(pointer_words("/nics/7/rate_gbps", nullptr), "the rate of NIC 7");
  // Spec text on the first page stays on its line and cannot run HTML or reorder what is read.
  EXPECT_EQ(md_text("line one\n## heading\tx"), "line one ## heading x");
  EXPECT_EQ(md_text(std::string("a\0b\x1b[31mc\x07", 10)), "ab[31mc");
  // Issue 46: a spec's remedy or title with ESC reaches the requirements table through md_cell.
  EXPECT_EQ(md_cell(std::string("re\x1b[2Jseat|x\ty\0", 15)), "re[2Jseat\\|x y");
  EXPECT_EQ(md_text("<script>x</script> <= 10 </b>"), "&lt;script>x&lt;/script> <= 10 &lt;/b>");
  EXPECT_EQ(md_text("a\xe2\x80\xae"
                    "b"),
            "ab");  // U+202E
}

// --- renderers ----------------------------------------------------------------------------------

TEST(Render, MarkdownHasVerdictTableFindingsAndEnvironment) {
  RunDir run = fixture_run("cpu-pass");
  Report r = make_report(run, load_spec(kSpecs + "cpu-strict.json"));
  std::string md = render_markdown(r);
  EXPECT_NE(md.find("**Verdict: FAIL** (exit 1: a requirement failed)"), std::string::npos) << md;
  EXPECT_NE(md.find("`20261130T084500Z-node01`"), std::string::npos);
  EXPECT_NE(md.find(r.spec_sha256), std::string::npos);
  EXPECT_NE(md.find("| row | title | outcome | value | requirement | worst item |\n"),
            std::string::npos);
  // The first page: the failing row in words, with its item, before the table.
  const size_t fix = md.find(
      "## What to fix\n\n- **Host memory bandwidth, STREAM triad (after the "
      "DIMM upgrade)** (`compute.membw.triad`): 298.7 GB/s on node02 (below "
      "300 GB/s)");
  EXPECT_NE(fix, std::string::npos) << md;
  EXPECT_LT(fix, md.find("## Requirements"));
  EXPECT_NE(md.find("| compute.membw.triad | Host memory bandwidth, STREAM triad (after the DIMM "
                    "upgrade) | **FAIL** | 298.7 GB/s | each >= 300 GB/s | node02 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| host.memory.installed | Installed memory | PASS | 1024 GiB |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- `compute.membw.triad` FAIL: each >= 300 GB/s (severity fail, scope node)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("`" + kTriadNode02 + "`"), std::string::npos);
  EXPECT_NE(md.find("### node02"), std::string::npos);
  EXPECT_NE(md.find("- CPU: Intel(R) Xeon(R) Platinum 8358 CPU @ 2.60GHz, 64 physical cores"),
            std::string::npos);
  EXPECT_NE(md.find("64 physical cores, 2 sockets, 128 threads, 2 NUMA nodes\n"),
            std::string::npos);
  // A count of one takes the singular ("1 sockets" was printed).
  RunDir one = fixture_run("cpu-pass");
  for (auto& e : one.run.env) e.cpu.sockets = 1, e.cpu.numa_nodes = 1;
  EXPECT_NE(render_markdown(make_report(one, load_spec(kSpecs + "cpu-strict.json")))
                .find("64 physical cores, 1 socket, 128 threads, 1 NUMA node\n"),
            std::string::npos);
  EXPECT_NE(md.find("- Memory: 1024 GiB installed (source dmi)"), std::string::npos);
  EXPECT_NE(md.find("- Disk nvme0n1: SAMSUNG MZQL23T8HCLS-00A07, 3.84 TB, NVMe"),
            std::string::npos);
  // report.html opens with the same first page, escaped.
  const std::string html = render_html(r, "", nullptr);
  EXPECT_NE(html.find("<section id=\"first-page\">\n<h2>What to fix</h2>\n<ul>\n<li><b>Host memory "
                      "bandwidth, STREAM triad (after the DIMM upgrade)</b>"),
            std::string::npos);
  EXPECT_LT(html.find("first-page"), html.find("id=\"verdicts\""));
  // Waived records: one line per benchmark and reason, counting them.
  EXPECT_NE(md.find("- `compute.gemm`: no NVIDIA GPU on the PCI bus (2 cases)"), std::string::npos)
      << md;
  // Only the FAIL row is a finding.
  EXPECT_EQ(count_of(md, "` FAIL: "), 1);
  EXPECT_EQ(count_of(md, "` PASS: "), 0);
}

// --- unknown env values (docs/design.md "Unknown is not zero") ---------------------------------

/// An env/2 node whose GPUs were seen on the PCI bus only (NVML not loaded) and whose memory
/// no source could read, as collect_env writes it: nulls, with the reasons beside them.
RunDir unknown_env_run() {
  json gpu = {
      {"index", 0},
      {"name", "NVIDIA 0x2330"},
      {"pci_device_id", "0x2330"},
      {"source", "pci"},
      {"memory_gib", nullptr},
      {"nvlink_links_up", nullptr},
      {"pcie", {{"gen_current", 5}, {"gen_max", 5}, {"width_current", 16}, {"width_max", 16}}},
      {"unknown",
       {{"memory_gib", "NVML not loaded: nvmlInit: Driver Not Loaded"},
        {"nvlink_links_up", "NVML not loaded: nvmlInit: Driver Not Loaded"}}}};
  json env = {{"schema", "clusterbench.env/2"},
              {"host", "node01"},
              {"memory",
               {{"installed_gib", nullptr},
                {"usable_gib", 1007.4},
                {"source", ""},
                {"unknown", {{"installed_gib", "no source worked: memory: no DMI entries"}}}}},
              {"gpus", json::array()},
              {"gpu_status", {{"on_pci", 8}, {"nvml", "nvmlInit: Driver Not Loaded"}}}};
  for (int i = 0; i < 8; ++i) {
    gpu["index"] = i;
    env["gpus"].push_back(gpu);
  }
  RunDir run;
  run.run.run_id = "unknown";
  run.run.finished_at = "2026-11-30T09:00:00Z";
  run.run.env.push_back(env.get<EnvRecord>());
  run.run.hosts = {"node01"};
  return run;
}

TEST(Unknown, PciOnlyGpusAndUnreadMemoryAreMissingWithTheReason) {
  Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/h100-sxm-80g-8x.json");
  Report r = make_report(unknown_env_run(), spec);

  const RowResult& memory = find_row(r, "gpu.memory");
  EXPECT_EQ(memory.outcome, kMissing);  // was FAIL "0 GiB"
  EXPECT_TRUE(memory.value.is_null());
  EXPECT_EQ(
      memory.message,
      "node01/gpu0: the memory of GPU 0 is unknown: NVML not loaded: nvmlInit: Driver Not Loaded; "
      "8 items: 8 MISSING");
  const RowResult& links = find_row(r, "gpu.nvlink_links");
  EXPECT_EQ(links.outcome, kMissing);
  EXPECT_EQ(
      find_item(links, "node01/gpu7").message,
      "node01/gpu7: the NVLink links up of GPU 7 is unknown: NVML not loaded: nvmlInit: Driver Not "
      "Loaded");
  const RowResult& installed = find_row(r, "host.memory_installed");
  EXPECT_EQ(installed.outcome, kMissing);  // was FAIL "0 GiB"
  EXPECT_EQ(installed.message,
            "node01: the installed memory is unknown: no source worked: memory: no DMI entries");
  // What was read is still judged: the PCIe link passes.
  EXPECT_EQ(find_row(r, "gpu.pcie_width").outcome, kPass);

  // report.json lists each unknown value a row needed, one line per host, field and reason.
  json j = render_json(r);
  const json& w = j["warnings"];
  auto has = [&](const std::string& text) {
    return std::find(w.begin(), w.end(), text) != w.end();
  };
  EXPECT_TRUE(
      has("node01: /gpus/*/memory_gib unknown (8 values): NVML not loaded: nvmlInit: "
          "Driver Not Loaded"))
      << w.dump(2);
  EXPECT_TRUE(
      has("node01: /gpus/*/nvlink_links_up unknown (8 values): NVML not loaded: nvmlInit: "
          "Driver Not Loaded"))
      << w.dump(2);
  EXPECT_TRUE(
      has("node01: /memory/installed_gib unknown: no source worked: memory: no DMI entries"))
      << w.dump(2);
  // An env record written before the CUDA toolkit, the memory type, the base clock, the
  // host:GPU memory ratio and the stack's versions were recorded: they are not known.
  for (const char* field :
       {"/software/cuda_toolkit/version", "/memory/type", "/cpu/base_mhz",
        "/memory/gpu_memory_ratio", "/software/cudnn/version", "/software/nccl/version",
        "/software/pytorch_cuda", "/software/device_plugin/version",
        "/software/gpu_feature_discovery/version", "/software/dcgm_exporter/version",
        "/software/os/version"})
    EXPECT_TRUE(has("node01: " + std::string(field) + " unknown: null in the env record"))
        << w.dump(2);
  EXPECT_EQ(w.size(), 14u) << w.dump(2);
}

TEST(Unknown, AggregatesDecideOnKnownValuesOnlyWhenTheUnknownCannotChangeThem) {
  json nics = json::array();
  auto nic = [&](const std::string& name, json rate) {
    json n = {{"name", name}, {"kind", "ethernet"}, {"state", "up"}, {"rate_gbps", rate}};
    if (rate.is_null()) n["unknown"] = {{"rate_gbps", "sysfs speed -1 (link down)"}};
    return n;
  };
  json fast = {{"schema", "clusterbench.env/2"},
               {"host", "fast"},
               {"nics", {nic("eno1", 400), nic("eno2", nullptr)}}};
  json slow = {{"schema", "clusterbench.env/2"},
               {"host", "slow"},
               {"nics", {nic("eno1", 10), nic("eno2", nullptr)}}};
  json none = {
      {"schema", "clusterbench.env/2"}, {"host", "none"}, {"nics", {nic("eno1", nullptr)}}};
  RunDir run;
  run.run.run_id = "agg";
  for (const json& e : {fast, slow, none}) run.run.env.push_back(e.get<EnvRecord>());
  json rows = json::array(
      {row("max", {{"env", "/nics/*/rate_gbps"}},
           {{"aggregate", "max"}, {"value", 200}, {"unit", "Gb/s"}}),
       row("min", {{"env", "/nics/*/rate_gbps"}},
           {{"aggregate", "min"}, {"value", 200}, {"unit", "Gb/s"}}),
       row("count", {{"env", "/nics/*/name"}, {"where", {{"/rate_gbps", {{">=", 200}}}}}},
           {{"aggregate", "count"}, {"value", 1}, {"unit", "count"}})});
  Report r = make_report(run, spec_of("agg", rows));
  const RowResult& max = r.rows[0];
  // fast: 400 known decides max >= 200 whatever eno2 is; slow: eno2 might be the fast one.
  EXPECT_EQ(find_item(max, "fast").outcome, kPass);
  EXPECT_EQ(find_item(max, "fast").message,
            "max 400 Gb/s on fast (at least 200 Gb/s); not needed to decide: the rate of NIC eno2 "
            "is unknown: sysfs speed -1 (link down)");
  EXPECT_EQ(find_item(max, "slow").outcome, kMissing);
  EXPECT_EQ(find_item(max, "slow").message,
            "slow: the rate of NIC eno2 is unknown: sysfs speed -1 (link down)");
  EXPECT_EQ(find_item(max, "none").outcome, kMissing);
  // min >= 200: a known 10 fails whatever the rest is; 400 known with one unknown does not decide.
  const RowResult& min = r.rows[1];
  EXPECT_EQ(find_item(min, "slow").outcome, kFail);
  EXPECT_EQ(find_item(min, "fast").outcome, kMissing);
  // count of ports >= 200 (>= 1): fast has one for sure; slow and none may or may not.
  const RowResult& count = r.rows[2];
  EXPECT_EQ(find_item(count, "fast").outcome, kPass);
  EXPECT_EQ(find_item(count, "fast").value, 1);
  EXPECT_EQ(find_item(count, "slow").outcome, kMissing);
  EXPECT_EQ(find_item(count, "slow").message,
            "slow: the rate of NIC eno2 is unknown: sysfs speed -1 (link down)");
  // Warnings: only the unknowns that left items MISSING.
  EXPECT_EQ(std::count_if(r.warnings.begin(), r.warnings.end(),
                          [](const std::string& w) { return w.rfind("fast:", 0) == 0; }),
            1);  // min's item on fast
  EXPECT_NE(std::find(r.warnings.begin(), r.warnings.end(),
                      "slow: /nics/1/rate_gbps unknown: sysfs speed -1 (link down)"),
            r.warnings.end());
}

TEST(Render, TheHeaderSaysTheRoundsOfARunInRounds) {
  RunDir run = fixture_run("cpu-pass");
  Report one = make_report(run, load_spec(kSpecs + "cpu-strict.json"));
  EXPECT_EQ(render_markdown(one).find("- Rounds:"), std::string::npos);  // 1: not said
  run.run.rounds = 5;
  run.run.suite = "ci";
  Report five = make_report(run, load_spec(kSpecs + "cpu-strict.json"));
  const std::string md = render_markdown(five);
  EXPECT_NE(md.find("- Rounds: 5 (suite ci; each host-side case measured once a round, one "
                    "repetition per round: docs/compare.md \"Rounds\")\n"),
            std::string::npos)
      << md;
  const std::string html = render_html(five, "");
  EXPECT_NE(html.find("(suite ci in 5 rounds, run "), std::string::npos);
}

TEST(Render, MarkdownOfAnIncompleteRun) {
  RunDir run = fixture_run("gpu-killed");
  Report r = make_report(run, load_spec(kSpecs + "h100-sxm-80g-8x.json"));
  std::string md = render_markdown(r);
  EXPECT_NE(md.find("**Verdict: INCOMPLETE** (exit 4"), std::string::npos);
  EXPECT_NE(md.find("| gpu.gemm.bf16 | BF16 GEMM throughput per GPU | **MISSING** | - |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- GPUs: 8 x NVIDIA H100 80GB HBM3, 79.6 GiB"), std::string::npos) << md;
  EXPECT_NE(md.find("## Warnings"), std::string::npos);
}

TEST(Render, JunitHasOneTestcasePerRowAndEscapes) {
  RunDir run = fixture_run("gpu-killed");
  Report r = make_report(run, load_spec(kSpecs + "h100-sxm-80g-8x.json"));
  r.rows[0].outcome = kFail;
  r.rows[0].message = "a <b> & \"c\" 'd'\x01";
  std::string x = render_junit(r);
  EXPECT_EQ(x.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>", 0), 0u);
  EXPECT_EQ(count_of(x, "<testcase "), 13);
  EXPECT_EQ(count_of(x, "</testcase>"), 13);
  EXPECT_EQ(count_of(x, "<testsuite "), 1);
  EXPECT_NE(x.find("<testsuite name=\"clusterbench.h100-sxm-80g-8x\" tests=\"13\" failures=\"1\" "
                   "errors=\"0\" skipped=\"2\">"),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<testcase classname=\"h100-sxm-80g-8x\" name=\"gpu.gemm.bf16\">"),
            std::string::npos);
  EXPECT_EQ(count_of(x, "<failure "), 1);
  EXPECT_EQ(count_of(x, "<skipped "), 2);
  EXPECT_NE(x.find("<failure message=\"a &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;?\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<system-out>WARN: "), std::string::npos);
  EXPECT_EQ(x.find('\x01'), std::string::npos);
  EXPECT_EQ(xml_escape("<&>\"'"), "&lt;&amp;&gt;&quot;&apos;");
}

// junit.xml stays well formed whatever the text holds: characters XML 1.0 forbids (C0 controls
// but tab/LF/CR, U+FFFE, U+FFFF) become '?', bytes that are not UTF-8 (a lone surrogate's
// encoding included) U+FFFD. xmllint (libxml2-utils, scripts/setup.sh) parses the file.
TEST(Render, JunitIsWellFormedWhateverTheTextHolds) {
  RunDir run = fixture_run("gpu-killed");
  Report r = make_report(run, load_spec(kSpecs + "h100-sxm-80g-8x.json"));
  r.rows[0].outcome = kFail;
  r.rows[0].message = "m \xEF\xBF\xBE \xEF\xBF\xBF \x01\x1f \xff\xfe \xed\xa0\x80 ok\t\xC3\xBC";
  const std::string fffd = "\xEF\xBF\xBD";
  std::string x = render_junit(r);
  EXPECT_NE(x.find("m ? ? ?? " + fffd + fffd + " " + fffd + fffd + fffd + " ok\t\xC3\xBC"),
            std::string::npos)
      << x;
  EXPECT_EQ(x.find("\xEF\xBF\xBE"), std::string::npos);
  std::string path = std::string(::testing::TempDir()) + "junit-forbidden.xml";
  std::ofstream(path) << x;
  ASSERT_EQ(std::system("command -v xmllint >/dev/null"), 0) << "xmllint: run scripts/setup.sh";
  EXPECT_EQ(std::system(("xmllint --noout " + path).c_str()), 0) << x;
}

TEST(Render, JsonCarriesVerdictRowsAndCounts) {
  RunDir run = fixture_run("cpu-pass");
  Report r = make_report(run, load_spec(kSpecs + "cpu-strict.json"));
  json j = render_json(r);
  EXPECT_EQ(j["schema"], "clusterbench.report/1");
  EXPECT_EQ(j["run_id"], "20261130T084500Z-node01");
  EXPECT_EQ(j["spec"]["name"], "cpu-strict");
  EXPECT_EQ(j["spec"]["sha256"], r.spec_sha256);
  EXPECT_EQ(j["verdict"], "FAIL");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["counts"]["FAIL"], 1);
  EXPECT_EQ(j["counts"]["PASS"], 4);
  ASSERT_EQ(j["rows"].size(), 5u);
  const json& triad = j["rows"][4];
  EXPECT_EQ(triad["id"], "compute.membw.triad");
  EXPECT_EQ(triad["outcome"], "FAIL");
  EXPECT_DOUBLE_EQ(triad["value"].get<double>(), 298.7);
  EXPECT_EQ(triad["unit"], "GB/s");
  EXPECT_EQ(triad["op"], ">=");
  EXPECT_EQ(triad["threshold"], 300);
  EXPECT_EQ(triad["severity"], "fail");
  EXPECT_EQ(triad["worst_item"], "node02");
  EXPECT_EQ(triad["evidence"], json({kTriadNode01, kTriadNode02}));
  ASSERT_EQ(triad["items"].size(), 2u);
  EXPECT_EQ(triad["items"][1]["item"], "node02");
  EXPECT_EQ(triad["items"][1]["outcome"], "FAIL");
  EXPECT_TRUE(j["warnings"].is_array());
}

TEST(Render, ConsoleEndsWithTheVerdictLine) {
  RunDir run = fixture_run("cpu-pass");
  Report r = make_report(run, load_spec(kSpecs + "cpu-strict.json"));
  std::string c = render_console(r);
  EXPECT_NE(c.find("\nVERDICT: FAIL (exit 1): 1 FAIL, 4 PASS\n"), std::string::npos) << c;
  EXPECT_NE(c.find("compute.membw.triad    FAIL     298.7 GB/s"), std::string::npos) << c;

  Report k = make_report(fixture_run("gpu-killed"), load_spec(kSpecs + "h100-sxm-80g-8x.json"));
  EXPECT_NE(render_console(k).find("VERDICT: INCOMPLETE (exit 4): 2 MISSING, 1 WARN, 10 PASS"),
            std::string::npos);
}

TEST(Render, WriteReportsWritesTheThreeFiles) {
  RunDir run = fixture_run("aborted");
  Report r = make_report(run, load_spec(kSpecs + "cpu-node.json"));
  std::string dir = temp_dir("write") + "/out";
  write_reports(r, dir);
  std::ifstream js(dir + "/report.json");
  json j = json::parse(js);
  EXPECT_EQ(j["verdict"], "ABORTED");
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["aborted"], true);
  std::stringstream md, xml;
  md << std::ifstream(dir + "/report.md").rdbuf();
  xml << std::ifstream(dir + "/junit.xml").rdbuf();
  EXPECT_NE(md.str().find("**Verdict: ABORTED** (exit 3: the run was aborted)"), std::string::npos);
  EXPECT_NE(md.str().find("**The run was aborted:** collectives.all_reduce: no progress"),
            std::string::npos);
  EXPECT_EQ(count_of(xml.str(), "<testcase "), static_cast<int>(r.rows.size()));
  EXPECT_NE(xml.str().find("<system-err>run aborted: "), std::string::npos);
}

// Issue 18 item 11: the H100/H200 FP8 rows judge the fast-accumulation case (fast_accum=on) at the
// datasheet's dense FP8 peak times the BF16 rows' fraction, 1979 x 715 / 989 = 1430 TFLOP/s; the
// fast_accum=off case of the same shape is not theirs to judge.
TEST(SpecTables, Fp8GemmRowsJudgeFastAccumulation) {
  auto gemm = [](const std::string& fast_accum, double tflops) {
    ResultRecord r;
    r.run_id = "r";
    r.benchmark = "compute.gemm";
    r.params = {{"backend", "cublaslt"},
                {"dtype", "fp8_e4m3"},
                {"fast_accum", fast_accum},
                {"m", 8192},
                {"n", 8192},
                {"k", 8192}};
    r.scope.kind = ScopeKind::gpu;
    r.scope.host = "gpu01";
    r.scope.gpu_index = 0;
    r.scope.uuid = "GPU-0";
    r.case_key = make_case_key(r.benchmark, r.params, r.scope);
    r.metrics = {{"tflops", tflops, "TFLOP/s", true}};
    return r;
  };
  for (const char* table : {"h100-sxm-80g-8x.json", "h200-sxm-141g-8x.json"}) {
    SCOPED_TRACE(table);
    Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/" + table);
    const Requirement* fp8 = nullptr;
    for (const auto& q : spec.requirements)
      if (q.id == "gpu.gemm_fp8") fp8 = &q;
    ASSERT_NE(fp8, nullptr);
    EXPECT_EQ(fp8->select.params.value("fast_accum", ""), "on");
    EXPECT_DOUBLE_EQ(fp8->value.get<double>(), 1430);  // floor(1979 x 715 / 989)
    EXPECT_NE(fp8->source.find("1,979"), std::string::npos) << fp8->source;
    EXPECT_NE(fp8->source.find("715 / 989"), std::string::npos) << fp8->source;
    RunDir run;
    run.run.run_id = "r";
    run.records.records = {gemm("off", 1000), gemm("on", 1500)};
    const RowResult& row = find_row(make_report(run, spec), "gpu.gemm_fp8");
    EXPECT_EQ(row.outcome, kPass) << row.message;
    ASSERT_EQ(row.items.size(), 1u);
    EXPECT_DOUBLE_EQ(row.items[0].value.get<double>(), 1500);
    run.records.records = {gemm("off", 1500), gemm("on", 1400)};  // below 1430: WARN (derived)
    EXPECT_EQ(find_row(make_report(run, spec), "gpu.gemm_fp8").outcome, kWarn);
  }
}

}  // namespace
}  // namespace clusterbench::report

namespace clusterbench::report {
namespace {

/// The gpu-killed run (gpu01, driver 535, CUDA 12.2) with a software stack as collect_software
/// writes it: everything of the seed present, no Kubernetes, the exporter up, the seed's NCCL
/// environment.
RunDir software_run() {
  RunDir run = fixture_run("gpu-killed");
  SoftwareStack& s = run.run.env[0].software;
  s.cudnn = {"present", std::string("9.1.0"), "libcudnn.so.9: cudnnGetVersion = 90100"};
  s.nccl = {"present", std::string("2.19.3"), "libnccl.so.2: ncclGetVersion = 21903"};
  s.pytorch = {"present", std::string("2.3.1+cu121"), "python3 -c 'import torch'"};
  s.pytorch_cuda = "12.1";
  s.kubernetes = {"absent", std::nullopt, "no kubelet on this node"};
  s.device_plugin = s.gpu_feature_discovery =
      s.container_toolkit = {"not applicable", std::nullopt, "no Kubernetes on this node"};
  s.container_runtime = {"absent", std::nullopt, "no container runtime socket"};
  s.dcgm_exporter = {"up", std::nullopt, "http://localhost:9400/metrics exports it"};
  s.nccl_env = {{"NCCL_IB_DISABLE", "0"}, {"NCCL_SOCKET_IFNAME", "ib0"}};
  return run;
}

const char* const kStackRows[] = {
    "gpu.cuda_version",  "gpu.nccl_present",  "gpu.cudnn_present",   "gpu.container_toolkit",
    "gpu.device_plugin", "gpu.dcgm_exporter", "gpu.nccl_ib_disable", "gpu.nccl_socket_ifname"};

TEST(SoftwareRows, TheSeedsStackPassesEachRow) {
  const Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/h100-sxm-80g-8x.json");
  const Report r = make_report(software_run(), spec);
  for (const char* id : kStackRows) {
    const RowResult& row = find_row(r, id);
    EXPECT_EQ(row.outcome, kPass) << id << ": " << row.message;
    EXPECT_FALSE(row.req.source.empty()) << id;
  }
  EXPECT_EQ(find_row(r, "gpu.cuda_version").value, "12.2");
  EXPECT_EQ(find_row(r, "gpu.device_plugin").value, "not applicable");
}

TEST(SoftwareRows, AbsentOldOrDownFailsOrWarnsNamingTheNode) {
  const Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/h100-sxm-80g-8x.json");
  RunDir run = software_run();
  SoftwareStack& s = run.run.env[0].software;
  run.run.env[0].versions.cuda_driver = "12.1";  // older than the seed's 12.2
  s.cudnn = {"absent", std::nullopt, "libcudnn.so.9: cannot open shared object file"};
  s.kubernetes = {"present", std::nullopt, "/var/lib/kubelet/device-plugins/kubelet.sock"};
  s.device_plugin = {"absent", std::nullopt, "no nvidia*.sock in /var/lib/kubelet/device-plugins"};
  s.dcgm_exporter = {"down", std::nullopt, "http://localhost:9400/metrics: Connection refused"};
  s.nccl_env["NCCL_SOCKET_IFNAME"] = "unset";
  const Report r = make_report(run, spec);
  EXPECT_EQ(find_row(r, "gpu.cuda_version").outcome, kFail);
  EXPECT_EQ(find_row(r, "gpu.cudnn_present").outcome, kFail);
  EXPECT_EQ(find_row(r, "gpu.cudnn_present").worst_item, "gpu01");
  EXPECT_EQ(find_row(r, "gpu.cudnn_present").value, "absent");
  EXPECT_EQ(find_row(r, "gpu.nccl_present").outcome, kPass);
  EXPECT_EQ(find_row(r, "gpu.device_plugin").outcome, kWarn);
  EXPECT_EQ(find_row(r, "gpu.dcgm_exporter").outcome, kWarn);
  EXPECT_EQ(find_row(r, "gpu.nccl_socket_ifname").outcome, kWarn);
  EXPECT_EQ(find_row(r, "gpu.nccl_socket_ifname").value, "unset");
  EXPECT_EQ(find_row(r, "gpu.nccl_ib_disable").outcome, kPass);
}

TEST(SoftwareRows, ARecordFromBeforeTheStackIsMissingNotFailed) {
  const Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/h100-sxm-80g-8x.json");
  const Report r = make_report(fixture_run("gpu-killed"), spec);
  for (const char* id : kStackRows) {
    if (std::string(id) == "gpu.cuda_version") continue;  // versions.cuda_driver was recorded
    EXPECT_EQ(find_row(r, id).outcome, kMissing) << id << ": " << find_row(r, id).message;
  }
}

TEST(Evaluate, AWaivedClusterCaseStandsForEveryNodeOfANodeRow) {
  // compute.training_step writes one cluster record, and node records only when it measured: a
  // waived case must make each node of a node-scope row WAIVED, not MISSING.
  RunDir run = fixture_run("cpu-pass");
  run.run.plan.clear();
  ResultRecord w;
  w.run_id = run.run.run_id;
  w.benchmark = "compute.training_step";
  w.params = {{"dtype", "bf16"}};
  w.scope.kind = ScopeKind::cluster;
  w.case_key = "compute.training_step|{\"dtype\":\"bf16\"}|cluster";
  w.status = Status::waived;
  w.message = "the CPU engine runs fp32 GEMMs (OpenBLAS sgemm)";
  run.records.records.push_back(w);
  const json sel = {{"benchmark", "compute.training_step"}, {"metric", "step_over_prediction"}};
  Report r = make_report(
      run,
      spec_of("train",
              json::array({row("step", sel, {{"op", "<="}, {"value", 1.2}, {"unit", "ratio"}})})));
  const RowResult& g = find_row(r, "step");
  EXPECT_EQ(g.outcome, kWaived);
  ASSERT_EQ(g.items.size(), 2u);
  EXPECT_EQ(find_item(g, "node01").outcome, kWaived);
  EXPECT_EQ(find_item(g, "node02").outcome, kWaived);
  EXPECT_NE(find_item(g, "node02").message.find("fp32"), std::string::npos);
}

}  // namespace
}  // namespace clusterbench::report
