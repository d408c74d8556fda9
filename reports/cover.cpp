// The procurement PDF's cover (reports/cover.hpp).
#include "reports/cover.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "reports/render.hpp"

namespace clusterbench::report {

namespace {

std::string h(const std::string& s) { return xml_escape(s); }

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

/// "32 GPUs: 32 x NVIDIA H100 80GB HBM3" over every node's EnvRecord ("no GPU" when none).
std::string gpu_summary(const RunDir& run) {
  std::map<std::string, int> by_model;
  int total = 0;
  for (const auto& env : run.run.env)
    for (const auto& g : env.gpus) ++by_model[g.name.empty() ? "unknown model" : g.name], ++total;
  if (total == 0) return "no GPU";
  std::string out = std::to_string(total) + " GPU" + (total == 1 ? "" : "s") + ":";
  bool first = true;
  for (const auto& [model, n] : by_model)
    out += (first ? " " : ", ") + std::to_string(n) + " x " + model, first = false;
  return out;
}

/// "4 nodes: node01, node02, node03, node04" (the first 8 named, then a count).
std::string node_summary(const Report& r) {
  std::string out = std::to_string(r.hosts.size()) + " node" + (r.hosts.size() == 1 ? "" : "s");
  for (size_t i = 0; i < r.hosts.size() && i < 8; ++i) out += (i ? ", " : ": ") + r.hosts[i];
  if (r.hosts.size() > 8) out += ", and " + std::to_string(r.hosts.size() - 8) + " more";
  return out;
}

/// One node's serials row: system (vendor, product, serial), board, chassis, its GPUs' serials.
void serials_row(std::ostringstream& o, const EnvRecord& env) {
  const DmiInfo& d = env.dmi;
  std::string system = d.sys_vendor + (d.product_name.empty() ? "" : " " + d.product_name);
  std::string gpus;
  size_t shown = 0, unread = 0;
  for (const auto& g : env.gpus) {
    if (g.serial.empty()) {
      ++unread;
      continue;
    }
    if (shown++ < kCoverGpuSerials) gpus += (gpus.empty() ? "" : ", ") + g.serial;
  }
  if (shown > kCoverGpuSerials)
    gpus += ", and " + std::to_string(shown - kCoverGpuSerials) + " more";
  if (unread) gpus += (gpus.empty() ? "" : "; ") + std::to_string(unread) + " not read";
  o << "<tr><td>" << h(env.host) << "</td><td>" << h(or_dash(system)) << "</td><td>"
    << h(or_dash(d.product_serial)) << "</td><td>" << h(or_dash(d.board_serial)) << "</td><td>"
    << h(or_dash(d.chassis_serial)) << "</td><td class=\"num\">" << env.gpus.size() << "</td><td>"
    << h(or_dash(gpus)) << "</td></tr>\n";
}

/// "What failed": each FAIL row's title, how many of its items failed and the worst one (the
/// first kCoverFailedRows rows; the report's first page says what to do about them).
void failed_rows(std::ostringstream& o, const Report& r) {
  std::vector<const RowResult*> failed;
  for (const auto& row : r.rows)
    if (row.outcome == kFail) failed.push_back(&row);
  if (failed.empty()) return;
  o << "<h2>What failed</h2>\n<ul class=\"cover-failed\">\n";
  for (size_t i = 0; i < failed.size() && i < kCoverFailedRows; ++i) {
    const RowResult& row = *failed[i];
    const auto n = std::count_if(row.items.begin(), row.items.end(),
                                 [](const ItemResult& it) { return it.outcome == kFail; });
    o << "<li>" << h(row.req.title) << ": " << n << " of " << row.items.size()
      << " failed; the worst " << h(or_dash(row.worst_item)) << "</li>\n";
  }
  if (failed.size() > kCoverFailedRows)
    o << "<li>and " << failed.size() - kCoverFailedRows << " more rows</li>\n";
  o << "</ul>\n";
}

}  // namespace

std::string render_cover_html(const Report& r) {
  const RunDir& run = *r.run;
  std::ostringstream o;
  o << "<section class=\"cover\" id=\"cover\">\n<h1>Cluster acceptance report</h1>\n";
  o << "<p class=\"verdict v" << r.exit_code << "\">Verdict: <b>" << h(verdict(r.exit_code))
    << "</b> (" << h(exit_code_meaning(r.exit_code)) << ")</p>\n<table class=\"cover-facts\">\n";
  o << "<tr><th>cluster</th><td>" << h(node_summary(r)) << "<br>" << h(gpu_summary(run))
    << "</td></tr>\n";
  o << "<tr><th>measured</th><td>" << h(or_dash(run.run.started_at)) << " to "
    << h(or_dash(run.run.finished_at)) << " (suite " << h(or_dash(run.run.suite))
    << (run.run.rounds > 1 ? " in " + std::to_string(run.run.rounds) + " rounds" : "") << ", run "
    << h(r.run_id) << ")</td></tr>\n";
  o << "<tr><th>spec table</th><td>" << h(r.spec_name)
    << (r.spec ? " (" + h(r.spec->title) + ")" : std::string()) << "<br><code>" << h(r.spec_path)
    << "</code><br>sha256 <code>" << h(or_dash(r.spec_sha256)) << "</code></td></tr>\n";
  o << "<tr><th>clusterbench</th><td>" << h(or_dash(run.run.version)) << "</td></tr>\n";
  o << "<tr><th>rows</th><td>";
  for (Outcome oc : kOutcomeOrder) o << h(to_string(oc)) << " " << r.counts.at(oc) << " &nbsp; ";
  o << "</td></tr>\n</table>\n";
  failed_rows(o, r);
  o << "<h2>Serials</h2>\n<table class=\"cover-serials\">\n"
    << "<tr><th>node</th><th>system</th><th>system serial</th><th>board serial</th>"
       "<th>chassis serial</th><th>GPUs</th><th>GPU serials</th></tr>\n";
  for (size_t i = 0; i < run.run.env.size() && i < kCoverNodes; ++i) serials_row(o, run.run.env[i]);
  o << "</table>\n";
  if (run.run.env.size() > kCoverNodes)
    o << "<p>And " << run.run.env.size() - kCoverNodes
      << " more nodes: the Environment section lists every node.</p>\n";
  o << "</section>\n";
  return o.str();
}

}  // namespace clusterbench::report
