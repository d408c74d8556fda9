// Where the spec tables are, and a --spec argument as a path (run_options.hpp).
#include <cstdlib>
#include <filesystem>

#include "core/run_options.hpp"
#include "env/paths.hpp"

namespace clusterbench {

namespace fs = std::filesystem;

namespace {
std::string g_specs_dir;  // --specs-dir
}  // namespace

void set_specs_dir(const std::string& dir) { g_specs_dir = dir; }

std::string specs_dir() {
  if (!g_specs_dir.empty()) return g_specs_dir;
  if (const char* d = std::getenv("CLUSTERBENCH_SPECS_DIR"); d && *d) return d;
  return data_dir("specs", "reports/specs");
}

std::string resolve_spec_arg(const std::string& arg) {
  std::error_code ec;
  if (arg.empty() || arg.find('/') != std::string::npos || fs::exists(arg, ec)) return arg;
  const std::string name =
      arg.size() > 5 && arg.substr(arg.size() - 5) == ".json" ? arg : arg + ".json";
  const std::string in_dir = specs_dir() + "/" + name;
  return fs::is_regular_file(in_dir, ec) ? in_dir : arg;
}

/// One case of the plan: a benchmark's params, the rows of run.json's plan it stands for (one per

}  // namespace clusterbench
