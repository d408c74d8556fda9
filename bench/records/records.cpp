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
#include <set>
#include <sstream>

namespace clusterbench {

bool is_known_unit(const std::string& unit) {
  static const std::set<std::string> kUnits = {"GB/s", "Gb/s", "TFLOP/s", "us",  "s",
                                               "B",    "GiB",  "TB",      "IOPS", "samples/s",
                                               "C",    "W",    "MHz",     "%",   "count",
                                               "ratio", ""};
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
  CB_FROM(model), CB_FROM(sockets), CB_FROM(physical_cores), CB_FROM(threads),
      CB_FROM(numa_nodes), CB_FROM(source);
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
      CB_TO(ecc_mode), CB_TO(numa_node), CB_TO(source);
}
void from_json(const json& j, GpuInfo& v) {
  CB_FROM(index), CB_FROM(name), CB_FROM(uuid), CB_FROM(serial), CB_FROM(pci_bus_id),
      CB_FROM(vbios), CB_FROM(driver), CB_FROM(pci_device_id), CB_FROM(memory_gib), CB_FROM(pcie),
      CB_FROM(nvlink_links_up), CB_FROM(ecc_mode), CB_FROM(numa_node), CB_FROM(source);
}
void to_json(json& j, const NicInfo& v) {
  CB_TO(name), CB_TO(kind), CB_TO(link_layer), CB_TO(state), CB_TO(phys_state), CB_TO(rate_gbps),
      CB_TO(firmware), CB_TO(mtu), CB_TO(netdev);
}
void from_json(const json& j, NicInfo& v) {
  CB_FROM(name), CB_FROM(kind), CB_FROM(link_layer), CB_FROM(state), CB_FROM(phys_state),
      CB_FROM(rate_gbps), CB_FROM(firmware), CB_FROM(mtu), CB_FROM(netdev);
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
void to_json(json& j, const GpuStatus& v) {
  CB_TO(on_pci), CB_TO(nvml), CB_TO(plugin), CB_TO(cuda_devices);
}
void from_json(const json& j, GpuStatus& v) {
  CB_FROM(on_pci), CB_FROM(nvml), CB_FROM(plugin), CB_FROM(cuda_devices);
}
void to_json(json& j, const EnvRecord& v) {
  CB_TO(schema), CB_TO(host), CB_TO(collected_at), CB_TO(fs_root), CB_TO(cpu), CB_TO(memory),
      CB_TO(gpus), CB_TO(gpu_status), CB_TO(nics), CB_TO(block_devices), CB_TO(versions),
      CB_TO(tuning), CB_TO(environment), CB_TO(warnings);
}
void from_json(const json& j, EnvRecord& v) {
  CB_FROM(schema), CB_FROM(host), CB_FROM(collected_at), CB_FROM(fs_root), CB_FROM(cpu),
      CB_FROM(memory), CB_FROM(gpus), CB_FROM(gpu_status), CB_FROM(nics), CB_FROM(block_devices),
      CB_FROM(versions), CB_FROM(tuning), CB_FROM(environment), CB_FROM(warnings);
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
  CB_TO(schema), CB_TO(run_id), CB_TO(argv), CB_TO(version), CB_TO(suite), CB_TO(only),
      CB_TO(set), CB_TO(spec), CB_TO(world_size), CB_TO(hosts), CB_TO(started_at),
      CB_TO(finished_at), CB_TO(aborted), CB_TO(abort_reason), CB_TO(plan), CB_TO(env);
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

RecordsFile read_records(const std::string& path) {
  RecordsFile out;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    bool last_unterminated = nl == std::string::npos;
    std::string line = text.substr(pos, last_unterminated ? std::string::npos : nl - pos);
    pos = last_unterminated ? text.size() : nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.records.push_back(json::parse(line).get<ResultRecord>());
    } catch (const std::exception& e) {
      std::string where = path + ":" + std::to_string(line_no);
      if (last_unterminated) {
        out.warnings.push_back(where + ": truncated last record ignored (" + e.what() + ")");
        break;
      }
      throw InputError(where + ": " + e.what());
    }
  }
  return out;
}

RunDir read_run_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw InputError(dir + ": results directory does not exist");
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
  for (unsigned i = 0; i < len; ++i) os << std::hex << std::setw(2) << std::setfill('0') << int(md[i]);
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
