// Bytes to UTF-8 text: see utf8.hpp.
#include "records/utf8.hpp"

#include <algorithm>

namespace clusterbench {

namespace {

/// Length of the well-formed UTF-8 sequence at s[i], or 0 when the bytes from i on are not one;
/// `bad` then gets the length of the maximal ill-formed subpart to replace (at least 1). The
/// second-byte ranges are Table 3-7 of the Unicode Standard.
size_t sequence_at(std::string_view s, size_t i, size_t& bad) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  bad = 1;
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // no overlong forms
    if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;  // a continuation byte alone, C0, C1, F5..FF
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return 0;
    unsigned char x = b(i + k);
    if (k == 1 ? (x < lo || x > hi) : (x < 0x80 || x > 0xBF)) return 0;
    bad = k + 1;  // the subpart so far is a valid prefix: replace it as one
  }
  return len;
}

}  // namespace

size_t first_invalid_utf8(std::string_view bytes) {
  size_t bad = 0;
  for (size_t i = 0; i < bytes.size();) {
    size_t n = sequence_at(bytes, i, bad);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

bool is_valid_utf8(std::string_view bytes) {
  return first_invalid_utf8(bytes) == std::string_view::npos;
}

std::string utf8_error(std::string_view text, int first_line) {
  const size_t at = first_invalid_utf8(text);
  if (at == std::string_view::npos) return "";
  static const char* hex = "0123456789ABCDEF";
  const auto byte = static_cast<unsigned char>(text[at]);
  return text_position(text, at, first_line) + ": byte 0x" + hex[byte >> 4] + hex[byte & 15] +
         " is not UTF-8";
}

std::string text_position(std::string_view text, size_t at, int first_line) {
  at = std::min(at, text.size());
  const size_t line_start = at == 0 ? std::string_view::npos : text.rfind('\n', at - 1);
  const size_t column = line_start == std::string_view::npos ? at + 1 : at - line_start;
  const auto newlines = std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
  std::string out;
  if (first_line > 0) out += "line " + std::to_string(first_line + newlines) + ", ";
  return out + "column " + std::to_string(column);
}

std::string error_text(std::string_view what) {
  std::string out = valid_utf8(what);
  static const std::string kTag = "[json.exception.";
  for (size_t at; (at = out.find(kTag)) != std::string::npos;) {
    const size_t end = out.find("] ", at);
    if (end == std::string::npos) break;
    out.erase(at, end + 2 - at);
  }
  return out;
}

std::string valid_utf8(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 8);
  size_t bad = 0;
  for (size_t i = 0; i < bytes.size();) {
    size_t n = sequence_at(bytes, i, bad);
    if (n == 0) {
      out += kReplacementChar;
      i += bad;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

nlohmann::json valid_utf8_json(const nlohmann::json& j) {
  if (j.is_string()) return valid_utf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(valid_utf8_json(v));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items()) out.emplace(valid_utf8(k), valid_utf8_json(v));
    return out;
  }
  return j;
}

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace clusterbench
