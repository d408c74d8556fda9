// `clusterbench io make-dataset DIR --count N --size BYTES [--size-max BYTES] [--seed S]`: writes
// the sample files io.dataloader reads (docs/dataloader.md "Dataset").
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace clusterbench::io {

/// The `io` subcommand group added to the binary's CLI.
struct IoCommand {
  CLI::App* io = nullptr;
  CLI::App* make_dataset = nullptr;
  std::function<int()> run;  ///< the parsed subcommand's action; returns the exit code
  bool parsed() const { return io && io->parsed(); }
};

/// Adds `io make-dataset` to `app`. Sizes take binary suffixes (K, M, G). The action prints what
/// it wrote; bad options or a directory that already holds samples throw InputError (exit 2).
IoCommand add_io_command(CLI::App& app);

}  // namespace clusterbench::io
