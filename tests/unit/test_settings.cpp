// Settings (--suite, --set), sizes, --only globs and the registry.
#include <gtest/gtest.h>

#include <fstream>

#include "core/api/benchmark.hpp"
#include "core/api/gpu_disposition.hpp"
#include "core/rounds.hpp"
#include "core/selection.hpp"
#include "core/session.hpp"
#include "records/spec.hpp"
#include "records/utf8.hpp"

using namespace clusterbench;

TEST(ParseSize, BinarySuffixesAsNcclTests) {
  EXPECT_EQ(parse_size("8", "x"), 8);
  EXPECT_EQ(parse_size("4K", "x"), 4096);
  EXPECT_EQ(parse_size("64M", "x"), 64LL * 1024 * 1024);
  EXPECT_EQ(parse_size("8G", "x"), 8LL * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_size("1.5K", "x"), 1536);
  EXPECT_THROW(parse_size("12Q", "--set a.b"), InputError);
  EXPECT_THROW(parse_size("big", "--set a.b"), InputError);
  try {
    parse_size("12Q", "--set a.b");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--set a.b: '12Q' has an unknown suffix 'Q'"),
              std::string::npos);
  }
}

TEST(Settings, BenchmarkKeyWinsOverAreaKey) {
  Settings s("quick", {"collectives.path=network", "collectives.all_reduce.path=nvlink",
                       "collectives.all_reduce.maxbytes=1G"});
  EXPECT_EQ(s.get("collectives.all_reduce", "path", "x"), "nvlink");
  EXPECT_EQ(s.get("collectives.broadcast", "path", "x"), "network");
  EXPECT_EQ(s.get("compute.gemm", "path", "x"), "x");
  EXPECT_EQ(s.get_size("collectives.all_reduce", "maxbytes", 0), 1LL << 30);
  EXPECT_EQ(s.by_suite(1, 2, 3), 2);
}

TEST(Settings, TypedValuesAndErrors) {
  Settings s("ci",
             {"compute.memory_bandwidth.threads=4", "compute.memory_bandwidth.kernels=copy,triad",
              "compute.memory_bandwidth.min_time=abc"});
  EXPECT_DOUBLE_EQ(s.get_double("compute.memory_bandwidth", "threads", 1), 4);
  EXPECT_EQ(s.get_list("compute.memory_bandwidth", "kernels", {}),
            (std::vector<std::string>{"copy", "triad"}));
  EXPECT_THROW(s.get_double("compute.memory_bandwidth", "min_time", 0), InputError);
  EXPECT_THROW(Settings("nightly", {}), InputError);
  EXPECT_THROW(Settings("ci", {"noequals"}), InputError);
  EXPECT_THROW(Settings("ci", {"nodot=1"}), InputError);
}

TEST(Settings, ChoiceAndChoices) {
  Settings s("ci", {"io.dataloader.in_order=false", "io.dataloader.cache=tepid",
                    "network.tuning.effects=thp_madvise,hugetlb,bogus"});
  EXPECT_EQ(s.get_choice("io.dataloader", "in_order", {"true", "false"}), "false");
  EXPECT_EQ(s.get_choice("io.dataloader", "direct", {"false", "true"}), "false");  // default
  try {
    s.get_choice("io.dataloader", "cache", {"warm", "cold"});
    FAIL() << "tepid accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--set io.dataloader.cache: unknown value 'tepid' (warm, cold)");
  }
  try {
    s.get_choices("network.tuning", "effects", {"thp_madvise", "hugetlb"});
    FAIL() << "bogus accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "--set network.tuning.effects: unknown value 'bogus' (thp_madvise, hugetlb)");
  }
}

TEST(Only, GlobsSelectAndUnknownPatternsListKnownBenchmarks) {
  EXPECT_TRUE(glob_match("compute.*", "compute.memory_bandwidth"));
  EXPECT_FALSE(glob_match("collectives.*", "compute.memory_bandwidth"));
  // Every registered benchmark but the burn-in's soak, which only the burnin suite runs, and the
  // training step, which the quick and full suites run.
  auto all = select_benchmarks({});
  EXPECT_EQ(all.size(), Registry::get().all().size() - 2);
  for (const Benchmark* b : all) EXPECT_NE(b->id(), "burnin.soak");
  for (const Benchmark* b : all) EXPECT_NE(b->id(), "compute.training_step");
  EXPECT_EQ(select_benchmarks({}, "quick").size(), Registry::get().all().size() - 1);
  auto burnin = select_benchmarks({}, "burnin");
  ASSERT_EQ(burnin.size(), 1u);
  EXPECT_EQ(burnin[0]->id(), "burnin.soak");
  auto some = select_benchmarks({"compute.memory_*"});
  ASSERT_EQ(some.size(), 1u);
  EXPECT_EQ(some[0]->id(), "compute.memory_bandwidth");
  try {
    select_benchmarks({"nosuch.*"});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("'nosuch.*' matches no benchmark"), std::string::npos) << what;
    EXPECT_NE(what.find("compute.memory_bandwidth"), std::string::npos) << what;
  }
}

