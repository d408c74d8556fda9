// Spec families (docs/specs.md "Families"): what a benchmark family's tolerances, gauges, charts
// and compare tolerances are, validated as they load.
#include <algorithm>

#include "records/spec.hpp"
#include "records/spec_parse.hpp"

namespace clusterbench {

using namespace spec_parse;

namespace {

PrometheusGauge parse_gauge(const json& g, const std::string& where) {
  if (!g.is_object()) throw InputError(where + " must be an object");
  check_keys(g, {"metric", "name", "help", "unit", "scale"}, where);
  PrometheusGauge out;
  out.metric = require_field<std::string>(g, "metric", where);
  out.name = require_field<std::string>(g, "name", where);
  auto name_char = [](char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && std::isdigit(static_cast<unsigned char>(c)));
  };
  bool valid = !out.name.empty();
  for (size_t i = 0; i < out.name.size(); ++i) valid = valid && name_char(out.name[i], i == 0);
  if (!valid)
    throw InputError(where + ": field 'name' '" + out.name + "' is not a Prometheus metric name");
  out.help = require_field<std::string>(g, "help", where);
  out.unit = require_field<std::string>(g, "unit", where);
  if (!is_known_unit(out.unit))
    throw InputError(where + ": field 'unit' '" + out.unit + "' is not a known unit");
  if (g.contains("scale")) out.scale = require_field<double>(g, "scale", where);
  if (!(out.scale > 0) || !std::isfinite(out.scale))
    throw InputError(where + ": field 'scale' must be a positive number (a unit's factor)");
  return out;
}

/// A chart's `split`: an array of param names.
std::vector<std::string> parse_split(const json& c, const std::string& where) {
  if (!c.is_array()) throw InputError(where + ": field 'split' must be an array of param names");
  std::vector<std::string> out;
  for (const auto& v : c) {
    if (!v.is_string() || v.get<std::string>().empty())
      throw InputError(where + ": field 'split' must be an array of param names");
    out.push_back(v.get<std::string>());
  }
  return out;
}

/// The fields of a chart beyond the axis: kind, scope, series, max_series, split, mark_x.
void parse_chart_layout(const json& c, const std::string& where, FamilyChart& out) {
  if (c.contains("kind")) out.kind = require_field<std::string>(c, "kind", where);
  if (out.kind != "lines" && out.kind != "groups")
    throw InputError(where + ": field 'kind' is '" + out.kind + "', expected lines or groups");
  out.scope = optional_string(c, "scope", where);
  if (!out.scope.empty() && out.scope != "node" && out.scope != "gpu" && out.scope != "cluster" &&
      out.scope != "link")
    throw InputError(where + ": field 'scope' is '" + out.scope +
                     "', expected node, gpu, cluster or link");
  if (c.contains("series")) out.series = require_field<std::string>(c, "series", where);
  if (out.series != "benchmark" && out.series != "item")
    throw InputError(where + ": field 'series' is '" + out.series +
                     "', expected benchmark or item");
  if (c.contains("max_series") && !c["max_series"].is_number_integer())
    throw InputError(where + ": field 'max_series' must be a whole number");
  if (c.contains("max_series")) out.max_series = require_field<int>(c, "max_series", where);
  if (out.max_series < 0) throw InputError(where + ": field 'max_series' is negative");
  if (c.contains("split")) out.split = parse_split(c.at("split"), where);
  if (c.contains("mark_x")) out.mark_x = require_field<double>(c, "mark_x", where);
  out.mark_label = optional_string(c, "mark_label", where);
}

FamilyChart parse_chart(const json& c, const std::string& where) {
  if (!c.is_object()) throw InputError(where + " must be an object");
  check_keys(c,
             {"kind", "x", "logx", "logy", "metric", "unit", "scope", "series", "max_series",
              "split", "mark_x", "mark_label", "title", "xlabel", "ylabel"},
             where);
  FamilyChart out;
  out.x = require_field<std::string>(c, "x", where);
  if (c.contains("logx")) out.logx = require_field<bool>(c, "logx", where);
  if (c.contains("logy")) out.logy = require_field<bool>(c, "logy", where);
  out.metric = optional_string(c, "metric", where);
  out.unit = optional_string(c, "unit", where);
  if (!out.unit.empty() && !is_known_unit(out.unit))
    throw InputError(where + ": field 'unit' '" + out.unit + "' is not a known unit");
  parse_chart_layout(c, where, out);
  if (out.kind == "lines" && out.metric.empty() && out.unit.empty())
    throw InputError(where + ": a lines chart needs 'metric' or 'unit' (one quantity per axis)");
  if (out.kind == "lines" && out.unit.empty() &&
      out.metric.find_first_of("*?[") != std::string::npos)
    throw InputError(where + ": field 'metric' '" + out.metric +
                     "' is a glob: give 'unit' too, so that one axis holds one quantity");
  out.title = require_field<std::string>(c, "title", where);
  out.xlabel = optional_string(c, "xlabel", where);
  out.ylabel = optional_string(c, "ylabel", where);
  if (out.xlabel.empty()) out.xlabel = out.x;
  return out;
}

/// A family's `compare` list: [{"metric": GLOB, "tolerance": FRACTION}], FRACTION in [0, 10].
std::vector<CompareTolerance> parse_compare(const json& c, const std::string& where) {
  if (!c.is_array()) throw InputError(where + " must be an array");
  std::vector<CompareTolerance> out;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!c[i].is_object()) throw InputError(at + " must be an object");
    check_keys(c[i], {"metric", "tolerance"}, at);
    CompareTolerance t;
    t.metric = require_field<std::string>(c[i], "metric", at);
    if (t.metric.empty()) throw InputError(at + ": field 'metric' is empty");
    t.tolerance = require_field<double>(c[i], "tolerance", at);
    if (!(t.tolerance >= 0 && t.tolerance <= 10))
      throw InputError(at + ": field 'tolerance' must be a fraction in [0, 10] (0.05 is 5%)");
    out.push_back(std::move(t));
  }
  return out;
}

