// The run session (bench/core/session.hpp) and the watchdog, without mpirun: a one-process
// Context (Context::init_local), test benchmarks in a registry of their own, a fixture tree for
// the inventory and a report hook that records its call.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/api/error.hpp"
#include "core/case_runner.hpp"
#include "core/session.hpp"
#include "core/sink.hpp"
#include "core/watchdog.hpp"
#include "records/spec.hpp"

namespace clusterbench {
namespace {

namespace fs = std::filesystem;

/// A node case timed by the loop: 1 ms per operation; its `bytes` knob goes into the record.
class TestOk : public Benchmark {
 public:
  std::string id() const override { return "test.ok"; }
  std::string description() const override { return "times 1 ms operations"; }
  Level level() const override { return Level::node; }
  std::vector<json> cases(const Settings&) const override { return {{{"k", 1}}, {{"k", 2}}}; }
  std::string applicable(const NodeEnv&) const override { return ""; }
  void run(CaseRun& run) const override {
    run.exec([](long long n) { return static_cast<double>(n) * 1e-3; });
    run.add_metric("rate", 1.0 / run.stats().median, "count");
    run.set_extra("bytes", bytes_(run.settings()));
  }

 private:
  Knob<long long> bytes_ = knobs_.size("bytes", SuiteDefault("1K", "2K", "4K"), "test bytes");
};

/// Each of these ends its case one way.
class TestEnds : public Benchmark {
 public:
  explicit TestEnds(std::string how) : how_(std::move(how)) {}
  std::string id() const override { return "test." + how_; }
  std::string description() const override { return "ends " + how_; }
  Level level() const override { return how_ == "gpu" ? Level::gpu : Level::node; }
  bool needs_gpu() const override { return how_ == "gpu"; }
  std::vector<json> cases(const Settings&) const override { return {json::object()}; }
  std::string applicable(const NodeEnv&) const override {
    return how_ == "waived" ? "no such device here" : "";
  }
  void run(CaseRun&) const override {
    if (how_ == "fails") throw std::runtime_error("broken pipe");
    if (how_ == "refused") throw Refused("the target is in use");
  }

