// Baseline comparison (docs/compare.md). Formats nothing it does not judge: the verdicts are here.
#include "reports/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <future>
#include <iostream>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "records/spec.hpp"
#include "records/utf8.hpp"
#include "reports/render.hpp"

namespace clusterbench::report {

namespace {

/// How a case's message starts when host drift left its change unjudged (compare.md lists them).
const std::string kDriftMessage = "not judged: host drift: ";

const std::vector<std::string>& verdict_order() {
  static const std::vector<std::string> order = {kRegressed,   kImproved,      kNew,
                                                 kNotCompared, kNotComparable, kUnchanged};
  return order;
}

int verdict_rank(const std::string& v) {
  const auto& o = verdict_order();
  return static_cast<int>(std::find(o.begin(), o.end(), v) - o.begin());
}

std::string pct(double fraction) { return format_number(std::round(fraction * 1e4) / 100) + "%"; }

std::string signed_pct(double percent) {
  std::string s = format_number(std::round(percent * 100) / 100) + "%";
  return percent > 0 ? "+" + s : s;
}

std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c == '\n' ? ' ' : c);
  return out.empty() ? "-" : out;
}

std::string hosts_text(const std::vector<std::string>& hosts) {
  std::string out;
  for (size_t i = 0; i < hosts.size() && i < 8; ++i) out += (i ? ", " : "") + hosts[i];
  if (hosts.size() > 8) out += ", ... (" + std::to_string(hosts.size()) + " hosts)";
  return out;
}

/// Environment fields compared per host: (field, value) pairs, several per field for GPUs,
/// NICs and disks (keyed by UUID or name so the same part is compared with itself).
std::vector<std::pair<std::string, std::string>> env_fields(const EnvRecord& e) {
  std::vector<std::pair<std::string, std::string>> f = {
      {"driver", e.versions.driver},
      {"cuda_driver", e.versions.cuda_driver},
      {"cuda_runtime", e.versions.cuda_runtime},
      {"cublas", e.versions.cublas},
      {"nccl", e.versions.nccl},
      {"mpi", e.versions.mpi},
      {"kernel", e.versions.kernel},
      {"fio", e.versions.fio},
      {"clusterbench", e.versions.clusterbench},
      {"gpu count", std::to_string(e.gpus.size())},
      {"tuning governor", e.tuning.governor},
      {"tuning nr_hugepages", std::to_string(e.tuning.nr_hugepages)},
      {"tuning thp", e.tuning.thp},
      {"tuning net.core.rmem_max", std::to_string(e.tuning.net_core_rmem_max)},
      {"tuning net.core.wmem_max", std::to_string(e.tuning.net_core_wmem_max)},
      {"tuning tcp_rmem", e.tuning.tcp_rmem},
      {"tuning tcp_wmem", e.tuning.tcp_wmem},
  };
  for (const auto& g : e.gpus) f.push_back({"gpu vbios " + g.uuid, g.vbios});
  for (const auto& n : e.nics)
    if (n.physical()) f.push_back({"nic firmware " + n.name, n.firmware});
  for (const auto& d : e.block_devices) f.push_back({"disk firmware " + d.name, d.firmware});
  // Not probed in a record written before the software stack was: not a change.
  if (!e.software.pytorch.state.empty())
    for (auto& [name, value] : software_fields(e.software)) f.push_back({name, value});
  return f;
}

/// The field name shown: per-part fields are grouped by kind ("gpu vbios"), so that one change
/// over a thousand GPUs is one row.
std::string field_group(const std::string& field) {
  for (const char* prefix : {"gpu vbios ", "disk firmware "})
    if (field.rfind(prefix, 0) == 0) return std::string(prefix, std::string(prefix).size() - 1);
  return field;
}

