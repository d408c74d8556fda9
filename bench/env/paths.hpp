// Where the installed files are: the executable's own directory, the GPU plugins and the data
// (spec tables, fio profiles, scripts). An installed binary (cmake --install, the Debian
// package: bin/clusterbench) finds them relative to itself, in lib/clusterbench/ and
// share/clusterbench/ of its prefix; a binary in a build tree (CMakeCache.txt above it) finds
// the data in the source tree it was built from and its plugins beside it.
#pragma once

#include <string>

namespace clusterbench {

/// The directory of the running executable (/proc/self/exe), "." when it cannot be read.
std::string exe_dir();

/// The directory of the data `name` ("specs", "profiles", "scripts"):
///  - installed: <exe_dir>/../share/clusterbench/<name> when that directory exists;
///  - in a build tree (a CMakeCache.txt beside the executable or in a folder above it):
///    <source tree>/<source_rel> (e.g. "reports/specs");
///  - else the installed path, which does not exist (the error that follows names it).
std::string data_dir(const std::string& name, const std::string& source_rel);

/// The directory that holds the GPU plugins (libclusterbench_gpu*.so): <exe_dir>/../lib/
/// clusterbench when that directory exists (installed), else <exe_dir> (a build tree).
std::string plugin_dir();

}  // namespace clusterbench
