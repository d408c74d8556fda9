// make_report: every verdict of a run and its exit code, made once (report.hpp).
#include "reports/report.hpp"

#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace clusterbench::report {

namespace {

std::vector<std::string> collect_hosts(const RunDir& run) {
  // First-seen order; the set keeps it linear (1,000 hosts x 700,000 records, docs/report.md).
  std::vector<std::string> hosts;
  std::unordered_set<std::string> seen;
  auto add = [&](const std::string& h) {
    if (!h.empty() && seen.insert(h).second) hosts.push_back(h);
  };
  for (const auto& env : run.run.env) add(env.host);
  for (const auto& h : run.run.hosts) add(h);
  for (const auto& r : run.records.records) {
    add(r.scope.host);
    for (const auto& h : r.scope.hosts) add(h);
  }
  return hosts;
}

/// The spec's sha256 now, and a warning when it differs from the one run.json recorded.
void check_spec_sha(const RunDir& run, const Spec& spec, Report& rep) {
  if (!spec.path.empty()) {
    try {
      rep.spec_sha256 = sha256_file(spec.path);
    } catch (const InputError& e) {
      rep.warnings.push_back(std::string("spec sha256: ") + e.what());
    }
  }
  if (rep.spec_sha256.empty() && run.run.spec.path == spec.path)
    rep.spec_sha256 = run.run.spec.sha256;
  if (!rep.spec_sha256.empty() && run.run.spec.path == spec.path && !run.run.spec.sha256.empty() &&
      run.run.spec.sha256 != rep.spec_sha256)
    rep.warnings.push_back("spec " + spec.path + " changed since the run (run.json sha256 " +
                           run.run.spec.sha256 + ", now " + rep.spec_sha256 + ")");
}

void collect_warnings(const RunDir& run, const Spec& spec, Report& rep) {
  for (const auto& w : run.records.warnings) rep.warnings.push_back(w);
  if (!run.run.aborted && run.run.finished_at.empty())
    rep.warnings.push_back(
        "run.json has no finished_at: the run did not finish (killed?); cases it had not "
        "reached are MISSING");
  std::set<std::string> foreign;
  for (const auto& r : run.records.records)
    if (!r.run_id.empty() && r.run_id != run.run.run_id) foreign.insert(r.run_id);
  for (const auto& id : foreign)
    rep.warnings.push_back("records.jsonl holds records of another run id '" + id + "'");
  for (const auto& r : run.records.records)
    if (auto it = r.extra.find("refused"); it != r.extra.end() && *it == true) {
      rep.refused.push_back(r.case_key + ": " + r.message);
      rep.warnings.push_back(rep.refused.back());  // the message says "refused: ..."
    }
  if (const auto& tl = run.run.time_limit)
    rep.warnings.push_back("--time-limit " + format_number(tl->seconds) +
                           " s stopped the run after " + format_number(tl->stopped_after_s) +
                           " s: " + std::to_string(tl->not_run.size()) +
                           " planned case(s) not run (MISSING)");
  check_spec_sha(run, spec, rep);
}

/// "/gpus/3/memory_gib" -> "/gpus/*/memory_gib": one warning for a field over many GPUs or NICs.
std::string pointer_pattern(const std::string& pointer) {
  std::string out;
  size_t pos = 0;
  while (pos < pointer.size()) {
    size_t next = pointer.find('/', pos + 1);
    std::string seg = pointer.substr(pos + 1, next == std::string::npos ? next : next - pos - 1);
    bool index = !seg.empty() && seg.find_first_not_of("0123456789") == std::string::npos;
    out += '/';
    out += index ? std::string_view("*") : std::string_view(seg);
    if (next == std::string::npos) break;
    pos = next;
  }
  return out;
}

/// One warning per host, field and reason for the unknown env values that left items MISSING:
/// "node01: /gpus/*/memory_gib unknown (8 values): NVML not loaded: ...".
void unknown_warnings(const std::vector<RowResult>& rows, Report& rep) {
  struct Group {
    std::string host, pattern, reason;
    std::set<std::string> pointers;
  };
  std::vector<Group> groups;  // first-seen order
  std::unordered_map<std::string, size_t> at;
  for (const auto& row : rows)
    for (const auto& u : row.unknown) {
      std::string pattern = pointer_pattern(u.pointer);
      auto [it, fresh] = at.try_emplace(u.host + '\n' + pattern + '\n' + u.reason, groups.size());
      if (fresh) groups.push_back({u.host, pattern, u.reason, {}});
      groups[it->second].pointers.insert(u.pointer);
    }
  for (const auto& g : groups) {
    std::string what = g.pointers.size() == 1 ? *g.pointers.begin() + " unknown"
                                              : g.pattern + " unknown (" +
                                                    std::to_string(g.pointers.size()) + " values)";
    rep.warnings.push_back(g.host + ": " + what + ": " +
                           (g.reason.empty() ? "null in the env record" : g.reason));
  }
}

bool selects_health(const Spec& spec) {
  for (const auto& req : spec.requirements)
    if (!req.select.health.empty()) return true;
  return false;
}

}  // namespace

