// Record types <-> JSON, statistics, and the file formats of a run directory (docs/records.md).
#include "records/records.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <future>
#include <iomanip>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "records/utf8.hpp"

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

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

double relative_spread(std::vector<double> values) {
  if (values.size() < 2) return 0;
  std::sort(values.begin(), values.end());
  const double med = median_of(values);
  if (med == 0) return 0;
  return std::fabs((nearest_rank(values, 0.75) - nearest_rank(values, 0.25)) / med);
}

std::string scope_item(const Scope& s) {
  if (s.kind == ScopeKind::gpu) {
    std::string item = s.host + "/gpu" + std::to_string(s.gpu_index);
    if (!s.uuid.empty()) item += "[" + s.uuid + "]";
    return item;
  }
  if (s.kind == ScopeKind::link) {
    if (s.hosts.size() == 2) return s.hosts[0] + "<->" + s.hosts[1];
    return "link";
  }
  if (s.kind == ScopeKind::cluster) return "cluster";
  if (s.kind == ScopeKind::rank)
    return s.host + "/rank" + std::to_string(s.rank);  // a CPU rank (burn-in)
  return s.host;
}

std::string make_case_key(const std::string& benchmark, const json& params, const Scope& s) {
  // nlohmann's object type is a std::map: dump() already sorts keys, so this is canonical. A
  // param's bytes that are not UTF-8 (a path given on the command line) become U+FFFD.
  return benchmark + "|" + dump_json(params) + "|" + valid_utf8(scope_item(s));
}

// ---------------------------------------------------------------------------------------------
// JSON conversion. get_to with defaults keeps older files readable when fields are added.

namespace {
/// `key` as a JSON pointer token (RFC 6901: "~" is "~0", "/" is "~1").
std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

/// Runs `read`, adding "/token" (a key or an index) to the front of the pointer of the
/// FieldError it throws; a conversion error of the JSON library becomes a FieldError there.
template <class Read>
void at_field(const std::string& token, Read read) {
  try {
    read();
  } catch (const FieldError& e) {
    throw FieldError("/" + token + e.pointer(), e.detail());
  } catch (const json::exception& e) {
    throw FieldError("/" + token, error_text(e.what()));
  }
}

template <typename T>
void read_value(const json& j, T& out) {
  j.get_to(out);
}
/// Whole numbers must fit: the JSON library would cast 2^40 to an int silently.
template <typename T>
requires std::is_integral_v<T> &&(!std::is_same_v<T, bool>)void read_value(const json& j, T& out) {
  const double d = j.is_number_float() ? j.get<double>() : 0.5;
  const bool fits = j.is_number_unsigned()  ? std::in_range<T>(j.get<uint64_t>())
                    : j.is_number_integer() ? std::in_range<T>(j.get<int64_t>())
                                            : d == std::trunc(d) && std::fabs(d) < 9e15 &&
                                                  std::in_range<T>(static_cast<int64_t>(d));
  if (!fits)
    throw FieldError("", "is " + j.dump() + ", expected a whole number from " +
                             std::to_string(std::numeric_limits<T>::min()) + " to " +
                             std::to_string(std::numeric_limits<T>::max()));
  out = j.is_number_unsigned() ? static_cast<T>(j.get<uint64_t>())
        : j.is_number_float()  ? static_cast<T>(d)
                               : static_cast<T>(j.get<int64_t>());
}
/// Arrays element by element, so that an error names its index.
template <typename T>
void read_value(const json& j, std::vector<T>& out) {
  if (!j.is_array()) throw FieldError("", std::string("must be an array, not ") + j.type_name());
  std::vector<T> v(j.size());
  for (size_t i = 0; i < j.size(); ++i)
    at_field(std::to_string(i), [&] { read_value(j[i], v[i]); });
  out = std::move(v);
}

/// Reads field `key` of object `j` into `out` when present and not null.
template <typename T>
void opt(const json& j, const char* key, T& out) {
  if (!j.is_object()) throw FieldError("", std::string("must be an object, not ") + j.type_name());
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) at_field(pointer_token(key), [&] { read_value(*it, out); });
}
/// An unknown value: null reads as nullopt, a number as itself.
template <typename T>
void opt(const json& j, const char* key, std::optional<T>& out) {
  if (!j.is_object()) throw FieldError("", std::string("must be an object, not ") + j.type_name());
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    out.reset();
    return;
  }
  T v{};
  at_field(pointer_token(key), [&] { read_value(*it, v); });
  out = std::move(v);
}
template <typename T>
void put(json& j, const char* key, const T& v) {
  j[key] = v;
}
template <typename T>
void put(json& j, const char* key, const std::optional<T>& v) {
  j[key] = v ? json(*v) : json(nullptr);
}
/// An object's `unknown` map, written only when something is unknown.
/// A text field it names that is empty is written as null too (unknown, not an empty value).
void put_unknown(json& j, const UnknownFields& v) {
  if (v.empty()) return;
  j["unknown"] = v;
  for (const auto& [field, why] : v) {
    auto it = j.find(field);
    if (it != j.end() && it->is_string() && it->get_ref<const std::string&>().empty())
      *it = nullptr;
  }
}
}  // namespace