/// What the two runs were asked to do differently (run.json suite, only, rounds, set): a change
/// there explains a change in the numbers as much as a driver does. Listed with hosts "all".
void compare_settings(const RunRecord& b, const RunRecord& c, Comparison& out) {
  auto add = [&](const std::string& field, const std::string& bv, const std::string& cv) {
    if (bv != cv) out.env_changes.push_back({field, bv, cv, {"all"}});
  };
  add("--suite", b.suite, c.suite);
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s.empty() ? std::string("(all)") : s;
  };
  add("--only", joined(b.only), joined(c.only));
  // One round's repetitions sample one window, five rounds' five moments: not like for like.
  add("--rounds", std::to_string(b.rounds), std::to_string(c.rounds));
  auto sets = [](const std::vector<std::string>& v) {
    std::map<std::string, std::string> m;
    for (const auto& kv : v) {
      auto eq = kv.find('=');
      m[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
    return m;
  };
  auto bs = sets(b.set), cs = sets(c.set);
  std::set<std::string> keys;
  for (const auto& [k, v] : bs) keys.insert(k);
  for (const auto& [k, v] : cs) keys.insert(k);
  for (const auto& k : keys) {
    auto bi = bs.find(k), ci = cs.find(k);
    add("--set " + k, bi == bs.end() ? "(default)" : bi->second,
        ci == cs.end() ? "(default)" : ci->second);
  }
}

void compare_env(const RunDir& b, const RunDir& c, Comparison& out) {
  compare_settings(b.run, c.run, out);
  std::map<std::string, const EnvRecord*> bh, ch;
  for (const auto& e : b.run.env) bh[e.host] = &e;
  for (const auto& e : c.run.env) ch[e.host] = &e;
  std::map<std::tuple<std::string, std::string, std::string>, std::set<std::string>> groups;
  for (const auto& [host, be] : bh) {
    auto it = ch.find(host);
    if (it == ch.end()) {
      out.hosts_removed.push_back(host);
      continue;
    }
    std::map<std::string, std::string> cur;
    for (auto& [k, v] : env_fields(*it->second)) cur[k] = v;
    for (auto& [k, v] : env_fields(*be)) {
      auto ci = cur.find(k);
      if (ci == cur.end() || ci->second == v) continue;
      groups[{field_group(k), v, ci->second}].insert(host);
    }
  }
  for (const auto& [host, ce] : ch)
    if (!bh.count(host)) out.hosts_added.push_back(host);
  for (auto& [key, hosts] : groups) {
    auto& [field, bv, cv] = key;
    out.env_changes.push_back(
        {field, bv, cv, std::vector<std::string>(hosts.begin(), hosts.end())});
  }
}

const Metric* find_metric(const ResultRecord& r, const std::string& name) {
  for (const auto& m : r.metrics)
    if (m.name == name) return &m;
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
               " unchanged (" + signed_pct(it->change_pct) + "), so at " +
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
  mc.tolerance = tolerance_for(rules, b.benchmark, bm.name, bm.unit, families);
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

void compare_case(const ResultRecord& b, const ResultRecord* c,
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

}  // namespace

ToleranceRule parse_tolerance(const std::string& text) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--tolerance '" + text + "': expected KEY=PCT, e.g. 'GB/s=5%'");
  std::string num = text.substr(eq + 1);
  if (num.back() == '%') num.pop_back();
  size_t used = 0;
  double v = 0;
  // Decimal digits only: stod alone takes "" (as 0), " 5" and "0x10" (as 16).
  const bool decimal =
      !num.empty() && num.find_first_not_of("0123456789.eE+-") == std::string::npos;
  try {
    v = decimal ? std::stod(num, &used) + 0.0 : 0;  // + 0.0: -0 is 0
  } catch (const std::exception&) {
    used = 0;
  }
  if (!decimal || used != num.size() || !(v >= 0) || v > 1000)
    throw InputError("--tolerance '" + text + "': '" + text.substr(eq + 1) +
                     "' is not a percentage (0..1000)");
  const std::string key = text.substr(0, eq);
  if (key.find('=') != std::string::npos)
    throw InputError("--tolerance '" + text + "': expected one '=' (KEY=PCT)");
  const auto colon = key.find(':');
  if (colon != std::string::npos &&
      (colon == 0 || colon + 1 == key.size() || key.find(':', colon + 1) != std::string::npos))
    throw InputError("--tolerance '" + text + "': '" + key +
                     "' must be BENCHMARK-GLOB:METRIC, both parts named");
  return {key, v / 100};
}

double default_tolerance(const std::string& unit) {
  if (unit == "TFLOP/s") return 0.02;
  if (unit == "GB/s" || unit == "Gb/s") return 0.03;
  return 0.05;
}

bool rule_names(const ToleranceRule& rule, const std::string& benchmark, const std::string& metric,
                const std::string& unit) {
  if (is_known_unit(rule.key)) return rule.key == unit;
  const auto colon = rule.key.find(':');
  if (colon != std::string::npos && !glob_match(rule.key.substr(colon + 1), metric)) return false;
  return glob_match(rule.key.substr(0, colon), benchmark);
}

double tolerance_for(const std::vector<ToleranceRule>& rules, const std::string& benchmark,
                     const std::string& metric, const std::string& unit,
                     const std::vector<SpecFamily>& families) {
  const ToleranceRule* by_bench = nullptr;
  const ToleranceRule* by_unit = nullptr;
  for (const auto& r : rules)
    if (rule_names(r, benchmark, metric, unit)) (is_known_unit(r.key) ? by_unit : by_bench) = &r;
  if (by_bench) return by_bench->fraction;
  if (by_unit) return by_unit->fraction;
  std::optional<double> from_spec;
  for (const auto& f : families) {
    if (f.compare.empty() || !glob_match(f.benchmark, benchmark)) continue;
    for (const auto& t : f.compare)
      if (glob_match(t.metric, metric)) from_spec = t.tolerance;
  }
  return from_spec ? *from_spec : default_tolerance(unit);
}

namespace {

/// Average ranks (1-based) of `v`'s values among all of `v`; `ties` gets sum(t^3 - t) over the
/// groups of t equal values.
std::vector<double> average_ranks(const std::vector<double>& v, double& ties) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  ties = 0;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double t = static_cast<double>(j - i + 1);
    for (size_t k = i; k <= j; ++k) rank[idx[k]] = (static_cast<double>(i + j) + 2) / 2;
    ties += t * t * t - t;
    i = j + 1;
  }
  return rank;
}

/// P(U <= u) under the null hypothesis, exactly: the number of arrangements of n1 and n2 values
/// with U = k satisfies N(n1, n2, k) = N(n1 - 1, n2, k - n2) + N(n1, n2 - 1, k).
double exact_u_cdf(int n1, int n2, double u) {
  const int umax = n1 * n2;
  // count[j][k]: arrangements of i values of the first sample and j of the second with U = k.
  std::vector<std::vector<double>> prev(n2 + 1, std::vector<double>(umax + 1, 0)), cur = prev;
  for (int j = 0; j <= n2; ++j) prev[j][0] = 1;  // i = 0: U is 0
  for (int i = 1; i <= n1; ++i) {
    for (int j = 0; j <= n2; ++j)
      for (int k = 0; k <= umax; ++k)
        cur[j][k] = (k >= j ? prev[j][k - j] : 0) + (j > 0 ? cur[j - 1][k] : 0);
    std::swap(prev, cur);
  }
  double total = 0, below = 0;
  for (int k = 0; k <= umax; ++k) {
    total += prev[n2][k];
    if (k <= u + 1e-9) below += prev[n2][k];
  }
  return below / total;
}

}  // namespace

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return 1;
  std::vector<double> all(a);
  all.insert(all.end(), b.begin(), b.end());
  double ties = 0;
  const std::vector<double> rank = average_ranks(all, ties);
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  double r1 = 0;
  for (size_t i = 0; i < a.size(); ++i) r1 += rank[i];
  const double u1 = r1 - n1 * (n1 + 1) / 2;
  const double u = std::min(u1, n1 * n2 - u1);
  if (ties == 0 && a.size() <= 20 && b.size() <= 20)
    return std::min(1.0,
                    2 * exact_u_cdf(static_cast<int>(a.size()), static_cast<int>(b.size()), u));
  const double n = n1 + n2;
  const double var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
  if (var <= 0) return 1;  // every value equal
  const double z = (std::fabs(u - n1 * n2 / 2) - 0.5) / std::sqrt(var);
  return std::min(1.0, std::erfc(std::max(z, 0.0) / std::sqrt(2.0)));
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
    if (mc.p_value >= kAlpha)
      mc.reason = "not significant (p = " + format_number(mc.p_value) + ")";
    else
      mc.verdict = d < 0 ? kRegressed : kImproved;
  }
}

namespace {
bool by_uuid(const ResultRecord& r) {
  return r.scope.kind == ScopeKind::gpu && !r.scope.uuid.empty();
}
/// A GPU record's match key, its params serialised by the caller.
std::string uuid_key(const ResultRecord& r, const std::string& params_text) {
  return r.benchmark + "|" + params_text + "|" + r.scope.uuid;
}
}  // namespace

