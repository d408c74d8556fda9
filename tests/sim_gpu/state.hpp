// The simulated CUDA runtime's state: devices, allocations, pinned host ranges, streams, events,
// graphs, the sticky error, and the machinery that runs work on streams in virtual time. One
// mutex guards it all; it is never held while sleeping.
//
// Work runs eagerly when it is enqueued, unless its stream is blocked behind a gate (a pending
// NCCL operation, or a wait on an event whose record is itself queued): then it is queued and
// run by progress(), which every query and wait calls. Each stream has a virtual clock: an
// operation starts at max(the stream's clock, the issuing thread's host clock, its device's
// engine being free, for that thread) and lasts its modelled time with a deterministic +-0.3%
// jitter.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "content.hpp"

namespace cbsim {

struct State;
struct Stream;

/// The engine of a device an operation occupies: SMs, the host-to-device and device-to-host copy
/// engines; `none` for bookkeeping (event records, waits).
enum class Res { compute = 0, h2d = 1, d2h = 2, none = 3 };

/// One operation queued on or run by a stream.
class Op {
 public:
  virtual ~Op() = default;
  /// Whether it can run now (its gate); called under the lock.
  virtual bool ready(State&) { return true; }
  /// Called once when it reaches the head of its stream (NCCL posts its part here).
  virtual void start(State&, Stream&) {}
  /// Runs it: its effect on memory and on the stream's clock.
  virtual void run(State&, Stream&) = 0;
  double issued = 0;         ///< the issuing thread's host clock at enqueue
  std::uint64_t thread = 0;  ///< the issuing thread (thread_id())
  bool from_graph = false;   ///< replayed by cudaGraphLaunch
  bool started = false;
};
using OpPtr = std::unique_ptr<Op>;
/// Makes an operation; a graph keeps makers and replays them.
using Maker = std::function<OpPtr()>;

/// A graph being captured from one origin stream.
struct Capture {
  CUgraph_st* graph = nullptr;
  Stream* origin = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::uint64_t thread = 0;  ///< the capturing thread's id
  bool invalidated = false;
  std::set<Stream*> joined;                      ///< other streams that joined it through an event
  std::map<Stream*, std::uint64_t> joined_upto;  ///< their nodes the origin has waited for
};

/// An event: records, their completion, virtual timestamps.
struct Event {
  int device = 0;
  unsigned flags = 0;
  std::uint64_t recorded = 0;   ///< records issued
  std::uint64_t done = 0;       ///< records completed
  double time = 0;              ///< virtual time of the last completed record
  Capture* captured = nullptr;  ///< last recorded in this capture
  Stream* captured_on = nullptr;
  std::uint64_t captured_seq = 0;
};
using EventPtr = std::shared_ptr<Event>;

/// A stream (CUstream_st is this process's cudaStream_t).
struct Stream {
  int device = 0;
  unsigned flags = 0;  ///< cudaStreamNonBlocking or 0
  bool legacy = false;
  bool destroyed = false;  ///< cudaStreamDestroy'ed; freed when its queue drains
  double t = 0;            ///< virtual time when its last operation ends
  std::deque<OpPtr> queue;
  Capture* capture = nullptr;
  std::uint64_t capture_seq = 0;  ///< nodes captured on it
};

/// Statistics of one device (docs/simulated-gpu.md "Statistics").
struct Counters {
  long long kernel_launches = 0, matmuls = 0, graph_launches = 0, graph_kernels = 0;
  long long graph_matmuls = 0, memcpys = 0, memsets = 0, nccl_ops = 0, peak_device_bytes = 0;
  long long uninit_read_bytes = 0, illegal_addresses = 0;
};

/// Per-device state.
struct DeviceState {
  std::uint64_t used = 0;
  /// Per issuing thread and engine, when it is free again. Engines serialize the work of one
  /// thread's streams; threads have clocks of their own (each advances as it waits), so work of
  /// two threads is not ordered on an engine (it would jump one thread's stream to the other's
  /// time).
  std::map<std::uint64_t, std::array<double, 3>> busy;
  std::unique_ptr<Stream> legacy;
  Counters counters;
  std::uint64_t jitter_n = 0;
  bool seen_op = false;
  std::chrono::steady_clock::time_point first_op;
  bool sticky_fired = false;
  bool seen_matmul = false, seen_compare = false;
  std::chrono::steady_clock::time_point first_matmul, first_compare;
  long long wrong_left = -1;  ///< products still to corrupt; -1 before the fault starts
};

/// A device allocation; its address range is reserved (PROT_NONE), so that the host crashes on
/// a dereference as it would on a real GPU's pointer.
struct Alloc {
  int device = 0;
  std::uint64_t base = 0, size = 0, reserved = 0;
  Content content;
};

/// Page-locked host memory: registered (cudaHostRegister) or allocated (cudaHostAlloc).
struct HostRange {
  std::uint64_t base = 0, size = 0;
  bool allocated = false;
};

struct State {
  std::mutex mu;
  bool started = false;
  std::vector<DeviceState> dev;
  std::map<std::uint64_t, Alloc> allocs;
  std::map<std::uint64_t, HostRange> host;
  std::set<Stream*> streams;                   ///< live user streams
  std::vector<std::unique_ptr<Stream>> owned;  ///< every user stream, until it drains
  std::map<Event*, EventPtr> events;
  std::set<CUgraph_st*> graphs;
  std::set<CUgraphExec_st*> execs;
  cudaError_t sticky = cudaSuccess;
  std::string fault_text;  ///< what caused the sticky error
};

/// The process's state, created (devices from the node description) on first use.
State& state();
/// The calling thread's current device (cudaSetDevice; default 0).
int& current_device();
/// The calling thread's host clock (virtual seconds it has waited up to).
double& host_now();
/// The calling thread's last error (cudaGetLastError).
cudaError_t& last_error();
/// A thread id for capture ownership.
std::uint64_t thread_id();

/// cudaSuccess when the runtime can start (a node with GPUs and a new enough driver), else
/// cudaErrorNoDevice or cudaErrorInsufficientDriver.
cudaError_t init_error();
/// Records `e` as the thread's last error (unless success) and returns it.
cudaError_t fail(cudaError_t e);
/// Makes the process's context unusable with `e`, writing `why` to stderr.
void set_sticky(State& st, cudaError_t e, const std::string& why);

/// The allocation holding [p, p + len), or nullptr.
Alloc* find_alloc(State& st, std::uint64_t p, std::uint64_t len = 1);
/// Whether [p, p + len) lies in one page-locked host range.
bool pinned(State& st, std::uint64_t p, std::uint64_t len);

/// A user stream, or the current device's legacy stream for 0 / cudaStreamLegacy /
/// cudaStreamPerThread; nullptr for a handle that is not a live stream.
Stream* resolve(State& st, cudaStream_t s);
/// The legacy stream of `device`.
Stream* legacy_stream(State& st, int device);

/// Starts a timed piece of work on `s` occupying `res` for `seconds` (before jitter): advances
/// the stream's clock and the engine's; returns the start time.
double advance(State& st, Stream& s, const Op& op, Res res, double seconds);

/// Enqueues what `make` makes on `s` (or records it when `s` is capturing).
cudaError_t enqueue(State& st, Stream& s, const Maker& make);
/// Runs what can run on every stream.
void progress(State& st);
/// The capture error of an unsafe call by this thread (cudaErrorStreamCaptureUnsupported, the
/// capture invalidated), or cudaSuccess.
cudaError_t capture_guard(State& st);

/// Waits (polling progress) until `done` holds; then advances this thread's host clock to the
/// virtual time `done` reports and sleeps that long in wall time (capped). The lock is held
/// when called and on return.
void wait_for(std::unique_lock<std::mutex>& lock, State& st,
              const std::function<bool(double& t)>& done);
/// Advances this thread's host clock to virtual time `t` (when later) and sleeps the difference
/// in wall time, capped; the lock is released while sleeping.
void settle(std::unique_lock<std::mutex>& lock, double t);

/// An operation from a function run at execution: it applies its effect and returns its
/// engine and modelled seconds; `kernel`/`matmul` count it.
OpPtr work_op(int kind, std::function<void(State&, Stream&, Res&, double&)> fn);
enum { kWorkCopy = 0, kWorkKernel = 1, kWorkMatmul = 2, kWorkMemset = 3, kWorkOther = 4 };
/// Recording `e` (its record number `n`) on the stream; waiting for it.
OpPtr record_op(EventPtr e, std::uint64_t n);
OpPtr wait_op(EventPtr e, std::uint64_t n);

}  // namespace cbsim

/// A graph: the captured operations' makers, in capture order (replayed in that order).
struct CUgraph_st {
  std::vector<cbsim::Maker> nodes;
};
/// An instantiated graph.
struct CUgraphExec_st {
  std::vector<cbsim::Maker> nodes;
};
