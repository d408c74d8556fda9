// Benchmarks linked only into the tests' copy of the binary (clusterbench_testbin): a GPU-level
// case that lets the integration tests see how GPU cases are waived or failed on any machine.
#include "benchmark.hpp"
#include "error.hpp"

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