std::string match_key(const ResultRecord& r) {
  if (by_uuid(r)) return uuid_key(r, r.params.dump());
  return r.case_key.empty() ? make_case_key(r.benchmark, r.params, r.scope) : r.case_key;
}

std::string CaseChange::match_key() const { return report::match_key(record()); }

std::string CaseChange::item() const {
  return scope_item(current ? current->scope : baseline->scope);
}

namespace {

/// One side's records by match key. The maps view the records' own case keys, or keys that must
/// be built (GPU records by UUID: match_key(), with each case's params serialised once, as its
/// records come one after another) kept in `made`.
struct Side {
  std::deque<std::string> made;
  std::vector<std::string_view> keys;                 ///< match key of each record
  std::unordered_map<std::string_view, size_t> last;  ///< match key -> its last record
  std::vector<size_t> order;                          ///< first record of each key, in order
};

Side index_side(const std::vector<ResultRecord>& recs) {
  Side side;
  side.keys.reserve(recs.size());
  const json* last_params = nullptr;
  std::string last_dump;
  for (const auto& r : recs) {
    if (by_uuid(r)) {
      if (!last_params || *last_params != r.params) last_dump = r.params.dump();
      last_params = &r.params;
      side.keys.push_back(side.made.emplace_back(uuid_key(r, last_dump)));
    } else if (r.case_key.empty()) {
      side.keys.push_back(side.made.emplace_back(match_key(r)));
    } else {
      side.keys.push_back(r.case_key);
    }
  }
  side.last.reserve(recs.size());
  for (size_t i = 0; i < recs.size(); ++i) {
    auto [it, fresh] = side.last.try_emplace(side.keys[i], i);
    if (fresh)
      side.order.push_back(i);
    else
      it->second = i;
  }
  return side;
}

/// Worst verdict first, keeping the order within a verdict: each case moves once, to its
/// verdict's next slot.
void sort_by_verdict(std::vector<CaseChange>& cases) {
  std::vector<size_t> slot(verdict_order().size() + 2, 0);
  for (const auto& cc : cases) ++slot[verdict_rank(cc.verdict) + 1];
  for (size_t v = 1; v < slot.size(); ++v) slot[v] += slot[v - 1];
  std::vector<CaseChange> sorted(cases.size());
  for (auto& cc : cases) sorted[slot[verdict_rank(cc.verdict)]++] = std::move(cc);
  cases = std::move(sorted);
}

}  // namespace

ProbeSamples probe_samples(const std::vector<ResultRecord>& records) {
  ProbeSamples out;
  for (const auto& r : records) {
    if (r.status != Status::ok || r.scope.host.empty() || !r.extra.is_object()) continue;
    auto it = r.extra.find("host_probe");
    if (it == r.extra.end() || !it->is_object()) continue;
    for (const char* k : {"cpu_mops", "mem_gbps"}) {
      auto v = it->find(k);
      if (v != it->end() && v->is_number() && v->get<double>() > 0)
        out[r.scope.host][k].push_back(v->get<double>());
    }
  }
  return out;
}

std::vector<HostDrift> host_drift(const ProbeSamples& baseline, const ProbeSamples& current) {
  std::vector<HostDrift> out;
  for (const auto& [host, probes] : baseline) {
    auto c = current.find(host);
    if (c == current.end()) continue;
    for (const auto& [probe, b] : probes) {
      auto cs = c->second.find(probe);
      if (cs == c->second.end() || b.size() < kMinReps || cs->second.size() < kMinReps) continue;
      HostDrift d{host, probe, median_of(b), median_of(cs->second)};
      d.change_pct = (d.current - d.baseline) / d.baseline * 100;
      d.baseline_n = static_cast<int>(b.size()), d.current_n = static_cast<int>(cs->second.size());
      if (std::abs(d.change_pct) / 100 <= kHostDriftTolerance) continue;
      d.p_value = mann_whitney_p(b, cs->second);
      if (d.p_value < kAlpha) out.push_back(d);
    }
  }
  return out;
}

bool host_bound(const ResultRecord& r) {
  if (r.scope.kind == ScopeKind::gpu || !r.scope.uuid.empty()) return false;
  if (!r.params.is_object()) return true;
  const auto backend = r.params.find("backend");
  return backend == r.params.end() || *backend != json("nccl");
}

namespace {

std::string drift_text(const HostDrift& d) {
  return d.host + " ran " + format_number(std::round(std::abs(d.change_pct) * 10) / 10) + "% " +
         (d.change_pct < 0 ? "slower" : "faster") + " in CURRENT (host probe " + d.probe + " " +
         format_number(d.baseline) + " -> " + format_number(d.current) +
         ", p = " + format_number(d.p_value) + ", n = " + std::to_string(d.baseline_n) + "/" +
         std::to_string(d.current_n) + ")";
}

/// The share of its CPUs a record's case got (extra.host_probe.cpu_share); -1 when absent.
double case_share(const ResultRecord& r) {
  if (!r.extra.is_object()) return -1;
  auto p = r.extra.find("host_probe");
  if (p == r.extra.end() || !p->is_object()) return -1;
  auto s = p->find("cpu_share");
  return s != p->end() && s->is_number() ? s->get<double>() : -1;
}

/// The share of its disk's bytes a record's case moved itself (extra.disk_load.fio_share);
/// -1 when absent or not a fraction. `disk` gets the disk's name.
double case_disk_share(const ResultRecord& r, std::string& disk) {
  if (!r.extra.is_object()) return -1;
  auto d = r.extra.find("disk_load");
  if (d == r.extra.end() || !d->is_object()) return -1;
  auto s = d->find("fio_share");
  if (s == d->end() || !s->is_number()) return -1;
  auto name = d->find("disk");
  disk = name != d->end() && name->is_string() ? name->get<std::string>() : "?";
  const double share = s->get<double>();
  return share >= 0 && share <= 1 ? share : -1;  // a share is a fraction; else not read
}

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

/// How a multi-rank case's cores moved: why (`reason`, "" when they did not, or a side measured
/// none), and which side had them further apart (`longer`: +1 CURRENT, -1 BASELINE).
struct C2cMove {
  std::string reason;
  int longer = 0;
};

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

}  // namespace

std::string c2c_drift(const ResultRecord& baseline, const ResultRecord& current) {
  return c2c_move(baseline, current).reason;
}

