// Settings (--suite, --set), sizes, --only globs and the registry.
#include <gtest/gtest.h>

#include "core/benchmark.hpp"
#include "core/gpu_disposition.hpp"
#include "core/session.hpp"
#include "records/spec.hpp"

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
