// NCCL side of the collectives, compiled into libclusterbench_gpu.so (bench/gpu/plugin_abi.h,
// "Collectives over NCCL"). One communicator per rank, one GPU each; every wait polls against a
// deadline (nccl-tests' -T): the stream's stop event and ncclCommGetAsyncError. On timeout or an
// asynchronous error the communicator is aborted and the caller told, so the run can end (exit 3).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "gpu/plugin_abi.h"

struct cb_nccl_comm {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  int rank = 0, nranks = 1;
  double timeout_s = 0;
  bool aborted = false;
};

namespace {

using Clock = std::chrono::steady_clock;

int fail(char* err, size_t len, const std::string& what, int code = CB_GPU_ERROR) {
  std::snprintf(err, len, "%s", what.c_str());
  return code;
}

std::string cuda_text(const char* call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
}

std::string nccl_text(const char* call, ncclResult_t r, ncclComm_t comm) {
  std::string s = std::string(call) + ": " + ncclGetErrorString(r);
  if (comm) {
    const char* last = ncclGetLastError(comm);
    if (last && *last) s += std::string(": ") + last;
  }
  return s;
}

#define CB_CUDA(call)                                                            \
  do {                                                                           \
    cudaError_t cb_e_ = (call);                                                  \
    if (cb_e_ != cudaSuccess) return fail(err, errlen, cuda_text(#call, cb_e_)); \
  } while (0)

ncclDataType_t nccl_type(int dtype) {
  return dtype == CB_DTYPE_HALF ? ncclHalf : dtype == CB_DTYPE_BFLOAT16 ? ncclBfloat16 : ncclFloat;
}
size_t type_size(int dtype) { return dtype == CB_DTYPE_FLOAT ? 4 : 2; }

/// Aborts the communicator and reports why (CB_GPU_ABORTED).
int abort_comm(cb_nccl_comm* c, const std::string& why, char* err, size_t errlen) {
  if (!c->aborted && c->comm) ncclCommAbort(c->comm);
  c->aborted = true;
  c->comm = nullptr;
  return fail(err, errlen,
              why + " on rank " + std::to_string(c->rank) + " of " + std::to_string(c->nranks) +
                  "; communicator aborted",
              CB_GPU_ABORTED);
}

/// Waits until a non-blocking NCCL call has finished (ncclInProgress -> ncclSuccess).
int wait_ready(cb_nccl_comm* c, Clock::time_point deadline, const char* what, char* err,
               size_t errlen) {
  for (;;) {
    ncclResult_t st = ncclInProgress;
    ncclResult_t r = ncclCommGetAsyncError(c->comm, &st);
    if (r != ncclSuccess)
      return abort_comm(c, nccl_text("ncclCommGetAsyncError", r, c->comm), err, errlen);
    if (st == ncclSuccess) return CB_GPU_OK;
    if (st != ncclInProgress) return abort_comm(c, nccl_text(what, st, c->comm), err, errlen);
    if (Clock::now() > deadline)
      return abort_comm(
          c, std::string(what) + ": not ready after " + std::to_string(c->timeout_s) + " s", err,
          errlen);
    std::this_thread::yield();
  }
}

/// One NCCL call of a non-blocking communicator: an error aborts; ncclInProgress is waited for.
int issue(cb_nccl_comm* c, ncclResult_t r, Clock::time_point deadline, const char* what, char* err,
          size_t errlen) {
  if (r == ncclSuccess) return CB_GPU_OK;
  if (r == ncclInProgress) return wait_ready(c, deadline, what, err, errlen);
  return abort_comm(c, nccl_text(what, r, c->comm), err, errlen);
}

int enqueue(cb_nccl_comm* c, int coll, ncclDataType_t ty, size_t ts, const void* send, void* recv,
            size_t count, size_t block, int root, Clock::time_point deadline, char* err,
            size_t errlen) {
  ncclComm_t m = c->comm;
  cudaStream_t s = c->stream;
  switch (coll) {
    case CB_COLL_ALL_REDUCE:
      return issue(c, ncclAllReduce(send, recv, count, ty, ncclSum, m, s), deadline,
                   "ncclAllReduce", err, errlen);
    case CB_COLL_ALL_GATHER:
      return issue(c, ncclAllGather(send, recv, block, ty, m, s), deadline, "ncclAllGather", err,
                   errlen);
    case CB_COLL_REDUCE_SCATTER:
      return issue(c, ncclReduceScatter(send, recv, block, ty, ncclSum, m, s), deadline,
                   "ncclReduceScatter", err, errlen);
    case CB_COLL_BROADCAST:
      return issue(c, ncclBroadcast(send, recv, count, ty, root, m, s), deadline, "ncclBroadcast",
                   err, errlen);
    case CB_COLL_REDUCE:
      return issue(c, ncclReduce(send, recv, count, ty, ncclSum, root, m, s), deadline,
                   "ncclReduce", err, errlen);
    case CB_COLL_ALLTOALL:
    case CB_COLL_SENDRECV: {
      int rc = issue(c, ncclGroupStart(), deadline, "ncclGroupStart", err, errlen);
      if (rc != CB_GPU_OK) return rc;
      if (coll == CB_COLL_ALLTOALL) {
        for (int p = 0; p < c->nranks && rc == CB_GPU_OK; ++p) {
          const char* sp = static_cast<const char*>(send) + static_cast<size_t>(p) * block * ts;
          char* rp = static_cast<char*>(recv) + static_cast<size_t>(p) * block * ts;
          rc = issue(c, ncclSend(sp, block, ty, p, m, s), deadline, "ncclSend", err, errlen);
          if (rc == CB_GPU_OK)
            rc = issue(c, ncclRecv(rp, block, ty, p, m, s), deadline, "ncclRecv", err, errlen);
        }
      } else {
        int next = (c->rank + 1) % c->nranks, prev = (c->rank - 1 + c->nranks) % c->nranks;
        rc = issue(c, ncclSend(send, count, ty, next, m, s), deadline, "ncclSend", err, errlen);
        if (rc == CB_GPU_OK)
          rc = issue(c, ncclRecv(recv, count, ty, prev, m, s), deadline, "ncclRecv", err, errlen);
      }
      if (rc != CB_GPU_OK) return rc;
      return issue(c, ncclGroupEnd(), deadline, "ncclGroupEnd", err, errlen);
    }
    default:
      return fail(err, errlen, "unknown collective " + std::to_string(coll));
  }
}

}  // namespace

extern "C" int cb_nccl_unique_id(unsigned char id[CB_NCCL_ID_BYTES], char* err, size_t errlen) {
  static_assert(sizeof(ncclUniqueId) == CB_NCCL_ID_BYTES, "ncclUniqueId size");
  ncclUniqueId uid;
  ncclResult_t r = ncclGetUniqueId(&uid);
  if (r != ncclSuccess) return fail(err, errlen, nccl_text("ncclGetUniqueId", r, nullptr));
  std::memcpy(id, &uid, sizeof uid);
  return CB_GPU_OK;
}

extern "C" int cb_nccl_comm_init(const unsigned char id[CB_NCCL_ID_BYTES], int nranks, int rank,
                                 double timeout_s, cb_nccl_comm** out, char* err, size_t errlen) {
  *out = nullptr;
  auto* c = new cb_nccl_comm;
  c->rank = rank;
  c->nranks = nranks;
  c->timeout_s = timeout_s;
  auto cleanup = [&](int rc) {
    if (rc != CB_GPU_OK) cb_nccl_comm_destroy(c);
    return rc;
  };
  cudaError_t e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreate(&c->start);
  if (e == cudaSuccess) e = cudaEventCreate(&c->stop);
  if (e != cudaSuccess)
    return cleanup(fail(err, errlen, cuda_text("cudaStreamCreate/cudaEventCreate", e)));
  ncclUniqueId uid;
  std::memcpy(&uid, id, sizeof uid);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that init, too, waits against the deadline
  ncclResult_t r = ncclCommInitRankConfig(&c->comm, nranks, uid, rank, &config);
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(timeout_s));
  if (r != ncclSuccess && r != ncclInProgress)
    return cleanup(fail(err, errlen, nccl_text("ncclCommInitRankConfig", r, c->comm)));
  int rc = wait_ready(c, deadline, "ncclCommInitRankConfig", err, errlen);
  if (rc != CB_GPU_OK) return cleanup(rc);
  *out = c;
  return CB_GPU_OK;
}

extern "C" void cb_nccl_comm_destroy(cb_nccl_comm* c) {
  if (!c) return;
  if (c->comm && !c->aborted) {
    // Non-blocking: finalize may answer ncclInProgress. Wait against the deadline; a communicator
    // that does not finalize (a peer gone) is aborted by issue() instead of destroyed.
    char err[512] = {0};
    size_t errlen = sizeof err;
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(c->timeout_s));
    if (issue(c, ncclCommFinalize(c->comm), deadline, "ncclCommFinalize", err, errlen) == CB_GPU_OK)
      ncclCommDestroy(c->comm);
  }
  if (c->start) cudaEventDestroy(c->start);
  if (c->stop) cudaEventDestroy(c->stop);
  if (c->stream) cudaStreamDestroy(c->stream);
  delete c;
}

