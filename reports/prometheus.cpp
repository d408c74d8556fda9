// Prometheus text exposition of a run's headline metrics (docs/report.md "Prometheus").
#include "reports/prometheus.hpp"

#include <charconv>
#include <cmath>
#include <ctime>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "records/utf8.hpp"
#include "reports/families.hpp"

namespace clusterbench::report {

namespace {

/// Labels in output order: fixed labels first, then params in key order.
using Labels = std::vector<std::pair<std::string, std::string>>;

struct Family {
  std::string help;
  std::map<std::string, std::string> samples;  ///< rendered label set -> value text
  std::vector<std::string> order;              ///< label sets in first-seen order
  void set(const std::string& labels, const std::string& value) {
    auto [it, fresh] = samples.insert_or_assign(labels, value);
    if (fresh) order.push_back(labels);
  }
};

/// A label value as the text exposition format wants it: UTF-8, with \\, \" and \n escaped.
std::string escape_label(const std::string& raw) {
  std::string out;
  for (char c : valid_utf8(raw)) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string escape_help(const std::string& raw) {
  std::string out;
  for (char c : valid_utf8(raw)) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

/// A valid label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__", not a fixed label).
std::string label_name(const std::string& key) {
  std::string out;
  for (char c : key) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  static const std::set<std::string> reserved = {"host", "gpu", "uuid", "pci_bus_id", "benchmark"};
  if (reserved.count(out) || out.rfind("__", 0) == 0) out = "param_" + out;
  return out;
}

std::string param_value(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

/// The labels of `params` (in key order), named by label_name() and unique among themselves and
/// the `used` names (the fixed labels): a key that is a valid name already keeps it, and a later
/// one that maps onto a taken name gets the first free suffix _2, _3, ... ("a-b" beside "a_b"
/// becomes a_b_2).
Labels param_labels(const json& params, std::set<std::string> used) {
  std::vector<std::string> names(params.size());
  std::vector<bool> exact(params.size());
  size_t i = 0;
  for (const auto& [k, v] : params.items()) {
    names[i] = label_name(k);
    exact[i] = names[i] == k;
    ++i;
  }
  for (int pass = 0; pass < 2; ++pass)  // exact names first, so that they keep theirs
    for (i = 0; i < names.size(); ++i) {
      if (exact[i] != (pass == 0)) continue;
      std::string name = names[i];
      for (int n = 2; used.count(name); ++n) name = names[i] + "_" + std::to_string(n);
      used.insert(names[i] = name);
    }
  Labels out;
  i = 0;
  for (const auto& [k, v] : params.items()) out.push_back({names[i++], param_value(v)});
  return out;
}

std::string render_labels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i)
    out += (i ? "," : "") + labels[i].first + "=\"" + escape_label(labels[i].second) + "\"";
  return out + "}";
}

/// Shortest decimal that reads back as the same double (Go's ParseFloat accepts it).
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

bool is_dcgm(const std::string& name) { return name.rfind("DCGM_FI_", 0) == 0; }

/// "2026-11-30T08:45:10Z" -> seconds since the epoch; -1 when not in that form.
double parse_utc(const std::string& iso) {
  std::tm tm{};
  std::istringstream in(iso);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  if (in.fail()) return -1;
  return static_cast<double>(timegm(&tm));
}

}  // namespace

namespace {

using Families = std::map<std::string, Family>;

/// Families in output order: each registered once, with its HELP text.
struct Output {
  Families families;
  std::vector<std::string> order;
  Family& family(const std::string& name, const std::string& help) {
    auto [it, fresh] = families.try_emplace(name);
    if (fresh) {
      it->second.help = help;
      order.push_back(name);
    }
    return it->second;
  }
};

Labels record_labels(const ResultRecord& r, const PrometheusGauge& gauge,
                     const std::map<std::pair<std::string, int>, const GpuInfo*>& gpus) {
  Labels labels = {{"host", r.scope.host}};
  if (r.scope.kind == ScopeKind::gpu) {
    std::string uuid = r.scope.uuid, bus = r.scope.pci_bus_id;
    if (auto g = gpus.find({r.scope.host, r.scope.gpu_index}); g != gpus.end()) {
      if (uuid.empty()) uuid = g->second->uuid;
      if (bus.empty()) bus = g->second->pci_bus_id;
    }
    labels.push_back({"gpu", std::to_string(r.scope.gpu_index)});
    labels.push_back({"uuid", uuid});
    labels.push_back({"pci_bus_id", bus});
  }
  if (is_dcgm(gauge.name)) labels.push_back({"benchmark", r.benchmark});
  std::set<std::string> used;
  for (const auto& l : labels) used.insert(l.first);
  for (auto& l : param_labels(r.params, used)) labels.push_back(std::move(l));
  return labels;
}

/// The headline gauges: registered first, in the spec's order, so the file reads the same from
/// run to run; then a sample per ok gpu/node record metric with a gauge.
void headline_samples(const Report& report, Output& out) {
  const RunDir& run = *report.run;
  for (const auto& f : report.spec->families)
    if (f.prometheus)
      for (const auto& g : *f.prometheus) out.family(g.name, "");
  std::map<std::pair<std::string, int>, const GpuInfo*> gpus;
  for (const auto& e : run.run.env)
    for (const auto& g : e.gpus) gpus[{e.host, g.index}] = &g;
  FamilyCache family(report.spec->families);
  for (const auto& r : run.records.records) {
    if (r.status != Status::ok ||
        (r.scope.kind != ScopeKind::gpu && r.scope.kind != ScopeKind::node))
      continue;
    const auto* gauges = family(r.benchmark).prometheus;
    if (!gauges) continue;
    for (const auto& m : r.metrics) {
      if (!std::isfinite(m.value)) continue;
      for (const auto& g : *gauges) {
        if (g.metric != m.name || g.unit != m.unit) continue;
        Family& f = out.families[g.name];
        f.help = g.help + " (clusterbench " + r.benchmark + " metric " + g.metric + ")";
        f.set(render_labels(record_labels(r, g, gpus)), number(m.value * g.scale));
      }
    }
  }
}

/// Per node: the fleet view's verdict and counts.
void node_samples(const FleetView& fleet, Output& out) {
  Family& failing = out.family("clusterbench_node_failing",
                               "1 when the host has a FAIL row item (drain it), else 0; "
                               "failing-hosts.txt lists them");
  Family& suspect = out.family("clusterbench_node_suspect",
                               "1 when the host has no FAIL row but a failed record, a GPU/node "
                               "outlier or a located slow link (look, do not drain), else 0; "
                               "suspect-hosts.txt lists them");
  Family& outliers =
      out.family("clusterbench_node_outliers", "GPU and node fleet outliers on the host");
  Family& items =
      out.family("clusterbench_node_spec_items",
                 "Spec row items on the host by outcome (PASS, WARN, FAIL, MISSING, WAIVED)");
  Family& recs = out.family("clusterbench_node_records", "Result records of the host by status");
  for (const auto& n : fleet.nodes) {
    std::string host = render_labels({{"host", n.host}});
    failing.set(host, n.reasons.empty() ? "0" : "1");
    suspect.set(host, n.reasons.empty() && !n.suspicions.empty() ? "1" : "0");
    outliers.set(host, std::to_string(n.outliers));
    for (Outcome o : kOutcomeOrder) {
      auto it = n.items.find(o);
      items.set(render_labels({{"host", n.host}, {"outcome", to_string(o)}}),
                std::to_string(it == n.items.end() ? 0 : it->second));
    }
    recs.set(render_labels({{"host", n.host}, {"status", "ok"}}), std::to_string(n.records_ok));
    recs.set(render_labels({{"host", n.host}, {"status", "failed"}}),
             std::to_string(n.records_failed));
    recs.set(render_labels({{"host", n.host}, {"status", "waived"}}),
             std::to_string(n.records_waived));
  }
}

void run_samples(const Report& report, Output& out) {
  const RunRecord& run = report.run->run;
  out.family("clusterbench_run_info", "The run these series come from; always 1")
      .set(render_labels({{"run_id", report.run_id},
                          {"suite", run.suite},
                          {"spec", report.spec_name},
                          {"verdict", verdict(report.exit_code)}}),
           "1");
  out.family("clusterbench_run_exit_code",
             "clusterbench's exit code: 0 PASS, 1 FAIL, 2 refused, 3 aborted, 4 incomplete")
      .set("", std::to_string(report.exit_code));
  if (double t = parse_utc(run.finished_at); t >= 0)
    out.family("clusterbench_run_finished_timestamp_seconds", "When the run finished, Unix time")
        .set("", number(t));
}

}  // namespace

std::string render_prometheus(const Report& report) {
  Output out;
  headline_samples(report, out);
  node_samples(report.fleet, out);
  run_samples(report, out);
  std::ostringstream text;
  for (const auto& name : out.order) {
    const Family& f = out.families[name];
    if (f.samples.empty()) continue;
    text << "# HELP " << name << " " << escape_help(f.help) << "\n";
    text << "# TYPE " << name << " gauge\n";
    for (const auto& labels : f.order)
      text << name << labels << " " << f.samples.at(labels) << "\n";
  }
  return text.str();
}

void write_prometheus(const std::string& path, const std::string& text) {
  write_file_atomic(path, text);
}

}  // namespace clusterbench::report
