// Record and spec types of clusterbench and their JSON conversion (docs/records.md).
// This library depends on nlohmann/json alone: both the core and reports/ link it.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "records/utf8.hpp"

namespace clusterbench {

using json = nlohmann::json;

/// Schema identifiers written into every document (DESIGN.md "Schemas").
inline constexpr const char* kRunSchema = "clusterbench.run/1";
/// env/2: a value that could not be read is null, with the reason in its object's `unknown`;
/// `nics` holds virtual interfaces too, flagged `virtual` (docs/records.md "EnvRecord").
inline constexpr const char* kEnvSchema = "clusterbench.env/2";
/// env/1 records are still read; their "not read" zeros become unknown when read (docs/records.md
/// "EnvRecord").
inline constexpr const char* kEnvSchemaV1 = "clusterbench.env/1";
inline constexpr const char* kResultSchema = "clusterbench.result/1";
/// Spec tables: /2 adds `families` (docs/records.md "Spec table"); /1 tables still load.
inline constexpr const char* kSpecSchema = "clusterbench.spec/5";    ///< adds a row's `remedy`
inline constexpr const char* kSpecSchemaV4 = "clusterbench.spec/4";  ///< adds `tiers`
inline constexpr const char* kSpecSchemaV3 = "clusterbench.spec/3";  ///< adds family `compare`
inline constexpr const char* kSpecSchemaV2 = "clusterbench.spec/2";
inline constexpr const char* kSpecSchemaV1 = "clusterbench.spec/1";
inline constexpr const char* kReportSchema = "clusterbench.report/1";
inline constexpr const char* kCompareSchema = "clusterbench.compare/2";

/// Input that cannot be used: a malformed file, an unknown field, a bad option. Maps to exit 2.
/// The message names the file and the line/column or field.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A field of a JSON document that has the wrong type or value; pointer() is where it is, a JSON
/// pointer relative to the document read ("/metrics/0/value"), filled in as the error passes up
/// through the enclosing objects. what() reads "field '<pointer>' <detail>".
class FieldError : public InputError {
 public:
  FieldError(std::string pointer, std::string detail);
  const std::string& pointer() const { return pointer_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string pointer_, detail_;
};

/// The deepest nesting of objects and arrays read from any input document: deeper input is an
/// InputError (the recursive copies and conversions would otherwise overflow the stack).
inline constexpr int kMaxJsonDepth = 128;
/// The largest spec table (and `extends` target) read, in bytes.
inline constexpr size_t kMaxSpecBytes = size_t{16} << 20;

/// The units clusterbench writes, exactly these ASCII strings (DESIGN.md "Units").
/// Returns true when `unit` is one of them.
bool is_known_unit(const std::string& unit);

// ---------------------------------------------------------------------------------------------
// EnvRecord: one per node.

/// Fields of one env object that could not be read, by path relative to the object ("memory_gib",
/// "pcie/width_current"), each with why ("NVML not loaded: Driver Not Loaded"). Such a field is
/// null in JSON; a spec row over it is MISSING with this reason (DESIGN.md "Unknown is not zero").
using UnknownFields = std::map<std::string, std::string>;

/// Makes `field` unknown: it becomes null in JSON, and `unknown[name]` says `why`.
template <typename T>
void set_unknown(std::optional<T>& field, UnknownFields& unknown, const std::string& name,
                 const std::string& why) {
  field.reset();
  unknown[name] = why;
}

struct CpuInfo {
  std::string model;
  int sockets = 0;
  int physical_cores = 0;  ///< cores as vendors count them, not hardware threads
  int threads = 0;         ///< logical CPUs
  int numa_nodes = 0;
  std::string source;  ///< "hwloc"
};

struct MemoryInfo {
  std::optional<double> installed_gib;  ///< GiB installed, from `source`; null: no source worked
  std::optional<double> usable_gib;     ///< GiB usable (MemTotal); null: MemTotal not read
  std::string source;                   ///< "dmi" (type 17), "memory_blocks", "meminfo" or ""
  UnknownFields unknown;                ///< why installed_gib / usable_gib are null
};

struct PcieLink {
  int gen_current = 0, gen_max = 0;
  int width_current = 0, width_max = 0;
};

struct GpuInfo {
  int index = 0;     ///< NVML index, or order on the PCI bus
  std::string name;  ///< NVML name, or "NVIDIA <pci device id>" when seen on PCI only
  std::string uuid, serial, pci_bus_id, vbios, driver;
  std::string pci_device_id;         ///< e.g. "0x2330"
  std::optional<double> memory_gib;  ///< NVML memory.total / 2^30; null when not read
  PcieLink pcie;
  std::optional<int> nvlink_links_up;  ///< NVLink links active; null when not read
  std::string ecc_mode;                ///< "enabled", "disabled" or "" (unknown)
  int numa_node = -1;
  std::string source;             ///< "nvml" or "pci"
  std::string board_part_number;  ///< nvmlDeviceGetBoardPartNumber, "" unknown
  std::string persistence_mode;   ///< "enabled", "disabled" or "" (unknown)
  std::string mig_mode;           ///< current MIG mode: "enabled", "disabled" or "" (unsupported)
  UnknownFields unknown;          ///< why memory_gib / nvlink_links_up are null
};

struct NicInfo {
  std::string name;  ///< "mlx5_0/1" for IB/RoCE ports, interface name for Ethernet
  /// "ib_port", "ethernet", or for a virtual interface its type: "veth", "bridge", "macvlan",
  /// "bond", "vlan", ... ("virtual" when it cannot be told)
  std::string kind;
  std::string link_layer;  ///< "InfiniBand", "Ethernet"
  std::string state, phys_state;
  std::optional<double> rate_gbps;  ///< Gb/s; null when unknown (link down, virtual)
  std::string firmware;
  int mtu = 0;
  std::string netdev;      ///< associated interface, if any
  std::string pci_bus_id;  ///< the PCI function behind it ("0000:1a:00.0"), "" if virtual
  int numa_node = -1;      ///< its device's numa_node, -1 if unknown
  /// A virtual interface (no device behind it: veth, bridge, macvlan, ...); JSON `virtual`.
  /// Such interfaces may carry MPI/NCCL traffic, but are not physical NICs.
  bool is_virtual = false;
  UnknownFields unknown;  ///< why rate_gbps is null
  /// A physical port: neither virtual nor the entry (kind "not_visible") that stands for the
  /// physical NICs a network namespace hides.
  bool physical() const { return !is_virtual && kind != "not_visible"; }
};

struct BlockDevice {
  std::string name, model, serial, firmware;
  double capacity_tb = 0;  ///< 1e12 bytes
  bool nvme = false;
  bool rotational = false;
};

struct Versions {
  std::string driver, cuda_driver, cuda_runtime, cublas, nccl, mpi, fio, kernel, clusterbench;
};

struct Tuning {
  std::string governor;  ///< e.g. "performance", or "no cpufreq driver"
  long long nr_hugepages = -1;
  std::string thp;  ///< the selected value of transparent_hugepage/enabled
  long long net_core_rmem_max = -1, net_core_wmem_max = -1;
  std::string tcp_rmem, tcp_wmem;  ///< "min default max" as in /proc/sys
};

/// /sys/class/dmi/id. A file that exists but cannot be read (serials are root-only) holds
/// kDmiUnreadable; one that does not exist holds "".
struct DmiInfo {
  std::string sys_vendor, product_name, product_serial, board_name, board_serial, chassis_serial,
      bios_version, bios_date;
};
inline constexpr const char* kDmiUnreadable = "unreadable";

/// What GPUDirect RDMA depends on: IOMMU, PCIe ACS and the peer-memory module.
struct GpuDirectSettings {
  std::string iommu_cmdline;    ///< iommu-related /proc/cmdline words ("intel_iommu=on iommu=pt")
  int iommu_groups = -1;        ///< entries of /sys/kernel/iommu_groups; -1 unreadable
  std::string peermem;          ///< loaded module: "nvidia_peermem", "nv_peer_mem" or "" (none)
  int acs_bridges_checked = 0;  ///< PCI bridges whose extended config space could be read
  /// Bridges with ACS P2P Request or Completion Redirect enabled (they route GPU<->NIC P2P
  /// through the root complex), by bus id.
  std::vector<std::string> acs_redirect;
};

/// One piece of a node's software stack (bench/env/software.hpp).
struct SoftwareComponent {
  /// "present" or "absent" (a library, a tool); "up" or "down" (a service); "not applicable"
  /// (the device plugin and container toolkit on a node without Kubernetes); "" not probed
  /// (unknown: a row over it is MISSING).
  std::string state;
  std::optional<std::string> version;  ///< null when absent or when it does not say
  std::string detail;                  ///< how it was found ("libcudnn.so.9"), or why not
};

/// One line for a component, for tables and diffs: its version where it has one, else its state
/// ("present", "absent", "up", "not applicable"), "unknown" when not probed.
std::string software_text(const SoftwareComponent& c);

/// The seed guide's software list on one node, beyond versions.driver/cuda_driver.
struct SoftwareStack {
  SoftwareComponent cudnn, nccl, pytorch, container_toolkit, container_runtime, kubernetes,
      device_plugin, gpu_feature_discovery, dcgm_exporter;
  std::optional<std::string> pytorch_cuda;  ///< torch.version.cuda ("12.1"); null: none or CPU
  /// NCCL_IB_DISABLE and NCCL_SOCKET_IFNAME as the run's processes see them, "unset" when not set.
  std::map<std::string, std::string> nccl_env;
};

/// (name, software_text) of every component and the CUDA PyTorch was built for, in a fixed order:
/// "cudnn", "nccl library", "pytorch", "pytorch cuda", "container toolkit", "container runtime",
/// "kubernetes", "device plugin", "gpu feature discovery", "dcgm exporter".
std::vector<std::pair<std::string, std::string>> software_fields(const SoftwareStack& s);

/// Status of the GPU stack on a node: decides waived vs failed for GPU cases.
struct GpuStatus {
  int on_pci = 0;        ///< NVIDIA display/3D controllers on the PCI bus
  std::string nvml;      ///< "ok" or the reason NVML could not be used
  std::string plugin;    ///< "ok", "not built", or the dlopen/CUDA error text
  int cuda_devices = 0;  ///< devices the plugin saw
};

struct EnvRecord {
  std::string schema = kEnvSchema;
  std::string host;
  std::string collected_at;  ///< ISO 8601 UTC
  std::string fs_root;       ///< "/" on a live system
  CpuInfo cpu;
  MemoryInfo memory;
  std::vector<GpuInfo> gpus;
  GpuStatus gpu_status;
  std::vector<NicInfo> nics;
  std::vector<BlockDevice> block_devices;
  Versions versions;
  Tuning tuning;
  DmiInfo dmi;
  GpuDirectSettings gpudirect;
  SoftwareStack software;  ///< every state "" in records written before it existed
  std::map<std::string, std::string> environment;  ///< allow-listed variables only
  std::vector<std::string> warnings;               ///< what could not be read, and why
  /// Health counter snapshots (docs/health.md): {"start": ..., "end": ...}, each a
  /// clusterbench.health/1 object (bench/env/health.hpp); {} when not collected (older runs).
  json health = json::object();
};

// ---------------------------------------------------------------------------------------------
// ResultRecord: one per measured case.

struct Metric {
  Metric() = default;
  Metric(std::string name_, double value_, std::string unit_, bool higher_is_better_ = true,
         std::vector<double> reps_ = {}, double resolution_ = 0, double work_ = 0)
      : name(std::move(name_)),
        value(value_),
        unit(std::move(unit_)),
        higher_is_better(higher_is_better_),
        reps(std::move(reps_)),
        resolution(resolution_),
        work(work_) {}
  std::string name;
  double value = 0;
  std::string unit;
  bool higher_is_better = true;
  /// The metric's value in each repetition (measurement-loop sample, fio run), in `unit`; empty
  /// when the metric is one number (a count, an extreme such as the best time). `value` is their
  /// median. `compare` tests a change on them (reports/compare.hpp).
  std::vector<double> reps;
  /// Twice this (in `unit`) is the smallest change of a lower-is-better time that can count as
  /// one (the timer's resolution); 0 when not stated.
  double resolution = 0;
  /// A rate's work per operation, in `unit` x seconds (rate = work / seconds per operation), so
  /// that compare can tell the time per operation behind it; 0 for other metrics.
  double work = 0;
};

/// Median of `values` (mean of the middle two for an even count); 0 when empty.
double median_of(std::vector<double> values);

/// Relative interquartile range of `values`: (p75 - p25) / median, nearest rank; 0 for fewer than
/// 2 values or a median of 0. The same statistic as TimeStats::spread.
double relative_spread(std::vector<double> values);

/// Time per operation, seconds. p95 by nearest rank; spread = (p75 - p25) / median.
struct TimeStats {
  int n = 0;
  double min = 0, median = 0, mean = 0, p95 = 0, max = 0, spread = 0;
};

/// Computes TimeStats over samples (seconds per operation). Empty input gives n = 0.
TimeStats compute_stats(std::vector<double> samples);

/// Value at quantile q in [0,1] by nearest rank over sorted values (q = 0.95 -> p95).
double nearest_rank(const std::vector<double>& sorted, double q);

/// What a record's scope is: one GPU, one node, one rank (a CPU rank of the burn-in), a link
/// between two nodes, or the whole cluster.
enum class ScopeKind { gpu, node, rank, link, cluster };

/// "gpu", "node", "rank", "link", "cluster": the JSON and text form.
const char* scope_kind_name(ScopeKind k);

/// The kind named `text`; false when it names none.
bool parse_scope_kind(std::string_view text, ScopeKind& out);

struct Scope {
  ScopeKind kind = ScopeKind::node;
  std::string host;
  int rank = -1;
  int gpu_index = -1;
  std::string uuid, pci_bus_id;
  std::vector<std::string> hosts;  ///< link: the two hosts
};

/// Where an error came from (the CHECK macros fill it).
struct ErrorInfo {
  std::string library, code, call, where, host;
  int rank = -1;
};

/// What a case did on its scope item: it measured (ok), it could not run here for a stated reason
/// (waived), or it failed (the message says why).
enum class Status { ok, failed, waived };

/// "ok", "failed", "waived": the JSON and text form.
const char* status_name(Status s);

/// The status named `text`; false when it names none.
bool parse_status(std::string_view text, Status& out);

struct ResultRecord {
  std::string schema = kResultSchema;
  std::string run_id;
  std::string benchmark;
  json params = json::object();
  std::string case_key;
  Status status = Status::ok;
  std::string message;
  std::optional<ErrorInfo> error;
  std::vector<Metric> metrics;
  TimeStats time;
  Scope scope;
  std::string combine = "max";  ///< per_rank | max
  std::string started_at;
  double duration_s = 0;
  json extra = json::object();  ///< benchmark-specific evidence
};

/// The item a scope names, used in case keys and evidence: "node01", "node01/gpu3[GPU-uuid]",
/// "node01<->node02", "cluster".
std::string scope_item(const Scope& s);

/// Throws std::runtime_error when a host name of `s` holds a control character (read_records
/// turns it into an InputError naming the line; an EnvRecord's host is checked as it is read).
void check_host_names(const Scope& s);

/// Case key that `compare` matches on: benchmark, canonical params (sorted keys) and scope item.
std::string make_case_key(const std::string& benchmark, const json& params, const Scope& s);

// ---------------------------------------------------------------------------------------------
// RunRecord: results/<run-id>/run.json.

struct PlannedCase {
  std::string benchmark;
  json params = json::object();
  std::string level;                   ///< "node", "gpu", "cluster"
  std::vector<std::string> case_keys;  ///< the records this case is expected to produce
};

struct SpecChoice {
  std::string path, sha256, name;
  std::string selected_by;  ///< "--spec" or "auto: <reason>"
};

/// A planned case that `--time-limit` left unstarted.
struct NotRunCase {
  std::string benchmark;
  json params = json::object();
};

/// run.json "time_limit": present when `--time-limit` stopped the run before its plan's end.
struct TimeLimitStop {
  double seconds = 0;          ///< the limit
  double stopped_after_s = 0;  ///< when the run stopped, seconds after it started
  std::vector<NotRunCase> not_run;
};

/// The most rounds a run can spread its round cases over (--rounds).
inline constexpr int kMaxRounds = 20;

struct RunRecord {
  std::string schema = kRunSchema;
  std::string run_id;
  std::vector<std::string> argv;
  std::string version;
  std::string suite;
  std::vector<std::string> only;
  std::vector<std::string> set;
  SpecChoice spec;
  int world_size = 1;
  std::vector<std::string> hosts;
  std::string started_at, finished_at;
  std::optional<int> exit_code;
  bool aborted = false;
  std::string abort_reason;
  std::vector<PlannedCase> plan;
  std::vector<EnvRecord> env;
  /// Written by the runner (Sink::set_run_field) when `--time-limit` stopped the run.
  std::optional<TimeLimitStop> time_limit;
  /// --rounds: how many rounds the plan's round cases were spread over (docs/compare.md
  /// "Rounds"); 1 (not written) for a run without.
  int rounds = 1;
};

// JSON conversion (nlohmann ADL hooks).
void to_json(json& j, const CpuInfo& v);
void from_json(const json& j, CpuInfo& v);
void to_json(json& j, const MemoryInfo& v);
void from_json(const json& j, MemoryInfo& v);
void to_json(json& j, const PcieLink& v);
void from_json(const json& j, PcieLink& v);
void to_json(json& j, const GpuInfo& v);
void from_json(const json& j, GpuInfo& v);
void to_json(json& j, const NicInfo& v);
void from_json(const json& j, NicInfo& v);
void to_json(json& j, const BlockDevice& v);
void from_json(const json& j, BlockDevice& v);
void to_json(json& j, const Versions& v);
void from_json(const json& j, Versions& v);
void to_json(json& j, const Tuning& v);
void from_json(const json& j, Tuning& v);
void to_json(json& j, const DmiInfo& v);
void from_json(const json& j, DmiInfo& v);
void to_json(json& j, const GpuDirectSettings& v);
void from_json(const json& j, GpuDirectSettings& v);
void to_json(json& j, const GpuStatus& v);
void from_json(const json& j, GpuStatus& v);
void to_json(json& j, const EnvRecord& v);
void from_json(const json& j, EnvRecord& v);
void to_json(json& j, const Metric& v);
void from_json(const json& j, Metric& v);
void to_json(json& j, const TimeStats& v);
void from_json(const json& j, TimeStats& v);
void to_json(json& j, const ScopeKind& v);
void from_json(const json& j, ScopeKind& v);  ///< InputError naming the text on an unknown kind
void to_json(json& j, const Status& v);
void from_json(const json& j, Status& v);  ///< InputError naming the text on an unknown status
void to_json(json& j, const Scope& v);
void from_json(const json& j, Scope& v);
void to_json(json& j, const ErrorInfo& v);
void from_json(const json& j, ErrorInfo& v);
void to_json(json& j, const ResultRecord& v);
void from_json(const json& j, ResultRecord& v);
void to_json(json& j, const PlannedCase& v);
void from_json(const json& j, PlannedCase& v);
void to_json(json& j, const SpecChoice& v);
void from_json(const json& j, SpecChoice& v);
void to_json(json& j, const NotRunCase& v);
void from_json(const json& j, NotRunCase& v);
void to_json(json& j, const TimeLimitStop& v);
void from_json(const json& j, TimeLimitStop& v);
void to_json(json& j, const RunRecord& v);
void from_json(const json& j, RunRecord& v);

// ---------------------------------------------------------------------------------------------
// Files.

/// Parses a whole JSON file of at most `max_bytes` bytes. Throws InputError naming the file and
/// line/column on a parse error or nesting deeper than kMaxJsonDepth, naming the file when it
/// cannot be opened, is not a regular file (a FIFO, /dev/zero) or is larger. `referenced_by`, when
/// not empty, says who named the file ("extended by a.json") and is added to every such error.
json read_json_file(const std::string& path, size_t max_bytes = SIZE_MAX,
                    const std::string& referenced_by = "");

/// The bytes of the regular file `path`, at most `max_bytes` of them. It is checked with stat
/// before it is opened and with fstat after (opened O_NONBLOCK, so a FIFO cannot block the open).
/// Throws InputError naming the file (and `referenced_by`, when not empty) otherwise.
std::string read_regular_file(const std::string& path, size_t max_bytes,
                              const std::string& referenced_by = "");

/// Throws InputError naming `path` unless it is a regular file (stat; no open).
void require_regular_file(const std::string& path);

/// Throws InputError when the first JSON value in `text` nests objects and arrays deeper than
/// kMaxJsonDepth, naming `where` (when not empty) and the line counted from `first_line` (0: no
/// line). Bytes after that first value are not looked at.
void check_json_depth(std::string_view text, const std::string& where, int first_line = 1);

/// Parses JSON `text`, first checking that it nests no deeper than kMaxJsonDepth. Errors are
/// InputErrors prefixed with `where` (a file name) when it is not empty; a nesting error names
/// the line counted from `first_line` (0: no line, for one line of a JSON Lines file).
json parse_json_text(std::string_view text, const std::string& where, int first_line = 1);

/// Writes `text` to `path` atomically: a temporary file beside it, fsync, rename.
/// Throws std::runtime_error naming the path and errno text.
void write_file_atomic(const std::string& path, const std::string& text);
/// Several files, all or none: each written to PATH.tmp.PID and fsynced, then all renamed. When
/// a write fails, no file is replaced and the temporaries are removed; throws
/// std::runtime_error naming the file.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);

/// Result of reading records.jsonl.
struct RecordsFile {
  std::vector<ResultRecord> records;
  std::vector<std::string> warnings;  ///< e.g. a truncated last line
  /// True when no two records share a case key (read_run_dir keeps the last of each): readers
  /// may then skip their own last-record-wins pass.
  bool one_per_case = false;
};

/// Reads records.jsonl. A malformed line other than the last throws InputError naming
/// file:line and the field; a truncated last line (no trailing newline) is a warning.
RecordsFile read_records(const std::string& path);

/// A whole run directory: run.json plus records.jsonl.
struct RunDir {
  std::string dir;
  RunRecord run;
  RecordsFile records;
};

/// Reads a run directory. Throws InputError when it is missing, empty or malformed.
/// `with_plan` false leaves RunRecord::plan empty (compare has no use for it; it is most of a
/// 1,000-node run.json).
RunDir read_run_dir(const std::string& dir, bool with_plan = true);

/// Hex SHA-256 of a file's bytes (FIPS 180-4). Throws InputError if unreadable.
std::string sha256_file(const std::string& path);
/// Hex SHA-256 of a byte string.
std::string sha256_hex(const std::string& data);

/// SHA-256 (FIPS 180-4) of bytes fed in pieces: a large file or archive member hashed without
/// holding it in memory.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  /// Adds `n` bytes at `data`.
  void update(const void* data, size_t n);
  /// The digest of everything added, as 64 lowercase hex digits; call it once, last.
  std::string hex();

 private:
  void* ctx_;  ///< an EVP_MD_CTX (OpenSSL stays out of this header)
};

/// Current UTC time, ISO 8601 with seconds ("2026-11-30T08:45:00Z").
std::string utc_now_iso();

/// Looks up a typed field, throwing InputError "<what>: field '<name>' ..." when absent or
/// mistyped.
template <typename T>
T require_field(const json& j, const std::string& name, const std::string& what) {
  if (!j.is_object() || !j.contains(name))
    throw InputError(what + ": missing field '" + name + "'");
  try {
    return j.at(name).get<T>();
  } catch (const FieldError& e) {
    throw InputError(what + ": field '/" + name + e.pointer() + "' " + e.detail());
  } catch (const json::exception& e) {
    throw InputError(what + ": field '" + name + "' has the wrong type (" + error_text(e.what()) +
                     ")");
  }
}

}  // namespace clusterbench
