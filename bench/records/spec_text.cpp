// JSON pointers, templates, regexes and globs of spec rows (spec.hpp).
#include <fnmatch.h>
#include <re2/re2.h>

#include <algorithm>

#include "records/spec.hpp"

namespace clusterbench {

namespace {

/// How deep `pattern` nests its groups (escapes and bracket expressions skipped).
int group_depth(const std::string& pattern) {
  int depth = 0, deepest = 0;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\')
      ++i;
    else if (in_class)
      in_class = c != ']';
    else if (c == '[')
      in_class = true;
    else if (c == '(')
      deepest = std::max(deepest, ++depth);
    else if (c == ')')
      --depth;
  }
  return deepest;
}
}  // namespace

SpecRegex::SpecRegex(const std::string& pattern, const std::string& where, bool icase) {
  // RE2 itself takes 20,000 nested groups; no spec needs more than a few.
  if (group_depth(pattern) > kMaxRegexGroupDepth)
    throw InputError(where + " is not a valid regex: groups nested deeper than " +
                     std::to_string(kMaxRegexGroupDepth));
  RE2::Options opt;
  opt.set_log_errors(false);
  opt.set_case_sensitive(!icase);
  auto re = std::make_shared<const RE2>(pattern, opt);
  // Both cut at 200 characters: the error quotes the pattern, which may be megabytes.
  auto cut = [](const std::string& s) { return s.size() > 200 ? s.substr(0, 200) + "..." : s; };
  if (!re->ok())
    throw InputError(where + " is not a valid regex '" + cut(pattern) + "' (" + cut(re->error()) +
                     ")");
  re_ = std::move(re);
}

bool SpecRegex::search(const std::string& text) const { return RE2::PartialMatch(text, *re_); }

std::vector<std::pair<std::string, json>> expand_pointer(const json& doc,
                                                         const std::string& pointer) {
  // Walks with pointers into `doc` and copies only the matches: copying each step's subtrees
  // (whole EnvRecords) was most of the env rows' time at 1,000 nodes (docs/report.md "Scale").
  std::vector<std::pair<std::string, const json*>> cur = {{"", &doc}};
  size_t pos = 1;
  while (pos <= pointer.size() && !pointer.empty()) {
    size_t next = pointer.find('/', pos);
    std::string seg =
        pointer.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    std::vector<std::pair<std::string, const json*>> out;
    for (const auto& [path, node] : cur) {
      if (seg == "*") {
        if (node->is_array())
          for (size_t i = 0; i < node->size(); ++i)
            out.emplace_back(path + "/" + std::to_string(i), &(*node)[i]);
        else if (node->is_object())
          for (const auto& [k, v] : node->items()) out.emplace_back(path + "/" + k, &v);
      } else if (node->is_object()) {
        if (auto it = node->find(seg); it != node->end()) out.emplace_back(path + "/" + seg, &*it);
      } else if (node->is_array() && !seg.empty() &&
                 seg.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(seg) < node->size()) {
        out.emplace_back(path + "/" + seg, &node->at(std::stoul(seg)));
      }
    }
    cur = std::move(out);
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  std::vector<std::pair<std::string, json>> found;
  found.reserve(cur.size());
  for (auto& [path, node] : cur) found.emplace_back(std::move(path), *node);
  return found;
}

std::string fill_template(const std::string& text, const json& doc) {
  auto value = [&doc](const std::string& pointer) -> std::string {
    try {
      json::json_pointer p(pointer);
      if (!doc.contains(p) || doc.at(p).is_null()) return "unknown";
      const json& v = doc.at(p);
      return v.is_string() ? v.get<std::string>() : v.dump();
    } catch (const json::exception&) {
      return "unknown";
    }
  };
  std::string out;
  size_t pos = 0;
  for (size_t open = text.find("{/"); open != std::string::npos; open = text.find("{/", pos)) {
    size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    out += text.substr(pos, open - pos) + value(text.substr(open + 1, close - open - 1));
    pos = close + 1;
  }
  return out + text.substr(pos);
}

std::string unknown_reason(const json& doc, const std::string& pointer) {
  // From the field's own object upwards: the nearest `unknown` map that names the rest of the path.
  for (size_t cut = pointer.rfind('/'); cut != std::string::npos && cut > 0;
       cut = pointer.rfind('/', cut - 1)) {
    auto owner = expand_pointer(doc, pointer.substr(0, cut));
    if (owner.empty() || !owner.front().second.is_object()) continue;
    auto unknown = owner.front().second.find("unknown");
    if (unknown == owner.front().second.end() || !unknown->is_object()) continue;
    auto why = unknown->find(pointer.substr(cut + 1));
    if (why != unknown->end() && why->is_string()) return why->get<std::string>();
  }
  return "";
}

bool glob_match(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

}  // namespace clusterbench
