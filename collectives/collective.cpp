// The collectives' benchmark (collective.hpp): its knobs, plan, NCCL environment, buffers and case
// loop; the shared element arithmetic and table are in elements.cpp.
#include "collectives/collective.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "core/api/error.hpp"
#include "core/api/ops_progress.hpp"

namespace clusterbench::collectives {

namespace {

long long mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  long long kb = 0;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

/// A host buffer of `count` elements of `t`.
struct HostBuffer {
  std::vector<unsigned char> bytes;
  HostBuffer(long long count, Dtype t)
      : bytes(static_cast<size_t>(std::max(1LL, count)) * dtype_size(t)) {}
  void* data() { return bytes.data(); }
};

/// `count` elements of `t` at `data`, element i the value of `value_of(first + i)`, a function of
/// period kInputPeriod: each value is converted once and then copied.
template <class Word, class ValueOf>
void fill_words(Dtype t, Word* out, long long count, long long first, const ValueOf& value_of) {
  Word pattern[kInputPeriod];
  for (long long k = 0; k < kInputPeriod; ++k) store(t, &pattern[k], 0, value_of(first + k));
  for (long long i = 0, k = 0; i < count; ++i, k = k + 1 == kInputPeriod ? 0 : k + 1)
    out[i] = pattern[k];
}

template <class ValueOf>
void fill_periodic(Dtype t, void* data, long long count, long long first, const ValueOf& value_of) {
  if (dtype_size(t) == 4)
    fill_words(t, static_cast<std::uint32_t*>(data), count, first, value_of);
  else
    fill_words(t, static_cast<std::uint16_t*>(data), count, first, value_of);
}

/// Elements [first, first + count) of rank `rank`'s input into `data`.
void fill_input(Dtype t, void* data, long long count, int rank, long long first = 0) {
  fill_periodic(t, data, count, first, [rank](long long i) { return input_value(rank, i); });
}

/// A sentinel that no expected value equals, so an operation that writes nothing is caught.
void fill_sentinel(Dtype t, void* data, long long count) {
  fill_periodic(t, data, count, 0, [](long long) { return -1.0; });
}

/// Test-only fault injection (`--set collectives.fault=...`): "wrong:R" makes rank R corrupt
/// one element of each result it verifies; "hang:R:BYTES" makes rank R stop in the timed loop of
/// the case of that size, as a dead peer would, until the watchdog ends the run; "abort:R:BYTES"
/// makes rank R throw AbortRun there, as a backend does whose communicator failed.
struct Fault {
  std::string kind;
  int rank = -1;
  long long bytes = -1;
};

Fault parse_fault(const std::string& text, const std::string& what) {
  Fault f;
  if (text.empty()) return f;
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  try {
    if (parts.size() == 2 && parts[0] == "wrong") {
      f.kind = "wrong";
      f.rank = std::stoi(parts[1]);
      return f;
    }
    if (parts.size() == 3 && (parts[0] == "hang" || parts[0] == "abort")) {
      f.kind = parts[0];
      f.rank = std::stoi(parts[1]);
      f.bytes = parse_size(parts[2], what);
      return f;
    }
  } catch (const std::logic_error&) {
  }
  throw InputError(what + ": '" + text +
                   "' is not wrong:RANK, hang:RANK:BYTES or abort:RANK:BYTES");
}

}  // namespace

std::string CollectiveBenchmark::description() const {
  return std::string("nccl-tests' ") + coll_.name +
         " (algbw, busbw), out-of-place and in-place, MPI on host buffers or NCCL on GPU buffers";
}

struct CollectiveBenchmark::Options {
  long long minbytes = 0, maxbytes = 0;
  double stepfactor = 0;
  std::vector<std::string> dtypes, backends;
  std::string path;
  std::string algo;                 ///< "" where not given: chosen by path and span
  std::string ib_gid_index, ib_tc;  ///< "" where not given: the launcher's environment
  Fault fault;
  bool reference = false;
  double timeout_s = 0;
};

CollectiveBenchmark::Options CollectiveBenchmark::options(const Settings& s) const {
  Options o;
  o.minbytes = minbytes_(s);
  o.maxbytes = maxbytes_(s);
  o.stepfactor = stepfactor_(s);
  if (s.suite() == "ci" && o.maxbytes > (64LL << 20))
    throw InputError("--set " + s.given_key(id(), "maxbytes") + ": the ci suite stays <= 64M");
  o.dtypes = dtypes_(s);
  o.fault = parse_fault(fault_(s), "--set " + s.given_key(id(), "fault"));
  o.reference = reference_(s) == "true";
  o.backends = backends_(s);
  o.path = path_(s);
  path_env(o.path);
  o.algo = algo_(s);
  if (algo_.given(s) && o.algo != "auto" && o.algo != "ring")
    throw InputError("--set " + s.given_key(id(), "algo") + ": '" + o.algo +
                     "' (auto: NCCL's choice, ring)");
  o.ib_gid_index = ib_gid_index_(s);
  o.ib_tc = ib_tc_(s);
  o.timeout_s = timeout_(s);
  check_nccl_env(s, o);
  return o;
}

namespace {

/// The params an NCCL case adds: where it runs (span) and which algorithm it allows. Wire-bandwidth
/// cases (the network paths, and any run across nodes) force the ring (docs/design.md
/// "Collectives"); RoCE settings not given come from the launcher's environment.
json nccl_params(const std::string& path, const std::string& algo, const std::string& gid,
                 const std::string& tc) {
  std::string span = "in-node";
  try {
    if (Context::get().node_count() > 1) span = "inter-node";
  } catch (const std::logic_error&) {  // `list` plans without a context: one node
  }
  json p = {{"path", path},
            {"span", span},
            {"algo", !algo.empty()                           ? algo
                     : path == "nvlink" && span == "in-node" ? "auto"
                                                             : "ring"}};
  auto roce = [](const std::string& given, const char* var) {
    std::string v = given;
    if (v.empty())
      if (const char* e = std::getenv(var)) v = e;
    return v;
  };
  if (std::string v = roce(gid, "NCCL_IB_GID_INDEX"); !v.empty()) p["nccl_ib_gid_index"] = v;
  if (std::string v = roce(tc, "NCCL_IB_TC"); !v.empty()) p["nccl_ib_tc"] = v;
  return p;
}

}  // namespace

json run_nccl_env(const Settings& s) {
  const char* area = "collectives";
  return nccl_env(nccl_params(s.get(area, "path", "nvlink"), s.get(area, "algo", ""),
                              s.get(area, "ib_gid_index", ""), s.get(area, "ib_tc", "")));
}

void CollectiveBenchmark::check_nccl_env(const Settings& s, const Options& o) const {
  if (std::find(o.backends.begin(), o.backends.end(), "nccl") == o.backends.end()) return;
  const json mine = nccl_env(nccl_params(o.path, o.algo, o.ib_gid_index, o.ib_tc));
  const json run = run_nccl_env(s);
  if (mine == run) return;
  std::string keys;
  for (const char* k : {"path", "algo", "ib_gid_index", "ib_tc"})
    if (s.given_key(id(), k) == id() + "." + k && s.has(id(), k))
      keys += (keys.empty() ? "--set " : ", --set ") + id() + "." + k;
  if (keys.empty()) keys = id();
  throw InputError(keys +
                   ": NCCL reads its environment once per process, so every NCCL user of "
                   "a run shares one communicator and one environment (this collective's " +
                   mine.dump() + ", the run's " + run.dump() +
                   "); set path, algo, ib_gid_index and ib_tc for the whole area "
                   "(--set collectives.KEY=VALUE) or run this collective alone");
}

json CollectiveCase::params() const {
  json p = {{"backend", backend}, {"dtype", dtype}, {"bytes", bytes}};
  if (backend == "nccl") p.update(nccl);
  return p;
}

CollectiveCase CollectiveCase::of(const json& p) {
  CollectiveCase c{p.value("backend", ""), p.value("dtype", ""), p.value("bytes", 0LL), {}};
  if (c.backend == "nccl")
    for (const auto& [k, v] : p.items())
      if (k != "backend" && k != "dtype" && k != "bytes") c.nccl[k] = v;
  return c;
}

std::vector<json> CollectiveBenchmark::cases(const Settings& s) const {
  const Options o = options(s);
  const json nccl = nccl_params(o.path, o.algo, o.ib_gid_index, o.ib_tc);
  std::vector<json> out;
  for (const auto& be : o.backends) {
    if (be != "mpi" && be != "nccl")
      throw InputError("--set " + s.given_key(id(), "backends") + ": unknown backend '" + be +
                       "' (mpi, nccl)");
    for (const auto& t : o.dtypes) {
      parse_dtype(t, "--set " + s.given_key(id(), "dtypes"));
      for (long long b : sweep(o.minbytes, o.maxbytes, o.stepfactor,
                               "--set " + id() + ".minbytes/maxbytes/stepfactor")) {
        out.push_back(CollectiveCase{be, t, b, be == "nccl" ? nccl : json::object()}.params());
      }
    }
  }
  return out;
}

std::string CollectiveBenchmark::applicable(const NodeEnv& /*node*/) const {
  return "";  // per backend, in backend_for: NCCL runs on one rank, MPI needs two
}

std::string CollectiveBenchmark::case_waiver(const json& params, const NodeEnv& node) const {
  if (!CollectiveCase::of(params).mpi()) return "";
  // Not mpi_backend(): constructing it is collective, and rank 0 alone asks while planning.
  if (!CLUSTERBENCH_HAVE_MPI) return "built without MPI (-DCLUSTERBENCH_MPI=OFF): no MPI backend";
  // Over one rank MPI moves no data: busbw is 0 by definition and algbw meaningless.
  if (node.ctx.world_size() < 2)
    return "MPI backend: needs at least 2 ranks (this run has " +
           std::to_string(node.ctx.world_size()) + ")";
  return "";
}

double CollectiveBenchmark::estimate_s(const Settings& s, const json& params) const {
  const CollectiveCase c = CollectiveCase::of(params);
  if (c.mpi() && Context::get().world_size() < 2) return 0;
  // The in-place and out-of-place loops; the reference (float all_reduce on MPI) runs one batch
  // beside each out-of-place batch, a third loop's worth.
  const bool reference = reference_(s) == "true" && std::string(coll_.name) == "all_reduce" &&
                         c.mpi() && c.dtype == "float";
  return 0.2 + (reference ? 3 : 2) * loop_estimate_s(min_time(s), 0);
}

namespace {

/// The backend of a case. NCCL cases follow the GPU disposition (docs/design.md "GPU plugin"):
/// waived without GPUs, failed on a broken GPU node; agreed across the ranks so that none waits for
/// a peer that skipped. `timeout_s` bounds each NCCL wait.
Backend& backend_for(CaseRun& run, double timeout_s) {
  const Context& ctx = run.ctx();
  const CollectiveCase c = CollectiveCase::of(run.params());
  if (c.mpi()) {
    if (!mpi_backend()) throw Waived("built without MPI (-DCLUSTERBENCH_MPI=OFF): no MPI backend");
    // Over one rank MPI moves no data: busbw is 0 by definition and algbw meaningless.
    if (ctx.world_size() < 2) throw Waived("MPI backend: needs at least 2 ranks (this run has 1)");
    return *mpi_backend();
  }
  // NCCL on one rank still runs its kernels on the GPU: busbw is 0 (factor 0), so the case is a
  // correctness check of the results (scripts/gpu-check.sh), and algbw the kernel's rate.
  GpuDisposition d = run.gpu();
  const std::string path = c.path();
  if (path == "internode" && ctx.local_size() > 1 && d.runs()) {
    d.state = GpuState::waived;
    d.reason = "path internode needs one rank per node; " + std::to_string(ctx.local_size()) +
               " ranks share " + ctx.host();
  }
  int mine = d.runs() ? 0 : d.state == GpuState::waived ? 1 : 2;
  int worst = static_cast<int>(ctx.allreduce_max(mine));
  if (mine == 1) throw Waived(d.reason);
  if (mine == 2) throw std::runtime_error(d.reason);
  if (worst == 1) throw Waived("not applicable on another rank (its record says why)");
  if (worst == 2) throw std::runtime_error("the GPU failed on another rank (its record says why)");
  return nccl_backend(ctx, nccl_env(run.params()), timeout_s);
}

/// One case on this rank: its element type, its layout and the sizes of its buffers.
struct CaseShape {
  Dtype t = Dtype::f32;
  int n = 0, rank = 0, root = -1;
  long long es = 0;         ///< bytes per element
  long long requested = 0;  ///< the case's `bytes` param
  Layout l;
  long long bytes = 0;          ///< S, nccl-tests' size column
  long long inplace_count = 0;  ///< the in-place buffer: send and receive at their offsets
  long long staging_count = 0;  ///< the host buffer that fills and reads either form, in pieces
};

/// The shape of the case `params` of collective `c` on `be`. Waived when the size holds less than
/// one block per rank (an element; alltoall: 16 bytes).
CaseShape case_shape(const Collective& c, const Backend& be, const json& params,
                     const std::string& id) {
  CaseShape s;
  s.n = be.size(), s.rank = be.rank(), s.root = c.rooted ? 0 : -1;
  const CollectiveCase cc = CollectiveCase::of(params);
  s.t = parse_dtype(cc.dtype, id);
  s.es = static_cast<long long>(dtype_size(s.t));
  s.requested = cc.bytes;
  s.l = c.layout(s.requested / s.es, s.rank, s.n, dtype_size(s.t));
  s.bytes = op_bytes(s.l, s.t);
  if (s.l.block == 0)
    throw Waived(std::to_string(s.requested) + " B holds less than one block of " +
                 dtype_name(s.t) + " per rank of " + std::to_string(s.n) +
                 " (a block: one element; alltoall's: 16 bytes, as nccl-tests)");
  s.inplace_count =
      std::max(s.l.send_offset_inplace + s.l.send_count, s.l.recv_offset_inplace + s.l.recv_count);
  s.staging_count =
      std::min(std::max(s.inplace_count, s.l.send_count), std::max(1LL, kStagingChunkBytes / s.es));
  return s;
}

/// Host memory: the staging buffer, and for MPI the out-of-place send + recv and the in-place
/// buffer, within half of MemAvailable shared by the node's ranks; the smallest node decides
/// (a collective over the world). Waived beyond it.
void check_host_memory(const CaseShape& s, const Backend& be, const Context& ctx) {
  long long need = s.staging_count * s.es;
  if (be.name() == "mpi") need += (s.l.send_count + s.l.recv_count + s.inplace_count) * s.es;
  double cap = ctx.allreduce_min(static_cast<double>(mem_available_bytes()) / 2 /
                                 std::max(1, ctx.local_size()));
  if (static_cast<double>(need) > cap)
    throw Waived(std::to_string(need) + " B of host buffers per rank exceed the free memory " +
                 "share of " + std::to_string(static_cast<long long>(cap)) + " B");
}

/// A buffer in the backend's memory.
struct BackendBuffer {
  Backend& be;
  void* p;
  BackendBuffer(Backend& b, long long count, Dtype t)
      : be(b), p(b.alloc(static_cast<size_t>(std::max(1LL, count)) * dtype_size(t))) {}
  ~BackendBuffer() { be.release(p); }
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;
};

/// A library error inside an operation leaves the peers waiting in it: it ends the run
/// ("on timeout or error, the rank aborts"), with the error's call, host and rank.
template <class F>
double abort_on_error(F&& f) {
  try {
    return f();
  } catch (const CallError& e) {
    throw AbortRun(e.what());
  }
}

/// The buffers of one case and what is done with them: fill, operate, read back and check.
class CaseBuffers {
 public:
  CaseBuffers(const Collective& c, Backend& be, const CaseShape& s)
      : c_(c),
        be_(be),
        s_(s),
        send_(be, s.l.send_count, s.t),
        recv_(be, s.l.recv_count, s.t),
        inbuf_(be, s.inplace_count, s.t),
        host_(s.staging_count, s.t),
        has_inplace_(be.supports_inplace(c)),
        checks_inplace_(has_inplace_ && be.checks_inplace(c)),
        result_off_(be.inplace_result_offset(c, s.l)) {}

