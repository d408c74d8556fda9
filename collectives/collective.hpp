// Collectives: what every collective shares. Element types and their sums, the per-collective
// description (counts, busbw factor, expected results), the size sweep, nccl-tests' algbw/busbw
// arithmetic, and the backend interface. Formulas: docs/metrics.md "Collectives" (nccl-tests
// doc/PERFORMANCE.md); guide: docs/collectives.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/api/benchmark.hpp"
#include "core/api/bf16.hpp"

namespace clusterbench::collectives {

/// Element types of the sweep. Reductions use the sum.
enum class Dtype { f32, f16, bf16 };

/// "float" | "half" | "bfloat16" (nccl-tests' names). Throws InputError naming `what` otherwise.
Dtype parse_dtype(const std::string& name, const std::string& what);
const char* dtype_name(Dtype t);
/// Bytes per element: 4, 2, 2.
std::size_t dtype_size(Dtype t);

/// IEEE 754 binary16 from a float, rounding to nearest even; overflow gives infinity.
std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
/// bfloat16 (the top 16 bits of a float) from a float, rounding to nearest even; NaN stays NaN
/// (core/api/bf16.hpp).
using clusterbench::bf16_to_float;
using clusterbench::float_to_bf16;

/// Element i of an array of type `t`, as a double.
double load(Dtype t, const void* data, long long i);
/// Stores `v` (rounded to nearest even in half/bfloat16) as element i.
void store(Dtype t, void* data, long long i, double v);
/// inout[i] = inout[i] + in[i] for `count` elements, each sum computed in float and rounded to
/// `t`: the reduction the MPI backend registers for half and bfloat16 (MPI has no such types).
void sum_into(Dtype t, const void* in, void* inout, long long count);

/// Element counts of one operation on one rank, as nccl-tests' getCollByteCount gives them.
/// `block` is the per-rank block (count / n) for the gathering and scattering collectives, else
/// the count. In-place, send and receive share one buffer and start at the two offsets (elements).
struct Layout {
  long long send_count = 0;
  long long recv_count = 0;
  long long block = 0;
  long long send_offset_inplace = 0;
  long long recv_offset_inplace = 0;
};

/// One case of a collective, typed: the params of its case key are written (params()) and read
/// (of()) here; an NCCL case's placement params (path, span, algo, nccl_ib_*) travel in `nccl`
/// as the plan made them (nccl_env reads them into NCCL's environment).
struct CollectiveCase {
  std::string backend;  ///< "mpi" (host buffers) or "nccl" (GPU buffers)
  std::string dtype;    ///< "float", "half", "bfloat16"
  long long bytes = 0;  ///< the size requested (nccl-tests' -b ... -e sweep)
  nlohmann::json nccl = nlohmann::json::object();