#define CB_TO(field) put(j, #field, v.field)
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
  put_unknown(j, v.unknown);
}
void from_json(const json& j, MemoryInfo& v) {
  CB_FROM(installed_gib), CB_FROM(usable_gib), CB_FROM(source), CB_FROM(unknown);
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
  put_unknown(j, v.unknown);
}
void from_json(const json& j, GpuInfo& v) {
  CB_FROM(index), CB_FROM(name), CB_FROM(uuid), CB_FROM(serial), CB_FROM(pci_bus_id),
      CB_FROM(vbios), CB_FROM(driver), CB_FROM(pci_device_id), CB_FROM(memory_gib), CB_FROM(pcie),
      CB_FROM(nvlink_links_up), CB_FROM(ecc_mode), CB_FROM(numa_node), CB_FROM(source),
      CB_FROM(board_part_number), CB_FROM(persistence_mode), CB_FROM(mig_mode), CB_FROM(unknown);
}
void to_json(json& j, const NicInfo& v) {
  CB_TO(name), CB_TO(kind), CB_TO(link_layer), CB_TO(state), CB_TO(phys_state), CB_TO(rate_gbps),
      CB_TO(firmware), CB_TO(mtu), CB_TO(netdev), CB_TO(pci_bus_id), CB_TO(numa_node);
  j["virtual"] = v.is_virtual;
  put_unknown(j, v.unknown);
}
void from_json(const json& j, NicInfo& v) {
  CB_FROM(name), CB_FROM(kind), CB_FROM(link_layer), CB_FROM(state), CB_FROM(phys_state),
      CB_FROM(rate_gbps), CB_FROM(firmware), CB_FROM(mtu), CB_FROM(netdev), CB_FROM(pci_bus_id),
      CB_FROM(numa_node), CB_FROM(unknown);
  opt(j, "virtual", v.is_virtual);
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
std::string software_text(const SoftwareComponent& c) {
  if (c.state.empty()) return "unknown";
  return c.version ? *c.version : c.state;
}

std::vector<std::pair<std::string, std::string>> software_fields(const SoftwareStack& s) {
  const bool probed = !s.pytorch.state.empty();
  return {{"cudnn", software_text(s.cudnn)},
          {"nccl library", software_text(s.nccl)},
          {"pytorch", software_text(s.pytorch)},
          {"pytorch cuda", s.pytorch_cuda ? *s.pytorch_cuda
                           : probed       ? "none"
                                          : "unknown"},
          {"container toolkit", software_text(s.container_toolkit)},
          {"container runtime", software_text(s.container_runtime)},
          {"kubernetes", software_text(s.kubernetes)},
          {"device plugin", software_text(s.device_plugin)},
          {"gpu feature discovery", software_text(s.gpu_feature_discovery)},
          {"dcgm exporter", software_text(s.dcgm_exporter)}};
}

void to_json(json& j, const SoftwareComponent& v) { CB_TO(state), CB_TO(version), CB_TO(detail); }
void from_json(const json& j, SoftwareComponent& v) {
  CB_FROM(state), CB_FROM(version), CB_FROM(detail);
}
void to_json(json& j, const SoftwareStack& v) {
  CB_TO(cudnn), CB_TO(nccl), CB_TO(pytorch), CB_TO(pytorch_cuda), CB_TO(container_toolkit),
      CB_TO(container_runtime), CB_TO(kubernetes), CB_TO(device_plugin),
      CB_TO(gpu_feature_discovery), CB_TO(dcgm_exporter), CB_TO(nccl_env);
}
void from_json(const json& j, SoftwareStack& v) {
  CB_FROM(cudnn), CB_FROM(nccl), CB_FROM(pytorch), CB_FROM(pytorch_cuda),
      CB_FROM(container_toolkit), CB_FROM(container_runtime), CB_FROM(kubernetes),
      CB_FROM(device_plugin), CB_FROM(gpu_feature_discovery), CB_FROM(dcgm_exporter),
      CB_FROM(nccl_env);
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
      CB_TO(tuning), CB_TO(dmi), CB_TO(gpudirect), CB_TO(software), CB_TO(environment),
      CB_TO(warnings);
  if (!v.health.empty()) CB_TO(health);
}
namespace {
constexpr const char* kV1NotRead = "not read (0 in a clusterbench.env/1 record)";

/// An env/1 record wrote 0 for what it could not read (DESIGN.md "Unknown is not zero"): a GPU
/// seen on the PCI bus only (no memory, no NVLink from NVML), installed memory with no source,
/// a NIC rate of -1 or unreadable. Those zeros are made unknown, so that no row judges them.
void env_v1_unknowns(EnvRecord& v) {
  for (auto& g : v.gpus) {
    if (g.source == "pci") {
      std::string why = "not read: GPU seen on the PCI bus only (NVML: " + v.gpu_status.nvml + ")";
      set_unknown(g.memory_gib, g.unknown, "memory_gib", why);
      set_unknown(g.nvlink_links_up, g.unknown, "nvlink_links_up", why);
    } else if (g.memory_gib == 0.0) {
      set_unknown(g.memory_gib, g.unknown, "memory_gib", kV1NotRead);
    }
  }
  MemoryInfo& m = v.memory;
  if (m.installed_gib == 0.0)
    set_unknown(m.installed_gib, m.unknown, "installed_gib", "not read: no source worked");
  if (m.usable_gib == 0.0) set_unknown(m.usable_gib, m.unknown, "usable_gib", kV1NotRead);
  for (auto& n : v.nics)
    if (n.rate_gbps == 0.0) set_unknown(n.rate_gbps, n.unknown, "rate_gbps", kV1NotRead);
}
}  // namespace

namespace {

/// A host name holds no control character (a newline would add a line to failing-hosts.txt and
/// break report.md's tables): throws std::runtime_error naming `field` otherwise.
void require_host_name(const std::string& name, const char* field) {
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f)
      throw std::runtime_error(std::string(field) + " " + valid_utf8(json(name).dump()) +
                               " holds a control character; a host name cannot");
}

}  // namespace

