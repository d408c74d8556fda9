// report.html and its PDF (docs/report.md "report.html").
#include "reports/html.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "process/process.hpp"
#include "reports/charts.hpp"
#include "reports/cover.hpp"
#include "reports/first_page.hpp"
#include "reports/render.hpp"
#include "reports/uniformity_render.hpp"

namespace clusterbench::report {

namespace {

std::string h(const std::string& s) { return xml_escape(s); }

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

std::string outcome_cell(Outcome outcome) {
  const std::string& o = to_string(outcome);
  return "<td class=\"o o-" + h(o) + "\">" + h(o) + "</td>";
}

const char* kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:1200px;color:#1b1b1b;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right}
.o{font-weight:bold}.o-PASS{background:#d8f5d8}.o-FAIL{background:#f8d0d0}.o-WARN{background:#fff0c0}
.o-MISSING{background:#f0d8f0}.o-WAIVED{background:#e4e4e4}
.verdict{font-size:1.3em;padding:.5em 1em;display:inline-block;border-radius:4px}
.v0{background:#d8f5d8}.v1,.v3{background:#f8d0d0}.v4{background:#fff0c0}
figure.chart{margin:1em 0;border:1px solid #ddd;padding:.5em}figure.chart svg{max-width:100%;height:auto}
figcaption{font-weight:bold;margin-bottom:.3em}code,pre{font-size:.85em}
.src{font-size:.85em;color:#444}
.cover{display:none}.cover h1{font-size:2em;margin-top:1em}.cover table{font-size:1em}
.cover td,table.verdicts td{overflow-wrap:anywhere}table{max-width:100%}
@media print{body{max-width:none}figure.chart{page-break-inside:avoid}
.cover{display:block;page-break-after:always;break-after:page}}
)";

void header(std::ostringstream& o, const Report& r) {
  const RunDir& run = *r.run;
  o << "<h1>clusterbench report: " << h(r.spec_name) << "</h1>\n";
  o << "<p class=\"verdict v" << r.exit_code << "\">Verdict: <b>" << h(verdict(r.exit_code))
    << "</b> (exit " << r.exit_code << ": " << h(exit_code_meaning(r.exit_code)) << ")</p>\n";
  o << "<table>\n<tr><th>run</th><td>" << h(r.run_id) << "</td></tr>\n";
  o << "<tr><th>started / finished</th><td>" << h(or_dash(run.run.started_at)) << " / "
    << h(or_dash(run.run.finished_at)) << "</td></tr>\n";
  o << "<tr><th>suite</th><td>" << h(or_dash(run.run.suite)) << "</td></tr>\n";
  o << "<tr><th>spec</th><td>" << h(r.spec_name) << " (<code>" << h(r.spec_path)
    << "</code>, sha256 <code>" << h(or_dash(r.spec_sha256)) << "</code>)</td></tr>\n";
  o << "<tr><th>clusterbench</th><td>" << h(or_dash(run.run.version)) << "</td></tr>\n";
  o << "<tr><th>hosts</th><td>" << r.hosts.size() << "</td></tr>\n";
  o << "<tr><th>rows</th><td>";
  for (Outcome oc : kOutcomeOrder) o << h(to_string(oc)) << " " << r.counts.at(oc) << " &nbsp; ";
  o << "</td></tr>\n";
  if (r.aborted) o << "<tr><th>aborted</th><td>" << h(r.abort_reason) << "</td></tr>\n";
  o << "</table>\n";
}

void verdict_table(std::ostringstream& o, const Report& r) {
  o << "<h2 id=\"verdicts\">Verdicts</h2>\n<table class=\"verdicts\">\n";
  o << "<tr><th>row</th><th>title</th><th>severity</th><th>outcome</th><th>value</th>"
       "<th>requirement</th><th>worst item</th><th>message</th></tr>\n";
  for (const auto& row : r.rows)
    o << "<tr><td><code>" << h(row.req.id) << "</code></td><td>" << h(row.req.title) << "</td><td>"
      << h(row.req.severity) << "</td>" << outcome_cell(row.outcome) << "<td class=\"num\">"
      << h(format_value(row.value, row.req.unit)) << "</td><td>" << h(format_requirement(row.req))
      << "</td><td>" << h(or_dash(row.worst_item)) << "</td><td>" << h(row.message)
      << "</td></tr>\n";
  o << "</table>\n";
  if (!r.warnings.empty()) {
    o << "<h3>Warnings</h3>\n<ul>\n";
    for (const auto& w : r.warnings) o << "<li>" << h(w) << "</li>\n";
    o << "</ul>\n";
  }
}

/// A heading and its hosts, one per line in a <pre> of class `cls` ("None." when empty).
void host_list(std::ostringstream& o, const std::string& title, const std::string& cls,
               const std::vector<std::string>& hosts) {
  o << "<h3>" << h(title) << "</h3>\n";
  if (hosts.empty()) {
    o << "<p>None.</p>\n";
    return;
  }
  o << "<pre class=\"" << cls << "\">";
  for (const auto& x : hosts) o << h(x) << "\n";
  o << "</pre>\n";
}

void fleet_section(std::ostringstream& o, const FleetView& f) {
  o << "<h2 id=\"fleet\">Fleet</h2>\n<table class=\"fleet\">\n<tr><th>node</th>";
  for (Outcome oc : kOutcomeOrder) o << "<th>" << h(to_string(oc)) << "</th>";
  o << "<th>records ok/failed/waived</th><th>outliers</th><th>drain because</th>"
       "<th>suspect because</th></tr>\n";
  for (const auto& n : f.nodes) {
    std::string why, suspect;
    for (const auto& r : n.reasons) why += (why.empty() ? "" : "; ") + r;
    for (const auto& r : n.suspicions) suspect += (suspect.empty() ? "" : "; ") + r;
    o << "<tr" << (why.empty() ? "" : " class=\"failing\"") << "><td>" << h(n.host) << "</td>";
    for (Outcome oc : kOutcomeOrder) o << "<td class=\"num\">" << n.items.at(oc) << "</td>";
    o << "<td>" << n.records_ok << "/" << n.records_failed << "/" << n.records_waived
      << "</td><td class=\"num\">" << n.outliers << "</td><td>" << h(or_dash(why)) << "</td><td>"
      << h(or_dash(suspect)) << "</td></tr>\n";
  }
  o << "</table>\n<h3>Outliers (worse than the fleet median by more than the tolerance)</h3>\n";
  if (f.outliers.empty()) {
    o << "<p>None.</p>\n";
  } else {
    o << "<table class=\"outliers\">\n<tr><th>benchmark</th><th>params</th><th>metric</th>"
         "<th>host</th><th>GPU</th><th>UUID</th><th>PCI bus id</th><th>value</th>"
         "<th>fleet median</th><th>deviation</th><th>tolerance</th></tr>\n";
    for (const auto& x : f.outliers) {
      char dev[32];
      std::snprintf(dev, sizeof dev, "%+.2f%%", x.deviation * 100);
      o << "<tr><td>" << h(x.benchmark) << "</td><td><code>" << h(x.params.dump())
        << "</code></td><td>" << h(x.metric) << "</td><td>" << h(x.kind == "link" ? x.item : x.host)
        << "</td><td>" << (x.gpu_index >= 0 ? std::to_string(x.gpu_index) : "-") << "</td><td>"
        << h(or_dash(x.uuid)) << "</td><td>" << h(or_dash(x.pci_bus_id))
        << "</td><td class=\"num\">" << h(format_number(x.value) + " " + x.unit)
        << "</td><td class=\"num\">" << h(format_number(x.median) + " " + x.unit)
        << "</td><td class=\"num\">" << dev << "</td><td class=\"num\">"
        << h(format_number(x.tolerance * 100)) << "%</td></tr>\n";
    }
    o << "</table>\n";
  }
  host_list(o, "Failing hosts (a FAIL row: drain)", "failing-hosts", f.failing_hosts);
  host_list(o, "Suspect hosts (no FAIL row: look, do not drain)", "suspect-hosts", f.suspect_hosts);
}

void charts_section(std::ostringstream& o, const Report& r, const std::string& gnuplot) {
  auto charts = build_charts(r);
  if (charts.empty()) {
    o << "<p>No ok records to chart.</p>\n";
    return;
  }
  if (gnuplot.empty()) {
    o << "<p class=\"no-gnuplot\">gnuplot was not found on PATH, so the " << charts.size()
      << " chart(s) are omitted (Debian: <code>apt-get install gnuplot-nox</code>; "
         "scripts/setup.sh installs it).</p>\n";
    return;
  }
  std::vector<std::string> errors;
  auto svgs = render_svgs(charts, gnuplot, &errors);
  for (size_t i = 0; i < charts.size(); ++i) {
    const Chart& c = charts[i];
    o << "<figure class=\"chart\" id=\"" << h(c.id) << "\" data-records=\"" << c.records
      << "\" data-series=\"" << c.series.size() << "\" data-spec-lines=\"" << c.spec_lines.size()
      << "\" data-kind=\"" << h(c.kind) << "\">\n<figcaption>" << h(c.title) << " (" << c.records
      << " records" << (c.note.empty() ? "" : "; " + h(c.note)) << ")</figcaption>\n";
    if (svgs[i])
      o << *svgs[i] << "\n";
    else
      o << "<p class=\"chart-error\">gnuplot could not draw this chart: " << h(errors[i])
        << "</p>\n";
    o << "</figure>\n";
  }
}

void env_section(std::ostringstream& o, const RunDir& run) {
  o << "<h2 id=\"environment\">Environment</h2>\n";
  if (run.run.env.empty()) {
    o << "<p>No env record in run.json.</p>\n";
    return;
  }
  o << "<table class=\"env\">\n<tr><th>host</th><th>CPU</th><th>memory</th><th>GPUs</th>"
       "<th>driver</th><th>CUDA</th><th>cuBLAS</th><th>NCCL</th><th>MPI</th><th>kernel</th>"
       "<th>fio</th><th>governor / THP / hugepages</th></tr>\n";
  for (const auto& e : run.run.env) {
    std::map<std::string, int> models;
    for (const auto& g : e.gpus) ++models[g.name];
    std::string gpus;
    for (const auto& [m, n] : models)
      gpus += (gpus.empty() ? "" : "; ") + std::to_string(n) + " x " + m;
    const auto& v = e.versions;
    o << "<tr><td>" << h(e.host) << "</td><td>" << h(or_dash(e.cpu.model)) << ", "
      << e.cpu.physical_cores << " cores</td><td>" << h(format_known(e.memory.installed_gib, "GiB"))
      << "</td><td>" << h(gpus.empty() ? "none" : gpus) << "</td><td>" << h(or_dash(v.driver))
      << "</td><td>" << h(or_dash(v.cuda_runtime)) << "</td><td>" << h(or_dash(v.cublas))
      << "</td><td>" << h(or_dash(v.nccl)) << "</td><td>" << h(or_dash(v.mpi)) << "</td><td>"
      << h(or_dash(v.kernel)) << "</td><td>" << h(or_dash(v.fio)) << "</td><td>"
      << h(or_dash(e.tuning.governor)) << " / " << h(or_dash(e.tuning.thp)) << " / "
      << e.tuning.nr_hugepages << "</td></tr>\n";
  }
  o << "</table>\n";
  for (const auto& e : run.run.env) {
    if (e.gpus.empty() && e.nics.empty()) continue;
    o << "<details><summary>" << h(e.host) << ": GPUs and NICs</summary>\n<table>\n"
      << "<tr><th>GPU</th><th>name</th><th>UUID</th><th>PCI bus id</th><th>VBIOS</th>"
         "<th>PCIe</th><th>NVLink up</th><th>ECC</th></tr>\n";
    for (const auto& g : e.gpus)
      o << "<tr><td>" << g.index << "</td><td>" << h(g.name) << "</td><td>" << h(or_dash(g.uuid))
        << "</td><td>" << h(or_dash(g.pci_bus_id)) << "</td><td>" << h(or_dash(g.vbios))
        << "</td><td>gen " << g.pcie.gen_current << "/" << g.pcie.gen_max << " x"
        << g.pcie.width_current << "/" << g.pcie.width_max << "</td><td>"
        << h(format_known(g.nvlink_links_up, "count")) << "</td><td>" << h(or_dash(g.ecc_mode))
        << "</td></tr>\n";
    for (const auto& n : e.nics)
      o << "<tr><td>NIC</td><td>" << h(n.name) << " (" << h(n.link_layer) << ")</td><td>"
        << h(n.state) << "</td><td>" << h(or_dash(n.netdev)) << "</td><td>"
        << h(or_dash(n.firmware)) << "</td><td>" << h(format_known(n.rate_gbps, "Gb/s"))
        << "</td><td>-</td><td>MTU " << n.mtu << "</td></tr>\n";
    o << "</table>\n</details>\n";
  }
}

void spec_section(std::ostringstream& o, const Report& r) {
  o << "<h2 id=\"spec\">Spec: " << h(r.spec_name) << "</h2>\n<p><code>" << h(r.spec_path)
    << "</code></p>\n<table class=\"spec\">\n<tr><th>row</th><th>selects</th><th>scope</th>"
       "<th>requirement</th><th>severity</th><th>source</th></tr>\n";
  for (const auto& row : r.rows) {
    const auto& q = row.req;
    std::string sel = !q.select.health.empty() ? "health " + q.select.health
                      : !q.select.env.empty()  ? "env " + q.select.env
                                               : q.select.benchmark + " " + q.select.params.dump() +
                                                    " " + q.select.metric;
    if (!q.select.require.empty()) sel += " require " + q.select.require.dump();
    o << "<tr><td><code>" << h(q.id) << "</code></td><td><code>" << h(sel) << "</code></td><td>"
      << h(q.scope) << "</td><td>" << h(format_requirement(q)) << "</td><td>" << h(q.severity)
      << "</td><td class=\"src\">" << h(or_dash(q.source)) << "</td></tr>\n";
  }
  o << "</table>\n";
}

}  // namespace

std::string render_charts_html(const Report& r, const std::string& gnuplot) {
  std::ostringstream o;
  o << "<h2 id=\"charts\">Charts</h2>\n";
  charts_section(o, r, gnuplot);
  return o.str();
}

std::string render_html(const Report& r, const std::string& gnuplot, const std::string* charts) {
  const RunDir& run = *r.run;
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    << "<title>clusterbench report " << h(r.run_id) << "</title>\n<style>" << kStyle
    << "</style>\n</head>\n<body>\n";
  o << render_cover_html(r);  // print only: the PDF's first page
  header(o, r);
  o << "<p><a href=\"#verdicts\">Verdicts</a> · <a href=\"#fleet\">Fleet</a> · "
       "<a href=\"#uniformity\">Uniformity</a> · <a href=\"#charts\">Charts</a> · "
       "<a href=\"#environment\">Environment</a> · "
       "<a href=\"#spec\">Spec</a></p>\n";
  o << render_first_page_html(first_page(r));
  verdict_table(o, r);
  fleet_section(o, r.fleet);
  o << render_uniformity_html(r.uniformity);
  o << (charts ? *charts : render_charts_html(r, gnuplot));
  env_section(o, run);
  spec_section(o, r);
  o << "<p class=\"src\">Written by clusterbench from " << h(run.dir)
    << ".</p>\n</body>\n</html>\n";
  return o.str();
}

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (std::string p = find_on_path(name); !p.empty()) return p;
  return "";
}

namespace {
/// `path` as a file:// URL: every byte but unreserved ones and '/' percent-encoded (RFC 3986), so
/// that '#', '?' and '%' in a run directory's name stay part of the path.
std::string file_url(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string url = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      url += static_cast<char>(c);
    } else {
      url += '%';
      url += hex[c >> 4];
      url += hex[c & 15];
    }
  }
  return url;
}

/// The end of a long text (Chromium's stderr is mostly its wrapper's and D-Bus's noise; the
/// reason comes last).
std::string tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}
}  // namespace

std::string print_pdf(const std::string& html_path, const std::string& pdf_path) {
  std::string chromium = find_chromium();
  if (chromium.empty())
    return "--pdf needs Chromium: none of chromium, chromium-browser, google-chrome is on PATH "
           "(Debian: apt-get install chromium)";
  std::error_code ec;
  std::string abs = std::filesystem::absolute(html_path, ec).string();
  std::string pdf_abs = std::filesystem::absolute(pdf_path, ec).string();
  // Chromium prints into a private directory; the PDF replaces `pdf_path` (atomically) only once
  // it exists, so a failed print leaves whatever was there.
  TempDir work("chromium");
  if (work.path.empty()) return "cannot create a temporary directory for Chromium's output";
  const std::string printed = work.path + "/report.pdf";
  ProcessResult p =
      run_process({chromium, "--headless", "--no-sandbox", "--disable-gpu",
                   "--disable-background-networking", "--disable-dev-shm-usage", "--no-first-run",
                   "--no-pdf-header-footer", "--print-to-pdf=" + printed, file_url(abs)},
                  {}, "", work.path, kChromiumTimeoutS);
  if (p.timed_out)
    return chromium + " did not print " + pdf_path + " within " +
           std::to_string(static_cast<int>(kChromiumTimeoutS)) + " s; killed";
  if (p.exit_code != 0 || !std::filesystem::is_regular_file(printed, ec) ||
      std::filesystem::file_size(printed, ec) == 0)
    return chromium + " did not print " + pdf_path + " (exit " + std::to_string(p.exit_code) +
           "): " + tail(p.err, 1500);
  std::ifstream in(printed, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    write_file_atomic(pdf_abs, bytes);
  } catch (const std::exception& e) {
    return std::string("--pdf ") + pdf_path + ": " + e.what();
  }
  return "";
}

}  // namespace clusterbench::report
