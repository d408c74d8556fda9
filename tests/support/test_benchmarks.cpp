// Benchmarks linked only into the tests' copy of the binary (clusterbench_testbin): a GPU-level
// case that lets the integration tests see how GPU cases are waived or failed on any machine.
#include <chrono>
#include <thread>

#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"

namespace clusterbench::testing {

/// test.gpu_probe: one GPU-level case whose operation is a host no-op; it measures nothing
/// meaningful and exists to exercise the GPU disposition (waived/failed) and per-rank records.
class GpuProbe : public Benchmark {
 public:
  std::string id() const override { return "test.gpu_probe"; }
  std::string description() const override { return "test-only GPU-level case"; }
  Level level() const override { return Level::gpu; }
  bool needs_gpu() const override { return true; }
  std::vector<json> cases(const Settings&) const override { return {{{"n", 1}}}; }
  std::string applicable(const NodeEnv&) const override { return ""; }
  void run(CaseRun& run) const override {
    run.exec([](long long) { return 1e-6; });
    run.add_metric("rate", 1.0 / run.stats().median, "count");
  }
};
CLUSTERBENCH_REGISTER(GpuProbe);

}  // namespace clusterbench::testing

namespace clusterbench::testing {

/// test.hang: a cluster case in which one rank (--set test.hang.rank=R, default 0) stalls for
/// --set test.hang.seconds=S inside its timed operation while its peers wait in the lock-step
/// reduction: the shape of a hung collective, for the watchdog tests. Preceded by test.quick, a
/// case that finishes, so the tests can check that earlier records survive an abort.
class Hang : public Benchmark {
 public:
  std::string id() const override { return "test.hang"; }
  std::string description() const override { return "test-only stalled cluster case"; }
  Level level() const override { return Level::cluster; }
  std::vector<json> cases(const Settings& s) const override { return {{{"seconds", seconds_(s)}}}; }
  std::string applicable(const NodeEnv&) const override { return ""; }
  void run(CaseRun& run) const override {
    int stall_rank = static_cast<int>(rank_(run.settings()));
    double seconds = run.params().at("seconds");
    run.exec([&](long long) {
      if (run.ctx().world_rank() == stall_rank)
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      return 1e-3;
    });
    run.add_metric("rate", 1.0 / run.stats().median, "count");
  }

 private:
  Knob<long long> rank_ = knobs_.integer("rank", "0", "", "the world rank that stalls");
  Knob<double> seconds_ =
      knobs_.number("seconds", "3600", "s", "how long it stalls inside its timed operation");
};
/// test.quick: a cluster case that finishes at once.
class Quick : public Benchmark {
 public:
  std::string id() const override { return "test.quick"; }
  std::string description() const override { return "test-only case that finishes"; }
  Level level() const override { return Level::cluster; }
  std::vector<json> cases(const Settings&) const override { return {{{"n", 1}}}; }
  std::string applicable(const NodeEnv&) const override { return ""; }
  void run(CaseRun& run) const override {
    run.exec([](long long n) { return 1e-3 * static_cast<double>(n); });
    run.add_metric("rate", 1.0 / run.stats().median, "count");
  }
};
CLUSTERBENCH_REGISTER(Quick);
CLUSTERBENCH_REGISTER(Hang);  // after test.quick: registry order is run order

}  // namespace clusterbench::testing