void check_host_names(const Scope& s) {
  require_host_name(s.host, "scope host");
  for (const auto& h : s.hosts) require_host_name(h, "scope hosts");
}

void from_json(const json& j, EnvRecord& v) {
  CB_FROM(schema), CB_FROM(host), CB_FROM(collected_at), CB_FROM(fs_root), CB_FROM(cpu),
      CB_FROM(memory), CB_FROM(gpus), CB_FROM(gpu_status), CB_FROM(nics), CB_FROM(block_devices),
      CB_FROM(versions), CB_FROM(tuning), CB_FROM(dmi), CB_FROM(gpudirect), CB_FROM(software),
      CB_FROM(environment), CB_FROM(warnings);
  CB_FROM(health);
  require_host_name(v.host, "env host");
  if (v.schema == kEnvSchemaV1) env_v1_unknowns(v);
}
void to_json(json& j, const Metric& v) {
  CB_TO(name), CB_TO(value), CB_TO(unit), CB_TO(higher_is_better);
  if (!v.reps.empty()) {
    CB_TO(reps);
    j["spread"] = relative_spread(v.reps);  // for readers; recomputed from reps when read
  }
  if (v.resolution > 0) CB_TO(resolution);
  if (v.work > 0) CB_TO(work);
}
void from_json(const json& j, Metric& v) {
  CB_FROM(name), CB_FROM(unit), CB_FROM(higher_is_better), CB_FROM(reps), CB_FROM(resolution),
      CB_FROM(work);
  // A non-finite value is written as null by the JSON library: never read it as 0.
  if (!j.contains("value") || !j.at("value").is_number())
    throw FieldError("/value", "of metric '" + v.name + "' is not a finite number");
  v.value = j.at("value").get<double>();
}
void to_json(json& j, const TimeStats& v) {
  CB_TO(n), CB_TO(min), CB_TO(median), CB_TO(mean), CB_TO(p95), CB_TO(max), CB_TO(spread);
}
void from_json(const json& j, TimeStats& v) {
  CB_FROM(n), CB_FROM(min), CB_FROM(median), CB_FROM(mean), CB_FROM(p95), CB_FROM(max),
      CB_FROM(spread);
}
const char* scope_kind_name(ScopeKind k) {
  switch (k) {
    case ScopeKind::gpu:
      return "gpu";
    case ScopeKind::node:
      return "node";
    case ScopeKind::rank:
      return "rank";
    case ScopeKind::link:
      return "link";
    case ScopeKind::cluster:
      return "cluster";
  }
  return "?";
}

bool parse_scope_kind(std::string_view text, ScopeKind& out) {
  for (ScopeKind k :
       {ScopeKind::gpu, ScopeKind::node, ScopeKind::rank, ScopeKind::link, ScopeKind::cluster})
    if (text == scope_kind_name(k)) {
      out = k;
      return true;
    }
  return false;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::failed:
      return "failed";
    case Status::waived:
      return "waived";
  }
  return "?";
}

bool parse_status(std::string_view text, Status& out) {
  for (Status s : {Status::ok, Status::failed, Status::waived})
    if (text == status_name(s)) {
      out = s;
      return true;
    }
  return false;
}

void to_json(json& j, const ScopeKind& v) { j = scope_kind_name(v); }
void from_json(const json& j, ScopeKind& v) {
  const std::string text = j.is_string() ? j.get<std::string>() : j.dump();
  if (!j.is_string() || !parse_scope_kind(text, v))
    throw FieldError(
        "", "is " + text + ", expected \"gpu\", \"node\", \"rank\", \"link\" or \"cluster\"");
}
void to_json(json& j, const Status& v) { j = status_name(v); }
void from_json(const json& j, Status& v) {
  const std::string text = j.is_string() ? j.get<std::string>() : j.dump();
  if (!j.is_string() || !parse_status(text, v))
    throw FieldError("", "is '" + text + "', expected ok, failed or waived");
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
  v.status = require_field<Status>(j, "status", "result record");
  CB_FROM(run_id), CB_FROM(params), CB_FROM(case_key), CB_FROM(message), CB_FROM(metrics),
      CB_FROM(time), CB_FROM(scope), CB_FROM(combine), CB_FROM(started_at), CB_FROM(duration_s),
      CB_FROM(extra);
  if (j.contains("error")) at_field("error", [&] { v.error = j.at("error").get<ErrorInfo>(); });
}
void to_json(json& j, const PlannedCase& v) {
  CB_TO(benchmark), CB_TO(params), CB_TO(level), CB_TO(case_keys);
}
namespace {
/// Throws FieldError unless the GPU index of a case key's item ("host/gpu3[uuid]") fits an int:
/// the reports parse it back (reports/rows.cpp parse_item).
void check_gpu_index(const std::string& case_key) {
  const size_t bar = case_key.rfind('|');
  const size_t g = case_key.rfind("/gpu");
  if (g == std::string::npos || (bar != std::string::npos && g < bar)) return;
  size_t end = g + 4;
  while (end < case_key.size() && std::isdigit(static_cast<unsigned char>(case_key[end]))) ++end;
  if (end == g + 4) return;
  int index = 0;
  const auto [ptr, ec] = std::from_chars(case_key.data() + g + 4, case_key.data() + end, index);
  if (ec != std::errc())
    throw FieldError("", "'" + case_key + "' has a GPU index out of range (0 to " +
                             std::to_string(INT_MAX) + ")");
}
}  // namespace

