// run.json read fast (run_dir.hpp read_run_json_fast): simdjson's On-Demand parser walks the file
// once; the plan (most of a large run.json: 137 MB and 836,000 case keys at 1,000 nodes x 8 GPUs,
// docs/report.md "Scale") is built straight from the text, or validated and dropped; every other
// field goes through nlohmann as before. Anything it does not expect makes it give up, and the
// ordinary reader accepts the file or says what is wrong with it.
#include <simdjson.h>

#include <set>
#include <string>
#include <string_view>

#include "records/ondemand.hpp"
#include "records/run_dir.hpp"
#include "records/run_record.hpp"

namespace clusterbench {

namespace {

namespace od = simdjson::ondemand;
using ondemand::get_string;
using ondemand::raw_value;

/// One planned case, field by field; false on anything unexpected (a FieldError from a case key
/// whose GPU index does not fit an int).
bool planned_case(od::value v, PlannedCase& c) {
  od::object o;
  if (v.get_object().get(o)) return false;
  std::set<std::string_view> seen;
  for (auto f : o) {
    od::field field;
    std::string_view key;
    if (std::move(f).get(field) || field.unescaped_key().get(key) || !seen.insert(key).second)
      return false;
    od::value x = field.value();
    if (key == "benchmark" && get_string(x, c.benchmark)) continue;
    if (key == "level" && get_string(x, c.level)) continue;
    std::string_view raw;
    if (key == "params" && raw_value(x, raw) && raw.front() == '{') {
      c.params = parse_json_text(raw, "", 0);
      continue;
    }
    od::array keys;
    if (key != "case_keys" || x.get_array().get(keys)) return false;
    size_t n = 0;  // case_keys may hold strings of a reused object: overwritten, not reallocated
    for (auto k : keys) {
      od::value kv;
      if (n == c.case_keys.size()) c.case_keys.emplace_back();
      if (std::move(k).get(kv) || !get_string(kv, c.case_keys[n++])) return false;
      check_gpu_index(c.case_keys[n - 1]);  // throws: the ordinary reader names the key
    }
    c.case_keys.resize(n);
  }
  return true;
}

}  // namespace

std::optional<RunRecord> read_run_json_fast(const std::string& path, bool with_plan) {
  require_regular_file(path);  // a FIFO would block the read
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path).get(text)) return std::nullopt;
  od::parser parser;
  od::document doc;
  od::object top;
  if (parser.iterate(text).get(doc) || doc.get_object().get(top)) return std::nullopt;
  std::string rest = "{";  // every field but the plan, for nlohmann and from_json
  std::vector<PlannedCase> plan;
  std::set<std::string> seen;
  try {
    for (auto f : top) {
      od::field field;
      std::string_view key, raw;
      if (std::move(f).get(field) || field.unescaped_key().get(key) || !seen.emplace(key).second)
        return std::nullopt;
      if (key != "plan") {
        if (!raw_value(field.value(), raw)) return std::nullopt;
        rest += (rest.size() > 1 ? "," : "") + json(std::string(key)).dump() + ":";
        rest += raw;
        continue;
      }
      od::array cases;
      if (field.value().get_array().get(cases)) return std::nullopt;
      PlannedCase checked;  // without the plan: each case checked in one reused object
      for (auto c : cases) {
        od::value cv;
        PlannedCase& one = with_plan ? plan.emplace_back() : checked;
        if (std::move(c).get(cv) || !planned_case(cv, one)) return std::nullopt;
      }
    }
    if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return std::nullopt;
    rest += "}";
    RunRecord run = parse_json_text(rest, "", 0).get<RunRecord>();
    run.plan = std::move(plan);
    return run;
  } catch (const std::exception&) {  // the ordinary reader says what is wrong
    return std::nullopt;
  }
}

}  // namespace clusterbench