namespace {

/// Why a host-bound case's change is not judged ("" when it is): its own CPU share moved
/// (another job on its cores while it ran), or its host's probe drifted.
/// Whether a cause that moved the host's speed by `factor` (>= 1) can explain every regressed or
/// improved metric of the case: each changed by at most that factor. A 5x slowdown on a host
/// whose probe moved 22% is judged.
bool explains(const CaseChange& cc, double factor) {
  return std::all_of(cc.metrics.begin(), cc.metrics.end(), [&](const MetricChange& m) {
    const double f = 1 + m.change_pct / 100;
    return (m.verdict != kRegressed && m.verdict != kImproved) ||
           (f > 0 && std::max(f, 1 / f) <= factor);
  });
}

double ratio_of(double a, double b) { return std::max(a, b) / std::min(a, b); }

/// Whether the side with less of its CPUs is the slower one in every regressed or improved
/// metric of the case (BASELINE's share `b`, CURRENT's `c`).
bool slower_where_shared(const CaseChange& cc, double b, double c) {
  return std::all_of(cc.metrics.begin(), cc.metrics.end(), [&](const MetricChange& m) {
    return (m.verdict != kRegressed || c < b) && (m.verdict != kImproved || b < c);
  });
}

/// Whether a lost share of its CPUs explains the case's change, the side with less being the
/// slower: up to the shares' ratio (with
/// the probe's tolerance as a margin) for a case of one process; any factor for a case whose
/// ranks wait on each other (cluster and link scope), since an operation whose peer lost its
/// core waits a scheduler tick of milliseconds (measured: a 4 KiB MPI all_reduce of 3 us took
/// 8-16 ms an operation while a build shared the cores of its two ranks).
bool share_explains(const CaseChange& cc, double b, double c) {
  const ScopeKind k = cc.current->scope.kind;
  return slower_where_shared(cc, b, c) &&
         (k == ScopeKind::cluster || k == ScopeKind::link ||
          explains(cc, ratio_of(b, c) * (1 + kHostDriftTolerance)));
}

/// Why a case on a disk that other work shared in one run is not judged ("" when it is): the
/// slower side's disk carried more than kShareTolerance more of other work's bytes. Any factor:
/// a queue shared with another writer moves latencies far more than its share of the bytes
/// (measured: fio's write clat p99 +166% while two other runs used the disk).
std::string disk_reason(const CaseChange& cc) {
  std::string disk, other;
  const double b = case_disk_share(*cc.baseline, other), c = case_disk_share(*cc.current, disk);
  if (b < 0 || c < 0 || std::abs(c - b) <= kShareTolerance * std::max(b, c) ||
      !slower_where_shared(cc, b, c))
    return "";
  return "other work moved " + pct(1 - c) + " of the bytes of its disk (" + disk +
         ") while this case ran in CURRENT against " + pct(1 - b) +
         " in BASELINE (other work shared the disk)";
}

std::string drift_reason(const CaseChange& cc, const std::map<std::string, const HostDrift*>& by) {
  if (std::string disk = disk_reason(cc); !disk.empty()) return disk;
  const double b = case_share(*cc.baseline), c = case_share(*cc.current);
  // A share or a probe explains a change up to its own ratio, with the probe's tolerance as a
  // margin; a move of the cores up to the ratio of the round trips it measured.
  const double busy = std::max(b, c);
  if (busy >= kBusyShare && std::min(b, c) > 0 && std::abs(c - b) > kShareTolerance * busy &&
      share_explains(cc, b, c))
    return "this case used " + format_number(std::round(c * 100) / 100) +
           " cores' worth of CPU in CURRENT against " + format_number(std::round(b * 100) / 100) +
           " in BASELINE (other work shared its cores)";
  if (const C2cMove mv = c2c_move(*cc.baseline, *cc.current);
      !mv.reason.empty() && slower_where_shared(cc, mv.longer, -mv.longer))
    return mv.reason;  // the longer trip is the smaller share
  const Scope& sc = cc.current->scope;
  std::vector<const HostDrift*> drifts;
  if (sc.kind == ScopeKind::cluster)
    for (const auto& [host, d] : by) drifts.push_back(d);
  for (const auto& h : sc.kind == ScopeKind::link ? sc.hosts : std::vector<std::string>{sc.host})
    if (by.count(h)) drifts.push_back(by.at(h));
  for (const HostDrift* d : drifts)
    if (d->baseline > 0 && d->current > 0 &&
        explains(cc, ratio_of(d->baseline, d->current) * (1 + kHostDriftTolerance)))
      return drift_text(*d);
  return "";
}

/// Leaves `cc`'s regressed or improved metrics unjudged (not_comparable) for host drift.
void unjudge(CaseChange& cc, const std::string& message, int& drift_cases) {
  for (auto& m : cc.metrics)
    if (m.verdict == kRegressed || m.verdict == kImproved)
      m.reason =
          "was " + m.verdict + " (p = " + format_number(m.p_value) + "); not judged: host drift",
      m.verdict = kNotComparable;
  cc.verdict = kNotComparable;
  cc.message = message;
  ++drift_cases;
}

/// Whether `cc` is a host-bound case, ok on both sides with every metric, that moved.
bool moved_on_host(const CaseChange& cc) {
  return (cc.verdict == kRegressed || cc.verdict == kImproved) && cc.baseline && cc.current &&
         cc.current_status == "ok" && cc.baseline_status == "ok" && host_bound(*cc.current) &&
         std::none_of(cc.metrics.begin(), cc.metrics.end(),
                      [](const MetricChange& m) { return m.missing; });
}

/// Host-bound cases whose metrics moved while their host's conditions changed are not judged:
/// the host, not what runs on it, changed speed (docs/compare.md "Host drift"). The same
/// measurement at another scope (a training step's node record beside its cluster record, the
/// same step time) follows it: one change, one judgement.
void discount_drift(Comparison& out) {
  std::map<std::string, const HostDrift*> by_host;
  for (const auto& d : out.host_drift) by_host.try_emplace(d.host, &d);
  std::map<std::string, std::string> unjudged;  // benchmark + params -> the message
  for (auto& cc : out.cases) {
    if (!moved_on_host(cc)) continue;
    const std::string why = drift_reason(cc, by_host);
    if (why.empty()) continue;
    unjudge(cc, kDriftMessage + why + "; rerun both on a quiet host", out.drift_cases);
    unjudged.try_emplace(cc.benchmark() + cc.params().dump(), cc.message);
  }
  for (auto& cc : out.cases) {
    if (!moved_on_host(cc)) continue;
    const auto it = unjudged.find(cc.benchmark() + cc.params().dump());
    if (it != unjudged.end()) unjudge(cc, it->second, out.drift_cases);
  }
}

}  // namespace

