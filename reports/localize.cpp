// Localisation of slow links (localize.hpp).
#include "reports/localize.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "reports/rows.hpp"

namespace clusterbench::report {

namespace {

using Pair = std::pair<std::string, std::string>;

Pair ordered(const std::vector<std::string>& h) {
  return h[0] < h[1] ? Pair{h[0], h[1]} : Pair{h[1], h[0]};
}

/// One matrix: its links with their values, each host's partners, the reference and the low
/// links against it.
struct Matrix {
  std::string benchmark, metric, unit, path;
  bool higher_is_better = true;
  json params, family_params;
  std::map<Pair, double> value;
  std::map<Pair, double> best;  ///< each link's value in its best repetition
  std::map<std::string, std::set<std::string>> partners;
  double reference = 0;
  std::map<Pair, double> low;  ///< low links -> deviation from the reference

  /// A link is low when even its best repetition deviates from the reference by more than
  /// `tol`. The reference is the median over hosts of each host's median link: k slow hosts among n
  /// leave every other host's median normal while k < (n-1)/2, so it stays the healthy value
  /// where the median of all links would not (2 slow hosts of 6 are 9 of 15 links).
  void judge(double tol) {
    std::vector<double> host_medians;
    for (const auto& [h, ps] : partners) {
      std::vector<double> v;
      for (const auto& p : ps) v.push_back(value.at(ordered({h, p})));
      host_medians.push_back(median_of(v));
    }
    reference = median_of(host_medians);
    if (reference == 0) return;
    for (const auto& [pair, v] : value) {
      // Out of the noise: even the link's best repetition is beyond the tolerance.
      double dev_best = (best.at(pair) - reference) / std::fabs(reference);
      if (std::isnan(dev_best)) continue;
      if (higher_is_better ? dev_best < -tol : dev_best > tol)
        low[pair] = (v - reference) / std::fabs(reference);
    }
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
    Matrix& mx = out[key_of(lm.benchmark, lm.params, lm.metric)];
    mx.benchmark = lm.benchmark, mx.metric = lm.metric, mx.unit = lm.unit, mx.params = lm.params;
    mx.higher_is_better = lm.higher_is_better;
    mx.path = lm.params.value("rail", "mpi");
    mx.family_params = lm.params;
    mx.family_params.erase("rail");
    for (size_t i = 0; i < lm.hosts.size(); ++i)
      for (size_t j = i + 1; j < lm.hosts.size(); ++j) {
        const double v = lm.values[i][j];
        if (!std::isfinite(v) || v < 0) continue;
        const Pair p = ordered({lm.hosts[i], lm.hosts[j]});
        mx.value[p] = v;
        mx.best[p] = lm.best[i][j];  // NaN: the noise is unknown, never judged low
        mx.partners[p.first].insert(p.second);
        mx.partners[p.second].insert(p.first);
      }
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
                         percent(l.worst_deviation, 1) + "); its other paths are normal"
                   : "node " + h + ": all " + std::to_string(l.links) +
                         " of its links below the fleet's typical link on " +
                         (ms.size() == on.size() && on.size() > 1 ? "every path (" : "") + paths +
                         (ms.size() == on.size() && on.size() > 1 ? ")" : "") + " (worst " +
                         percent(l.worst_deviation, 1) + ")";
      out.push_back(std::move(l));
    };
    if (low.size() == on.size()) {
      finding(low, "node");
      continue;
    }
    for (const Matrix* m : low) finding({m}, m->path == "mpi" ? "node" : "nic");
  }
}

}  // namespace

std::vector<Located> locate_link_faults(const std::vector<LinkMatrix>& links,
                                        const ToleranceOf& tolerance) {
  auto matrices = judged_matrices(links);
  for (auto& [_, m] : matrices)
    if (m.partners.size() >= 3) m.judge(tolerance(m.benchmark, m.metric, m.unit));
  std::map<std::string, std::vector<const Matrix*>> families;
  for (const auto& [_, m] : matrices)
    families[key_of(m.benchmark, m.family_params, m.metric)].push_back(&m);
  for (auto& [_, f] : families)  // MPI's path first, then the rails by name
    std::stable_sort(f.begin(), f.end(), [](const Matrix* a, const Matrix* b) {
      return (a->path != "mpi") < (b->path != "mpi") ||
             ((a->path != "mpi") == (b->path != "mpi") && a->path < b->path);
    });
  std::vector<Located> out;
  for (const auto& [_, family] : families) locate_hosts(family, out);
  for (const auto& [_, m] : matrices)
    for (const auto& [pair, dev] : m.low) {
      if (m.suspect(pair.first) || m.suspect(pair.second)) continue;
      Located l;
      l.kind = "link", l.host = pair.first, l.hosts = {pair.first, pair.second};
      l.benchmark = m.benchmark, l.metric = m.metric, l.unit = m.unit, l.params = m.params;
      l.paths = {m.path};
      l.low_links = l.links = 1;
      l.worst_deviation = dev;
      l.text = "link " + pair.first + "<->" + pair.second + " (" + m.path +
               "): " + percent(dev, 1) + " against the fleet's typical link (" +
               format_number(m.reference) + " " + m.unit + "); both hosts' other links are normal";
      out.push_back(std::move(l));
    }
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
