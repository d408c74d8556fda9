// Spec auto-selection from EnvRecords.
#include "reports/select.hpp"

#include <algorithm>
#include <filesystem>

#include "records/spec.hpp"

namespace clusterbench::report {

namespace {

bool node_has_gpus(const EnvRecord& e) { return !e.gpus.empty() || e.gpu_status.on_pci > 0; }

bool gpu_matches(const SpecMatch& m, const GpuInfo& g) {
  if (g.source == "nvml" && !m.gpu_name.empty())
    return SpecRegex(m.gpu_name, "field 'match.gpu_name'", true).search(g.name);
  std::string id = g.pci_device_id;
  std::transform(id.begin(), id.end(), id.begin(), ::tolower);
  for (auto want : m.pci_device_ids) {
    std::transform(want.begin(), want.end(), want.begin(), ::tolower);
    if (want == id) return true;
  }
  return false;
}

/// GPUs of `e` that `s` matches by model (name or PCI device id); the GPU count is not looked at:
/// gpu.count judges it, so a node that lost a GPU is judged by its model's table.
int gpus_matched(const Spec& s, const EnvRecord& e) {
  if (!s.has_match || s.match.no_gpu) return 0;
  return static_cast<int>(std::count_if(e.gpus.begin(), e.gpus.end(),
                                        [&](const GpuInfo& g) { return gpu_matches(s.match, g); }));
}

std::string describe(const EnvRecord& e) {
  if (!node_has_gpus(e)) return "no NVIDIA GPU";
  if (e.gpus.empty()) return std::to_string(e.gpu_status.on_pci) + " NVIDIA GPU(s) on the PCI bus";
  std::string first = e.gpus[0].name.empty() ? e.gpus[0].pci_device_id : e.gpus[0].name;
  return std::to_string(e.gpus.size()) + "x " + first;
}

/// How well a GPU table fits the fleet: the GPUs it matches by model, then the nodes whose GPU
/// count is the table's (an 8-GPU table before a 4-GPU one of the same model for 8-GPU nodes).
struct Fit {
  long long gpus = 0, nodes_at_count = 0;
  bool operator>(const Fit& o) const {
    return gpus != o.gpus ? gpus > o.gpus : nodes_at_count > o.nodes_at_count;
  }
};

Fit fit_of(const Spec& s, const std::vector<EnvRecord>& nodes) {
  Fit f;
  for (const auto& node : nodes) {
    f.gpus += gpus_matched(s, node);
    if (s.has_match && static_cast<int>(node.gpus.size()) == s.match.gpu_count) ++f.nodes_at_count;
  }
  return f;
}

/// The table of a fleet with GPUs: the one matching the most GPUs by model (ties: GPU count, then
/// file name). A node whose GPUs are another model is judged by it and FAILs gpu.model; a fleet
/// none of whose GPUs any table knows is an input error.
SpecSelection select_gpu_table(const std::vector<Spec>& specs, const std::vector<EnvRecord>& nodes,
                               const std::string& dir) {
  const Spec* best = nullptr;
  Fit best_fit;
  for (const auto& s : specs) {
    Fit f = fit_of(s, nodes);
    if (f.gpus > 0 && (!best || f > best_fit)) best = &s, best_fit = f;
  }
  if (!best)
    throw InputError("node " + nodes.front().host + " has " + describe(nodes.front()) +
                     ", which no spec table in " + dir +
                     " matches; pass --spec FILE with a table for this hardware");
  long long total = 0;
  for (const auto& node : nodes) total += static_cast<long long>(node.gpus.size());
  const std::string file = std::filesystem::path(best->path).filename().string();
  std::string reason =
      nodes.size() == 1 ? describe(nodes.front()) + " matched " + file
                        : std::to_string(best_fit.gpus) + " of " + std::to_string(total) +
                              " GPUs on " + std::to_string(nodes.size()) + " nodes matched " + file;
  if (best_fit.gpus < total)
    reason += " by model (" + std::to_string(total - best_fit.gpus) +
              " GPU(s) of another model: gpu.model judges them)";
  return {best->path, reason};
}

}  // namespace

SpecSelection select_spec(const std::vector<EnvRecord>& nodes, const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  // Hidden files (an editor's lock file, .#cpu-node.json) are not tables.
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json" && entry.path().filename().string()[0] != '.')
      files.push_back(entry.path().string());
  if (ec)
    throw InputError(dir + ": cannot list spec tables (" + ec.message() +
                     "); pass --spec FILE, or --specs-dir DIR (docs/install.md)");
  std::sort(files.begin(), files.end());
  std::vector<Spec> specs;
  for (const auto& f : files) specs.push_back(load_spec(f));
  if (nodes.empty()) throw InputError("no nodes to choose a spec table for; pass --spec");

  const EnvRecord* cpu = nullptr;
  const EnvRecord* gpu = nullptr;
  for (const auto& node : nodes) (node_has_gpus(node) ? gpu : cpu) = &node;
  if (cpu && gpu)
    throw InputError("nodes need different spec tables (" + gpu->host + " has " + describe(*gpu) +
                     ", " + cpu->host +
                     " has no NVIDIA GPU); run them separately or pass --spec FILE");
  if (gpu) return select_gpu_table(specs, nodes, dir);
  for (const auto& s : specs)
    if (s.has_match && s.match.no_gpu)
      return {s.path, "no NVIDIA GPU on the PCI bus, so " +
                          std::filesystem::path(s.path).filename().string()};
  throw InputError("node " + nodes.front().host + " has no NVIDIA GPU, and no spec table in " +
                   dir + " is for such nodes (match.no_gpu); pass --spec FILE");
}

}  // namespace clusterbench::report
