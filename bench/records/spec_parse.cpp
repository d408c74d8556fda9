// What the parts of spec loading share (spec_parse.hpp).
#include "records/spec_parse.hpp"

#include <cstdio>
#include <map>

namespace clusterbench {

namespace spec_parse {

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string optional_string(const json& j, const char* key, const std::string& where) {
  return j.contains(key) ? require_field<std::string>(j, key, where) : std::string();
}

/// Throws InputError naming `where` when `pattern` is not an RE2 regex.
void check_regex(const std::string& pattern, const std::string& where) {
  SpecRegex check(pattern, where);
}

/// `key` for a message: control characters as JSON escapes (a NUL would cut the message, an
/// ESC reach the terminal), at most `max` bytes of it.
std::string printable_key(const std::string& key, size_t max) {
  std::string out = json(key.substr(0, max)).dump(-1, ' ', false, json::error_handler_t::replace);
  out = out.substr(1, out.size() - 2);  // the quotes
  return key.size() > max ? out + "..." : out;
}

/// Throws InputError naming `where` when `j` has a key outside `known` (a typo would otherwise
/// be silently ignored). "$comment" (as in JSON Schema) is allowed everywhere.
void check_keys(const json& j, const std::set<std::string>& known, const std::string& where) {
  for (const auto& [key, value] : j.items())
    if (!known.count(key) && key != "$comment")
      throw InputError(where + ": unknown field '" + printable_key(key) + "'");
}

/// The first key that `text` (valid JSON) holds twice in one object, as "POINTER: key 'K'"
/// (POINTER: RFC 6901, of the object); empty when every object's keys are distinct. A JSON
/// reader keeps only one of the two values, so a table with one is refused, not half-read.
std::string duplicate_key(std::string_view text) {
  struct Level {
    bool array = false;
    std::set<std::string> keys;
    std::string key;
    size_t index = 0;
  };
  std::vector<Level> open;
  std::string found;
  auto pointer = [&] {
    std::string out;
    for (size_t i = 0; i + 1 < open.size(); ++i) {
      out.push_back('/');
      if (open[i].array) {
        out.append(std::to_string(open[i].index));
        continue;
      }
      for (char c : open[i].key) out.append(c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c));
    }
    return out.empty() ? std::string("/") : printable_key(out, 400);
  };
  auto element_done = [&] {
    if (!open.empty() && open.back().array) ++open.back().index;
  };
  auto on_event = [&](int, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      open.push_back(Level{event == E::array_start, {}, {}, 0});
    } else if (event == E::object_end || event == E::array_end) {
      open.pop_back();
      element_done();
    } else if (event == E::key) {
      open.back().key = parsed.get<std::string>();
      if (!open.back().keys.insert(open.back().key).second && found.empty())
        found = pointer() + ": key '" + printable_key(open.back().key) + "'";
    } else {
      element_done();
    }
    return true;
  };
  const json whole = json::parse(text, on_event);  // every event seen; the value is not needed
  (void)whole;
  return found;
}

/// Throws InputError naming `at` unless `pointer` is a JSON pointer (RFC 6901) without `*`.

}  // namespace spec_parse

}  // namespace clusterbench
