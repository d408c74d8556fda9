// Host drift (host_drift.hpp).
#include "reports/compare/host_drift.hpp"

#include <algorithm>
#include <cmath>

#include "records/statistics.hpp"
#include "reports/compare/core_to_core.hpp"
#include "reports/text.hpp"

namespace clusterbench::report {

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

std::string drift_text(const HostDrift& d) {
  return d.host + " ran " + format_number(std::round(std::abs(d.change_pct) * 10) / 10) + "% " +
         (d.change_pct < 0 ? "slower" : "faster") + " in CURRENT (host probe " + d.probe + " " +
         format_number(d.baseline) + " -> " + format_number(d.current) +
         ", p = " + format_number(d.p_value) + ", n = " + std::to_string(d.baseline_n) + "/" +
         std::to_string(d.current_n) + ")";
}

namespace {

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
  return "other work moved " + percent(1 - c) + " of the bytes of its disk (" + disk +
         ") while this case ran in CURRENT against " + percent(1 - b) +
         " in BASELINE (other work shared the disk)";
}

/// Why a host-bound case's change is not judged ("" when it is): other work on its disk, its own
/// CPU share moved (another job on its cores while it ran), its cores moved, or its host's probe
/// drifted.
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

}  // namespace

int discount_drift(std::vector<CaseChange>& cases, const std::vector<HostDrift>& drift) {
  int drift_cases = 0;
  std::map<std::string, const HostDrift*> by_host;
  for (const auto& d : drift) by_host.try_emplace(d.host, &d);
  std::map<std::string, std::string> unjudged;  // benchmark + params -> the message
  for (auto& cc : cases) {
    if (!moved_on_host(cc)) continue;
    const std::string why = drift_reason(cc, by_host);
    if (why.empty()) continue;
    unjudge(cc, kDriftMessage + why + "; rerun both on a quiet host", drift_cases);
    unjudged.try_emplace(cc.benchmark() + cc.params().dump(), cc.message);
  }
  for (auto& cc : cases) {
    if (!moved_on_host(cc)) continue;
    const auto it = unjudged.find(cc.benchmark() + cc.params().dump());
    if (it != unjudged.end()) unjudge(cc, it->second, drift_cases);
  }
  return drift_cases;
}

}  // namespace clusterbench::report