  bool has_inplace() const { return has_inplace_; }
  /// Whether the in-place result is defined and so checked (Backend::checks_inplace).
  bool checks_inplace() const { return checks_inplace_; }

  /// Fresh inputs for one form, its result area filled with the sentinel (staged in pieces of
  /// staging_count elements).
  void prepare(bool inplace) {
    const Layout& l = s_.l;
    if (inplace) {
      // The in-place buffer: the sentinel, with this rank's input at the send offset.
      stage(inbuf_.p, s_.inplace_count, [&](void* h, long long first, long long n) {
        fill_sentinel(s_.t, h, n);
        const long long a = std::max(first, l.send_offset_inplace),
                        b = std::min(first + n, l.send_offset_inplace + l.send_count);
        if (a < b) fill_input(s_.t, at(h, a - first), b - a, s_.rank, a - l.send_offset_inplace);
      });
    } else {
      stage(recv_.p, l.recv_count,
            [&](void* h, long long, long long n) { fill_sentinel(s_.t, h, n); });
      stage(send_.p, l.send_count,
            [&](void* h, long long first, long long n) { fill_input(s_.t, h, n, s_.rank, first); });
    }
  }

  /// `ops` operations of one form; the backend's own seconds or -1. Each batch is counted
  /// (core/api/ops_progress.hpp): at a hang, rank 0 names the ranks that never started the
  /// operation their peers wait in.
  double op(bool inplace, long long ops) {
    const Layout& l = s_.l;
    progress::started(ops);
    double s = abort_on_error([&] {
      return inplace ? be_.run(c_, s_.t, at(inbuf_.p, l.send_offset_inplace),
                               at(inbuf_.p, l.recv_offset_inplace), l, s_.root, true, ops)
                     : be_.run(c_, s_.t, send_.p, recv_.p, l, s_.root, false, ops);
    });
    progress::finished(ops);
    return s;
  }