SpecFamily parse_family(const json& f, const std::string& where) {
  if (!f.is_object()) throw InputError(where + " must be an object");
  SpecFamily out;
  out.benchmark = require_field<std::string>(f, "benchmark", where);
  if (out.benchmark.empty()) throw InputError(where + ": field 'benchmark' is empty");
  const std::string at = where + " ('" + out.benchmark + "')";
  check_keys(f, {"benchmark", "outlier_tolerance", "prometheus", "chart", "series", "compare"}, at);
  if (f.contains("compare")) out.compare = parse_compare(f.at("compare"), at + ": compare");
  if (f.contains("outlier_tolerance")) {
    double t = require_field<double>(f, "outlier_tolerance", at);
    if (!(t >= 0)) throw InputError(at + ": field 'outlier_tolerance' must be >= 0");
    out.outlier_tolerance = t;
  }
  if (f.contains("prometheus")) {
    const json& gauges = f.at("prometheus");
    if (!gauges.is_array()) throw InputError(at + ": field 'prometheus' must be an array");
    out.prometheus.emplace();
    for (size_t i = 0; i < gauges.size(); ++i)
      out.prometheus->push_back(
          parse_gauge(gauges[i], at + ": prometheus[" + std::to_string(i) + "]"));
  }
  if (f.contains("chart")) out.chart = parse_chart(f.at("chart"), at + ": chart");
  out.series = optional_string(f, "series", at);
  if (!out.series.empty() && out.series != "soak")
    throw InputError(at + ": field 'series' is '" + out.series + "', expected soak");
  return out;
}

/// `families` of a clusterbench.spec/2 file merged into `spec`: a glob already there is
/// replaced in place, a new one appended.
}  // namespace

void spec_parse::merge_families(const json& j, const std::string& schema, const std::string& path,
                                Spec& spec) {
  if (!j.contains("families")) return;
  if (schema == kSpecSchemaV1)
    throw InputError(path + ": field 'families' needs schema " + kSpecSchemaV2 + " or later, not " +
                     schema);
  const json& fams = j.at("families");
  if (!fams.is_array()) throw InputError(path + ": field 'families' must be an array");
  std::set<std::string> here;
  for (size_t i = 0; i < fams.size(); ++i) {
    SpecFamily f = parse_family(fams[i], path + ": families[" + std::to_string(i) + "]");
    if (!f.compare.empty() && (schema == kSpecSchemaV1 || schema == kSpecSchemaV2))
      throw InputError(path + ": families[" + std::to_string(i) +
                       "]: field 'compare' needs schema " + kSpecSchemaV3 + " or later, not " +
                       schema);
    if (!here.insert(f.benchmark).second)
      throw InputError(path + ": families[" + std::to_string(i) + "]: benchmark '" + f.benchmark +
                       "' appears twice in this table");
    auto same = std::find_if(spec.families.begin(), spec.families.end(),
                             [&](const SpecFamily& x) { return x.benchmark == f.benchmark; });
    if (same != spec.families.end())
      override_family(*same, std::move(f));
    else
      spec.families.push_back(std::move(f));
  }
}

/// One entry of `tiers` over what the table inherited for that tier.

void spec_parse::override_family(SpecFamily& parent, SpecFamily child) {
  if (child.outlier_tolerance) parent.outlier_tolerance = child.outlier_tolerance;
  if (child.prometheus) parent.prometheus = std::move(child.prometheus);
  if (child.chart) parent.chart = std::move(child.chart);
  if (!child.series.empty()) parent.series = std::move(child.series);
  if (!child.compare.empty()) parent.compare = std::move(child.compare);
}

}  // namespace clusterbench
