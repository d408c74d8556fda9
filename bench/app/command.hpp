// The executable's subcommands: one Command each, in its own file (run, report, burnin, compare,
// archive, verify, inventory, list, io make-dataset). A command parses its options, calls one
// library function, prints what that returns, and returns the exit code it decided.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/run_options.hpp"

namespace clusterbench {

class Command {
 public:
  virtual ~Command() = default;
  /// Adds the subcommand and its options to `app`; returns the subcommand.
  virtual CLI::App* add(CLI::App& app) = 0;
  /// Whether the command starts MPI (Context::init) before run().
  virtual bool needs_mpi() const { return false; }
  /// Whether MPI starts at MPI_THREAD_SERIALIZED (a case calls MPI from a second thread) rather
  /// than MPI_THREAD_SINGLE (Context::init); asked after the options are parsed.
  virtual bool needs_mpi_threads() const { return true; }
  /// The deadline of MPI start-up and finalisation (the run's --phase-timeout), in seconds.
  virtual double phase_timeout_s() const { return kDefaultPhaseTimeoutS; }
  /// Runs the parsed command with the program's arguments; returns the exit code. Throws
  /// InputError for bad input (exit 2).
  virtual int run(int argc, char** argv) = 0;
};

std::unique_ptr<Command> make_run_command();
std::unique_ptr<Command> make_report_command();
std::unique_ptr<Command> make_compare_command();
std::unique_ptr<Command> make_inventory_command();
std::unique_ptr<Command> make_list_command();
std::unique_ptr<Command> make_io_command();
std::unique_ptr<Command> make_archive_command();
std::unique_ptr<Command> make_verify_command();
std::unique_ptr<Command> make_burnin_command();

/// A CLI11 check of seconds: a finite number in (0, 30 days]; nan, 0 and negatives are bad
/// input (exit 2).
const CLI::Validator& seconds_validator();

}  // namespace clusterbench
