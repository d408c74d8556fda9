// Localisation of slow links (localize.hpp).
#include "reports/localize.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "reports/compare/statistics.hpp"
#include "reports/rows.hpp"

namespace clusterbench::report {

namespace {

using Pair = std::pair<std::string, std::string>;

Pair ordered(const std::vector<std::string>& h) {
  return h[0] < h[1] ? Pair{h[0], h[1]} : Pair{h[1], h[0]};
}

/// One matrix: its links with their values, each host's partners, the reference and the low
/// links against it. Also the answer of one path, its modes (uni-, bidirectional) combined.
struct Matrix {
  std::string benchmark, metric, unit, path;
  bool higher_is_better = true;
  json params, path_params, family_params;  ///< full; without mode; without mode and rail
  std::map<Pair, double> value;
  std::map<Pair, double> best;               ///< each link's value in its best repetition
  std::map<Pair, std::vector<double>> reps;  ///< each link's repetitions, where recorded
  std::map<std::string, std::set<std::string>> partners;
  double reference = 0;
  std::map<Pair, double> low;  ///< low links -> deviation from the reference
  /// Combined answers: each low link's deviation in every mode ("-73% unidirectional").
  std::map<Pair, std::vector<std::string>> evidence;

  /// The reference is the fleet's typical link (typical_link). A link is low when it is beyond
  /// `tol` of it and out of the noise (is_out_of_noise).
  void judge(double tol) {
    std::vector<LinkValue> links;
    for (const auto& [pair, v] : value) links.push_back({pair.first, pair.second, v});
    reference = typical_link(links, higher_is_better);
    if (reference == 0 || std::isnan(reference)) return;
    std::vector<double> within;  // the repetitions of the links within `tol` of the reference
    for (const auto& [pair, r] : reps)
      if (std::fabs(value.at(pair) - reference) <= tol * std::fabs(reference) &&
          r.size() >= static_cast<size_t>(kMinReps))
        within.insert(within.end(), r.begin(), r.end());
    const RankPool typical = rank_pool(std::move(within));
    for (const auto& [pair, v] : value) {
      const double dev = (v - reference) / std::fabs(reference);
      if ((higher_is_better ? dev < -tol : dev > tol) && is_out_of_noise(pair, tol, typical))
        low[pair] = dev;
    }
  }
  /// With repetitions (kMinReps or more on the link and on the typical links, those within the
  /// tolerance): they differ from the typical links' with significance (two-sided Mann-Whitney
  /// U, p < kAlpha, the test compare uses). Without them: even the link's best repetition is
  /// beyond `tol`.
  bool is_out_of_noise(const Pair& pair, double tol, const RankPool& typical) const {
    auto mine = reps.find(pair);
    if (mine != reps.end() && mine->second.size() >= static_cast<size_t>(kMinReps) &&
        typical.sorted.size() >= static_cast<size_t>(kMinReps))
      return mann_whitney_p(mine->second, typical, false) < kAlpha;
    const double dev_best = (best.at(pair) - reference) / std::fabs(reference);
    if (std::isnan(dev_best)) return false;  // the noise is unknown: never judged low
    return higher_is_better ? dev_best < -tol : dev_best > tol;
  }
  bool suspect(const std::string& h) const {
    auto it = partners.find(h);
    if (it == partners.end() || it->second.size() < kMinLinksOfASuspect) return false;
    return std::all_of(it->second.begin(), it->second.end(), [&](const std::string& p) {
      return low.count(ordered({h, p})) > 0;
    });
  }
  int low_of(const std::string& h) const {
    int n = 0;
    for (const auto& p : partners.at(h)) n += low.count(ordered({h, p})) > 0;
    return n;
  }
  double worst_of(const std::string& h) const {
    double w = 0;
    for (const auto& [pair, dev] : low)
      if (pair.first == h || pair.second == h)
        w = higher_is_better ? std::min(w, dev) : std::max(w, dev);
    return w;
  }
};

std::string key_of(const std::string& bench, const json& params, const std::string& metric) {
  return bench + "|" + params.dump() + "|" + metric;
}

/// Each link matrix (links.hpp) with its links to judge, keyed by benchmark|params|metric: the
/// links with a finite value of at least 0 (a negative rate or time is no measurement; a zero rate
/// is a dead link and counts).
std::map<std::string, Matrix> judged_matrices(const std::vector<LinkMatrix>& links) {
  std::map<std::string, Matrix> out;
  for (const LinkMatrix& lm : links) {
    if (!lm.headline) continue;  // a p99 beside a link's p50 is one noisy tail: not judged
    Matrix& mx = out[key_of(lm.benchmark, lm.params, lm.metric)];
    mx.benchmark = lm.benchmark, mx.metric = lm.metric, mx.unit = lm.unit, mx.params = lm.params;
    mx.higher_is_better = lm.higher_is_better;
    mx.path = lm.params.value("rail", "mpi");
    mx.path_params = lm.params;
    mx.path_params.erase("mode");
    mx.family_params = mx.path_params;
    mx.family_params.erase("rail");
    for (size_t i = 0; i < lm.hosts.size(); ++i)
      for (size_t j = i + 1; j < lm.hosts.size(); ++j) {
        const double v = lm.values[i][j];
        if (!std::isfinite(v) || v < 0) continue;
        const Pair p = ordered({lm.hosts[i], lm.hosts[j]});
        mx.value[p] = v;
        mx.best[p] = lm.best[i][j];  // NaN: the noise is unknown, never judged low
        if (auto r = lm.reps.find({i, j}); r != lm.reps.end()) mx.reps[p] = r->second;
        mx.partners[p.first].insert(p.second);
        mx.partners[p.second].insert(p.first);
      }
  }
  return out;
}

/// One answer per path: the judged matrices that differ only in params.mode (a link measured
/// one way and both ways) combined. A link is low on the path when every mode that judged it
/// finds it low, so that one mode measured in a loaded moment blames nothing; its deviation is
/// the first mode's, its evidence every mode's. Partners are every mode's.
std::map<std::string, Matrix> combined_modes(const std::map<std::string, Matrix>& matrices) {
  std::map<std::string, std::vector<const Matrix*>> modes;
  for (const auto& [_, m] : matrices)
    if (m.partners.size() >= 3) modes[key_of(m.benchmark, m.path_params, m.metric)].push_back(&m);
  std::map<std::string, Matrix> out;
  for (auto& [key, ms] : modes) {
    auto rank = [](const Matrix* m) {
      const std::string mode = m->params.value("mode", "");
      return mode == "unidirectional" ? 0 : mode == "bidirectional" ? 1 : 2;
    };
    std::stable_sort(ms.begin(), ms.end(),
                     [&](const Matrix* a, const Matrix* b) { return rank(a) < rank(b); });
    Matrix c = *ms.front();
    c.params = c.path_params;
    c.low.clear();
    for (const Matrix* m : ms)
      for (const auto& [h, ps] : m->partners) c.partners[h].insert(ps.begin(), ps.end());
    for (const auto& [pair, dev] : ms.front()->low) {
      bool everywhere = true;
      std::vector<std::string> ev;
      for (const Matrix* m : ms) {
        if (!m->value.count(pair)) continue;
        auto it = m->low.find(pair);
        if (it == m->low.end()) {
          everywhere = false;
          break;
        }
        const std::string mode = m->params.value("mode", "");
        ev.push_back(percent(it->second, 1, true) + (mode.empty() ? "" : " " + mode) +
                     " (typical " + format_number(m->reference) + " " + m->unit + ")");
      }
      if (!everywhere) continue;
      c.low[pair] = dev;
      c.evidence[pair] = std::move(ev);
    }
    out.emplace(key, std::move(c));
  }
  return out;
}

/// The node or NIC findings of one family (matrices that differ only in their path).
void locate_hosts(const std::vector<const Matrix*>& family, std::vector<Located>& out) {
  std::set<std::string> hosts;
  for (const Matrix* m : family)
    for (const auto& [h, _] : m->partners)
      if (m->suspect(h)) hosts.insert(h);
  for (const auto& h : hosts) {
    std::vector<const Matrix*> on, low;
    for (const Matrix* m : family)
      if (m->partners.count(h)) {
        on.push_back(m);
        if (m->suspect(h)) low.push_back(m);
      }
    auto finding = [&](const std::vector<const Matrix*>& ms, const std::string& kind) {
      Located l;
      l.kind = kind, l.host = h, l.hosts = {h};
      l.benchmark = ms[0]->benchmark, l.metric = ms[0]->metric, l.unit = ms[0]->unit;
      l.params = kind == "nic" ? ms[0]->params : ms[0]->family_params;
      l.nic = kind == "nic" ? ms[0]->path : "";
      for (const Matrix* m : ms) {
        l.paths.push_back(m->path);
        l.low_links += m->low_of(h);
        l.links += static_cast<int>(m->partners.at(h).size());
        l.worst_deviation = std::min(l.worst_deviation, m->worst_of(h));
      }
      std::string paths;
      for (const auto& p : l.paths) paths += (paths.empty() ? "" : ", ") + p;
      l.text = kind == "nic"
                   ? "NIC " + l.nic + " on " + h + ": all " + std::to_string(l.links) + " of its " +
                         l.nic + " links below the fleet's typical link (worst " +
                         percent(l.worst_deviation, 1, true) + "); its other paths are normal"
                   : "node " + h + ": all " + std::to_string(l.links) +
                         " of its links below the fleet's typical link on " +
                         (ms.size() == on.size() && on.size() > 1 ? "every path (" : "") + paths +
                         (ms.size() == on.size() && on.size() > 1 ? ")" : "") + " (worst " +
                         percent(l.worst_deviation, 1, true) + ")";
      out.push_back(std::move(l));
    };
    if (low.size() == on.size()) {
      finding(low, "node");
      continue;
    }
    for (const Matrix* m : low) finding({m}, m->path == "mpi" ? "node" : "nic");
  }
}

/// A low link whose hosts are not suspects: named as the link, with every mode's evidence.
Located slow_link(const Matrix& m, const Pair& pair, double dev) {
  Located l;
  l.kind = "link", l.host = pair.first, l.hosts = {pair.first, pair.second};
  l.benchmark = m.benchmark, l.metric = m.metric, l.unit = m.unit, l.params = m.params;
  l.paths = {m.path};
  l.low_links = l.links = 1;
  l.worst_deviation = dev;
  std::string ev;
  for (const auto& e : m.evidence.at(pair)) ev += (ev.empty() ? "" : ", ") + e;
  l.text = "link " + pair.first + "<->" + pair.second + " (" + m.path + "): " + ev +
           " against the fleet's typical link; both hosts' other links are normal";
  return l;
}

}  // namespace

std::vector<Located> locate_link_faults(const std::vector<LinkMatrix>& links,
                                        const ToleranceOf& tolerance) {
  auto matrices = judged_matrices(links);
  for (auto& [_, m] : matrices)
    if (m.partners.size() >= 3) m.judge(tolerance(m.benchmark, m.metric, m.unit));
  const auto paths = combined_modes(matrices);
  std::map<std::string, std::vector<const Matrix*>> families;
  for (const auto& [_, m] : paths)
    families[key_of(m.benchmark, m.family_params, m.metric)].push_back(&m);
  for (auto& [_, f] : families)  // MPI's path first, then the rails by name
    std::stable_sort(f.begin(), f.end(), [](const Matrix* a, const Matrix* b) {
      return (a->path != "mpi") < (b->path != "mpi") ||
             ((a->path != "mpi") == (b->path != "mpi") && a->path < b->path);
    });
  std::vector<Located> out;
  for (const auto& [_, family] : families) locate_hosts(family, out);
  for (const auto& [_, m] : paths)
    for (const auto& [pair, dev] : m.low)
      if (!m.suspect(pair.first) && !m.suspect(pair.second)) out.push_back(slow_link(m, pair, dev));
  auto rank = [](const std::string& k) { return k == "node" ? 0 : k == "nic" ? 1 : 2; };
  std::stable_sort(out.begin(), out.end(), [&](const Located& a, const Located& b) {
    if (rank(a.kind) != rank(b.kind)) return rank(a.kind) < rank(b.kind);
    return a.hosts < b.hosts;
  });
  return out;
}

json located_json(const std::vector<Located>& located) {
  json j = json::array();
  for (const auto& l : located)
    j.push_back({{"kind", l.kind},
                 {"host", l.host},
                 {"hosts", l.hosts},
                 {"nic", l.nic},
                 {"benchmark", l.benchmark},
                 {"metric", l.metric},
                 {"unit", l.unit},
                 {"params", l.params},
                 {"paths", l.paths},
                 {"low_links", l.low_links},
                 {"links", l.links},
                 {"worst_deviation", l.worst_deviation},
                 {"text", l.text}});
  return j;
}

}  // namespace clusterbench::report
