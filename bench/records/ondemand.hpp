// Records-internal: small readers of simdjson On-Demand values shared by the fast paths of
// records.jsonl (records_file.cpp) and run.json (run_json_fast.cpp).
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

namespace clusterbench::ondemand {

namespace od = simdjson::ondemand;

/// Copies a JSON string into `out`; false when the value is not a string (null included).
inline bool get_string(od::value v, std::string& out) {
  std::string_view s;
  if (v.get_string().get(s)) return false;
  out.assign(s);
  return true;
}

/// The JSON text of an object value; false when `v` is not an object.
inline bool raw_object(od::value v, std::string_view& text) {
  od::object o;
  return !v.get_object().get(o) && !o.raw_json().get(text);
}

/// The raw JSON text of any value (an object, an array, a scalar); false when it does not parse.
inline bool raw_value(od::value v, std::string_view& text) {
  od::json_type type;
  if (v.type().get(type)) return false;
  if (type == od::json_type::object) return raw_object(v, text);
  if (type == od::json_type::array) {
    od::array a;
    return !v.get_array().get(a) && !a.raw_json().get(text);
  }
  text = v.raw_json_token();
  return true;
}

}  // namespace clusterbench::ondemand