namespace {

/// True when no metric of any case was judged (regressed, improved or unchanged): a BASELINE with
/// no records of CURRENT's cases, or runs of one repetition a case, answer nothing, and compare
/// says so (exit 4) rather than "NO REGRESSION".
bool nothing_judged(const Comparison& c) {
  return !c.cases.empty() &&
         c.counts.at(kRegressed) + c.counts.at(kImproved) + c.counts.at(kUnchanged) == 0;
}

/// The keys of `rules` that name no metric of any record in `cases`.
std::vector<std::string> unused_rules(const std::vector<ToleranceRule>& rules,
                                      const std::vector<CaseChange>& cases) {
  std::vector<std::string> out;
  for (const auto& r : rules) {
    bool used = false;
    for (size_t i = 0; i < cases.size() && !used; ++i)
      for (const ResultRecord* rec : {cases[i].baseline, cases[i].current})
        if (rec)
          for (const auto& m : rec->metrics)
            used = used || rule_names(r, rec->benchmark, m.name, m.unit);
    if (!used) out.push_back(r.key);
  }
  return out;
}

}  // namespace

Comparison compare(const RunDir& baseline, const RunDir& current,
                   const std::vector<ToleranceRule>& rules,
                   const std::vector<SpecFamily>& families) {
  Comparison out;
  out.baseline_dir = baseline.dir;
  out.current_dir = current.dir;
  out.baseline_run_id = baseline.run.run_id;
  out.current_run_id = current.run.run_id;
  out.baseline_suite = baseline.run.suite, out.current_suite = current.run.suite;
  out.baseline_rounds = baseline.run.rounds, out.current_rounds = current.run.rounds;
  out.rules = rules;
  // A resumed run may hold a case twice: the last record wins, as in the report. Each side is
  // indexed on a thread of its own.
  const auto& brecs = baseline.records.records;
  const auto& crecs = current.records.records;
  auto base_future = std::async(std::launch::async, [&] { return index_side(brecs); });
  const Side cur = index_side(crecs);
  const Side base = base_future.get();
  // BASELINE's cases in order, judged on two threads into their own slots.
  out.cases.resize(base.order.size());
  std::vector<char> matched(crecs.size(), 0);  // distinct cases match distinct records
  auto judge = [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      const std::string_view key = base.keys[base.order[k]];
      auto it = cur.last.find(key);
      const ResultRecord* c = it == cur.last.end() ? nullptr : &crecs[it->second];
      compare_case(brecs[base.last.at(key)], c, rules, families, current.run, out.cases[k]);
      if (c) matched[it->second] = 1;
    }
  };
  const size_t half = out.cases.size() / 2;
  auto judged = std::async(std::launch::async, judge, half, out.cases.size());
  judge(0, half);
  judged.get();
  for (size_t i : cur.order) {
    const size_t lastrec = cur.last.at(cur.keys[i]);
    if (matched[lastrec]) continue;
    CaseChange cc;
    cc.current = &crecs[lastrec];
    cc.baseline_status = "missing";
    cc.current_status = status_name(cc.current->status);
    cc.verdict = kNew;
    cc.message = "only in CURRENT";
    out.cases.push_back(std::move(cc));
  }
  auto base_probes = std::async(std::launch::async, [&] { return probe_samples(brecs); });
  out.host_drift = host_drift(base_probes.get(), probe_samples(crecs));
  discount_drift(out);
  sort_by_verdict(out.cases);
  for (const auto& v : verdict_order()) out.counts[v] = 0;
  for (const auto& c : out.cases) ++out.counts[c.verdict];
  compare_env(baseline, current, out);
  out.unused_rules = unused_rules(rules, out.cases);
  out.unfinished_cases = static_cast<int>(std::count_if(
      out.cases.begin(), out.cases.end(), [](const auto& c) { return c.unfinished; }));
  out.exit_code = out.counts[kRegressed] > 0                                               ? 1
                  : out.drift_cases > 0 || out.unfinished_cases > 0 || nothing_judged(out) ? 4
                                                                                           : 0;
  return out;
}

namespace {

std::string counts_line(const Comparison& c) {
  std::string out;
  for (const auto& v : verdict_order()) {
    int n = c.counts.at(v);
    if (n) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + v;
  }
  return out.empty() ? "no cases" : out;
}

std::string case_label(const CaseChange& c) {
  return c.benchmark() + " " + c.params().dump() + " " + c.item();
}

std::string value_text(double v, const std::string& unit) {
  return format_number(v) + (unit.empty() ? "" : " " + unit);
}

}  // namespace

namespace {

/// Unchanged cases of one benchmark, when they are too many to list (kFullDetailUnchanged).
struct UnchangedGroup {
  std::string benchmark;
  size_t cases = 0;
  const CaseChange* closest = nullptr;  ///< the case whose metric moved most towards worse
  const MetricChange* metric = nullptr;
};

/// How far a metric moved towards worse, in percent (positive: worse).
double worse_pct(const MetricChange& m) {
  return m.higher_is_better ? -m.change_pct : m.change_pct;
}

std::vector<UnchangedGroup> unchanged_groups(const Comparison& c) {
  std::vector<UnchangedGroup> out;
  std::unordered_map<std::string, size_t> at;
  for (const auto& cc : c.cases) {
    if (cc.verdict != kUnchanged) continue;
    auto [it, fresh] = at.try_emplace(cc.benchmark(), out.size());
    if (fresh) out.push_back({cc.benchmark()});
    UnchangedGroup& g = out[it->second];
    ++g.cases;
    for (const auto& m : cc.metrics)
      if (!g.metric || worse_pct(m) > worse_pct(*g.metric)) g.closest = &cc, g.metric = &m;
    if (!g.closest) g.closest = &cc;
  }
  return out;
}

bool list_unchanged(const Comparison& c) {
  auto it = c.counts.find(kUnchanged);
  return it == c.counts.end() || static_cast<size_t>(it->second) <= kFullDetailUnchanged;
}

}  // namespace

