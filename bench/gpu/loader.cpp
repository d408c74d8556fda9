// dlopen of the GPU plugins and the choice among them. Their absence or failure is recorded, never
// fatal here: the runner turns it into `failed` GPU cases (or exit 2 for an insufficient driver).
#include "gpu/loader.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "env/nvml.hpp"
#include "env/paths.hpp"

namespace clusterbench {

namespace {

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string describe(const GpuPluginCandidate& c) {
  std::string d = base_name(c.path) + " (";
  if (!c.error.empty()) return d + "cannot load)";
  if (c.built_cuda <= 0) return d + "CUDA version not stated)";
  d += "CUDA " + cuda_version_string(c.built_cuda);
  if (int branch = min_driver_branch(c)) d += ", driver >= " + std::to_string(branch);
  return d + (c.ptx ? ", PTX kernels)" : ")");
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

/// The driver's CUDA version and version text: NVML first (the tests' fake NVML reports one),
/// else libcuda's cuDriverGetVersion (needs no cuInit). {0, ""} when neither can tell.
std::pair<int, std::string> driver_cuda_version() {
  NvmlInventory nv = query_nvml_inventory();
  if (int v = parse_cuda_version(nv.cuda_driver)) return {v, nv.driver_version};
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    auto get = reinterpret_cast<int (*)(int*)>(dlsym(cuda, "cuDriverGetVersion"));
    int v = 0;
    if (get && get(&v) == 0 && v > 0) return {v, nv.driver_version};
  }
  return {0, nv.driver_version};
}

}  // namespace

std::string cuda_version_string(int v) {
  if (v <= 0) return "";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

int parse_cuda_version(const std::string& text) {
  const size_t dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= text.size()) return 0;
  const std::string major = text.substr(0, dot), minor = text.substr(dot + 1);
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 3 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(major) || !digits(minor)) return 0;
  return std::stoi(major) * 1000 + std::stoi(minor) * 10;
}

int min_driver_branch(int cuda) {
  switch (cuda / 1000) {
    case 13:
      return 580;
    case 12:
      return 525;
    case 11:
      return 450;
    default:
      return 0;
  }
}

int min_driver_branch(const GpuPluginCandidate& c) {
  if (!c.ptx) return min_driver_branch(c.built_cuda);
  // The first driver branch of each CUDA release (NVIDIA's CUDA Toolkit release notes, table 3).
  static const std::pair<int, int> kFirst[] = {
      {12000, 525}, {12010, 530}, {12020, 535}, {12030, 545}, {12040, 550},
      {12050, 555}, {12060, 560}, {12080, 570}, {12090, 575}, {13000, 580}};
  int branch = min_driver_branch(c.built_cuda);
  for (const auto& [cuda, first] : kFirst)
    if (cuda <= c.built_cuda && c.built_cuda / 1000 == cuda / 1000) branch = first;
  return branch;
}

GpuPluginChoice choose_gpu_plugin(int driver_cuda, const std::string& driver_version,
                                  const std::vector<GpuPluginCandidate>& candidates) {
  GpuPluginChoice choice;
  std::vector<int> fits, minor_compatible, unstated, too_new;
  for (int i = 0; i < static_cast<int>(candidates.size()); ++i) {
    const GpuPluginCandidate& c = candidates[i];
    if (!c.error.empty()) continue;
    if (c.built_cuda <= 0)
      unstated.push_back(i);
    else if (driver_cuda <= 0 || c.built_cuda <= driver_cuda)
      fits.push_back(i);
    else if (c.built_cuda / 1000 == driver_cuda / 1000 && !c.ptx)
      minor_compatible.push_back(i);
    else
      too_new.push_back(i);
  }
  auto built = [&](int i) { return candidates[i].built_cuda; };
  std::stable_sort(fits.begin(), fits.end(), [&](int a, int b) { return built(a) > built(b); });
  std::stable_sort(minor_compatible.begin(), minor_compatible.end(),
                   [&](int a, int b) { return built(a) < built(b); });
  for (const auto* part : {&fits, &minor_compatible, &unstated})
    choice.order.insert(choice.order.end(), part->begin(), part->end());
  if (!choice.order.empty()) return choice;

  std::vector<std::string> present;
  for (const auto& c : candidates) present.push_back(describe(c));
  if (too_new.empty()) {  // nothing loaded
    std::vector<std::string> errors;
    for (const auto& c : candidates) errors.push_back(c.error);
    choice.reason = candidates.size() == 1 ? errors.front() : join(errors, "; ");
    return choice;
  }
  // Loaded, but each was built for a newer CUDA major than the driver supports.
  int first = too_new.front();
  for (int i : too_new)
    if (built(i) < built(first)) first = i;
  const int oldest = built(first);
  choice.driver_insufficient = true;
  choice.reason = "CUDA driver version is insufficient: the driver" +
                  (driver_version.empty() ? std::string() : " (" + driver_version + ")") +
                  " supports CUDA " + cuda_version_string(driver_cuda) +
                  ", and no GPU plugin present fits it: " + join(present, ", ") +
                  ". Install a driver for CUDA " + cuda_version_string(oldest) + " or newer";
  if (int branch = min_driver_branch(candidates[first]))
    choice.reason += " (>= " + std::to_string(branch) + ")";
  choice.reason += ", or add a plugin built with CUDA <= " + cuda_version_string(driver_cuda);
  if (driver_cuda / 1000 == 12)
    choice.reason += " (libclusterbench_gpu_cuda12.so: make package builds it)";
  return choice;
}

