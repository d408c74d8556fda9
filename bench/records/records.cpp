// Record types <-> JSON, statistics, and the file formats of a run directory (docs/records.md).
#include "records.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace clusterbench {

bool is_known_unit(const std::string& unit) {
  static const std::set<std::string> kUnits = {"GB/s", "Gb/s", "TFLOP/s", "us",        "s", "B",
                                               "GiB",  "TB",   "IOPS",    "samples/s", "C", "W",
                                               "MHz",  "%",    "count",   "ratio",     ""};
  return kUnits.count(unit) > 0;
}

double nearest_rank(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  // Nearest-rank: the smallest value with at least q of the data at or below it.
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

TimeStats compute_stats(std::vector<double> samples) {
  TimeStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.n = static_cast<int>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / s.n;
  size_t mid = samples.size() / 2;
  s.median = samples.size() % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
  s.p95 = nearest_rank(samples, 0.95);
  double iqr = nearest_rank(samples, 0.75) - nearest_rank(samples, 0.25);
  s.spread = s.median > 0 ? iqr / s.median : 0;
  return s;
}

std::string scope_item(const Scope& s) {
  if (s.kind == "gpu") {
    std::string item = s.host + "/gpu" + std::to_string(s.gpu_index);
    if (!s.uuid.empty()) item += "[" + s.uuid + "]";
    return item;
  }
  if (s.kind == "link") {
    if (s.hosts.size() == 2) return s.hosts[0] + "<->" + s.hosts[1];
    return "link";
  }
  if (s.kind == "cluster") return "cluster";
  if (s.kind == "rank") return s.host + "/rank" + std::to_string(s.rank);  // a CPU rank (burn-in)
  return s.host;
}

std::string make_case_key(const std::string& benchmark, const json& params, const Scope& s) {
  // nlohmann's object type is a std::map: dump() already sorts keys, so this is canonical.
  return benchmark + "|" + params.dump() + "|" + scope_item(s);
}

// ---------------------------------------------------------------------------------------------
// JSON conversion. get_to with defaults keeps older files readable when fields are added.

namespace {
template <typename T>
void opt(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) it->get_to(out);
}
}  // namespace

#define CB_TO(field) j[#field] = v.field
#define CB_FROM(field) opt(j, #field, v.field)

