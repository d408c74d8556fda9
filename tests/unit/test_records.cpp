// Records library: JSON round trips, statistics, case keys, and the run-directory files.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "records/records.hpp"

namespace clusterbench {
namespace {

const std::string kResults = std::string(CB_FIXTURES) + "/results/";

template <typename F>
std::string input_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected InputError";
  return "";
}

std::string temp_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "cb_records_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string slurp(const std::string& path) {
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  return ss.str();
}

ResultRecord gemm_record() {
  ResultRecord r;
  r.run_id = "20261201T101500Z-gpu01";
  r.benchmark = "compute.gemm";
  r.params = {{"n", 8192}, {"m", 8192}, {"k", 8192}, {"dtype", "bf16"}};
  r.scope.kind = ScopeKind::gpu;
  r.scope.host = "gpu01";
  r.scope.rank = 3;
  r.scope.gpu_index = 3;
  r.scope.uuid = "GPU-5d2f8a3c-71e4-4b09-8c6a-0e9b1f2a3c43";
  r.scope.pci_bus_id = "00000000:61:00.0";
  r.case_key = make_case_key(r.benchmark, r.params, r.scope);
  r.metrics.push_back({"throughput", 710.0, "TFLOP/s", true});
  r.time = compute_stats({0.001549, 0.001541, 0.001566});
  r.combine = "per_rank";
  r.started_at = "2026-12-01T10:15:14Z";
  r.duration_s = 2.1;
  r.extra = {{"algo", "cublasLt heuristic 0"}};
  return r;
}

// --- statistics ---------------------------------------------------------------------------------

TEST(ComputeStats, OddCount) {
  // Sorted 1 2 3 4 5: median 3, mean 3, p95 = rank ceil(4.75) = 5 -> 5,
  // p75 = rank ceil(3.75) = 4 -> 4, p25 = rank ceil(1.25) = 2 -> 2, spread (4 - 2) / 3.
  TimeStats s = compute_stats({4, 1, 3, 5, 2});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.p95, 5);
  EXPECT_DOUBLE_EQ(s.spread, 2.0 / 3.0);
}

TEST(ComputeStats, EvenCount) {
  // Sorted 1 2 3 4 10 20: median (3 + 4) / 2 = 3.5, mean 40 / 6, p95 = rank ceil(5.7) = 6 -> 20,
  // p75 = rank ceil(4.5) = 5 -> 10, p25 = rank ceil(1.5) = 2 -> 2, spread 8 / 3.5.
  TimeStats s = compute_stats({20, 1, 10, 2, 4, 3});
  EXPECT_EQ(s.n, 6);
  EXPECT_DOUBLE_EQ(s.median, 3.5);
  EXPECT_DOUBLE_EQ(s.mean, 40.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.p95, 20);
  EXPECT_DOUBLE_EQ(s.spread, 8.0 / 3.5);
}

TEST(ComputeStats, TwentySamplesP95IsTheNineteenth) {
  // 0.001 .. 0.020: p95 = rank ceil(19) = 19 -> 0.019; median (0.010 + 0.011) / 2.
  std::vector<double> xs;
  for (int i = 20; i >= 1; --i) xs.push_back(i / 1000.0);
  TimeStats s = compute_stats(xs);
  EXPECT_DOUBLE_EQ(s.p95, 0.019);
  EXPECT_NEAR(s.median, 0.0105, 1e-15);
  EXPECT_DOUBLE_EQ(s.min, 0.001);
  EXPECT_DOUBLE_EQ(s.max, 0.020);
  // p75 = rank 15 -> 0.015, p25 = rank 5 -> 0.005: spread 0.010 / 0.0105.
  EXPECT_NEAR(s.spread, 0.010 / 0.0105, 1e-12);
}

TEST(ComputeStats, EmptyAndSingle) {
  TimeStats e = compute_stats({});
  EXPECT_EQ(e.n, 0);
  EXPECT_EQ(e.median, 0);
  TimeStats one = compute_stats({0.25});
  EXPECT_EQ(one.n, 1);
  EXPECT_DOUBLE_EQ(one.median, 0.25);
  EXPECT_DOUBLE_EQ(one.p95, 0.25);
  EXPECT_DOUBLE_EQ(one.spread, 0);
}