std::vector<std::string> find_gpu_plugins(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      const bool plugin = n == "libclusterbench_gpu.so" ||
                          (n.rfind("libclusterbench_gpu_", 0) == 0 && n.size() > 23 &&
                           n.compare(n.size() - 3, 3, ".so") == 0);
      if (plugin) names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) names.push_back("libclusterbench_gpu.so");
  std::vector<std::string> files;
  for (const auto& n : names) files.push_back(dir + "/" + n);
  return files;
}

void* GpuPlugin::symbol(const char* name) const { return handle ? dlsym(handle, name) : nullptr; }

namespace {

/// dlopens `file` and checks that it is a plugin of this binary's ABI version. Returns the
/// candidate (its error says why it cannot be used) and its handle (nullptr when it cannot).
std::pair<GpuPluginCandidate, void*> dlopen_plugin(const std::string& file) {
  GpuPluginCandidate c;
  c.path = file;
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    c.error = e ? e : ("cannot load " + file);
    return {c, nullptr};
  }
  auto abi = reinterpret_cast<int (*)()>(dlsym(h, "cb_gpu_abi_version"));
  const int version = abi ? abi() : 0;
  if (version != CB_GPU_ABI_VERSION || !dlsym(h, "cb_gpu_init")) {
    c.error = file + ": not a clusterbench GPU plugin of ABI version " +
              std::to_string(CB_GPU_ABI_VERSION) +
              (version > 0 ? " (it has version " + std::to_string(version) + ")" : "");
    dlclose(h);
    return {c, nullptr};
  }
  if (auto v = reinterpret_cast<int (*)()>(dlsym(h, "cb_gpu_built_cuda_version")))
    c.built_cuda = v();
  return {c, h};
}

/// The candidate `file` without loading it (two plugins loaded side by side
/// share one libnccl.so.2, the SONAME of both NCCL builds). Its side file FILE.cuda, written at
/// build time, says "clusterbench-gpu-plugin abi=N cuda=NNNNN". Without a side file the plugin is
/// loaded, read and unloaded before the next one is looked at.
GpuPluginCandidate probe_plugin(const std::string& file) {
  if (FILE* f = std::fopen((file + ".cuda").c_str(), "r")) {
    int abi = 0, cuda = 0;
    char rest[64] = "";  // " kernels=ptx driver=535", or nothing
    const bool read =
        std::fscanf(f, "clusterbench-gpu-plugin abi=%d cuda=%d%63[^\n]", &abi, &cuda, rest) >= 2;
    std::fclose(f);
    if (read && access(file.c_str(), R_OK) == 0) {
      GpuPluginCandidate c{file, cuda, ""};
      c.ptx = std::string_view(rest).rfind(" kernels=ptx", 0) == 0;
      if (abi != CB_GPU_ABI_VERSION)
        c.error = file + ": not a clusterbench GPU plugin of ABI version " +
                  std::to_string(CB_GPU_ABI_VERSION) + " (it has version " + std::to_string(abi) +
                  ")";
      return c;
    }
  }
  auto [c, h] = dlopen_plugin(file);
  if (h) dlclose(h);
  return c;
}

/// Loads candidate `c` (chosen) and runs its cb_gpu_init into `plugin`. Returns its handle, or
/// nullptr with `plugin.error` saying why it could not be loaded.
void* start_plugin(const GpuPluginCandidate& c, GpuPlugin& plugin) {
  auto [loaded, h] = dlopen_plugin(c.path);
  plugin.path = c.path;
  if (!h) {
    plugin.error = loaded.error;
    return nullptr;
  }
  auto init = reinterpret_cast<int (*)(cb_gpu_info*, char*, size_t)>(dlsym(h, "cb_gpu_init"));
  cb_gpu_info info{};
  char err[1024] = {0};
  const int rc = init(&info, err, sizeof err);
  plugin.info = info;
  plugin.loaded = true;
  plugin.initialised = rc == CB_GPU_OK;
  plugin.driver_insufficient = rc == CB_GPU_DRIVER_INSUFFICIENT;
  plugin.error = rc == CB_GPU_OK ? "" : err;
  return h;
}