TEST(Only, GlobsAreSplitAtCommasAndTrimmed) {
  EXPECT_EQ(split_globs({"compute.*,io.fio", "collectives.*"}),
            (std::vector<std::string>{"compute.*", "io.fio", "collectives.*"}));
  EXPECT_EQ(split_globs({"compute.*, io.fio ", "a,,b,"}),
            (std::vector<std::string>{"compute.*", "io.fio", "a", "b"}));
  EXPECT_TRUE(split_globs({}).empty());
  for (const std::string bad : {",", "", " , ,"}) {
    try {
      split_globs({"io.fio", bad});
      FAIL() << "expected InputError for '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "--only '" + bad +
                                           "' holds no glob (globs are separated by spaces or "
                                           "commas, e.g. --only 'compute.*,io.fio')");
    }
  }
}

TEST(Only, MpiThreadsOnlyWhereACaseCallsMpiFromASecondThread) {
  // The burn-in's all_reduce thread and the training step's gradient thread call MPI; nothing
  // else does, so every other selection starts MPI at MPI_THREAD_SINGLE.
  for (const auto& b : Registry::get().all())
    EXPECT_EQ(b->calls_mpi_from_threads(),
              b->id() == "burnin.soak" || b->id() == "compute.training_step")
        << b->id();
  EXPECT_FALSE(run_needs_mpi_threads({}, "ci", false));  // ci has no training step
  EXPECT_TRUE(run_needs_mpi_threads({}, "quick", false));
  EXPECT_TRUE(run_needs_mpi_threads({}, "burnin", false));
  EXPECT_FALSE(run_needs_mpi_threads({"collectives.*"}, "quick", false));
  EXPECT_TRUE(run_needs_mpi_threads({"collectives.*", "compute.*"}, "quick", false));
  // A resume reads its plan later; a pattern that selects nothing is the run's error to report.
  EXPECT_TRUE(run_needs_mpi_threads({"collectives.*"}, "ci", true));
  EXPECT_TRUE(run_needs_mpi_threads({"nosuch.*"}, "ci", false));
}

