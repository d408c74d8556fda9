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

bool node_matches(const Spec& s, const EnvRecord& e) {
  if (!s.has_match) return false;
  if (!node_has_gpus(e)) return s.match.no_gpu;
  if (s.match.no_gpu || e.gpus.empty()) return false;
  if (s.match.gpu_count >= 0 && static_cast<int>(e.gpus.size()) != s.match.gpu_count) return false;
  return std::all_of(e.gpus.begin(), e.gpus.end(),
                     [&](const GpuInfo& g) { return gpu_matches(s.match, g); });
}

std::string describe(const EnvRecord& e) {
  if (!node_has_gpus(e)) return "no NVIDIA GPU";
  if (e.gpus.empty()) return std::to_string(e.gpu_status.on_pci) + " NVIDIA GPU(s) on the PCI bus";
  std::string first = e.gpus[0].name.empty() ? e.gpus[0].pci_device_id : e.gpus[0].name;
  return std::to_string(e.gpus.size()) + "x " + first;
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

  std::string chosen, reason;
  for (const auto& node : nodes) {
    std::string found;
    for (const auto& s : specs)
      if (node_matches(s, node)) {
        found = s.path;
        break;
      }
    if (found.empty())
      throw InputError("node " + node.host + " has " + describe(node) +
                       ", which no spec table in " + dir +
                       " matches; pass --spec FILE with a table for this hardware");
    if (!chosen.empty() && chosen != found)
      throw InputError("nodes need different spec tables (" + chosen + " and " + found + " for " +
                       node.host + "); run them separately or pass --spec FILE");
    chosen = found;
    const std::string file = std::filesystem::path(found).filename().string();
    reason = node_has_gpus(node) ? describe(node) + " matched " + file
                                 : "no NVIDIA GPU on the PCI bus, so " + file;
  }
  if (chosen.empty()) throw InputError("no nodes to choose a spec table for; pass --spec");
  return {chosen, reason};
}

}  // namespace clusterbench::report
