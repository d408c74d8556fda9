// NCCL side of the collectives, compiled into libclusterbench_gpu.so (bench/gpu/plugin_abi.h,
// "Collectives over NCCL"). One communicator per rank, one GPU each; every wait polls against a
// deadline (nccl-tests' -T): the stream's stop event and ncclCommGetAsyncError. On timeout or an
// asynchronous error the communicator is aborted and the caller told, so the run can end (exit 3).
// Errors and timing are the plugin's own (bench/gpu/plugin/plugin.hpp): Fail, plugin_call (the
// last error) and EventTimer, with a polling wait instead of cudaEventSynchronize.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <nccl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "gpu/plugin/compare.hpp"
#include "gpu/plugin/nccl_build.hpp"
#include "gpu/plugin/plugin.hpp"
#include "gpu/plugin_abi.h"

using clusterbench::gpu::Fail;
using clusterbench::gpu::plugin_call;

struct cb_nccl_comm {
  ncclComm_t comm = nullptr;
  clusterbench::gpu::Stream stream;
  clusterbench::gpu::EventTimer timer;
  std::unique_ptr<clusterbench::gpu::DeviceBuffer> counters;  ///< cb_nccl_compare's, on first use
  int rank = 0, nranks = 1;
  double timeout_s = 0;
  bool aborted = false;
};

namespace {

using Clock = std::chrono::steady_clock;

std::string nccl_text(const char* call, ncclResult_t r, ncclComm_t comm) {
  std::string s = std::string(call) + ": " + ncclGetErrorString(r);
  if (comm) {
    const char* last = ncclGetLastError(comm);
    if (last && *last) s += std::string(": ") + last;
  }
  return s;
}

Clock::time_point deadline_of(const cb_nccl_comm* c) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c->timeout_s));
}

ncclDataType_t nccl_type(int dtype) {
  return dtype == CB_DTYPE_HALF ? ncclHalf : dtype == CB_DTYPE_BFLOAT16 ? ncclBfloat16 : ncclFloat;
}
size_t type_size(int dtype) { return dtype == CB_DTYPE_FLOAT ? 4 : 2; }

/// Aborts the communicator and throws why (CB_GPU_ABORTED).
[[noreturn]] void abort_comm(cb_nccl_comm* c, const std::string& why) {
  if (!c->aborted && c->comm) ncclCommAbort(c->comm);
  c->aborted = true;
  c->comm = nullptr;
  throw Fail{CB_GPU_ABORTED, why + " on rank " + std::to_string(c->rank) + " of " +
                                 std::to_string(c->nranks) + "; communicator aborted"};
}

/// Aborts on an asynchronous NCCL error; returns the communicator's state (ncclInProgress or
/// ncclSuccess).
ncclResult_t async_state(cb_nccl_comm* c, const char* what) {
  ncclResult_t st = ncclInProgress;
  ncclResult_t r = ncclCommGetAsyncError(c->comm, &st);
  if (r != ncclSuccess) abort_comm(c, nccl_text("ncclCommGetAsyncError", r, c->comm));
  if (st != ncclSuccess && st != ncclInProgress) abort_comm(c, nccl_text(what, st, c->comm));
  return st;
}

/// Waits until a non-blocking NCCL call has finished (ncclInProgress -> ncclSuccess).
void wait_ready(cb_nccl_comm* c, Clock::time_point deadline, const char* what) {
  while (async_state(c, what) != ncclSuccess) {
    if (Clock::now() > deadline)
      abort_comm(c, std::string(what) + ": not ready after " + std::to_string(c->timeout_s) + " s");
    std::this_thread::yield();
  }
}

/// One NCCL call of a non-blocking communicator: an error aborts; ncclInProgress is waited for.
void issue(cb_nccl_comm* c, ncclResult_t r, Clock::time_point deadline, const char* what) {
  if (r == ncclSuccess) return;
  if (r == ncclInProgress) return wait_ready(c, deadline, what);
  abort_comm(c, nccl_text(what, r, c->comm));
}

/// Arguments of one cb_nccl_run.
struct Call {
  int coll, dtype;
  const void* send;
  void* recv;
  size_t count, block;
  int root;
  Clock::time_point deadline;
};

/// alltoall and sendrecv: grouped ncclSend/ncclRecv, as nccl-tests.
void enqueue_p2p(cb_nccl_comm* c, const Call& a) {
  const ncclDataType_t ty = nccl_type(a.dtype);
  const size_t ts = type_size(a.dtype);
  ncclComm_t m = c->comm;
  cudaStream_t s = c->stream.get();
  issue(c, ncclGroupStart(), a.deadline, "ncclGroupStart");
  if (a.coll == CB_COLL_ALLTOALL) {
    for (int p = 0; p < c->nranks; ++p) {
      const char* sp = static_cast<const char*>(a.send) + static_cast<size_t>(p) * a.block * ts;
      char* rp = static_cast<char*>(a.recv) + static_cast<size_t>(p) * a.block * ts;
      issue(c, ncclSend(sp, a.block, ty, p, m, s), a.deadline, "ncclSend");
      issue(c, ncclRecv(rp, a.block, ty, p, m, s), a.deadline, "ncclRecv");
    }
  } else {
    int next = (c->rank + 1) % c->nranks, prev = (c->rank - 1 + c->nranks) % c->nranks;
    issue(c, ncclSend(a.send, a.count, ty, next, m, s), a.deadline, "ncclSend");
    issue(c, ncclRecv(a.recv, a.count, ty, prev, m, s), a.deadline, "ncclRecv");
  }
  issue(c, ncclGroupEnd(), a.deadline, "ncclGroupEnd");
}

