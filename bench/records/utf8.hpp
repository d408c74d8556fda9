// Bytes from outside (a tool's output, sysfs files, host and file names, environment values) are
// not text until checked: nlohmann/json throws (type_error.316) when it serializes a string that
// is not valid UTF-8. Everything read from outside goes through valid_utf8() before it is stored
// in a record, and the writers serialize with dump_json(), which never throws on bad bytes.
//
// The choice: each ill-formed subsequence becomes U+FFFD (the Unicode Standard's "substitution of
// maximal subparts", ch. 3.9, as Python's errors="replace" and WHATWG's decoder do). It is the
// character nlohmann's error_handler_t::replace puts in too, so a string cleaned at a boundary and
// one cleaned by the writer look alike; it is valid inside JSON and XML text, and cleaning twice
// changes nothing. Escaping bytes as "\xFF" text was rejected: inside fio's JSON it would be an
// invalid escape, and it cannot be told from a name that holds those four characters.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace clusterbench {

/// The UTF-8 encoding of U+FFFD REPLACEMENT CHARACTER.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

/// True when `bytes` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past
/// U+10FFFF). NUL bytes are valid.
bool is_valid_utf8(std::string_view bytes);

/// Offset of the first byte of `bytes` that does not start a well-formed UTF-8 sequence, or
/// std::string_view::npos when all of it is well-formed.
size_t first_invalid_utf8(std::string_view bytes);

/// "line L, column C" of byte offset `at` in `text` (lines counted from `first_line`; 0 leaves the
/// line out: "column C"). Columns count bytes from 1, as nlohmann's parse errors do.
std::string text_position(std::string_view text, size_t at, int first_line = 1);

/// "" when `text` is well-formed UTF-8, else "line L, column C: byte 0xFF is not UTF-8" for its
/// first ill-formed byte (lines counted from `first_line`; 0 leaves the line out). Columns count
/// bytes from 1, as nlohmann's parse errors do.
std::string utf8_error(std::string_view text, int first_line = 1);

/// `bytes` as valid UTF-8: unchanged when already valid, else each maximal ill-formed
/// subsequence replaced by U+FFFD (so "\xff\xfe" gives two, a truncated 3-byte sequence one).
std::string valid_utf8(std::string_view bytes);

/// An error message for people: valid_utf8(`what`) without nlohmann's exception tags
/// ("[json.exception.parse_error.101] "), wherever they stand in it.
std::string error_text(std::string_view what);

/// `j` with every string value and object key passed through valid_utf8() (keys that become
/// equal keep the first value). Numbers, booleans and nulls are unchanged.
nlohmann::json valid_utf8_json(const nlohmann::json& j);

/// j.dump(indent) that never throws on invalid UTF-8: bad bytes become U+FFFD (nlohmann's
/// error_handler_t::replace). The writers of records.jsonl, run.json and report.json use it, as
/// the last line of defence behind valid_utf8() at the boundaries.
std::string dump_json(const nlohmann::json& j, int indent = -1);

}  // namespace clusterbench
