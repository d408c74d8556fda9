// Text for every renderer of reports/: numbers, percentages and values as report.md, compare.md,
// the console and the HTML report print them, and the escaping of Markdown and XML. A renderer
// formats with these and nothing of its own, so that the same number reads the same everywhere.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "records/json_io.hpp"

namespace clusterbench::report {

/// Formats a number for reports: integers exactly, others with 4 significant digits (32.42,
/// 0.2749), from 1000 up rounded to an integer (40826); no exponent below 1e15 but for tiny
/// values (1.2e-05). report.json keeps the full values.
std::string format_number(double v);

/// Formats a judged value with its unit: "12.3 GB/s", "\"performance\"", "-" for null.
std::string format_value(const json& v, const std::string& unit);

/// An env value that may be unknown, with its unit: "79.6 GiB", "18", or "unknown" for null.
template <typename T>
std::string format_known(const std::optional<T>& v, const std::string& unit) {
  return v ? format_value(json(*v), unit) : "unknown";
}

/// A fraction as a percentage rounded to `decimals` (1 or 2) places: percent(0.12345) = "12.35%",
/// percent(0.12345, 1) = "12.3%"; with `sign`, a positive one starts with "+".
std::string percent(double fraction, int decimals = 2, bool sign = false);

/// The same for a value already in percent: percent_points(12.345) = "12.35%".
std::string percent_points(double points, int decimals = 2, bool sign = false);

/// `xs` joined with `sep` between them.
std::string join(const std::vector<std::string>& xs, const std::string& sep);

/// A Markdown table cell: '|' escaped, line breaks and tabs as spaces, other control characters
/// (ESC, BEL, NUL) dropped, "-" for an empty text.
std::string md_cell(const std::string& text);

/// Markdown inline code that survives backticks in the text.
std::string md_code(const std::string& text);

/// Text from records and env files made safe to show as Markdown: line breaks and tabs become
/// spaces, other control characters and the Unicode embeddings and overrides (U+202A..U+202E)
/// are dropped, and a '<' that would open an HTML tag becomes "&lt;".
std::string md_text(const std::string& text);

/// XML 1.0 escaping of text and attribute values (& < > " '). The result is always well formed:
/// bytes that are not UTF-8 become U+FFFD (records/utf8.hpp), and characters XML 1.0 forbids (C0
/// controls but tab, LF and CR; U+FFFE, U+FFFF) become '?'. HTML uses it too.
std::string xml_escape(const std::string& raw);

}  // namespace clusterbench::report