  bool mpi() const { return backend == "mpi"; }
  /// An NCCL case's path ("nvlink", "network", ...), "" for an MPI case.
  std::string path() const { return nccl.value("path", ""); }
  /// {"backend", "dtype", "bytes"} and, for an NCCL case, its placement params.
  nlohmann::json params() const;
  /// The case of `params`; an absent key reads as empty (a string) or 0 (the size).
  static CollectiveCase of(const nlohmann::json& params);
};

/// One collective: its counts, its busbw factor and the results it must produce.
struct Collective {
  const char* name;  ///< "all_reduce"; the benchmark id is "collectives." + name
  bool rooted;       ///< broadcast, reduce: root 0 (nccl-tests' -r 0)
  bool reduces;      ///< uses the reduction op (sum)
  /// Counts for `count` = requested bytes / element size on `rank` of `n`, elements of
  /// `elt_size` bytes (alltoall aligns each peer's block to 16 bytes with it).
  Layout (*layout)(long long count, int rank, int n, std::size_t elt_size);
  /// busbw = algbw x factor(n) (docs/design.md / nccl-tests PERFORMANCE.md).
  double (*factor)(int n);
  /// Expected result element i on `rank` of `n` after one operation whose inputs are
  /// input_value(r, j) on rank r; NaN where this rank holds no result (reduce off the root).
  /// It depends on i only through i mod kInputPeriod and i / block (count_wrong caches it so).
  double (*expected)(int rank, int n, long long i, long long block, int root);
};

/// The seven collectives, each defined in its own file (collectives/<name>.cpp).
extern const Collective kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAlltoall,
    kSendrecv;

/// What rank r puts into send element i: integers 1..5, so that sums over up to 51 ranks are exact
/// in float, half and bfloat16, and expected values are computed independently of any backend.
/// Periodic in i: input_value(r, i + kInputPeriod) == input_value(r, i).
double input_value(int rank, long long i);
inline constexpr long long kInputPeriod = 5;

/// Bytes S of one operation, nccl-tests' size column: max(send, recv) count x element size
/// (all_gather and reduce_scatter: the total gathered size; alltoall: what one rank sends).
long long op_bytes(const Layout& l, Dtype t);
/// algbw = S / t in GB/s (1e9 B/s). `seconds` > 0.
double algbw_gbs(double bytes, double seconds);
/// busbw = algbw x factor(n) in GB/s.
double busbw_gbs(const Collective& c, double bytes, double seconds, int n);

/// Most multiplications a sweep may take from minbytes to maxbytes (8 B to 16 GiB at factor 2
/// is 31; at 1.01, 2,160).
inline constexpr int kMaxSweepSteps = 4096;

/// Sizes of the sweep: minbytes, minbytes x stepfactor, ... up to maxbytes (nccl-tests -b -e -f),
/// each rounded down to a whole byte. Throws InputError naming `what` unless
/// 0 < minbytes <= maxbytes, stepfactor > 1 and the sweep takes fewer than kMaxSweepSteps steps.
std::vector<long long> sweep(long long minbytes, long long maxbytes, double stepfactor,
                             const std::string& what);

/// Relative tolerance of a sum over n ranks in `t`: n half-ulps of its format (exact for the small
/// integers input_value gives; a margin for reductions done in another order).
double tolerance(Dtype t, int n);

/// Counts result elements that differ from `c.expected` beyond tolerance(t, n) on this rank.
/// `result` holds `count` elements starting at element `first` of the whole result (a chunk of
/// it: the host reads large results in pieces).
long long count_wrong(const Collective& c, Dtype t, const void* result, long long count, int rank,
                      int n, long long block, int root, long long first = 0);

/// Elements of host staging a case fills and reads through at a time: large buffers are filled,
/// uploaded, downloaded and checked in pieces of 64 MiB, so a 1 GiB collective on 8 ranks needs
/// 512 MiB of host memory for its checks, not 8 GiB.
inline constexpr long long kStagingChunkBytes = 64LL << 20;

/// A collective library on one kind of buffer. Every rank of the world calls run() together.
/// Errors throw CallError; a communicator that can no longer be trusted (deadline, async error)
/// throws AbortRun, which ends the run with exit 3.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// A buffer of `bytes` in the backend's memory (host for MPI, device for NCCL).
  virtual void* alloc(std::size_t bytes) = 0;
  virtual void release(void* p) = 0;
  /// Copies between host memory and the backend's memory.
  virtual void upload(void* dst, const void* host, std::size_t bytes) = 0;
  virtual void download(void* host, const void* src, std::size_t bytes) = 0;
  /// `ops` operations of `c` on `t`, sum, with `send`/`recv` laid out as `l`. In-place, both
  /// point into one buffer at l's in-place offsets. Returns the seconds the backend measured
  /// itself (CUDA events), or -1 for the caller's clock.
  virtual double run(const Collective& c, Dtype t, const void* send, void* recv, const Layout& l,
                     int root, bool inplace, long long ops) = 0;
  /// Whether `c` has an in-place form here (MPI: sendrecv has none, the buffers may not overlap).
  virtual bool supports_inplace(const Collective& c) const = 0;
  /// Whether the in-place form's result is defined, so that its #wrong may judge the case. False
  /// where the library runs it but does not promise its result (NCCL: alltoall, sendrecv);
  /// such a form is timed and its check shown as n/a.
  virtual bool checks_inplace(const Collective& /*c*/) const { return true; }
  /// Where an in-place result starts in the shared buffer, elements (MPI's in-place
  /// reduce_scatter leaves its block at the start; NCCL's at rank x block).
  virtual long long inplace_result_offset(const Collective& c, const Layout& l) const = 0;
  /// Facts for the record's extra (library version, NCCL environment of the path preset).
  virtual json facts() const { return json::object(); }
  /// One untimed out-of-place operation before a case's timed loops, telling what the library
  /// chose for it (NCCL: algorithm, protocol, channels, from its own logging; nccl_log.hpp), as
  /// extra fields. MPI: nothing to tell, no operation.
  virtual json probe(const Collective& /*c*/, Dtype /*t*/, const void* /*send*/, void* /*recv*/,
                     const Layout& /*l*/, int /*root*/) {
    return json::object();
  }
  /// The reference, in the same run: one batch of `ops` plain MPI_Allreduce calls (float,
  /// sum, out-of-place, `count` elements, MPI_COMM_WORLD), timed with MPI_Wtime and taken at the
  /// slowest rank (an MPI_Allreduce MAX after it). Returns those seconds for the whole batch; a
  /// negative value where the backend has no plain loop (NCCL: has_plain_allreduce is false). Run
  /// as CaseRun::exec's `paired` reference, one batch after each timed batch of the harness.
  virtual double plain_allreduce(const void* /*send*/, void* /*recv*/, long long /*count*/,
                                 long long /*ops*/) {
    return -1;
  }
  /// Whether plain_allreduce is a real loop here.
  virtual bool has_plain_allreduce() const { return false; }
  /// Elements of `t` of `count` at `data` that differ from `ref` (both this backend's memory), a
  /// result that must repeat exactly (sums of input_value's small integers are exact): the burn-in
  /// compares each all_reduce with the first one checked. The default reads both to the host; NCCL
  /// compares on the GPU (cb_nccl_compare).
  virtual long long count_differing(const void* data, const void* ref, long long count, Dtype t);
  /// MPI: with `seconds` > 0, all_reduce, reduce_scatter and all_gather run as nonblocking calls
  /// tested every `seconds` with a sleep between tests, so that a thread waiting on the network
  /// leaves its core to a computing thread (compute.training_step's gradient thread); 0 (the
  /// default): blocking calls, which busy-poll. NCCL: nothing (its waits are on the GPU).
  virtual void set_poll_sleep(double /*seconds*/) {}
};

