// `clusterbench run`: the options of a run, then a RunSession (core/session.hpp) with the report
// hooks of app/report_command.
#include "app/command.hpp"
#include "app/report_command.hpp"
#include "core/selection.hpp"
#include "core/session.hpp"

namespace clusterbench {

namespace {

class RunCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    cmd_ = app.add_subcommand("run", "run the benchmarks on every rank and write a run directory");
    cmd_->add_option("--suite", o_.suite, "ci | quick | full")
        ->check(CLI::IsMember({"ci", "quick", "full"}));
    cmd_->add_option("--spec", o_.spec_path, "spec table (default: chosen from the hardware)");
    cmd_->add_option("--only", o_.only,
                     "glob(s) on benchmark ids, space- or comma-separated, e.g. 'compute.*'");
    cmd_->parse_complete_callback([this] {
      try {
        o_.only = split_globs(o_.only);
      } catch (const InputError& e) {
        throw CLI::ValidationError(e.what());
      }
    });
    cmd_->add_option("--set", o_.set, "id.key=value or area.key=value");
    cmd_->add_option("--out", o_.out_dir, "run directory (default results/<run-id>)");
    cmd_->add_option("--results", o_.results_root, "where default run directories go");
    cmd_->add_option("--fs-root", o_.fs_root, "read /sys, /proc, /dev below this root")
        ->check(CLI::ExistingDirectory);
    cmd_->add_option("--case-timeout", o_.case_timeout_s,
                     "seconds before a case is declared hung (default: 300 ci, 1200 quick, 3600 "
                     "full, or twice the case's estimate plus 60 when longer)")
        ->check(seconds_validator());
    cmd_->add_option("--phase-timeout", o_.phase_timeout_s,
                     "seconds before a phase that is not a case (start-up, set-up, recording, "
                     "between cases, report, finish) is declared hung (default 300)")
        ->check(seconds_validator());
    cmd_->add_option("--resume", o_.resume_dir,
                     "complete an earlier run directory: rerun its failed and missing cases");
    cmd_->add_flag("--dry-run", o_.dry_run, "print the plan with estimated durations; run nothing");
    cmd_->add_option("--time-limit", o_.time_limit_s,
                     "seconds: start no case that would end past it; the rest is MISSING (exit 4)")
        ->check(seconds_validator());
    cmd_->add_option("--rounds", o_.rounds,
                     "spread each host-side case (STREAM, OpenBLAS GEMM, dataloader, MPI "
                     "collectives, fio) over N rounds of the plan, one repetition per round, for a "
                     "baseline that compare can trust on a noisy host; compare needs N >= 5 "
                     "(default: CLUSTERBENCH_ROUNDS, else 5; a resume takes the earlier run's)")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
              return parse_rounds(text) ? ""
                                        : "'" + text + "' is not a whole number from 1 to " +
                                              std::to_string(kMaxRounds);
            },
            "1.." + std::to_string(kMaxRounds)));
    cmd_->add_flag("--allow-shared-gpus", o_.allow_shared_gpus,
                   "run GPU cases although other processes use the GPUs (the records say so)");
    cmd_->add_option("--prometheus", o_.prometheus_path,
                     "also write the headline metrics as a Prometheus textfile (node_exporter)");
    return cmd_;
  }
  bool needs_mpi() const override { return true; }
  bool needs_mpi_threads() const override {
    return run_needs_mpi_threads(o_.only, o_.suite, !o_.resume_dir.empty());
  }
  double phase_timeout_s() const override { return o_.phase_timeout_s; }
  int run(int argc, char** argv) override {
    o_.argv.assign(argv, argv + argc);
    o_.suite_given = cmd_->count("--suite") > 0;
    o_.spec_given = cmd_->count("--spec") > 0;
    o_.only_given = cmd_->count("--only") > 0;
    o_.set_given = cmd_->count("--set") > 0;
    return run_command(o_, report_hooks());
  }

 private:
  CLI::App* cmd_ = nullptr;
  RunOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_run_command() { return std::make_unique<RunCommand>(); }

}  // namespace clusterbench
