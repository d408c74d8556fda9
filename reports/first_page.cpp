// The first page of the reports (first_page.hpp).
#include "reports/first_page.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "reports/render.hpp"

namespace clusterbench::report {

namespace {

/// `text` with every occurrence of `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty() || from == to) return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

/// What follows "ITEM: " and "waived: " in a WAIVED item's message: the reason alone.
std::string waived_reason(const ItemResult& it) {
  std::string m = it.message;
  if (m.rfind(it.item + ": ", 0) == 0) m = m.substr(it.item.size() + 2);
  if (m.rfind("waived: ", 0) == 0) m = m.substr(8);
  return m.empty() ? "waived" : m;
}

/// "node01, node02 and 3 more" for the items that share one message.
std::string names_text(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 3);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

/// A row's non-PASS items in words; items whose messages differ only in their own name (every
/// node MISSING the same record) share one line that names them.
FirstPageEntry entry_of(const RowResult& row, const RunDir& run) {
  FirstPageEntry e;
  e.row = &row;
  std::vector<std::pair<std::string, std::vector<std::string>>> lines;  // text with \x01, names
  std::map<std::string, size_t> line_at;
  for (const auto& it : row.items) {
    if (it.outcome == kPass) continue;
    const std::string text = replace_all(it.message, it.item, "\x01");
    auto [at, fresh] = line_at.emplace(text, lines.size());
    if (fresh) lines.push_back({text, {}});
    lines[at->second].second.push_back(item_words(it.item, run));
  }
  for (const auto& [text, names] : lines) {
    if (e.items.size() == kFirstPageItems) {
      e.more += names.size();
      continue;
    }
    e.items.push_back(replace_all(text, "\x01", names_text(names)));
  }
  if (e.items.empty() && !row.message.empty()) e.items.push_back(row.message);
  return e;
}

}  // namespace

namespace {

/// `text` as one Markdown line ending in one full stop.
std::string sentence(const std::string& text) {
  std::string t = md_text(text);
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return !t.empty() && t.back() == '.' ? t : t + ".";
}

/// Text from outside as Markdown inline code that survives backticks.
std::string code_text(const std::string& text) { return md_code(md_text(text)); }

void entries_md(std::ostringstream& md, const std::vector<FirstPageEntry>& entries, bool remedies) {
  for (const auto& e : entries) {
    const RowResult& row = *e.row;
    md << "- **" << md_text(row.req.title) << "** (" << code_text(row.req.id) << ")";
    if (e.items.size() == 1 && e.more == 0)
      md << ": " << sentence(e.items[0]);
    else
      md << ":";
    if (remedies && !row.req.remedy.empty()) md << " What to do: " << sentence(row.req.remedy);
    md << "\n";
    if (e.items.size() > 1 || e.more > 0) {
      for (const auto& line : e.items) md << "  - " << md_text(line) << "\n";
      if (e.more > 0) md << "  - and " << e.more << " more (report.json lists them)\n";
    }
  }
}

}  // namespace

std::string item_words(const std::string& item, const RunDir& run) {
  const size_t slash = item.find("/gpu");
  if (slash == std::string::npos) return item;
  const std::string host = item.substr(0, slash);
  size_t end = slash + 4;
  while (end < item.size() && std::isdigit(static_cast<unsigned char>(item[end]))) ++end;
  if (end == slash + 4) return item;
  const int index = std::stoi(item.substr(slash + 4, end - slash - 4));
  std::string words = host + " GPU" + std::to_string(index);
  for (const auto& env : run.run.env) {
    if (env.host != host) continue;
    for (const auto& g : env.gpus) {
      if (g.index != index) continue;
      std::string detail = g.pci_bus_id;
      if (!g.serial.empty())
        detail += (detail.empty() ? "" : ", ") + std::string("serial ") + g.serial;
      if (!detail.empty()) words += " (" + detail + ")";
    }
  }
  return words;
}

/// A fleet outlier in words: "node02 GPU3 (0000:61:00.0): BENCHMARK {...} tflops 600 TFLOP/s,
/// -15.49% from the fleet median 710 TFLOP/s (tolerance 5%)".
std::string outlier_words(const Outlier& o, const RunDir& run) {
  std::string who = o.kind == "link" ? o.item : o.host;
  if (o.gpu_index >= 0) who = item_words(o.host + "/gpu" + std::to_string(o.gpu_index), run);
  char dev[64];
  std::snprintf(dev, sizeof dev, "%+.2f%%", 100 * o.deviation);
  char tol[64];
  std::snprintf(tol, sizeof tol, "%.3g%%", 100 * o.tolerance);
  return who + ": " + o.benchmark + " " + o.params.dump() + " " + o.metric + " " +
         format_number(o.value) + " " + o.unit + ", " + dev + " from the fleet median " +
         format_number(o.median) + " " + o.unit + " (tolerance " + tol + ")";
}

FirstPage first_page(const Report& r) {
  FirstPage p;
  for (const auto& o : r.fleet.outliers) {
    if (p.outliers.size() == kFirstPageItems * 2) break;
    p.outliers.push_back(outlier_words(o, *r.run));
  }
  std::map<std::string, size_t> reason_at;
  for (const auto& row : r.rows) {
    if (row.outcome == kFail) p.fix.push_back(entry_of(row, *r.run));
    if (row.outcome == kWarn) p.look.push_back(entry_of(row, *r.run));
    if (row.outcome == kMissing) p.missing.push_back(entry_of(row, *r.run));
    if (row.outcome != kWaived) continue;
    std::string reason = row.message.empty() ? "waived" : row.message;
    for (const auto& it : row.items)
      if (it.outcome == kWaived && row.not_applicable.empty()) {  // else: why the row is not
        reason = waived_reason(it);
        break;
      }
    auto [at, fresh] = reason_at.emplace(reason, p.waived.size());
    if (fresh) p.waived.push_back({reason, {}});
    p.waived[at->second].second.push_back(row.req.id);
  }
  return p;
}

std::string render_first_page_markdown(const FirstPage& p) {
  std::ostringstream md;
  md << "## What to fix\n\n";
  if (p.fix.empty()) md << "Nothing: no row failed.\n";
  entries_md(md, p.fix, true);
  if (!p.look.empty() || !p.outliers.empty()) {
    md << "\n## Worth a look\n\n";
    entries_md(md, p.look, true);
    if (!p.outliers.empty())
      md << "- Fleet outliers (worse than the fleet median by more than the tolerance; "
            "suspect-hosts.txt lists their nodes, failing-hosts.txt only those with a FAIL row):\n";
    for (const auto& line : p.outliers) md << "  - " << md_text(line) << "\n";
  }
  if (!p.missing.empty() || !p.waived.empty()) {
    md << "\n## Not judged\n\n";
    entries_md(md, p.missing, false);
    for (const auto& [reason, ids] : p.waived) {
      md << "- Waived (" << ids.size() << (ids.size() == 1 ? " row" : " rows") << ": ";
      for (size_t i = 0; i < ids.size(); ++i) md << (i ? ", " : "") << code_text(ids[i]);
      md << "): " << md_text(reason) << "\n";
    }
  }
  return md.str();
}

namespace {

void entries_html(std::ostringstream& o, const std::vector<FirstPageEntry>& entries,
                  bool remedies) {
  o << "<ul>\n";
  for (const auto& e : entries) {
    const RowResult& row = *e.row;
    o << "<li><b>" << xml_escape(row.req.title) << "</b> (<code>" << xml_escape(row.req.id)
      << "</code>)";
    if (remedies && !row.req.remedy.empty()) o << ". What to do: " << xml_escape(row.req.remedy);
    o << "<ul>\n";
    for (const auto& line : e.items) o << "<li>" << xml_escape(line) << "</li>\n";
    if (e.more > 0) o << "<li>and " << e.more << " more (report.json lists them)</li>\n";
    o << "</ul></li>\n";
  }
  o << "</ul>\n";
}

}  // namespace

std::string render_first_page_html(const FirstPage& p) {
  std::ostringstream o;
  o << "<section id=\"first-page\">\n<h2>What to fix</h2>\n";
  if (p.fix.empty()) o << "<p>Nothing: no row failed.</p>\n";
  if (!p.fix.empty()) entries_html(o, p.fix, true);
  if (!p.look.empty() || !p.outliers.empty()) {
    o << "<h2>Worth a look</h2>\n";
    if (!p.look.empty()) entries_html(o, p.look, true);
    if (!p.outliers.empty()) {
      o << "<p>Fleet outliers (worse than the fleet median by more than the tolerance):</p><ul>\n";
      for (const auto& line : p.outliers) o << "<li>" << xml_escape(line) << "</li>\n";
      o << "</ul>\n";
    }
  }
  if (!p.missing.empty() || !p.waived.empty()) {
    o << "<h2>Not judged</h2>\n";
    if (!p.missing.empty()) entries_html(o, p.missing, false);
    o << "<ul>\n";
    for (const auto& [reason, ids] : p.waived) {
      o << "<li>Waived (" << ids.size() << (ids.size() == 1 ? " row" : " rows") << ": ";
      for (size_t i = 0; i < ids.size(); ++i)
        o << (i ? ", " : "") << "<code>" << xml_escape(ids[i]) << "</code>";
      o << "): " << xml_escape(reason) << "</li>\n";
    }
    o << "</ul>\n";
  }
  o << "</section>\n";
  return o.str();
}

}  // namespace clusterbench::report
