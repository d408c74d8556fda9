// The NCCL API over the simulated communicators. Contracts enforced: a communicator used after
// ncclCommAbort or ncclCommDestroy is ncclInvalidArgument (with a last error saying so);
// buffers must be device memory of the communicator's device, in bounds; the stream must belong
// to the communicator's device; a non-blocking init or finalize answers ncclInProgress until
// done.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>

#include "nccl_impl.hpp"
#include "node.hpp"

using namespace cbsim;

namespace {

constexpr const char* kIdPrefix = "cbsim-nccl:";

std::set<ncclComm*>& comms() {
  static auto* s = new std::set<ncclComm*>;
  return *s;
}

/// Per thread: the group being built (ncclGroupStart .. ncclGroupEnd).
struct Group {
  int depth = 0;
  struct Item {
    ncclComm* comm;
    Stream* stream;
    bool p2p;
    CollCall coll;
    P2pCall p;
  };
  std::vector<Item> items;
};
Group& group() {
  thread_local Group g;
  return g;
}

ncclResult_t refuse(ncclComm* c, ncclResult_t r, const std::string& text) {
  nccl_set_last_error(c ? c->device : 0, text);
  return r;
}

std::string ptr_text(const void* p) {
  char b[32];
  std::snprintf(b, sizeof b, "%p", p);
  return b;
}

/// A communicator that may be used: live, initialised, no asynchronous error.
ncclResult_t usable(ncclComm* c, const char* call) {
  if (!c || !comms().count(c))
    return refuse(nullptr, ncclInvalidArgument, std::string(call) + ": invalid communicator");
  if (c->st == ncclComm::St::aborted)
    return refuse(c, ncclInvalidArgument,
                  std::string(call) + ": communicator " + ptr_text(c) +
                      " was aborted (ncclCommAbort) and cannot be used");
  if (c->st == ncclComm::St::destroyed)
    return refuse(c, ncclInvalidArgument,
                  std::string(call) + ": communicator " + ptr_text(c) +
                      " was destroyed (ncclCommDestroy) and cannot be used");
  if (c->st == ncclComm::St::initializing)
    return refuse(c, ncclInvalidUsage, std::string(call) + ": communicator is still initializing");
  if (c->async_error != ncclSuccess) return c->async_error;
  return ncclSuccess;
}

/// The buffer [p, p + bytes) is device memory of the communicator's device.
ncclResult_t check_buffer(State& st, ncclComm* c, const char* call, const char* what, const void* p,
                          std::uint64_t bytes) {
  const auto a = reinterpret_cast<std::uint64_t>(p);
  Alloc* al = find_alloc(st, a, std::max<std::uint64_t>(bytes, 1));
  Alloc* any = find_alloc(st, a);
  std::string why;
  if (!any)
    why = "is not device memory";
  else if (any->device != c->device)
    why = "is memory of CUDA device " + std::to_string(any->device) + ", the communicator's is " +
          std::to_string(c->device);
  else if (!al)
    why = "+ " + std::to_string(bytes) + " bytes leaves its allocation of " +
          std::to_string(any->size);
  if (why.empty()) return ncclSuccess;
  return refuse(c, ncclInvalidArgument,
                std::string(call) + ": " + what + " " + ptr_text(p) + " " + why);
}

ncclResult_t check_stream(State& st, ncclComm* c, const char* call, cudaStream_t stream,
                          Stream*& s) {
  s = resolve(st, stream);
  if (!s) return refuse(c, ncclInvalidArgument, std::string(call) + ": invalid CUDA stream");
  if (s->device != c->device)
    return refuse(c, ncclInvalidArgument,
                  std::string(call) + ": the stream belongs to CUDA device " +
                      std::to_string(s->device) + ", the communicator to device " +
                      std::to_string(c->device));
  return ncclSuccess;
}

/// Logs what NCCL logs once every rank has joined.
void log_connected(const ncclComm& c) {
  const CommInfo& i = c.info;
  const int n = c.nranks, next = (c.rank + 1) % n;
  if (i.network) {
    std::string nics;
    for (int p = 0; p < std::max(1, node().ib_ports_active); ++p)
      nics.append(1, '[')
          .append(std::to_string(p))
          .append("]mlx5_")
          .append(std::to_string(p))
          .append(":1/IB ");
    nccl_info(c.device, "INIT,NET", "NET/IB : Using " + nics + "; OOB ib0:10.0.0.1<0>");
    nccl_info(c.device, "INIT,NET", "Using network IB");
  }
  if (const char* algo = std::getenv("NCCL_ALGO"))
    nccl_info(c.device, "ENV", std::string("NCCL_ALGO set by environment to ") + algo + ".");
  nccl_info(c.device, "INIT,NVLS",
            std::string("NVLS multicast support is ") + (i.nvls ? "" : "not ") +
                "available on dev " + std::to_string(c.device));
  for (int ch = 0; n > 1 && ch < 16; ++ch) {
    char line[160];
    std::snprintf(line, sizeof line, "Channel %02d/0 : %d[%d] -> %d[%d] via %s", ch, c.rank,
                  i.devices[c.rank], next, i.devices[next],
                  i.network ? ("NET/IB/" +
                               std::to_string(ch % std::max(1, node().ib_ports_active)) + "/GDRDMA")
                                  .c_str()
                            : "P2P/IPC/read");
    nccl_info(c.device, i.network ? "INIT,NET" : "INIT,P2P", line);
  }
  if (n > 1) nccl_info(c.device, "INIT", "Connected all rings");
  if (i.nvls) nccl_info(c.device, "INIT", "Connected NVLS");
  nccl_info(c.device, "INIT",
            "ncclCommInitRankConfig comm " + ptr_text(&c) + " rank " + std::to_string(c.rank) +
                " nranks " + std::to_string(n) + " cudaDev " + std::to_string(c.device) +
                " - Init COMPLETE");
}

/// Moves an initializing communicator to ready once all ranks joined.
void progress_init(ncclComm* c) {
  if (c->st == ncclComm::St::initializing && nccl_all_joined(*c)) {
    c->st = ncclComm::St::ready;
    log_connected(*c);
  }
}

void leave_all_at_exit() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  for (ncclComm* c : comms())
    if (c->shm) nccl_leave(*c);
}

