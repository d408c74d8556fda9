// The fleet view printed (fleet_render.hpp).
#include "reports/fleet_render.hpp"

#include <sstream>

#include "reports/text.hpp"

namespace clusterbench::report {

namespace {

/// Reasons joined with "; ".
std::string join_reasons(const std::vector<std::string>& reasons) {
  std::string s;
  for (const auto& r : reasons) s += (s.empty() ? "" : "; ") + r;
  return s;
}

}  // namespace

std::string render_fleet_markdown(const FleetView& fv) {
  std::ostringstream md;
  md << "## Fleet\n\n";
  md << "| node | PASS | WARN | FAIL | MISSING | WAIVED | records ok/failed/waived | outliers | "
        "drain because | suspect because |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& n : fv.nodes) {
    const std::string why = join_reasons(n.reasons), suspect = join_reasons(n.suspicions);
    md << "| " << n.host << " | " << n.items.at(kPass) << " | " << n.items.at(kWarn) << " | "
       << n.items.at(kFail) << " | " << n.items.at(kMissing) << " | " << n.items.at(kWaived)
       << " | " << n.records_ok << "/" << n.records_failed << "/" << n.records_waived << " | "
       << n.outliers << " | " << (why.empty() ? "-" : why) << " | "
       << (suspect.empty() ? "-" : suspect) << " |\n";
  }
  md << "\nA node's counts are its own: the row items and records on that node (a link's on both "
        "its ends); cluster-scope records (MPI and NCCL collectives, the training step's cluster "
        "record) and cluster rows are counted in the header only.\n";
  if (fv.outliers.empty()) {
    md << "\nOutliers (worse than the fleet median by more than the tolerance): none.\n";
  } else {
    md << "\n### Outliers (worse than the fleet median by more than the tolerance)\n\n";
    md << "| benchmark | params | metric | host | GPU | UUID | PCI bus id | value | fleet median | "
          "deviation | tolerance |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& o : fv.outliers) {
      std::string host = o.kind == "link" ? o.item : o.host;
      md << "| " << o.benchmark << " | `" << o.params.dump() << "` | " << o.metric << " | " << host
         << " | " << (o.gpu_index >= 0 ? std::to_string(o.gpu_index) : "-") << " | "
         << (o.uuid.empty() ? "-" : o.uuid) << " | " << (o.pci_bus_id.empty() ? "-" : o.pci_bus_id)
         << " | " << format_number(o.value) << " " << o.unit << " | " << format_number(o.median)
         << " " << o.unit << " | " << percent(o.deviation, 2, true) << " | " << percent(o.tolerance)
         << " |\n";
    }
  }
  if (!fv.located.empty()) {
    md << "\n### Where the slow links are (localisation)\n\n";
    for (const auto& l : fv.located)
      md << "- " << l.benchmark << " " << l.metric << " `" << l.params.dump() << "`: " << l.text
         << "\n";
  }
  md << "\nFailing hosts, to drain (failing-hosts.txt: a FAIL row on the host): ";
  if (fv.failing_hosts.empty()) md << "none";
  for (size_t i = 0; i < fv.failing_hosts.size(); ++i) md << (i ? ", " : "") << fv.failing_hosts[i];
  md << ".\nSuspect hosts, to look at and not to drain (suspect-hosts.txt: no FAIL row; an "
        "outlier, a failed record or a located slow link): ";
  if (fv.suspect_hosts.empty()) md << "none";
  for (size_t i = 0; i < fv.suspect_hosts.size(); ++i) md << (i ? ", " : "") << fv.suspect_hosts[i];
  md << ".\n";
  return md.str();
}

json fleet_json(const FleetView& fv) {
  json j;
  j["nodes"] = json::array();
  for (const auto& n : fv.nodes)
    j["nodes"].push_back({{"host", n.host},
                          {"items", outcome_counts_json(n.items)},
                          {"records_ok", n.records_ok},
                          {"records_failed", n.records_failed},
                          {"records_waived", n.records_waived},
                          {"outliers", n.outliers},
                          {"reasons", n.reasons},
                          {"suspicions", n.suspicions}});
  j["outliers"] = json::array();
  for (const auto& o : fv.outliers)
    j["outliers"].push_back({{"benchmark", o.benchmark},
                             {"params", o.params},
                             {"metric", o.metric},
                             {"unit", o.unit},
                             {"higher_is_better", o.higher_is_better},
                             {"kind", o.kind},
                             {"item", o.item},
                             {"host", o.host},
                             {"hosts", o.hosts},
                             {"gpu_index", o.gpu_index},
                             {"uuid", o.uuid},
                             {"pci_bus_id", o.pci_bus_id},
                             {"value", o.value},
                             {"median", o.median},
                             {"deviation", o.deviation},
                             {"tolerance", o.tolerance},
                             {"fleet_size", o.fleet_size},
                             {"p_value", o.p_value < 0 ? json(nullptr) : json(o.p_value)},
                             {"case_key", o.case_key}});
  j["localisation"] = located_json(fv.located);
  j["failing_hosts"] = fv.failing_hosts;
  j["suspect_hosts"] = fv.suspect_hosts;
  return j;
}

std::string render_failing_hosts(const FleetView& fv) {
  std::string s;
  for (const auto& h : fv.failing_hosts) s += h + "\n";
  return s;
}

std::string render_suspect_hosts(const FleetView& fv) {
  std::string s;
  for (const auto& n : fv.nodes)
    if (n.reasons.empty() && !n.suspicions.empty())
      s += n.host + "\t" + join_reasons(n.suspicions) + "\n";
  return s;
}

}  // namespace clusterbench::report
