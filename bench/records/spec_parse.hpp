// Internal to bench/records: what the parts of spec loading share (spec.cpp: the tables and their
// `extends`; spec_rows.cpp: rows and env units; spec_families.cpp: families).
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "records/spec.hpp"

namespace clusterbench::spec_parse {

/// The fields of a requirement row (docs/specs.md).
inline const std::set<std::string> kRowKeys = {
    "id",        "title",    "source", "remedy", "severity", "select", "scope",
    "aggregate", "relative", "op",     "value",  "unit",     "remove"};

/// The folder of `path` ("." for a bare name).
std::string dir_of(const std::string& path);

/// Field `key` of `j` when present (InputError naming `where` when it is not a string), else "".
std::string optional_string(const json& j, const char* key, const std::string& where);

/// `key` for a message: control characters as JSON escapes, at most `max` bytes of it.
std::string printable_key(const std::string& key, size_t max = 80);

/// Throws InputError naming `where` and the key when `j` has a key not in `known`.
void check_keys(const json& j, const std::set<std::string>& known, const std::string& where);

/// The first key an object of `text` repeats ("" when none).
std::string duplicate_key(std::string_view text);

/// Throws InputError naming `where` when `pattern` is not an RE2 regex.
void check_regex(const std::string& pattern, const std::string& where);

/// One spec row of a table of `schema`, validated (InputError naming the file, row and field).
Requirement parse_row(const json& r, const std::string& where, const std::string& schema);

/// The table's `families` over its parent's (a family of the same benchmark glob overrides).
void merge_families(const json& j, const std::string& schema, const std::string& path, Spec& spec);

/// The table's `alerts` over its parent's (spec/5; an alert of the same id replaces, "remove"
/// drops); each checked for known fields and types, its row resolved later (resolve_alerts).
void merge_alerts(const json& j, const std::string& schema, const std::string& path, Spec& spec);

/// Each alert's threshold and condition from its row (InputError naming `path` and the alert
/// when the row is missing, not numeric, in another unit, or has an op with no inverse).
void resolve_alerts(Spec& spec, const std::string& path);

/// A child's family over its parent's of the same glob: each field the child sets replaces the
/// parent's; the others are kept.
void override_family(SpecFamily& parent, SpecFamily child);

}  // namespace clusterbench::spec_parse
