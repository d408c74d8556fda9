// Streams in virtual time: enqueue, gates, progress, waits, capture (state.hpp).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "node.hpp"
#include "state.hpp"

namespace cbsim {

namespace {

/// Deterministic jitter factor 1 +- 0.3% for the n-th timed operation of `device`.
double jitter(int device, std::uint64_t n) {
  std::uint64_t z = (static_cast<std::uint64_t>(device) << 48) + n + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  const double u = static_cast<double>(z >> 11) * 0x1.0p-53 * 2 - 1;
  return 1 + 0.003 * u;
}

class WorkOp : public Op {
 public:
  WorkOp(int kind, std::function<void(State&, Stream&, Res&, double&)> fn)
      : kind_(kind), fn_(std::move(fn)) {}
  void run(State& st, Stream& s) override {
    Counters& c = st.dev[static_cast<size_t>(s.device)].counters;
    if (kind_ == kWorkKernel) ++c.kernel_launches, c.graph_kernels += from_graph;
    if (kind_ == kWorkMatmul) ++c.matmuls, c.graph_matmuls += from_graph;
    if (kind_ == kWorkCopy) ++c.memcpys;
    if (kind_ == kWorkMemset) ++c.memsets;
    Res res = Res::compute;
    double seconds = 0;
    if (st.sticky == cudaSuccess) fn_(st, s, res, seconds);
    advance(st, s, *this, res, seconds);
  }

 private:
  int kind_;
  std::function<void(State&, Stream&, Res&, double&)> fn_;
};

class RecordOp : public Op {
 public:
  RecordOp(EventPtr e, std::uint64_t n) : e_(std::move(e)), n_(n) {}
  void run(State&, Stream& s) override {
    s.t = std::max(s.t, issued);
    e_->time = s.t;
    e_->done = std::max(e_->done, n_);
  }

 private:
  EventPtr e_;
  std::uint64_t n_;
};

class WaitOp : public Op {
 public:
  WaitOp(EventPtr e, std::uint64_t n) : e_(std::move(e)), n_(n) {}
  bool ready(State&) override { return e_->done >= n_; }
  void run(State&, Stream& s) override {
    if (n_ > 0) s.t = std::max(s.t, e_->time);
  }

