// Burn-in soak records and charts (reports/burnin.hpp).
#include "reports/burnin.hpp"

#include <map>

#include "reports/families.hpp"

namespace clusterbench::report {

namespace {

std::string item_label(const Scope& s) {
  if (s.kind == ScopeKind::gpu) return s.host + "/gpu" + std::to_string(s.gpu_index);
  return scope_item(s);
}

}  // namespace

std::vector<SoakResult> find_soaks(const RunDir& run, const std::vector<SpecFamily>& families) {
  std::vector<SoakResult> out;
  FamilyCache family(families);
  const auto& recs = run.records.records;
  for (size_t i = 0; i < recs.size(); ++i) {
    const ResultRecord& r = recs[i];
    if (r.status != Status::ok || !family(r.benchmark).soak) continue;
    auto series = r.extra.find("series");
    if (series == r.extra.end() || !series->is_array()) continue;
    out.push_back({i, item_label(r.scope), r.case_key});
  }
  return out;
}

std::vector<Chart> burnin_charts(const RunDir& run, const std::vector<SoakResult>& soaks) {
  Chart rate, temp;
  rate.title = "Burn-in: rate per interval over time, per GPU or rank";
  rate.kind = temp.kind = "lines";
  rate.xlabel = temp.xlabel = "time since the soak started (s)";
  rate.ylabel = "rate (TFLOP/s)";
  temp.title = "Burn-in: maximum GPU temperature per interval over time";
  temp.ylabel = "temperature (C)";
  std::map<std::string, const ResultRecord*> last;  // the last record of an item wins
  for (const SoakResult& soak : soaks) last[soak.item] = &run.records.records[soak.record];
  for (const auto& [label, r] : last) {
    Series rs{label, {}}, ts{label, {}};
    for (const auto& iv : r->extra["series"]) {
      if (!iv.contains("rate_tflops") || !iv["rate_tflops"].is_number()) continue;
      double mid = 0.5 * (iv.value("t_start_s", 0.0) + iv.value("t_end_s", 0.0));
      rs.points.push_back({mid, iv["rate_tflops"].get<double>()});
      if (iv.contains("telemetry") && iv["telemetry"].contains("temperature_c_max") &&
          iv["telemetry"]["temperature_c_max"].is_number())
        ts.points.push_back({mid, iv["telemetry"]["temperature_c_max"].get<double>()});
    }
    if (!rs.points.empty()) rate.series.push_back(std::move(rs)), ++rate.records;
    if (!ts.points.empty()) temp.series.push_back(std::move(ts)), ++temp.records;
  }
  std::vector<Chart> out;
  if (rate.records) out.push_back(std::move(rate));
  if (temp.records) out.push_back(std::move(temp));
  return out;
}

}  // namespace clusterbench::report