TEST(NearestRank, Quantiles) {
  std::vector<double> v = {10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(nearest_rank(v, 0.0), 10);  // rank clamps to 1
  EXPECT_DOUBLE_EQ(nearest_rank(v, 0.25), 10);
  EXPECT_DOUBLE_EQ(nearest_rank(v, 0.26), 20);
  EXPECT_DOUBLE_EQ(nearest_rank(v, 0.5), 20);
  EXPECT_DOUBLE_EQ(nearest_rank(v, 1.0), 40);
  EXPECT_DOUBLE_EQ(nearest_rank({}, 0.5), 0);
}

// --- scopes and case keys -----------------------------------------------------------------------

TEST(ScopeItem, EachKind) {
  Scope g;
  g.kind = ScopeKind::gpu, g.host = "node01", g.gpu_index = 3, g.uuid = "GPU-abc";
  EXPECT_EQ(scope_item(g), "node01/gpu3[GPU-abc]");
  g.uuid.clear();
  EXPECT_EQ(scope_item(g), "node01/gpu3");
  Scope n;
  n.host = "node01";
  EXPECT_EQ(scope_item(n), "node01");
  Scope l;
  l.kind = ScopeKind::link, l.hosts = {"node01", "node02"};
  EXPECT_EQ(scope_item(l), "node01<->node02");
  Scope c;
  c.kind = ScopeKind::cluster;
  EXPECT_EQ(scope_item(c), "cluster");
}

TEST(CaseKey, ParamsAreCanonical) {
  Scope s;
  s.host = "node01";
  json a = json::parse(R"({"threads": 64, "kernel": "triad"})");
  json b = json::parse(R"({"kernel": "triad", "threads": 64})");
  EXPECT_EQ(make_case_key("compute.memory_bandwidth", a, s),
            R"(compute.memory_bandwidth|{"kernel":"triad","threads":64}|node01)");
  EXPECT_EQ(make_case_key("compute.memory_bandwidth", a, s),
            make_case_key("compute.memory_bandwidth", b, s));
}

// --- JSON round trips ---------------------------------------------------------------------------

TEST(RoundTrip, ResultRecord) {
  ResultRecord r = gemm_record();
  r.status = Status::failed;
  r.message = "cuBLAS error 13 (CUBLAS_STATUS_EXECUTION_FAILED) in cublasLtMatmul";
  r.error = ErrorInfo{"cublas", "13", "cublasLtMatmul(...)", "compute/gemm.cpp:88", "gpu01", 3};
  json j = r;
  EXPECT_EQ(j["schema"], "clusterbench.result/1");
  EXPECT_EQ(j["scope"]["gpu_index"], 3);
  EXPECT_FALSE(j["scope"].contains("hosts"));  // empty fields of a scope are left out
  ResultRecord back = j.get<ResultRecord>();
  EXPECT_EQ(back.benchmark, r.benchmark);
  EXPECT_EQ(back.params, r.params);
  EXPECT_EQ(
      back.case_key,
      R"(compute.gemm|{"dtype":"bf16","k":8192,"m":8192,"n":8192}|gpu01/gpu3[GPU-5d2f8a3c-71e4-4b09-8c6a-0e9b1f2a3c43])");
  EXPECT_EQ(back.status, Status::failed);
  EXPECT_EQ(back.message, r.message);
  ASSERT_TRUE(back.error.has_value());
  EXPECT_EQ(back.error->where, "compute/gemm.cpp:88");
  EXPECT_EQ(back.error->rank, 3);
  ASSERT_EQ(back.metrics.size(), 1u);
  EXPECT_EQ(back.metrics[0].unit, "TFLOP/s");
  EXPECT_DOUBLE_EQ(back.metrics[0].value, 710.0);
  EXPECT_EQ(back.time.n, 3);
  EXPECT_DOUBLE_EQ(back.time.median, 0.001549);
  EXPECT_EQ(back.scope.uuid, r.scope.uuid);
  EXPECT_EQ(back.scope.pci_bus_id, "00000000:61:00.0");
  EXPECT_EQ(back.combine, "per_rank");
  EXPECT_EQ(back.extra, r.extra);
  EXPECT_EQ(json(back), j);
}

TEST(RoundTrip, ResultRecordRejectsBadStatusAndSchema) {
  json j = gemm_record();
  j["status"] = "skipped";
  EXPECT_NE(input_error([&] { j.get<ResultRecord>(); }).find("field '/status' is 'skipped'"),
            std::string::npos);
  j["status"] = "ok";
  j["schema"] = "clusterbench.result/9";
  EXPECT_NE(input_error([&] { j.get<ResultRecord>(); }).find("schema 'clusterbench.result/9'"),
            std::string::npos);
  j.erase("schema");
  EXPECT_NE(input_error([&] { j.get<ResultRecord>(); }).find("missing field 'schema'"),
            std::string::npos);
  // Issue 46: params and extra are objects (a number stopped `report` in an erase(), exit 3).
  j = gemm_record();
  j["params"] = 5;
  EXPECT_NE(input_error([&] {
              j.get<ResultRecord>();
            }).find("field 'params' must be an object, not number"),
            std::string::npos);
  j = gemm_record();
  j["extra"] = json::array();
  EXPECT_NE(input_error([&] {
              j.get<ResultRecord>();
            }).find("field 'extra' must be an object, not array"),
            std::string::npos);
}

TEST(RoundTrip, RunRecordWithEnv) {
  RunDir rd = read_run_dir(kResults + "gpu-killed");
  json j = rd.run;
  RunRecord back = j.get<RunRecord>();
  EXPECT_EQ(json(back), j);
  EXPECT_FALSE(back.exit_code.has_value());
  EXPECT_TRUE(j["exit_code"].is_null());
  ASSERT_EQ(back.env.size(), 1u);
  const EnvRecord& e = back.env[0];
  EXPECT_EQ(e.host, "gpu01");
  EXPECT_EQ(e.cpu.physical_cores, 112);
  EXPECT_DOUBLE_EQ(e.memory.installed_gib.value_or(-1), 2048);
  ASSERT_EQ(e.gpus.size(), 8u);
  EXPECT_EQ(e.gpus[3].pcie.gen_current, 4);
  EXPECT_EQ(e.gpus[7].uuid, "GPU-5d2f8a3c-71e4-4b09-8c6a-0e9b1f2a3c47");
  EXPECT_EQ(e.gpu_status.cuda_devices, 8);
  EXPECT_EQ(e.nics[1].rate_gbps, 400);
  EXPECT_EQ(e.tuning.net_core_rmem_max, 2147483647);
  EXPECT_EQ(e.environment.at("NCCL_SOCKET_IFNAME"), "ib0");
  ASSERT_EQ(back.plan.size(), 3u);
  EXPECT_EQ(back.plan[1].case_keys.size(), 8u);

  back.exit_code = 4;
  EXPECT_EQ(json(back)["exit_code"], 4);
}

// run.json's rounds: written only above 1, read back; anything but a whole number 1..20 is
// refused with the field named.
TEST(RoundTrip, RunRecordRounds) {
  RunDir rd = read_run_dir(kResults + "gpu-killed");
  json j = rd.run;
  EXPECT_FALSE(j.contains("rounds"));
  EXPECT_EQ(j.get<RunRecord>().rounds, 1);
  j["rounds"] = 5;
  RunRecord back = j.get<RunRecord>();
  EXPECT_EQ(back.rounds, 5);
  EXPECT_EQ(json(back)["rounds"], 5);
  for (const json& bad : {json(1.5), json("3"), json(0), json(21), json(nullptr)}) {
    j["rounds"] = bad;
    const std::string why = input_error([&] { j.get<RunRecord>(); });
    EXPECT_NE(
        why.find("run.json: field 'rounds': " + bad.dump() + " is not a whole number from 1 to 20"),
        std::string::npos)
        << why;
  }
}

TEST(RoundTrip, OldFilesWithoutNewFieldsStillRead) {
  json j = json::parse(R"({"schema": "clusterbench.env/1", "host": "n1", "cpu": {"model": "x"}})");
  EnvRecord e = j.get<EnvRecord>();
  EXPECT_EQ(e.host, "n1");
  EXPECT_EQ(e.cpu.physical_cores, 0);
  EXPECT_EQ(e.tuning.nr_hugepages, -1);
  EXPECT_TRUE(e.gpus.empty());
}

TEST(RoundTrip, UnknownEnvValuesAreNullWithTheirReason) {
  EnvRecord e;
  e.host = "n1";
  GpuInfo g;
  g.source = "pci";
  set_unknown(g.memory_gib, g.unknown, "memory_gib", "NVML not loaded: Driver Not Loaded");
  g.nvlink_links_up = 0;  // a real 0 (no NVLink) stays a number
  e.gpus.push_back(g);
  NicInfo eno2;
  eno2.name = "eno2";
  set_unknown(eno2.rate_gbps, eno2.unknown, "rate_gbps", "sysfs speed -1");
  e.nics.push_back(eno2);
  set_unknown(e.memory.installed_gib, e.memory.unknown, "installed_gib", "no source worked");
  e.memory.usable_gib = 503.5;

  json j = e;
  EXPECT_EQ(j["schema"], "clusterbench.env/2");
  EXPECT_TRUE(j["gpus"][0]["memory_gib"].is_null());
  EXPECT_EQ(j["gpus"][0]["nvlink_links_up"], 0);
  EXPECT_EQ(j["gpus"][0]["unknown"], json({{"memory_gib", "NVML not loaded: Driver Not Loaded"}}));
  EXPECT_TRUE(j["nics"][0]["rate_gbps"].is_null());
  EXPECT_EQ(j["nics"][0]["unknown"]["rate_gbps"], "sysfs speed -1");
  EXPECT_TRUE(j["memory"]["installed_gib"].is_null());
  EXPECT_EQ(j["memory"]["usable_gib"], 503.5);
  EXPECT_FALSE(j["memory"]["unknown"].contains("usable_gib"));

  EnvRecord back = j.get<EnvRecord>();
  EXPECT_FALSE(back.gpus[0].memory_gib.has_value());
  EXPECT_EQ(back.gpus[0].nvlink_links_up, 0);
  EXPECT_EQ(back.gpus[0].unknown.at("memory_gib"), "NVML not loaded: Driver Not Loaded");
  EXPECT_FALSE(back.nics[0].rate_gbps.has_value());
  EXPECT_EQ(json(back), j);
  // Known values write no `unknown` map at all.
  GpuInfo known_gpu;
  known_gpu.memory_gib = 80.0;
  EXPECT_FALSE(json(known_gpu).contains("unknown"));
  NicInfo known_nic;
  known_nic.rate_gbps = 400.0;
  EXPECT_FALSE(json(known_nic).contains("unknown"));
}

TEST(RoundTrip, VirtualInterfaceFlag) {
  NicInfo veth;
  veth.name = veth.netdev = "to2";
  veth.kind = "veth";
  veth.is_virtual = true;
  set_unknown(veth.rate_gbps, veth.unknown, "rate_gbps", "virtual interface (veth)");
  json j = veth;
  EXPECT_EQ(j["virtual"], true);
  EXPECT_TRUE(j["rate_gbps"].is_null());
  NicInfo back = j.get<NicInfo>();
  EXPECT_TRUE(back.is_virtual);
  EXPECT_EQ(json(back), j);
  EXPECT_EQ(json(NicInfo{})["virtual"], false);
  // A NIC written without the field (env/1) is physical.
  EXPECT_FALSE(json({{"name", "eno1"}, {"rate_gbps", 25}}).get<NicInfo>().is_virtual);
}

TEST(RoundTrip, EnvV1NotReadZerosBecomeUnknown) {
  // clusterbench.env/1 wrote 0 for what it could not read; those zeros are not judged.
  json j = json::parse(R"({"schema": "clusterbench.env/1", "host": "n1",
    "gpu_status": {"nvml": "nvmlInit: Driver Not Loaded"},
    "memory": {"installed_gib": 0, "usable_gib": 0, "source": ""},
    "gpus": [{"index": 0, "source": "pci", "memory_gib": 0, "nvlink_links_up": 0},
             {"index": 1, "source": "nvml", "memory_gib": 79.6, "nvlink_links_up": 0}],
    "nics": [{"name": "eno2", "kind": "ethernet", "rate_gbps": 0},
             {"name": "mlx5_0/1", "kind": "ib_port", "rate_gbps": 200}]})");
  EnvRecord e = j.get<EnvRecord>();
  EXPECT_EQ(e.schema, "clusterbench.env/1");
  EXPECT_FALSE(e.gpus[0].memory_gib.has_value());
  EXPECT_FALSE(e.gpus[0].nvlink_links_up.has_value());
  EXPECT_EQ(e.gpus[0].unknown.at("memory_gib"),
            "not read: GPU seen on the PCI bus only (NVML: nvmlInit: Driver Not Loaded)");
  EXPECT_EQ(e.gpus[1].memory_gib, 79.6);
  EXPECT_EQ(e.gpus[1].nvlink_links_up, 0);  // NVML answered: no NVLink
  EXPECT_FALSE(e.memory.installed_gib.has_value());
  EXPECT_FALSE(e.memory.usable_gib.has_value());
  EXPECT_FALSE(e.nics[0].rate_gbps.has_value());
  EXPECT_NE(e.nics[0].unknown.at("rate_gbps").find("clusterbench.env/1"), std::string::npos);
  EXPECT_EQ(e.nics[1].rate_gbps, 200);
  EXPECT_FALSE(e.nics[1].is_virtual);  // env/1 listed physical NICs only
  // An env/2 record's numbers are what they say.
  j["schema"] = "clusterbench.env/2";
  EXPECT_EQ(j.get<EnvRecord>().nics[0].rate_gbps, 0.0);
}

