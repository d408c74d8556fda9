// Install layout (paths.hpp).
#include "env/paths.hpp"

#include <limits.h>
#include <unistd.h>

#include <filesystem>

namespace clusterbench {

namespace fs = std::filesystem;

std::string exe_dir() {
  char buf[PATH_MAX] = {0};
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

namespace {

bool is_dir(const std::string& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

/// <exe_dir>/../<rel>, without the "..": /usr/bin -> /usr/<rel>.
std::string beside_prefix(const std::string& rel) {
  return fs::path(exe_dir()).parent_path().string() + "/" + rel;
}

}  // namespace

std::string data_dir(const std::string& name, const std::string& source_rel) {
  const std::string installed = beside_prefix("share/clusterbench/" + name);
  if (is_dir(installed)) return installed;
  // A build tree: CMakeCache.txt beside the executable or in a folder above it (build/tests/).
  std::error_code ec;
  for (fs::path d = exe_dir(); !d.empty(); d = d.parent_path()) {
    if (fs::exists(d / "CMakeCache.txt", ec))
      return std::string(CLUSTERBENCH_SOURCE_DIR) + "/" + source_rel;
    if (d == d.parent_path()) break;
  }
  return installed;
}

std::string plugin_dir() {
  const std::string installed = beside_prefix("lib/clusterbench");
  return is_dir(installed) ? installed : exe_dir();
}

}  // namespace clusterbench
