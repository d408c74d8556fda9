// Renderers: Markdown, JSON, JUnit XML, console. They format; every judgement is in make_report.
#include "reports/render.hpp"

#include "reports/alert_rules.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <sstream>

#include "records/utf8.hpp"
#include "reports/charts.hpp"
#include "reports/first_page.hpp"
#include "reports/fleet_render.hpp"
#include "reports/html.hpp"
#include "reports/links_render.hpp"
#include "reports/uniformity_render.hpp"

namespace clusterbench::report {

namespace {

std::string counts_text(const Report& r) {
  std::vector<std::string> parts;
  for (Outcome o : kOutcomeOrder) {
    auto it = r.counts.find(o);
    if (it != r.counts.end() && it->second > 0)
      parts.push_back(std::to_string(it->second) + " " + to_string(o));
  }
  return parts.empty() ? "no rows" : join(parts, ", ");
}

std::string or_unknown(const std::string& s) { return s.empty() ? "unknown" : s; }

std::string gib(const std::optional<double>& v) { return format_known(v, "GiB"); }

/// "1 socket", "2 sockets".
std::string counted(long long n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

void env_summary(std::ostringstream& md, const EnvRecord& e) {
  md << "### " << e.host << "\n\n";
  md << "- CPU: " << or_unknown(e.cpu.model) << ", "
     << counted(e.cpu.physical_cores, "physical core") << ", " << counted(e.cpu.sockets, "socket")
     << ", " << counted(e.cpu.threads, "thread") << ", " << counted(e.cpu.numa_nodes, "NUMA node")
     << "\n";
  md << "- Memory: " << gib(e.memory.installed_gib) << " installed (source "
     << or_unknown(e.memory.source) << "), " << gib(e.memory.usable_gib) << " usable\n";
  if (e.gpus.empty()) {
    md << "- GPUs: none (" << e.gpu_status.on_pci << " on PCI; NVML "
       << or_unknown(e.gpu_status.nvml) << "; plugin " << or_unknown(e.gpu_status.plugin) << ")\n";
  } else {
    // Group identical models: "8 x NVIDIA H100 80GB HBM3, 79.6 GiB".
    std::map<std::string, int> models;
    for (const auto& g : e.gpus) ++models[g.name + ", " + gib(g.memory_gib)];
    std::vector<std::string> parts;
    for (const auto& [m, n] : models) parts.push_back(std::to_string(n) + " x " + m);
    md << "- GPUs: " << join(parts, "; ") << " (NVML " << or_unknown(e.gpu_status.nvml)
       << ", plugin " << or_unknown(e.gpu_status.plugin) << ")\n";
    for (const auto& g : e.gpus)
      md << "  - gpu" << g.index << " " << or_unknown(g.uuid) << " " << g.pci_bus_id
         << ": PCIe gen " << g.pcie.gen_current << "/" << g.pcie.gen_max << " x"
         << g.pcie.width_current << "/" << g.pcie.width_max << ", NVLink up "
         << format_known(g.nvlink_links_up, "count") << ", ECC " << or_unknown(g.ecc_mode)
         << ", source " << g.source << "\n";
  }
  if (e.nics.empty()) md << "- NICs: none\n";
  for (const auto& n : e.nics) {
    if (!n.physical() && !n.is_virtual) {  // kind not_visible: why is in its unknown map
      auto why = n.unknown.find("rate_gbps");
      md << "- Physical NICs: unknown (" << (why == n.unknown.end() ? "not visible" : why->second)
         << ")\n";
      continue;
    }
    md << "- NIC " << n.name << " (" << n.kind << (n.is_virtual ? ", virtual" : "") << ", "
       << n.link_layer << "): " << format_known(n.rate_gbps, "Gb/s") << ", " << n.state
       << ", firmware " << or_unknown(n.firmware) << "\n";
  }
  if (e.block_devices.empty()) md << "- Block devices: none\n";
  for (const auto& b : e.block_devices)
    md << "- Disk " << b.name << ": " << or_unknown(b.model) << ", " << format_number(b.capacity_tb)
       << " TB" << (b.nvme ? ", NVMe" : "") << (b.rotational ? ", rotational" : "") << "\n";
  const Tuning& t = e.tuning;
  md << "- Tuning: governor " << or_unknown(t.governor) << ", nr_hugepages " << t.nr_hugepages
     << ", THP " << or_unknown(t.thp) << ", net.core.rmem_max " << t.net_core_rmem_max
     << ", net.core.wmem_max " << t.net_core_wmem_max << ", tcp_rmem \"" << t.tcp_rmem
     << "\", tcp_wmem \"" << t.tcp_wmem << "\"\n";
  const Versions& v = e.versions;
  md << "- Versions: driver " << or_unknown(v.driver) << ", CUDA runtime "
     << or_unknown(v.cuda_runtime) << ", NCCL " << or_unknown(v.nccl) << ", kernel "
     << or_unknown(v.kernel) << "\n";
  for (const auto& w : e.warnings) md << "- Warning: " << w << "\n";
  md << "\n";
}

std::string metrics_text(const ResultRecord& r) {
  std::vector<std::string> parts;
  for (const auto& m : r.metrics)  // "ratio 1.391", not "ratio 1.391 ratio"
    parts.push_back(m.name + " " +
                    format_value(m.value, m.unit == m.name || m.unit == "ratio" ? "" : m.unit));
  return join(parts, ", ");
}

}  // namespace

namespace {

void md_header(std::ostringstream& md, const Report& r) {
  const RunRecord& run = r.run->run;
  int code_ = r.exit_code;
  md << "# clusterbench report: " << r.spec_name << "\n\n";
  md << "**Verdict: " << verdict(code_) << "** (exit " << code_ << ": " << exit_code_meaning(code_)
     << "). Rows: " << counts_text(r) << ".\n\n";
  if (r.aborted) md << "**The run was aborted:** " << or_unknown(r.abort_reason) << "\n\n";
  md << "- Run: " << md_code(r.run_id) << ", started " << or_unknown(run.started_at)
     << ", finished " << (run.finished_at.empty() ? "never" : run.finished_at) << "\n";
  if (run.rounds > 1)
    md << "- Rounds: " << run.rounds << " (suite " << or_unknown(run.suite)
       << "; each host-side case measured once a round, one repetition per round: "
          "docs/compare.md \"Rounds\")\n";
  md << "- Hosts: " << (r.hosts.empty() ? "none" : join(r.hosts, ", ")) << "\n";
  md << "- Spec: " << md_code(r.spec_name) << " at " << md_code(r.spec_path) << ", sha256 "
     << md_code(r.spec_sha256.empty() ? "unknown" : r.spec_sha256) << "\n";
  if (!run.version.empty()) md << "- clusterbench: " << run.version << "\n";
}

/// The table of every row, without sources (the findings carry them).
void md_requirements(std::ostringstream& md, const Report& r) {
  md << "\n## Requirements\n\n";
  md << "| row | title | outcome | value | requirement | worst item |\n";
  md << "|---|---|---|---|---|---|\n";
  for (const auto& row : r.rows) {
    std::string word = to_string(row.outcome);
    std::string outcome = row.outcome == kPass ? word : "**" + word + "**";
    std::string sev = row.req.severity == "warn" ? " (warn)" : "";
    md << "| " << md_cell(row.req.id) << " | " << md_cell(row.req.title) << " | " << outcome
       << " | " << md_cell(format_value(row.value, row.req.unit)) << " | "
       << md_cell(format_requirement(row.req) + sev) << " | " << md_cell(row.worst_item) << " |\n";
  }
}

std::string selects_text(const Requirement& q) {
  if (!q.select.health.empty()) return md_code("health " + q.select.health);
  if (q.select.env.empty())
    return md_code(q.select.benchmark + " " + q.select.params.dump() + " metric " +
                   q.select.metric +
                   (q.select.require.empty() ? "" : " require " + q.select.require.dump()));
  return md_code(q.select.env);
}

/// One FAIL, WARN or MISSING row: its requirement, what it selects, its source, its non-PASS
/// items and the records it used.
void md_finding(std::ostringstream& md, const RowResult& row) {
  md << "- `" << row.req.id << "` " << row.outcome << ": " << format_requirement(row.req)
     << " (severity " << row.req.severity << ", scope " << row.req.scope << "), selects "
     << selects_text(row.req) << ". Source: " << row.req.source
     << (!row.req.source.empty() && row.req.source.back() == '.' ? "" : ".");
  if (!row.evidence.empty()) {
    md << " Evidence:";
    for (size_t i = 0; i < row.evidence.size() && i < kItemRecords; ++i)
      md << " " << md_code(row.evidence[i]);
    if (row.evidence.size() > kItemRecords)
      md << " and " << row.evidence.size() - kItemRecords << " more (report.json)";
  }
  md << "\n";
  if (row.items.size() <= 1) return;
  // A one-item row's message is its item's message; the first page names the items in words.
  size_t shown = 0, left = 0;
  for (const auto& it : row.items) {
    if (it.outcome == kPass) continue;
    if (shown == kItemRecords) {
      ++left;
      continue;
    }
    ++shown;
    md << "  - " << it.outcome << ": " << it.message << "\n";
  }
  if (left > 0) md << "  - and " << left << " more (report.json lists them)\n";
}

/// What the rows whose select names it (select.describe) measured, PASS rows included: their
/// message, which says it too, is printed for the other rows only.
void md_measured(std::ostringstream& md, const Report& r) {
  bool any = false;
  for (const auto& row : r.rows) {
    if (row.measured.empty()) continue;
    if (!any) md << "\nWhat was measured (the worst item's records):\n\n";
    any = true;
    md << "- " << md_code(row.req.id) << " on " << row.worst_item << ": " << row.measured << "\n";
  }
}

/// A message size in words: 1024 -> "1 KiB".
std::string bytes_words(long long b) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 4 && std::fmod(v, 1024) == 0) v /= 1024, ++u;
  return format_number(v) + " " + kUnits[u];
}

/// Records of one benchmark, item and status whose params differ only in `bytes` (a sweep): one
/// line of report.md. The largest size's metrics stand for it, as nccl-tests' headline does.
struct RecordGroup {
  std::vector<const ResultRecord*> recs;
};

std::string group_line(const RecordGroup& g) {
  const ResultRecord& first = *g.recs.front();
  const ResultRecord* largest = g.recs.front();
  long long lo = -1, hi = -1;
  for (const ResultRecord* r : g.recs) {
    if (!r->params.contains("bytes") || !r->params["bytes"].is_number_integer()) continue;
    long long b = r->params["bytes"].get<long long>();
    if (lo < 0 || b < lo) lo = b;
    if (hi < 0 || b > hi) hi = b, largest = r;
  }
  json params = first.params;
  std::string text;
  if (g.recs.size() > 1 && lo >= 0) {
    params.erase("bytes");
    text = std::to_string(g.recs.size()) + " sizes, " + bytes_words(lo) + " to " + bytes_words(hi) +
           "; at " + bytes_words(hi) + ": ";
  }
  const ResultRecord& rec = *largest;
  text += rec.status != Status::ok || rec.metrics.empty() ? rec.message
          : rec.message.empty()                           ? metrics_text(rec)
                                                          : metrics_text(rec) + "; " + rec.message;
  return "| " + md_cell(first.benchmark) + " | " + md_cell(params.dump()) + " | " +
         md_cell(scope_item(first.scope)) + " | " + status_name(first.status) + " | " +
         md_cell(text) + " |\n";
}

/// Ok records of one case on many items (every GPU's GEMM): one line with the median, the
/// lowest and the highest of the first metric, naming their items.
std::string across_items_line(const std::vector<const ResultRecord*>& recs) {
  const ResultRecord& first = *recs.front();
  std::vector<std::pair<double, const ResultRecord*>> values;
  for (const ResultRecord* r : recs)
    if (!r->metrics.empty() && r->metrics.front().name == first.metrics.front().name)
      values.push_back({r->metrics.front().value, r});
  std::sort(values.begin(), values.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const Metric& m = first.metrics.front();
  const std::string unit = m.unit == "count" || m.unit == "ratio" ? "" : " " + m.unit;
  auto at = [&](const std::pair<double, const ResultRecord*>& v) {
    return format_number(v.first) + " on " + scope_item(v.second->scope);
  };
  std::string text = m.name + " median " + format_number(values[values.size() / 2].first) + unit +
                     ", lowest " + at(values.front()) + ", highest " + at(values.back());
  return "| " + md_cell(first.benchmark) + " | " + md_cell(first.params.dump()) + " | " +
         std::to_string(recs.size()) + " items | ok | " + md_cell(text) + " |\n";
}

/// The records, summarised: ok and failed ones in a table (a sweep over message sizes is one
/// line, one case on many items is one line), waived ones one line per benchmark and reason.
/// records.jsonl and report.json hold every record.
void md_records(std::ostringstream& md, const RunDir& run) {
  md << "\n## Records\n\n";
  const auto& recs = run.records.records;
  if (recs.empty()) {
    md << "No records.\n";
    return;
  }
  std::map<Status, size_t> counts;
  std::vector<std::vector<const ResultRecord*>> cases;  // one case (sizes aside), every item
  std::map<std::string, size_t> case_at;
  std::vector<std::pair<std::string, size_t>> waived;  // "benchmark: reason", count
  std::map<std::string, size_t> waived_at;
  for (const auto& rec : recs) {
    ++counts[rec.status];
    if (rec.status == Status::waived) {
      const std::string key = "`" + rec.benchmark + "`: " + rec.message;
      auto [at, fresh] = waived_at.emplace(key, waived.size());
      if (fresh) waived.push_back({key, 0});
      ++waived[at->second].second;
      continue;
    }
    json params = rec.params;
    params.erase("bytes");
    const std::string key = rec.benchmark + "|" + params.dump() + "|" + status_name(rec.status);
    auto [at, fresh] = case_at.emplace(key, cases.size());
    if (fresh) cases.push_back({});
    cases[at->second].push_back(&rec);
  }
  md << recs.size() << " records: " << counts[Status::ok] << " ok, " << counts[Status::failed]
     << " failed, " << counts[Status::waived]
     << " waived (records.jsonl holds each one; report.html lists them).\n\n";
  if (!cases.empty())
    md << "| benchmark | params | item | status | metrics / message |\n|---|---|---|---|---|\n";
  for (const auto& c : cases) {
    std::vector<RecordGroup> by_item;
    std::map<std::string, size_t> item_at;
    bool sweep = false, metrics = true;
    for (const ResultRecord* r : c) {
      sweep = sweep || r->params.contains("bytes");
      metrics = metrics && !r->metrics.empty();
      auto [at, fresh] = item_at.emplace(scope_item(r->scope), by_item.size());
      if (fresh) by_item.push_back({});
      by_item[at->second].recs.push_back(r);
    }
    if (!sweep && metrics && c.front()->status == Status::ok && by_item.size() > 3 &&
        by_item.size() == c.size())
      md << across_items_line(c);
    else
      for (const auto& g : by_item) md << group_line(g);
  }
  if (!waived.empty()) md << "\nWaived cases:\n\n";
  for (const auto& [key, n] : waived)
    md << "- " << key << " (" << n << (n == 1 ? " case" : " cases") << ")\n";
}

}  // namespace

std::string render_markdown(const Report& r) {
  const RunDir& run = *r.run;
  std::ostringstream md;
  md_header(md, r);
  md << "\n" << render_first_page_markdown(first_page(r));
  md_requirements(md, r);
  md_measured(md, r);
  bool any_finding = false;
  for (const auto& row : r.rows) {
    if (row.outcome == kPass || row.outcome == kWaived) continue;  // waived: on the first page
    if (!any_finding) md << "\n## Findings\n\n";
    any_finding = true;
    md_finding(md, row);
  }
  if (!r.warnings.empty()) {
    md << "\n## Warnings\n\n";
    for (const auto& w : r.warnings) md << "- " << w << "\n";
  }
  md << "\n" << render_fleet_markdown(r.fleet);
  md << "\n" << render_uniformity_markdown(r.uniformity);
  if (auto links = render_link_matrices_markdown(r.links); !links.empty()) md << "\n" << links;
  if (auto mfu = render_mfu_markdown(r.mfu); !mfu.empty()) md << "\n" << mfu;
  md << "\n## Environment\n\n";
  if (run.run.env.empty()) md << "No env record in run.json.\n\n";
  for (const auto& e : run.run.env) env_summary(md, e);
  md_records(md, run);
  return md.str();
}

namespace {

/// One rows[] entry of report.json. docs/report.md "Scale": a row of up to kFullDetailItems
/// items lists each one; a larger one (8,000 GPUs) lists its non-PASS items and its worst item,
/// and counts the PASS ones.
json row_json(const RowResult& row) {
  const bool full = row.items.size() <= kFullDetailItems;
  json items = json::array();
  std::map<Outcome, int> item_counts;
  for (Outcome o : kOutcomeOrder) item_counts[o] = 0;
  std::vector<std::string> evidence;
  for (const auto& it : row.items) {
    ++item_counts[it.outcome];
    if (!full && it.outcome == kPass && it.item != row.worst_item) continue;
    json item = {{"item", it.item},
                 {"outcome", to_string(it.outcome)},
                 {"value", it.value},
                 {"records", it.records},
                 {"message", it.message}};
    if (!it.noise.is_null()) item["noise"] = it.noise;
    if (!it.measured.empty()) item["measured"] = it.measured;
    if (!full && it.records.size() > kItemRecords) {
      item["records"] =
          std::vector<std::string>(it.records.begin(), it.records.begin() + kItemRecords);
      item["records_count"] = it.records.size();
    }
    items.push_back(std::move(item));
    if (!full && evidence.size() < kFullDetailItems)
      evidence.insert(evidence.end(), it.records.begin(),
                      it.records.begin() + std::min(it.records.size(), kItemRecords));
  }
  if (!full && evidence.size() > kFullDetailItems) evidence.resize(kFullDetailItems);
  return {{"id", row.req.id},
          {"title", row.req.title},
          {"source", row.req.source},
          {"remedy", row.req.remedy.empty() ? json(nullptr) : json(row.req.remedy)},
          {"severity", row.req.severity},
          {"scope", row.req.scope},
          {"aggregate", row.req.aggregate},
          {"outcome", to_string(row.outcome)},
          {"value", row.value},
          {"unit", row.req.unit},
          {"op", row.req.op},
          {"threshold", row.req.value},
          {"relative", row.req.relative.empty() ? json(nullptr) : json(row.req.relative)},
          {"not_applicable", row.not_applicable.empty() ? json(nullptr) : json(row.not_applicable)},
          {"worst_item", row.worst_item},
          {"message", row.message},
          {"noise", row.noise},
          {"within_noise", row.noise.is_object() ? row.noise["within_noise"] : json(nullptr)},
          {"evidence", full ? json(row.evidence) : json(evidence)},
          {"evidence_count", row.evidence.size()},
          {"items", items},
          {"items_count", row.items.size()},
          {"items_listed", full ? "all" : "non-PASS and worst"},
          {"item_counts", outcome_counts_json(item_counts)}};
}

}  // namespace

json render_json(const Report& r) {
  json j;
  j["schema"] = kReportSchema;
  j["run_id"] = r.run_id;
  j["spec"] = {{"name", r.spec_name}, {"path", r.spec_path}, {"sha256", r.spec_sha256}};
  j["verdict"] = verdict(r.exit_code);
  j["exit_code"] = r.exit_code;
  j["aborted"] = r.aborted;
  j["abort_reason"] = r.abort_reason;
  j["hosts"] = r.hosts;
  json rows = json::array();
  for (const auto& row : r.rows) rows.push_back(row_json(row));
  j["rows"] = rows;
  j["counts"] = outcome_counts_json(r.counts);
  j["warnings"] = r.warnings;
  j["fleet"] = fleet_json(r.fleet);
  j["clusterbench_version"] = r.run->run.version;
  j["uniformity"] = uniformity_json(r.uniformity);
  j["mfu"] = mfu_json(r.mfu);
  return j;
}

std::string render_junit(const Report& r) {
  int failures = 0, skipped = 0;
  for (const auto& row : r.rows) {
    if (row.outcome == kFail) ++failures;
    if (row.outcome == kWaived || row.outcome == kMissing) ++skipped;
  }
  std::string suite = xml_escape("clusterbench." + r.spec_name);
  std::string cls = xml_escape(r.spec_name);
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"clusterbench\" tests=\"" << r.rows.size() << "\" failures=\"" << failures
    << "\" errors=\"0\" skipped=\"" << skipped << "\">\n";
  x << "  <testsuite name=\"" << suite << "\" tests=\"" << r.rows.size() << "\" failures=\""
    << failures << "\" errors=\"0\" skipped=\"" << skipped << "\">\n";
  x << "    <properties>\n";
  x << "      <property name=\"run_id\" value=\"" << xml_escape(r.run_id) << "\"/>\n";
  x << "      <property name=\"spec_path\" value=\"" << xml_escape(r.spec_path) << "\"/>\n";
  x << "      <property name=\"spec_sha256\" value=\"" << xml_escape(r.spec_sha256) << "\"/>\n";
  x << "      <property name=\"verdict\" value=\"" << verdict(r.exit_code) << "\"/>\n";
  x << "      <property name=\"exit_code\" value=\"" << r.exit_code << "\"/>\n";
  x << "    </properties>\n";
  for (const auto& row : r.rows) {
    x << "    <testcase classname=\"" << cls << "\" name=\"" << xml_escape(row.req.id) << "\">\n";
    std::string msg = xml_escape(row.message);
    std::string detail;
    for (const auto& it : row.items)
      if (it.outcome != kPass) detail += to_string(it.outcome) + ": " + it.message + "\n";
    if (row.outcome == kFail)
      x << "      <failure message=\"" << msg << "\" type=\"FAIL\">" << xml_escape(detail)
        << "</failure>\n";
    else if (row.outcome == kWaived || row.outcome == kMissing)
      x << "      <skipped message=\"" << xml_escape(to_string(row.outcome) + ": " + row.message)
        << "\"/>\n";
    else if (row.outcome == kWarn)
      x << "      <system-out>WARN: " << msg << "\n" << xml_escape(detail) << "</system-out>\n";
    x << "    </testcase>\n";
  }
  if (r.aborted)
    x << "    <system-err>run aborted: " << xml_escape(r.abort_reason) << "</system-err>\n";
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

std::string render_console(const Report& r) {
  size_t w_id = 3, w_val = 5, w_req = 11;
  for (const auto& row : r.rows) {
    w_id = std::max(w_id, row.req.id.size());
    w_val = std::max(w_val, format_value(row.value, row.req.unit).size());
    w_req = std::max(w_req, format_requirement(row.req).size());
  }
  auto pad = [](const std::string& s, size_t w) {
    return s + std::string(w - std::min(w, s.size()), ' ');
  };
  std::ostringstream out;
  out << pad("ROW", w_id) << "  " << pad("OUTCOME", 7) << "  " << pad("VALUE", w_val) << "  "
      << pad("REQUIREMENT", w_req) << "  WORST ITEM\n";
  for (const auto& row : r.rows)
    out << pad(row.req.id, w_id) << "  " << pad(to_string(row.outcome), 7) << "  "
        << pad(format_value(row.value, row.req.unit), w_val) << "  "
        << pad(format_requirement(row.req), w_req) << "  " << row.worst_item << "\n";
  for (const auto& w : r.warnings) out << "warning: " << w << "\n";
  out << "VERDICT: " << verdict(r.exit_code) << " (exit " << r.exit_code << "): " << counts_text(r);
  if (r.aborted) out << "; aborted: " << or_unknown(r.abort_reason);
  out << "\n";
  return out.str();
}

std::string render_console_details(const Report& r) {
  std::ostringstream out;
  out << "spec: " << r.spec_name << " (" << r.spec_path << "), sha256 "
      << (r.spec_sha256.empty() ? "unknown" : r.spec_sha256) << "; run by clusterbench "
      << or_unknown(r.run->run.version) << "\n";
  out << render_uniformity_console(r.uniformity);
  return out.str();
}

namespace {

/// What a previous output of `option` starts with (report.html, a Prometheus page, a PDF, a
/// gzip archive); "" for an option this does not know.
std::string output_magic(const std::string& option) {
  if (option == "--html") return "<!DOCTYPE html>";
  if (option == "--prometheus") return "# HELP ";
  if (option == "--pdf") return "%PDF-";
  if (option == "-o") return "\x1f\x8b";
  if (option == "--alert-rules") return kAlertRulesMagic;
  return "";
}

/// The files of a run directory (run.json beside them), which no output may replace.
bool run_dir_file(const std::filesystem::path& target) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(target.parent_path() / "run.json", ec)) return false;
  const std::string name = target.filename().string();
  for (const char* own : {"run.json", "records.jsonl", "gbench.json", "report.md", "report.json",
                          "report.html", "junit.xml", "failing-hosts.txt", "suspect-hosts.txt",
                          "run.lock", "compare.md", "compare.json", "compare.junit.xml"})
    if (name == own) return true;
  return false;
}

/// Why an existing regular file `target` may not be replaced by `option`'s output, or "".
std::string existing_file_refusal(const std::filesystem::path& target, const std::string& option,
                                  bool force) {
  if (run_dir_file(target))
    return "is a file of the run directory " + target.parent_path().string() +
           " (run.json beside it); write it elsewhere";
  const std::string magic = output_magic(option);
  if (force || magic.empty()) return "";
  std::ifstream in(target, std::ios::binary);
  std::string head(magic.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  bool earlier = in.gcount() == static_cast<std::streamsize>(head.size()) && head == magic;
  if (earlier && option == "--prometheus") {  // a Prometheus page, and one of ours
    std::string page(64 * 1024, '\0');
    in.read(page.data(), static_cast<std::streamsize>(page.size()));
    earlier = page.find("clusterbench_") != std::string::npos;
  }
  if (earlier) return "";
  return "exists and is not an earlier " + option +
         " output; name a new file, or pass --force to replace it";
}

}  // namespace

void check_output_file(const std::string& path, const std::string& option,
                       const std::string& run_dir, bool force) {
  namespace fs = std::filesystem;
  std::string what = option + " " + path + ": ";
  if (path.empty()) throw InputError(what + "empty path");
  std::error_code ec;
  fs::path target = fs::weakly_canonical(fs::absolute(path, ec), ec);
  fs::path parent = fs::absolute(path, ec).parent_path();
  if (!run_dir.empty()) {
    fs::path run = fs::weakly_canonical(fs::absolute(run_dir, ec), ec);
    auto rel = target.lexically_relative(run);
    if (!rel.empty() && *rel.begin() != ".." && !rel.is_absolute())
      throw InputError(what + "lies inside the run directory " + run.string() +
                       "; write it elsewhere");
  }
  if (fs::is_directory(path, ec)) throw InputError(what + "is a directory; name a file");
  // The atomic rename would replace the link itself (/dev/stdout -> /proc/self/fd/1 for every
  // process of the machine), not the file it names.
  if (fs::is_symlink(fs::symlink_status(path, ec)))
    throw InputError(what + "is a symbolic link (to " + fs::read_symlink(path, ec).string() +
                     "); name the file itself");
  // A device, FIFO or socket (/dev/null, /dev/stdout) would be replaced by the atomic rename.
  if (fs::exists(fs::symlink_status(path, ec)) && !fs::is_regular_file(path, ec))
    throw InputError(what + "exists and is not a regular file");
  if (fs::is_regular_file(path, ec))
    if (std::string why = existing_file_refusal(target, option, force); !why.empty())
      throw InputError(what + why);
  if (!fs::is_directory(parent, ec))
    throw InputError(what + "directory " + parent.string() + " does not exist");
  std::string probe = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw InputError(what + "cannot create a file in " + parent.string() + " (" +
                     std::strerror(errno) + ")");
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_output_dir(const std::string& dir, const std::string& option) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string what = option + " " + dir + ": ";
  if (ec == std::errc::not_a_directory || ec == std::errc::file_exists)
    throw InputError(what + "is not a directory");
  if (ec) throw InputError(what + "cannot create directory (" + ec.message() + ")");
}

void check_writable_dir(const std::string& dir, const std::string& option) {
  // A file made and removed: access(W_OK) says yes to root on /proc or a read-only mount.
  std::string probe = dir + "/.cb-write-probe.XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    const int err = errno;
    throw InputError(option + " " + dir + ": cannot write into it (" + std::strerror(err) + ")");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void write_reports(const Report& r, const std::string& dir) {
  check_output_dir(dir, "--out");
  // The charts (gnuplot is an external process per chart) are drawn while the rest is written.
  auto charts =
      std::async(std::launch::async, [&] { return render_charts_html(r, find_gnuplot()); });
  std::vector<std::pair<std::string, std::string>> files = {
      {dir + "/report.md", render_markdown(r)},
      {dir + "/report.json", dump_json(render_json(r), 2) + "\n"},
      {dir + "/junit.xml", render_junit(r)},
      {dir + "/failing-hosts.txt", render_failing_hosts(r.fleet)},
      {dir + "/suspect-hosts.txt", render_suspect_hosts(r.fleet)}};
  const std::string charts_html = charts.get();
  files.emplace_back(dir + "/report.html", render_html(r, find_gnuplot(), &charts_html));
  write_files_atomic(files);  // all or none: never a report.md without the rest
}

}  // namespace clusterbench::report