  /// One batch of the plain MPI_Allreduce loop on the out-of-place buffers, counted like the
  /// harness's batches for a hang's report.
  double plain_allreduce(long long ops) {
    progress::started(ops);
    double s =
        abort_on_error([&] { return be_.plain_allreduce(send_.p, recv_.p, s_.l.send_count, ops); });
    progress::finished(ops);
    return s;
  }

  /// What the library chose for this case, from one untimed out-of-place operation.
  json probe() {
    prepare(false);
    return be_.probe(c_, s_.t, send_.p, recv_.p, s_.l, s_.root);
  }

  /// Correctness after the timed loop, never inside it: fresh inputs, one operation, a check.
  /// Returns the wrong elements summed over the ranks.
  long long verify(bool inplace, const Fault& fault, const Context& ctx) {
    prepare(inplace);
    op(inplace, 1);
    void* result = inplace ? at(inbuf_.p, result_off_) : recv_.p;
    long long wrong = 0;
    for (long long first = 0; first < s_.l.recv_count; first += s_.staging_count) {
      const long long n = std::min(s_.staging_count, s_.l.recv_count - first);
      be_.download(host_.data(), at(result, first), static_cast<size_t>(n * s_.es));
      if (first == 0 && fault.kind == "wrong" && fault.rank == s_.rank)
        store(s_.t, host_.data(), 0, 1e6);
      wrong += count_wrong(c_, s_.t, host_.data(), n, s_.rank, s_.n, s_.l.block, s_.root, first);
    }
    return ctx.allreduce_sum(wrong);
  }

