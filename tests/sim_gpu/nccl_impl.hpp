// The simulated NCCL: communicators of ranks that are separate processes on this machine (in
// network namespaces or not), exchanging their buffers' lazy content through a directory under
// /dev/shm named by the ncclUniqueId (docs/simulated-gpu.md "NCCL").
//
// Per communicator the directory holds:
//  - "state": a shared mapping with one slot per rank: joined/destroyed flags, how many
//    collectives the rank has posted and completed, and a ring of its recent posts (virtual
//    start time, signature, payload: its send buffer's content, serialized, inline when small);
//  - "join-R": rank R's facts (host, device, speed, links), written before it marks itself
//    joined;
//  - "pair-S-D": a shared ring of point-to-point messages from S to D;
//  - "pay-R-N": payloads too large to be inline.
// A collective completes on a rank when every rank has posted it; its virtual end is the
// latest start plus the modelled time, so a dead or stopped peer leaves it pending.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "content.hpp"
#include "numeric.hpp"
#include "state.hpp"

namespace cbsim {

constexpr int kMaxRanks = 1024;
constexpr int kRing = 8;
constexpr std::uint32_t kInline = 208;

/// A payload reference: inline bytes, or the id of a "pay-R-N" file.
struct PayloadRef {
  std::uint64_t id = 0;  ///< 0: none; else a payload id of the poster
  std::uint32_t inline_len = 0;
  unsigned char inline_data[kInline];
};

/// One collective post of a rank.
struct Post {
  double start = 0;
  std::uint64_t sig = 0;
  float speed = 1;
  PayloadRef payload;
};

/// A rank's slot in the shared state.
struct Slot {
  std::atomic<std::uint32_t> joined, destroyed;
  std::atomic<std::uint64_t> posted, completed;
  Post ring[kRing];
};

struct SharedHeader {
  std::uint32_t magic;
  std::atomic<std::uint32_t> destroyed;
};

/// The shared state file: a header and kMaxRanks slots.
struct Shared {
  SharedHeader h;
  Slot slots[kMaxRanks];
};

/// A point-to-point channel from one rank to another.
struct Channel {
  std::atomic<std::uint64_t> sent, recv_posted, recv_done;
  double recv_start[kRing];
  double send_start[kRing];
  float send_speed[kRing];
  PayloadRef payload[kRing];
};

/// What a communicator knows of its ranks once all joined.
struct CommInfo {
  std::vector<std::string> hosts;
  std::vector<int> devices;
  bool same_node = true;   ///< every rank on this host name
  bool network = false;    ///< traffic through the NICs (across hosts, or P2P and SHM off)
  bool nvls = false;       ///< NVLink SHARP available (H100/H200-class, in node, >= 2 ranks)
  bool ring_only = false;  ///< NCCL_ALGO=Ring at init
  double nvlink = 1;       ///< min over ranks of nvlink_up / nvlink_links
  double ib = 1;           ///< min over ranks of active IB ports / 8
};

}  // namespace cbsim

/// A communicator (nccl.h's ncclComm_t points to one). Never freed: a handle used after
/// ncclCommDestroy or ncclCommAbort is recognised and refused.
struct ncclComm {
  enum class St { initializing, ready, finalizing, finalized, destroyed, aborted };
  St st = St::initializing;
  int rank = 0, nranks = 1, device = 0;
  bool blocking = true;
  std::string dir;
  cbsim::Shared* shm = nullptr;
  ncclResult_t async_error = ncclSuccess;
  cbsim::CommInfo info;
  std::uint64_t issued = 0;   ///< collectives issued (the next one's sequence number)
  std::uint64_t posted = 0;   ///< collectives posted by this rank
  std::uint64_t pending = 0;  ///< operations issued and not yet run
  std::map<int, std::uint64_t> sends, recvs;  ///< point-to-point messages issued per peer
  std::map<int, cbsim::Channel*> tx, rx;
  std::uint64_t next_payload = 1;
  std::string last_fingerprint;  ///< of the last collective payload written
  std::uint64_t last_payload = 0;
  cbsim::PayloadRef last_ref;
  std::map<std::uint64_t, std::uint64_t> payload_last_use;  ///< id -> last sequence using it
};