void flush_group(State& st);

/// Logs the TUNING line of a collective (rank 0, as NCCL does).
void log_tuning(const ncclComm& c, const CollCall& k) {
  if (c.rank != 0 || !nccl_logs("TUNING")) return;
  const bool total = k.coll == Coll::all_gather || k.coll == Coll::reduce_scatter;
  const double bytes = static_cast<double>(k.count * elem_size(k.type) *
                                           (total ? static_cast<unsigned>(c.nranks) : 1u));
  const Choice ch = nccl_choice(c, k.coll, false, bytes);
  char line[192];
  std::snprintf(line, sizeof line, "%s: %.0f Bytes -> Algo %s proto %s channel{Lo..Hi}={0..%d}",
                nccl_func(k.coll), bytes, ch.algo, ch.proto, ch.channels - 1);
  nccl_info(c.device, "TUNING", line);
}

ncclResult_t enqueue_coll(ncclComm* c, const char* call, const CollCall& k, cudaStream_t stream) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (ncclResult_t r = usable(c, call)) return r;
  if (k.root < 0 || k.root >= c->nranks)
    return refuse(c, ncclInvalidArgument, std::string(call) + ": invalid root");
  Stream* s = nullptr;
  if (ncclResult_t r = check_stream(st, c, call, stream, s)) return r;
  const std::uint64_t one = k.count * elem_size(k.type),
                      all = one * static_cast<unsigned>(c->nranks);
  const bool root = c->rank == k.root;
  const std::uint64_t sb = k.coll == Coll::reduce_scatter ? all : one;
  const std::uint64_t rb = k.coll == Coll::all_gather ? all : one;
  if (k.coll != Coll::broadcast || root)
    if (ncclResult_t r =
            check_buffer(st, c, call, "sendbuff", reinterpret_cast<const void*>(k.send), sb))
      return r;
  if (k.coll != Coll::reduce || root)
    if (ncclResult_t r =
            check_buffer(st, c, call, "recvbuff", reinterpret_cast<const void*>(k.recv), rb))
      return r;
  log_tuning(*c, k);
  if (group().depth > 0) {
    group().items.push_back({c, s, false, k, {}});
    return ncclSuccess;
  }
  issue_collective(st, *c, *s, k);
  return ncclSuccess;
}

/// The element type of an NCCL datatype, or an error.
ncclResult_t elem_of(ncclComm* c, const char* call, ncclDataType_t t, Elem& e) {
  if (nccl_elem(t, e)) return ncclSuccess;
  return refuse(c, ncclInvalidArgument,
                std::string(call) + ": datatype " + std::to_string(t) +
                    " is not simulated (float, half, bfloat16, double)");
}