 private:
  std::string how_;
};

/// A rank-level case whose params carry its node's host (Benchmark::params_on).
class TestPerNode : public Benchmark {
 public:
  std::string id() const override { return "test.pernode"; }
  std::string description() const override { return "params per node"; }
  Level level() const override { return Level::rank; }
  std::vector<json> cases(const Settings&) const override { return {json::object()}; }
  json params_on(const json&, const EnvRecord& env, const Settings&) const override {
    return {{"host", env.host}};
  }
  std::string applicable(const NodeEnv&) const override { return ""; }
  void run(CaseRun& run) const override { run.set_extra("seen", run.params()); }
};

/// A case whose check refuses the options on this node.
class TestBadCheck : public TestEnds {
 public:
  TestBadCheck() : TestEnds("check") {}
  void check(const json&, const NodeEnv&) const override {
    throw InputError("--set test.check.x: not on this node");
  }
};

std::vector<json> read_records_of(const std::string& dir) {
  std::vector<json> out;
  std::ifstream in(dir + "/records.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

class SessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("CLUSTERBENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so", 1);
    Context::init_local("node07");
  }
  void SetUp() override {
    dir_ = testing::TempDir() + "/session-" + std::to_string(getpid()) + "-" +
           testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    registry_.add(std::make_unique<TestOk>());
    for (const char* how : {"waived", "fails", "refused", "gpu"})
      registry_.add(std::make_unique<TestEnds>(how));
    registry_.add(std::make_unique<TestPerNode>());
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunOptions options() const {
    RunOptions o;
    o.out_dir = dir_;
    o.fs_root = std::string(CB_FIXTURES) + "/fsroot/meminfo-only";
    o.argv = {"clusterbench", "run"};
    return o;
  }
  RunHooks hooks(int code) {
    RunHooks h;
    h.choose_spec = [](const std::vector<EnvRecord>&) {
      return SpecChoice{std::string(CB_FIXTURES) + "/specs/cpu-node.json", "", "", "auto: test"};
    };
    h.check_output = [](const std::string&, const std::string&, const std::string&) {};
    h.report = [this, code](const std::string& dir, const std::string&) {
      reported_.push_back(dir);
      return code;
    };
    return h;
  }

  std::string dir_;
  Registry registry_;
  std::vector<std::string> reported_;
};

TEST_F(SessionTest, PlanSetupCasesFinishEachWriteTheirPart) {
  RunSession s(Context::get(), options(), hooks(1), registry_);
  s.plan();
  EXPECT_FALSE(fs::exists(dir_)) << "the plan writes nothing";
  ASSERT_EQ(s.setup(), 0);
  // run.json before the first case: the plan with every expected case key, the node's EnvRecord.
  json run = read_json_file(dir_ + "/run.json");
  ASSERT_EQ(run["plan"].size(), 7u) << run["plan"].dump();
  EXPECT_EQ(run["plan"][0]["case_keys"][0], "test.ok|{\"k\":1}|node07");
  EXPECT_EQ(run["plan"][6]["case_keys"][0], "test.pernode|{\"host\":\"node07\"}|node07/rank0");
  EXPECT_EQ(run["plan"][6]["level"], "rank");
  EXPECT_EQ(run["env"][0]["host"], "node07");
  EXPECT_EQ(run["spec"]["selected_by"], "auto: test");
  EXPECT_TRUE(run["exit_code"].is_null());
  EXPECT_TRUE(read_records_of(dir_).empty());

  s.run_cases();
  std::vector<json> recs = read_records_of(dir_);
  ASSERT_EQ(recs.size(), 7u);
  std::map<std::string, json> by;
  for (const auto& r : recs) by[r["benchmark"].get<std::string>() + r["params"].dump()] = r;
  const json& ok = by["test.ok{\"k\":1}"];
  EXPECT_EQ(ok["status"], "ok");
  EXPECT_DOUBLE_EQ(ok["time"]["median"].get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(ok["metrics"][0]["value"].get<double>(), 1000);
  EXPECT_EQ(ok["extra"]["bytes"], 1024);  // the ci default of the declared knob
  EXPECT_EQ(ok["extra"]["batch"], 3);     // ceil(2.5 ms / 1 ms)
  EXPECT_EQ(by["test.waived{}"]["status"], "waived");
  EXPECT_EQ(by["test.waived{}"]["message"], "no such device here");
  EXPECT_EQ(by["test.fails{}"]["status"], "failed");
  EXPECT_EQ(by["test.fails{}"]["message"], "broken pipe");
  EXPECT_EQ(by["test.fails{}"]["error"]["host"], "node07");
  EXPECT_EQ(by["test.refused{}"]["status"], "waived");
  EXPECT_EQ(by["test.refused{}"]["extra"]["refused"], true);
  EXPECT_EQ(by["test.gpu{}"]["status"], "waived");
  EXPECT_EQ(by["test.gpu{}"]["message"].get<std::string>().rfind("no NVIDIA GPU on the PCI bus", 0),
            0u);
  EXPECT_EQ(by["test.pernode{\"host\":\"node07\"}"]["scope"]["kind"], "rank");
  EXPECT_EQ(by["test.pernode{\"host\":\"node07\"}"]["extra"]["seen"]["host"], "node07");

  EXPECT_EQ(s.finish(), 1);  // the report hook's verdict is the run's
  ASSERT_EQ(reported_.size(), 1u);
  EXPECT_EQ(reported_[0], dir_);
  run = read_json_file(dir_ + "/run.json");
  EXPECT_EQ(run["exit_code"], 1);
  EXPECT_FALSE(run["finished_at"].get<std::string>().empty());
  EXPECT_FALSE(run["aborted"].get<bool>());
  json gb = read_json_file(dir_ + "/gbench.json");
  ASSERT_EQ(gb["benchmarks"].size(), 2u);
  EXPECT_EQ(gb["benchmarks"][0]["name"].get<std::string>().rfind("test.ok/{\"k\":1}/min_time", 0),
            0u);
}

TEST_F(SessionTest, ADirectoryHoldingARunIsRefusedUntouched) {
  RunSession first(Context::get(), options(), hooks(0), registry_);
  ASSERT_EQ(first.run(), 0);
  const auto size = fs::file_size(dir_ + "/records.jsonl");
  RunSession second(Context::get(), options(), hooks(0), registry_);
  second.plan();
  EXPECT_EQ(second.setup(), 2);
  EXPECT_EQ(fs::file_size(dir_ + "/records.jsonl"), size);
}

TEST_F(SessionTest, ACheckRefusesBeforeAnythingIsWritten) {
  registry_.add(std::make_unique<TestBadCheck>());
  RunOptions o = options();
  o.only = {"test.check"};
  RunSession s(Context::get(), o, hooks(0), registry_);
  s.plan();
  EXPECT_EQ(s.setup(), 2);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(SessionTest, DryRunWritesNothing) {
  RunOptions o = options();
  o.dry_run = true;
  RunSession s(Context::get(), o, hooks(0), registry_);
  EXPECT_EQ(s.run(), 0);
  EXPECT_TRUE(s.dry_run_done());
  EXPECT_FALSE(fs::exists(dir_));
  EXPECT_TRUE(reported_.empty());
}

TEST_F(SessionTest, TimeLimitLeavesCasesUnrunAndSaysWhich) {
  RunOptions o = options();
  o.only = {"test.ok"};
  o.time_limit_s = 0.001;  // shorter than any case's estimate
  RunSession s(Context::get(), o, hooks(0), registry_);
  // The verdict is the report's (reports/ makes it 4 from run.json's time_limit): this hook's 0.
  EXPECT_EQ(s.run(), 0);
  EXPECT_EQ(reported_.size(), 1u);
  EXPECT_TRUE(read_records_of(dir_).empty());
  json run = read_json_file(dir_ + "/run.json");
  ASSERT_EQ(run["time_limit"]["not_run"].size(), 2u) << run.dump();
  EXPECT_EQ(run["time_limit"]["not_run"][1]["params"]["k"], 2);
}

TEST_F(SessionTest, SetKeysAndKnobValuesAreCheckedInThePlan) {
  RunOptions o = options();
  o.set = {"test.ok.nosuch=1"};
  RunSession bad(Context::get(), o, hooks(0), registry_);
  try {
    bad.plan();
    FAIL() << "an unknown knob was accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "--set test.ok.nosuch: test.ok has no such knob (`clusterbench list` shows its "
                 "knobs)");
  }
  o.set = {"test.ok.bytes=4K", "test.ok.min_time=0.01"};
  o.only = {"test.ok"};
  RunSession s(Context::get(), o, hooks(0), registry_);
  ASSERT_EQ(s.run(), 0);
  EXPECT_EQ(read_records_of(dir_)[0]["extra"]["bytes"], 4096);
}

TEST(Watchdog, DeadlineTripAndSignalReachTheHandlerOnce) {
  Context::init_local("node07");
  std::mutex mu;
  std::vector<WatchdogEvent> events;
  {
    Watchdog w([&](const WatchdogEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(e);
      return false;  // go on watching
    });
    w.arm("test.case {}", 0.05);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    w.disarm();
    w.trip("rank 1 on node08 aborted: communicator failed");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::raise(SIGTERM);  // the watchdog's handler, not the default action
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    EXPECT_EQ(Watchdog::signal_received(), SIGTERM);
  }
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, WatchdogEvent::Kind::deadline);
  EXPECT_EQ(events[0].reason,
            "case deadline of 0.05 s passed during test.case {} (hung collective or dead peer?)");
  EXPECT_EQ(events[0].stopped_s, 0);  // the process was not stopped
  EXPECT_EQ(events[1].kind, WatchdogEvent::Kind::trip);
  EXPECT_EQ(events[1].reason, "rank 1 on node08 aborted: communicator failed");
  EXPECT_EQ(events[2].kind, WatchdogEvent::Kind::signal);
  EXPECT_EQ(events[2].reason,
            "terminated by signal SIGTERM (a rank died, or the job was cancelled)");
}

TEST(Watchdog, APhaseDeadlineNamesThePhaseAndItsHint) {
  Context::init_local("node07");
  std::mutex mu;
  std::vector<WatchdogEvent> events;
  {
    Watchdog w([&](const WatchdogEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(e);
      return false;
    });
    w.arm("report", 0.1, "phase", "(rank 0 writes the report)");
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason,
            "phase deadline of 0.1 s passed during report (rank 0 writes the report)");
}

// The record writer process writes in order and confirms each write; once another rank has
// recorded the abort (.abort-recorded), it writes nothing more, and its claim fails.
TEST(Sink, TheWriterProcessWritesInOrderAndStopsAfterAnotherRanksAbort) {
  const std::string dir = testing::TempDir() + "sink-" + std::to_string(::getpid());
  fs::remove_all(dir);
  {
    Sink sink(dir);
    sink.append_line(R"({"n":1})");
    sink.append_line(R"({"n":2})");
    RunRecord run;
    run.run_id = "r1";
    sink.set_run_field("resumes", json::array({1}));
    sink.write_run(run);
    std::ifstream in(dir + "/records.jsonl");
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(all, "{\"n\":1}\n{\"n\":2}\n");
    json j = json::parse(std::ifstream(dir + "/run.json"));
    EXPECT_EQ(j["run_id"], "r1");
    EXPECT_EQ(j["resumes"], json::array({1}));
    // Another rank records the abort first: this writer must not write over it.
    EXPECT_TRUE(claim_abort_marker(dir));
    EXPECT_FALSE(claim_abort_marker(dir));
    EXPECT_FALSE(sink.claim_abort(5));
    EXPECT_THROW(sink.append_line(R"({"n":3})"), std::runtime_error);
  }
  std::ifstream in(dir + "/records.jsonl");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "{\"n\":1}\n{\"n\":2}\n");
  mark_run_json_aborted(dir, "deadline; recorded by rank 1");
  json j = json::parse(std::ifstream(dir + "/run.json"));
  EXPECT_TRUE(j["aborted"].get<bool>());
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["abort_reason"], "deadline; recorded by rank 1");
  EXPECT_EQ(j["run_id"], "r1");  // the rest is kept
  fs::remove_all(dir);
}

// A write the writer fails is reported to the caller with the file and the errno text.
TEST(Sink, AFailedWriteIsReportedWithTheFile) {
  const std::string dir = testing::TempDir() + "sink-fail-" + std::to_string(::getpid());
  fs::remove_all(dir);
  Sink sink(dir);
  fs::create_directory(dir + "/run.json");  // rename(2) over a directory fails: EISDIR
  try {
    sink.write_run(RunRecord{});
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/run.json: write: Is a directory");
  }
  sink.append_line("{}");  // the writer goes on
  fs::remove_all(dir);
}

TEST(Watchdog, CleanupsRunNewestFirstAndOnlyWhileRegistered) {
  std::vector<int> order;
  {
    AbortCleanup gone([&] { order.push_back(0); });
  }
  AbortCleanup first([&] { order.push_back(1); });
  AbortCleanup second([&] { order.push_back(2); });
  run_abort_cleanups();
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
  run_abort_cleanups();  // each runs once
  EXPECT_EQ(order.size(), 2u);
}

TEST(SpecArg, ANameIsLookedUpInTheSpecDirectory) {
  const fs::path dir = fs::path(::testing::TempDir()) / "cb_spec_arg";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "training.json") << "{}";
  set_specs_dir(dir.string());
  EXPECT_EQ(resolve_spec_arg("training"), (dir / "training.json").string());
  EXPECT_EQ(resolve_spec_arg("training.json"), (dir / "training.json").string());
  EXPECT_EQ(resolve_spec_arg("nosuch"), "nosuch");          // the error then names what was given
  EXPECT_EQ(resolve_spec_arg("./training"), "./training");  // a path stays a path
  EXPECT_EQ(resolve_spec_arg(""), "");
  set_specs_dir("");
}

/// A node record of `host` with `status`, as a rank returns it.
ResultRecord rank_record(const std::string& host, Status status) {
  ResultRecord r;
  r.benchmark = "test.case";
  r.scope.kind = ScopeKind::node;
  r.scope.host = host;
  r.status = status;
  r.case_key = make_case_key(r.benchmark, r.params, r.scope);
  return r;
}

// Rank 0 keeps its own records as objects and reads the other ranks' once, from the gather.
TEST(CaseRunner, RecordsToWriteKeepRankZerosAndReadTheOthers) {
  std::vector<ResultRecord> mine = {rank_record("n0", Status::ok)};
  const std::vector<std::string> gathered = {"", records_text({rank_record("n1", Status::ok)}), "",
                                             "not a record"};
  auto out = records_to_write(Level::node, mine, gathered);
  ASSERT_EQ(out.size(), 2u);  // rank 3's line is no record: left out (said on stderr)
  EXPECT_EQ(out[0].scope.host, "n0");
  EXPECT_EQ(out[1].scope.host, "n1");
  EXPECT_EQ(dump_json(json(out[1])), records_text({rank_record("n1", Status::ok)}));
  // A cluster case: the first failed or waived rank's record stands, at cluster scope.
  const std::vector<std::string> cluster = {"", records_text({rank_record("n1", Status::waived)})};
  out = records_to_write(Level::cluster, mine, cluster);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status, Status::waived);
  EXPECT_EQ(out[0].scope.kind, ScopeKind::cluster);
  out = records_to_write(Level::cluster, mine, {"", ""});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].scope.host, "n0");  // every rank ok: rank 0's
}

}  // namespace
}  // namespace clusterbench
