// compute.host_device_copy: each GPU copies host -> device, device -> host and both at once, from
// pinned (cudaHostRegister) and pageable host memory placed with hwloc on the GPU's NUMA node and
// on the farthest one, with all GPUs of a node copying at once or one at a time (a node-wide
// lock). GB/s = bytes moved over the link / median seconds / 1e9 (docs/metrics.md
// "Host-device copy"). The copies are the plugin's "host_copy" operation
// (compute/host_device_copy_gpu.cpp) run as a GPU case. NVML reads the PCIe generation and width
// while the copies run: an idle link downclocks, so only readings under load show a link trained
// below its max.
#include "compute/host_device_copy.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"
#include "core/api/gpu_case.hpp"
#include "env/nvml.hpp"

namespace clusterbench::compute {

double host_copy_bytes_moved(const std::string& direction, long long bytes) {
  if (direction == "h2d" || direction == "d2h") return static_cast<double>(bytes);
  if (direction == "bidir") return 2.0 * static_cast<double>(bytes);
  throw std::invalid_argument("unknown copy direction '" + direction + "'");
}

NumaTopology numa_topology(hwloc_topology_t topo) {
  NumaTopology out;
  int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < n; ++i)
    out.nodes.push_back(
        static_cast<int>(hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i)->os_index));
  unsigned nr = 1;
  hwloc_distances_s* d = nullptr;
  if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d, 0, 0) == 0 && nr >= 1 && d) {
    std::vector<std::vector<unsigned long long>> m(
        out.nodes.size(), std::vector<unsigned long long>(out.nodes.size()));
    size_t filled = 0;
    for (unsigned i = 0; i < d->nbobjs; ++i)
      for (unsigned j = 0; j < d->nbobjs; ++j) {
        auto at = [&](hwloc_obj_t o) {
          for (size_t k = 0; k < out.nodes.size(); ++k)
            if (out.nodes[k] == static_cast<int>(o->os_index)) return static_cast<long>(k);
          return -1L;
        };
        long a = at(d->objs[i]), b = at(d->objs[j]);
        if (a < 0 || b < 0) continue;
        m[static_cast<size_t>(a)][static_cast<size_t>(b)] = d->values[i * d->nbobjs + j];
        ++filled;
      }
    if (filled == out.nodes.size() * out.nodes.size()) out.distance = std::move(m);
    hwloc_distances_release(topo, d);
  }
  return out;
}

NumaChoice choose_host_numa(const NumaTopology& topo, int gpu_node, const std::string& placement) {
  if (placement != "near" && placement != "far")
    throw std::invalid_argument("unknown NUMA placement '" + placement + "'");
  NumaChoice c;
  const auto& nodes = topo.nodes;
  if (nodes.empty()) {
    c.why_not = "hwloc found no NUMA node";
    return c;
  }
  if (nodes.size() == 1) {
    if (placement == "near")
      c.node = nodes[0];
    else
      c.why_not = "one NUMA node: no remote host memory";
    return c;
  }
  if (gpu_node < 0) {
    c.why_not =
        "the GPU's NUMA node is unknown (sysfs numa_node -1, no NVML memory affinity) on "
        "a machine with " +
        std::to_string(nodes.size()) + " NUMA nodes";
    return c;
  }
  size_t me = nodes.size();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i] == gpu_node) me = i;
  if (me == nodes.size()) {
    c.why_not = "NUMA node " + std::to_string(gpu_node) + " of the GPU is not in the topology";
    return c;
  }
  if (placement == "near") {
    c.node = gpu_node;
    return c;
  }
  size_t best = nodes.size();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i == me) continue;
    if (best == nodes.size()) {
      best = i;
      continue;
    }
    if (topo.distance.empty()) {
      if (nodes[i] < nodes[best]) best = i;
      continue;
    }
    unsigned long long di = topo.distance[me][i], db = topo.distance[me][best];
    if (di > db || (di == db && nodes[i] < nodes[best])) best = i;
  }
  c.node = nodes[best];
  return c;
}

namespace {

const std::vector<std::string> kDirections = {"h2d", "d2h", "bidir"};
const std::vector<std::string> kMemories = {"pinned", "pageable"};
const std::vector<std::string> kPlacements = {"near", "far"};
const std::vector<std::string> kConcurrency = {"all", "one"};

/// This machine's topology, loaded once (binding needs the live one, docs/design.md).
hwloc_topology_t live_topology() {
  static hwloc_topology_t topo = [] {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0)
      throw std::runtime_error(std::string("hwloc: cannot load this machine's topology: ") +
                               std::strerror(errno));
    return t;
  }();
  return topo;
}