namespace cbsim {

// --- nccl_env.cpp: the environment read once, NCCL's logging ------------------------------------
/// NCCL_* variables as read at NCCL's first use in this process (later changes are ignored).
const std::map<std::string, std::string>& nccl_env();
/// One cached variable ("" when unset).
std::string nccl_env(const std::string& name);
/// Whether NCCL logs INFO lines of subsystem `subsys` ("INIT", "NET", "ENV", "TUNING", ...).
bool nccl_logs(const char* subsys);
/// Writes one INFO line as NCCL does: "host:pid:tid [dev] NCCL INFO text".
void nccl_info(int device, const char* subsys, const std::string& text);
/// Writes one WARN line.
void nccl_warn(int device, const std::string& text);
/// "NCCL version 2.27.3+cuda13.0", once per process.
void nccl_log_version(int device);
/// Forgets the debug settings (ncclResetDebugInit).
void nccl_reset_debug();
/// Sets the text ncclGetLastError returns and logs it as a warning.
void nccl_set_last_error(int device, const std::string& text);
const char* nccl_last_error();

// --- nccl_shm.cpp: the directory, the shared state, payloads -----------------------------------
/// A new communicator directory (and its "state" and "owner"); its path, or "" on failure.
std::string nccl_new_dir(std::string& why);
/// Maps the directory's state; nullptr on failure.
Shared* nccl_map_state(const std::string& dir);
/// Writes rank facts and marks the rank joined.
bool nccl_join(ncclComm& c);
/// Whether every rank joined; then reads their facts into c.info.
bool nccl_all_joined(ncclComm& c);
/// The channel from `from` to `to` (mapped on first use).
Channel* nccl_channel(ncclComm& c, int from, int to);
/// Stores a payload (inline or as a file) into `ref`.
void nccl_put_payload(ncclComm& c, const std::string& bytes, PayloadRef& ref);
/// The content of a payload posted by `rank` (cached).
Segs nccl_get_payload(ncclComm& c, int rank, const PayloadRef& ref);
/// Deletes this rank's payload files that every rank has consumed.
void nccl_collect_payloads(ncclComm& c);
/// Leaves the communicator: marks the rank destroyed; the last rank removes the directory.
void nccl_leave(ncclComm& c);
/// Removes the directories of communicators whose creator is gone (older than a minute).
void nccl_sweep_stale();

// --- nccl_data.cpp: content across processes ---------------------------------------------------
std::string serialize(const Segs& piece);
Segs deserialize(const std::string& bytes);
/// The element-wise reduction (ncclSum/Prod/Max/Min/Avg) of pieces of `len` bytes of `t`.
Segs reduce(const std::vector<Segs>& inputs, Elem t, ncclRedOp_t op, std::uint64_t len);
/// The NCCL element type of a datatype; false when not simulated.
bool nccl_elem(ncclDataType_t t, Elem& out);

// --- nccl_ops.cpp: operations on streams --------------------------------------------------------
enum class Coll { all_reduce, all_gather, reduce_scatter, broadcast, reduce };
/// One collective call (count: per rank as NCCL's API takes it).
struct CollCall {
  Coll coll = Coll::all_reduce;
  std::uint64_t send = 0, recv = 0, count = 0;
  Elem type = Elem::f32;
  ncclDataType_t dtype = ncclFloat;
  ncclRedOp_t op = ncclSum;
  int root = 0;
};
/// One ncclSend or ncclRecv of a group.
struct P2pCall {
  bool send = true;
  int peer = 0;
  std::uint64_t ptr = 0, count = 0;
  Elem type = Elem::f32;
};
/// Enqueues a collective / a group of point-to-point calls on `s` (under the state lock).
void issue_collective(State& st, ncclComm& c, Stream& s, const CollCall& call);
void issue_p2p(State& st, ncclComm& c, Stream& s, const std::vector<P2pCall>& calls);
/// What NCCL chooses for an operation of `bytes` (S) and the bus bandwidth the model gives it.
struct Choice {
  const char* algo;
  const char* proto;
  int channels;
  double busbw_gbs;  ///< before the GPUs' speed
};
Choice nccl_choice(const ncclComm& c, Coll coll, bool p2p, double bytes);
/// NCCL's name of a collective ("AllReduce").
const char* nccl_func(Coll coll);

}  // namespace cbsim
