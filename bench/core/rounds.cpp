// Rounds (rounds.hpp).
#include "core/rounds.hpp"

#include <algorithm>
#include <fstream>
#include <map>

namespace clusterbench {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// The metric `name` of each record that has it, in round order.
std::vector<const Metric*> metric_rounds(const std::vector<const ResultRecord*>& recs,
                                         const std::string& name) {
  std::vector<const Metric*> out;
  for (const ResultRecord* r : recs)
    for (const auto& m : r->metrics)
      if (m.name == name) {
        out.push_back(&m);
        break;
      }
  return out;
}

/// One metric over the rounds (merge_rounds's rules); its per-round values go to `values`.
Metric merge_metric(const Metric& last, const std::vector<const Metric*>& ms, json& values) {
  std::vector<double> v;
  for (const Metric* m : ms) v.push_back(m->value);
  values[last.name] = v;
  Metric out = last;
  out.reps.clear();
  if (last.unit == "count") {
    out.value = 0;
    for (double x : v) out.value += x;
  } else if (ends_with(last.name, "_best")) {
    out.value = last.higher_is_better ? *std::max_element(v.begin(), v.end())
                                      : *std::min_element(v.begin(), v.end());
  } else {
    out.value = median_of(v);
    // A metric that is one number per run (a p99 over all batches) had no repetitions in its
    // rounds: it keeps none, so it still decides nothing in compare.
    if (std::all_of(ms.begin(), ms.end(), [](const Metric* m) { return !m->reps.empty(); }))
      out.reps = v;
  }
  return out;
}

/// The host probe of a merged record: the last round's without its core-to-core pair, with the
/// rounds' median CPU share; the pairs go to `c2c`.
json merge_probe(const std::vector<const ResultRecord*>& recs, json& c2c) {
  json probe = json::object();
  std::vector<double> shares;
  for (const ResultRecord* r : recs) {
    auto p = r->extra.is_object() ? r->extra.find("host_probe") : r->extra.end();
    if (!r->extra.is_object() || p == r->extra.end() || !p->is_object()) {
      c2c.push_back(nullptr);
      continue;
    }
    probe = *p;
    c2c.push_back(p->value("c2c_ns", json()));
    auto s = p->find("cpu_share");
    if (s != p->end() && s->is_number()) shares.push_back(s->get<double>());
  }
  probe.erase("c2c_ns");
  if (!shares.empty()) probe["cpu_share"] = median_of(shares);
  return probe;
}

/// extra.disk_load of a merged record (io.fio, docs/fio.md "Disk load"): the rounds' bytes
/// summed and the share recomputed; the last round's as it is when a round has no numbers.
json merge_disk_load(const std::vector<const ResultRecord*>& recs) {
  json out;
  long long disk = 0, own = 0;
  for (const ResultRecord* r : recs) {
    auto d = r->extra.is_object() ? r->extra.find("disk_load") : r->extra.end();
    if (!r->extra.is_object() || d == r->extra.end()) continue;
    out = *d;
    if (!d->contains("disk_bytes") || !d->contains("fio_bytes")) return out;
    disk += d->at("disk_bytes").get<long long>(), own += d->at("fio_bytes").get<long long>();
  }
  if (out.is_null() || !out.contains("disk_bytes")) return out;
  out["disk_bytes"] = disk, out["fio_bytes"] = own;
  out["other_bytes"] = std::max(0LL, disk - own);
  out["fio_share"] =
      disk > 0 ? std::min(1.0, static_cast<double>(own) / static_cast<double>(disk)) : 1.0;
  return out;
}

/// One case's record from its rounds (all ok).
ResultRecord merge_ok(const std::vector<const ResultRecord*>& recs, int planned) {
  ResultRecord out = *recs.back();
  json values = json::object();
  for (auto& m : out.metrics) m = merge_metric(m, metric_rounds(recs, m.name), values);
  std::vector<double> times;
  double duration = 0;
  for (const ResultRecord* r : recs) {
    if (r->time.n > 0) times.push_back(r->time.median);
    duration += r->duration_s;
  }
  out.time = compute_stats(times);
  out.duration_s = duration;
  out.started_at = recs.front()->started_at;
  if (!out.extra.is_object()) out.extra = json::object();
  json c2c = json::array();
  json probe = merge_probe(recs, c2c);
  if (!probe.empty()) out.extra["host_probe"] = probe;
  if (json load = merge_disk_load(recs); !load.is_null()) out.extra["disk_load"] = load;
  out.extra["rounds"] = {{"planned", planned},
                         {"run", static_cast<int>(recs.size())},
                         {"values", values},
                         {"c2c_ns", c2c}};
  return out;
}

}  // namespace

std::vector<ResultRecord> merge_rounds(const std::vector<std::vector<ResultRecord>>& rounds,
                                       int planned, bool final) {
  std::vector<ResultRecord> out;
  if (rounds.empty()) return out;
  for (const auto& first : rounds.front()) {
    std::vector<const ResultRecord*> recs;
    const ResultRecord* bad = nullptr;
    size_t bad_round = 0;
    for (size_t k = 0; k < rounds.size(); ++k)
      for (const auto& r : rounds[k])
        if (r.case_key == first.case_key) {
          recs.push_back(&r);
          if (!bad && r.status != Status::ok) bad = &r, bad_round = k + 1;
          break;
        }
    ResultRecord rec;
    if (bad) {
      rec = *bad;
      if (planned > 1 && rec.status == Status::failed)
        rec.message = "round " + std::to_string(bad_round) + " of " + std::to_string(planned) +
                      ": " + rec.message;
    } else {
      rec = merge_ok(recs, planned);
      if (final && static_cast<int>(recs.size()) < planned)
        rec.message = std::to_string(recs.size()) + " of " + std::to_string(planned) +
                      " rounds ran (the run ended before the rest)";
    }
    if (!rec.extra.is_object()) rec.extra = json::object();
    if (final)
      rec.extra.erase("snapshot");
    else
      rec.extra["snapshot"] = true;
    out.push_back(std::move(rec));
  }
  return out;
}

json snapshot_rounds(const std::string& path, const std::string& case_key) {
  std::ifstream in(path);
  const std::string key = "\"case_key\":" + json(case_key).dump();  // as dump_json writes it
  json found;
  for (std::string line; std::getline(in, line);) {
    if (line.find(key) == std::string::npos) continue;  // parse only the case's own lines
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || j.value("case_key", "") != case_key) continue;
    const json& extra = j.contains("extra") ? j["extra"] : json();
    if (extra.is_object() && extra.value("snapshot", false) && extra.contains("rounds"))
      found = extra["rounds"];
  }
  return found;
}

double time_left(const std::vector<CaseCost>& plan, size_t index, int round, int rounds) {
  double measured = 0, estimated = 0;
  for (const auto& c : plan)
    if (c.to_run && c.measured_s >= 0 && c.estimate_s > 0)
      measured += c.measured_s, estimated += c.estimate_s;
  const double scale = estimated > 0 ? std::clamp(measured / estimated, 0.25, 8.0) : 1.0;
  auto cost = [&](const CaseCost& c) {
    return c.measured_s >= 0 ? c.measured_s : c.estimate_s * scale;
  };
  double left = 0, per_round = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const CaseCost& c = plan[i];
    if (!c.to_run) continue;
    if (c.in_rounds) per_round += cost(c);
    if (i > index && (round == 1 || c.in_rounds)) left += cost(c);
  }
  return left + std::max(0, rounds - std::min(round, rounds)) * per_round;
}

}  // namespace clusterbench