void to_json(json& j, const CpuInfo& v) {
  CB_TO(model), CB_TO(sockets), CB_TO(physical_cores), CB_TO(threads), CB_TO(numa_nodes),
      CB_TO(source);
}
void from_json(const json& j, CpuInfo& v) {
  CB_FROM(model), CB_FROM(sockets), CB_FROM(physical_cores), CB_FROM(threads), CB_FROM(numa_nodes),
      CB_FROM(source);
}
void to_json(json& j, const MemoryInfo& v) {
  CB_TO(installed_gib), CB_TO(usable_gib), CB_TO(source);
}
void from_json(const json& j, MemoryInfo& v) {
  CB_FROM(installed_gib), CB_FROM(usable_gib), CB_FROM(source);
}
void to_json(json& j, const PcieLink& v) {
  CB_TO(gen_current), CB_TO(gen_max), CB_TO(width_current), CB_TO(width_max);
}
void from_json(const json& j, PcieLink& v) {
  CB_FROM(gen_current), CB_FROM(gen_max), CB_FROM(width_current), CB_FROM(width_max);
}
void to_json(json& j, const GpuInfo& v) {
  CB_TO(index), CB_TO(name), CB_TO(uuid), CB_TO(serial), CB_TO(pci_bus_id), CB_TO(vbios),
      CB_TO(driver), CB_TO(pci_device_id), CB_TO(memory_gib), CB_TO(pcie), CB_TO(nvlink_links_up),
      CB_TO(ecc_mode), CB_TO(numa_node), CB_TO(source), CB_TO(board_part_number),
      CB_TO(persistence_mode), CB_TO(mig_mode);
}
void from_json(const json& j, GpuInfo& v) {
  CB_FROM(index), CB_FROM(name), CB_FROM(uuid), CB_FROM(serial), CB_FROM(pci_bus_id),
      CB_FROM(vbios), CB_FROM(driver), CB_FROM(pci_device_id), CB_FROM(memory_gib), CB_FROM(pcie),
      CB_FROM(nvlink_links_up), CB_FROM(ecc_mode), CB_FROM(numa_node), CB_FROM(source),
      CB_FROM(board_part_number), CB_FROM(persistence_mode), CB_FROM(mig_mode);
}
void to_json(json& j, const NicInfo& v) {
  CB_TO(name), CB_TO(kind), CB_TO(link_layer), CB_TO(state), CB_TO(phys_state), CB_TO(rate_gbps),
      CB_TO(firmware), CB_TO(mtu), CB_TO(netdev), CB_TO(pci_bus_id), CB_TO(numa_node);
}
void from_json(const json& j, NicInfo& v) {
  CB_FROM(name), CB_FROM(kind), CB_FROM(link_layer), CB_FROM(state), CB_FROM(phys_state),
      CB_FROM(rate_gbps), CB_FROM(firmware), CB_FROM(mtu), CB_FROM(netdev), CB_FROM(pci_bus_id),
      CB_FROM(numa_node);
}
void to_json(json& j, const BlockDevice& v) {
  CB_TO(name), CB_TO(model), CB_TO(serial), CB_TO(firmware), CB_TO(capacity_tb), CB_TO(nvme),
      CB_TO(rotational);
}
void from_json(const json& j, BlockDevice& v) {
  CB_FROM(name), CB_FROM(model), CB_FROM(serial), CB_FROM(firmware), CB_FROM(capacity_tb),
      CB_FROM(nvme), CB_FROM(rotational);
}
void to_json(json& j, const Versions& v) {
  CB_TO(driver), CB_TO(cuda_driver), CB_TO(cuda_runtime), CB_TO(cublas), CB_TO(nccl), CB_TO(mpi),
      CB_TO(fio), CB_TO(kernel), CB_TO(clusterbench);
}
void from_json(const json& j, Versions& v) {
  CB_FROM(driver), CB_FROM(cuda_driver), CB_FROM(cuda_runtime), CB_FROM(cublas), CB_FROM(nccl),
      CB_FROM(mpi), CB_FROM(fio), CB_FROM(kernel), CB_FROM(clusterbench);
}
void to_json(json& j, const Tuning& v) {
  CB_TO(governor), CB_TO(nr_hugepages), CB_TO(thp), CB_TO(net_core_rmem_max),
      CB_TO(net_core_wmem_max), CB_TO(tcp_rmem), CB_TO(tcp_wmem);
}
void from_json(const json& j, Tuning& v) {
  CB_FROM(governor), CB_FROM(nr_hugepages), CB_FROM(thp), CB_FROM(net_core_rmem_max),
      CB_FROM(net_core_wmem_max), CB_FROM(tcp_rmem), CB_FROM(tcp_wmem);
}
void to_json(json& j, const DmiInfo& v) {
  CB_TO(sys_vendor), CB_TO(product_name), CB_TO(product_serial), CB_TO(board_name),
      CB_TO(board_serial), CB_TO(chassis_serial), CB_TO(bios_version), CB_TO(bios_date);
}
void from_json(const json& j, DmiInfo& v) {
  CB_FROM(sys_vendor), CB_FROM(product_name), CB_FROM(product_serial), CB_FROM(board_name),
      CB_FROM(board_serial), CB_FROM(chassis_serial), CB_FROM(bios_version), CB_FROM(bios_date);
}
void to_json(json& j, const GpuDirectSettings& v) {
  CB_TO(iommu_cmdline), CB_TO(iommu_groups), CB_TO(peermem), CB_TO(acs_bridges_checked),
      CB_TO(acs_redirect);
}
void from_json(const json& j, GpuDirectSettings& v) {
  CB_FROM(iommu_cmdline), CB_FROM(iommu_groups), CB_FROM(peermem), CB_FROM(acs_bridges_checked),
      CB_FROM(acs_redirect);
}
void to_json(json& j, const GpuStatus& v) {
  CB_TO(on_pci), CB_TO(nvml), CB_TO(plugin), CB_TO(cuda_devices);
}
void from_json(const json& j, GpuStatus& v) {
  CB_FROM(on_pci), CB_FROM(nvml), CB_FROM(plugin), CB_FROM(cuda_devices);
}
void to_json(json& j, const EnvRecord& v) {
  CB_TO(schema), CB_TO(host), CB_TO(collected_at), CB_TO(fs_root), CB_TO(cpu), CB_TO(memory),
      CB_TO(gpus), CB_TO(gpu_status), CB_TO(nics), CB_TO(block_devices), CB_TO(versions),
      CB_TO(tuning), CB_TO(dmi), CB_TO(gpudirect), CB_TO(environment), CB_TO(warnings);
  if (!v.health.empty()) CB_TO(health);
}
void from_json(const json& j, EnvRecord& v) {
  CB_FROM(schema), CB_FROM(host), CB_FROM(collected_at), CB_FROM(fs_root), CB_FROM(cpu),
      CB_FROM(memory), CB_FROM(gpus), CB_FROM(gpu_status), CB_FROM(nics), CB_FROM(block_devices),
      CB_FROM(versions), CB_FROM(tuning), CB_FROM(dmi), CB_FROM(gpudirect), CB_FROM(environment),
      CB_FROM(warnings);
  CB_FROM(health);
}
void to_json(json& j, const Metric& v) {
  CB_TO(name), CB_TO(value), CB_TO(unit), CB_TO(higher_is_better);
}
void from_json(const json& j, Metric& v) {
  CB_FROM(name), CB_FROM(unit), CB_FROM(higher_is_better);
  // A non-finite value is written as null by the JSON library: never read it as 0.
  if (!j.contains("value") || !j.at("value").is_number())
    throw InputError("metric '" + v.name + "': field 'value' is not a finite number");
  v.value = j.at("value").get<double>();
}
void to_json(json& j, const TimeStats& v) {
  CB_TO(n), CB_TO(min), CB_TO(median), CB_TO(mean), CB_TO(p95), CB_TO(max), CB_TO(spread);
}
void from_json(const json& j, TimeStats& v) {
  CB_FROM(n), CB_FROM(min), CB_FROM(median), CB_FROM(mean), CB_FROM(p95), CB_FROM(max),
      CB_FROM(spread);
}
void to_json(json& j, const Scope& v) {
  j["kind"] = v.kind;
  if (!v.host.empty()) j["host"] = v.host;
  if (v.rank >= 0) j["rank"] = v.rank;
  if (v.gpu_index >= 0) j["gpu_index"] = v.gpu_index;
  if (!v.uuid.empty()) j["uuid"] = v.uuid;
  if (!v.pci_bus_id.empty()) j["pci_bus_id"] = v.pci_bus_id;
  if (!v.hosts.empty()) j["hosts"] = v.hosts;
}
void from_json(const json& j, Scope& v) {
  CB_FROM(kind), CB_FROM(host), CB_FROM(rank), CB_FROM(gpu_index), CB_FROM(uuid),
      CB_FROM(pci_bus_id), CB_FROM(hosts);
}
void to_json(json& j, const ErrorInfo& v) {
  CB_TO(library), CB_TO(code), CB_TO(call), CB_TO(where), CB_TO(host), CB_TO(rank);
}
void from_json(const json& j, ErrorInfo& v) {
  CB_FROM(library), CB_FROM(code), CB_FROM(call), CB_FROM(where), CB_FROM(host), CB_FROM(rank);
}
void to_json(json& j, const ResultRecord& v) {
  CB_TO(schema), CB_TO(run_id), CB_TO(benchmark), CB_TO(params), CB_TO(case_key), CB_TO(status),
      CB_TO(message), CB_TO(metrics), CB_TO(time), CB_TO(scope), CB_TO(combine), CB_TO(started_at),
      CB_TO(duration_s);
  if (v.error) j["error"] = *v.error;
  if (!v.extra.empty()) j["extra"] = v.extra;
}
void from_json(const json& j, ResultRecord& v) {
  v.schema = require_field<std::string>(j, "schema", "result record");
  if (v.schema != kResultSchema)
    throw InputError("result record: schema '" + v.schema + "' is not " + kResultSchema);
  v.benchmark = require_field<std::string>(j, "benchmark", "result record");
  v.status = require_field<std::string>(j, "status", "result record");
  if (v.status != "ok" && v.status != "failed" && v.status != "waived")
    throw InputError("result record: field 'status' is '" + v.status +
                     "', expected ok, failed or waived");
  CB_FROM(run_id), CB_FROM(params), CB_FROM(case_key), CB_FROM(message), CB_FROM(metrics),
      CB_FROM(time), CB_FROM(scope), CB_FROM(combine), CB_FROM(started_at), CB_FROM(duration_s),
      CB_FROM(extra);
  if (j.contains("error")) v.error = j.at("error").get<ErrorInfo>();
}
void to_json(json& j, const PlannedCase& v) {
  CB_TO(benchmark), CB_TO(params), CB_TO(level), CB_TO(case_keys);
}
void from_json(const json& j, PlannedCase& v) {
  CB_FROM(benchmark), CB_FROM(params), CB_FROM(level), CB_FROM(case_keys);
}
void to_json(json& j, const SpecChoice& v) {
  CB_TO(path), CB_TO(sha256), CB_TO(name), CB_TO(selected_by);
}
void from_json(const json& j, SpecChoice& v) {
  CB_FROM(path), CB_FROM(sha256), CB_FROM(name), CB_FROM(selected_by);
}
void to_json(json& j, const RunRecord& v) {
  CB_TO(schema), CB_TO(run_id), CB_TO(argv), CB_TO(version), CB_TO(suite), CB_TO(only), CB_TO(set),
      CB_TO(spec), CB_TO(world_size), CB_TO(hosts), CB_TO(started_at), CB_TO(finished_at),
      CB_TO(aborted), CB_TO(abort_reason), CB_TO(plan), CB_TO(env);
  j["exit_code"] = v.exit_code ? json(*v.exit_code) : json(nullptr);
}
void from_json(const json& j, RunRecord& v) {
  v.schema = require_field<std::string>(j, "schema", "run.json");
  if (v.schema != kRunSchema)
    throw InputError("run.json: schema '" + v.schema + "' is not " + kRunSchema);
  v.run_id = require_field<std::string>(j, "run_id", "run.json");
  CB_FROM(argv), CB_FROM(version), CB_FROM(suite), CB_FROM(only), CB_FROM(set), CB_FROM(spec),
      CB_FROM(world_size), CB_FROM(hosts), CB_FROM(started_at), CB_FROM(finished_at),
      CB_FROM(aborted), CB_FROM(abort_reason), CB_FROM(plan), CB_FROM(env);
  if (j.contains("exit_code") && !j.at("exit_code").is_null()) v.exit_code = j.at("exit_code");
}