TEST(Rounds, WhichCasesRunInRounds) {
  // The host-side measurements that measure the same thing each time: STREAM, OpenBLAS GEMM, the
  // dataloader, MPI collectives, fio (its runs split over the rounds). Not tuning (it changes the
  // host), GPU cases, the training step or the burn-in.
  const Registry& reg = Registry::get();
  for (const char* id : {"compute.memory_bandwidth", "io.dataloader", "compute.gemm",
                         "collectives.all_reduce", "io.fio", "compute.training_step"})
    ASSERT_NE(reg.find(id), nullptr) << id;
  EXPECT_TRUE(reg.find("compute.memory_bandwidth")->in_rounds({{"kernel", "triad"}}));
  EXPECT_TRUE(reg.find("io.dataloader")->in_rounds({{"workers", 4}}));
  EXPECT_TRUE(reg.find("compute.gemm")->in_rounds({{"backend", "openblas"}, {"dtype", "fp32"}}));
  EXPECT_FALSE(reg.find("compute.gemm")->in_rounds({{"backend", "cublaslt"}, {"dtype", "fp16"}}));
  EXPECT_TRUE(reg.find("collectives.all_reduce")->in_rounds({{"backend", "mpi"}, {"bytes", 8}}));
  EXPECT_FALSE(reg.find("collectives.all_reduce")->in_rounds({{"backend", "nccl"}, {"bytes", 8}}));
  for (const auto& b : reg.all()) {  // nothing else
    const std::string id = b->id();
    if (id.rfind("collectives.", 0) == 0 || id == "compute.gemm") continue;
    EXPECT_EQ(b->in_rounds({{"profile", "seq_read"}}),
              id == "compute.memory_bandwidth" || id == "io.dataloader" || id == "io.fio")
        << id;
  }
  // One round's --set values: min_time / rounds, or for fio its runs split (rounded up).
  using Sets = std::map<std::string, std::string>;
  EXPECT_EQ(reg.find("compute.memory_bandwidth")->round_sets(Settings("ci", {}), 5),
            (Sets{{"compute.memory_bandwidth.min_time", "0.01"}}));
  EXPECT_EQ(reg.find("collectives.all_reduce")->round_sets(Settings("quick", {}), 4),
            (Sets{{"collectives.all_reduce.min_time", "0.125"}}));
  EXPECT_EQ(reg.find("io.fio")->round_sets(Settings("ci", {}), 5), (Sets{{"io.fio.repeat", "1"}}));
  EXPECT_EQ(reg.find("io.fio")->round_sets(Settings("ci", {"io.fio.repeat=7"}), 5),
            (Sets{{"io.fio.repeat", "2"}}));
  // fio's estimate: set-up 0.3 s and the 1 GiB file's layout at 250 MB/s once a case, then per
  // run 0.6 s (fio's start) + ramp 0.5 s + runtime 1.5 s; a round of 5 lays the file out again
  // for its 1 run.
  const Settings quick("quick", {}), round = quick.with("io.fio.repeat", "1");
  const double layout = 1073741824 / 250e6;
  EXPECT_NEAR(reg.find("io.fio")->estimate_s(quick, {}), 0.3 + layout + 5 * 2.6, 1e-9);
  EXPECT_NEAR(reg.find("io.fio")->estimate_s(round, {}), 0.3 + layout + 2.6, 1e-9);
  // A round's settings: min_time / rounds for that benchmark only.
  Settings s("ci", {});
  Settings r = s.with("compute.memory_bandwidth.min_time", "0.01");
  EXPECT_DOUBLE_EQ(reg.find("compute.memory_bandwidth")->min_time(r), 0.01);
  EXPECT_DOUBLE_EQ(reg.find("compute.memory_bandwidth")->min_time(s), 0.05);
  EXPECT_DOUBLE_EQ(reg.find("io.dataloader")->min_time(r), 0.05);
}

namespace {
ResultRecord round_record(const std::string& key, double bw, double best, double wrong,
                          double time_median, double c2c) {
  ResultRecord r;
  r.benchmark = "compute.memory_bandwidth";
  r.case_key = key;
  r.status = Status::ok;
  r.started_at = "t" + std::to_string(static_cast<int>(bw));
  r.duration_s = 0.5;
  r.metrics = {Metric("bandwidth", bw, "GB/s", true, {bw - 1, bw, bw + 1}),
               Metric("bandwidth_best", best, "GB/s"), Metric("wrong", wrong, "count", false),
               Metric("wait_p99", 2 * bw, "us", false)};
  r.time.n = 3;
  r.time.median = time_median;
  r.extra = {{"host_probe", {{"cpu_mops", 900}, {"cpu_share", c2c / 100}, {"c2c_ns", {c2c, c2c}}}}};
  return r;
}
}  // namespace

TEST(Rounds, MergeTakesOneRepetitionPerRound) {
  // Five rounds of one case, values worked by hand: bandwidth 30, 50, 40, 10, 20 GB/s.
  std::vector<std::vector<ResultRecord>> rounds;
  const double bw[] = {30, 50, 40, 10, 20}, best[] = {31, 52, 41, 12, 21},
               c2c[] = {60, 300, 70, 310, 65};
  for (int k = 0; k < 5; ++k)
    rounds.push_back({round_record("a", bw[k], best[k], k == 3, 1e-3 * (k + 1), c2c[k])});
  auto merged = merge_rounds(rounds, 5, true);
  ASSERT_EQ(merged.size(), 1u);
  const ResultRecord& m = merged[0];
  EXPECT_DOUBLE_EQ(m.metrics[0].value, 30);  // median of the five
  EXPECT_EQ(m.metrics[0].reps, (std::vector<double>{30, 50, 40, 10, 20}));
  EXPECT_DOUBLE_EQ(m.metrics[1].value, 52);  // the best of the rounds, no reps
  EXPECT_TRUE(m.metrics[1].reps.empty());
  EXPECT_DOUBLE_EQ(m.metrics[2].value, 1);   // counts add up: one wrong result in round 4
  EXPECT_DOUBLE_EQ(m.metrics[3].value, 60);  // no repetitions in a round: the median, none after
  EXPECT_TRUE(m.metrics[3].reps.empty());
  EXPECT_EQ(m.time.n, 5);
  EXPECT_DOUBLE_EQ(m.time.median, 3e-3);
  EXPECT_DOUBLE_EQ(m.duration_s, 2.5);
  EXPECT_EQ(m.started_at, "t30");
  EXPECT_EQ(m.extra["rounds"]["planned"], 5);
  EXPECT_EQ(m.extra["rounds"]["run"], 5);
  EXPECT_EQ(m.extra["rounds"]["values"]["bandwidth"], json({30, 50, 40, 10, 20}));
  EXPECT_EQ(m.extra["rounds"]["c2c_ns"][1], json({300, 300}));
  EXPECT_FALSE(m.extra["host_probe"].contains("c2c_ns"));
  EXPECT_DOUBLE_EQ(m.extra["host_probe"]["cpu_share"].get<double>(), 0.70);  // median of shares
  EXPECT_FALSE(m.extra.contains("snapshot"));
}

