// See version.hpp. The only file that includes the generated header, so a new commit recompiles
// this file alone.
#include "core/version.hpp"

#include "git_sha.h"

namespace clusterbench {

std::string clusterbench_version() {
  return std::string(CLUSTERBENCH_VERSION) + "+" + CLUSTERBENCH_GIT_SHA;
}

}  // namespace clusterbench