namespace {

/// One case of the changes table: a line per metric, or one with its status rule.
void md_change(std::ostringstream& md, const CaseChange& cc) {
  if (cc.metrics.empty() || cc.verdict == kNew || cc.verdict == kNotCompared ||
      cc.current_status != "ok") {
    md << "| " << cell(case_label(cc)) << " | - | " << cc.baseline_status << " | "
       << cc.current_status << " | - | - | - | - | - | **" << cc.verdict
       << "**: " << cell(cc.message) << " |\n";
    return;
  }
  for (const auto& m : cc.metrics) {
    md << "| " << cell(case_label(cc)) << " | " << m.name << " | " << value_text(m.baseline, m.unit)
       << " | " << (m.missing ? "missing" : value_text(m.current, m.unit)) << " | "
       << signed_pct(m.change_pct) << " | " << pct(m.baseline_spread) << " / "
       << pct(m.current_spread) << " | " << m.baseline_n << " / " << m.current_n << " | "
       << (m.p_value < 0 ? "-" : format_number(m.p_value)) << " | " << pct(m.tolerance) << " | "
       << (m.verdict == kUnchanged ? m.verdict : "**" + m.verdict + "**")
       << (m.reason.empty() ? "" : ": " + cell(m.reason)) << " |\n";
  }
}

void md_env_changes(std::ostringstream& md, const Comparison& c) {
  md << "\n## Environment changes\n\n";
  if (c.env_changes.empty() && c.hosts_added.empty() && c.hosts_removed.empty()) {
    md << "No environment field or run setting changed on the hosts present in both runs.\n";
    return;
  }
  md << "| field | baseline | current | hosts |\n|---|---|---|---|\n";
  for (const auto& e : c.env_changes)
    md << "| " << cell(e.field) << " | " << cell(e.baseline) << " | " << cell(e.current) << " | "
       << cell(hosts_text(e.hosts)) << " |\n";
  if (!c.hosts_removed.empty())
    md << "| hosts | present | absent | " << cell(hosts_text(c.hosts_removed)) << " |\n";
  if (!c.hosts_added.empty())
    md << "| hosts | absent | present | " << cell(hosts_text(c.hosts_added)) << " |\n";
}

void md_unchanged(std::ostringstream& md, const Comparison& c) {
  md << "\n## Unchanged\n\n";
  int shown = 0;
  for (const auto& cc : c.cases) {
    if (cc.verdict != kUnchanged) continue;
    if (shown++ == 200) {
      md << "- ... and " << c.counts.at(kUnchanged) - 200 << " more ("
         << (list_unchanged(c) ? "compare.json has all" : "compare.json counts them per benchmark")
         << ")\n";
      break;
    }
    md << "- " << case_label(cc);
    for (const auto& m : cc.metrics) {
      md << "; " << m.name << " " << signed_pct(m.change_pct);
      // A move past the tolerance says why it is not a change (not significant, the floor).
      if (std::fabs(m.change_pct) > 100 * m.tolerance && !m.reason.empty())
        md << " (" << m.reason << ")";
    }
    md << "\n";
  }
  if (!shown) md << "None.\n";
}

}  // namespace

namespace {

std::string verdict_word(const Comparison& c) {
  if (c.exit_code != 4) return c.exit_code == 1 ? "REGRESSED" : "NO REGRESSION";
  if (c.drift_cases == 0 && c.unfinished_cases == 0) return "INCONCLUSIVE (nothing compared)";
  return c.drift_cases > 0 && c.unfinished_cases > 0 ? "INCONCLUSIVE (host drift, unfinished run)"
         : c.drift_cases > 0                         ? "INCONCLUSIVE (host drift)"
                                                     : "INCONCLUSIVE (unfinished run)";
}

/// "N case(s) a run did not finish ...": the unfinished cases' line of compare.md and the console.
std::string unfinished_line(const Comparison& c) {
  return std::to_string(c.unfinished_cases) +
         " case(s) a run did not finish (a snapshot before the case's last round, the case a "
         "signal stopped, or one an aborted run never reached): not compared; complete the run "
         "with `clusterbench run --resume DIR` "
         "and compare again";
}

/// "run ID, suite ci in 5 rounds" (the rounds only when more than one; no suite when unknown).
std::string run_text(const std::string& id, const std::string& suite, int rounds) {
  std::string out = "run " + id;
  if (!suite.empty()) out += ", suite " + suite;
  if (rounds > 1) out += (suite.empty() ? ", in " : " in ") + std::to_string(rounds) + " rounds";
  return out;
}

/// compare.md's unfinished and host-drift paragraphs: each probe that moved, and each case not
/// judged with its cause (the probe, its own CPU share or its disk's other work).
void md_host_drift(std::ostringstream& md, const Comparison& c) {
  if (c.unfinished_cases > 0) md << "**Unfinished:** " << unfinished_line(c) << ".\n\n";
  if (c.host_drift.empty() && c.drift_cases == 0) return;
  md << "**Host drift:** the host ran at another speed, or other work shared its CPUs or disk, in "
        "one of the runs, so "
     << c.drift_cases
     << " host-side change(s) were not judged (not_comparable); rerun both on a quiet host "
        "(docs/compare.md \"Host drift\").\n\n";
  for (const auto& d : c.host_drift) md << "- " << drift_text(d) << "\n";
  for (const auto& cc : c.cases)
    if (cc.message.rfind(kDriftMessage, 0) == 0)
      md << "- " << cell(case_label(cc)) << ": " << cell(cc.message) << "\n";
  md << "\n";
}

}  // namespace

