// `clusterbench burnin --minutes N` (docs/burnin.md): the options of a burn-in, then a RunSession
// (core/session.hpp) of the burnin suite, whose one case is compute's burnin.soak.
#include <cstdio>
#include <sstream>

#include "app/command.hpp"
#include "app/report_command.hpp"
#include "compute/burnin_soak.hpp"
#include "core/session.hpp"

namespace clusterbench {

namespace {

/// An integer option not given on the command line (its default applies). Every value a user can
/// give is checked against the option's range instead: 0 is not a default.
constexpr long long kUnset = std::numeric_limits<long long>::min();

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

class BurninCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* cmd = app.add_subcommand("burnin",
                                   "soak every GPU (CPU ranks without GPUs) with GEMM "
                                   "and all_reduce, per-GPU verdicts (docs/burnin.md)");
    cmd->add_option("--minutes", minutes_, "soak length in minutes, fractions allowed")->required();
    cmd->add_option(
        "--spec", o_.spec_path,
        "spec table (default: burnin-cpu.json or burnin-gpu.json of the spec directory)");
    cmd->add_option("--out", o_.out_dir, "run directory (default results/<run-id>)");
    cmd->add_option("--results", o_.results_root, "where default run directories go");
    cmd->add_option("--fs-root", o_.fs_root, "read /sys, /proc, /dev below this root")
        ->check(CLI::ExistingDirectory);
    cmd->add_option("--phase-timeout", o_.phase_timeout_s,
                    "seconds before a phase that is not the soak (start-up, set-up, report) is "
                    "declared hung (default 300)")
        ->check(seconds_validator());
    cmd->add_option("--dtype", dtype_, "GEMM dtype (default bf16 on GPUs, fp32 on CPUs)");
    cmd->add_option("--shape", shape_, "GEMM cube size (default 8192 on GPUs, 256 on CPUs)");
    cmd->add_option("--allreduce-bytes", allreduce_bytes_,
                    "all_reduce size (default 256M with NCCL, 1M with MPI)")
        ->transform([](std::string s) {
          try {
            return std::to_string(parse_size(s, "--allreduce-bytes"));
          } catch (const std::exception& e) {
            throw CLI::ValidationError(e.what());
          }
        });
    return cmd;
  }
  bool needs_mpi() const override { return true; }
  double phase_timeout_s() const override { return o_.phase_timeout_s; }
  int run(int argc, char** argv) override {
    check_options();
    o_.argv.assign(argv, argv + argc);
    o_.suite = "burnin";
    o_.only = {"burnin.soak"};
    o_.set = {"burnin.soak.minutes=" + number_text(minutes_)};
    if (!dtype_.empty()) o_.set.push_back("burnin.soak.dtype=" + dtype_);
    if (shape_ != kUnset) o_.set.push_back("burnin.soak.shape=" + std::to_string(shape_));
    if (allreduce_bytes_ != kUnset)
      o_.set.push_back("burnin.soak.allreduce_bytes=" + std::to_string(allreduce_bytes_));
    o_.what = "burn-in";
    // The soak is one long case: its hang deadline follows its length (twice the soak and its
    // set-up, plus a minute), not the run suites' hour.
    o_.case_timeout_s = 2 * (minutes_ * 60 + 30) + 60;
    o_.resumable = false;
    o_.header_note = header_note();
    RunHooks hooks = report_hooks();
    hooks.choose_spec = choose_burnin_spec;
    return run_command(o_, hooks);
  }

 private:
  /// Usage errors (exit 2) before anything starts.
  void check_options() const {
    if (!(minutes_ > 0) || minutes_ > 7 * 24 * 60)
      throw InputError("--minutes " + std::to_string(minutes_) + ": must be in (0, 10080]");
    if (shape_ != kUnset && (shape_ < 1 || shape_ > 65536))
      throw InputError("--shape " + std::to_string(shape_) + ": must be in [1, 65536]");
    if (allreduce_bytes_ != kUnset &&
        (allreduce_bytes_ < 4 || allreduce_bytes_ > (4LL << 30) || allreduce_bytes_ % 4))
      throw InputError("--allreduce-bytes " + std::to_string(allreduce_bytes_) +
                       ": must be in [4, 4G] and a multiple of 4 (fp32 elements)");
  }

  /// ", 0.2 min in 6 intervals of 2 s" for the run's first console line.
  std::string header_note() const {
    const int n = compute::burnin_intervals(minutes_ * 60.0);
    std::ostringstream out;
    out << ", " << minutes_ << " min in " << n << " intervals of " << minutes_ * 60.0 / n << " s";
    return out.str();
  }

  /// burnin-gpu.json when any node has GPUs, else burnin-cpu.json.
  static SpecChoice choose_burnin_spec(const std::vector<EnvRecord>& envs) {
    bool gpu = false;
    for (const auto& e : envs) gpu = gpu || e.gpu_status.on_pci > 0 || !e.gpus.empty();
    SpecChoice c;
    c.path = specs_dir() + (gpu ? "/burnin-gpu.json" : "/burnin-cpu.json");
    c.selected_by = std::string("auto: burn-in of ") + (gpu ? "GPUs" : "CPU ranks");
    return c;
  }

  RunOptions o_;
  double minutes_ = 10;
  std::string dtype_;
  long long shape_ = kUnset;
  long long allreduce_bytes_ = kUnset;
};

}  // namespace

std::unique_ptr<Command> make_burnin_command() { return std::make_unique<BurninCommand>(); }

}  // namespace clusterbench