void from_json(const json& j, PlannedCase& v) {
  CB_FROM(benchmark), CB_FROM(params), CB_FROM(level), CB_FROM(case_keys);
  for (size_t i = 0; i < v.case_keys.size(); ++i)
    at_field("case_keys/" + std::to_string(i), [&] { check_gpu_index(v.case_keys[i]); });
}
void to_json(json& j, const SpecChoice& v) {
  CB_TO(path), CB_TO(sha256), CB_TO(name), CB_TO(selected_by);
}
void from_json(const json& j, SpecChoice& v) {
  CB_FROM(path), CB_FROM(sha256), CB_FROM(name), CB_FROM(selected_by);
}
void to_json(json& j, const NotRunCase& v) { CB_TO(benchmark), CB_TO(params); }
void from_json(const json& j, NotRunCase& v) { CB_FROM(benchmark), CB_FROM(params); }
void to_json(json& j, const TimeLimitStop& v) {
  CB_TO(seconds), CB_TO(stopped_after_s), CB_TO(not_run);
}
void from_json(const json& j, TimeLimitStop& v) {
  CB_FROM(seconds), CB_FROM(stopped_after_s), CB_FROM(not_run);
}
void to_json(json& j, const RunRecord& v) {
  CB_TO(schema), CB_TO(run_id), CB_TO(argv), CB_TO(version), CB_TO(suite), CB_TO(only), CB_TO(set),
      CB_TO(spec), CB_TO(world_size), CB_TO(hosts), CB_TO(started_at), CB_TO(finished_at),
      CB_TO(aborted), CB_TO(abort_reason), CB_TO(plan), CB_TO(env);
  j["exit_code"] = v.exit_code ? json(*v.exit_code) : json(nullptr);
  if (v.time_limit) j["time_limit"] = *v.time_limit;
  if (v.rounds > 1) j["rounds"] = v.rounds;
}
void from_json(const json& j, RunRecord& v) {
  v.schema = require_field<std::string>(j, "schema", "run.json");
  if (v.schema != kRunSchema)
    throw InputError("run.json: schema '" + v.schema + "' is not " + kRunSchema);
  v.run_id = require_field<std::string>(j, "run_id", "run.json");
  CB_FROM(argv), CB_FROM(version), CB_FROM(suite), CB_FROM(only), CB_FROM(set), CB_FROM(spec),
      CB_FROM(world_size), CB_FROM(hosts), CB_FROM(started_at), CB_FROM(finished_at),
      CB_FROM(aborted), CB_FROM(abort_reason), CB_FROM(plan), CB_FROM(env);
  opt(j, "exit_code", v.exit_code);
  if (j.contains("time_limit") && !j.at("time_limit").is_null())
    v.time_limit = require_field<TimeLimitStop>(j, "time_limit", "run.json");
  if (j.contains("rounds")) {
    const json& r = j.at("rounds");
    if (!r.is_number_integer() || r.get<long long>() < 1 || r.get<long long>() > kMaxRounds)
      throw InputError(
          "run.json: field 'rounds': " + r.dump(-1, ' ', false, json::error_handler_t::replace) +
          " is not a whole number from 1 to " + std::to_string(kMaxRounds));
    v.rounds = r.get<int>();
  }
}

#undef CB_TO
#undef CB_FROM

// ---------------------------------------------------------------------------------------------
// Files.

FieldError::FieldError(std::string pointer, std::string detail)
    : InputError("field '" + pointer + "' " + detail),
      pointer_(std::move(pointer)),
      detail_(std::move(detail)) {}

namespace {

/// Counts the nesting of objects and arrays in JSON text fed to it byte by byte, outside
/// strings, and throws InputError past kMaxJsonDepth, before the JSON library builds anything.
class DepthGuard {
 public:
  DepthGuard(const std::string& where, int first_line) : where_(where), line_(first_line) {}
  void feed(char c) {
    if (done_) return;
    if (in_string_) {
      if (escape_)
        escape_ = false;
      else if (c == '\\')
        escape_ = true;
      else if (c == '"')
        in_string_ = false;
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      if (++depth_ > kMaxJsonDepth) fail();
    } else if ((c == '}' || c == ']') && depth_ > 0) {
      done_ = --depth_ == 0;  // the first value ends here
    } else if (c == '\n' && line_ > 0) {
      ++line_;
    }
  }

 private:
  [[noreturn]] void fail() const {
    std::string at = where_.empty() ? "" : where_ + ": ";
    if (line_ > 0) at += "line " + std::to_string(line_) + ": ";
    throw InputError(at + "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  const std::string& where_;
  int line_;
  int depth_ = 0;
  bool in_string_ = false, escape_ = false, done_ = false;
};

/// An input iterator over a stream that feeds each byte it passes to a DepthGuard, so that a
/// streamed parse (run.json without its plan) is guarded without holding the text.
struct GuardedIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = char;
  std::istreambuf_iterator<char> it;
  DepthGuard* guard = nullptr;
  char operator*() const { return *it; }
  GuardedIterator& operator++() {
    guard->feed(*it);
    ++it;
    return *this;
  }
  bool operator==(const GuardedIterator& o) const { return it == o.it; }
  bool operator!=(const GuardedIterator& o) const { return it != o.it; }
};

std::string by(const std::string& referenced_by) {
  return referenced_by.empty() ? "" : " (" + referenced_by + ")";
}

}  // namespace

void require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode)) throw InputError(path + ": not a regular file");
}