// --- files --------------------------------------------------------------------------------------

TEST(ReadRecords, WholeFile) {
  RecordsFile f = read_records(kResults + "cpu-pass/records.jsonl");
  ASSERT_EQ(f.records.size(), 6u);
  EXPECT_TRUE(f.warnings.empty());
  EXPECT_DOUBLE_EQ(f.records[1].metrics[0].value, 298.7);
  EXPECT_EQ(f.records[4].status, Status::waived);
  EXPECT_EQ(f.records[4].message, "no NVIDIA GPU on the PCI bus");
}

TEST(ReadRecords, TruncatedLastLineIsAWarning) {
  std::string path = kResults + "truncated-last/records.jsonl";
  RecordsFile f = read_records(path);
  ASSERT_EQ(f.records.size(), 2u);
  EXPECT_DOUBLE_EQ(f.records[1].metrics[0].value, 18.31);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find(path + ":3: truncated last record ignored"), std::string::npos)
      << f.warnings[0];
}

// An unterminated last line that is whole JSON was not cut off by a crash: a record that is not
// valid there (a wrong status, a file written as one JSON array) is an error, not ignored.
TEST(ReadRecords, AWholeButInvalidLastLineIsAnErrorNotTruncation) {
  const std::string path = temp_dir("whole-last") + "/records.jsonl";
  json bad = gemm_record();
  bad["status"] = "OK";
  const std::string good = json(gemm_record()).dump();
  std::ofstream(path) << good << "\n" << bad.dump();
  std::string m = input_error([&] { read_records(path); });
  EXPECT_EQ(m.rfind(path + ":2: ", 0), 0u) << m;
  EXPECT_NE(m.find("'OK'"), std::string::npos) << m;
  std::ofstream(path) << "[" << good << "," << good << "]";
  m = input_error([&] { read_records(path); });
  EXPECT_EQ(m.rfind(path + ":1: ", 0), 0u) << m;
}

