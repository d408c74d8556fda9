// What the collectives share (collective.hpp): types, sums, sweep, arithmetic, the case loop.
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

#include "core/error.hpp"
#include "core/progress.hpp"

namespace clusterbench::collectives {

Dtype parse_dtype(const std::string& name, const std::string& what) {
  if (name == "float") return Dtype::f32;
  if (name == "half") return Dtype::f16;
  if (name == "bfloat16") return Dtype::bf16;
  throw InputError(what + ": unknown type '" + name + "' (float, half, bfloat16)");
}

const char* dtype_name(Dtype t) {
  return t == Dtype::f32 ? "float" : t == Dtype::f16 ? "half" : "bfloat16";
}

std::size_t dtype_size(Dtype t) { return t == Dtype::f32 ? 4 : 2; }

std::uint16_t float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t mant = x & 0x7fffffu;
  int exp = static_cast<int>((x >> 23) & 0xffu);
  if (exp == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (e <= 0) {  // subnormal half (or zero)
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    std::uint32_t h = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1);
    std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rounds up to infinity
  return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t h) {
  std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  if (exp == 31)
    bits = sign | 0x7f800000u | (mant << 13);
  else
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

float bf16_to_float(std::uint16_t b) {
  std::uint32_t x = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

double load(Dtype t, const void* data, long long i) {
  if (t == Dtype::f32) return static_cast<const float*>(data)[i];
  std::uint16_t v = static_cast<const std::uint16_t*>(data)[i];
  return t == Dtype::f16 ? half_to_float(v) : bf16_to_float(v);
}

void store(Dtype t, void* data, long long i, double v) {
  float f = static_cast<float>(v);
  if (t == Dtype::f32)
    static_cast<float*>(data)[i] = f;
  else
    static_cast<std::uint16_t*>(data)[i] = t == Dtype::f16 ? float_to_half(f) : float_to_bf16(f);
}

void sum_into(Dtype t, const void* in, void* inout, long long count) {
  if (t == Dtype::f32) {
    const float* a = static_cast<const float*>(in);
    float* b = static_cast<float*>(inout);
    for (long long i = 0; i < count; ++i) b[i] += a[i];
    return;
  }
  const std::uint16_t* a = static_cast<const std::uint16_t*>(in);
  std::uint16_t* b = static_cast<std::uint16_t*>(inout);
  if (t == Dtype::f16) {
    for (long long i = 0; i < count; ++i)
      b[i] = float_to_half(half_to_float(a[i]) + half_to_float(b[i]));
  } else {
    for (long long i = 0; i < count; ++i)
      b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
  }
}

double input_value(int rank, long long i) { return static_cast<double>((3LL * rank + i) % 5 + 1); }

long long op_bytes(const Layout& l, Dtype t) {
  return std::max(l.send_count, l.recv_count) * static_cast<long long>(dtype_size(t));
}

double algbw_gbs(double bytes, double seconds) { return bytes / seconds / 1e9; }

double busbw_gbs(const Collective& c, double bytes, double seconds, int n) {
  return algbw_gbs(bytes, seconds) * c.factor(n);
}

std::vector<long long> sweep(long long minbytes, long long maxbytes, double stepfactor,
                             const std::string& what) {
  if (minbytes <= 0 || maxbytes < minbytes)
    throw InputError(what + ": need 0 < minbytes <= maxbytes (got " + std::to_string(minbytes) +
                     ", " + std::to_string(maxbytes) + ")");
  if (!(stepfactor > 1))
    throw InputError(what + ": stepfactor must be > 1 (got " + std::to_string(stepfactor) + ")");
  std::vector<long long> out;
  for (double s = static_cast<double>(minbytes); s <= static_cast<double>(maxbytes);
       s *= stepfactor) {
    long long b = static_cast<long long>(s);
    if (out.empty() || b != out.back()) out.push_back(b);
  }
  return out;
}

double tolerance(Dtype t, int n) {
  double half_ulp = t == Dtype::f32   ? std::ldexp(1.0, -24)
                    : t == Dtype::f16 ? std::ldexp(1.0, -11)
                                      : std::ldexp(1.0, -8);
  return std::max(1, n) * half_ulp;
}

long long count_wrong(const Collective& c, Dtype t, const void* result, long long count, int rank,
                      int n, long long block, int root) {
  double tol = tolerance(t, n);
  long long wrong = 0;
  for (long long i = 0; i < count; ++i) {
    double want = c.expected(rank, n, i, block, root);
    if (std::isnan(want)) continue;
    double got = load(t, result, i);
    if (!(std::fabs(got - want) <= tol * std::fabs(want))) ++wrong;
  }
  return wrong;
}

std::string table_header() {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "#%77s%34s\n"
                "#%11s %13s %9s %7s %6s %9s %8s %8s %6s %9s %8s %8s %6s\n"
                "#%11s %13s %9s %7s %6s %9s %8s %8s %6s %9s %8s %8s %6s\n",
                "out-of-place", "in-place", "size", "count", "type", "redop", "root", "time",
                "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "(B)", "(elements)",
                "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  return buf;
}

std::string table_row(long long bytes, long long count, const std::string& type,
                      const std::string& redop, int root, double time_us, double algbw,
                      double busbw, long long wrong, double inplace_time_us, double inplace_algbw,
                      double inplace_busbw, long long inplace_wrong) {
  char buf[512];
  int k = std::snprintf(buf, sizeof buf, "%12lld %13lld %9s %7s %6d %9.2f %8.2f %8.2f %6lld", bytes,
                        count, type.c_str(), redop.c_str(), root, time_us, algbw, busbw, wrong);
  if (inplace_time_us >= 0)
    std::snprintf(buf + k, sizeof buf - static_cast<size_t>(k), " %9.2f %8.2f %8.2f %6lld",
                  inplace_time_us, inplace_algbw, inplace_busbw, inplace_wrong);
  else
    std::snprintf(buf + k, sizeof buf - static_cast<size_t>(k), " %9s %8s %8s %6s", "n/a", "n/a",
                  "n/a", "n/a");
  return std::string(buf) + "\n";
}

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

void fill_input(Dtype t, void* data, long long count, int rank) {
  for (long long i = 0; i < count; ++i) store(t, data, i, input_value(rank, i));
}

/// A sentinel that no expected value equals, so an operation that writes nothing is caught.
void fill_sentinel(Dtype t, void* data, long long count) {
  for (long long i = 0; i < count; ++i) store(t, data, i, -1.0);
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

std::vector<json> CollectiveBenchmark::cases(const Settings& s) const {
  long long minb = s.get_size(id(), "minbytes", s.by_suite(8LL, 8LL, 8LL));
  long long maxb = s.get_size(id(), "maxbytes", s.by_suite(2LL << 20, 8LL << 30, 8LL << 30));
  double step = s.get_double(id(), "stepfactor", s.by_suite(8.0, 2.0, 2.0));
  if (s.suite() == "ci" && maxb > (64LL << 20))
    throw InputError("--set " + id() + ".maxbytes: the ci suite stays <= 64M");
  auto types = s.get_list(
      id(), "dtypes",
      s.by_suite<std::vector<std::string>>({"float"}, {"float"}, {"float", "half", "bfloat16"}));
  parse_fault(s.get(id(), "fault", ""), "--set " + id() + ".fault");
  s.get_choice(id(), "reference", {"false", "true"});
  auto backends =
      s.get_list(id(), "backends",
                 s.by_suite<std::vector<std::string>>({"mpi"}, {"mpi", "nccl"}, {"mpi", "nccl"}));
  std::string path = s.get(id(), "path", "nvlink");
  path_env(path);
  // NCCL cases say where they run (span) and which algorithm they allow: wire-bandwidth cases
  // (the network paths, and any run across nodes) force the ring (DESIGN.md "Collectives").
  std::string span = "in-node";
  try {
    if (Context::get().node_count() > 1) span = "inter-node";
  } catch (const std::logic_error&) {  // `list` plans without a context: one node
  }
  std::string algo = s.get(id(), "algo", path == "nvlink" && span == "in-node" ? "auto" : "ring");
  if (algo != "auto" && algo != "ring")
    throw InputError("--set " + id() + ".algo: '" + algo + "' (auto: NCCL's choice, ring)");
  auto roce = [&](const char* knob, const char* var) {
    std::string v = s.get(id(), knob, "");
    if (v.empty())
      if (const char* e = std::getenv(var)) v = e;
    return v;
  };
  const std::string gid = roce("ib_gid_index", "NCCL_IB_GID_INDEX");
  const std::string tc = roce("ib_tc", "NCCL_IB_TC");
  std::vector<json> out;
  for (const auto& be : backends) {
    if (be != "mpi" && be != "nccl")
      throw InputError("--set " + id() + ".backends: unknown backend '" + be + "' (mpi, nccl)");
    for (const auto& t : types) {
      parse_dtype(t, "--set " + id() + ".dtypes");
      for (long long b :
           sweep(minb, maxb, step, "--set " + id() + ".minbytes/maxbytes/stepfactor")) {
        json p = {{"backend", be}, {"dtype", t}, {"bytes", b}};
        if (be == "nccl") {
          p["path"] = path;
          p["span"] = span;
          p["algo"] = algo;
          if (!gid.empty()) p["nccl_ib_gid_index"] = gid;
          if (!tc.empty()) p["nccl_ib_tc"] = tc;
        }
        out.push_back(p);
      }
    }
  }
  return out;
}

std::string CollectiveBenchmark::applicable(const NodeEnv& /*node*/) const {
  return "";  // per backend, in backend_for: NCCL runs on one rank, MPI needs two
}

std::string CollectiveBenchmark::case_waiver(const json& params, const NodeEnv& node) const {
  if (params.value("backend", "") != "mpi") return "";
  // Not mpi_backend(): constructing it is collective, and rank 0 alone asks while planning.
  if (!CLUSTERBENCH_HAVE_MPI) return "built without MPI (-DCLUSTERBENCH_MPI=OFF): no MPI backend";
  // Over one rank MPI moves no data: busbw is 0 by definition and algbw meaningless.
  if (node.ctx.world_size() < 2)
    return "MPI backend: needs at least 2 ranks (this run has " +
           std::to_string(node.ctx.world_size()) + ")";
  return "";
}

double CollectiveBenchmark::estimate_s(const Settings& s, const json& params) const {
  if (params.value("backend", "") == "mpi" && Context::get().world_size() < 2) return 0;
  // The in-place and out-of-place loops; the reference (float all_reduce on MPI) runs one batch
  // beside each out-of-place batch, a third loop's worth.
  const bool reference =
      s.get(id(), "reference", "false") == "true" && std::string(coll_.name) == "all_reduce" &&
      params.value("backend", "") == "mpi" && params.value("dtype", "") == "float";
  return 0.2 + (reference ? 3 : 2) * loop_estimate_s(case_min_time(s, id()), 0);
}

namespace {

/// The backend of a case. NCCL cases follow the GPU disposition (DESIGN.md "GPU plugin"): waived
/// without GPUs, failed on a broken GPU node; agreed across the ranks so that none waits for a
/// peer that skipped.
Backend& backend_for(const std::string& id, CaseRun& run) {
  const Context& ctx = run.ctx();
  if (run.params().at("backend") == "mpi") {
    if (!mpi_backend()) throw Waived("built without MPI (-DCLUSTERBENCH_MPI=OFF): no MPI backend");
    // Over one rank MPI moves no data: busbw is 0 by definition and algbw meaningless.
    if (ctx.world_size() < 2) throw Waived("MPI backend: needs at least 2 ranks (this run has 1)");
    return *mpi_backend();
  }
  // NCCL on one rank still runs its kernels on the GPU: busbw is 0 (factor 0), so the case is a
  // correctness check of the results (scripts/gpu-check.sh), and algbw the kernel's rate.
  GpuDisposition d = run.gpu();
  std::string path = run.params().at("path");
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
  double timeout =
      run.settings().get_double(id, "timeout", run.settings().by_suite(60., 300., 600.));
  return nccl_backend(ctx, nccl_env(run.params()), timeout);
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

}  // namespace

void CollectiveBenchmark::run(CaseRun& run) const {
  const Context& ctx = run.ctx();
  Backend& be = backend_for(id(), run);
  const int n = be.size(), rank = be.rank(), root = coll_.rooted ? 0 : -1;
  const Dtype t = parse_dtype(run.params().at("dtype"), id());
  const long long es = static_cast<long long>(dtype_size(t));
  const long long requested = run.params().at("bytes");
  const Layout l = coll_.layout(requested / es, rank, n);
  const long long bytes = op_bytes(l, t);
  if (l.block == 0)
    throw Waived(std::to_string(requested) + " B holds less than one " + dtype_name(t) +
                 " per rank of " + std::to_string(n));

  // Host memory: the staging buffer, and for MPI the out-of-place send + recv and the in-place
  // buffer, within half of MemAvailable shared by the node's ranks; the smallest node decides.
  const long long inplace_count =
      std::max(l.send_offset_inplace + l.send_count, l.recv_offset_inplace + l.recv_count);
  const long long staging_count = std::max(inplace_count, l.send_count);
  long long need = staging_count * es;
  if (be.name() == "mpi") need += (l.send_count + l.recv_count + inplace_count) * es;
  double cap = ctx.allreduce_min(static_cast<double>(mem_available_bytes()) / 2 /
                                 std::max(1, ctx.local_size()));
  if (static_cast<double>(need) > cap)
    throw Waived(std::to_string(need) + " B of host buffers per rank exceed the free memory " +
                 "share of " + std::to_string(static_cast<long long>(cap)) + " B");

  Fault fault = parse_fault(run.settings().get(id(), "fault", ""), id() + ".fault");
  BackendBuffer send(be, l.send_count, t), recv(be, l.recv_count, t), inbuf(be, inplace_count, t);
  HostBuffer host(staging_count, t);
  const bool has_inplace = be.supports_inplace(coll_);
  const long long result_off = be.inplace_result_offset(coll_, l);
  auto at = [&](void* base, long long elems) {
    return static_cast<void*>(static_cast<unsigned char*>(base) + elems * es);
  };
  auto prepare = [&](bool inplace) {
    fill_sentinel(t, host.data(), staging_count);
    if (inplace) {
      fill_input(t, at(host.data(), l.send_offset_inplace), l.send_count, rank);
      be.upload(inbuf.p, host.data(), static_cast<size_t>(inplace_count * es));
    } else {
      be.upload(recv.p, host.data(), static_cast<size_t>(l.recv_count * es));
      fill_input(t, host.data(), l.send_count, rank);
      be.upload(send.p, host.data(), static_cast<size_t>(l.send_count * es));
    }
  };
  // Each batch is counted (bench/progress.hpp): at a hang, rank 0 names the ranks that never
  // started the operation their peers wait in.
  // A library error inside an operation leaves the peers waiting in it: it ends the run (issue 4
  // "on timeout or error, the rank aborts"), with the error's call, host and rank.
  auto abort_on_error = [&](auto&& f) {
    try {
      return f();
    } catch (const CallError& e) {
      throw AbortRun(e.what());
    }
  };
  auto op = [&](bool inplace, long long ops) {
    progress::started(ops);
    double s = abort_on_error([&] {
      return inplace ? be.run(coll_, t, at(inbuf.p, l.send_offset_inplace),
                              at(inbuf.p, l.recv_offset_inplace), l, root, true, ops)
                     : be.run(coll_, t, send.p, recv.p, l, root, false, ops);
    });
    progress::finished(ops);
    return s;
  };
  // What the library chose for this case, from one untimed operation (NCCL's own logging).
  prepare(false);
  const json chose = be.probe(coll_, t, send.p, recv.p, l, root);
  // --set collectives.all_reduce.reference=true: issue 4's check that the harness adds nothing,
  // in the same run on the same buffers: after each timed out-of-place batch, one batch of the
  // same count of plain MPI_Allreduce calls (A/B interleaved, so a slow spell of a shared machine
  // falls on both); its median against ours.
  const bool want_reference = run.settings().get(id(), "reference", "false") == "true";
  std::string no_reference;
  if (want_reference && (std::string(coll_.name) != "all_reduce" || t != Dtype::f32))
    no_reference = "the plain loop is float all_reduce only";
  else if (want_reference && !be.has_plain_allreduce())
    no_reference = "the " + be.name() + " backend has no plain loop";
  std::function<double(long long)> reference;
  if (want_reference && no_reference.empty())
    reference = [&](long long ops) {  // counted like the harness's batches, for a hang's report
      progress::started(ops);
      double s =
          abort_on_error([&] { return be.plain_allreduce(send.p, recv.p, l.send_count, ops); });
      progress::finished(ops);
      return s;
    };
  TimeStats ref{};
  auto timed = [&](bool inplace) {
    prepare(inplace);
    run.exec(
        [&](long long ops) {
          if (fault.kind == "hang" && fault.rank == rank && fault.bytes == requested)
            for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
          if (fault.kind == "abort" && fault.rank == rank && fault.bytes == requested)
            throw AbortRun("injected fault: communicator failed at " + std::to_string(requested) +
                           " B on " + ctx.host() + " rank " + std::to_string(rank));
          return op(inplace, ops);
        },
        inplace ? "in-place" : "out-of-place", inplace ? nullptr : reference);
    if (!inplace) ref = run.paired_stats();
    return run.stats();
  };
  // Correctness after the timed loop, never inside it: fresh inputs, one operation, a check.
  auto verify = [&](bool inplace) {
    prepare(inplace);
    op(inplace, 1);
    be.download(host.data(), inplace ? at(inbuf.p, result_off) : recv.p,
                static_cast<size_t>(l.recv_count * es));
    if (fault.kind == "wrong" && fault.rank == rank) store(t, host.data(), 0, 1e6);
    return ctx.allreduce_sum(
        count_wrong(coll_, t, host.data(), l.recv_count, rank, n, l.block, root));
  };

  TimeStats ip{};
  long long ip_wrong = 0;
  if (has_inplace) {
    ip = timed(true);
    ip_wrong = verify(true);
  }
  TimeStats oop = timed(false);  // last, so the record's time statistics are out-of-place
  long long oop_wrong = verify(false);

  const double b = static_cast<double>(bytes);
  run.add_metric("busbw", busbw_gbs(coll_, b, oop.median, n), "GB/s");
  run.add_metric("algbw", algbw_gbs(b, oop.median), "GB/s");
  run.add_metric("time", oop.median * 1e6, "us", false);
  run.add_metric("wrong", static_cast<double>(oop_wrong), "count", false);
  if (has_inplace) {
    run.add_metric("busbw_inplace", busbw_gbs(coll_, b, ip.median, n), "GB/s");
    run.add_metric("algbw_inplace", algbw_gbs(b, ip.median), "GB/s");
    run.add_metric("time_inplace", ip.median * 1e6, "us", false);
    run.add_metric("wrong_inplace", static_cast<double>(ip_wrong), "count", false);
    run.set_extra("time_inplace", ip);
  } else {
    run.set_extra("inplace", "not measured: " + be.name() +
                                 " has no in-place form of this collective (overlapping buffers)");
  }
  run.set_extra("size_bytes", bytes);
  run.set_extra("count", bytes / es);
  run.set_extra("ranks", n);
  run.set_extra("nodes", ctx.node_count());
  run.set_extra("busbw_factor", coll_.factor(n));
  run.set_extra("redop", coll_.reduces ? "sum" : "none");
  run.set_extra("root", root);
  if (want_reference && !no_reference.empty()) {
    run.set_extra("reference", "not measured: " + no_reference);
  } else if (want_reference) {
    run.set_extra("reference",
                  {{"loop", "plain MPI_Allreduce, float, sum, out-of-place, MPI_COMM_WORLD"},
                   {"pairing", "one batch of the same count after each timed out-of-place batch"},
                   {"batches", ref.n},
                   {"time_median", ref.median},
                   {"busbw", busbw_gbs(coll_, b, ref.median, n)},
                   {"ratio", ref.median / oop.median},
                   {"ratio_definition",
                    "busbw / reference busbw = reference median time / "
                    "median time; issue 4: >= 0.97"}});
  }
  const json facts = be.facts();  // items() needs the object alive
  for (const auto& [k, v] : facts.items()) run.set_extra(k, v);
  for (const auto& [k, v] : chose.items()) run.set_extra(k, v);

  if (ctx.is_root()) {
    std::string out;
    std::string header = "# " + id() + ", " + be.name() + ", " + std::to_string(n) + " ranks\n";
    if (header != last_header_) out = header + table_header();
    last_header_ = header;
    out += table_row(bytes, bytes / es, dtype_name(t), coll_.reduces ? "sum" : "none", root,
                     oop.median * 1e6, algbw_gbs(b, oop.median), busbw_gbs(coll_, b, oop.median, n),
                     oop_wrong, has_inplace ? ip.median * 1e6 : -1, algbw_gbs(b, ip.median),
                     busbw_gbs(coll_, b, ip.median, n), ip_wrong);
    std::cout << out << std::flush;
  }
  CHECK_MSG(oop_wrong == 0 && ip_wrong == 0, "clusterbench",
            "#wrong = " + std::to_string(oop_wrong) + " out-of-place, " + std::to_string(ip_wrong) +
                " in-place, summed over " + std::to_string(n) + " ranks, at " +
                std::to_string(bytes) + " B " + dtype_name(t));
}

}  // namespace clusterbench::collectives
