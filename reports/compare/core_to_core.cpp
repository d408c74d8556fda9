// Core-to-core drift (core_to_core.hpp).
#include "reports/compare/core_to_core.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "records/statistics.hpp"
#include "reports/text.hpp"

namespace clusterbench::report {

namespace {

/// The round trips measured of one [before, after] pair, ns (0 to 2 values): a reading is
/// positive and under kC2cMaxNs (the probe gives up after 5 ms); anything else was not measured.
std::vector<double> measured_pair(const json& pair) {
  std::vector<double> out;
  if (!pair.is_array()) return out;
  for (const auto& v : pair)
    if (v.is_number() && v.get<double>() > 0 && v.get<double>() < kC2cMaxNs)
      out.push_back(v.get<double>());
  return out;
}

/// A record's core-to-core round trips, ns, one window per [before, after] pair with a value:
/// each round's on a record spread over rounds (extra.rounds.c2c_ns, at most rounds.run of them:
/// the merged record's host_probe has none), else the case's own (extra.host_probe.c2c_ns).
/// `rounds` tells which.
std::vector<std::vector<double>> case_c2c(const ResultRecord& r, bool& rounds) {
  std::vector<std::vector<double>> out;
  rounds = false;
  if (!r.extra.is_object()) return out;
  auto add = [&](const json& pair) {
    if (auto w = measured_pair(pair); !w.empty()) out.push_back(std::move(w));
  };
  auto ro = r.extra.find("rounds");
  if (ro != r.extra.end() && ro->is_object() && ro->contains("c2c_ns")) {
    rounds = true;
    const json& pairs = ro->at("c2c_ns");
    const auto run = ro->find("run");
    if (!pairs.is_array() || run == ro->end() || !run->is_number_integer() ||
        pairs.size() > run->get<size_t>())
      return out;  // not as merge_rounds writes it: not read
    for (const auto& pair : pairs) add(pair);
    return out;
  }
  auto p = r.extra.find("host_probe");
  if (p != r.extra.end() && p->is_object() && p->contains("c2c_ns")) add(p->at("c2c_ns"));
  return out;
}

bool apart(double a, double b) { return std::max(a, b) > (1 + kC2cTolerance) * std::min(a, b); }

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

/// Where a side's cores were: the median over its windows of each window's mean round trip.
double placement(const std::vector<std::vector<double>>& windows) {
  std::vector<double> means;
  for (const auto& w : windows) means.push_back(mean_of(w));
  return median_of(means);
}

/// "92/95 ns" for one window; "a median of 78 ns over 5 rounds (56-351 ns)" for several.
std::string c2c_text(const std::vector<std::vector<double>>& windows) {
  std::string out;
  if (windows.size() == 1) {
    for (double x : windows[0]) {
      if (!out.empty()) out += '/';
      out += format_number(std::round(x));
    }
    return out + " ns";
  }
  double lo = windows[0][0], hi = lo;
  for (const auto& w : windows)
    for (double x : w) lo = std::min(lo, x), hi = std::max(hi, x);
  return "a median of " + format_number(std::round(placement(windows))) + " ns over " +
         std::to_string(windows.size()) + " rounds (" + format_number(std::round(lo)) + "-" +
         format_number(std::round(hi)) + " ns)";
}

/// How many of a side's windows (rounds, or the case's one) have a reading more than
/// kC2cTolerance above `nearest`: the windows that ran, at least in part, on cores further apart.
int far_windows(const std::vector<std::vector<double>>& windows, double nearest) {
  return static_cast<int>(std::count_if(windows.begin(), windows.end(), [&](const auto& w) {
    return apart(*std::max_element(w.begin(), w.end()), nearest);
  }));
}

/// "2 of 5 rounds of CURRENT".
std::string far_text(const std::vector<std::vector<double>>& windows, double nearest,
                     const std::string& side) {
  return std::to_string(far_windows(windows, nearest)) + " of " + std::to_string(windows.size()) +
         " measured rounds of " + side;
}

}  // namespace

C2cMove c2c_move(const ResultRecord& baseline, const ResultRecord& current) {
  const bool ranks =
      baseline.scope.kind == ScopeKind::cluster || baseline.scope.kind == ScopeKind::link;
  bool b_rounds = false, c_rounds = false;
  const auto b = case_c2c(baseline, b_rounds), c = case_c2c(current, c_rounds);
  if (!ranks || b.empty() || c.empty()) return {};
  // The nearest placement either side saw; a window with a reading more than 2x that ran on
  // cores placed further apart (or straddled a move to them). The sides differ when they did so
  // in different shares of their windows: an MPI case's repetitions follow the cores.
  double nearest = b[0][0];
  for (const auto* side : {&b, &c})
    for (const auto& w : *side) nearest = std::min(nearest, *std::min_element(w.begin(), w.end()));
  const double fb = far_windows(b, nearest) / static_cast<double>(b.size()),
               fc = far_windows(c, nearest) / static_cast<double>(c.size());
  if (fb == fc) return {};
  std::string why = "the core-to-core round trip (before/after the case) was " + c2c_text(b) +
                    " in BASELINE and " + c2c_text(c) + " in CURRENT (the cores' placement changed";
  if (b_rounds || c_rounds)
    why += ": more than twice the nearest reading, " + format_number(std::round(nearest)) +
           " ns, in " + far_text(c, nearest, "CURRENT") + " and " +
           far_text(b, nearest, "BASELINE");
  return {why + ")", fc > fb ? 1 : -1};
}

std::string c2c_drift(const ResultRecord& baseline, const ResultRecord& current) {
  return c2c_move(baseline, current).reason;
}

}  // namespace clusterbench::report