TEST(ReadRecords, MalformedMiddleLineIsAnInputErrorNamingFileAndLine) {
  std::string path = kResults + "malformed-middle/records.jsonl";
  std::string m = input_error([&] { read_records(path); });
  EXPECT_EQ(m.rfind(path + ":2: ", 0), 0u) << m;
  EXPECT_NE(m.find("parse error"), std::string::npos) << m;
}

// A host name holding a control character (a newline would add a line to failing-hosts.txt) is
// an input error naming the file, the line and the field, on both parsing paths.
TEST(ReadRecords, AHostNameWithAControlCharacterIsAnInputError) {
  std::string good;
  {
    std::ifstream in(kResults + "cpu-pass/records.jsonl");
    std::getline(in, good);
  }
  json rec = json::parse(good);
  for (const char* field : {"host", "hosts"}) {
    json bad = rec;
    if (std::string(field) == "host")
      bad["scope"]["host"] = "evil\nnode";
    else
      bad["scope"] = {{"kind", "link"}, {"hosts", {"a", "b\tc"}}};
    std::string path = ::testing::TempDir() + "cb-host-" + field + ".jsonl";
    std::ofstream(path) << good << "\n" << bad.dump() << "\n" << good << "\n";
    std::string m = input_error([&] { read_records(path); });
    EXPECT_EQ(m.rfind(path + ":2: scope " + field, 0), 0u) << m;
    EXPECT_NE(m.find("holds a control character; a host name cannot"), std::string::npos) << m;
  }
}

