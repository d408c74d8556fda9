// Baseline comparison (docs/compare.md). Formats nothing it does not judge: the verdicts are here.
#include "reports/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <future>
#include <iostream>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "records/spec.hpp"
#include "reports/render.hpp"

namespace clusterbench::report {

namespace {

const std::vector<std::string>& verdict_order() {
  static const std::vector<std::string> order = {kRegressed, kImproved, kNew, kNotCompared,
                                                 kUnchanged};
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
    if (!n.is_virtual) f.push_back({"nic firmware " + n.name, n.firmware});
  for (const auto& d : e.block_devices) f.push_back({"disk firmware " + d.name, d.firmware});
  return f;
}

/// The field name shown: per-part fields are grouped by kind ("gpu vbios"), so that one change
/// over a thousand GPUs is one row.
std::string field_group(const std::string& field) {
  for (const char* prefix : {"gpu vbios ", "disk firmware "})
    if (field.rfind(prefix, 0) == 0) return std::string(prefix, std::string(prefix).size() - 1);
  return field;
}

/// What the two runs were asked to do differently (run.json suite, only, set): a change there
/// explains a change in the numbers as much as a driver does. Listed with hosts "all".
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

void compare_case(const ResultRecord& b, const ResultRecord* c,
                  const std::vector<ToleranceRule>& rules, CaseChange& cc) {
  cc.baseline = &b;
  cc.current = c;
  cc.baseline_status = status_name(b.status);
  cc.current_status = c ? status_name(c->status) : "missing";
  if (!c && b.status == Status::ok) {
    cc.verdict = kRegressed;
    cc.message = "case missing from CURRENT";
    return;
  }
  if (!c) {  // nothing measured on either side
    cc.verdict = kNotCompared;
    cc.message = "no baseline value (" + cc.baseline_status + " in BASELINE), missing from CURRENT";
    return;
  }
  if (b.status != Status::ok) {
    bool fixed = b.status == Status::failed && c->status == Status::ok;
    cc.verdict = fixed ? kImproved : kNotCompared;
    cc.message = fixed ? "failed in BASELINE, ok in CURRENT"
                       : "no baseline value (" + cc.baseline_status + " in BASELINE)";
    return;
  }
  if (c->status != Status::ok) {
    cc.verdict = kRegressed;
    cc.message = cc.current_status + " in CURRENT" + (c->message.empty() ? "" : ": " + c->message);
    return;
  }
  cc.verdict = kUnchanged;
  cc.metrics.reserve(b.metrics.size());
  for (const auto& bm : b.metrics) {
    MetricChange mc;
    mc.name = bm.name;
    mc.unit = bm.unit;
    mc.higher_is_better = bm.higher_is_better;
    mc.baseline = bm.value;
    mc.baseline_spread = b.time.n > 0 ? b.time.spread : 0;
    mc.tolerance = tolerance_for(rules, b.benchmark, bm.name, bm.unit);
    const Metric* cm = find_metric(*c, bm.name);
    if (!cm) {
      mc.verdict = kRegressed;
      mc.missing = true;
      cc.message = "metric '" + bm.name + "' missing from CURRENT";
    } else {
      mc.current = cm->value;
      mc.current_spread = c->time.n > 0 ? c->time.spread : 0;
      mc.noise = (mc.baseline_spread + mc.current_spread) / 2;
      mc.change_pct = bm.value != 0 ? (cm->value - bm.value) / std::fabs(bm.value) * 100 : 0;
      mc.verdict = metric_verdict(bm.value, cm->value, bm.higher_is_better, mc.tolerance, mc.noise);
    }
    if (verdict_rank(mc.verdict) < verdict_rank(cc.verdict)) cc.verdict = mc.verdict;
    cc.metrics.push_back(std::move(mc));
  }
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
  try {
    v = std::stod(num, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != num.size() || !(v >= 0) || v > 1000)
    throw InputError("--tolerance '" + text + "': '" + text.substr(eq + 1) +
                     "' is not a percentage (0..1000)");
  return {text.substr(0, eq), v / 100};
}

double default_tolerance(const std::string& unit) {
  if (unit == "TFLOP/s") return 0.02;
  if (unit == "GB/s" || unit == "Gb/s") return 0.03;
  return 0.05;
}

double tolerance_for(const std::vector<ToleranceRule>& rules, const std::string& benchmark,
                     const std::string& metric, const std::string& unit) {
  const ToleranceRule* by_bench = nullptr;
  const ToleranceRule* by_unit = nullptr;
  for (const auto& r : rules) {
    if (is_known_unit(r.key) && r.key == unit) {
      by_unit = &r;
      continue;
    }
    auto colon = r.key.find(':');
    std::string bglob = r.key.substr(0, colon);
    if (colon != std::string::npos && r.key.substr(colon + 1) != metric) continue;
    if (glob_match(bglob, benchmark)) by_bench = &r;
  }
  if (by_bench) return by_bench->fraction;
  if (by_unit) return by_unit->fraction;
  return default_tolerance(unit);
}

std::string metric_verdict(double baseline, double current, bool higher_is_better, double tolerance,
                           double noise) {
  double d;
  if (baseline == 0) {
    if (current == 0) return kUnchanged;
    d = (current > 0) == higher_is_better ? 1 : -1;
  } else {
    d = (current - baseline) / std::fabs(baseline);
    if (!higher_is_better) d = -d;
  }
  double threshold = std::max(tolerance, noise);
  if (d < -threshold) return kRegressed;
  if (d > threshold) return kImproved;
  return kUnchanged;
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

Comparison compare(const RunDir& baseline, const RunDir& current,
                   const std::vector<ToleranceRule>& rules) {
  Comparison out;
  out.baseline_dir = baseline.dir;
  out.current_dir = current.dir;
  out.baseline_run_id = baseline.run.run_id;
  out.current_run_id = current.run.run_id;
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
      compare_case(brecs[base.last.at(key)], c, rules, out.cases[k]);
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
  sort_by_verdict(out.cases);
  for (const auto& v : verdict_order()) out.counts[v] = 0;
  for (const auto& c : out.cases) ++out.counts[c.verdict];
  compare_env(baseline, current, out);
  out.exit_code = out.counts[kRegressed] > 0 ? 1 : 0;
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
       << cc.current_status << " | - | - | - | **" << cc.verdict << "**: " << cell(cc.message)
       << " |\n";
    return;
  }
  for (const auto& m : cc.metrics) {
    md << "| " << cell(case_label(cc)) << " | " << m.name << " | " << value_text(m.baseline, m.unit)
       << " | " << (m.missing ? "missing" : value_text(m.current, m.unit)) << " | "
       << signed_pct(m.change_pct) << " | " << pct(m.baseline_spread) << " / "
       << pct(m.current_spread) << " | " << pct(m.tolerance) << " | "
       << (m.verdict == kUnchanged ? m.verdict : "**" + m.verdict + "**") << " |\n";
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
    for (const auto& m : cc.metrics) md << "; " << m.name << " " << signed_pct(m.change_pct);
    md << "\n";
  }
  if (!shown) md << "None.\n";
}

}  // namespace

std::string render_compare_markdown(const Comparison& c) {
  std::ostringstream md;
  md << "# clusterbench compare\n\n";
  md << "**Verdict: " << (c.exit_code ? "REGRESSED" : "NO REGRESSION") << "** (exit " << c.exit_code
     << "): " << counts_line(c) << ".\n\n";
  md << "- Baseline: `" << c.baseline_dir << "` (run " << c.baseline_run_id << ")\n";
  md << "- Current: `" << c.current_dir << "` (run " << c.current_run_id << ")\n";
  md << "- Rule: a metric regressed when it got worse by more than max(tolerance, noise), with "
        "noise = (spread of BASELINE + spread of CURRENT) / 2 (docs/compare.md).\n";
  for (const auto& r : c.rules)
    md << "- Tolerance override: `" << r.key << "` = " << pct(r.fraction) << "\n";
  md << "\n## Changes\n\n";
  md << "| case | metric | baseline | current | change | spread b/c | tolerance | verdict |\n";
  md << "|---|---|---|---|---|---|---|---|\n";
  bool any = false;
  for (const auto& cc : c.cases)
    if (cc.verdict != kUnchanged) md_change(md, cc), any = true;
  if (!any) md << "| - | - | - | - | - | - | - | no regressions or improvements |\n";
  md_env_changes(md, c);
  md_unchanged(md, c);
  return md.str();
}

json render_compare_json(const Comparison& c) {
  json j;
  j["schema"] = kCompareSchema;
  j["baseline"] = {{"dir", c.baseline_dir}, {"run_id", c.baseline_run_id}};
  j["current"] = {{"dir", c.current_dir}, {"run_id", c.current_run_id}};
  j["verdict"] = c.exit_code ? "REGRESSED" : "NO REGRESSION";
  j["exit_code"] = c.exit_code;
  j["rule"] = "regressed when worse by more than max(tolerance, (spread_b + spread_c) / 2)";
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
                               {"current", m.current},
                               {"change_pct", m.change_pct},
                               {"baseline_spread", m.baseline_spread},
                               {"current_spread", m.current_spread},
                               {"tolerance", m.tolerance},
                               {"noise", m.noise},
                               {"verdict", m.verdict},
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
    << c.counts.at(kRegressed) << "\" skipped=\"" << c.counts.at(kNotCompared) << "\">\n";
  for (const auto& cc : c.cases) {
    if (!all && cc.verdict == kUnchanged) continue;
    x << "  <testcase classname=\"" << xml_escape(cc.benchmark()) << "\" name=\""
      << xml_escape(cc.params().dump() + " " + cc.item()) << "\">";
    std::string detail = cc.message;
    for (const auto& m : cc.metrics)
      detail += (detail.empty() ? "" : "; ") + m.name + " " + format_number(m.baseline) + " -> " +
                format_number(m.current) + " " + m.unit + " (" + signed_pct(m.change_pct) + ", " +
                m.verdict + ")";
    if (cc.verdict == kRegressed)
      x << "<failure message=\"regressed\">" << xml_escape(detail) << "</failure>";
    else if (cc.verdict == kNotCompared)
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
      if (m.verdict == kRegressed)
        o << "; " << m.name << " " << format_number(m.baseline) << " -> "
          << format_number(m.current) << " " << m.unit << " (" << signed_pct(m.change_pct) << ")";
    o << "\n";
  }
  for (const auto& e : c.env_changes)
    o << "env " << e.field << ": " << e.baseline << " -> " << e.current << " on "
      << hosts_text(e.hosts) << "\n";
  o << "COMPARE: " << (c.exit_code ? "REGRESSED" : "NO REGRESSION") << " (exit " << c.exit_code
    << "): " << counts_line(c) << "\n";
  return o.str();
}

void write_compare(const Comparison& c, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create directory (" + ec.message() + ")");
  write_file_atomic(dir + "/compare.md", render_compare_markdown(c));
  write_file_atomic(dir + "/compare.json", render_compare_json(c).dump(2) + "\n");
  write_file_atomic(dir + "/compare.junit.xml", render_compare_junit(c));
}

int compare_command(const std::string& baseline_dir, const std::string& current_dir,
                    const std::vector<std::string>& tolerances, const std::string& out_dir) {
  std::vector<ToleranceRule> rules;
  for (const auto& t : tolerances) rules.push_back(parse_tolerance(t));
  // Both sides at once: reading is most of compare's time at 1,000 nodes (docs/report.md).
  auto base_future =
      std::async(std::launch::async, [&] { return read_run_dir(baseline_dir, false); });
  // Never freed: the process ends right after, and freeing two 1,000-node runs and their
  // comparison took over a second (docs/report.md "Scale").
  const RunDir& cur = *new RunDir(read_run_dir(current_dir, false));
  const RunDir& base = *new RunDir(base_future.get());
  const Comparison& c = *new Comparison(compare(base, cur, rules));
  std::string dir = out_dir.empty() ? current_dir : out_dir;
  write_compare(c, dir);
  for (const auto& w : base.records.warnings) std::cerr << "warning: baseline: " << w << "\n";
  for (const auto& w : cur.records.warnings) std::cerr << "warning: current: " << w << "\n";
  std::cout << render_compare_console(c) << "compare: " << dir << "/compare.md\n" << std::flush;
  return c.exit_code;
}

}  // namespace clusterbench::report