#undef CB_TO
#undef CB_FROM

// ---------------------------------------------------------------------------------------------
// Files.

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    // nlohmann 3.11 reports "parse error at line L, column C: ..." (and number overflows)
    throw InputError(path + ": " + e.what());
  }
}

void write_file_atomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(tmp + ": open: " + std::strerror(errno));
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error(tmp + ": write: " + std::strerror(err));
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(tmp + ": fsync/close: " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": rename: " + std::strerror(err));
  }
}

namespace {

/// A SAX handler that fills a ResultRecord straight from the line, without the JSON document
/// that json::parse() would build first (reading was a quarter of `report` at 1,000 nodes,
/// docs/report.md "Scale"). It knows only well-formed records: on anything it does not expect
/// (a type it would have to convert, a missing required field, a parse error) it gives up and
/// the caller parses the line the ordinary way, which accepts or rejects it with its message.
class RecordSax {
 public:
  using string_t = json::string_t;
  explicit RecordSax(ResultRecord& r) : r_(r) {}

  /// True when the whole line went into the record and the record passes from_json's checks.
  bool finish() {
    if (!done_ || !has_schema_ || !has_benchmark_ || !has_status_) return false;
    if (r_.schema != kResultSchema) return false;
    if (r_.status != "ok" && r_.status != "failed" && r_.status != "waived") return false;
    if (has_error_) r_.error = error_.get<ErrorInfo>();
    return true;
  }