// Bytes that are not UTF-8: a truncated last line holding them is ignored with a warning like any
// truncated last line, a middle one is an input error naming file and line; either message is
// valid UTF-8 (nlohmann's quotes the bad bytes), so report.json can hold it.
TEST(ReadRecords, BytesThatAreNotUtf8InALine) {
  std::string path = temp_dir("badbytes") + "/records.jsonl";
  const std::string good = json(gemm_record()).dump();
  std::ofstream(path) << good << "\n{\"schema\":\"clusterbench.result/1\",\"message\":\"\xff\xfe";
  RecordsFile f = read_records(path);
  EXPECT_EQ(f.records.size(), 1u);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find(path + ":2: truncated last record ignored"), std::string::npos)
      << f.warnings[0];
  EXPECT_NO_THROW((void)json(f.warnings[0]).dump());
  std::ofstream(path) << good << "\n{\"message\":\"\xff\xfe\"}\n" << good << "\n";
  std::string m = input_error([&] { read_records(path); });
  EXPECT_EQ(m, path + ":2: column 13: byte 0xFF is not UTF-8");  // {"message":" is 12 bytes
  EXPECT_NO_THROW((void)json(m).dump());
}

// Issue 46, defect 6: 256 MiB of NUL bytes after the last record (a crash's zero-fill; a sparse
// file here) are skipped chunk by chunk and said, not read into one line: the peak resident
// size grows by far less than the run; followed by a newline and a record, the run is a
// malformed line named with its number.
TEST(ReadRecords, ARunOfNulBytesAfterTheLastRecordIsSkippedInConstantMemory) {
  std::string path = temp_dir("nulrun") + "/records.jsonl";
  const std::string good = json(gemm_record()).dump();
  std::ofstream(path) << good << "\n" << good << "\n";
  constexpr long long kRun = 256LL << 20;
  std::filesystem::resize_file(path, std::filesystem::file_size(path) + kRun);
  struct rusage before {};
  getrusage(RUSAGE_SELF, &before);
  RecordsFile f = read_records(path);
  struct rusage after {};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(f.records.size(), 2u);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_EQ(f.warnings[0], path + ":3: " + std::to_string(kRun) +
                               " bytes after the last record that are not JSON (starting with byte "
                               "0x00: a crash's zero-fill?) ignored");
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 << 10) << "KiB";  // 64 MiB of a 256 MiB run
  std::ofstream(path, std::ios::app) << "\n" << good << "\n";
  std::string m = input_error([&] { read_records(path); });
  EXPECT_EQ(m, path + ":3: not a JSON record (a line of " + std::to_string(kRun) +
                   " bytes starting with byte 0x00)");
}

TEST(ReadRecords, BadFieldInAMiddleLineNamesTheField) {
  std::string path = temp_dir("badfield") + "/records.jsonl";
  json good = gemm_record();
  json bad = good;
  bad["status"] = "done";
  std::ofstream(path) << good.dump() << "\n" << bad.dump() << "\n" << good.dump() << "\n";
  std::string m = input_error([&] { read_records(path); });
  EXPECT_NE(m.find(path + ":2: "), std::string::npos) << m;
  EXPECT_NE(m.find("field '/status' is 'done'"), std::string::npos) << m;
}

TEST(ReadRecords, BlankLinesAreSkipped) {
  std::string path = temp_dir("blank") + "/records.jsonl";
  std::ofstream(path) << "\n" << json(gemm_record()).dump() << "\n   \n";
  RecordsFile f = read_records(path);
  EXPECT_EQ(f.records.size(), 1u);
  EXPECT_TRUE(f.warnings.empty());
}