Report make_report(std::shared_ptr<const RunDir> run_ptr, const Spec& spec) {
  const RunDir& run = *run_ptr;
  Report rep;
  rep.run = run_ptr;
  rep.spec = std::make_shared<const Spec>(spec);
  rep.run_id = run.run.run_id;
  rep.spec_name = spec.name;
  rep.spec_path = spec.path;
  rep.aborted = run.run.aborted;
  rep.abort_reason = run.run.abort_reason;
  rep.time_limit = run.run.time_limit;
  rep.hosts = collect_hosts(run);
  collect_warnings(run, spec, rep);
  rep.soaks = find_soaks(run, spec.families);
  if (selects_health(spec)) rep.health = node_health(run.run.env);
  rep.rows = evaluate_rows(run, spec, rep.hosts, rep.health);
  unknown_warnings(rep.rows, rep);
  for (Outcome o : kOutcomeOrder) rep.counts[o] = 0;
  for (const auto& row : rep.rows) ++rep.counts[row.outcome];
  rep.links = link_matrices(run.records.records);  // once: the fleet's localisation reads them
  rep.fleet = fleet_view(run, rep.rows, rep.hosts, rep.links, spec.families);
  rep.uniformity = check_uniformity(run.run.env);
  rep.mfu = model_flops_utilisation(run, spec);
  rep.exit_code = exit_code(rep);
  return rep;
}

ExtraKeys report_extra_keys(const Spec* spec) {
  // What the report reads (extra.find/value/contains in reports/, compare/ aside), failed
  // records aside: they keep all of theirs; and what the shipped tables select on (a test keeps
  // this true), so that a run judged against one of them is read once.
  ExtraKeys keys{"busbw_is_wire", "nccl_algorithm", "refused", "scratch",   "scratch_device",
                 "series",        "snapshot",       "tier",    "unmeasured"};
  if (!spec) return keys;
  auto add = [&keys](const std::string& text) {
    static const std::string kExtra = "/extra/";
    for (size_t at = text.find(kExtra); at != std::string::npos; at = text.find(kExtra, at + 1)) {
      const size_t from = at + kExtra.size();
      const size_t to = text.find_first_of("/}", from);
      keys.insert(text.substr(from, to == std::string::npos ? to : to - from));
    }
  };
  for (const auto& r : spec->requirements) {
    for (const auto& [pointer, condition] : r.select.require.items()) add(pointer);
    add(r.select.distinct), add(r.select.unmet), add(r.select.describe);
  }
  return keys;
}

Report make_report(const RunDir& run, const Spec& spec) {
  return make_report(std::make_shared<const RunDir>(run), spec);
}

int exit_code(const Report& r) {
  if (!r.refused.empty()) return 2;
  if (r.aborted) return 3;
  bool incomplete = r.time_limit && !r.time_limit->not_run.empty();
  for (const auto& row : r.rows) {
    if (!row.not_applicable.empty()) continue;
    if (row.outcome == kFail) return 1;
    if (row.req.severity == "fail" && (row.outcome == kMissing || row.outcome == kWaived))
      incomplete = true;
  }
  return incomplete ? 4 : 0;
}

std::string verdict(int code) {
  switch (code) {
    case 0:
      return "PASS";
    case 1:
      return "FAIL";
    case 2:
      return "REFUSED";
    case 3:
      return "ABORTED";
    case 4:
      return "INCOMPLETE";
    default:
      return "ERROR";
  }
}

std::string exit_code_meaning(int code) {
  switch (code) {
    case 0:
      return "every row PASS or WARN";
    case 1:
      return "a requirement failed";
    case 2:
      return "bad input, or a case was refused as unsafe (see its record)";
    case 3:
      return "the run was aborted";
    case 4:
      return "no failure, but a fail-severity row is MISSING or WAIVED: acceptance incomplete";
    default:
      return "unknown exit code";
  }
}

}  // namespace clusterbench::report
