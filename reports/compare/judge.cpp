// The verdict of a case and its metrics (judge.hpp).
#include "reports/compare/judge.hpp"

#include <algorithm>
#include <cmath>

#include "records/spec.hpp"
#include "reports/text.hpp"

namespace clusterbench::report {

const std::vector<std::string>& verdict_order() {
  static const std::vector<std::string> order = {
      kRegressed, kImproved, kNew, kNotSignificant, kNotCompared, kNotComparable, kUnchanged};
  return order;
}

int verdict_rank(const std::string& v) {
  const auto& o = verdict_order();
  return static_cast<int>(std::find(o.begin(), o.end(), v) - o.begin());
}

namespace {

/// Metrics renamed, old name -> new: a baseline written before the rename compares with its
/// successor (the training step's `mfu` was its GEMM time share, not MFU).
const std::string& current_name(const std::string& name) {
  static const std::string kGemmTimeShare = "gemm_time_share";
  return name == "mfu" ? kGemmTimeShare : name;
}

const Metric* find_metric(const ResultRecord& r, const std::string& name) {
  for (const auto& m : r.metrics)
    if (m.name == name || m.name == current_name(name)) return &m;
  return nullptr;
}

/// Whether CURRENT's `--only` globs (none: every benchmark) select `benchmark`.
bool selected(const std::vector<std::string>& only, const std::string& benchmark) {
  return only.empty() || std::any_of(only.begin(), only.end(), [&](const std::string& g) {
           return glob_match(g, benchmark);
         });
}

/// `j[key]` when it is a number, else `fallback`: a record's evidence is read, not trusted (a
/// hand-edited "in_flight": "4" had ended compare with a type error, exit 3).
double number_in(const json& j, const char* key, double fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

/// "K of N rounds" when `r` is a snapshot of a case spread over rounds (its run stopped before
/// the case's last round), "" otherwise.
std::string snapshot_rounds_text(const ResultRecord& r) {
  if (!r.extra.is_object()) return "";
  const auto snap = r.extra.find("snapshot");
  if (snap == r.extra.end() || *snap != json(true)) return "";
  const auto ro = r.extra.find("rounds");
  if (ro == r.extra.end() || !ro->is_object()) return "";
  return format_number(number_in(*ro, "run", 0)) + " of " +
         format_number(number_in(*ro, "planned", 0)) + " rounds";
}

/// Whether `r` is the failed record of a case in progress when its run was stopped by a signal
/// (SIGINT, SIGTERM, SIGHUP: an operator or a scheduler cancelled it; its message "aborted:
/// terminated by signal ...", after "round K of N: " in a round case): what the case measures
/// did not fail.
bool cancelled(const ResultRecord& r) {
  return r.status == Status::failed &&
         r.message.find("aborted: terminated by signal") != std::string::npos;
}

/// Why a case BASELINE did not measure is not compared: "waived in both runs: REASON" when both
/// sides say the same (every GPU case on a node without one), else each side's status.
std::string unmeasured_text(const ResultRecord& b, const ResultRecord& c) {
  const std::string bs = status_name(b.status), cs = status_name(c.status);
  if (b.status == c.status)
    return bs + " in both runs" +
           (b.message == c.message && !b.message.empty() ? ": " + b.message : "");
  return "no baseline value (" + bs + " in BASELINE, " + cs + " in CURRENT)";
}

/// The case's verdict by the records' status alone (missing, failed, waived, cancelled, a
/// snapshot), into `cc`; false when both are ok and finished, to be judged by their metrics.
bool judge_by_status(const ResultRecord& b, const ResultRecord* c, const RunRecord& current_run,
                     CaseChange& cc) {
  if (!c && !selected(current_run.only, b.benchmark)) {  // left out on purpose, not lost
    cc.verdict = kNotCompared;
    cc.message = "not run in CURRENT: its --only does not select " + b.benchmark;
    return true;
  }
  if (!c && b.status == Status::ok && current_run.aborted) {  // never reached, not lost
    cc.verdict = kNotCompared;
    const std::string& why = current_run.abort_reason;
    cc.message = "unfinished: CURRENT's run was aborted before the case" +
                 (why.empty() ? "" : " (" + why + ")") +
                 "; `clusterbench run --resume DIR` completes it";
    cc.unfinished = true;
    return true;
  }
  if (!c && b.status == Status::ok) {
    cc.verdict = kRegressed;
    cc.message = "case missing from CURRENT";
    return true;
  }
  if (!c) {  // nothing measured on either side
    cc.verdict = kNotCompared;
    cc.message = "no baseline value (" + cc.baseline_status + " in BASELINE), missing from CURRENT";
    return true;
  }
  // A side the run did not finish: the case in progress when a signal stopped it, or a
  // snapshot of a case spread over rounds.
  for (const auto& [side, r] : {std::pair{"BASELINE", &b}, std::pair{"CURRENT", c}}) {
    const std::string k = snapshot_rounds_text(*r);
    if (!cancelled(*r) && k.empty()) continue;
    cc.verdict = kNotCompared;
    cc.message = "unfinished: " + std::string(side) +
                 (k.empty() ? "'s run was stopped during the case (" + r->message + ")"
                            : " holds a snapshot after " + k +
                                  " (its run stopped before the case's last round)") +
                 "; `clusterbench run --resume DIR` completes it";
    cc.unfinished = true;
    return true;
  }
  if (b.status != Status::ok) {
    bool fixed = b.status == Status::failed && c->status == Status::ok;
    cc.verdict = fixed ? kImproved : kNotCompared;
    cc.message = fixed ? "failed in BASELINE, ok in CURRENT" : unmeasured_text(b, *c);
    return true;
  }
  if (c->status != Status::ok) {
    cc.verdict = kRegressed;
    cc.message = cc.current_status + " in CURRENT" + (c->message.empty() ? "" : ": " + c->message);
    return true;
  }
  return false;
}

/// Whether `mc` was left unchanged only because it is one number a run, the same on both sides.
bool one_equal_number(const MetricChange& mc) {
  return mc.verdict == kUnchanged && !mc.missing && mc.baseline_n == 0 && mc.current_n == 0;
}

/// A record that keeps N operations in flight (extra.little_law: {"in_flight": N,
/// "latency_of": {LATENCY: RATE}}, as fio's records say) has a mean latency of N / RATE (Little's
/// law): while the rate is unchanged, so is the mean latency, and a percentile that moved (a
/// median that went from one mode of a virtual disk's latency to the other while p99 fell)
/// measured a change of the distribution's shape, not of the speed. Such a latency of a record
/// with N > 1, the same N on both sides, is unchanged, with that reason; with N = 1 it is judged.
void settle_queue_latency(const ResultRecord& b, const ResultRecord& c,
                          std::vector<MetricChange>& metrics) {
  const auto law = b.extra.find("little_law");
  if (law == b.extra.end() || !law->is_object() || !c.extra.contains("little_law") ||
      c.extra["little_law"] != *law)
    return;
  const double in_flight = number_in(*law, "in_flight", 0);
  const auto lat = law->find("latency_of");
  if (in_flight <= 1 || lat == law->end() || !lat->is_object()) return;
  const json& latency_of = *lat;
  for (auto& m : metrics) {
    const auto rate = latency_of.find(m.name);
    if (rate == latency_of.end() || !rate->is_string() ||
        (m.verdict != kRegressed && m.verdict != kImproved))
      continue;
    auto it = std::find_if(metrics.begin(), metrics.end(),
                           [&](const MetricChange& x) { return x.name == *rate; });
    if (it == metrics.end() || it->verdict != kUnchanged || it->missing) continue;
    m.reason = "was " + m.verdict + " (p = " + format_number(m.p_value) + "); " + it->name +
               " unchanged (" + percent_points(it->change_pct, 2, true) + "), so at " +
               format_number(in_flight) + " in flight the mean latency is too (Little's law: N / " +
               it->name + "): the distribution changed shape, not speed";
    m.verdict = kUnchanged;
  }
}

/// `bm` against CURRENT's metric of its name in `c` (regressed when CURRENT lacks it, with the
/// reason CURRENT gives in extra.unmeasured), into `mc`; the missing one is added to `message`.
void judge_named_metric(const Metric& bm, const ResultRecord& b, const ResultRecord& c,
                        const std::vector<ToleranceRule>& rules,
                        const std::vector<SpecFamily>& families, MetricChange& mc,
                        std::string& message) {
  mc.name = bm.name;
  mc.unit = bm.unit;
  mc.higher_is_better = bm.higher_is_better;
  mc.baseline = bm.value;
  mc.tolerance = tolerance_for(rules, b.benchmark, current_name(bm.name), bm.unit, families);
  if (const Metric* cm = find_metric(c, bm.name)) return judge_metric(bm, *cm, mc.tolerance, mc);
  mc.verdict = kRegressed;
  mc.missing = true;
  std::string why;
  if (auto u = c.extra.find("unmeasured"); u != c.extra.end() && u->is_object())
    if (auto w = u->find(bm.name); w != u->end() && w->is_string()) why = w->get<std::string>();
  mc.reason = why.empty() ? "missing from CURRENT" : "not measured in CURRENT: " + why;
  message += (message.empty() ? "" : "; ") + ("metric '" + bm.name + "' " + mc.reason);
}

/// The case's verdict from its judged metrics: the worst comparable one; not_comparable, with the
/// first reason, when none is, or when the only unchanged ones are equal numbers with no
/// repetitions (a count of wrong results, 0 and 0, says nothing of the case's speed) beside one
/// that could not be tested.
void settle_case_verdict(CaseChange& cc) {
  bool comparable = false, tested = false;  // tested: judged on more than one equal number
  std::string not_comparable;
  for (const auto& mc : cc.metrics) {
    if (mc.verdict == kNotComparable) {
      if (not_comparable.empty()) not_comparable = mc.name + ": " + mc.reason;
    } else if (!comparable || verdict_rank(mc.verdict) < verdict_rank(cc.verdict)) {
      cc.verdict = mc.verdict;
      comparable = true;
    }
    tested |= mc.verdict != kNotComparable && !one_equal_number(mc);
  }
  if (!comparable || (!tested && !not_comparable.empty())) {
    // No metric to test (a case that records none compares by its status alone: ok both).
    cc.verdict = cc.metrics.empty() ? kUnchanged : kNotComparable;
    if (!cc.metrics.empty()) cc.message = "not comparable (" + not_comparable + ")";
  }
}

}  // namespace

void judge_case(const ResultRecord& b, const ResultRecord* c,
                const std::vector<ToleranceRule>& rules, const std::vector<SpecFamily>& families,
                const RunRecord& current_run, CaseChange& cc) {
  cc.baseline = &b;
  cc.current = c;
  cc.baseline_status = status_name(b.status);
  cc.current_status = c ? status_name(c->status) : "missing";
  if (judge_by_status(b, c, current_run, cc)) return;
  cc.metrics.resize(b.metrics.size());
  for (size_t i = 0; i < b.metrics.size(); ++i)
    judge_named_metric(b.metrics[i], b, *c, rules, families, cc.metrics[i], cc.message);
  settle_queue_latency(b, *c, cc.metrics);
  settle_case_verdict(cc);
}

namespace {

/// The latency floor of a lower-is-better time metric, in its unit; 0 for other metrics.
double latency_floor(const Metric& b, const Metric& c) {
  if (b.higher_is_better) return 0;
  const double per_us = b.unit == "us"   ? 1
                        : b.unit == "ms" ? 1e-3
                        : b.unit == "s"  ? 1e-6
                        : b.unit == "ns" ? 1e3
                                         : 0;
  if (per_us == 0) return 0;
  return std::max(kLatencyFloorUs * per_us, 2 * std::max(b.resolution, c.resolution));
}

/// A side's value: the median of its repetitions, or its one value.
double side_value(const Metric& m) { return m.reps.empty() ? m.value : median_of(m.reps); }

}  // namespace

void judge_metric(const Metric& b, const Metric& c, double tolerance, MetricChange& mc) {
  mc.baseline = side_value(b);
  mc.current = side_value(c);
  mc.baseline_n = static_cast<int>(b.reps.size());
  mc.current_n = static_cast<int>(c.reps.size());
  mc.baseline_spread = relative_spread(b.reps);
  mc.current_spread = relative_spread(c.reps);
  mc.tolerance = tolerance;
  double d;
  if (mc.baseline == 0) {
    d = mc.current == 0 ? 0 : (mc.current > 0) == b.higher_is_better ? 1 : -1;
  } else {
    d = (mc.current - mc.baseline) / std::fabs(mc.baseline);
    if (!b.higher_is_better) d = -d;
  }
  mc.change_pct = mc.baseline != 0 ? (mc.current - mc.baseline) / std::fabs(mc.baseline) * 100 : 0;
  const double floor = latency_floor(b, c);
  mc.verdict = kUnchanged;
  if (floor > 0 && std::fabs(mc.current - mc.baseline) < floor) {
    mc.reason = "moved less than the latency floor " + format_number(floor) + " " + b.unit;
  } else if (b.work > 0 && c.work > 0 && mc.baseline > 0 && mc.current > 0 &&
             std::fabs(c.work / mc.current - b.work / mc.baseline) < kLatencyFloorUs * 1e-6) {
    // A rate of work / t: its time per operation moved less than the floor (jitter of an
    // operation of a few microseconds, however large a share of it).
    mc.reason = "the time per operation moved less than the latency floor 1 us (" +
                format_number(b.work / mc.baseline * 1e6) + " -> " +
                format_number(c.work / mc.current * 1e6) + " us)";
  } else if (mc.baseline_n == 0 && mc.current_n == 0 && mc.current == mc.baseline) {
    // One number a run (a count of wrong results, a p99 over all batches), the same in both.
    mc.reason = "the same value in both runs (one number a run, no repetitions)";
  } else if (mc.baseline_n < kMinReps || mc.current_n < kMinReps) {
    mc.verdict = kNotComparable;
    // A best-of or one-pass number has no repetitions at all: say that, not "n = 0/0".
    mc.reason = mc.baseline_n == 0 && mc.current_n == 0
                    ? "one number a run (no repetitions), so a change cannot be tested"
                    : "n = " + std::to_string(mc.baseline_n) + "/" + std::to_string(mc.current_n) +
                          ", needs " + std::to_string(kMinReps) + " repetitions a side";
  } else if (std::fabs(d) <= tolerance) {
    mc.reason = "within tolerance";
  } else {
    mc.p_value = mann_whitney_p(b.reps, c.reps);
    const Detectable can = detectable_change(b.reps, c.reps, mc.baseline, tolerance);
    mc.detectable_pct = can.change_pct;
    mc.reps_needed = can.reps_needed;
    if (mc.p_value >= kAlpha) {
      mc.verdict = kNotSignificant;
      mc.reason = "not significant (p = " + format_number(mc.p_value) + ")";
    } else {
      mc.verdict = d < 0 ? kRegressed : kImproved;
    }
  }
}

bool by_uuid(const ResultRecord& r) {
  return r.scope.kind == ScopeKind::gpu && !r.scope.uuid.empty();
}

std::string uuid_key(const ResultRecord& r, const std::string& params_text) {
  return r.benchmark + "|" + params_text + "|" + r.scope.uuid;
}

std::string match_key(const ResultRecord& r) {
  if (by_uuid(r)) return uuid_key(r, r.params.dump());
  return r.case_key.empty() ? make_case_key(r.benchmark, r.params, r.scope) : r.case_key;
}

std::string CaseChange::match_key() const { return report::match_key(record()); }

std::string CaseChange::item() const {
  return scope_item(current ? current->scope : baseline->scope);
}

}  // namespace clusterbench::report