extern "C" int cb_nccl_alloc(size_t bytes, void** dev, char* err, size_t errlen) {
  *dev = nullptr;
  CB_CUDA(cudaMalloc(dev, bytes > 0 ? bytes : 1));
  return CB_GPU_OK;
}

extern "C" void cb_nccl_free(void* dev) {
  if (dev) cudaFree(dev);
}

extern "C" int cb_nccl_copy(void* dst, const void* src, size_t bytes, int to_device, char* err,
                            size_t errlen) {
  CB_CUDA(cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost));
  return CB_GPU_OK;
}

extern "C" int cb_nccl_run(cb_nccl_comm* c, int coll, int dtype, const void* send, void* recv,
                           size_t count, size_t block, int root, long long ops, double* seconds,
                           char* err, size_t errlen) {
  *seconds = -1;
  if (!c || c->aborted || !c->comm)
    return fail(err, errlen, "NCCL communicator was aborted", CB_GPU_ABORTED);
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(c->timeout_s));
  ncclDataType_t ty = nccl_type(dtype);
  size_t ts = type_size(dtype);
  CB_CUDA(cudaEventRecord(c->start, c->stream));
  for (long long k = 0; k < ops; ++k) {
    int rc = enqueue(c, coll, ty, ts, send, recv, count, block, root, deadline, err, errlen);
    if (rc != CB_GPU_OK) return rc;
  }
  CB_CUDA(cudaEventRecord(c->stop, c->stream));
  // Wait for the stop event, never blocking inside CUDA: a hung peer must not hang us.
  for (;;) {
    cudaError_t q = cudaEventQuery(c->stop);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) return abort_comm(c, cuda_text("cudaEventQuery", q), err, errlen);
    ncclResult_t st = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(c->comm, &st);
    if (r != ncclSuccess)
      return abort_comm(c, nccl_text("ncclCommGetAsyncError", r, c->comm), err, errlen);
    if (st != ncclSuccess && st != ncclInProgress)
      return abort_comm(c, nccl_text("NCCL asynchronous error", st, c->comm), err, errlen);
    if (Clock::now() > deadline)
      return abort_comm(c,
                        std::to_string(ops) + " operation(s) not finished after " +
                            std::to_string(c->timeout_s) + " s",
                        err, errlen);
    std::this_thread::yield();
  }
  float ms = 0;
  CB_CUDA(cudaEventElapsedTime(&ms, c->start, c->stop));
  *seconds = ms / 1e3;
  return CB_GPU_OK;
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