std::string read_regular_file(const std::string& path, size_t max_bytes,
                              const std::string& referenced_by) {
  auto error = [&](const std::string& why) {
    return InputError(path + ": " + why + by(referenced_by));
  };
  auto errno_text = [] { return std::string(" (") + std::strerror(errno) + ")"; };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw error("cannot open" + errno_text());
  if (!S_ISREG(st.st_mode)) throw error("not a regular file");
  // O_NONBLOCK: the file may have become a FIFO since the stat; opening that must not block.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw error("cannot open" + errno_text());
  std::string out;
  try {
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw error("not a regular file");
    const std::string too_large = "larger than " + std::to_string(max_bytes) + " bytes";
    if (static_cast<uint64_t>(st.st_size) > max_bytes) throw error(too_large);
    // Read at most limit + 1 bytes: a file that grows past the limit while read is refused too.
    const size_t limit = std::min(max_bytes, SIZE_MAX - 1);
    out.resize(std::min(static_cast<size_t>(st.st_size), limit) + 1);
    size_t got = 0;
    for (;;) {
      if (got == out.size()) {
        if (got > limit) throw error(too_large);
        out.resize(out.size() > limit / 2 ? limit + 1 : out.size() * 2 + 1);
      }
      ssize_t n = ::read(fd, out.data() + got, out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw error("read error" + errno_text());
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    out.resize(got);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return out;
}

void check_json_depth(std::string_view text, const std::string& where, int first_line) {
  DepthGuard guard(where, first_line);
  for (char c : text) guard.feed(c);
}

namespace {

/// Where nlohmann's "number overflow parsing 'TOKEN'" (out_of_range.406, which names no place)
/// stands in `text`: "line L, column C: number TOKEN is out of range (beyond a double)" for the
/// first number outside a string spelled TOKEN; "" when `what` is not that error or it is not
/// found.
std::string overflow_error(std::string_view text, std::string_view what, int first_line) {
  static constexpr std::string_view kHead = "number overflow parsing '";
  const size_t a = what.find(kHead), b = what.rfind('\'');
  if (a == std::string_view::npos || b <= a + kHead.size()) return "";
  const std::string_view token = what.substr(a + kHead.size(), b - a - kHead.size());
  auto in_number = [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.' ||
           c == 'e' || c == 'E';
  };
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = i;
      while (end < text.size() && in_number(text[end])) ++end;
      if (text.substr(i, end - i) == token)
        return text_position(text, i, first_line) + ": number " + std::string(token) +
               " is out of range (beyond a double)";
      i = end - 1;
    }
  }
  return "";
}

}  // namespace

json parse_json_text(std::string_view text, const std::string& where, int first_line) {
  check_json_depth(text, where, first_line);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    // Bytes that are not UTF-8 are named by line, column and value, not quoted raw.
    std::string what = utf8_error(text, first_line);
    // nlohmann 3.11 says "parse error at line L, column C: ..."; a number overflow names no place
    if (what.empty()) what = overflow_error(text, e.what(), first_line);
    if (what.empty()) what = error_text(e.what());
    throw InputError(where.empty() ? what : where + ": " + what);
  }
}

json read_json_file(const std::string& path, size_t max_bytes, const std::string& referenced_by) {
  const std::string text = read_regular_file(path, max_bytes, referenced_by);
  try {
    return parse_json_text(text, path);
  } catch (const InputError& e) {
    if (referenced_by.empty()) throw;
    throw InputError(e.what() + by(referenced_by));
  }
}

namespace {
/// Writes `text` to `tmp` and fsyncs it; on failure unlinks it and throws naming it.
void write_synced(const std::string& tmp, const std::string& text) {
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
}
}  // namespace

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string suffix = ".tmp." + std::to_string(getpid());
  size_t written = 0;
  try {
    for (; written < files.size(); ++written)
      write_synced(files[written].first + suffix, files[written].second);
  } catch (...) {
    for (size_t i = 0; i < written; ++i) ::unlink((files[i].first + suffix).c_str());
    throw;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string tmp = files[i].first + suffix;
    if (::rename(tmp.c_str(), files[i].first.c_str()) != 0) {
      int err = errno;
      for (size_t j = i; j < files.size(); ++j) ::unlink((files[j].first + suffix).c_str());
      throw std::runtime_error(files[i].first + ": rename: " + std::strerror(err));
    }
  }
}

void write_file_atomic(const std::string& path, const std::string& text) {
  write_files_atomic({{path, text}});
}