/// "path: error", unless dlopen's text already starts with the path (a bad file).
std::string with_path(const std::string& path, const std::string& error) {
  return error.rfind(path + ": ", 0) == 0 ? error : path + ": " + error;
}

/// None of the chosen plugins loaded: `plugin` (the preferred one) says its own reason, then every
/// other plugin's ("path: why", the unusable ones too), and where a library was missing, where
/// CUDA's libraries must be.
void explain_unloaded(GpuPlugin& plugin, const std::vector<GpuPluginCandidate>& candidates,
                      std::vector<std::string> unloadable) {
  for (const auto& c : candidates)
    if (!c.error.empty()) unloadable.push_back(with_path(c.path, c.error));
  const std::string own = plugin.path + ": ";
  plugin.error = unloadable.front().substr(unloadable.front().rfind(own, 0) == 0 ? own.size() : 0);
  for (size_t i = 1; i < unloadable.size(); ++i) plugin.error += "; " + unloadable[i];
  if (plugin.error.find("cannot open shared object file") != std::string::npos)
    plugin.error +=
        " (the plugins need CUDA's libraries on the library path: docs/install.md \"Which "
        "driver the package needs\")";
}

}  // namespace

GpuPlugin open_gpu_plugin(const std::vector<std::string>& files, int driver_cuda,
                          const std::string& driver_version) {
  GpuPlugin plugin;
  plugin.built = true;
  plugin.driver_cuda = driver_cuda;
  plugin.path = files.empty() ? std::string() : files.front();
  std::vector<GpuPluginCandidate> candidates;
  for (const auto& f : files) {
    candidates.push_back(probe_plugin(f));
    plugin.present.push_back(describe(candidates.back()));
  }
  const GpuPluginChoice choice = choose_gpu_plugin(driver_cuda, driver_version, candidates);
  plugin.error = choice.reason;
  plugin.driver_insufficient = choice.driver_insufficient;
  // Load and initialise one at a time, in order of preference; a plugin whose CUDA start says
  // the driver is too old is unloaded and gives way to the next one.
  std::vector<std::string> unloadable;  // "path: why" of each that did not load
  for (size_t k = 0; k < choice.order.size(); ++k) {
    GpuPlugin attempt = plugin;
    void* h = start_plugin(candidates[choice.order[k]], attempt);
    if (!h) unloadable.push_back(with_path(attempt.path, attempt.error));
    if (!h && plugin.loaded) continue;  // a plugin that loaded stays the answer
    if (!h && k > 0) continue;          // none loaded: the preferred one is named, below
    plugin = attempt;
    if (!h) continue;
    if (plugin.driver_insufficient && k + 1 < choice.order.size()) {
      dlclose(h);
      continue;
    }
    plugin.handle = h;
    break;
  }
  if (!plugin.loaded && !unloadable.empty()) explain_unloaded(plugin, candidates, unloadable);
  if (choice.order.empty() && candidates.size() > 1) {  // none chosen: name them all
    const std::string& first = candidates.front().path;
    plugin.path = first.substr(0, first.rfind('/') + 1) + "libclusterbench_gpu*.so";
  }
  if (plugin.driver_insufficient && !choice.order.empty())  // the plugin's own message
    plugin.error += " [plugins present: " + join(plugin.present, ", ") + "]";
  return plugin;
}

const GpuPlugin& load_gpu_plugin() {
  static GpuPlugin plugin;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* one = std::getenv("CLUSTERBENCH_GPU_PLUGIN");
    const char* dir = std::getenv("CLUSTERBENCH_GPU_PLUGIN_DIR");
    const bool named = (one && *one) || (dir && *dir);
    if (!CLUSTERBENCH_HAVE_CUDA && !named) {  // a plugin or a directory was named: try it
      plugin.built = false;
      plugin.path = plugin_dir() + "/libclusterbench_gpu.so";
      plugin.error = "this build has no GPU plugin (nvcc was not found at build time)";
      return;
    }
    if (one && *one) {  // the one file named: no choice, its CUDA start decides
      plugin = open_gpu_plugin({one}, 0, "");
      return;
    }
    auto [cuda, version] = driver_cuda_version();
    plugin = open_gpu_plugin(find_gpu_plugins(dir && *dir ? dir : plugin_dir()), cuda, version);
  });
  return plugin;
}

}  // namespace clusterbench
