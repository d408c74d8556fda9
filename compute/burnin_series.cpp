// The burn-in's series (compute/burnin_soak.hpp): its analysis, its metrics and the console's
// interval line. Pure functions over the intervals' JSON; tests/unit/test_burnin.cpp checks them.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compute/burnin_soak.hpp"
#include "core/case_line.hpp"
#include "core/telemetry.hpp"
#include "records/records.hpp"

namespace clusterbench::compute {

namespace {

/// Rate over the intervals whose planned span [i d, (i + 1) d] (d = `interval_s`) lies within
/// [from, to] seconds of the soak; interval `fallback` alone when the soak is shorter than two
/// minutes (its first and last minute would overlap).
double rate_within(const json& series, double interval_s, double from, double to, size_t fallback) {
  double flop = 0, sec = 0;
  if (interval_s * static_cast<double>(series.size()) >= 120 - 1e-6) {
    for (const auto& iv : series) {
      double i = iv["index"].get<double>();
      if (i * interval_s >= from - 1e-6 && (i + 1) * interval_s <= to + 1e-6)
        flop += iv["flop"].get<double>(), sec += iv["seconds"].get<double>();
    }
  }
  if (sec <= 0 && fallback < series.size())
    flop = series[fallback]["flop"].get<double>(), sec = series[fallback]["seconds"].get<double>();
  return sec > 0 ? flop / sec / 1e12 : 0;
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
      if (reasons & kSlowdownReasonMask) ++a.slowdown_intervals;
    }
  }
  a.intervals = static_cast<int>(rates.size());
  if (rates.empty()) return a;
  a.third = std::max(1, a.intervals / 3);
  a.first_third = median_of(std::vector<double>(rates.begin(), rates.begin() + a.third));
  a.last_third = median_of(std::vector<double>(rates.end() - a.third, rates.end()));
  a.median = median_of(rates);
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
        {"slowdown_intervals", static_cast<double>(a.slowdown_intervals), "count", false});
  return out;
}

std::string soak_not_judged(const json& series, const std::string& stopped) {
  const int n = analyze_burnin(series).intervals;
  if (n == 0 || n >= kBurninMinIntervals) return "";
  std::string why = "rate_drop and rate_dip not judged: " + std::to_string(n) +
                    " interval(s) measured, " + std::to_string(kBurninMinIntervals) + " needed";
  return stopped.empty() ? why : why + " (" + stopped + ")";
}

std::vector<Metric> soak_series_metrics(const json& series, double interval_s, bool telemetry) {
  std::vector<Metric> out;
  if (series.empty()) return out;
  std::vector<double> rates, busbw;
  double temp = NAN;
  long long errors = 0;
  for (const auto& iv : series) {
    rates.push_back(iv["rate_tflops"].get<double>());
    if (iv["allreduce"].contains("busbw_gbs"))
      busbw.push_back(iv["allreduce"]["busbw_gbs"].get<double>());
    if (!iv["verification"]["passed"].get<bool>() || iv["allreduce"].value("wrong", 0LL) > 0 ||
        iv["allreduce"].value("wrong_ops", 0LL) > 0 || iv["allreduce"].contains("error"))
      ++errors;
    if (iv.contains("telemetry") && iv["telemetry"]["temperature_c_max"].is_number())
      temp = std::fmax(temp, iv["telemetry"]["temperature_c_max"].get<double>());
  }
  const double end = interval_s * (series.back()["index"].get<double>() + 1);
  out.push_back({"rate_median", median_of(rates), "TFLOP/s", true});
  out.push_back({"rate_first_minute", rate_within(series, interval_s, 0, 60, 0), "TFLOP/s", true});
  out.push_back({"rate_last_minute",
                 rate_within(series, interval_s, std::max(0.0, end - 60), end, series.size() - 1),
                 "TFLOP/s", true});
  out.push_back(
      {"rate_worst_interval", *std::min_element(rates.begin(), rates.end()), "TFLOP/s", true});
  out.push_back({"verification_errors", static_cast<double>(errors), "count", false});
  if (!busbw.empty()) out.push_back({"allreduce_busbw_median", median_of(busbw), "GB/s", true});
  if (telemetry && std::isfinite(temp)) out.push_back({"temperature_max", temp, "C", false});
  out.push_back({"intervals", static_cast<double>(series.size()), "count", true});
  for (Metric& m : burnin_metrics(analyze_burnin(series))) out.push_back(std::move(m));
  return out;
}