// io.fio's extra.disk_load over rounds: the bytes add up and the share is of the sums.
TEST(Rounds, DiskLoadBytesAddUpOverTheRounds) {
  std::vector<std::vector<ResultRecord>> rounds;
  const long long disk[] = {100, 100, 300}, own[] = {100, 100, 100};
  for (int k = 0; k < 3; ++k) {
    ResultRecord r = round_record("f", 10 + k, 11, 0, 1e-3, 60);
    r.extra["disk_load"] = {{"disk", "vda"},
                            {"disk_bytes", disk[k]},
                            {"fio_bytes", own[k]},
                            {"other_bytes", disk[k] - own[k]},
                            {"fio_share", static_cast<double>(own[k]) / disk[k]}};
    rounds.push_back({r});
  }
  const json load = merge_rounds(rounds, 3, true)[0].extra["disk_load"];
  EXPECT_EQ(load["disk"], "vda");
  EXPECT_EQ(load["disk_bytes"], 500);
  EXPECT_EQ(load["fio_bytes"], 300);
  EXPECT_EQ(load["other_bytes"], 200);
  EXPECT_DOUBLE_EQ(load["fio_share"].get<double>(), 0.6);
  // A round whose disk was not read: the reason stands, no sum is made up.
  rounds[1][0].extra["disk_load"] = {{"disk", "vda"}, {"reason", "/proc/diskstats has no line"}};
  const json part = merge_rounds(rounds, 3, true)[0].extra["disk_load"];
  EXPECT_FALSE(part.contains("fio_share")) << part;
  EXPECT_EQ(part["reason"], "/proc/diskstats has no line");
}

// The failed record that a rank other than 0 writes takes the case's earlier rounds from its
// last snapshot in records.jsonl: the latest of that case key, not another case's, past a torn
// line.
TEST(Rounds, SnapshotRoundsFromTheRecordsFile) {
  const std::string path = ::testing::TempDir() + "cb_snapshot_rounds.jsonl";
  auto line = [](const std::string& key, int run, bool snapshot) {
    std::vector<std::vector<ResultRecord>> rounds;
    for (int k = 0; k < run; ++k) rounds.push_back({round_record(key, 10 + k, 11, 0, 1e-3, 60)});
    ResultRecord r = merge_rounds(rounds, 5, !snapshot).front();
    return dump_json(json(r)) + "\n";
  };
  {
    std::ofstream out(path);
    out << line("a|{\"kernel\":\"copy\"}|vm", 1, true) << line("b", 2, true)
        << line("a|{\"kernel\":\"copy\"}|vm", 2, true) << line("c", 5, false)
        << "{\"case_key\":\"a|{\\\"kernel\\\"";  // torn
  }
  const json a = snapshot_rounds(path, "a|{\"kernel\":\"copy\"}|vm");
  ASSERT_TRUE(a.is_object()) << a;
  EXPECT_EQ(a["run"], 2);
  EXPECT_EQ(a["values"]["bandwidth"], json({10, 11}));
  EXPECT_EQ(snapshot_rounds(path, "b")["run"], 2);
  EXPECT_TRUE(snapshot_rounds(path, "c").is_null());  // final, not a snapshot
  EXPECT_TRUE(snapshot_rounds(path, "d").is_null());
  EXPECT_TRUE(snapshot_rounds(path + ".absent", "a").is_null());
}