/// The MPI backend on host buffers over MPI_COMM_WORLD (collectives/mpi_backend.cpp). Null in a
/// build without MPI.
Backend* mpi_backend();

/// Whether NCCL's in-place form of `c` has a defined result: false for alltoall and sendrecv
/// (grouped ncclSend/ncclRecv on one buffer; nccl-tests' src/alltoall.cu and src/sendrecv.cu set
/// `reportErrors = in_place ? 0 : 1`), true for the others.
bool nccl_checks_inplace(const Collective& c);

/// NCCL path presets (`--set collectives.path=...`): the NCCL environment each sets.
///  nvlink: NCCL's defaults; network: P2P and SHM off, so traffic goes through the NICs even
///  inside a node (GPUDirect RDMA allowed); internode: NCCL's defaults, one rank per node.
/// Throws InputError for another name.
json path_env(const std::string& path);

/// The NCCL environment of a case's params: path_env(params.path), NCCL_ALGO=Ring when
/// params.algo is "ring" (wire bandwidth: busbw is what the links carry), and the RoCE settings
/// params.nccl_ib_gid_index / nccl_ib_tc as NCCL_IB_GID_INDEX / NCCL_IB_TC.
json nccl_env(const json& params);

/// The run's NCCL environment, the one every NCCL user of the run (the collectives, the training
/// step, the burn-in) asks nccl_backend for: NCCL reads its environment once per process, so a run
/// has one communicator and one environment. It is nccl_env of the params a collective case gets
/// from the area's knobs alone (--set collectives.path, .algo, .ib_gid_index, .ib_tc) on this
/// run's nodes.
json run_nccl_env(const Settings& s);

/// The NCCL backend through the GPU plugin (collectives/nccl_host.cpp), created on first use by
/// every rank together: the environment `env` (nccl_env) set, NCCL's own logging captured for
/// the probe, rank 0's ncclUniqueId broadcast with Context::bcast, and each wait bounded by
/// `timeout_s`. NCCL reads its environment once per process, so a later case asking for another
/// `env` fails (std::runtime_error). Throws CallError when the plugin lacks NCCL or init fails;
/// AbortRun when init passes the deadline.
Backend& nccl_backend(const Context& ctx, const json& env, double timeout_s);

/// The console's nccl-tests table being printed by rank 0: its header (a new one when the backend
/// changes) and the sums for its closing lines (table_footer).
struct CollectiveTable {
  std::string header;
  double busbw_sum = 0;
  long long busbw_n = 0, wrong = 0;
};

/// The benchmark of one collective: one case per (backend, dtype, size); each case times the
/// out-of-place and the in-place operation, verifies both, and prints nccl-tests' table row.
/// Its knobs (`--set collectives[.<op>].KEY`) are declared below; `clusterbench list` shows them.
class CollectiveBenchmark : public Benchmark {
 public:
  explicit CollectiveBenchmark(const Collective& c) : coll_(c) {}
  std::string id() const override { return std::string("collectives.") + coll_.name; }
  std::string description() const override;
  Level level() const override { return Level::cluster; }
  /// The MPI cases (NCCL's run on GPUs, whose clocks, not the host, move them).
  bool in_rounds(const json& p) const override { return CollectiveCase::of(p).mpi(); }
  std::vector<json> cases(const Settings& s) const override;
  std::string applicable(const NodeEnv& node) const override;
  /// NCCL cases need a GPU (the GPU disposition waives or fails them); MPI cases need MPI and at
  /// least 2 ranks.
  bool case_needs_gpu(const json& params) const override {
    return CollectiveCase::of(params).backend == "nccl";
  }
  std::string case_waiver(const json& params, const NodeEnv& node) const override;
  /// 0 for an MPI case on one rank (waived at once), else two measurement loops (out-of-place
  /// and in-place) plus setup.
  double estimate_s(const Settings& s, const json& params) const override;
  void run(CaseRun& run) const override;

