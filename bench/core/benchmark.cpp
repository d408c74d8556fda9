// The benchmark interface's shared parts: levels, the registry, selection, knob checks.
#include "core/api/benchmark.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/measure.hpp"
#include "core/selection.hpp"
#include "records/spec.hpp"

namespace clusterbench {

const char* level_name(Level l) {
  switch (l) {
    case Level::node:
      return "node";
    case Level::gpu:
      return "gpu";
    case Level::rank:
      return "rank";
    case Level::cluster:
      return "cluster";
  }
  return "?";
}

Benchmark::Benchmark()
    : min_time_(knobs_.number("min_time", SuiteDefault("0.05", "0.5", "2"), "s",
                              "seconds of measurement per case (Google Benchmark MinTime)")) {}

std::map<std::string, std::string> Benchmark::round_sets(const Settings& s, int rounds) const {
  char mt[32];
  std::snprintf(mt, sizeof mt, "%.9g", min_time(s) / rounds);
  return {{id() + ".min_time", mt}};
}

double loop_estimate_s(double min_time, double op_s, int samples) {
  if (!(op_s >= 0)) op_s = 0;
  samples = loop_samples(samples);
  // A long operation is timed exactly `samples` times, without a warm-up (fixed_iterations).
  if (op_s > min_time / 20 && fixed_iterations(min_time, op_s, samples))
    return op_s + samples * op_s;
  return op_s + std::max(0.3 * min_time, op_s) + std::max(1.6 * min_time, op_s);
}

std::vector<double> rate_reps(double work, const std::vector<double>& seconds) {
  std::vector<double> reps;
  reps.reserve(seconds.size());
  for (double t : seconds) reps.push_back(t > 0 ? work / t : 0);
  return reps;
}

std::vector<double> time_reps(double scale, const std::vector<double>& seconds) {
  std::vector<double> reps;
  reps.reserve(seconds.size());
  for (double t : seconds) reps.push_back(t * scale);
  return reps;
}

void CaseRun::add_rate(const std::string& name, double work, const std::string& unit) {
  add(Metric{name, stats().median > 0 ? work / stats().median : 0, unit, true,
             rate_reps(work, samples()), 0, work});
}

void CaseRun::add_rate(const std::string& name, const Work& work) {
  add(rate_metric(name, work, stats().median, samples()));
}

void CaseRun::add_best_rate(const std::string& name, const Work& work) {
  add(Metric{name, work.rate(stats().min), work.unit});
}

Metric rate_metric(const std::string& name, const Work& work, double median_s,
                   const std::vector<double>& samples) {
  return Metric{name, work.rate(median_s), work.unit, true, rate_reps(work.per_op, samples),
                0,    work.per_op};
}

Metric time_metric(const std::string& name, double median_s, const std::vector<double>& samples) {
  return Metric{name, microseconds(median_s), "us", false, time_reps(kUsPerS, samples)};
}

void CaseRun::add_time(const std::string& name, double scale, const std::string& unit,
                       double resolution) {
  add(Metric{name, stats().median * scale, unit, false, time_reps(scale, samples()), resolution});
}

double case_min_time(const Settings& s, const std::string& id) {
  return s.get_double(id, "min_time", suite_min_time(s.suite()));
}

double Benchmark::estimate_s(const Settings& s, const json& /*params*/) const {
  return 0.2 + loop_estimate_s(case_min_time(s, id()), 0);
}

Registry& Registry::get() {
  static Registry r;
  return r;
}

void Registry::add(std::unique_ptr<Benchmark> b) { benchmarks_.push_back(std::move(b)); }

const Benchmark* Registry::find(const std::string& id) const {
  for (const auto& b : benchmarks_)
    if (b->id() == id) return b.get();
  return nullptr;
}

std::vector<std::string> split_globs(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& value : values) {
    const size_t before = out.size();
    std::istringstream parts(value);
    for (std::string part; std::getline(parts, part, ',');) {
      const size_t b = part.find_first_not_of(" \t"), e = part.find_last_not_of(" \t");
      if (b != std::string::npos) out.push_back(part.substr(b, e - b + 1));
    }
    if (out.size() == before)
      throw InputError("--only '" + value +
                       "' holds no glob (globs are separated by spaces or commas, e.g. "
                       "--only 'compute.*,io.fio')");
  }
  return out;
}