void enqueue(cb_nccl_comm* c, const Call& a) {
  const ncclDataType_t ty = nccl_type(a.dtype);
  ncclComm_t m = c->comm;
  cudaStream_t s = c->stream.get();
  switch (a.coll) {
    case CB_COLL_ALL_REDUCE:
      return issue(c, ncclAllReduce(a.send, a.recv, a.count, ty, ncclSum, m, s), a.deadline,
                   "ncclAllReduce");
    case CB_COLL_ALL_GATHER:
      return issue(c, ncclAllGather(a.send, a.recv, a.block, ty, m, s), a.deadline,
                   "ncclAllGather");
    case CB_COLL_REDUCE_SCATTER:
      return issue(c, ncclReduceScatter(a.send, a.recv, a.block, ty, ncclSum, m, s), a.deadline,
                   "ncclReduceScatter");
    case CB_COLL_BROADCAST:
      return issue(c, ncclBroadcast(a.send, a.recv, a.count, ty, a.root, m, s), a.deadline,
                   "ncclBroadcast");
    case CB_COLL_REDUCE:
      return issue(c, ncclReduce(a.send, a.recv, a.count, ty, ncclSum, a.root, m, s), a.deadline,
                   "ncclReduce");
    case CB_COLL_ALLTOALL:
    case CB_COLL_SENDRECV:
      return enqueue_p2p(c, a);
    default:
      throw Fail{CB_GPU_ERROR, "unknown collective " + std::to_string(a.coll)};
  }
}

/// Waits for the stop event, never blocking inside CUDA: a hung peer must not hang us.
/// `what` names the waited-for work in the abort's text ("3 operation(s)", "a buffer copy").
void poll_until_done(cb_nccl_comm* c, cudaEvent_t stop, const std::string& what,
                     Clock::time_point deadline) {
  for (;;) {
    cudaError_t q = cudaEventQuery(stop);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady)
      abort_comm(c, clusterbench::gpu::cuda_error_text("cudaEventQuery", q));
    async_state(c, "NCCL asynchronous error");
    if (Clock::now() > deadline)
      abort_comm(c, what + " not finished after " + std::to_string(c->timeout_s) + " s");
    std::this_thread::yield();
  }
}

/// Refuses an NCCL built for another CUDA major than this plugin (nccl_build.hpp), naming the
/// library the dynamic linker resolved; checked once per process.
void check_nccl_build() {
  static const std::string refusal = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) || !info.dli_fname)
      return std::string();
    // The library is hundreds of MB: mapped, not read.
    const int fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
      if (fd >= 0) close(fd);
      return std::string();
    }
    const size_t size = static_cast<size_t>(st.st_size);
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return std::string();
    const auto build =
        clusterbench::gpu::nccl_build_of(std::string_view(static_cast<const char*>(map), size));
    munmap(map, size);
    return clusterbench::gpu::nccl_build_mismatch(info.dli_fname, build, CUDART_VERSION);
  }();
  if (!refusal.empty()) throw Fail{CB_GPU_ERROR, refusal};
}

void comm_init(const unsigned char id[CB_NCCL_ID_BYTES], cb_nccl_comm* c) {
  check_nccl_build();
  ncclUniqueId uid;
  std::memcpy(&uid, id, sizeof uid);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that init, too, waits against the deadline
  ncclResult_t r = ncclCommInitRankConfig(&c->comm, c->nranks, uid, c->rank, &config);
  auto deadline = deadline_of(c);
  if (r != ncclSuccess && r != ncclInProgress)
    throw Fail{CB_GPU_ERROR, nccl_text("ncclCommInitRankConfig", r, c->comm)};
  wait_ready(c, deadline, "ncclCommInitRankConfig");
}

}  // namespace

extern "C" int cb_nccl_unique_id(unsigned char id[CB_NCCL_ID_BYTES]) {
  static_assert(sizeof(ncclUniqueId) == CB_NCCL_ID_BYTES, "ncclUniqueId size");
  return plugin_call([&] {
    check_nccl_build();
    ncclUniqueId uid;
    ncclResult_t r = ncclGetUniqueId(&uid);
    if (r != ncclSuccess) throw Fail{CB_GPU_ERROR, nccl_text("ncclGetUniqueId", r, nullptr)};
    std::memcpy(id, &uid, sizeof uid);
  });
}