namespace {

namespace od = simdjson::ondemand;

/// Copies a JSON string into `out`; false when the value is not a string (null included).
bool get_string(od::value v, std::string& out) {
  std::string_view s;
  if (v.get_string().get(s)) return false;
  out.assign(s);
  return true;
}

/// Reads a JSON number as a double; false for anything else, and for a negative zero (nlohmann
/// reads the integer -0 as 0, simdjson as -0.0: the ordinary path decides).
bool get_double(od::value v, double& out) {
  return !v.get_double().get(out) && !(out == 0 && std::signbit(out));
}

/// Reads a JSON integer that fits an int; false otherwise (a float, a string, out of range).
bool get_int(od::value v, int& out) {
  int64_t n = 0;
  if (v.get_int64().get(n) || n < INT_MIN || n > INT_MAX) return false;
  out = static_cast<int>(n);
  return true;
}

/// Reads a JSON array of numbers; false for anything else (the ordinary path decides).
bool read_doubles(od::value v, std::vector<double>& out) {
  od::array a;
  if (v.get_array().get(a)) return false;
  out.clear();
  for (auto e : a) {
    od::value x;
    double d = 0;
    if (std::move(e).get(x) || !get_double(x, d)) return false;
    out.push_back(d);
  }
  return true;
}

/// Calls `each(key, value)` for every field of an object, in order; false when `v` is not an
/// object, a field does not parse, or `each` returns false.
template <class Each>
bool each_field(od::object o, Each each) {
  for (auto f : o) {
    od::field field;
    std::string_view key;
    if (std::move(f).get(field) || field.unescaped_key().get(key)) return false;
    if (!each(key, field.value())) return false;
  }
  return true;
}
template <class Each>
bool each_field(od::value v, Each each) {
  od::object o;
  return !v.get_object().get(o) && each_field(o, each);
}

/// The JSON text of an object value; false when `v` is not an object.
bool raw_object(od::value v, std::string_view& text) {
  od::object o;
  return !v.get_object().get(o) && !o.raw_json().get(text);
}

/// An object value as nlohmann json, from its raw text; consecutive records of one case carry the
/// same params, so the last parse is kept and copied when the text repeats.
struct RawObjectCache {
  std::string raw;
  json value;
  bool get(od::value v, json& out) {
    std::string_view text;
    if (!raw_object(v, text)) return false;
    if (text != raw) {
      value = parse_json_text(text, "", 0);
      raw.assign(text);
    }
    out = value;
    return true;
  }
};

bool read_metric(od::value v, Metric& m) {
  bool has_value = false;
  return each_field(v,
                    [&](std::string_view key, od::value x) {
                      if (key == "name") return get_string(x, m.name);
                      if (key == "unit") return get_string(x, m.unit);
                      // A non-finite value is written as null: the ordinary path says so.
                      if (key == "value") return has_value = get_double(x, m.value);
                      if (key == "higher_is_better") return !x.get_bool().get(m.higher_is_better);
                      if (key == "reps") return read_doubles(x, m.reps);
                      if (key == "resolution") return get_double(x, m.resolution);
                      if (key == "work") return get_double(x, m.work);
                      double ignored;  // derived from reps (to_json)
                      if (key == "spread") return get_double(x, ignored);
                      return false;  // skipped values are not validated: the ordinary path
                    }) &&
         has_value;
}

bool read_time(od::value v, TimeStats& t) {
  t = TimeStats{};  // a repeated "time" replaces the earlier one, as in from_json
  return each_field(v, [&](std::string_view key, od::value x) {
    double* d = key == "min"      ? &t.min
                : key == "median" ? &t.median
                : key == "mean"   ? &t.mean
                : key == "p95"    ? &t.p95
                : key == "max"    ? &t.max
                : key == "spread" ? &t.spread
                                  : nullptr;
    if (d) return get_double(x, *d);
    if (key == "n") return get_int(x, t.n);
    return false;  // an unknown key's value would be skipped unvalidated: the ordinary path
  });
}

bool read_scope(od::value v, Scope& s) {
  s = Scope{};  // a repeated "scope" replaces the earlier one, as in from_json
  return each_field(v, [&](std::string_view key, od::value x) {
    if (key == "kind") {
      std::string kind;
      return get_string(x, kind) && parse_scope_kind(kind, s.kind);
    }
    std::string* str = key == "host"         ? &s.host
                       : key == "uuid"       ? &s.uuid
                       : key == "pci_bus_id" ? &s.pci_bus_id
                                             : nullptr;
    if (str) return get_string(x, *str);
    if (key == "rank") return get_int(x, s.rank);
    if (key == "gpu_index") return get_int(x, s.gpu_index);
    if (key == "hosts") {
      od::array a;
      if (x.get_array().get(a)) return false;
      s.hosts.clear();
      for (auto h : a) {
        od::value hv;
        if (std::move(h).get(hv) || !get_string(hv, s.hosts.emplace_back())) return false;
      }
      return true;
    }
    return false;  // an unknown key's value would be skipped unvalidated: the ordinary path
  });
}

/// The fast path of read_records: simdjson's On-Demand API fills a ResultRecord straight from
/// the line, with no JSON document built first (parsing was most of `report` at 1,000 nodes,
/// docs/report.md "Scale"). It knows only well-formed records: on anything it does not expect (a
/// null, a type to convert, a missing required field, a key it does not read, whose value On-Demand
/// would skip without validating it, a parse error) it returns false and the caller parses the
/// line with nlohmann/json, which accepts it or says what is wrong with it.
/// `capacity` counts the readable bytes from `data` on; simdjson needs SIMDJSON_PADDING of them
/// past the line.
bool fast_record(od::parser& parser, const char* data, size_t len, size_t capacity,
                 RawObjectCache& params_cache, ResultRecord& r) {
  od::document doc;
  od::object top;
  if (parser.iterate(data, len, capacity).get(doc) || doc.get_object().get(top)) return false;
  bool has_schema = false, has_benchmark = false, has_status = false;
  std::string status;
  try {
    const bool read = each_field(top, [&](std::string_view key, od::value x) {
      std::string* str = key == "schema"       ? (has_schema = true, &r.schema)
                         : key == "run_id"     ? &r.run_id
                         : key == "benchmark"  ? (has_benchmark = true, &r.benchmark)
                         : key == "case_key"   ? &r.case_key
                         : key == "status"     ? (has_status = true, &status)
                         : key == "message"    ? &r.message
                         : key == "combine"    ? &r.combine
                         : key == "started_at" ? &r.started_at
                                               : nullptr;
      std::string_view text;
      if (str) return get_string(x, *str);
      if (key == "duration_s") return get_double(x, r.duration_s);
      if (key == "params") return params_cache.get(x, r.params);
      if (key == "extra")
        return raw_object(x, text) && (r.extra = parse_json_text(text, "", 0), true);
      if (key == "error")
        return raw_object(x, text) &&
               (r.error = parse_json_text(text, "", 0).get<ErrorInfo>(), true);
      if (key == "time") return read_time(x, r.time);
      if (key == "scope") return read_scope(x, r.scope);
      if (key == "metrics") {
        od::array a;
        if (x.get_array().get(a)) return false;
        r.metrics.clear();
        for (auto m : a) {
          od::value mv;
          if (std::move(m).get(mv) || !read_metric(mv, r.metrics.emplace_back())) return false;
        }
        return true;
      }
      return false;  // an unknown key's value would be skipped unvalidated: the ordinary path
    });
    if (!read) return false;
  } catch (const std::exception&) {  // nlohmann on params/extra/error: the ordinary path says why
    return false;
  }
  // Every token used: text after the record's closing brace is the ordinary path's to reject.
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return false;
  return has_schema && has_benchmark && has_status && r.schema == kResultSchema &&
         parse_status(status, r.status);
}

/// One parsed batch of lines: the records, or the first line that failed and why.
struct ParsedBatch {
  std::vector<ResultRecord> records;
  size_t failed_at = SIZE_MAX;  ///< index into the batch's lines
  std::string error;
};

/// Parses lines [begin, end) of `buf` (each a [offset, length) pair; `buf` holds
/// SIMDJSON_PADDING bytes past its last line).
void parse_lines(const std::string& buf, const std::vector<std::pair<size_t, size_t>>& lines,
                 size_t begin, size_t end, od::parser& parser, ParsedBatch& out) {
  out.records.reserve(end - begin);
  RawObjectCache params_cache;
  for (size_t i = begin; i < end; ++i) {
    const auto [off, len] = lines[i];
    std::string_view line(buf.data() + off, len);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      ResultRecord r;
      if (!fast_record(parser, line.data(), len, buf.size() - off, params_cache, r))
        r = parse_json_text(line, "", 0).get<ResultRecord>();  // accepts it, or says what is wrong
      check_host_names(r.scope);
      out.records.push_back(std::move(r));
    } catch (const std::exception& e) {
      out.failed_at = i, out.error = error_text(e.what());  // it may quote the bad bytes
      return;
    }
  }
}

}  // namespace

