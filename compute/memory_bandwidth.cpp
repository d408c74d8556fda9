// compute.memory_bandwidth: host memory bandwidth by STREAM's copy, scale, add and triad.
// Formulas: docs/metrics.md "STREAM". One thread per physical core, bound to its core (hwloc);
// arrays at least 4x the last-level cache, capped by available memory; STREAM's validation.
#include "compute/memory_bandwidth.hpp"

#include <hwloc.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "compute/stream_kernels.hpp"
#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"

namespace clusterbench::compute {

namespace {
constexpr double kScalar = 3.0;
constexpr double kEpsilon = 1e-13;  // stream.c's tolerance for 8-byte reals
const std::vector<std::string> kKernels = {"copy", "scale", "add", "triad"};
}  // namespace

double stream_bytes_per_element(const std::string& kernel) {
  if (kernel == "copy" || kernel == "scale") return 2 * sizeof(double);
  if (kernel == "add" || kernel == "triad") return 3 * sizeof(double);
  throw std::invalid_argument("unknown STREAM kernel '" + kernel + "'");
}

double stream_expected(const std::string& kernel) {
  // a = 1, b = 2, c = 1 before the kernel; each kernel is idempotent when repeated.
  if (kernel == "copy") return 1.0;                   // c = a
  if (kernel == "scale") return kScalar * 1;          // b = q c
  if (kernel == "add") return 1.0 + 2.0;              // c = a + b
  if (kernel == "triad") return 2.0 + kScalar * 1.0;  // a = b + q c
  throw std::invalid_argument("unknown STREAM kernel '" + kernel + "'");
}

double stream_relative_error(const std::string& kernel, const double* out, long long n) {
  double expected = stream_expected(kernel);
  double sum = 0;
  for (long long i = 0; i < n; ++i) sum += std::fabs(out[i] - expected);
  return n > 0 ? sum / static_cast<double>(n) / std::fabs(expected) : 0;
}

namespace {

struct Topology {
  hwloc_topology_t topo = nullptr;
  Topology() {
    hwloc_topology_init(&topo);
    hwloc_topology_load(topo);
  }
  ~Topology() { hwloc_topology_destroy(topo); }
  int cores() const { return hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE); }
  /// Sum of the last-level caches' sizes, bytes.
  long long llc_bytes() const {
    long long total = 0;
    for (hwloc_obj_type_t t : {HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L2CACHE}) {
      int n = hwloc_get_nbobjs_by_type(topo, t);
      for (int i = 0; i < n; ++i)
        total += static_cast<long long>(hwloc_get_obj_by_type(topo, t, i)->attr->cache.size);
      if (total > 0) return total;
    }
    return 32LL << 20;
  }
  /// Binds the calling thread to core `i` (modulo the core count). Returns false if refused.
  bool bind_thread_to_core(int i) const {
    int n = cores();
    if (n <= 0) return false;
    hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, i % n);
    hwloc_bitmap_t set = hwloc_bitmap_dup(core->cpuset);
    hwloc_bitmap_singlify(set);
    bool ok = hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0;
    hwloc_bitmap_free(set);
    return ok;
  }
};

long long mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  long long kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

struct FreeDeleter {
  void operator()(double* p) const { std::free(p); }
};
using Array = std::unique_ptr<double[], FreeDeleter>;

Array alloc_array(long long n) {
  void* p = nullptr;
  if (posix_memalign(&p, 2 << 20, static_cast<size_t>(n) * sizeof(double)) != 0 || !p)
    throw std::runtime_error("cannot allocate " + std::to_string(n * 8) +
                             " bytes for a STREAM array");
  return Array(static_cast<double*>(p));
}

/// One pass of a STREAM kernel over arrays of n doubles: each OpenMP thread its own chunk
/// (stream_chunk, the same as at first touch), vectorised for this CPU (stream_kernels.hpp).
void stream_pass(StreamKernel kernel, double* pa, double* pb, double* pc, long long n, bool nt) {
#pragma omp parallel
  {
    auto [begin, end] = stream_chunk(omp_get_thread_num(), omp_get_num_threads(), n);
    stream_range(kernel, pa, pb, pc, begin, end, kScalar, nt);
  }
}

class MemoryBandwidth : public Benchmark {
 public:
  std::string id() const override { return "compute.memory_bandwidth"; }
  bool in_rounds(const json&) const override { return true; }
  std::string description() const override {
    return "host memory bandwidth, STREAM copy/scale/add/triad, one thread per core";
  }
  Level level() const override { return Level::node; }
  std::vector<json> cases(const Settings& s) const override {
    if (threads_.given(s) && !(threads_(s) >= 1 && threads_(s) <= 4096))
      throw InputError("--set " + id() + ".threads: must be in 1..4096");
    if (array_bytes_.given(s) && array_bytes_(s) < 1024)
      throw InputError("--set " + id() + ".array_bytes: must be at least 1K");
    std::vector<json> out;
    for (const auto& k : kernels_(s)) out.push_back({{"kernel", k}});
    return out;
  }
  std::string applicable(const NodeEnv&) const override { return ""; }

