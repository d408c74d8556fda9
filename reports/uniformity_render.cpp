// Uniformity printed (uniformity_render.hpp).
#include "reports/uniformity_render.hpp"

#include <sstream>

#include "reports/text.hpp"

namespace clusterbench::report {

std::string render_uniformity_markdown(const Uniformity& u) {
  std::ostringstream md;
  int nodes = u.fields.empty() ? 0 : u.fields.front().nodes;
  md << "## Uniformity\n\n";
  md << "Fields that should be identical on every node; the most common value is the reference"
        " (docs/report.md#uniformity). ";
  if (u.hosts.empty())
    md << "All " << u.fields.size() << " fields agree on the " << nodes
       << " node(s); report.json and report.html list their values.\n";
  else
    md << u.hosts.size() << " of " << nodes << " node(s) differ: " << [&] {
      std::string s;
      for (const auto& h : u.hosts) s += (s.empty() ? "" : ", ") + h;
      return s;
    }() << ".\n\n";
  // The fields every node agrees on are in report.json and report.html; here only the others.
  bool table = false;
  for (const auto& f : u.fields) {
    if (f.agreeing == f.nodes && f.deviations.empty()) continue;
    if (!table)
      md << "| field | reference | nodes agreeing | differing nodes |\n|---|---|---|---|\n";
    table = true;
    std::string who;
    for (const auto& d : f.deviations) who += (who.empty() ? "" : ", ") + d.host;
    md << "| " << md_cell(f.name) << " | " << md_cell(f.reference)
       << (f.expected.empty() ? "" : " (expected " + f.expected + ")") << " | " << f.agreeing << "/"
       << f.nodes << " | " << md_cell(who.empty() ? "none" : who) << " |\n";
  }
  if (!u.deviations.empty()) {
    md << "\n| host | field | value | reference | why |\n|---|---|---|---|---|\n";
    for (const auto& d : u.deviations)
      md << "| " << md_cell(d.host) << " | " << md_cell(d.field) << " | " << md_cell(d.value)
         << " | " << md_cell(d.reference) << " | " << md_cell(d.reason) << " |\n";
  }
  return md.str();
}

json uniformity_json(const Uniformity& u) {
  json fields = json::array();
  for (const auto& f : u.fields) {
    json devs = json::array();
    for (const auto& d : f.deviations)
      devs.push_back({{"host", d.host}, {"value", d.value}, {"reason", d.reason}});
    fields.push_back({{"name", f.name},
                      {"group", f.group},
                      {"reference", f.reference},
                      {"expected", f.expected},
                      {"nodes", f.nodes},
                      {"agreeing", f.agreeing},
                      {"majority", f.majority},
                      {"deviations", devs}});
  }
  json devs = json::array();
  for (const auto& d : u.deviations)
    devs.push_back({{"host", d.host},
                    {"field", d.field},
                    {"value", d.value},
                    {"reference", d.reference},
                    {"reason", d.reason}});
  return {{"fields", fields}, {"deviations", devs}, {"hosts", u.hosts}};
}

std::string render_uniformity_console(const Uniformity& u, size_t max_lines) {
  std::ostringstream out;
  int nodes = u.fields.empty() ? 0 : u.fields.front().nodes;
  if (u.deviations.empty()) {
    out << "uniformity: " << u.fields.size() << " fields identical on " << nodes << " node(s)\n";
    return out.str();
  }
  out << "uniformity: " << u.hosts.size() << " of " << nodes << " node(s) differ\n";
  for (size_t i = 0; i < u.deviations.size() && i < max_lines; ++i) {
    const auto& d = u.deviations[i];
    out << "  " << d.host << ": " << d.field << " = " << d.value << " (reference " << d.reference
        << "; " << d.reason << ")\n";
  }
  if (u.deviations.size() > max_lines)
    out << "  ... and " << u.deviations.size() - max_lines << " more (report.md, Uniformity)\n";
  return out.str();
}

std::string render_uniformity_html(const Uniformity& u) {
  auto h = [](const std::string& s) { return xml_escape(s); };
  std::ostringstream o;
  o << "<h2 id=\"uniformity\">Uniformity</h2>\n";
  if (u.hosts.empty())
    o << "<p>All " << u.fields.size() << " fields agree on every node.</p>\n";
  else
    o << "<p>" << u.hosts.size() << " node(s) differ from the fleet.</p>\n";
  o << "<table class=\"uniformity\">\n<tr><th>field</th><th>reference</th><th>expected</th>"
       "<th>nodes agreeing</th><th>differing nodes</th></tr>\n";
  for (const auto& f : u.fields) {
    std::string who;
    for (const auto& d : f.deviations) who += (who.empty() ? "" : ", ") + d.host;
    o << "<tr" << (who.empty() ? "" : " class=\"failing\"") << "><td><code>" << h(f.name)
      << "</code></td><td>" << h(f.reference) << "</td><td>"
      << h(f.expected.empty() ? "-" : f.expected) << "</td><td class=\"num\">" << f.agreeing << "/"
      << f.nodes << "</td><td>" << h(who.empty() ? "none" : who) << "</td></tr>\n";
  }
  o << "</table>\n";
  if (!u.deviations.empty()) {
    o << "<table class=\"uniformity-deviations\">\n<tr><th>host</th><th>field</th><th>value</th>"
         "<th>reference</th><th>why</th></tr>\n";
    for (const auto& d : u.deviations)
      o << "<tr><td>" << h(d.host) << "</td><td><code>" << h(d.field) << "</code></td><td>"
        << h(d.value) << "</td><td>" << h(d.reference) << "</td><td>" << h(d.reason)
        << "</td></tr>\n";
    o << "</table>\n";
  }
  return o.str();
}

}  // namespace clusterbench::report
