// Internal to bench/records: the helpers of the JSON conversions (env_record.cpp, result.cpp,
// run_record.cpp). A field read names where it failed as a JSON pointer (FieldError); older files
// stay readable when fields are added (absent fields keep their defaults).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "records/env_record.hpp"
#include "records/json_io.hpp"

namespace clusterbench::json_fields {

// JSON conversion. get_to with defaults keeps older files readable when fields are added.

/// `key` as a JSON pointer token (RFC 6901: "~" is "~0", "/" is "~1").
inline std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

/// Runs `read`, adding "/token" (a key or an index) to the front of the pointer of the
/// FieldError it throws; a conversion error of the JSON library becomes a FieldError there.
template <class Read>
void at_field(const std::string& token, Read read) {
  try {
    read();
  } catch (const FieldError& e) {
    throw FieldError("/" + token + e.pointer(), e.detail());
  } catch (const json::exception& e) {
    throw FieldError("/" + token, error_text(e.what()));
  }
}

template <typename T>
void read_value(const json& j, T& out) {
  j.get_to(out);
}
/// Whole numbers must fit: the JSON library would cast 2^40 to an int silently.
template <typename T>
requires std::is_integral_v<T> &&(!std::is_same_v<T, bool>)void read_value(const json& j, T& out) {
  const double d = j.is_number_float() ? j.get<double>() : 0.5;
  const bool fits = j.is_number_unsigned()  ? std::in_range<T>(j.get<uint64_t>())
                    : j.is_number_integer() ? std::in_range<T>(j.get<int64_t>())
                                            : d == std::trunc(d) && std::fabs(d) < 9e15 &&
                                                  std::in_range<T>(static_cast<int64_t>(d));
  if (!fits)
    throw FieldError("", "is " + j.dump() + ", expected a whole number from " +
                             std::to_string(std::numeric_limits<T>::min()) + " to " +
                             std::to_string(std::numeric_limits<T>::max()));
  out = j.is_number_unsigned() ? static_cast<T>(j.get<uint64_t>())
        : j.is_number_float()  ? static_cast<T>(d)
                               : static_cast<T>(j.get<int64_t>());
}
/// Arrays element by element, so that an error names its index.
template <typename T>
void read_value(const json& j, std::vector<T>& out) {
  if (!j.is_array()) throw FieldError("", std::string("must be an array, not ") + j.type_name());
  std::vector<T> v(j.size());
  for (size_t i = 0; i < j.size(); ++i)
    at_field(std::to_string(i), [&] { read_value(j[i], v[i]); });
  out = std::move(v);
}

/// Reads field `key` of object `j` into `out` when present and not null.
template <typename T>
void opt(const json& j, const char* key, T& out) {
  if (!j.is_object()) throw FieldError("", std::string("must be an object, not ") + j.type_name());
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) at_field(pointer_token(key), [&] { read_value(*it, out); });
}
/// An unknown value: null reads as nullopt, a number as itself.
template <typename T>
void opt(const json& j, const char* key, std::optional<T>& out) {
  if (!j.is_object()) throw FieldError("", std::string("must be an object, not ") + j.type_name());
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    out.reset();
    return;
  }
  T v{};
  at_field(pointer_token(key), [&] { read_value(*it, v); });
  out = std::move(v);
}
template <typename T>
void put(json& j, const char* key, const T& v) {
  j[key] = v;
}
template <typename T>
void put(json& j, const char* key, const std::optional<T>& v) {
  j[key] = v ? json(*v) : json(nullptr);
}
/// An object's `unknown` map, written only when something is unknown.
/// A text field it names that is empty is written as null too (unknown, not an empty value).
inline void put_unknown(json& j, const UnknownFields& v) {
  if (v.empty()) return;
  j["unknown"] = v;
  for (const auto& [field, why] : v) {
    auto it = j.find(field);
    if (it != j.end() && it->is_string() && it->get_ref<const std::string&>().empty())
      *it = nullptr;
  }
}

/// A host name holds no control character (a newline would add a line to failing-hosts.txt and
/// break report.md's tables): throws std::runtime_error naming `field` otherwise.
void require_host_name(const std::string& name, const char* field);

}  // namespace clusterbench::json_fields