  /// First touch of the three arrays (page faults: 8 GB/s), then the measurement loop over one
  /// kernel pass (2 arrays for copy/scale, 3 for add/triad) at 20 GB/s. Calibrated on the idle
  /// 2-core CI machine (docs/launch.md "Estimates"): 34-45 GB/s measured, 0.07-0.1 s a
  /// case's round in `ci` with 128 MiB arrays.
  double estimate_s(const Settings& s, const json& params) const override {
    const double touch_bw = 8e9, bw = 20e9;
    double array =
        static_cast<double>(array_bytes_.given(s) ? array_bytes_(s) : 4 * Topology().llc_bytes());
    std::string k = params.value("kernel", "triad");
    double op = (k == "copy" || k == "scale" ? 2 : 3) * array / bw;
    return 0.02 + 3 * array / touch_bw +
           loop_estimate_s(case_min_time(s, id()), op, s.loop_samples());
  }

  void run(CaseRun& run) const override {
    const std::string kernel = run.params().at("kernel");
    Topology topo;
    const Settings& s = run.settings();
    int cores = run.env().cpu.physical_cores > 0 ? run.env().cpu.physical_cores : topo.cores();
    int threads = static_cast<int>(threads_.given(s) ? threads_(s) : cores);
    if (threads < 1) threads = 1;
    long long llc = topo.llc_bytes();
    long long array_bytes = array_bytes_.given(s) ? array_bytes_(s) : 4 * llc;
    long long cap = mem_available_bytes() / 2 / 3;  // three arrays in at most half of MemAvailable
    bool capped = cap > 0 && array_bytes > cap;
    if (capped) array_bytes = cap;
    long long n = array_bytes / static_cast<long long>(sizeof(double));
    CHECK_MSG(n > 0, "clusterbench",
              "STREAM array of " + std::to_string(array_bytes) + " bytes is empty");

    Array a = alloc_array(n), b = alloc_array(n), c = alloc_array(n);
    double *pa = a.get(), *pb = b.get(), *pc = c.get();
    omp_set_num_threads(threads);
    int bound = 0;
#pragma omp parallel reduction(+ : bound)
    bound += topo.bind_thread_to_core(omp_get_thread_num()) ? 1 : 0;
    // First touch by the threads that will use each page: the same chunks as every pass.
#pragma omp parallel
    {
      auto [begin, end] = stream_chunk(omp_get_thread_num(), omp_get_num_threads(), n);
      for (long long i = begin; i < end; ++i) pa[i] = 1.0, pb[i] = 2.0, pc[i] = 1.0;
    }
    // Streaming stores when the three arrays cannot stay in the last-level cache between passes.
    const std::string stores = stores_(s);
    const bool nt = stores == "nontemporal" || (stores == "auto" && 3 * array_bytes > llc);
    const StreamKernel k = stream_kernel_of(kernel);
    run.exec([&](long long ops) {
      for (long long i = 0; i < ops; ++i) stream_pass(k, pa, pb, pc, n, nt);
      return -1.0;
    });

    const double* out = kernel == "copy" || kernel == "add" ? pc : kernel == "scale" ? pb : pa;
    double err = stream_relative_error(kernel, out, n);
    CHECK_MSG(err <= kEpsilon, "STREAM",
              "validation failed: average relative error " + std::to_string(err) + " > 1e-13");

    double bytes = stream_bytes_per_element(kernel) * static_cast<double>(n);
    run.add_rate("bandwidth", Work::bytes(bytes));
    run.add_best_rate("bandwidth_best", Work::bytes(bytes));
    run.set_extra("array_bytes", array_bytes);
    run.set_extra("bytes_per_op", bytes);
    run.set_extra("llc_bytes", llc);
    run.set_extra("capped_by_memory", capped);
    run.set_extra("threads", threads);
    run.set_extra("threads_bound_to_cores", bound);
    run.set_extra("validation_relative_error", err);
    run.set_extra("isa", stream_isa());
    run.set_extra("stores", nt ? "nontemporal" : "regular");
  }

 private:
  Knob<std::vector<std::string>> kernels_ =
      knobs_.choices("kernels", kKernels, "STREAM kernels, one case each");
  Knob<long long> array_bytes_ =
      knobs_.size("array_bytes", "", "bytes per array (default: 4 x the last-level cache)");
  Knob<long long> threads_ =
      knobs_.integer("threads", "", "count", "OpenMP threads (default: the physical cores)");
  Knob<std::string> stores_ = knobs_.choice(
      "stores", {"auto", "nontemporal", "regular"},
      "auto: streaming (non-temporal) stores when the three arrays exceed the last-level cache");
};

CLUSTERBENCH_REGISTER(MemoryBandwidth);

}  // namespace
}  // namespace clusterbench::compute