  bool null() {
    if (capture_) return forward([](auto& d) { return d.null(); });
    switch (ctx()) {
      case Ctx::kTop:
        // opt() skips nulls; the required fields are not optional.
        if (field_ == "schema" || field_ == "benchmark" || field_ == "status") return false;
        if (field_ == "error") has_error_ = true, error_ = nullptr;
        return true;
      case Ctx::kMetric:
        return key_ != "value";  // a non-finite metric value: from_json says so
      case Ctx::kTime:
      case Ctx::kScope:
        return true;
      default:
        return false;
    }
  }
  bool boolean(bool v) {
    if (capture_) return forward([&](auto& d) { return d.boolean(v); });
    if (ctx() == Ctx::kMetric && key_ == "higher_is_better")
      return metric().higher_is_better = v, true;
    return scalar(json(v));
  }
  bool number_integer(json::number_integer_t v) {
    if (capture_) return forward([&](auto& d) { return d.number_integer(v); });
    return number(static_cast<double>(v), json(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (capture_) return forward([&](auto& d) { return d.number_unsigned(v); });
    return number(static_cast<double>(v), json(v));
  }
  bool number_float(json::number_float_t v, const string_t& text) {
    if (capture_) return forward([&](auto& d) { return d.number_float(v, text); });
    return number(v, json(v));
  }
  bool string(string_t& v) {
    if (capture_) return forward([&](auto& d) { return d.string(v); });
    switch (ctx()) {
      case Ctx::kTop:
        if (auto* f = top_string()) {
          *f = std::move(v);
          return true;
        }
        return scalar(json(std::move(v)));
      case Ctx::kMetric:
        if (key_ == "name") return metric().name = std::move(v), true;
        if (key_ == "unit") return metric().unit = std::move(v), true;
        return key_ != "value" && key_ != "higher_is_better";
      case Ctx::kScope:
        if (key_ == "kind") return r_.scope.kind = std::move(v), true;
        if (key_ == "host") return r_.scope.host = std::move(v), true;
        if (key_ == "uuid") return r_.scope.uuid = std::move(v), true;
        if (key_ == "pci_bus_id") return r_.scope.pci_bus_id = std::move(v), true;
        return key_ != "rank" && key_ != "gpu_index" && key_ != "hosts";
      case Ctx::kHosts:
        r_.scope.hosts.push_back(std::move(v));
        return true;
      case Ctx::kTime:
        return !is_time_field();
      default:
        return false;
    }
  }
  bool binary(json::binary_t&) { return false; }
  bool start_object(std::size_t n) {
    if (capture_) return ++depth_, forward([&](auto& d) { return d.start_object(n); });
    if (stack_.empty()) return stack_.push_back(Ctx::kTop), true;
    switch (ctx()) {
      case Ctx::kTop:
        if (field_ == "time") return stack_.push_back(Ctx::kTime), true;
        if (field_ == "scope") return stack_.push_back(Ctx::kScope), true;
        if (field_ == "metrics") return false;
        return begin_capture(n, true);
      case Ctx::kMetrics:
        r_.metrics.emplace_back();
        has_value_ = false;
        return stack_.push_back(Ctx::kMetric), true;
      default:
        return unknown_key() && begin_capture(n, true);
    }
  }
  bool key(string_t& k) {
    if (capture_) return forward([&](auto& d) { return d.key(k); });
    if (ctx() == Ctx::kTop)
      field_ = std::move(k);
    else
      key_ = std::move(k);
    return true;
  }
  bool end_object() {
    if (capture_) return end_capture([](auto& d) { return d.end_object(); });
    Ctx c = ctx();
    stack_.pop_back();
    if (c == Ctx::kMetric && !has_value_) return false;  // from_json names the missing value
    if (c == Ctx::kTop) done_ = true;
    return true;
  }
  bool start_array(std::size_t n) {
    if (capture_) return ++depth_, forward([&](auto& d) { return d.start_array(n); });
    if (stack_.empty()) return false;
    switch (ctx()) {
      case Ctx::kTop:
        if (field_ == "metrics") {
          r_.metrics.clear();
          return stack_.push_back(Ctx::kMetrics), true;
        }
        if (field_ == "time" || field_ == "scope") return false;
        return begin_capture(n, false);
      case Ctx::kScope:
        if (key_ == "hosts") {
          r_.scope.hosts.clear();
          return stack_.push_back(Ctx::kHosts), true;
        }
        return unknown_key() && begin_capture(n, false);
      default:
        return unknown_key() && begin_capture(n, false);
    }
  }
  bool end_array() {
    if (capture_) return end_capture([](auto& d) { return d.end_array(); });
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  enum class Ctx { kTop, kMetrics, kMetric, kTime, kScope, kHosts };
  using Dom = nlohmann::detail::json_sax_dom_parser<json>;

  Ctx ctx() const { return stack_.back(); }
  Metric& metric() { return r_.metrics.back(); }
  bool is_time_field() const {
    return key_ == "n" || key_ == "min" || key_ == "median" || key_ == "mean" || key_ == "p95" ||
           key_ == "max" || key_ == "spread";
  }
  /// A key of a nested object that from_json does not read: its value is ignored.
  bool unknown_key() const {
    switch (ctx()) {
      case Ctx::kMetric:
        return key_ != "name" && key_ != "unit" && key_ != "value" && key_ != "higher_is_better";
      case Ctx::kTime:
        return !is_time_field();
      case Ctx::kScope:
        return key_ != "kind" && key_ != "host" && key_ != "rank" && key_ != "gpu_index" &&
               key_ != "uuid" && key_ != "pci_bus_id" && key_ != "hosts";
      default:
        return false;
    }
  }
  std::string* top_string() {
    if (field_ == "schema") return has_schema_ = true, &r_.schema;
    if (field_ == "run_id") return &r_.run_id;
    if (field_ == "benchmark") return has_benchmark_ = true, &r_.benchmark;
    if (field_ == "case_key") return &r_.case_key;
    if (field_ == "status") return has_status_ = true, &r_.status;
    if (field_ == "message") return &r_.message;
    if (field_ == "combine") return &r_.combine;
    if (field_ == "started_at") return &r_.started_at;
    return nullptr;
  }
  /// The json a generic top-level field goes into (params, extra, error; others are dropped).
  json& top_json() {
    if (field_ == "params") return r_.params;
    if (field_ == "extra") return r_.extra;
    if (field_ == "error") return has_error_ = true, error_;
    return ignored_;
  }
  /// A scalar where a string or number was not expected.
  bool scalar(json v) {
    if (ctx() == Ctx::kTop) {
      if (field_ == "metrics" || field_ == "time" || field_ == "scope" || field_ == "duration_s" ||
          top_string_field())
        return false;
      top_json() = std::move(v);
      return true;
    }
    return unknown_key();
  }
  bool top_string_field() const {
    return field_ == "schema" || field_ == "run_id" || field_ == "benchmark" ||
           field_ == "case_key" || field_ == "status" || field_ == "message" ||
           field_ == "combine" || field_ == "started_at";
  }
  bool number(double d, json v) {
    switch (ctx()) {
      case Ctx::kTop:
        if (field_ == "duration_s") return r_.duration_s = d, true;
        return scalar(std::move(v));
      case Ctx::kMetric:
        if (key_ == "value") return metric().value = d, has_value_ = true, true;
        return unknown_key();
      case Ctx::kTime: {
        TimeStats& t = r_.time;
        if (key_ == "n") return t.n = static_cast<int>(d), true;
        if (key_ == "min") return t.min = d, true;
        if (key_ == "median") return t.median = d, true;
        if (key_ == "mean") return t.mean = d, true;
        if (key_ == "p95") return t.p95 = d, true;
        if (key_ == "max") return t.max = d, true;
        if (key_ == "spread") return t.spread = d, true;
        return true;
      }
      case Ctx::kScope:
        if (key_ == "rank") return r_.scope.rank = static_cast<int>(d), true;
        if (key_ == "gpu_index") return r_.scope.gpu_index = static_cast<int>(d), true;
        return unknown_key();
      default:
        return false;
    }
  }
  bool begin_capture(std::size_t n, bool object) {
    json& target = ctx() == Ctx::kTop ? top_json() : ignored_;
    capture_.emplace(target, false);
    depth_ = 1;
    return object ? capture_->start_object(n) : capture_->start_array(n);
  }
  template <class F>
  bool forward(F f) {
    return f(*capture_);
  }
  template <class F>
  bool end_capture(F f) {
    bool ok = f(*capture_);
    if (--depth_ == 0) capture_.reset();
    return ok;
  }

  ResultRecord& r_;
  std::vector<Ctx> stack_;
  std::string field_, key_;
  bool done_ = false, has_schema_ = false, has_benchmark_ = false, has_status_ = false;
  bool has_error_ = false, has_value_ = false;
  json error_, ignored_;
  std::optional<Dom> capture_;
  int depth_ = 0;
};

/// One parsed batch of lines: the records, or the first line that failed and why.
struct ParsedBatch {
  std::vector<ResultRecord> records;
  size_t failed_at = SIZE_MAX;  ///< index into the batch's lines
  std::string error;
};

void parse_lines(const std::vector<std::string>& lines, size_t begin, size_t end,
                 ParsedBatch& out) {
  out.records.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) {
    const std::string& line = lines[i];
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      ResultRecord r;
      RecordSax sax(r);
      if (json::sax_parse(line, &sax) && sax.finish())
        out.records.push_back(std::move(r));
      else  // the ordinary way: it accepts what the fast path did not know, or says what is wrong
        out.records.push_back(json::parse(line).get<ResultRecord>());
    } catch (const std::exception& e) {
      out.failed_at = i, out.error = e.what();
      return;
    }
  }
}

}  // namespace

RecordsFile read_records(const std::string& path) {
  RecordsFile out;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  // Line by line, in batches that the cores parse in parallel: a 1,000-node run holds 790 MB
  // of records (docs/report.md "Scale"), never held as one string.
  constexpr size_t kBatchBytes = 16 << 20;
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  std::vector<std::string> lines;
  int first_line_no = 1;  // line number of lines[0]
  bool done = false;
  while (!done) {
    lines.clear();
    size_t bytes = 0;
    bool last_unterminated = false;
    std::string line;
    while (bytes < kBatchBytes && std::getline(in, line)) {
      last_unterminated = in.eof();  // getline hit the end before a newline
      bytes += line.size() + 1;
      lines.push_back(std::move(line));
      line = std::string();
    }
    if (lines.empty()) break;
    done = in.eof();
    std::vector<ParsedBatch> parts(std::min(threads, lines.size()));
    std::vector<std::thread> workers;
    const size_t per = (lines.size() + parts.size() - 1) / parts.size();
    for (size_t t = 1; t < parts.size(); ++t)
      workers.emplace_back(parse_lines, std::cref(lines), std::min(lines.size(), t * per),
                           std::min(lines.size(), (t + 1) * per), std::ref(parts[t]));
    parse_lines(lines, 0, std::min(lines.size(), per), parts[0]);
    for (auto& w : workers) w.join();
    for (auto& part : parts) {
      for (auto& r : part.records) out.records.push_back(std::move(r));
      if (part.failed_at == SIZE_MAX) continue;
      std::string where = path + ":" + std::to_string(first_line_no + part.failed_at);
      if (done && last_unterminated && part.failed_at + 1 == lines.size()) {
        out.warnings.push_back(where + ": truncated last record ignored (" + part.error + ")");
        break;
      }
      throw InputError(where + ": " + part.error);
    }
    first_line_no += static_cast<int>(lines.size());
  }
  if (in.bad()) throw InputError(path + ": read error (" + std::strerror(errno) + ")");
  return out;
}

RunDir read_run_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw InputError(dir + ": results directory does not exist");
  if (!S_ISDIR(st.st_mode)) throw InputError(dir + ": not a directory");
  RunDir rd;
  rd.dir = dir;
  std::string run_path = dir + "/run.json";
  if (::stat(run_path.c_str(), &st) != 0)
    throw InputError(dir + ": no run.json here; is this a clusterbench results directory?");
  try {
    rd.run = read_json_file(run_path).get<RunRecord>();
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(run_path + ": " + e.what());
  }
  std::string rec_path = dir + "/records.jsonl";
  if (::stat(rec_path.c_str(), &st) == 0) {
    rd.records = read_records(rec_path);
    // A resumed run (`run --resume`) appends a case's new record after its failed one: the
    // last record of a case key is the case's.
    auto& recs = rd.records.records;
    auto key_of = [](const ResultRecord& r) {
      return r.case_key.empty() ? make_case_key(r.benchmark, r.params, r.scope) : r.case_key;
    };
    // Hashed views of the keys: 720,000 records at 1,000 nodes (docs/report.md "Scale").
    std::vector<std::string> made(recs.size());
    std::vector<std::string_view> keys(recs.size());
    for (size_t i = 0; i < recs.size(); ++i)
      keys[i] = recs[i].case_key.empty() ? std::string_view(made[i] = key_of(recs[i]))
                                         : std::string_view(recs[i].case_key);
    std::unordered_map<std::string_view, size_t> last;
    last.reserve(recs.size());
    for (size_t i = 0; i < recs.size(); ++i) last[keys[i]] = i;
    if (last.size() < recs.size()) {
      std::vector<ResultRecord> kept;
      for (size_t i = 0; i < recs.size(); ++i)
        if (last[keys[i]] == i) kept.push_back(std::move(recs[i]));
      rd.records.warnings.push_back(rec_path + ": " + std::to_string(recs.size() - kept.size()) +
                                    " record(s) superseded by a later record of the same case "
                                    "(a resumed run); the last one counts");
      recs = std::move(kept);
    }
  } else if (rd.run.plan.empty()) {
    throw InputError(dir + ": empty results directory (no records.jsonl and an empty plan)");
  } else {
    rd.records.warnings.push_back(rec_path + ": missing; no case finished");
  }
  return rd;
}

std::string sha256_hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::ostringstream os;
  for (unsigned i = 0; i < len; ++i)
    os << std::hex << std::setw(2) << std::setfill('0') << int(md[i]);
  return os.str();
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  return sha256_hex(ss.str());
}

std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace clusterbench