namespace {

/// The lines of buf[0, end), each as (offset, length) without its newline.
std::vector<std::pair<size_t, size_t>> split_lines(const std::string& buf, size_t end) {
  std::vector<std::pair<size_t, size_t>> lines;
  for (size_t at = 0; at < end;) {
    const char* nl = static_cast<const char*>(std::memchr(buf.data() + at, '\n', end - at));
    const size_t stop = nl ? static_cast<size_t>(nl - buf.data()) : end;
    lines.emplace_back(at, stop - at);
    at = stop + 1;
  }
  return lines;
}

/// Parses `lines` of `buf` (padded for simdjson) on up to parsers.size() threads, in order.
std::vector<ParsedBatch> parse_chunk(const std::string& buf,
                                     const std::vector<std::pair<size_t, size_t>>& lines,
                                     std::vector<od::parser>& parsers) {
  std::vector<ParsedBatch> parts(std::min(parsers.size(), lines.size()));
  std::vector<std::thread> workers;
  const size_t per = (lines.size() + parts.size() - 1) / parts.size();
  auto range = [&](size_t t) {
    parse_lines(buf, lines, std::min(lines.size(), t * per), std::min(lines.size(), (t + 1) * per),
                parsers[t], parts[t]);
  };
  for (size_t t = 1; t < parts.size(); ++t) workers.emplace_back(range, t);
  range(0);
  for (auto& w : workers) w.join();
  return parts;
}

}  // namespace

RecordsFile read_records(const std::string& path) {
  RecordsFile out;
  require_regular_file(path);  // a FIFO would block the read
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  // Line by line, in chunks whose lines the cores parse in parallel: a 1,000-node run holds
  // 790 MB of records (docs/report.md "Scale"), never held as one string.
  constexpr size_t kChunkBytes = 16 << 20;
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  std::vector<od::parser> parsers(threads);
  std::string buf, carry;  // carry: the start of a line the previous chunk cut
  int first_line_no = 1;   // line number of the chunk's first line
  bool eof = false;
  while (!eof) {
    buf = std::move(carry);
    carry.clear();
    const size_t had = buf.size();
    buf.resize(had + kChunkBytes);
    in.read(buf.data() + had, static_cast<std::streamsize>(kChunkBytes));
    buf.resize(had + static_cast<size_t>(in.gcount()));
    if (in.bad()) throw InputError(path + ": read error (" + std::strerror(errno) + ")");
    eof = in.eof();
    size_t end = buf.size();
    if (!eof) {  // whole lines now, the cut one with the next chunk
      const size_t nl = buf.rfind('\n');
      if (nl == std::string::npos) {  // one line longer than a chunk: read on
        carry = std::move(buf);
        continue;
      }
      end = nl + 1;
      carry.assign(buf, end, std::string::npos);
      buf.resize(end);
    }
    if (end == 0) break;
    const bool last_unterminated = eof && buf.back() != '\n';
    const auto lines = split_lines(buf, end);
    buf.append(simdjson::SIMDJSON_PADDING, '\0');
    for (auto& part : parse_chunk(buf, lines, parsers)) {
      for (auto& r : part.records) out.records.push_back(std::move(r));
      if (part.failed_at == SIZE_MAX) continue;
      std::string where = path + ":" + std::to_string(first_line_no + part.failed_at);
      // Cut off by a crash: an unterminated last line that is not whole JSON. Whole JSON that is
      // not a valid record (a wrong status, an array) is an error like on any other line.
      const auto [cut_off, cut_len] = lines[part.failed_at];
      if (last_unterminated && part.failed_at + 1 == lines.size() &&
          !json::accept(std::string_view(buf.data() + cut_off, cut_len))) {
        out.warnings.push_back(where + ": truncated last record ignored (" + part.error + ")");
        break;
      }
      throw InputError(where + ": " + part.error);
    }
    first_line_no += static_cast<int>(lines.size());
  }
  return out;
}