// read_records' fast path (simdjson) must read every line exactly as json::parse + from_json
// does, and hand the lines it does not know to that path: escapes, extra/error/hosts, unknown
// fields, keys in another order, integers where doubles are expected, a float rank (converted by
// from_json only), and nulls where from_json skips them.
TEST(ReadRecords, FastPathReadsLikeTheOrdinaryParser) {
  std::vector<std::string> lines;
  json a = gemm_record();
  a["message"] = "tab\there \"quoted\" \u00e9 \\ back";
  a["extra"] = {{"fio_version", "fio-3.33"}, {"jobs", json::array({1, 2.5, "x", nullptr})}};
  a["error"] = {{"library", "NCCL"},  {"code", "6"},  {"call", "ncclAllReduce"},
                {"where", "a.cpp:1"}, {"host", "n1"}, {"rank", 3}};
  a["unknown_top"] = {{"deep", {1, 2, {{"x", "}"}}}}};
  a["scope"]["hosts"] = {"n1", "n2"};
  a["scope"]["unknown_scope"] = {1, 2};
  a["time"]["median"] = 2;  // an integer where a double is read
  a["metrics"][0]["unknown_metric"] = "x";
  lines.push_back(a.dump());
  json b = gemm_record();
  b["scope"]["rank"] = 1.0;  // a float rank: only the ordinary path converts it
  lines.push_back(b.dump());
  json c = gemm_record();
  c["message"] = nullptr;  // a null: skipped by from_json
  c["duration_s"] = nullptr;
  lines.push_back(c.dump());
  // Keys in reverse order, written by hand.
  json d = gemm_record();
  std::string rev = "{";
  std::vector<std::string> keys;
  for (auto& [k, v] : d.items()) keys.push_back(k);
  for (auto k = keys.rbegin(); k != keys.rend(); ++k)
    rev += (rev.size() > 1 ? "," : "") + json(*k).dump() + ":" + d[*k].dump();
  lines.push_back(rev + "}");
  json e = gemm_record();
  e["metrics"][0]["value"] = 0;
  std::string neg = e.dump();  // an integer -0: nlohmann reads 0, not -0.0
  neg.replace(neg.find("\"value\":0"), 9, "\"value\":-0");
  lines.push_back(neg);
  // A repeated "scope" or "time" replaces the first one.
  json g = gemm_record();
  std::string dup = g.dump();
  dup.pop_back();
  dup += R"(,"scope":{"kind":"gpu","host":"node02","gpu_index":3},"time":{"n":7}})";
  lines.push_back(dup);
  // Numbers of every kind in params and extra, built without a second parse: each must come out
  // as nlohmann's parser types it (a non-negative integer unsigned, a negative one signed, a big
  // integer a double), compared as text so that 1 and 1.0 differ.
  json base = gemm_record();
  std::string nums = base.dump();  // its params and extra are given again: the last ones count
  nums.pop_back();
  nums += R"(,"params":{"n":-3,"m":7,"z":0,"f":-0.0,"e":1e3,"big":18446744073709551616,)"
          R"("u":18446744073709551615,"k\u00e9y":[1,-1,[2.5,{"a":null,"b":true}]]},)"
          R"("extra":{"host_probe":{"cpu_mops":-0.5,"n":[0,-7,1e-300,123456789012345678]},)"
          R"("other":{"x":-2}}})";
  lines.push_back(nums);
  // The same without the big integer (which only the ordinary path reads, extra and all).
  lines.push_back(nums.replace(nums.find(R"("big")"), 27, ""));
  std::string path = temp_dir("fastpath") + "/records.jsonl";
  {
    std::ofstream out(path);
    for (const auto& l : lines) out << l << "\n";
  }
  RecordsFile f = read_records(path);
  ASSERT_EQ(f.records.size(), lines.size());
  auto text = [](const ResultRecord& r) {
    json j = r;
    return j.dump();
  };
  for (size_t i = 0; i < lines.size(); ++i)
    EXPECT_EQ(text(f.records[i]), text(json::parse(lines[i]).get<ResultRecord>()))
        << "line " << i + 1;
  // The kept keys of `extra` alone, as the ordinary parser reads them.
  const ExtraKeys keep = {"host_probe"};
  RecordsFile k = read_records(path, &keep);
  json want = json::object();
  want["host_probe"] = json::parse(lines.back())["extra"]["host_probe"];
  EXPECT_EQ(k.records.back().extra.dump(), want.dump());
  EXPECT_EQ(f.records[0].message, "tab\there \"quoted\" \u00e9 \\ back");
  ASSERT_TRUE(f.records[0].error.has_value());
  EXPECT_EQ(f.records[0].error->rank, 3);
  EXPECT_EQ(f.records[0].scope.hosts, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(f.records[1].scope.rank, 1);
  EXPECT_FALSE(std::signbit(f.records[4].metrics[0].value));
  EXPECT_EQ(f.records[5].scope.host, "node02");
  EXPECT_TRUE(f.records[5].scope.uuid.empty());
  EXPECT_EQ(f.records[5].time.n, 7);
  EXPECT_EQ(f.records[5].time.spread, 0);
}

// Invalid JSON in a field no reader uses is still invalid: the fast path must not skip it.
TEST(ReadRecords, InvalidJsonInAnUnreadFieldIsAnError) {
  for (const std::string& bad : {std::string(R"("note":nul)"), std::string(R"("note":1e400)"),
                                 std::string(R"("note":[1,])"), std::string(R"("note":"\q")")}) {
    std::string line = json(gemm_record()).dump();
    line.insert(1, bad + ",");
    std::string path = temp_dir("unread") + "/records.jsonl";
    std::ofstream(path) << json(gemm_record()).dump() << "\n"
                        << line << "\n"
                        << json(gemm_record()).dump() << "\n";
    std::string m = input_error([&] { read_records(path); });
    EXPECT_EQ(m.rfind(path + ":2: ", 0), 0u) << bad << ": " << m;
  }
}

// A number past a double's range is named by its place (nlohmann's overflow error names none);
// the same spelling inside a string before it is not taken for it.
TEST(ReadRecords, NumberOverflowIsNamedByLineAndColumn) {
  std::string path = temp_dir("overflow") + "/spec.json";
  std::ofstream(path) << "{\"schema\": 3,\n \"note\": \"1e400\", \"x\": [1, -1e400]}\n";
  std::string m = input_error([&] { read_json_file(path); });
  EXPECT_EQ(m, path + ": line 2, column 28: number -1e400 is out of range (beyond a double)");
  std::string line = json(gemm_record()).dump();
  line.insert(1, R"("note":1e400,)");
  path = temp_dir("overflow-jsonl") + "/records.jsonl";
  std::ofstream(path) << json(gemm_record()).dump() << "\n" << line << "\n";
  m = input_error([&] { read_records(path); });
  EXPECT_EQ(m, path + ":2: column 9: number 1e400 is out of range (beyond a double)");
}

// Lines cut by the 16 MiB read chunks are joined again; a line's number counts across chunks.
TEST(ReadRecords, LinesAcrossChunksAndTheirNumbers) {
  std::string path = temp_dir("chunks") + "/records.jsonl";
  json r = gemm_record();
  r["extra"] = {{"pad", std::string(3000, 'x')}};
  const std::string line = r.dump();
  const size_t n = (40u << 20) / line.size();  // about 40 MiB: three chunks
  {
    std::ofstream out(path);
    for (size_t i = 0; i < n; ++i) out << line << "\n";
    out << "{\"schema\": broken}\n";
  }
  std::string m = input_error([&] { read_records(path); });
  EXPECT_EQ(m.rfind(path + ":" + std::to_string(n + 1) + ": ", 0), 0u) << m;
  std::filesystem::resize_file(path, n * (line.size() + 1));
  RecordsFile f = read_records(path);
  ASSERT_EQ(f.records.size(), n);
  EXPECT_EQ(f.records.back().extra["pad"].get<std::string>().size(), 3000u);
}

// run.json's one-pass reader gives what from_json gives, on every fixture run (plan or not), and
// gives up (the ordinary reader then decides) on what it does not expect.
TEST(ReadRunJsonFast, SameAsTheOrdinaryReader) {
  int compared = 0;
  for (const auto& e : std::filesystem::directory_iterator(kResults)) {
    const std::string path = e.path().string() + "/run.json";
    if (!std::filesystem::exists(path)) continue;
    const json full = read_json_file(path);
    for (bool plan : {true, false}) {
      std::optional<RunRecord> fast = read_run_json_fast(path, plan);
      ASSERT_TRUE(fast.has_value()) << path;
      RunRecord want = full.get<RunRecord>();
      if (!plan) want.plan.clear();
      EXPECT_EQ(json(*fast).dump(), json(want).dump()) << path;
      ++compared;
    }
  }
  EXPECT_GE(compared, 16);  // 9 fixture runs today
  const std::string dir = temp_dir("fast-run-json");
  const std::string base = R"({"schema": "clusterbench.run/1", "run_id": "r", "plan": )";
  for (const std::string plan :
       {R"([{"benchmark": "a", "case_keys": ["a|{}|n1/gpu99999999999[x]"]}])",  // index too big
        R"([{"benchmark": "a", "surprise": 1}])", R"([{"benchmark": 7}])", R"({})"}) {
    std::ofstream(dir + "/run.json") << base << plan << "}";
    EXPECT_FALSE(read_run_json_fast(dir + "/run.json", true).has_value()) << plan;
    EXPECT_FALSE(read_run_json_fast(dir + "/run.json", false).has_value()) << plan;
  }
  std::ofstream(dir + "/run.json") << base << "[]} trailing";
  EXPECT_FALSE(read_run_json_fast(dir + "/run.json", true).has_value());
  std::ofstream(dir + "/run.json") << base << R"([], "run_id": "again"})";  // a repeated key
  EXPECT_FALSE(read_run_json_fast(dir + "/run.json", true).has_value());
  // The out-of-range GPU index is named by the ordinary reader, the plan read or not.
  std::ofstream(dir + "/run.json")
      << base << R"([{"benchmark": "a", "case_keys": ["a|{}|n1/gpu99999999999[x]"]}]})";
  std::string m = input_error([&] { read_run_dir(dir, true); });
  EXPECT_NE(m.find("GPU index out of range"), std::string::npos) << m;
}

TEST(ReadRunDir, FixtureAndErrors) {
  RunDir rd = read_run_dir(kResults + "cpu-pass");
  EXPECT_EQ(rd.run.run_id, "20261130T084500Z-node01");
  EXPECT_EQ(rd.run.hosts, (std::vector<std::string>{"node01", "node02"}));
  EXPECT_EQ(rd.records.records.size(), 6u);
  EXPECT_EQ(rd.run.spec.selected_by, "auto: no NVIDIA GPU on the PCI bus");
  ASSERT_TRUE(rd.run.exit_code.has_value());
  EXPECT_EQ(*rd.run.exit_code, 0);

  RunDir ab = read_run_dir(kResults + "aborted");
  EXPECT_TRUE(ab.run.aborted);
  ASSERT_TRUE(ab.records.records[2].error.has_value());
  EXPECT_EQ(ab.records.records[2].error->where, "collectives/mpi_backend.cpp:74");

  EXPECT_NE(input_error([] { read_run_dir(kResults + "no-such-run"); }).find("does not exist"),
            std::string::npos);
  std::string empty = temp_dir("empty");
  EXPECT_NE(input_error([&] { read_run_dir(empty); }).find("no run.json here"), std::string::npos);

  // A run.json with a plan but no records.jsonl: killed before the first case finished.
  std::string early = temp_dir("early");
  std::filesystem::copy_file(kResults + "gpu-killed/run.json", early + "/run.json");
  RunDir e = read_run_dir(early);
  EXPECT_TRUE(e.records.records.empty());
  ASSERT_EQ(e.records.warnings.size(), 1u);
  EXPECT_NE(e.records.warnings[0].find("records.jsonl: missing; no case finished"),
            std::string::npos);

  // A schema error names the directory's run.json, with and without the plan read.
  std::string future = temp_dir("future");
  std::ofstream(future + "/run.json") << R"({"schema": "clusterbench.run/9", "run_id": "x"})";
  for (bool plan : {true, false}) {
    std::string m = input_error([&] { read_run_dir(future, plan); });
    EXPECT_EQ(m.rfind(future + "/run.json: schema 'clusterbench.run/9' is not", 0), 0u) << m;
  }
  // A byte that is not UTF-8 is named the same way whether the plan is read (report) or
  // skipped while streaming (compare).
  std::ofstream(future + "/run.json")
      << "{\"schema\": \"clusterbench.run/1\",\n\"run_id\": \"x\xff\"}";
  for (bool plan : {true, false}) {
    std::string m = input_error([&] { read_run_dir(future, plan); });
    EXPECT_EQ(m, future + "/run.json: line 2, column 13: byte 0xFF is not UTF-8") << plan;
  }
}

TEST(ReadJsonFile, ParseErrorNamesFileAndLine) {
  std::string path = temp_dir("json") + "/run.json";
  std::ofstream(path) << "{\n  \"schema\": \"clusterbench.run/1\",\n  \"run_id\": \n}\n";
  std::string m = input_error([&] { read_json_file(path); });
  EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
  EXPECT_NE(m.find("line 4"), std::string::npos) << m;
  // Bytes that are not UTF-8 are named, not quoted.
  std::ofstream(path) << "{\n  \"schema\": \"clusterbench.run/1\",\n  \"run_id\": \"r\xff\"\n}\n";
  m = input_error([&] { read_json_file(path); });
  EXPECT_EQ(m, path + ": line 3, column 15: byte 0xFF is not UTF-8");
}

TEST(Files, WriteFileAtomicAndSha256) {
  std::string dir = temp_dir("atomic");
  write_file_atomic(dir + "/a.txt", "abc");
  EXPECT_EQ(slurp(dir + "/a.txt"), "abc");
  write_file_atomic(dir + "/a.txt", "replaced");
  EXPECT_EQ(slurp(dir + "/a.txt"), "replaced");
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) (void)entry, ++files;
  EXPECT_EQ(files, 1);
  EXPECT_THROW(write_file_atomic(dir + "/no/such/dir/a.txt", "x"), std::runtime_error);

  // FIPS 180-4 test vectors.
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  write_file_atomic(dir + "/a.txt", "abc");
  EXPECT_EQ(sha256_file(dir + "/a.txt"), sha256_hex("abc"));
  EXPECT_THROW(sha256_file(dir + "/missing"), InputError);
}

