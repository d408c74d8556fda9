// The version clusterbench writes into run.json, EnvRecords and --version.
#pragma once

#include <string>

namespace clusterbench {

/// "<project version>+<git describe --always --dirty>" of the build ("0.1.0+d4f3783a1b2c"),
/// computed at build time (cmake/git_sha.cmake); "+unknown" outside a git checkout.
std::string clusterbench_version();

}  // namespace clusterbench
