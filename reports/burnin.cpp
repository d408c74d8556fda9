// Burn-in series analysis and charts (reports/burnin.hpp).
#include "reports/burnin.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "reports/families.hpp"

namespace clusterbench::report {

namespace {

double median(std::vector<double> xs) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  size_t m = xs.size() / 2;
  return xs.size() % 2 ? xs[m] : 0.5 * (xs[m - 1] + xs[m]);
}

std::string item_label(const Scope& s) {
  if (s.kind == "gpu") return s.host + "/gpu" + std::to_string(s.gpu_index);
  return scope_item(s);
}

}  // namespace

BurninAnalysis analyze_burnin(const json& series) {
  BurninAnalysis a;
  std::vector<double> rates;
  for (const auto& iv : series) {
    if (!iv.is_object() || !iv.contains("rate_tflops") || !iv["rate_tflops"].is_number()) continue;
    rates.push_back(iv["rate_tflops"].get<double>());
    if (iv.contains("telemetry") && iv["telemetry"].value("samples", 0) > 0) {
      ++a.telemetry_intervals;
      auto reasons = iv["telemetry"].value("clock_event_reasons", 0ULL);
      if (reasons & kThermalReasonMask) ++a.thermal_intervals;
    }
  }
  a.intervals = static_cast<int>(rates.size());
  if (rates.empty()) return a;
  a.third = std::max(1, a.intervals / 3);
  a.first_third = median(std::vector<double>(rates.begin(), rates.begin() + a.third));
  a.last_third = median(std::vector<double>(rates.end() - a.third, rates.end()));
  a.median = median(rates);
  auto worst = std::min_element(rates.begin(), rates.end());
  a.worst = *worst;
  a.worst_index = static_cast<int>(worst - rates.begin());
  a.drop_pct = a.first_third > 0 ? 100.0 * (a.first_third - a.last_third) / a.first_third : 0;
  a.dip_pct = a.median > 0 ? 100.0 * (a.median - a.worst) / a.median : 0;
  return a;
}

std::vector<Metric> burnin_metrics(const BurninAnalysis& a) {
  if (a.intervals == 0) return {};
  std::vector<Metric> out;
  if (a.intervals >= kBurninMinIntervals)
    out = {{"rate_drop", a.drop_pct, "%", false}, {"rate_dip", a.dip_pct, "%", false}};
  if (a.telemetry_intervals > 0)
    out.push_back(
        {"thermal_slowdown_intervals", static_cast<double>(a.thermal_intervals), "count", false});
  return out;
}

std::vector<Metric> burnin_metrics(const json& series) {
  return burnin_metrics(analyze_burnin(series));
}

std::vector<SoakResult> analyze_soaks(const RunDir& run, const std::vector<SpecFamily>& families) {
  std::vector<SoakResult> out;
  FamilyCache family(families);
  const auto& recs = run.records.records;
  for (size_t i = 0; i < recs.size(); ++i) {
    const ResultRecord& r = recs[i];
    if (r.status != "ok" || !family(r.benchmark).soak) continue;
    auto series = r.extra.find("series");
    if (series == r.extra.end() || !series->is_array()) continue;
    out.push_back({i, item_label(r.scope), r.case_key, analyze_burnin(*series)});
  }
  return out;
}

const RunDir& with_burnin_metrics(const RunDir& run, const std::vector<SoakResult>& soaks,
                                  RunDir& storage) {
  if (soaks.empty()) return run;
  storage = run;
  for (const SoakResult& soak : soaks) {
    ResultRecord& r = storage.records.records[soak.record];
    for (auto& m : burnin_metrics(soak.analysis))
      if (std::none_of(r.metrics.begin(), r.metrics.end(),
                       [&](const Metric& have) { return have.name == m.name; }))
        r.metrics.push_back(m);
    int n = soak.analysis.intervals;
    if (n < kBurninMinIntervals) {
      std::string why = "rate_drop and rate_dip not judged: " + std::to_string(n) +
                        " interval(s) measured, " + std::to_string(kBurninMinIntervals) + " needed";
      if (r.extra.contains("stopped_early") && r.extra["stopped_early"].is_string())
        why += " (" + r.extra["stopped_early"].get<std::string>() + ")";
      r.extra["not_judged"] = why;
      r.message = r.message.empty() ? why : r.message + "; " + why;
    }
  }
  return storage;
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
