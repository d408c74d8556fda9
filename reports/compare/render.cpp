// compare's renderers (render.hpp).
#include "reports/compare/render.hpp"

#include <cmath>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "records/json_io.hpp"
#include "reports/render.hpp"
#include "reports/text.hpp"

namespace clusterbench::report {

namespace {

/// Up to 8 hosts, then how many there are: "a, b, c, ... (1000 hosts)".
std::string hosts_text(const std::vector<std::string>& hosts) {
  std::string out;
  for (size_t i = 0; i < hosts.size() && i < 8; ++i) out += (i ? ", " : "") + hosts[i];
  if (hosts.size() > 8) out += ", ... (" + std::to_string(hosts.size()) + " hosts)";
  return out;
}

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
  return c.list_all_cases || it == c.counts.end() ||
         static_cast<size_t>(it->second) <= kFullDetailUnchanged;
}

}  // namespace

namespace {

/// One case of the changes table: a line per metric, or one with its status rule.
void md_change(std::ostringstream& md, const CaseChange& cc) {
  if (cc.metrics.empty() || cc.verdict == kNew || cc.verdict == kNotCompared ||
      cc.current_status != "ok") {
    md << "| " << md_cell(case_label(cc)) << " | - | " << cc.baseline_status << " | "
       << cc.current_status << " | - | - | - | - | - | **" << cc.verdict
       << "**: " << md_cell(cc.message) << " |\n";
    return;
  }
  for (const auto& m : cc.metrics) {
    md << "| " << md_cell(case_label(cc)) << " | " << m.name << " | "
       << value_text(m.baseline, m.unit) << " | "
       << (m.missing ? "missing" : value_text(m.current, m.unit)) << " | "
       << percent_points(m.change_pct, 2, true) << " | " << percent(m.baseline_spread) << " / "
       << percent(m.current_spread) << " | " << m.baseline_n << " / " << m.current_n << " | "
       << (m.p_value < 0 ? "-" : format_number(m.p_value)) << " | " << percent(m.tolerance) << " | "
       << (m.verdict == kUnchanged ? m.verdict : "**" + m.verdict + "**")
       << (m.reason.empty() ? "" : ": " + md_cell(m.reason)) << " |\n";
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
    md << "| " << md_cell(e.field) << " | " << md_cell(e.baseline) << " | " << md_cell(e.current)
       << " | " << md_cell(hosts_text(e.hosts)) << " |\n";
  if (!c.hosts_removed.empty())
    md << "| hosts | present | absent | " << md_cell(hosts_text(c.hosts_removed)) << " |\n";
  if (!c.hosts_added.empty())
    md << "| hosts | absent | present | " << md_cell(hosts_text(c.hosts_added)) << " |\n";
}

/// The moves past tolerance the test could not confirm, each with the smallest change its pair
/// could have detected and the repetitions that would detect its tolerance.
void md_not_significant(std::ostringstream& md, const Comparison& c) {
  if (c.counts.at(kNotSignificant) == 0) return;
  md << "\n## Not significant\n\nMoved past the tolerance, but the repetitions are too few or "
        "too spread for the test to tell a change from noise (p >= "
     << format_number(kAlpha)
     << "): neither a regression nor unchanged. \"Detectable\" is the smallest change this pair "
        "finds at p < "
     << format_number(kAlpha)
     << " four times in five, from its spread and n; rerun with the repetitions given to judge "
        "the tolerance.\n\n";
  for (const auto& cc : c.cases) {
    if (cc.verdict != kNotSignificant) continue;
    for (const auto& m : cc.metrics) {
      if (m.verdict != kNotSignificant) continue;
      md << "- " << md_cell(case_label(cc)) << " " << m.name << " "
         << percent_points(m.change_pct, 2, true) << " (p = " << format_number(m.p_value) << ", n "
         << m.baseline_n << "/" << m.current_n << ", tolerance " << percent(m.tolerance)
         << "): detectable "
         << (m.detectable_pct < 0 ? "unknown" : "+-" + percent_points(m.detectable_pct, 1, false))
         << "; " << (m.reps_needed > 0 ? std::to_string(m.reps_needed) : "?")
         << " repetitions a side would detect " << percent(m.tolerance) << "\n";
    }
  }
}

void md_unchanged(std::ostringstream& md, const Comparison& c) {
  md << "\n## Unchanged\n\n";
  int shown = 0;
  for (const auto& cc : c.cases) {
    if (cc.verdict != kUnchanged) continue;
    if (shown++ == static_cast<int>(kMarkdownUnchanged)) {
      md << "- ... and " << c.counts.at(kUnchanged) - static_cast<int>(kMarkdownUnchanged)
         << " more ("
         << (list_unchanged(c) ? "compare.json has all" : "compare.json counts them per benchmark")
         << ")\n";
      break;
    }
    md << "- " << case_label(cc);
    for (const auto& m : cc.metrics) {
      md << "; " << m.name << " " << percent_points(m.change_pct, 2, true);
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
      md << "- " << md_cell(case_label(cc)) << ": " << md_cell(cc.message) << "\n";
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
    md << "- Tolerance override: `" << r.key << "` = " << percent(r.fraction) << "\n";
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
  md_not_significant(md, c);
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

namespace {

/// One metric of a case in compare.json.
json metric_json(const MetricChange& m) {
  return json({{"name", m.name},
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
               {"detectable_pct", m.detectable_pct < 0 ? json(nullptr) : json(m.detectable_pct)},
               {"reps_needed", m.reps_needed > 0 ? json(m.reps_needed) : json(nullptr)},
               {"verdict", m.verdict},
               {"reason", m.reason},
               {"missing", m.missing}});
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
    for (const auto& m : cc.metrics) jc["metrics"].push_back(metric_json(m));
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
                (m.missing ? m.reason : percent_points(m.change_pct, 2, true) + ", " + m.verdict) +
                ")";
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
                percent_points(g.metric->change_pct, 2, true);
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
          << format_number(m.current) << " " << m.unit << " ("
          << percent_points(m.change_pct, 2, true) << ", p = " << format_number(m.p_value)
          << ", n = " << m.baseline_n << "/" << m.current_n << ")";
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

}  // namespace clusterbench::report
