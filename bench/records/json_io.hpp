// JSON in and out of files: bounded, depth-checked reads that name the file, line and field of
// what is wrong, atomic writes, and InputError (exit 2) for input that cannot be used.
#pragma once

#include <cstdint>
#include <istream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "records/utf8.hpp"

namespace clusterbench {

using json = nlohmann::json;

/// Input that cannot be used: a malformed file, an unknown field, a bad option. Maps to exit 2.
/// The message names the file and the line/column or field.
class InputError : public std::runtime_error {
 public:
  /// A NUL in the message (from a spec's or a file's string) is written as a backslash and a
  /// zero: what() is a C string, and everything after a raw NUL would be cut from the error.
  explicit InputError(const std::string& message) : std::runtime_error(visible_nul(message)) {}
  explicit InputError(const char* message) : std::runtime_error(message) {}

 private:
  static std::string visible_nul(std::string s) {
    for (size_t at = s.find('\0'); at != std::string::npos; at = s.find('\0', at + 2))
      s.replace(at, 1, "\\0");
    return s;
  }
};

/// A field of a JSON document that has the wrong type or value; pointer() is where it is, a JSON
/// pointer relative to the document read ("/metrics/0/value"), filled in as the error passes up
/// through the enclosing objects. what() reads "field '<pointer>' <detail>".
class FieldError : public InputError {
 public:
  FieldError(std::string pointer, std::string detail);
  const std::string& pointer() const { return pointer_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string pointer_, detail_;
};

/// The deepest nesting of objects and arrays read from any input document: deeper input is an
/// InputError (the recursive copies and conversions would otherwise overflow the stack).
inline constexpr int kMaxJsonDepth = 128;
/// The largest spec table (and `extends` target) read, in bytes.
inline constexpr size_t kMaxSpecBytes = size_t{16} << 20;

/// Parses a whole JSON file of at most `max_bytes` bytes. Throws InputError naming the file and
/// line/column on a parse error or nesting deeper than kMaxJsonDepth, naming the file when it
/// cannot be opened, is not a regular file (a FIFO, /dev/zero) or is larger. `referenced_by`, when
/// not empty, says who named the file ("extended by a.json") and is added to every such error.
json read_json_file(const std::string& path, size_t max_bytes = SIZE_MAX,
                    const std::string& referenced_by = "");

/// The bytes of the regular file `path`, at most `max_bytes` of them. It is checked with stat
/// before it is opened and with fstat after (opened O_NONBLOCK, so a FIFO cannot block the open).
/// Throws InputError naming the file (and `referenced_by`, when not empty) otherwise.
std::string read_regular_file(const std::string& path, size_t max_bytes,
                              const std::string& referenced_by = "");

/// Throws InputError naming `path` unless it is a regular file (stat; no open).
void require_regular_file(const std::string& path);

/// Throws InputError when the first JSON value in `text` nests objects and arrays deeper than
/// kMaxJsonDepth, naming `where` (when not empty) and the line counted from `first_line` (0: no
/// line). Bytes after that first value are not looked at.
void check_json_depth(std::string_view text, const std::string& where, int first_line = 1);

/// Parses JSON `text`, first checking that it nests no deeper than kMaxJsonDepth. Errors are
/// InputErrors prefixed with `where` (a file name) when it is not empty; a nesting error names
/// the line counted from `first_line` (0: no line, for one line of a JSON Lines file).
json parse_json_text(std::string_view text, const std::string& where, int first_line = 1);

/// Writes `text` to `path` atomically: a temporary file beside it, fsync, rename.
/// Throws std::runtime_error naming the path and errno text.
void write_file_atomic(const std::string& path, const std::string& text);
/// Several files, all or none: each written to PATH.tmp.PID and fsynced, then all renamed. When
/// a write fails, no file is replaced and the temporaries are removed; throws
/// std::runtime_error naming the file.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

/// Parses the JSON document in `in` as a stream (never held as one string), checking its nesting
/// as it goes (kMaxJsonDepth; errors name `where`). `keep` is nlohmann's parser callback: it may
/// skip what the caller has no use for. Parse errors are thrown as the JSON library throws them.
json parse_json_stream(std::istream& in, const std::string& where,
                       const json::parser_callback_t& keep = nullptr);

/// Looks up a typed field, throwing InputError "<what>: field '<name>' ..." when absent or
/// mistyped.
template <typename T>
T require_field(const json& j, const std::string& name, const std::string& what) {
  if (!j.is_object() || !j.contains(name))
    throw InputError(what + ": missing field '" + name + "'");
  try {
    return j.at(name).get<T>();
  } catch (const FieldError& e) {
    throw InputError(what + ": field '/" + name + e.pointer() + "' " + e.detail());
  } catch (const json::exception& e) {
    throw InputError(what + ": field '" + name + "' has the wrong type (" + error_text(e.what()) +
                     ")");
  }
}

}  // namespace clusterbench
