// CUDA runtime: streams, events, stream capture and graphs.
#include <cmath>

#include "state.hpp"

using namespace cbsim;

namespace {

cudaError_t context_error(State& st) {
  if (cudaError_t e = init_error()) return e;
  return st.sticky;
}

Event* event_of(State& st, cudaEvent_t e) {
  auto it = st.events.find(reinterpret_cast<Event*>(e));
  return it == st.events.end() ? nullptr : it->first;
}

EventPtr event_ptr(State& st, cudaEvent_t e) { return st.events.at(reinterpret_cast<Event*>(e)); }

/// Leaves capture mode on every stream of `c` and forgets the events recorded in it.
void end_capture(State& st, Capture* c) {
  c->origin->capture = nullptr;
  for (Stream* s : c->joined) s->capture = nullptr;
  for (auto& [p, e] : st.events)
    if (e->captured == c) e->captured = nullptr, e->captured_on = nullptr;
}

/// The error of EndCapture on `c` (its graph is kept only on success).
cudaError_t capture_outcome(const Capture& c) {
  if (c.invalidated) return cudaErrorStreamCaptureInvalidated;
  for (Stream* s : c.joined) {
    auto it = c.joined_upto.find(s);
    if (s->capture_seq > (it == c.joined_upto.end() ? 0 : it->second))
      return cudaErrorStreamCaptureUnjoined;
  }
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!pStream || flags > cudaStreamNonBlocking) return fail(cudaErrorInvalidValue);
  auto s = std::make_unique<Stream>();
  s->device = current_device();
  s->flags = flags;
  s->t = host_now();
  Stream* p = s.get();
  st.owned.push_back(std::move(s));
  st.streams.insert(p);
  *pStream = reinterpret_cast<cudaStream_t>(p);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return cudaStreamCreateWithFlags(pStream, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Stream* s = reinterpret_cast<Stream*>(stream);
  if (!st.streams.count(s)) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture) {
    s->capture->invalidated = true;
    if (s->capture->origin == s) end_capture(st, s->capture);
  }
  st.streams.erase(s);
  s->destroyed = true;  // freed by progress() once its queue has run
  progress(st);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Stream* s = resolve(st, stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture) {
    s->capture->invalidated = true;
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (cudaError_t e = capture_guard(st)) return fail(e);
  wait_for(lock, st, [&](double& t) {
    t = s->t;
    return s->queue.empty();
  });
  return st.sticky ? fail(st.sticky) : cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Stream* s = resolve(st, stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture) {
    s->capture->invalidated = true;
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (cudaError_t e = capture_guard(st)) return fail(e);
  progress(st);
  if (!s->queue.empty()) return cudaErrorNotReady;
  settle(lock, s->t);
  return st.sticky ? fail(st.sticky) : cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (cudaError_t e = capture_guard(st)) return fail(e);
  const int d = current_device();
  wait_for(lock, st, [&](double& t) {
    Stream* legacy = legacy_stream(st, d);
    t = legacy->t;
    bool idle = legacy->queue.empty();
    for (Stream* s : st.streams)
      if (s->device == d) idle = idle && s->queue.empty(), t = std::max(t, s->t);
    return idle;
  });
  return st.sticky ? fail(st.sticky) : cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (!event || (flags & ~known) ||
      ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)))
    return fail(cudaErrorInvalidValue);
  auto e = std::make_shared<Event>();
  e->device = current_device();
  e->flags = flags;
  st.events[e.get()] = e;
  *event = reinterpret_cast<cudaEvent_t>(e.get());
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, 0); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!event_of(st, event)) return fail(cudaErrorInvalidResourceHandle);
  st.events.erase(reinterpret_cast<Event*>(event));  // queued operations keep their reference
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Stream* s = resolve(st, stream);
  Event* ev = event_of(st, event);
  if (!s || !ev || ev->device != s->device) return fail(cudaErrorInvalidResourceHandle);
  EventPtr keep = event_ptr(st, event);
  if (s->capture) {
    if (s->capture->invalidated) return fail(cudaErrorStreamCaptureInvalidated);
    ev->captured = s->capture, ev->captured_on = s, ev->captured_seq = s->capture_seq;
  } else {
    ev->captured = nullptr;
  }
  return fail(enqueue(st, *s, [keep] {
    keep->captured = nullptr;
    return record_op(keep, ++keep->recorded);
  }));
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Stream* s = resolve(st, stream);
  Event* ev = event_of(st, event);
  if (!s || !ev) return fail(cudaErrorInvalidResourceHandle);
  if (flags > 1) return fail(cudaErrorInvalidValue);
  EventPtr keep = event_ptr(st, event);
  if (Capture* c = ev->captured) {
    if (s->capture && s->capture != c) return fail(cudaErrorStreamCaptureMerge);
    if (!s->capture) s->capture = c, c->joined.insert(s), s->capture_seq = 0;
    if (s == c->origin && ev->captured_on != c->origin)
      c->joined_upto[ev->captured_on] = std::max(c->joined_upto[ev->captured_on], ev->captured_seq);
    return cudaSuccess;  // an edge inside the graph: replayed in capture order
  }
  if (s->capture) {
    if (ev->recorded == 0) return cudaSuccess;  // a wait on nothing
    s->capture->invalidated = true;
    return fail(cudaErrorStreamCaptureIsolation);
  }
  const std::uint64_t n = ev->recorded;
  return fail(enqueue(st, *s, [keep, n] { return wait_op(keep, n); }));
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Event* ev = event_of(st, event);
  if (!ev) return fail(cudaErrorInvalidResourceHandle);
  if (ev->captured) return fail(cudaErrorCapturedEvent);
  if (cudaError_t e = capture_guard(st)) return fail(e);
  progress(st);
  if (ev->done < ev->recorded) return cudaErrorNotReady;
  settle(lock, ev->time);
  return st.sticky ? fail(st.sticky) : cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Event* ev = event_of(st, event);
  if (!ev) return fail(cudaErrorInvalidResourceHandle);
  if (ev->captured) return fail(cudaErrorCapturedEvent);
  if (cudaError_t e = capture_guard(st)) return fail(e);
  EventPtr keep = event_ptr(st, event);
  wait_for(lock, st, [&](double& t) {
    t = keep->time;
    return keep->done >= keep->recorded;
  });
  return st.sticky ? fail(st.sticky) : cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Event* a = event_of(st, start);
  Event* b = event_of(st, end);
  if (!ms) return fail(cudaErrorInvalidValue);
  if (!a || !b || a->device != b->device) return fail(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return fail(cudaErrorInvalidResourceHandle);
  if (a->recorded == 0 || b->recorded == 0) return fail(cudaErrorInvalidResourceHandle);
  progress(st);
  if (a->done < a->recorded || b->done < b->recorded) return cudaErrorNotReady;
  *ms = static_cast<float>((b->time - a->time) * 1e3);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Stream* s = resolve(st, stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (s->legacy) return fail(cudaErrorStreamCaptureUnsupported);
  if (s->capture) return fail(cudaErrorIllegalState);
  if (mode > cudaStreamCaptureModeRelaxed) return fail(cudaErrorInvalidValue);
  auto* c = new Capture;  // freed by cudaStreamEndCapture
  c->graph = new CUgraph_st;
  c->origin = s;
  c->mode = mode;
  c->thread = thread_id();
  s->capture = c;
  s->capture_seq = 0;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Stream* s = resolve(st, stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (!pGraph) return fail(cudaErrorInvalidValue);
  *pGraph = nullptr;
  Capture* c = s->capture;
  if (!c) return fail(cudaErrorIllegalState);
  if (c->origin != s) return fail(cudaErrorStreamCaptureUnmatched);
  if (c->mode == cudaStreamCaptureModeThreadLocal && c->thread != thread_id())
    return fail(cudaErrorStreamCaptureWrongThread);
  const cudaError_t outcome = capture_outcome(*c);
  end_capture(st, c);
  if (outcome != cudaSuccess) {
    delete c->graph;
    delete c;
    return fail(outcome);
  }
  st.graphs.insert(c->graph);
  *pGraph = c->graph;
  delete c;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Stream* s = resolve(st, stream);
  if (!s || !status) return fail(!s ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue);
  *status = !s->capture               ? cudaStreamCaptureStatusNone
            : s->capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                      : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  if (!pGraphExec || !st.graphs.count(graph) || flags > 0xF) return fail(cudaErrorInvalidValue);
  auto* exec = new CUgraphExec_st{graph->nodes};
  st.execs.insert(exec);
  *pGraphExec = exec;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (cudaError_t e = context_error(st)) return fail(e);
  Stream* s = resolve(st, stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (!st.execs.count(graphExec)) return fail(cudaErrorInvalidValue);
  if (!s->capture) ++st.dev[static_cast<size_t>(s->device)].counters.graph_launches;
  for (const Maker& m : graphExec->nodes) {
    cudaError_t e = enqueue(st, *s, [m] {
      OpPtr op = m();
      op->from_graph = true;
      return op;
    });
    if (e != cudaSuccess) return fail(e);
  }
  return st.sticky ? fail(st.sticky) : cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.execs.erase(graphExec)) return fail(cudaErrorInvalidValue);
  delete graphExec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.graphs.erase(graph)) return fail(cudaErrorInvalidValue);
  delete graph;
  return cudaSuccess;
}

}  // extern "C"