/// Host memory bound to one NUMA node (hwloc_alloc_membind, BIND | STRICT), touched page by page
/// with a pattern in which every 16-byte word differs.
class HostBuffer {
 public:
  HostBuffer(hwloc_topology_t topo, hwloc_obj_t node, size_t bytes) : topo_(topo), bytes_(bytes) {
    p_ = hwloc_alloc_membind(topo, bytes, node->nodeset, HWLOC_MEMBIND_BIND,
                             HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
    CHECK_MSG(p_ != nullptr, "hwloc",
              "hwloc_alloc_membind of " + std::to_string(bytes) + " bytes on NUMA node " +
                  std::to_string(node->os_index) + ": " + std::strerror(errno));
    auto* w = static_cast<unsigned long long*>(p_);
    for (size_t i = 0; i < bytes / 8; ++i) w[i] = (i + 1) * 0x9E3779B97F4A7C15ULL;
  }
  ~HostBuffer() {
    if (p_) hwloc_free(topo_, p_, bytes_);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* get() const { return p_; }
  /// OS indexes of the NUMA nodes holding the pages (hwloc_get_area_memlocation).
  std::vector<int> location() const {
    std::vector<int> out;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (hwloc_get_area_memlocation(topo_, p_, bytes_, set, HWLOC_MEMBIND_BYNODESET) == 0) {
      for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) out.push_back(i);
    }
    hwloc_bitmap_free(set);
    return out;
  }

 private:
  hwloc_topology_t topo_;
  size_t bytes_;
  void* p_ = nullptr;
};

/// Binds the calling thread to a NUMA node's cores for the case; restores the old binding.
class ThreadBinding {
 public:
  ThreadBinding(hwloc_topology_t topo, hwloc_obj_t node) : topo_(topo) {
    old_ = hwloc_bitmap_alloc();
    have_old_ = hwloc_get_cpubind(topo, old_, HWLOC_CPUBIND_THREAD) == 0;
    if (hwloc_set_cpubind(topo, node->cpuset, HWLOC_CPUBIND_THREAD) == 0)
      status_ = "bound to the cores of NUMA node " + std::to_string(node->os_index);
    else
      status_ = std::string("not bound: hwloc_set_cpubind: ") + std::strerror(errno);
  }
  ~ThreadBinding() {
    if (have_old_) hwloc_set_cpubind(topo_, old_, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(old_);
  }
  const std::string& status() const { return status_; }

 private:
  hwloc_topology_t topo_;
  hwloc_bitmap_t old_;
  bool have_old_ = false;
  std::string status_;
};

/// A node-wide exclusive lock (flock) so that one GPU of the node copies at a time; waiting
/// sleeps in the kernel, stealing no core from the copy in progress.
class NodeLock {
 public:
  NodeLock() {
    std::string path = (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
                       std::string("/clusterbench-host_device_copy-") + std::to_string(getuid()) +
                       ".lock";
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    CHECK_MSG(fd_ >= 0, "libc", "open " + path + ": " + std::strerror(errno));
    path_ = path;
  }
  ~NodeLock() {
    if (fd_ >= 0) close(fd_);
  }
  void lock() {
    while (flock(fd_, LOCK_EX) != 0)
      CHECK_MSG(errno == EINTR, "libc", "flock " + path_ + ": " + std::strerror(errno));
  }
  void unlock() { flock(fd_, LOCK_UN); }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

/// Where a case's host memory goes (the chosen NUMA node, near or far) and where its copying
/// thread goes (the GPU's own node, in both placements: only the memory moves).
struct Placement {
  NumaTopology numa;
  int gpu_node = -1, memory_node = -1;
  hwloc_obj_t near_obj = nullptr, memory_obj = nullptr;
};

/// The placement for a GPU on NUMA node `gpu_node` (-1: unknown); throws Waived when there is
/// none (choose_host_numa's reason).
Placement place(hwloc_topology_t topo, int gpu_node, const std::string& placement) {
  Placement p;
  p.numa = numa_topology(topo);
  p.gpu_node = gpu_node;
  NumaChoice near = choose_host_numa(p.numa, gpu_node, "near");
  NumaChoice mem = choose_host_numa(p.numa, gpu_node, placement);
  if (!mem.why_not.empty()) throw Waived(mem.why_not);
  p.memory_node = mem.node;
  p.near_obj = hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(near.node));
  p.memory_obj = hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(mem.node));
  CHECK_MSG(p.near_obj && p.memory_obj, "hwloc", "NUMA node object not found");
  return p;
}

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

const GpuInfo* env_gpu_by_bus_id(const EnvRecord& env, const std::string& bus_id) {
  std::string want = normalize_nvml_bus_id(bus_id);
  for (const auto& g : env.gpus)
    if (!g.pci_bus_id.empty() && normalize_nvml_bus_id(g.pci_bus_id) == want) return &g;
  return nullptr;
}

/// One case of compute.host_device_copy, typed: its params are written and read here only.
struct CopyCase {
  std::string direction;  ///< h2d | d2h | bidir
  std::string memory;     ///< pinned | pageable
  std::string numa;       ///< near | far
  std::string gpus;       ///< all (every GPU of the node at once) | one (one at a time)