std::string render_compare_markdown(const Comparison& c) {
  std::ostringstream md;
  md << "# clusterbench compare\n\n";
  md << "**Verdict: " << verdict_word(c) << "** (exit " << c.exit_code << "): " << counts_line(c)
     << ".\n\n";
  md_host_drift(md, c);
  md << "- Baseline: `" << c.baseline_dir << "` ("
     << run_text(c.baseline_run_id, c.baseline_suite, c.baseline_rounds) << ")\n";
  md << "- Current: `" << c.current_dir << "` ("
     << run_text(c.current_run_id, c.current_suite, c.current_rounds) << ")\n";
  md << "- Rule: a metric regressed when its median got worse by more than its tolerance and a "
        "two-sided Mann-Whitney U test of the repetitions gives p < "
     << format_number(kAlpha) << " (at least " << kMinReps
     << " repetitions a side, else not comparable); a time that moved less than "
     << format_number(kLatencyFloorUs) << " us never regressed (docs/compare.md).\n";
  md << "- Tolerances: " << (c.spec_path.empty() ? "defaults by unit" : "`" + c.spec_path + "`")
     << (c.rules.empty() ? "" : ", with --tolerance overrides") << ".\n";
  for (const auto& r : c.rules)
    md << "- Tolerance override: `" << r.key << "` = " << pct(r.fraction) << "\n";
  md << "\n## Changes\n\n";
  md << "| case | metric | baseline | current | change | spread b/c | n b/c | p | tolerance | "
        "verdict |\n";
  md << "|---|---|---|---|---|---|---|---|---|---|\n";
  // The findings first: regressed, improved, new, not comparable; then the cases with nothing to
  // compare (on a node without GPUs, every GPU case is waived in both runs). Plan order within
  // each.
  bool any = false;
  for (const char* v : {kRegressed, kImproved, kNew, kNotComparable, kNotCompared})
    for (const auto& cc : c.cases)
      if (cc.verdict == v) md_change(md, cc), any = true;
  if (!any) md << "| - | - | - | - | - | - | - | - | - | no regressions or improvements |\n";
  md_env_changes(md, c);
  md_unchanged(md, c);
  return md.str();
}

namespace {

/// compare.json "baseline" or "current": {dir, run_id, suite, rounds}.
json side_json(const std::string& dir, const std::string& id, const std::string& suite,
               int rounds) {
  return {{"dir", dir}, {"run_id", id}, {"suite", suite}, {"rounds", rounds}};
}

}  // namespace

json render_compare_json(const Comparison& c) {
  json j;
  j["schema"] = kCompareSchema;
  j["baseline"] = side_json(c.baseline_dir, c.baseline_run_id, c.baseline_suite, c.baseline_rounds);
  j["current"] = side_json(c.current_dir, c.current_run_id, c.current_suite, c.current_rounds);
  j["verdict"] = verdict_word(c);
  j["host_drift"] = json::array();
  for (const auto& d : c.host_drift)
    j["host_drift"].push_back({{"host", d.host},
                               {"probe", d.probe},
                               {"baseline", d.baseline},
                               {"current", d.current},
                               {"change_pct", d.change_pct},
                               {"p_value", d.p_value},
                               {"baseline_n", d.baseline_n},
                               {"current_n", d.current_n}});
  j["drift_cases"] = c.drift_cases;
  j["unfinished_cases"] = c.unfinished_cases;
  j["exit_code"] = c.exit_code;
  j["rule"] =
      "regressed when the median is worse by more than the tolerance and the two-sided "
      "Mann-Whitney U test of the repetitions gives p < 0.05 (>= 5 repetitions a side); a time "
      "that moved less than max(1 us, 2 x resolution) never regressed";
  j["spec"] = c.spec_path;
  j["tolerances"] = json::array();
  for (const auto& r : c.rules)
    j["tolerances"].push_back({{"key", r.key}, {"fraction", r.fraction}});
  j["counts"] = c.counts;
  j["cases"] = json::array();
  const bool all = list_unchanged(c);
  j["cases_listed"] = all ? "all" : "all but unchanged";
  for (const auto& cc : c.cases) {
    if (!all && cc.verdict == kUnchanged) continue;
    json jc = {{"match_key", cc.match_key()},
               {"case_key", cc.case_key()},
               {"benchmark", cc.benchmark()},
               {"params", cc.params()},
               {"item", cc.item()},
               {"baseline_status", cc.baseline_status},
               {"current_status", cc.current_status},
               {"verdict", cc.verdict},
               {"message", cc.message},
               {"metrics", json::array()}};
    for (const auto& m : cc.metrics)
      jc["metrics"].push_back({{"name", m.name},
                               {"unit", m.unit},
                               {"higher_is_better", m.higher_is_better},
                               {"baseline", m.baseline},
                               {"current", m.missing ? json(nullptr) : json(m.current)},
                               {"change_pct", m.change_pct},
                               {"baseline_spread", m.baseline_spread},
                               {"current_spread", m.current_spread},
                               {"baseline_n", m.baseline_n},
                               {"current_n", m.current_n},
                               {"tolerance", m.tolerance},
                               {"p_value", m.p_value < 0 ? json(nullptr) : json(m.p_value)},
                               {"verdict", m.verdict},
                               {"reason", m.reason},
                               {"missing", m.missing}});
    j["cases"].push_back(std::move(jc));
  }
  if (!all) {
    j["unchanged_by_benchmark"] = json::array();
    for (const auto& g : unchanged_groups(c)) {
      json closest = {{"case_key", g.closest->case_key()}, {"item", g.closest->item()}};
      if (g.metric)
        closest["metric"] = g.metric->name, closest["change_pct"] = g.metric->change_pct;
      j["unchanged_by_benchmark"].push_back(
          {{"benchmark", g.benchmark}, {"cases", g.cases}, {"closest", closest}});
    }
  }
  j["env_changes"] = json::array();
  for (const auto& e : c.env_changes)
    j["env_changes"].push_back(
        {{"field", e.field}, {"baseline", e.baseline}, {"current", e.current}, {"hosts", e.hosts}});
  j["hosts_removed"] = c.hosts_removed;
  j["hosts_added"] = c.hosts_added;
  return j;
}

