// test.health_inject (tests only, clusterbench_testbin): makes health counters rise during a run,
// the way a failing GPU, link or port does, for tests/integration/health_run.sh.
#include <filesystem>
#include <stdexcept>

#include "core/api/benchmark.hpp"

namespace clusterbench::testing {

namespace fs = std::filesystem;

/// test.health_inject: one node-level case that, before its no-op timed operation, copies every
/// regular file of --set test.health_inject.overlay=DIR to the same relative path below the run's
/// --fs-root (links and directories are left as they are). The end snapshot of the health
/// counters then reads the overlay's counters. Without `overlay` it copies nothing. Refuses to
/// write below "/" (a live system).
class HealthInject : public Benchmark {
 public:
  std::string id() const override { return "test.health_inject"; }
  std::string description() const override {
    return "test-only: lays counter files over --fs-root during the run";
  }
  Level level() const override { return Level::node; }
  std::vector<json> cases(const Settings&) const override { return {{{"n", 1}}}; }
  std::string applicable(const NodeEnv&) const override { return ""; }
  void run(CaseRun& run) const override {
    const std::string overlay = overlay_(run.settings());
    const std::string root = run.env().fs_root;
    long long files = 0;
    if (!overlay.empty()) {
      if (root.empty() || fs::equivalent(root, "/"))
        throw std::runtime_error("test.health_inject writes only below a fixture --fs-root");
      for (const auto& e : fs::recursive_directory_iterator(overlay)) {
        if (!e.is_regular_file() || e.is_symlink()) continue;
        const fs::path to = fs::path(root) / fs::relative(e.path(), overlay);
        fs::create_directories(to.parent_path());
        fs::copy_file(e.path(), to, fs::copy_options::overwrite_existing);
        ++files;
      }
    }
    run.exec([](long long) { return 1e-6; });
    run.add_metric("files", static_cast<double>(files), "count");
  }

 private:
  Knob<std::string> overlay_ =
      knobs_.text("overlay", "",
                  "directory whose files are laid over --fs-root during the case (default: none)");
};
CLUSTERBENCH_REGISTER(HealthInject);

}  // namespace clusterbench::testing
