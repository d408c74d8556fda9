// The first page of the reports (first_page.hpp).
#include "reports/first_page.hpp"

#include <algorithm>
#include <map>
#include <sstream>

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

/// `text` ending in one full stop.
std::string sentence(const std::string& text) {
  return !text.empty() && text.back() == '.' ? text : text + ".";
}

void entries_md(std::ostringstream& md, const std::vector<FirstPageEntry>& entries, bool remedies) {
  for (const auto& e : entries) {
    const RowResult& row = *e.row;
    md << "- **" << row.req.title << "** (`" << row.req.id << "`)";
    if (e.items.size() == 1 && e.more == 0)
      md << ": " << sentence(e.items[0]);
    else
      md << ":";
    if (remedies && !row.req.remedy.empty()) md << " What to do: " << sentence(row.req.remedy);
    md << "\n";
    if (e.items.size() > 1 || e.more > 0) {
      for (const auto& line : e.items) md << "  - " << line << "\n";
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

FirstPage first_page(const Report& r) {
  FirstPage p;
  std::map<std::string, size_t> reason_at;
  for (const auto& row : r.rows) {
    if (row.outcome == kFail) p.fix.push_back(entry_of(row, *r.run));
    if (row.outcome == kWarn) p.look.push_back(entry_of(row, *r.run));
    if (row.outcome == kMissing) p.missing.push_back(entry_of(row, *r.run));
    if (row.outcome != kWaived) continue;
    std::string reason = row.message.empty() ? "waived" : row.message;
    for (const auto& it : row.items)
      if (it.outcome == kWaived) {
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
  if (!p.look.empty()) {
    md << "\n## Worth a look\n\n";
    entries_md(md, p.look, true);
  }
  if (!p.missing.empty() || !p.waived.empty()) {
    md << "\n## Not judged\n\n";
    entries_md(md, p.missing, false);
    for (const auto& [reason, ids] : p.waived) {
      md << "- Waived (" << ids.size() << (ids.size() == 1 ? " row" : " rows") << ": ";
      for (size_t i = 0; i < ids.size(); ++i) md << (i ? ", " : "") << "`" << ids[i] << "`";
      md << "): " << reason << "\n";
    }
  }
  return md.str();
}

}  // namespace clusterbench::report