TEST(Rounds, SnapshotsUntilTheLastRoundAndAFailedRoundStands) {
  std::vector<std::vector<ResultRecord>> rounds = {
      {round_record("a", 10, 11, 0, 1e-3, 60), round_record("b", 20, 21, 0, 1e-3, 60)},
      {round_record("a", 14, 15, 0, 1e-3, 60), round_record("b", 22, 23, 0, 1e-3, 60)}};
  auto partial = merge_rounds(rounds, 5, false);
  ASSERT_EQ(partial.size(), 2u);
  EXPECT_TRUE(partial[0].extra.value("snapshot", false));
  EXPECT_DOUBLE_EQ(partial[0].metrics[0].value, 12);  // median of 10 and 14
  EXPECT_EQ(partial[1].metrics[0].reps, (std::vector<double>{20, 22}));
  EXPECT_EQ(partial[1].extra["rounds"]["run"], 2);
  // The run ended after two rounds (--time-limit): the final record has n = 2.
  auto ended = merge_rounds(rounds, 5, true);
  EXPECT_FALSE(ended[0].extra.contains("snapshot"));
  // Round 3 fails case b: its failed record stands for the case, saying which round.
  ResultRecord failed = round_record("b", 0, 0, 0, 0, 60);
  failed.status = Status::failed;
  failed.message = "wrong result";
  rounds.push_back({round_record("a", 12, 13, 0, 1e-3, 60), failed});
  auto merged = merge_rounds(rounds, 5, false);
  EXPECT_EQ(merged[1].status, Status::failed);
  EXPECT_EQ(merged[1].message, "round 3 of 5: wrong result");
  EXPECT_EQ(merged[0].metrics[0].reps, (std::vector<double>{10, 14, 12}));
}

TEST(Suites, MinTimePerSuite) {
  EXPECT_DOUBLE_EQ(suite_min_time("ci"), 0.05);
  EXPECT_DOUBLE_EQ(suite_min_time("quick"), 0.5);
  EXPECT_DOUBLE_EQ(suite_min_time("full"), 2.0);
}

TEST(GpuDisposition, WaivedWithoutGpuFailedWhenNvmlFails) {
  EnvRecord none;
  none.fs_root = "/";
  auto d = gpu_disposition(none, false);
  EXPECT_EQ(d.state, GpuState::waived);
  EXPECT_EQ(d.reason, "no NVIDIA GPU on the PCI bus");

  EnvRecord broken;
  broken.gpu_status.on_pci = 8;
  broken.gpu_status.nvml = "nvmlInit: Driver Not Loaded";
  d = gpu_disposition(broken, false);
  if (CLUSTERBENCH_HAVE_NVML) {
    EXPECT_EQ(d.state, GpuState::failed);
    EXPECT_EQ(d.reason, "NVIDIA GPUs on the PCI bus but NVML failed: nvmlInit: Driver Not Loaded");
  }
}

// The console's "about N s left" (issue 45, item 5): cases that ran count what they took, the
// others their estimates scaled by how far the measured ones ran over theirs.
TEST(TimeLeft, MeasuredRoundsMoveTheEstimate) {
  // Three cases: a one-shot (10 s) and two round cases (20 s and 30 s a round), 5 rounds.
  std::vector<CaseCost> plan = {{true, false, 10, -1}, {true, true, 20, -1}, {true, true, 30, -1}};
  // Nothing measured: after case 0 of round 1, 20 + 30 this round and 4 more rounds of 50.
  EXPECT_DOUBLE_EQ(time_left(plan, 0, 1, 5), 50 + 4 * 50);
  // Case 0 took 30 s (3x its estimate): the estimates of the rest are 3x too.
  plan[0].measured_s = 30;
  EXPECT_DOUBLE_EQ(time_left(plan, 0, 1, 5), 150 + 4 * 150);
  // Both round cases measured in round 1 (40 and 30 s): rounds 2..5 cost 70 s each.
  plan[1].measured_s = 40, plan[2].measured_s = 30;
  EXPECT_DOUBLE_EQ(time_left(plan, 2, 1, 5), 4 * 70);
  // In round 3 after case 1: case 2 of this round (30 s) and two more rounds.
  EXPECT_DOUBLE_EQ(time_left(plan, 1, 3, 5), 30 + 2 * 70);
  // The last round's last case: nothing left; a case resumed from an earlier run counts nothing.
  EXPECT_DOUBLE_EQ(time_left(plan, 2, 5, 5), 0);
  plan[2].to_run = false;
  EXPECT_DOUBLE_EQ(time_left(plan, 1, 4, 5), 40);
  // The scale stays within 0.25..8: a case 100x over its estimate moves the others 8x.
  std::vector<CaseCost> slow = {{true, false, 1, 100}, {true, false, 10, -1}};
  EXPECT_DOUBLE_EQ(time_left(slow, 0, 1, 1), 80);
}