ncclResult_t coll(Coll kind, const char* call, const void* send, void* recv, size_t count,
                  ncclDataType_t dt, ncclRedOp_t op, int root, ncclComm_t comm,
                  cudaStream_t stream) {
  CollCall k;
  k.coll = kind, k.send = reinterpret_cast<std::uint64_t>(send);
  k.recv = reinterpret_cast<std::uint64_t>(recv), k.count = count, k.dtype = dt, k.op = op;
  k.root = root;
  if (ncclResult_t r = elem_of(comm, call, dt, k.type)) return r;
  if (op < ncclSum || op > ncclAvg)
    return refuse(comm, ncclInvalidArgument, std::string(call) + ": invalid reduction");
  return enqueue_coll(comm, call, k, stream);
}

ncclResult_t p2p(bool send, const char* call, const void* buf, size_t count, ncclDataType_t dt,
                 int peer, ncclComm_t comm, cudaStream_t stream) {
  P2pCall p;
  p.send = send, p.peer = peer, p.ptr = reinterpret_cast<std::uint64_t>(buf), p.count = count;
  if (ncclResult_t r = elem_of(comm, call, dt, p.type)) return r;
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (ncclResult_t r = usable(comm, call)) return r;
  if (peer < 0 || peer >= comm->nranks)
    return refuse(comm, ncclInvalidArgument, std::string(call) + ": invalid peer");
  Stream* s = nullptr;
  if (ncclResult_t r = check_stream(st, comm, call, stream, s)) return r;
  if (ncclResult_t r = check_buffer(st, comm, call, send ? "sendbuff" : "recvbuff", buf,
                                    count * elem_size(p.type)))
    return r;
  group().items.push_back({comm, s, true, {}, p});
  if (group().depth == 0) flush_group(st);
  return ncclSuccess;
}