  json params() const {
    return {{"direction", direction}, {"memory", memory}, {"numa", numa}, {"gpus", gpus}};
  }
  /// The case of `p`; an absent key reads as its first choice (h2d, pinned, near, all).
  static CopyCase of(const json& p) {
    return {p.value("direction", "h2d"), p.value("memory", "pinned"), p.value("numa", "near"),
            p.value("gpus", "all")};
  }
};

class HostDeviceCopy : public Benchmark {
 public:
  std::string id() const override { return "compute.host_device_copy"; }
  std::string description() const override {
    return "Host <-> device copy bandwidth over PCIe: h2d, d2h, bidir; pinned and pageable; host "
           "memory near and far (hwloc); all GPUs at once and one at a time; PCIe gen/width "
           "read under load";
  }
  Level level() const override { return Level::gpu; }
  bool needs_gpu() const override { return true; }
  std::vector<json> cases(const Settings& s) const override {
    std::vector<json> out;
    for (const auto& g : gpus_(s))
      for (const auto& n : numa_(s))
        for (const auto& m : memory_(s))
          for (const auto& d : directions_(s)) out.push_back(CopyCase{d, m, n, g}.params());
    return out;
  }
  std::string applicable(const NodeEnv&) const override { return ""; }

  /// Bytes per copy and direction: --set bytes, else 64M / 256M / 1G by suite; a multiple of 16.
  long long case_bytes(const Settings& s) const { return bytes_(s) / 16 * 16; }

  /// Copies at a nominal 25 GB/s (PCIe Gen4 x16) through the measurement loop, plus filling the
  /// host buffers (~5 GB/s) and pinning them; gpus=one also waits for the node's other GPUs'
  /// turns (x8, the seed's GPUs per node).
  double estimate_s(const Settings& s, const json& p) const override {
    const CopyCase c = CopyCase::of(p);
    const std::string& direction = c.direction;
    double bytes = static_cast<double>(case_bytes(s));
    double loop = loop_estimate_s(case_min_time(s, id()),
                                  host_copy_bytes_moved(direction, case_bytes(s)) / 25e9);
    double setup = 0.5 + (direction == "h2d" ? 1 : 2) * bytes / 5e9;
    return setup + loop * (c.gpus == "one" ? 8 : 1);
  }