 private:
  EventPtr e_;
  std::uint64_t n_;
};

/// Runs the head operations of `s` that can run; whether any did.
bool pump(State& st, Stream& s) {
  bool any = false;
  while (!s.queue.empty()) {
    Op& head = *s.queue.front();
    if (!head.started) head.started = true, head.start(st, s);
    if (!head.ready(st)) break;
    OpPtr op = std::move(s.queue.front());
    s.queue.pop_front();
    op->run(st, s);
    any = true;
  }
  return any;
}

/// The sticky "sticky_error" fault of the device, fired by its first operation after after_s.
void maybe_fault(State& st, int device) {
  DeviceState& d = st.dev[static_cast<size_t>(device)];
  const Gpu& g = node().gpus[static_cast<size_t>(device)];
  auto now = std::chrono::steady_clock::now();
  if (!d.seen_op) d.seen_op = true, d.first_op = now;
  if (!g.sticky.enabled || d.sticky_fired) return;
  if (std::chrono::duration<double>(now - d.first_op).count() < g.sticky.after_s) return;
  d.sticky_fired = true;
  set_sticky(st, static_cast<cudaError_t>(g.sticky.code),
             "injected fault sticky_error on device " + std::to_string(device));
}

/// Implicit synchronization with the legacy stream: the legacy stream follows every blocking
/// stream of its device, a blocking stream follows the legacy stream (non-blocking streams
/// neither).
void implicit_sync(State& st, Stream& s) {
  if (!s.legacy && (s.flags & cudaStreamNonBlocking)) return;
  auto follow = [&](Stream& other) {
    if (&other == &s || other.device != s.device) return;
    if (other.queue.empty()) {
      s.t = std::max(s.t, other.t);
      return;
    }
    auto e = std::make_shared<Event>();
    e->device = s.device;
    const std::uint64_t n = ++e->recorded;
    OpPtr r = record_op(e, n);
    r->issued = host_now();
    other.queue.push_back(std::move(r));
    OpPtr w = wait_op(e, n);
    w->issued = host_now();
    s.queue.push_back(std::move(w));
  };
  if (!s.legacy) return follow(*legacy_stream(st, s.device));
  for (Stream* o : st.streams)
    if (!(o->flags & cudaStreamNonBlocking)) follow(*o);
}

}  // namespace

OpPtr work_op(int kind, std::function<void(State&, Stream&, Res&, double&)> fn) {
  return std::make_unique<WorkOp>(kind, std::move(fn));
}
OpPtr record_op(EventPtr e, std::uint64_t n) { return std::make_unique<RecordOp>(std::move(e), n); }
OpPtr wait_op(EventPtr e, std::uint64_t n) { return std::make_unique<WaitOp>(std::move(e), n); }

double advance(State& st, Stream& s, const Op& op, Res res, double seconds) {
  DeviceState& d = st.dev[static_cast<size_t>(s.device)];
  double start = std::max(s.t, op.issued);
  auto& busy = d.busy[op.thread];
  if (res != Res::none) start = std::max(start, busy[static_cast<int>(res)]);
  const double dur = seconds > 0 ? seconds * jitter(s.device, d.jitter_n++) : 0;
  s.t = start + dur;
  if (res != Res::none) busy[static_cast<int>(res)] = s.t;
  return start;
}

cudaError_t enqueue(State& st, Stream& s, const Maker& make) {
  if (s.capture) {
    Capture& c = *s.capture;
    if (c.invalidated) return cudaErrorStreamCaptureInvalidated;
    c.graph->nodes.push_back(make);
    ++s.capture_seq;
    return cudaSuccess;
  }
  maybe_fault(st, s.device);
  implicit_sync(st, s);
  OpPtr op = make();
  op->issued = host_now();
  op->thread = thread_id();
  s.queue.push_back(std::move(op));
  pump(st, s);
  return cudaSuccess;
}

void progress(State& st) {
  for (bool any = true; any;) {
    any = false;
    for (auto& d : st.dev)
      if (d.legacy) any = pump(st, *d.legacy) || any;
    for (auto& s : st.owned) any = pump(st, *s) || any;
  }
  // Streams destroyed with work pending are freed once it has run.
  st.owned.erase(std::remove_if(st.owned.begin(), st.owned.end(),
                                [](const std::unique_ptr<Stream>& s) {
                                  return s->destroyed && s->queue.empty();
                                }),
                 st.owned.end());
}

cudaError_t capture_guard(State& st) {
  const std::uint64_t me = thread_id();
  bool hit = false;
  for (Stream* s : st.streams) {
    if (!s->capture || s->capture->origin != s) continue;
    Capture& c = *s->capture;
    const bool unsafe = c.mode == cudaStreamCaptureModeGlobal ||
                        (c.mode == cudaStreamCaptureModeThreadLocal && c.thread == me);
    if (unsafe) c.invalidated = true, hit = true;
  }
  return hit ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

void wait_for(std::unique_lock<std::mutex>& lock, State& st,
              const std::function<bool(double& t)>& done) {
  double t = 0;
  for (;;) {
    progress(st);
    if (done(t)) break;
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    lock.lock();
  }
  settle(lock, t);
}

void settle(std::unique_lock<std::mutex>& lock, double t) {
  double& now = host_now();
  const double waited = t - now;
  if (waited <= 0) return;
  now = t;
  lock.unlock();
  const double cap = node().wall_sleep_cap_s;
  std::this_thread::sleep_for(std::chrono::duration<double>(std::min(waited, cap)));
  lock.lock();
}

}  // namespace cbsim
