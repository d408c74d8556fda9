// Text for every renderer (text.hpp).
#include "reports/text.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "records/utf8.hpp"

namespace clusterbench::report {

std::string format_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    return std::to_string(static_cast<long long>(v));
  char buf[64];
  if (std::isfinite(v) && std::fabs(v) >= 1000 && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);  // 40826.1 -> 40826, not 4.083e+04
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string format_value(const json& v, const std::string& unit) {
  std::string text;
  if (v.is_null()) return "-";
  if (v.is_number()) {
    text = format_number(v.get<double>());
    if (!unit.empty() && unit != "count") text += " " + unit;
    return text;
  }
  if (v.is_string()) return v.get<std::string>().empty() ? "\"\"" : v.get<std::string>();
  return v.dump();
}

std::string percent_points(double points, int decimals, bool sign) {
  const double scale = decimals == 1 ? 10 : 100;
  std::string s = format_number(std::round(points * scale) / scale) + "%";
  return sign && points > 0 ? "+" + s : s;
}

std::string percent(double fraction, int decimals, bool sign) {
  // fraction x 1e4 / 100, not (fraction x 100) x 100 / 100: the product is rounded once.
  const double scale = decimals == 1 ? 10 : 100;
  std::string s = format_number(std::round(fraction * (100 * scale)) / scale) + "%";
  return sign && fraction > 0 ? "+" + s : s;
}

std::string join(const std::vector<std::string>& xs, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? sep : "") + xs[i];
  return out;
}

std::string md_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r' || c == '\t')
      out += ' ';
    else if (u < 0x20 || u == 0x7f)
      continue;  // ESC, BEL, NUL from a spec's or a record's text: not for a reader's terminal
    else
      out += c;
  }
  return out.empty() ? "-" : out;
}

std::string md_code(const std::string& text) {
  return text.find('`') == std::string::npos ? "`" + text + "`" : "``" + text + " ``";
}

std::string md_text(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (c < 0x20 || c == 0x7f) {  // NUL, ESC, BEL: not for a reader
    } else if (c == '<' && i + 1 < text.size() &&
               (std::isalpha(static_cast<unsigned char>(text[i + 1])) ||
                std::strchr("/!?", text[i + 1]))) {
      out += "&lt;";  // a tag a Markdown viewer would run; "<= 10" stays as it is
    } else if (c == 0xe2 && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xae' || text[i + 2] == '\xad' || text[i + 2] == '\xaa' ||
                text[i + 2] == '\xab' || text[i + 2] == '\xac')) {
      i += 2;  // U+202A..U+202E: embeddings and overrides that reorder what is read
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

/// Whether the code point of the UTF-8 sequence `seq` is a Char of XML 1.0 (section 2.2):
/// #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]. Surrogates cannot
/// occur in valid UTF-8, so below U+10000 only the C0 controls and U+FFFE/U+FFFF are out.
bool xml_char(std::string_view seq) {
  const auto c = static_cast<unsigned char>(seq[0]);
  if (seq.size() == 1) return c >= 0x20 || c == '\t' || c == '\n' || c == '\r';
  return !(seq == "\xEF\xBF\xBE" || seq == "\xEF\xBF\xBF");
}

size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

/// The entity of one of XML's five special characters, nullptr for any other.
const char* xml_entity(char c) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '"':
      return "&quot;";
    case '\'':
      return "&apos;";
    default:
      return nullptr;
  }
}

}  // namespace

std::string xml_escape(const std::string& raw) {
  const std::string text = valid_utf8(raw);  // bytes that are not UTF-8 become U+FFFD
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_length(static_cast<unsigned char>(text[i]));
    const std::string_view seq(text.data() + i, n);
    i += n;
    if (const char* entity = xml_entity(seq[0]))
      out += entity;
    else if (xml_char(seq))  // a character XML 1.0 forbids would make the document ill formed
      out += seq;
    else
      out += '?';
  }
  return out;
}

}  // namespace clusterbench::report