TEST(Units, Known) {
  for (const char* u : {"GB/s", "Gb/s", "TFLOP/s", "us", "s", "B", "GiB", "TB", "IOPS", "samples/s",
                        "C", "W", "MHz", "%", "count", "ratio"})
    EXPECT_TRUE(is_known_unit(u)) << u;
  EXPECT_FALSE(is_known_unit("MB/s"));
  EXPECT_FALSE(is_known_unit("GiB/s"));
  EXPECT_FALSE(is_known_unit("gb/s"));
}

TEST(UtcNow, Iso8601) {
  std::string t = utc_now_iso();
  ASSERT_EQ(t.size(), 20u);
  EXPECT_EQ(t[4], '-');
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t.back(), 'Z');
}

}  // namespace
}  // namespace clusterbench

// The report's files are written all or none (reports::write_reports): one that cannot be written
// leaves neither the others nor a temporary file, and replaces nothing that was there.
TEST(WriteFilesAtomic, OneFailureWritesNoneAndLeavesNoTemporary) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cb-wfa-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string a = (dir / "report.md").string(), b = (dir / "report.json").string();
  clusterbench::write_file_atomic(a, "old\n");
  EXPECT_THROW(clusterbench::write_files_atomic(
                   {{a, "new\n"}, {b, "{}\n"}, {(dir / "no/such").string(), "x"}}),
               std::runtime_error);
  std::ifstream in(a);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "old\n");
  EXPECT_FALSE(fs::exists(b));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"report.md"});
  clusterbench::write_files_atomic({{a, "new\n"}, {b, "{}\n"}});
  EXPECT_TRUE(fs::exists(b));
  fs::remove_all(dir);
}

// Issue 46: a NUL in a spec string cut the error message where it was printed as a C string.
TEST(InputErrors, ANulInTheMessageIsShownNotACut) {
  const clusterbench::InputError e(std::string("spec row 'a\0b': field 'op' is 'x'", 33));
  EXPECT_EQ(std::string(e.what()), "spec row 'a\\0b': field 'op' is 'x'");
}