 private:
  /// Fills `count` elements of backend memory at `dst` piece by piece: `fill(host, first, n)`
  /// writes elements [first, first + n) into the staging buffer, which is then uploaded.
  template <class Fill>
  void stage(void* dst, long long count, const Fill& fill) {
    for (long long first = 0; first < count; first += s_.staging_count) {
      const long long n = std::min(s_.staging_count, count - first);
      fill(host_.data(), first, n);
      be_.upload(at(dst, first), host_.data(), static_cast<size_t>(n * s_.es));
    }
  }

  void* at(void* base, long long elems) const {
    return static_cast<void*>(static_cast<unsigned char*>(base) + elems * s_.es);
  }
  const Collective& c_;
  Backend& be_;
  const CaseShape& s_;
  BackendBuffer send_, recv_, inbuf_;
  HostBuffer host_;
  const bool has_inplace_;
  const bool checks_inplace_;
  const long long result_off_;
};

/// The timed-loop faults of `--set collectives.fault`: on the rank and size they name, stop as a
/// dead peer would (until the watchdog ends the run), or throw as a failed communicator does.
void inject_fault(const Fault& f, const CaseShape& s, const Context& ctx) {
  if (f.rank != s.rank || f.bytes != s.requested) return;
  if (f.kind == "hang")
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (f.kind == "abort")
    throw AbortRun("injected fault: communicator failed at " + std::to_string(s.requested) +
                   " B on " + ctx.host() + " rank " + std::to_string(s.rank));
}

/// Why the plain-loop reference cannot run for this case ("" when it can).
std::string reference_refusal(const Collective& c, Dtype t, const Backend& be) {
  if (std::string(c.name) != "all_reduce" || t != Dtype::f32)
    return "the plain loop is float all_reduce only";
  if (!be.has_plain_allreduce()) return "the " + be.name() + " backend has no plain loop";
  return "";
}

/// Median times and verification of one case.
struct Timings {
  TimeStats oop{}, ip{}, ref{};  ///< out-of-place, in-place, the plain loop's reference
  std::vector<double> oop_samples, ip_samples;  ///< seconds per operation, each sample
  long long oop_wrong = 0, ip_wrong = 0;        ///< ip_wrong -1: in-place not checked (n/a)
};

/// One form timed by the measurement loop on fresh inputs; `reference`, when set, runs one
/// batch after each timed batch (CaseRun::exec's `paired`).
TimeStats timed(CaseRun& run, CaseBuffers& bufs, const CaseShape& s, const Fault& fault,
                bool inplace, const std::function<double(long long)>& reference) {
  bufs.prepare(inplace);
  run.exec(
      [&](long long ops) {
        inject_fault(fault, s, run.ctx());
        return bufs.op(inplace, ops);
      },
      inplace ? "in-place" : "out-of-place", reference);
  return run.stats();
}

/// The in-place form (where the backend has one), then the out-of-place form, last so that the
/// record's time statistics are out-of-place; each verified after its timed loop.
/// `with_reference`: the check that the harness adds nothing, in the same run on the same
/// buffers: after each timed out-of-place batch, one batch of the same count of plain
/// MPI_Allreduce calls (A/B interleaved, so a slow spell of a shared machine falls on both).
Timings measure(CaseRun& run, CaseBuffers& bufs, const CaseShape& s, const Fault& fault,
                bool with_reference) {
  Timings r;
  if (bufs.has_inplace()) {
    r.ip = timed(run, bufs, s, fault, true, nullptr);
    r.ip_samples = run.samples();
    // An in-place form without a defined result is timed only (nccl-tests: reportErrors = 0).
    r.ip_wrong = bufs.checks_inplace() ? bufs.verify(true, fault, run.ctx()) : -1;
  }
  std::function<double(long long)> reference;
  if (with_reference) reference = [&bufs](long long ops) { return bufs.plain_allreduce(ops); };
  r.oop = timed(run, bufs, s, fault, false, reference);
  r.oop_samples = run.samples();
  r.ref = run.paired_stats();
  r.oop_wrong = bufs.verify(false, fault, run.ctx());
  return r;
}

/// The case's metrics (busbw, algbw, time, #wrong of each form) and its extra facts.
void record_case(CaseRun& run, const Collective& c, const Backend& be, const CaseShape& s,
                 const Timings& r, bool has_inplace) {
  const double b = static_cast<double>(s.bytes);
  // The work of one operation: S bytes for algbw, S x factor for busbw (collective.hpp).
  const Work alg = Work::bytes(b), bus = Work::bytes(b * c.factor(s.n));
  run.add(rate_metric("busbw", bus, r.oop.median, r.oop_samples));
  run.add(rate_metric("algbw", alg, r.oop.median, r.oop_samples));
  run.add(time_metric("time", r.oop.median, r.oop_samples));
  run.add_metric("wrong", static_cast<double>(r.oop_wrong), "count", false);
  if (has_inplace && r.ip_wrong >= 0) {
    run.add(rate_metric("busbw_inplace", bus, r.ip.median, r.ip_samples));
    run.add(rate_metric("algbw_inplace", alg, r.ip.median, r.ip_samples));
    run.add(time_metric("time_inplace", r.ip.median, r.ip_samples));
    run.add_metric("wrong_inplace", static_cast<double>(r.ip_wrong), "count", false);
    run.set_extra("time_inplace", r.ip);
  } else if (has_inplace) {
    // Timed, but without a defined result its time measures nothing the rows could judge: no
    // metric (n/a in the table, out of its busbw average), the statistics kept as evidence.
    run.set_extra("wrong_inplace", "n/a: " + be.name() + "'s in-place " + c.name +
                                       " has no defined result (not checked, as nccl-tests)");
    run.set_extra("inplace",
                  "n/a: no defined result, so no in-place metrics; its times are in "
                  "extra.time_inplace_undefined");
    run.set_extra("time_inplace_undefined", r.ip);
  } else {
    run.set_extra("inplace", "not measured: " + be.name() +
                                 " has no in-place form of this collective (overlapping buffers)");
  }
  run.set_extra("size_bytes", s.bytes);
  run.set_extra("count", s.bytes / s.es);
  run.set_extra("ranks", s.n);
  run.set_extra("nodes", run.ctx().node_count());
  run.set_extra("busbw_factor", c.factor(s.n));
  run.set_extra("redop", c.reduces ? "sum" : "none");
  run.set_extra("root", s.root);
}

/// extra.reference: the plain loop's median against ours, or why it was not measured.
void record_reference(CaseRun& run, const Collective& c, const CaseShape& s, const Timings& r,
                      const std::string& refusal) {
  if (!refusal.empty()) {
    run.set_extra("reference", "not measured: " + refusal);
    return;
  }
  run.set_extra("reference",
                {{"loop", "plain MPI_Allreduce, float, sum, out-of-place, MPI_COMM_WORLD"},
                 {"pairing", "one batch of the same count after each timed out-of-place batch"},
                 {"batches", r.ref.n},
                 {"time_median", r.ref.median},
                 {"busbw", busbw_gbs(c, static_cast<double>(s.bytes), r.ref.median, s.n)},
                 {"ratio", r.ref.median / r.oop.median},
                 {"ratio_definition",
                  "busbw / reference busbw = reference median time / "
                  "median time; the goal: >= 0.97"}});
}

/// nccl-tests' table row of the case, under a new header when `header` differs from the table
/// in `t` (updated), and the table's closing lines (table_footer) when `last` (the sweep's last
/// case of this backend).
std::string table_text(const Collective& c, const CaseShape& s, const Timings& r, bool has_inplace,
                       const std::string& header, bool last, CollectiveTable& t) {
  std::string out;
  if (header != t.header) out = header + table_header(), t = {header, 0, 0, 0};
  const double b = static_cast<double>(s.bytes);
  const double oop = busbw_gbs(c, b, r.oop.median, s.n), ip = busbw_gbs(c, b, r.ip.median, s.n);
  // An in-place form without a defined result (NCCL's alltoall, sendrecv) shows n/a, as its
  // #wrong: its time is not a measurement of the collective.
  const bool ip_shown = has_inplace && r.ip_wrong >= 0;
  out += table_row(s.bytes, s.bytes / s.es, dtype_name(s.t), c.reduces ? "sum" : "none", s.root,
                   microseconds(r.oop.median), algbw_gbs(b, r.oop.median), oop, r.oop_wrong,
                   ip_shown ? microseconds(r.ip.median) : -1, algbw_gbs(b, r.ip.median), ip,
                   r.ip_wrong);
  table_add(t, oop, r.oop_wrong, has_inplace ? ip : -1, r.ip_wrong);
  if (last) out += table_footer(t.wrong, t.busbw_sum, t.busbw_n), t = {};
  return out;
}

}  // namespace

void CollectiveBenchmark::run(CaseRun& run) const {
  const Options o = options(run.settings());
  const Context& ctx = run.ctx();
  Backend& be = backend_for(run, o.timeout_s);
  const CaseShape s = case_shape(coll_, be, run.params(), id());
  check_host_memory(s, be, ctx);
  CaseBuffers bufs(coll_, be, s);
  const json chose = bufs.probe();  // NCCL's own logging: algorithm, protocol, channels
  const std::string no_reference = o.reference ? reference_refusal(coll_, s.t, be) : "";
  const Timings r = measure(run, bufs, s, o.fault, o.reference && no_reference.empty());

  record_case(run, coll_, be, s, r, bufs.has_inplace());
  if (o.reference) record_reference(run, coll_, s, r, no_reference);
  const json facts = be.facts();  // items() needs the object alive
  for (const auto& [k, v] : facts.items()) run.set_extra(k, v);
  for (const auto& [k, v] : chose.items()) run.set_extra(k, v);
  if (ctx.is_root() && run.rounds() == 1) {  // in rounds, the session prints the merged record
    std::string header = "# " + id() + ", " + be.name() + ", " + std::to_string(s.n) + " ranks\n";
    // The sweep's last case of this backend closes the table.
    const json* last = nullptr;
    const std::vector<json> all = cases(run.settings());
    for (const auto& c : all)
      if (CollectiveCase::of(c).backend == CollectiveCase::of(run.params()).backend) last = &c;
    const bool closes = last && *last == run.params();
    run.print_table(table_text(coll_, s, r, bufs.has_inplace(), header, closes, table_), !closes);
  }
  CHECK_MSG(r.oop_wrong == 0 && r.ip_wrong <= 0, "clusterbench",
            "#wrong = " + std::to_string(r.oop_wrong) + " out-of-place, " +
                (r.ip_wrong < 0 ? std::string("n/a") : std::to_string(r.ip_wrong)) +
                " in-place, summed over " + std::to_string(s.n) + " ranks, at " +
                std::to_string(s.bytes) + " B " + dtype_name(s.t));
}

}  // namespace clusterbench::collectives