 private:
  struct Options;  // the knobs' values for one plan or case (collective.cpp)
  /// Reads and checks every knob, in the order the plan reports a bad one. Throws InputError
  /// naming `--set ID.KEY`.
  Options options(const Settings& s) const;
  /// InputError when this collective's NCCL environment differs from the run's (run_nccl_env):
  /// a per-collective path, algo, ib_gid_index or ib_tc would fail every NCCL user after the
  /// first, at run time.
  void check_nccl_env(const Settings& s, const Options& o) const;
  const Collective& coll_;
  mutable CollectiveTable table_;  ///< console: the nccl-tests table being printed

  Knob<long long> minbytes_ =
      knobs_.size("minbytes", "8", "first message size of the sweep (nccl-tests -b)");
  Knob<long long> maxbytes_ = knobs_.size("maxbytes", SuiteDefault("2M", "8G", "8G"),
                                          "last message size at most (nccl-tests -e); ci: <= 64M");
  Knob<double> stepfactor_ =
      knobs_.number("stepfactor", SuiteDefault("8", "2", "2"), "ratio",
                    "multiply the message size by this from one case to the next (nccl-tests -f)");
  Knob<std::vector<std::string>> dtypes_ =
      knobs_.list("dtypes", SuiteDefault("float", "float", "float,half,bfloat16"),
                  "element types, one case each: float, half, bfloat16 (sum in reductions)");
  Knob<std::vector<std::string>> backends_ =
      knobs_.list("backends", SuiteDefault("mpi", "mpi,nccl", "mpi,nccl"),
                  "mpi (host buffers) and/or nccl (GPU buffers, one rank per GPU)");
  Knob<std::string> path_ = knobs_.text(
      "path", "nvlink",
      "NCCL path preset: nvlink (NCCL's defaults), network (through the NICs), internode");
  Knob<std::string> algo_ =
      knobs_.text("algo", "",
                  "NCCL algorithm: auto (NCCL's choice) or ring (default: ring for the network "
                  "paths and runs across nodes, else auto)");
  Knob<std::string> ib_gid_index_ =
      knobs_.text("ib_gid_index", "",
                  "NCCL over RoCE: NCCL_IB_GID_INDEX (default: the launcher's environment)");
  Knob<std::string> ib_tc_ =
      knobs_.text("ib_tc", "", "NCCL over RoCE: NCCL_IB_TC (default: the launcher's environment)");
  Knob<double> timeout_ =
      knobs_.number("timeout", SuiteDefault("60", "300", "600"), "s",
                    "NCCL: how long one wait (init, a batch) may take before the run aborts");
  Knob<std::string> reference_ = knobs_.choice(
      "reference", {"false", "true"},
      "all_reduce, float, MPI only: true also times a plain MPI_Allreduce loop beside it");
  Knob<std::string> fault_ = knobs_.text(
      "fault", "", "test-only fault injection: wrong:RANK, hang:RANK:BYTES or abort:RANK:BYTES");
};

/// nccl-tests' table header (three comment lines) and one row; `inplace_time_us` < 0 prints "n/a"
/// for the whole in-place form, `inplace_wrong` < 0 for its #wrong alone (a form not checked).
std::string table_header();
/// Adds one case's busbw and #wrong to the sums of a table's closing lines: the out-of-place form
/// always, the in-place form (`inplace_busbw` >= 0) only where its result is defined
/// (`inplace_wrong` >= 0). NCCL's in-place alltoall and sendrecv have none: their time is shown
/// n/a and never averaged.
void table_add(CollectiveTable& t, double busbw, long long wrong, double inplace_busbw,
               long long inplace_wrong);
/// nccl-tests' closing lines of a table: "# Out of bounds values : 0 OK" (the wrong elements of
/// the sweep; FAILED when any) and "# Avg bus bandwidth    : 1.49523", the mean of every measured
/// out-of-place and in-place busbw of the sweep (GB/s, %g), as nccl-tests prints them.
std::string table_footer(long long wrong, double busbw_sum, long long busbw_n);

std::string table_row(long long bytes, long long count, const std::string& type,
                      const std::string& redop, int root, double time_us, double algbw,
                      double busbw, long long wrong, double inplace_time_us, double inplace_algbw,
                      double inplace_busbw, long long inplace_wrong);

}  // namespace clusterbench::collectives