namespace {

/// A resumed run (`run --resume`) appends a case's new record after its failed one, and a long
/// case (the burn-in soak) its snapshots before its final record: the last record of a case key
/// is the case's. Warns about superseded records that were not snapshots.
void keep_last_of_each_case(RecordsFile& file, const std::string& rec_path) {
  auto& recs = file.records;
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
    size_t replaced = 0;  // a long case's snapshots (extra.snapshot) are meant to be replaced
    for (size_t i = 0; i < recs.size(); ++i) {
      if (last[keys[i]] == i)
        kept.push_back(std::move(recs[i]));
      else if (!(recs[i].extra.is_object() && recs[i].extra.value("snapshot", false)))
        ++replaced;
    }
    if (replaced > 0)
      file.warnings.push_back(rec_path + ": " + std::to_string(replaced) +
                              " record(s) superseded by a later record of the same case "
                              "(a resumed run); the last one counts");
    recs = std::move(kept);
  }
}

}  // namespace

RunDir read_run_dir(const std::string& dir, bool with_plan) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw InputError(dir + ": results directory does not exist");
  if (!S_ISDIR(st.st_mode)) throw InputError(dir + ": not a directory");
  RunDir rd;
  rd.dir = dir;
  std::string run_path = dir + "/run.json";
  if (::stat(run_path.c_str(), &st) != 0)
    throw InputError(dir + ": no run.json here; is this a clusterbench results directory?");
  // run.json (114 MB at 1,000 nodes: the plan's case keys) is parsed on a thread of its own
  // while the records are read; its errors still come first.
  // Every error names the file: "DIR/run.json: schema ..." (compare reads two of them).
  auto read_run = [&run_path](bool plan) {
    try {
      if (plan) return read_json_file(run_path).get<RunRecord>();
      // The plan is most of a large run.json: skipped while parsing, never built.
      require_regular_file(run_path);  // a FIFO would block the read
      std::ifstream in(run_path);
      if (!in) throw InputError(run_path + ": cannot open (" + std::strerror(errno) + ")");
      auto skip_plan = [](int depth, json::parse_event_t event, json& parsed) {
        return !(depth == 1 && event == json::parse_event_t::key && parsed == "plan");
      };
      DepthGuard guard(run_path, 1);
      GuardedIterator first{std::istreambuf_iterator<char>(in), &guard}, last{{}, &guard};
      return json::parse(first, last, skip_plan).get<RunRecord>();
    } catch (const json::parse_error& e) {
      // Streamed, so the text is read again (only on error) to name a byte that is not UTF-8.
      std::ifstream again(run_path, std::ios::binary);
      const std::string why = utf8_error(std::string(std::istreambuf_iterator<char>(again), {}));
      throw InputError(run_path + ": " + (why.empty() ? error_text(e.what()) : why));
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (what.rfind(run_path, 0) == 0) throw;
      if (what.rfind("run.json: ", 0) == 0) what.erase(0, 10);
      throw InputError(run_path + ": " + what);
    }
  };
  auto run_future = std::async(std::launch::async, read_run, with_plan);
  std::string rec_path = dir + "/records.jsonl";
  const bool have_records = ::stat(rec_path.c_str(), &st) == 0;
  std::exception_ptr records_error;
  try {
    if (have_records) rd.records = read_records(rec_path);
  } catch (...) {
    records_error = std::current_exception();
  }
  rd.run = run_future.get();
  if (records_error) std::rethrow_exception(records_error);
  // No records: whether the plan was empty decides below, so it is read after all (rare).
  if (!have_records && !with_plan) rd.run = read_run(true);
  if (have_records) {
    keep_last_of_each_case(rd.records, rec_path);
    rd.records.one_per_case = true;
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

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL: EVP_DigestInit_ex(sha256) failed");
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256Stream::update(const void* data, size_t n) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n) != 1)
    throw std::runtime_error("OpenSSL: EVP_DigestUpdate failed");
}

std::string Sha256Stream::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len) != 1)
    throw std::runtime_error("OpenSSL: EVP_DigestFinal_ex failed");
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += {kHex[md[i] >> 4], kHex[md[i] & 15]};
  return out;
}

std::string sha256_file(const std::string& path) {
  require_regular_file(path);  // a FIFO would block the read
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  Sha256Stream sha;
  std::vector<char> buf(1 << 16);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
    sha.update(buf.data(), static_cast<size_t>(in.gcount()));
  if (in.bad()) throw InputError(path + ": read error (" + std::strerror(errno) + ")");
  return sha.hex();
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
