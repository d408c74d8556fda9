// `clusterbench report`, and the report at the end of `run` and `burnin`: reports/ judges a run
// directory, writes its files and prints the verdict.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/run_options.hpp"

namespace clusterbench {

/// `clusterbench report DIR [--spec F]`: evaluates and renders; returns the exit code.
/// `prometheus`: also write the Prometheus textfile there (reports/prometheus.hpp). `written`
/// (optional): set to whether report.md/html/json were written in `dir` (false for a read-only
/// run directory, which only warns). Throws InputError for a missing/empty/malformed directory
/// or spec. `outputs`: "--option path" pairs the caller will write (--html, --pdf); like
/// `prometheus`, none may be the spec table itself (exit 2 before anything is written). `force`:
/// an existing `prometheus` file that is not an earlier Prometheus page may be replaced.
int report_command(const std::string& dir, const std::string& spec_path, bool quiet = false,
                   const std::string& prometheus = "", bool* written = nullptr,
                   const std::vector<std::pair<std::string, std::string>>& outputs = {},
                   bool force = false);

/// The hooks through which `run` reaches reports/ (spec auto-selection, output checks, the
/// report at the end).
RunHooks report_hooks();

}  // namespace clusterbench