namespace {

/// One rank's part of an interval line: its rate (negative: none) and temperature, and what went
/// wrong in the interval ("" when nothing).
struct IntervalPart {
  double rate = -1, temp = NAN;
  std::string problem;
};

IntervalPart interval_part(const json& p) {
  IntervalPart out;
  if (p.is_null()) return out;
  if (p.contains("failed")) {
    out.problem = "FAILED: " + p.value("failed", std::string());
    return out;
  }
  out.rate = p.value("rate_tflops", 0.0);
  if (p.contains("telemetry") && p["telemetry"].contains("temperature_c_max") &&
      p["telemetry"]["temperature_c_max"].is_number())
    out.temp = p["telemetry"]["temperature_c_max"].get<double>();
  auto add = [&](const std::string& what) {
    out.problem += (out.problem.empty() ? "" : ", ") + what;
  };
  if (p.contains("verification") && !p["verification"].value("passed", true))
    add("WRONG GEMM RESULTS");
  const json ar = p.value("allreduce", json::object());
  if (ar.value("wrong", 0LL) > 0 || ar.value("wrong_ops", 0LL) > 0) add("WRONG all_reduce SUMS");
  if (ar.contains("error")) add("all_reduce FAILED: " + ar.value("error", std::string()));
  return out;
}

/// "vm/rank0 0.41 TFLOP/s, 71 C".
std::string rate_text(const std::string& label, const IntervalPart& p) {
  std::string t = label + " " + console_number(p.rate) + " TFLOP/s";
  if (std::isfinite(p.temp)) t += ", " + console_number(p.temp) + " C";
  return t;
}

/// The rates of an interval: each rank's up to 8, else the lowest, the median and the highest.
std::string rates_text(const std::vector<std::string>& labels,
                       const std::vector<IntervalPart>& parts) {
  std::vector<size_t> measured;
  for (size_t r = 0; r < parts.size(); ++r)
    if (parts[r].rate >= 0) measured.push_back(r);
  if (measured.empty()) return " no rank measured";
  std::string out;
  if (measured.size() <= 8) {
    for (size_t k = 0; k < measured.size(); ++k)
      out += (k ? "; " : " ") + rate_text(labels[measured[k]], parts[measured[k]]);
    return out;
  }
  std::stable_sort(measured.begin(), measured.end(),
                   [&](size_t a, size_t b) { return parts[a].rate < parts[b].rate; });
  const size_t hottest =
      *std::max_element(measured.begin(), measured.end(), [&](size_t a, size_t b) {
        return !(parts[b].temp <= parts[a].temp) && std::isfinite(parts[b].temp);
      });
  out = " lowest " + rate_text(labels[measured.front()], parts[measured.front()]) + "; median " +
        console_number(parts[measured[measured.size() / 2]].rate) + " TFLOP/s; highest " +
        rate_text(labels[measured.back()], parts[measured.back()]) + " (" +
        std::to_string(measured.size()) + " ranks)";
  if (std::isfinite(parts[hottest].temp))
    out += "; hottest " + labels[hottest] + " " + console_number(parts[hottest].temp) + " C";
  return out;
}

}  // namespace

std::string burnin_interval_line(int i, int n, const std::vector<std::string>& labels,
                                 const std::vector<json>& payloads) {
  std::vector<IntervalPart> parts;
  for (const auto& p : payloads) parts.push_back(interval_part(p));
  std::string line = "burn-in interval " + std::to_string(i + 1) + "/" + std::to_string(n) + ":" +
                     rates_text(labels, parts);
  for (const auto& p : payloads)
    if (p.is_object() && p.contains("allreduce") && p["allreduce"].contains("busbw_gbs")) {
      line += "; all_reduce busbw " + console_number(p["allreduce"]["busbw_gbs"].get<double>()) +
              " GB/s";
      break;
    }
  std::vector<std::string> problems;
  for (size_t r = 0; r < parts.size(); ++r)
    if (!parts[r].problem.empty()) problems.push_back(labels[r] + " " + parts[r].problem);
  for (size_t k = 0; k < problems.size() && k < 8; ++k) line += (k ? "; " : " -- ") + problems[k];
  if (problems.size() > 8) line += "; and " + std::to_string(problems.size() - 8) + " more";
  return line;
}

}  // namespace clusterbench::compute