extern "C" int cb_nccl_comm_init(const unsigned char id[CB_NCCL_ID_BYTES], int nranks, int rank,
                                 double timeout_s, cb_nccl_comm** out) {
  *out = nullptr;
  cb_nccl_comm* c = nullptr;
  int rc = plugin_call([&] {
    c = new cb_nccl_comm;
    c->rank = rank;
    c->nranks = nranks;
    c->timeout_s = timeout_s;
    comm_init(id, c);
  });
  if (rc == CB_GPU_OK)
    *out = c;
  else
    cb_nccl_comm_destroy(c);
  return rc;
}

extern "C" void cb_nccl_comm_destroy(cb_nccl_comm* c) {
  if (!c) return;
  if (c->comm && !c->aborted) {
    // Non-blocking: finalize may answer ncclInProgress. Wait against the deadline; a communicator
    // that does not finalize (a peer gone) is aborted by issue() instead of destroyed.
    int rc = plugin_call(
        [&] { issue(c, ncclCommFinalize(c->comm), deadline_of(c), "ncclCommFinalize"); });
    if (rc == CB_GPU_OK) ncclCommDestroy(c->comm);
  }
  delete c;
}

extern "C" int cb_nccl_alloc(size_t bytes, void** dev) {
  *dev = nullptr;
  return plugin_call([&] { CUDA_TRY(cudaMalloc(dev, bytes > 0 ? bytes : 1)); });
}

extern "C" void cb_nccl_free(void* dev) {
  if (dev) cudaFree(dev);
}

extern "C" int cb_nccl_copy(cb_nccl_comm* c, void* dst, const void* src, size_t bytes,
                            int to_device) {
  return plugin_call([&] {
    if (!c || c->aborted || !c->comm) throw Fail{CB_GPU_ABORTED, "NCCL communicator was aborted"};
    // On the communicator's own (non-blocking) stream, waited for against the deadline: a copy on
    // the legacy stream is not ordered with it, and the check or the first timed operation could
    // read the buffer before the upload lands.
    const auto deadline = deadline_of(c);
    c->timer.time(
        c->stream.get(),
        [&] {
          CUDA_TRY(cudaMemcpyAsync(dst, src, bytes,
                                   to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                                   c->stream.get()));
        },
        [&](cudaEvent_t stop) { poll_until_done(c, stop, "a buffer copy", deadline); });
  });
}

extern "C" int cb_nccl_run(cb_nccl_comm* c, int coll, int dtype, const void* send, void* recv,
                           size_t count, size_t block, int root, long long ops, double* seconds) {
  *seconds = -1;
  return plugin_call([&] {
    if (!c || c->aborted || !c->comm) throw Fail{CB_GPU_ABORTED, "NCCL communicator was aborted"};
    const Call call{coll, dtype, send, recv, count, block, root, deadline_of(c)};
    *seconds = c->timer.time(
        c->stream.get(),
        [&] {
          for (long long k = 0; k < ops; ++k) enqueue(c, call);
        },
        [&](cudaEvent_t stop) {
          poll_until_done(c, stop, std::to_string(ops) + " operation(s)", call.deadline);
        });
  });
}

extern "C" int cb_nccl_compare(cb_nccl_comm* c, const void* a, const void* ref, size_t count,
                               int dtype, long long* differing) {
  *differing = -1;
  return plugin_call([&] {
    if (!c || c->aborted || !c->comm) throw Fail{CB_GPU_ABORTED, "NCCL communicator was aborted"};
    using clusterbench::gpu::CompareType;
    if (!c->counters)
      c->counters = std::make_unique<clusterbench::gpu::DeviceBuffer>(3 * sizeof(long long));
    auto* counters = static_cast<unsigned long long*>(c->counters->get());
    unsigned long long host[3] = {0, 0, 0};
    const auto deadline = deadline_of(c);
    c->timer.time(
        c->stream.get(),
        [&] {
          CUDA_TRY(cudaMemsetAsync(counters, 0, sizeof host, c->stream.get()));
          CUDA_TRY(clusterbench::gpu::compare_elements(
              a, ref,
              dtype == CB_DTYPE_HALF       ? CompareType::f16
              : dtype == CB_DTYPE_BFLOAT16 ? CompareType::bf16
                                           : CompareType::f32,
              static_cast<long long>(count), 0.0, counters, c->stream.get()));
          CUDA_TRY(cudaMemcpyAsync(host, counters, sizeof host, cudaMemcpyDeviceToHost,
                                   c->stream.get()));
        },
        [&](cudaEvent_t stop) { poll_until_done(c, stop, "a result comparison", deadline); });
    *differing = static_cast<long long>(host[0]);
  });
}

extern "C" int cb_nccl_reset_debug(void) {
  // Looked up in the NCCL this plugin runs with (deprecated in the header, absent before 2.19).
  static void (*reset)() = [] {
    Dl_info info{};
    void (*f)() = nullptr;
    if (dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) && info.dli_fname) {
      if (void* h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD))
        f = reinterpret_cast<void (*)()>(dlsym(h, "ncclResetDebugInit"));
    }
    return f;
  }();
  if (!reset) return CB_GPU_ERROR;
  reset();
  return CB_GPU_OK;
}
