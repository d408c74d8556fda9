// Prometheus text exposition of a run's headline metrics (docs/report.md "Prometheus").
#include "reports/prometheus.hpp"

#include <charconv>
#include <cmath>
#include <ctime>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

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

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
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

std::string escape_help(const std::string& v) {
  std::string out;
  for (char c : v) {
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

const std::vector<PrometheusHeadline>& prometheus_headlines() {
  static const std::vector<PrometheusHeadline> rows = {
      {"compute.gemm", "tflops", "clusterbench_gemm_tflops",
       "GEMM throughput, TFLOP/s (1e12 FLOP/s, FLOP = 2*M*N*K), median time per product", 1,
       "TFLOP/s"},
      {"compute.gemm", "sm_clock_median", "DCGM_FI_DEV_SM_CLOCK",
       "SM clock frequency (in MHz), median over the GEMM measurement", 1, "MHz"},
      {"compute.gemm", "temperature_max", "DCGM_FI_DEV_GPU_TEMP",
       "GPU temperature (in C), maximum over the GEMM measurement", 1, "C"},
      {"compute.gemm", "power_max", "DCGM_FI_DEV_POWER_USAGE",
       "Power draw (in W), maximum over the GEMM measurement", 1, "W"},
      {"compute.gpu_memory_bandwidth", "bandwidth",
       "clusterbench_gpu_memory_bandwidth_bytes_per_second", "GPU memory (HBM) bandwidth", 1e9,
       "GB/s"},
      {"compute.host_device_copy", "bandwidth", "clusterbench_host_device_copy_bytes_per_second",
       "Host<->device copy bandwidth per GPU", 1e9, "GB/s"},
      {"compute.memory_bandwidth", "bandwidth",
       "clusterbench_host_memory_bandwidth_bytes_per_second", "Host memory bandwidth (STREAM)", 1e9,
       "GB/s"},
      {"io.fio", "read_bw", "clusterbench_fio_read_bytes_per_second", "fio read bandwidth", 1e9,
       "GB/s"},
      {"io.fio", "write_bw", "clusterbench_fio_write_bytes_per_second", "fio write bandwidth", 1e9,
       "GB/s"},
      {"io.fio", "read_iops", "clusterbench_fio_read_iops", "fio read I/O operations per second", 1,
       "IOPS"},
      {"io.fio", "write_iops", "clusterbench_fio_write_iops", "fio write I/O operations per second",
       1, "IOPS"},
      {"io.fio", "read_clat_p99", "clusterbench_fio_read_clat_p99_seconds",
       "fio read completion latency, 99th percentile", 1e-6, "us"},
      {"io.fio", "write_clat_p99", "clusterbench_fio_write_clat_p99_seconds",
       "fio write completion latency, 99th percentile", 1e-6, "us"},
      {"io.dataloader", "samples_per_s", "clusterbench_dataloader_samples_per_second",
       "Dataloader throughput", 1, "samples/s"},
  };
  return rows;
}

std::string render_prometheus(const Report& report, const RunDir& run, const FleetView& fleet) {
  std::map<std::pair<std::string, std::string>, const PrometheusHeadline*> by_metric;
  for (const auto& h : prometheus_headlines()) by_metric[{h.benchmark, h.metric}] = &h;
  std::map<std::pair<std::string, int>, const GpuInfo*> gpus;
  for (const auto& e : run.run.env)
    for (const auto& g : e.gpus) gpus[{e.host, g.index}] = &g;

  std::map<std::string, Family> families;
  std::vector<std::string> family_order;
  auto family = [&](const std::string& name, const std::string& help) -> Family& {
    auto [it, fresh] = families.try_emplace(name);
    if (fresh) {
      it->second.help = help;
      family_order.push_back(name);
    }
    return it->second;
  };
  // Headline families first, in table order, so the file reads the same from run to run.
  for (const auto& h : prometheus_headlines())
    if (!families.count(h.name)) family(h.name, "");

  for (const auto& r : run.records.records) {
    if (r.status != "ok" || (r.scope.kind != "gpu" && r.scope.kind != "node")) continue;
    for (const auto& m : r.metrics) {
      auto it = by_metric.find({r.benchmark, m.name});
      if (it == by_metric.end() || m.unit != it->second->unit || !std::isfinite(m.value)) continue;
      const PrometheusHeadline& h = *it->second;
      Labels labels = {{"host", r.scope.host}};
      if (r.scope.kind == "gpu") {
        std::string uuid = r.scope.uuid, bus = r.scope.pci_bus_id;
        if (auto g = gpus.find({r.scope.host, r.scope.gpu_index}); g != gpus.end()) {
          if (uuid.empty()) uuid = g->second->uuid;
          if (bus.empty()) bus = g->second->pci_bus_id;
        }
        labels.push_back({"gpu", std::to_string(r.scope.gpu_index)});
        labels.push_back({"uuid", uuid});
        labels.push_back({"pci_bus_id", bus});
      }
      if (is_dcgm(h.name)) labels.push_back({"benchmark", r.benchmark});
      for (const auto& [k, v] : r.params.items()) labels.push_back({label_name(k), param_value(v)});
      Family& f = families[h.name];
      f.help = h.help + " (clusterbench " + h.benchmark + " metric " + h.metric + ")";
      f.set(render_labels(labels), number(m.value * h.scale));
    }
  }

  // Per node: the fleet view's verdict and counts.
  Family& failing = family("clusterbench_node_failing",
                           "1 when the fleet view marks the host failing (a FAIL item, a failed "
                           "record or a GPU/node outlier), else 0; failing-hosts.txt lists them");
  Family& outliers =
      family("clusterbench_node_outliers", "GPU and node fleet outliers on the host");
  Family& items =
      family("clusterbench_node_spec_items",
             "Spec row items on the host by outcome (PASS, WARN, FAIL, MISSING, WAIVED)");
  Family& recs = family("clusterbench_node_records", "Result records of the host by status");
  for (const auto& n : fleet.nodes) {
    std::string host = render_labels({{"host", n.host}});
    failing.set(host, n.reasons.empty() ? "0" : "1");
    outliers.set(host, std::to_string(n.outliers));
    for (const auto& o : outcome_order()) {
      auto it = n.items.find(o);
      items.set(render_labels({{"host", n.host}, {"outcome", o}}),
                std::to_string(it == n.items.end() ? 0 : it->second));
    }
    recs.set(render_labels({{"host", n.host}, {"status", "ok"}}), std::to_string(n.records_ok));
    recs.set(render_labels({{"host", n.host}, {"status", "failed"}}),
             std::to_string(n.records_failed));
    recs.set(render_labels({{"host", n.host}, {"status", "waived"}}),
             std::to_string(n.records_waived));
  }

  // Per run.
  family("clusterbench_run_info", "The run these series come from; always 1")
      .set(render_labels({{"run_id", report.run_id},
                          {"suite", run.run.suite},
                          {"spec", report.spec_name},
                          {"verdict", verdict(report.exit_code)}}),
           "1");
  family("clusterbench_run_exit_code",
         "clusterbench's exit code: 0 PASS, 1 FAIL, 2 refused, 3 aborted, 4 incomplete")
      .set("", std::to_string(report.exit_code));
  if (double t = parse_utc(run.run.finished_at); t >= 0)
    family("clusterbench_run_finished_timestamp_seconds", "When the run finished, Unix time")
        .set("", number(t));

  std::ostringstream out;
  for (const auto& name : family_order) {
    const Family& f = families[name];
    if (f.samples.empty()) continue;
    out << "# HELP " << name << " " << escape_help(f.help) << "\n";
    out << "# TYPE " << name << " gauge\n";
    for (const auto& labels : f.order) out << name << labels << " " << f.samples.at(labels) << "\n";
  }
  return out.str();
}

void write_prometheus(const std::string& path, const std::string& text) {
  write_file_atomic(path, text);
}

}  // namespace clusterbench::report