/// Issues the group's calls in order, consecutive point-to-point calls of one communicator and
/// stream as one operation.
void flush_group(State& st) {
  auto items = std::move(group().items);
  group().items.clear();
  for (size_t i = 0; i < items.size();) {
    if (!items[i].p2p) {
      issue_collective(st, *items[i].comm, *items[i].stream, items[i].coll);
      ++i;
      continue;
    }
    std::vector<P2pCall> calls;
    size_t j = i;
    for (; j < items.size() && items[j].p2p && items[j].comm == items[i].comm &&
           items[j].stream == items[i].stream;
         ++j)
      calls.push_back(items[j].p);
    issue_p2p(st, *items[i].comm, *items[i].stream, calls);
    i = j;
  }
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = node().nccl_version;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (!uniqueId) return ncclInvalidArgument;
  nccl_env();
  nccl_sweep_stale();
  std::string why;
  const std::string dir = nccl_new_dir(why);
  if (dir.empty()) return refuse(nullptr, ncclSystemError, "ncclGetUniqueId: " + why);
  std::memset(uniqueId, 0, sizeof *uniqueId);
  std::snprintf(uniqueId->internal, sizeof uniqueId->internal, "%s%s", kIdPrefix, dir.c_str());
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  if (!comm) return ncclInvalidArgument;
  *comm = nullptr;
  nccl_env();
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks)
    return refuse(nullptr, ncclInvalidArgument, "ncclCommInitRankConfig: invalid rank or nranks");
  if (config && (config->magic != 0xcafebeef || config->size < sizeof(size_t)))
    return refuse(nullptr, ncclInvalidArgument,
                  "ncclCommInitRankConfig: invalid config (use NCCL_CONFIG_INITIALIZER)");
  std::string id(commId.internal, strnlen(commId.internal, sizeof commId.internal));
  if (id.rfind(kIdPrefix, 0) != 0)
    return refuse(nullptr, ncclInvalidArgument,
                  "ncclCommInitRankConfig: not a unique id of this NCCL");
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (init_error() != cudaSuccess)
    return refuse(nullptr, ncclUnhandledCudaError, "ncclCommInitRankConfig: CUDA failed to start");
  auto* c = new ncclComm;
  c->rank = rank, c->nranks = nranks, c->device = current_device();
  c->blocking = !config || config->blocking != 0;
  c->dir = id.substr(std::strlen(kIdPrefix));
  c->shm = nccl_map_state(c->dir);
  if (c->shm && c->shm->slots[rank].joined.load()) {  // a unique id serves one communicator
    delete c;
    return refuse(nullptr, ncclInvalidUsage,
                  "ncclCommInitRankConfig: rank " + std::to_string(rank) + " of " + id +
                      " has joined already (a unique id serves one communicator)");
  }
  if (!c->shm || !nccl_join(*c)) {
    delete c;
    return refuse(nullptr, ncclSystemError, "ncclCommInitRankConfig: cannot join " + id);
  }
  static bool registered = (std::atexit(leave_all_at_exit), true);
  (void)registered;
  comms().insert(c);
  *comm = c;
  nccl_log_version(c->device);
  progress_init(c);
  if (!c->blocking) return c->st == ncclComm::St::ready ? ncclSuccess : ncclInProgress;
  while (c->st == ncclComm::St::initializing) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lock.lock();
    progress_init(c);
  }
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!comm || !comms().count(comm) || !asyncError) return ncclInvalidArgument;
  if (comm->st == ncclComm::St::destroyed || comm->st == ncclComm::St::aborted)
    return usable(comm, "ncclCommGetAsyncError");
  progress_init(comm);
  progress(st);
  if (comm->st == ncclComm::St::finalizing && comm->pending == 0)
    comm->st = ncclComm::St::finalized;
  const bool busy = comm->st == ncclComm::St::initializing || comm->st == ncclComm::St::finalizing;
  *asyncError = comm->async_error != ncclSuccess ? comm->async_error
                : busy                           ? ncclInProgress
                                                 : ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  State& st = state();
  std::unique_lock<std::mutex> lock(st.mu);
  if (ncclResult_t r = usable(comm, "ncclCommFinalize")) return r;
  comm->st = ncclComm::St::finalizing;
  progress(st);
  if (comm->pending == 0) comm->st = ncclComm::St::finalized;
  if (!comm->blocking) return comm->st == ncclComm::St::finalized ? ncclSuccess : ncclInProgress;
  while (comm->pending > 0) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lock.lock();
    progress(st);
  }
  comm->st = ncclComm::St::finalized;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!comm || !comms().count(comm))
    return refuse(nullptr, ncclInvalidArgument, "ncclCommDestroy: invalid communicator");
  if (comm->st == ncclComm::St::aborted || comm->st == ncclComm::St::destroyed)
    return usable(comm, "ncclCommDestroy");
  comm->st = ncclComm::St::destroyed;
  nccl_leave(*comm);
  progress(st);  // its queued operations complete without effect
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!comm || !comms().count(comm))
    return refuse(nullptr, ncclInvalidArgument, "ncclCommAbort: invalid communicator");
  if (comm->st == ncclComm::St::aborted || comm->st == ncclComm::St::destroyed)
    return usable(comm, "ncclCommAbort");
  comm->st = ncclComm::St::aborted;
  nccl_leave(*comm);
  progress(st);  // its queued operations are dropped, so the streams drain
  return ncclSuccess;
}

const char* ncclGetLastError(ncclComm_t) { return nccl_last_error(); }

void ncclResetDebugInit() { nccl_reset_debug(); }

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!count || !comm || !comms().count(comm)) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!device || !comm || !comms().count(comm)) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!rank || !comm || !comms().count(comm)) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++group().depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (group().depth == 0)
    return refuse(nullptr, ncclInvalidUsage, "ncclGroupEnd: no group started");
  if (--group().depth > 0) return ncclSuccess;
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  flush_group(st);
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return coll(Coll::all_reduce, "ncclAllReduce", sendbuff, recvbuff, count, datatype, op, 0, comm,
              stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return coll(Coll::all_gather, "ncclAllGather", sendbuff, recvbuff, sendcount, datatype, ncclSum,
              0, comm, stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return coll(Coll::reduce_scatter, "ncclReduceScatter", sendbuff, recvbuff, recvcount, datatype,
              op, 0, comm, stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return coll(Coll::broadcast, "ncclBroadcast", sendbuff, recvbuff, count, datatype, ncclSum, root,
              comm, stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return coll(Coll::reduce, "ncclReduce", sendbuff, recvbuff, count, datatype, op, root, comm,
              stream);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return p2p(true, "ncclSend", sendbuff, count, datatype, peer, comm, stream);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return p2p(false, "ncclRecv", recvbuff, count, datatype, peer, comm, stream);
}

}  // extern "C"