std::vector<const Benchmark*> select_benchmarks(const std::vector<std::string>& only,
                                                const std::string& suite,
                                                const Registry& registry) {
  std::vector<const Benchmark*> in_suite;
  for (const auto& b : registry.all())
    if (b->in_suite(suite)) in_suite.push_back(b.get());
  for (const auto& pattern : only) {
    bool any = std::any_of(in_suite.begin(), in_suite.end(),
                           [&](const Benchmark* b) { return glob_match(pattern, b->id()); });
    if (!any) {
      std::string known;
      for (const Benchmark* b : in_suite) known += "\n  " + b->id();
      throw InputError("--only '" + pattern + "' matches no benchmark; known benchmarks:" + known);
    }
  }
  std::vector<const Benchmark*> out;
  for (const Benchmark* b : in_suite) {
    bool take = only.empty() || std::any_of(only.begin(), only.end(), [&](const std::string& p) {
                  return glob_match(p, b->id());
                });
    if (take) out.push_back(b);
  }
  return out;
}

bool run_needs_mpi_threads(const std::vector<std::string>& only, const std::string& suite,
                           bool resume, const Registry& registry) {
  if (resume) return true;
  try {
    const auto selected = select_benchmarks(only, suite, registry);
    return std::any_of(selected.begin(), selected.end(),
                       [](const Benchmark* b) { return b->calls_mpi_from_threads(); });
  } catch (const InputError&) {
    return true;
  }
}

namespace {

/// Benchmark `b`'s knob `knob`, or nullptr.
const KnobSpec* knob_of(const Benchmark& b, const std::string& knob) {
  for (const KnobSpec* k : b.knob_specs())
    if (k->name == knob) return k;
  return nullptr;
}

}  // namespace

void check_set_keys(const Settings& s, const std::vector<const Benchmark*>& selected,
                    const Registry& registry) {
  for (const auto& [key, value] : s.values()) {
    if (key.rfind("run.", 0) == 0) continue;
    bool known = false;
    std::string named;                 // the benchmark (id.knob) or area (area.knob) the key names
    const Benchmark* by_id = nullptr;  // the benchmark a key ID.knob names
    for (const auto& b : registry.all()) {
      std::string area = b->id().substr(0, b->id().find('.'));
      std::string knob;
      if (key.rfind(b->id() + ".", 0) == 0)
        knob = key.substr(b->id().size() + 1), named = b->id(), by_id = b.get();
      else if (key.rfind(area + ".", 0) == 0 && key.find('.', area.size() + 1) == std::string::npos)
        knob = key.substr(area.size() + 1), named = named.empty() ? area : named;
      if (const KnobSpec* k = knob.empty() ? nullptr : knob_of(*b, knob)) {
        known = true;
        if (b->in_suite(s.suite())) check_knob(*b, *k, s);  // --only may leave it out
      }
    }
    if (known && by_id && !by_id->in_suite(s.suite()))
      throw InputError("--set " + key + ": " + by_id->id() + " has no cases in suite " + s.suite() +
                       (by_id->in_suite("burnin") ? " (it runs in `clusterbench burnin`)" : ""));
    if (known) continue;
    if (!named.empty())
      throw InputError("--set " + key + ": " + named +
                       " has no such knob (`clusterbench list` shows its knobs)");
    throw InputError("--set " + key +
                     ": no benchmark or area of that name (see `clusterbench list`)");
  }
  for (const Benchmark* b : selected)
    for (const KnobSpec* k : b->knob_specs()) check_knob(*b, *k, s);
}

}  // namespace clusterbench
