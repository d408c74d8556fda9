// Which benchmarks a run selects (--only, --suite) and whether its --set keys name their knobs:
// the session's and the command line's, not a benchmark's (internal to bench/core).
#pragma once

#include <string>
#include <vector>

#include "core/api/benchmark.hpp"

namespace clusterbench {

/// The globs of `--only`'s values: each value split at commas ("compute.*,io.fio" is two), each
/// glob trimmed of spaces, empty pieces (a trailing comma) dropped. Throws InputError naming
/// the value when one holds no glob at all (`--only ','`, `--only ''`).
std::vector<std::string> split_globs(const std::vector<std::string>& values);

/// Benchmarks of `registry` in `suite` selected by `only` globs, in registry order. Throws
/// InputError listing the known benchmark ids when a pattern matches none of the suite's.
std::vector<const Benchmark*> select_benchmarks(const std::vector<std::string>& only,
                                                const std::string& suite = "ci",
                                                const Registry& registry = Registry::get());

/// Whether a run of `suite` with the `only` globs (and `resume`: a run directory to complete,
/// whose plan is read later) needs MPI_THREAD_SERIALIZED: a resume, or a selected benchmark that
/// calls_mpi_from_threads(). A selection error is left for the run to report: true.
bool run_needs_mpi_threads(const std::vector<std::string>& only, const std::string& suite,
                           bool resume, const Registry& registry = Registry::get());

/// Checks every --set key against the declared knobs of `registry`'s benchmarks (KEY is ID.knob
/// or AREA.knob; `run.*` keys are the run's own), and that the benchmark it names has cases in
/// the settings' suite, then parses every declared knob of `selected` (check_knob). Throws
/// InputError naming the key and where `clusterbench list` shows the knobs, or the bad value.
void check_set_keys(const Settings& s, const std::vector<const Benchmark*>& selected,
                    const Registry& registry = Registry::get());

}  // namespace clusterbench
