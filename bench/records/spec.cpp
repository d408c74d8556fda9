// Spec tables loaded with `extends` (docs/records.md "Spec"), and their storage tiers. Rows are
// validated in spec_rows.cpp, families in spec_families.cpp.
#include "records/spec.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "records/spec_parse.hpp"

namespace clusterbench {

using namespace spec_parse;

namespace {

/// One entry of `tiers` over what the table inherited for that tier.
void parse_tier(const json& t, const std::string& at, SpecTier& out) {
  if (!t.is_object()) throw InputError(at + " must be an object");
  check_keys(t, {"path", "shared", "mount_point", "title"}, at);
  if (t.contains("path")) {
    out.path = t.at("path").is_null() ? "" : require_field<std::string>(t, "path", at);
    if (!t.at("path").is_null())
      if (std::string why = tier_path_refusal(out.path); !why.empty())
        throw InputError(at + ": field 'path': " + why + " (null: no path)");
  }
  if (t.contains("shared")) out.shared = require_field<bool>(t, "shared", at);
  if (t.contains("mount_point")) out.mount_point = require_field<bool>(t, "mount_point", at);
  if (t.contains("title")) out.title = require_field<std::string>(t, "title", at);
}

/// `dense_peaks` (and its source) of a clusterbench.spec/5 file over what `spec` inherited: a
/// GPU dtype -> a positive TFLOP/s.
void merge_dense_peaks(const json& j, const std::string& schema, const std::string& path,
                       Spec& spec) {
  static const std::set<std::string> kDtypes = {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8"};
  if (!j.contains("dense_peaks") && !j.contains("dense_peaks_source")) return;
  if (schema != kSpecSchema)
    throw InputError(path + ": field 'dense_peaks' needs schema " + kSpecSchema + ", not " +
                     schema);
  if (j.contains("dense_peaks_source"))
    spec.dense_peaks_source = require_field<std::string>(j, "dense_peaks_source", path);
  if (!j.contains("dense_peaks")) return;
  const json& peaks = j.at("dense_peaks");
  if (!peaks.is_object()) throw InputError(path + ": field 'dense_peaks' must be an object");
  for (const auto& [dtype, v] : peaks.items()) {
    if (!kDtypes.count(dtype))
      throw InputError(path + ": dense_peaks: '" + dtype +
                       "' is not a dtype (fp64, fp32, tf32, bf16, fp16, fp8)");
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      throw InputError(path + ": dense_peaks." + dtype + " must be a positive number (TFLOP/s)");
    spec.dense_peaks[dtype] = v.get<double>();
  }
}

/// `tiers` of a clusterbench.spec/4 file merged into `spec`, kept in spec_tier_names() order.
void merge_tiers(const json& j, const std::string& schema, const std::string& path, Spec& spec) {
  if (!j.contains("tiers")) return;
  if (schema != kSpecSchema && schema != kSpecSchemaV4)
    throw InputError(path + ": field 'tiers' needs schema " + kSpecSchemaV4 + " or later, not " +
                     schema);
  const json& tiers = j.at("tiers");
  if (!tiers.is_object()) throw InputError(path + ": field 'tiers' must be an object");
  for (const auto& item : tiers.items()) {
    const std::string name = item.key();  // a copy: lambdas cannot capture a structured binding
    const json& t = item.value();
    const auto& names = spec_tier_names();
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw InputError(path + ": tiers: '" + name + "' is not a tier (hot, warm or cold)");
    auto it = std::find_if(spec.tiers.begin(), spec.tiers.end(),
                           [&](const SpecTier& x) { return x.name == name; });
    if (it == spec.tiers.end()) it = spec.tiers.insert(spec.tiers.end(), SpecTier{name});
    parse_tier(t, path + ": tiers." + name, *it);
  }
  auto rank = [](const SpecTier& x) {
    const auto& n = spec_tier_names();
    return std::find(n.begin(), n.end(), x.name) - n.begin();
  };
  std::sort(spec.tiers.begin(), spec.tiers.end(),
            [&](const SpecTier& a, const SpecTier& b) { return rank(a) < rank(b); });
}

void parse_match(const json& j, const std::string& path, Spec& spec) {
  if (!j.contains("match")) return;
  const json& m = j.at("match");
  if (!m.is_object()) throw InputError(path + ": field 'match' must be an object");
  check_keys(m, {"no_gpu", "gpu_name", "pci_device_ids", "gpu_count"}, path + ": match");
  spec.has_match = true;
  spec.match = SpecMatch{};
  if (m.contains("no_gpu")) spec.match.no_gpu = require_field<bool>(m, "no_gpu", path + " match");
  if (m.contains("gpu_name")) {
    spec.match.gpu_name = require_field<std::string>(m, "gpu_name", path + " match");
    check_regex(spec.match.gpu_name, path + ": field 'match.gpu_name'");
  }
  if (m.contains("pci_device_ids"))
    spec.match.pci_device_ids =
        require_field<std::vector<std::string>>(m, "pci_device_ids", path + " match");
  if (m.contains("gpu_count"))
    spec.match.gpu_count = require_field<int>(m, "gpu_count", path + " match");
}

/// Drops the inherited row `id`; throws InputError (`what`) when no parent row has it.
void remove_row(Spec& spec, const std::string& id, const std::string& what) {
  auto before = spec.requirements.size();
  std::erase_if(spec.requirements, [&](const Requirement& r) { return r.id == id; });
  if (spec.requirements.size() == before) throw InputError(what);
}

/// `requirements` and `remove` of one file merged into `spec`: rows override by id.
void merge_rows(const json& j, const std::string& schema, const std::string& path, Spec& spec) {
  json rows = require_field<json>(j, "requirements", path);
  if (!rows.is_array()) throw InputError(path + ": field 'requirements' must be an array");
  std::set<std::string> ids_here;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string where = path + ": requirements[" + std::to_string(i) + "]";
    // {"id": X, "remove": true} drops an inherited row; it needs no other field, and may keep
    // the row's own (not checked), but no unknown one.
    if (rows[i].is_object() && rows[i].contains("remove")) {
      std::string id = require_field<std::string>(rows[i], "id", where);
      check_keys(rows[i], kRowKeys, where + ": requirement '" + id + "'");
      if (require_field<bool>(rows[i], "remove", where + ": requirement '" + id + "'")) {
        remove_row(spec, id,
                   where + ": requirement '" + id + "' has 'remove' but no parent row has it");
        continue;
      }
    }
    Requirement q = parse_row(rows[i], where, schema);
    if (!ids_here.insert(q.id).second)
      throw InputError(where + ": requirement id '" + q.id + "' appears twice in this table");
    bool replaced = false;
    for (auto& existing : spec.requirements)
      if (existing.id == q.id) existing = q, replaced = true;
    if (!replaced) spec.requirements.push_back(q);
  }
  // `remove`: ids inherited from the parent that this table drops.
  if (j.contains("remove"))
    for (const auto& id : require_field<std::vector<std::string>>(j, "remove", path))
      remove_row(spec, id, path + ": field 'remove' names '" + id + "', which no parent row has");
}

/// One table's JSON, checked before anything in it is used: JSON, an object, no key twice, only
/// known top-level fields, a known schema. Every error names `path`, and `by` when not empty.
json read_table(const std::string& path, const std::string& by) {
  const std::string text = read_regular_file(path, kMaxSpecBytes, by);
  try {
    json j = parse_json_text(text, path);
    if (!j.is_object()) throw InputError(path + ": a spec table must be a JSON object");
    if (const std::string dup = duplicate_key(text); !dup.empty())
      throw InputError(path + ": " + dup + " appears twice in one object (a reader keeps one)");
    check_keys(j,
               {"schema", "name", "title", "extends", "match", "requirements", "remove", "families",
                "tiers", "nics_per_node", "dense_peaks", "dense_peaks_source", "alerts"},
               path);
    const std::string schema = require_field<std::string>(j, "schema", path);
    if (schema != kSpecSchema && schema != kSpecSchemaV4 && schema != kSpecSchemaV3 &&
        schema != kSpecSchemaV2 && schema != kSpecSchemaV1)
      throw InputError(path + ": field 'schema' is '" + schema + "', expected " + kSpecSchema +
                       " (or " + kSpecSchemaV4 + ", " + kSpecSchemaV3 + ", " + kSpecSchemaV2 +
                       ", " + kSpecSchemaV1 + ")");
    return j;
  } catch (const InputError& e) {
    if (by.empty()) throw;
    throw InputError(std::string(e.what()) + " (" + by + ")");
  }
}

/// The tables `extends` names: one file, or an array of files merged in order.
std::vector<std::string> parents_of(const json& j, const std::string& path) {
  const json& e = j.at("extends");
  if (e.is_string()) return {e.get<std::string>()};
  if (!e.is_array() || e.empty())
    throw InputError(path + ": field 'extends' must be a file name or a non-empty array of them");
  std::vector<std::string> out;
  for (const auto& x : e) {
    if (!x.is_string()) throw InputError(path + ": field 'extends' holds a non-string");
    out.push_back(x.get<std::string>());
  }
  return out;
}

/// Each of `items` over `into`: it replaces the entry whose `key` is its own, or is appended.
template <class T>
void replace_or_add(std::vector<T>& into, const std::vector<T>& items, std::string T::*key) {
  for (const auto& item : items) {
    auto it =
        std::find_if(into.begin(), into.end(), [&](const T& x) { return x.*key == item.*key; });
    if (it != into.end())
      *it = item;
    else
      into.push_back(item);
  }
}

/// A later parent of `extends` over the earlier ones: its rows, families and tiers replace
/// theirs by id, benchmark and name, or are added; title and match stay the first's that has
/// them.
void merge_parent(Spec& spec, const Spec& p) {
  replace_or_add(spec.requirements, p.requirements, &Requirement::id);
  for (const auto& f : p.families) {
    auto it = std::find_if(spec.families.begin(), spec.families.end(),
                           [&](const SpecFamily& x) { return x.benchmark == f.benchmark; });
    if (it != spec.families.end())
      override_family(*it, f);
    else
      spec.families.push_back(f);
  }
  for (const auto& [dtype, tflops] : p.dense_peaks) spec.dense_peaks[dtype] = tflops;
  if (p.nics_per_node) spec.nics_per_node = p.nics_per_node;
  if (!p.dense_peaks_source.empty()) spec.dense_peaks_source = p.dense_peaks_source;
  replace_or_add(spec.alerts, p.alerts, &SpecAlert::id);
  replace_or_add(spec.tiers, p.tiers, &SpecTier::name);
  if (spec.title.empty()) spec.title = p.title;
  if (!spec.has_match && p.has_match) spec.match = p.match, spec.has_match = true;
  for (const auto& f : p.extends_chain)
    if (std::find(spec.extends_chain.begin(), spec.extends_chain.end(), f) ==
        spec.extends_chain.end())
      spec.extends_chain.push_back(f);
}

/// One table and its ancestors. `chain` holds the tables that extend this one, nearest last:
/// every error met in an ancestor says which table extended it.
Spec load_one(const std::string& path, std::set<std::string>& seen,
              std::vector<std::string>& chain) {
  // Canonical names, so that "a/../b.json" and "b.json" are seen as one file in a cycle.
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  if (ec) canonical = path;
  const std::string by = chain.empty() ? "" : "extended by " + chain.back();
  if (!seen.insert(canonical).second)
    throw InputError(path + ": 'extends' forms a cycle (" + by + ")");
  if (static_cast<int>(chain.size()) >= kMaxExtendsDepth)
    throw InputError(path + ": 'extends' chain longer than " + std::to_string(kMaxExtendsDepth) +
                     " tables (" + by + ")");
  const json j = read_table(path, by);
  const std::string schema = j.at("schema").get<std::string>();
  Spec spec;
  if (j.contains("extends")) {
    chain.push_back(path);
    bool first = true;
    for (const std::string& parent : parents_of(j, path)) {
      Spec p =
          load_one(parent.starts_with("/") ? parent : dir_of(path) + "/" + parent, seen, chain);
      if (first)
        spec = std::move(p), first = false;
      else
        merge_parent(spec, p);
    }
    chain.pop_back();
  }
  seen.erase(canonical);  // an ancestor only on this path: two parents may share one
  spec.schema = schema;
  spec.path = path;
  spec.extends_chain.push_back(path);
  try {
    spec.name = require_field<std::string>(j, "name", path);
    if (j.contains("title")) spec.title = require_field<std::string>(j, "title", path);
    parse_match(j, path, spec);
    merge_rows(j, schema, path, spec);
    merge_families(j, schema, path, spec);
    merge_tiers(j, schema, path, spec);
    merge_dense_peaks(j, schema, path, spec);
    merge_alerts(j, schema, path, spec);
    if (j.contains("nics_per_node")) {
      const json& n = j.at("nics_per_node");
      if (!n.is_number_integer() || n.get<long long>() < 1 || n.get<long long>() > 64)
        throw InputError(path + ": field 'nics_per_node' must be an integer from 1 to 64");
      spec.nics_per_node = n.get<int>();
    }
  } catch (const InputError& e) {
    if (chain.empty()) throw;
    throw InputError(std::string(e.what()) + " (" + by + ")");
  }
  return spec;
}

}  // namespace

Spec load_spec(const std::string& path) {
  std::set<std::string> seen;
  std::vector<std::string> chain;
  Spec spec = load_one(path, seen, chain);
  // A threshold per NIC ({"per_nic": 12.5}) is the table's nics_per_node of it.
  for (Requirement& q : spec.requirements) {
    if (!q.value.is_object() || !q.value.contains("per_nic")) continue;
    if (!spec.nics_per_node)
      throw InputError(path + ": requirement '" + q.id +
                       "': field 'value' is per NIC, but the table sets no nics_per_node");
    q.per_nic = q.value.at("per_nic").get<double>();
    q.value = *q.per_nic * *spec.nics_per_node;
  }
  resolve_alerts(spec, path);
  return spec;
}

const std::vector<std::string>& spec_tier_names() {
  static const std::vector<std::string> k = {"hot", "warm", "cold"};
  return k;
}

json tiers_json(const std::vector<SpecTier>& tiers) {
  json out = json::array();
  for (const auto& t : tiers)
    out.push_back({{"name", t.name},
                   {"title", t.title},
                   {"path", t.path},
                   {"shared", t.shared ? json(*t.shared) : json(nullptr)},
                   {"mount_point", t.mount_point}});
  return out;
}

bool is_object_storage_url(const std::string& path) {
  // Object stores' schemes (S3 and its kin, Google Cloud Storage, Azure Blob, Swift, MinIO).
  static const std::set<std::string> kSchemes = {"s3",    "s3a",   "s3n",   "gs",   "gcs",
                                                 "az",    "abfs",  "abfss", "wasb", "wasbs",
                                                 "swift", "minio", "oss",   "cos"};
  auto sep = path.find("://");
  if (sep == std::string::npos || !kSchemes.count(path.substr(0, sep))) return false;
  if (sep == std::string::npos || sep == 0 || !std::isalpha(static_cast<unsigned char>(path[0])))
    return false;
  for (size_t i = 0; i < sep; ++i) {
    const unsigned char c = path[i];
    if (!std::isalnum(c) && c != '+' && c != '.' && c != '-') return false;
  }
  return sep + 3 < path.size();
}

std::string tier_path_refusal(const std::string& path) {
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f) return "'" + path + "' holds a control character";
  if (is_object_storage_url(path)) return "";
  if (path.find("://") != std::string::npos)
    return "'" + path + "' is a URL of no object store (s3, gs, az, abfs, wasb, swift, oss, cos: " +
           "not measured); a filesystem is named by its absolute path";
  if (path.empty() || path[0] != '/')
    return "'" + path + "' is neither an absolute path nor an object-storage URL (s3://...)";
  return "";
}

}  // namespace clusterbench