std::string render_compare_junit(const Comparison& c) {
  std::ostringstream x;
  const bool all = list_unchanged(c);
  std::vector<UnchangedGroup> groups;
  if (!all) groups = unchanged_groups(c);
  size_t tests =
      all ? c.cases.size()
          : c.cases.size() - static_cast<size_t>(c.counts.at(kUnchanged)) + groups.size();
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuite name=\"clusterbench.compare\" tests=\"" << tests << "\" failures=\""
    << c.counts.at(kRegressed) << "\" skipped=\""
    << c.counts.at(kNotCompared) + c.counts.at(kNotComparable) << "\">\n";
  for (const auto& cc : c.cases) {
    if (!all && cc.verdict == kUnchanged) continue;
    x << "  <testcase classname=\"" << xml_escape(cc.benchmark()) << "\" name=\""
      << xml_escape(cc.params().dump() + " " + cc.item()) << "\">";
    std::string detail = cc.message;
    const bool skipped = cc.verdict == kNotCompared || cc.verdict == kNotComparable;
    for (const auto& m : cc.metrics)
      detail += (detail.empty() ? "" : "; ") + m.name + " " + format_number(m.baseline) + " -> " +
                (m.missing ? "not measured" : format_number(m.current)) + " " + m.unit + " (" +
                (m.missing ? m.reason : signed_pct(m.change_pct) + ", " + m.verdict) + ")";
    if (cc.verdict == kRegressed)
      x << "<failure message=\"regressed\">" << xml_escape(detail) << "</failure>";
    else if (skipped)
      x << "<skipped message=\"" << xml_escape(cc.message) << "\"/>";
    else if (!detail.empty())
      x << "<system-out>" << xml_escape(cc.verdict + ": " + detail) << "</system-out>";
    x << "</testcase>\n";
  }
  for (const auto& g : groups) {
    std::string detail = std::to_string(g.cases) + " unchanged cases";
    if (g.metric)
      detail += "; closest to regressing: " + g.closest->item() + " " + g.metric->name + " " +
                signed_pct(g.metric->change_pct);
    x << "  <testcase classname=\"" << xml_escape(g.benchmark) << "\" name=\""
      << xml_escape(std::to_string(g.cases) + " unchanged cases") << "\"><system-out>"
      << xml_escape("unchanged: " + detail) << "</system-out></testcase>\n";
  }
  x << "</testsuite>\n";
  return x.str();
}

std::string render_compare_console(const Comparison& c) {
  std::ostringstream o;
  for (const auto& cc : c.cases) {
    if (cc.verdict != kRegressed) continue;
    o << "REGRESSED " << case_label(cc);
    if (!cc.message.empty()) o << ": " << cc.message;
    for (const auto& m : cc.metrics)
      if (m.verdict == kRegressed && m.missing)
        o << "; " << m.name << " " << format_number(m.baseline) << " " << m.unit
          << " -> not measured";
      else if (m.verdict == kRegressed)
        o << "; " << m.name << " " << format_number(m.baseline) << " -> "
          << format_number(m.current) << " " << m.unit << " (" << signed_pct(m.change_pct)
          << ", p = " << format_number(m.p_value) << ", n = " << m.baseline_n << "/" << m.current_n
          << ")";
    o << "\n";
  }
  for (const auto& e : c.env_changes)
    o << "env " << e.field << ": " << e.baseline << " -> " << e.current << " on "
      << hosts_text(e.hosts) << "\n";
  for (const auto& d : c.host_drift) o << "host drift: " << drift_text(d) << "\n";
  if (c.drift_cases > 0)
    o << "host drift: " << c.drift_cases
      << " host-side change(s) not judged (not_comparable); rerun both on a quiet host\n";
  if (c.unfinished_cases > 0) o << "unfinished: " << unfinished_line(c) << "\n";
  o << "COMPARE: " << verdict_word(c) << " (exit " << c.exit_code << "): " << counts_line(c)
    << "\n";
  return o.str();
}

void write_compare(const Comparison& c, const std::string& dir) {
  check_output_dir(dir, "--out");
  write_file_atomic(dir + "/compare.md", render_compare_markdown(c));
  write_file_atomic(dir + "/compare.json", dump_json(render_compare_json(c), 2) + "\n");
  write_file_atomic(dir + "/compare.junit.xml", render_compare_junit(c));
}

namespace {

/// The spec table whose compare tolerances apply: `given`, else the first of the runs' own
/// (CURRENT's, then BASELINE's) that still exists; nullopt when there is none.
std::optional<Spec> compare_spec(const std::string& given, const RunDir& cur, const RunDir& base) {
  if (!given.empty()) return load_spec(given);
  for (const RunDir* r : {&cur, &base}) {
    const std::string& path = r->run.spec.path;
    std::error_code ec;
    if (!path.empty() && std::filesystem::is_regular_file(path, ec)) return load_spec(path);
  }
  return std::nullopt;
}

}  // namespace

int compare_command(const std::string& baseline_dir, const std::string& current_dir,
                    const std::vector<std::string>& tolerances, const std::string& out_dir,
                    const std::string& spec_path) {
  std::vector<ToleranceRule> rules;
  for (const auto& t : tolerances) rules.push_back(parse_tolerance(t));
  if (!out_dir.empty()) {  // before minutes of reading
    check_output_dir(out_dir, "--out");
    check_writable_dir(out_dir, "--out");
  }
  // Both sides at once: reading is most of compare's time at 1,000 nodes (docs/report.md).
  auto base_future =
      std::async(std::launch::async, [&] { return read_run_dir(baseline_dir, false); });
  // Never freed: the process ends right after, and freeing two 1,000-node runs and their
  // comparison took over a second (docs/report.md "Scale").
  const RunDir& cur = *new RunDir(read_run_dir(current_dir, false));
  const RunDir& base = *new RunDir(base_future.get());
  const std::optional<Spec> spec = compare_spec(spec_path, cur, base);
  Comparison& c =
      *new Comparison(compare(base, cur, rules, spec ? spec->families : std::vector<SpecFamily>{}));
  if (spec) c.spec_path = spec->path;
  std::string dir = out_dir.empty() ? current_dir : out_dir;
  // CURRENT that cannot be written (a read-only evidence copy): the verdict still stands, as
  // `report` does on such a run directory.
  std::string unwritten;
  try {
    write_compare(c, dir);
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    if (!out_dir.empty()) throw;
    unwritten = e.what();
  }
  if (!unwritten.empty())
    std::cerr << "warning: compare files not written in " << dir << " (" << unwritten
              << "); the verdict below is printed only (--out DIR writes them elsewhere)\n";
  for (const auto& key : c.unused_rules)
    std::cerr << "warning: --tolerance '" << key
              << "' names no metric of either run (units are case-sensitive: GB/s, TFLOP/s); "
                 "it changed nothing\n";
  for (const auto& w : base.records.warnings) std::cerr << "warning: baseline: " << w << "\n";
  for (const auto& w : cur.records.warnings) std::cerr << "warning: current: " << w << "\n";
  if (!cur.run.run_id.empty() && cur.run.run_id == base.run.run_id)
    std::cerr << "warning: BASELINE and CURRENT are the same run (" << cur.run.run_id
              << "): nothing can have changed; name an earlier run as BASELINE\n";
  std::cout << render_compare_console(c) << "compare: "
            << (unwritten.empty() ? dir + "/compare.md" : "not written (see the warning above)")
            << "\n"
            << std::flush;
  return c.exit_code;
}

}  // namespace clusterbench::report