  void run(CaseRun& run) const override {
    const CopyCase c = CopyCase::of(run.params());
    const std::string& direction = c.direction;
    const json dev = gpu_call("CUDA", [] { return gpu::current_device(); });
    const GpuInfo* g = env_gpu_by_bus_id(run.env(), dev.at("pci_bus_id"));
    hwloc_topology_t topo = live_topology();
    const Placement where = place(topo, g ? g->numa_node : -1, c.numa);
    ThreadBinding binding(topo, where.near_obj);

    long long bytes = case_bytes(run.settings());
    CHECK_MSG(bytes > 0, "settings", "compute.host_device_copy.bytes must be at least 16");
    HostBuffer src(topo, where.memory_obj, static_cast<size_t>(bytes));
    std::optional<HostBuffer> dst;
    if (direction != "h2d") dst.emplace(topo, where.memory_obj, static_cast<size_t>(bytes));
    std::optional<NodeLock> lock;
    if (c.gpus == "one") lock.emplace();
    GpuCase gpu(run, "host_copy",
                {{"bytes", bytes},
                 {"direction", direction},
                 {"pinned", c.memory == "pinned"},
                 {"host_src", address(src.get())},
                 {"host_dst", address(dst ? dst->get() : nullptr)}},
                copy_options(lock));
    check_copy(gpu.info(),
               direction + " " + c.memory + " copy of " + std::to_string(bytes) + " bytes");
    gpu.exec();
    record(run, gpu, bytes, g);
    run.set_extra("numa", {{"gpu_node", where.gpu_node},
                           {"memory_node", where.memory_node},
                           {"memory_policy", "hwloc_alloc_membind BIND|STRICT"},
                           {"memory_location", src.location()},
                           {"thread", binding.status()},
                           {"nodes", where.numa.nodes}});
    run.set_extra("concurrency", concurrency(run, lock));
  }

 private:
  /// Telemetry from the second batch on (PCIe read under load); with the node-wide lock held
  /// around each batch for gpus=one.
  static GpuCaseOptions copy_options(std::optional<NodeLock>& lock) {
    GpuCaseOptions o;
    o.telemetry_after_first_batch = true;
    if (lock) {
      o.before_batch = [&lock] { lock->lock(); };
      o.after_batch = [&lock] { lock->unlock(); };
    }
    return o;
  }

  /// The plugin's check of one copy each way (its info's "verification"): every word right.
  static void check_copy(const json& info, const std::string& what) {
    const long long checked = info.at("verification").at("checked_words"),
                    mismatches = info.at("verification").at("mismatches");
    CHECK_MSG(checked > 0 && mismatches == 0, "CUDA",
              what + ": " + std::to_string(mismatches) + " of " + std::to_string(checked) +
                  " checked 16-byte words are wrong; no rate is reported");
  }

  static json concurrency(const CaseRun& run, const std::optional<NodeLock>& lock) {
    if (!lock)
      return {{"mode", "all GPUs of the node at once"}, {"local_ranks", run.ctx().local_size()}};
    return {{"mode", "one GPU of the node at a time"},
            {"local_ranks", run.ctx().local_size()},
            {"lock", lock->path()}};
  }

  /// The rate, the telemetry and what the copy was, into the record.
  static void record(CaseRun& run, GpuCase& gpu, long long bytes, const GpuInfo* g) {
    const json& info = gpu.info();
    double moved = host_copy_bytes_moved(CopyCase::of(run.params()).direction, bytes);
    run.add_rate("bandwidth", Work::bytes(moved));
    run.add_best_rate("bandwidth_best", Work::bytes(moved));
    gpu.record_telemetry();
    run.set_extra("buffer_bytes", bytes);
    run.set_extra("bytes_per_op", moved);
    run.set_extra("device", info.at("device"));
    run.set_extra("pci_bus_id", info.at("pci_bus_id"));
    run.set_extra("verification", info.at("verification"));
    if (info.contains("host_threads")) run.set_extra("host_threads", info.at("host_threads"));
    if (!g) return;
    run.set_extra("uuid", g->uuid);
    run.set_extra("pcie_idle", {{"gen_current", g->pcie.gen_current},
                                {"gen_max", g->pcie.gen_max},
                                {"width_current", g->pcie.width_current},
                                {"width_max", g->pcie.width_max}});
  }

  Knob<std::vector<std::string>> directions_ =
      knobs_.choices("directions", kDirections, "host to device, device to host, both at once");
  Knob<std::vector<std::string>> memory_ =
      knobs_.choices("memory", kMemories, "pinned (cudaHostRegister) and/or pageable host memory");
  Knob<std::vector<std::string>> numa_ = knobs_.choices(
      "numa", kPlacements, "host memory on the GPU's NUMA node (near) and/or the farthest (far)");
  Knob<std::vector<std::string>> gpus_ = knobs_.choices(
      "gpus", kConcurrency, "all GPUs of a node copying at once and/or one at a time");
  Knob<long long> bytes_ =
      knobs_.size("bytes", SuiteDefault("64M", "256M", "1G"), "bytes per copy and direction");
};

CLUSTERBENCH_REGISTER(HostDeviceCopy);

}  // namespace
}  // namespace clusterbench::compute
