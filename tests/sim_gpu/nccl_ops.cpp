// NCCL operations on CUDA streams: a collective posts its send buffer's content when it reaches
// the head of its stream and completes when every rank has posted; a group of sends and
// receives completes when every peer has posted its side. Results are computed from the
// posted content (nccl_data.cpp); virtual end = latest start + modelled time.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <list>

#include "nccl_impl.hpp"
#include "node.hpp"
#include "perf.hpp"

namespace cbsim {

namespace {

bool dead(const ncclComm& c) {
  return c.st == ncclComm::St::destroyed || c.st == ncclComm::St::aborted || !c.shm;
}

double jitter(std::uint64_t seq) {
  std::uint64_t z = seq * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return 1 + 0.003 * (static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53 * 2 - 1);
}

/// The content of [ptr, ptr + len) on the communicator's device, or false (an illegal address:
/// sticky, and the communicator's asynchronous error).
bool content_of(State& st, ncclComm& c, std::uint64_t ptr, std::uint64_t len, Segs& out) {
  Alloc* a = find_alloc(st, ptr, std::max<std::uint64_t>(len, 1));
  if (!a || a->device != c.device) {
    set_sticky(st, cudaErrorIllegalAddress, "NCCL: a buffer is no longer device memory");
    c.async_error = ncclUnhandledCudaError;
    return false;
  }
  out = slice(*a->content, ptr - a->base, len);
  return true;
}

void write_content(State& st, ncclComm& c, std::uint64_t ptr, const Segs& piece) {
  std::uint64_t len = 0;
  for (const Seg& s : piece) len += s.len;
  Alloc* a = find_alloc(st, ptr, std::max<std::uint64_t>(len, 1));
  if (!a || a->device != c.device) {
    set_sticky(st, cudaErrorIllegalAddress, "NCCL: a buffer is no longer device memory");
    c.async_error = ncclUnhandledCudaError;
    return;
  }
  a->content = replace(a->content, ptr - a->base, piece);
}

std::uint64_t signature(const CollCall& k) {
  return (static_cast<std::uint64_t>(k.coll) << 56) ^ (static_cast<std::uint64_t>(k.dtype) << 48) ^
         (static_cast<std::uint64_t>(k.op) << 40) ^ (static_cast<std::uint64_t>(k.root) << 32) ^
         k.count;
}

/// Bytes S of the operation (nccl-tests' size) and its busbw factor.
void size_of(const CollCall& k, int n, double& bytes, double& factor) {
  const double es = static_cast<double>(elem_size(k.type)), cnt = static_cast<double>(k.count);
  const double ring = n > 1 ? (n - 1.0) / n : 0;
  switch (k.coll) {
    case Coll::all_reduce:
      bytes = cnt * es, factor = 2 * ring;
      return;
    case Coll::all_gather:
    case Coll::reduce_scatter:
      bytes = cnt * es * n, factor = ring;
      return;
    default:
      bytes = cnt * es, factor = n > 1 ? 1 : 0;
  }
}

class CollOp : public Op {
 public:
  CollOp(ncclComm* c, const CollCall& k, std::uint64_t seq) : c_(c), k_(k), seq_(seq) {}
  void start(State&, Stream& s) override { stream_ = &s; }
  bool ready(State& st) override {
    if (dead(*c_) || failed_) return true;
    if (!posted_) try_post(st);
    if (!posted_) return false;
    if (failed_) return true;
    for (int r = 0; r < c_->nranks; ++r)
      if (c_->shm->slots[r].posted.load(std::memory_order_acquire) <= seq_) return false;
    return true;
  }
  void run(State& st, Stream& s) override;

 private:
  void try_post(State& st);
  bool failed_ = false;  ///< its send buffer was not device memory when posted
  Segs result(State& st, const std::vector<Post>& posts);
  ncclComm* c_;
  CollCall k_;
  std::uint64_t seq_;
  Stream* stream_ = nullptr;
  bool posted_ = false;
  double start_ = 0;
};

void CollOp::try_post(State& st) {
  ncclComm& c = *c_;
  if (c.posted != seq_) return;  // posts keep the call order
  for (int r = 0; r < c.nranks; ++r)
    if (c.shm->slots[r].completed.load(std::memory_order_acquire) + kRing <= seq_) return;
  const std::uint64_t es = elem_size(k_.type);
  const std::uint64_t send_len =
      k_.coll == Coll::reduce_scatter ? k_.count * es * c.nranks : k_.count * es;
  const bool sends = k_.coll != Coll::broadcast || c.rank == k_.root;
  Post p;
  start_ = std::max(stream_->t, issued);
  p.start = start_, p.sig = signature(k_),
  p.speed = static_cast<float>(node().gpus[c.device].speed);
  if (sends) {
    Segs piece;
    if (!content_of(st, c, k_.send, send_len, piece)) {
      failed_ = posted_ = true;
      return;
    }
    const std::string fp = fingerprint(piece);
    if (fp == c.last_fingerprint && c.last_payload) {
      p.payload = c.last_ref;
    } else {
      nccl_put_payload(c, serialize(piece), p.payload);
      c.last_fingerprint = fp, c.last_payload = p.payload.id, c.last_ref = p.payload;
    }
    c.payload_last_use[p.payload.id] = seq_;
  }
  c.shm->slots[c.rank].ring[seq_ % kRing] = p;
  c.shm->slots[c.rank].posted.store(seq_ + 1, std::memory_order_release);
  ++c.posted;
  posted_ = true;
}

/// This rank's result from every rank's post, cached by the posts' payloads.
Segs CollOp::result(State&, const std::vector<Post>& posts) {
  static std::list<std::pair<std::string, Segs>> cache;
  ncclComm& c = *c_;
  std::string key = c.dir + "|" + std::to_string(posts[0].sig) + "|" + std::to_string(c.rank);
  for (const Post& p : posts) key.append(1, ':').append(std::to_string(p.payload.id));
  for (const auto& [k, v] : cache)
    if (k == key) return v;
  const std::uint64_t es = elem_size(k_.type), len = k_.count * es;
  std::vector<Segs> in;
  for (int r = 0; r < c.nranks; ++r) in.push_back(nccl_get_payload(c, r, posts[r].payload));
  Segs out;
  switch (k_.coll) {
    case Coll::all_reduce:
    case Coll::reduce:
      out = reduce(in, k_.type, k_.op, len);
      break;
    case Coll::broadcast:
      out = in[static_cast<size_t>(k_.root)];
      break;
    case Coll::all_gather:
      for (int r = 0; r < c.nranks; ++r)
        for (const Seg& s : in[static_cast<size_t>(r)])
          out.push_back(Seg{s.off + static_cast<std::uint64_t>(r) * len, s.len, s.src, s.src_off});
      break;
    case Coll::reduce_scatter: {
      std::vector<Segs> blocks;
      for (const Segs& s : in)
        blocks.push_back(slice(s, static_cast<std::uint64_t>(c.rank) * len, len));
      out = reduce(blocks, k_.type, k_.op, len);
      break;
    }
  }
  cache.emplace_front(key, out);
  if (cache.size() > 8) cache.pop_back();
  return out;
}

void CollOp::run(State& st, Stream& s) {
  ncclComm& c = *c_;
  --c.pending;
  if (dead(c) || failed_) return;
  std::vector<Post> posts(static_cast<size_t>(c.nranks));
  double start = 0;
  float speed = 1;
  for (int r = 0; r < c.nranks; ++r) {
    posts[r] = c.shm->slots[r].ring[seq_ % kRing];
    start = std::max(start, posts[r].start);
    speed = std::min(speed, posts[r].speed);
    if (posts[r].sig != posts[0].sig && c.async_error == ncclSuccess) {
      c.async_error = ncclInvalidUsage;
      nccl_set_last_error(c.device, "cbsim: ranks 0 and " + std::to_string(r) +
                                        " called different collectives as operation " +
                                        std::to_string(seq_) + " of the communicator");
    }
  }
  const bool writes = k_.coll != Coll::reduce || c.rank == k_.root;
  if (c.async_error == ncclSuccess && writes) write_content(st, c, k_.recv, result(st, posts));
  double bytes = 0, factor = 0;
  size_of(k_, c.nranks, bytes, factor);
  const Choice ch = nccl_choice(c, k_.coll, false, bytes);
  const double seconds =
      kNcclLatencySeconds + bytes * factor / (ch.busbw_gbs * 1e9 * std::max(0.01f, speed));
  s.t = std::max(s.t, start + seconds * jitter(seq_));
  ++st.dev[static_cast<size_t>(c.device)].counters.nccl_ops;
  c.shm->slots[c.rank].completed.store(seq_ + 1, std::memory_order_release);
  nccl_collect_payloads(c);
}

/// A group of ncclSend / ncclRecv, each with its message number on its channel.
class P2pOp : public Op {
 public:
  P2pOp(ncclComm* c, std::vector<P2pCall> calls, std::vector<std::uint64_t> k)
      : c_(c), calls_(std::move(calls)), k_(std::move(k)) {}
  void start(State&, Stream& s) override { stream_ = &s; }
  bool ready(State& st) override;
  void run(State& st, Stream& s) override;

 private:
  Channel* channel(size_t i) {
    const P2pCall& p = calls_[i];
    return p.send ? nccl_channel(*c_, c_->rank, p.peer) : nccl_channel(*c_, p.peer, c_->rank);
  }
  ncclComm* c_;
  std::vector<P2pCall> calls_;
  std::vector<std::uint64_t> k_;
  Stream* stream_ = nullptr;
  bool posted_ = false;
  double start_ = 0;
};

bool P2pOp::ready(State& st) {
  if (dead(*c_)) return true;
  if (!posted_) {
    for (size_t i = 0; i < calls_.size(); ++i)
      if (calls_[i].send && channel(i)->recv_done.load() + kRing <= k_[i]) return false;
    start_ = std::max(stream_->t, issued);
    const float speed = static_cast<float>(node().gpus[c_->device].speed);
    for (size_t i = 0; i < calls_.size(); ++i) {
      Channel* ch = channel(i);
      const std::uint64_t slot = k_[i] % kRing;
      if (!calls_[i].send) {
        ch->recv_start[slot] = start_;
        ch->recv_posted.store(k_[i] + 1, std::memory_order_release);
        continue;
      }
      Segs piece;
      if (!content_of(st, *c_, calls_[i].ptr, calls_[i].count * elem_size(calls_[i].type), piece))
        return true;
      nccl_put_payload(*c_, serialize(piece), ch->payload[slot]);
      ch->send_start[slot] = start_, ch->send_speed[slot] = speed;
      ch->sent.store(k_[i] + 1, std::memory_order_release);
    }
    posted_ = true;
  }
  for (size_t i = 0; i < calls_.size(); ++i) {
    Channel* ch = channel(i);
    const std::uint64_t seen = calls_[i].send ? ch->recv_posted.load(std::memory_order_acquire)
                                              : ch->sent.load(std::memory_order_acquire);
    if (seen <= k_[i]) return false;
  }
  return true;
}

void P2pOp::run(State& st, Stream& s) {
  ncclComm& c = *c_;
  --c.pending;
  if (dead(c) || !posted_) return;
  double start = start_, bytes = 0;
  float speed = static_cast<float>(node().gpus[c.device].speed);
  for (size_t i = 0; i < calls_.size(); ++i) {
    Channel* ch = channel(i);
    const std::uint64_t slot = k_[i] % kRing;
    const P2pCall& p = calls_[i];
    if (p.send) {
      start = std::max(start, ch->recv_start[slot]);
      if (p.peer != c.rank) bytes += static_cast<double>(p.count * elem_size(p.type));
      continue;
    }
    start = std::max(start, ch->send_start[slot]);
    speed = std::min(speed, ch->send_speed[slot]);
    const PayloadRef ref = ch->payload[slot];
    Segs msg = nccl_get_payload(c, p.peer, ref);
    write_content(st, c, p.ptr, slice(msg, 0, p.count * elem_size(p.type)));
    if (!ref.inline_len)
      unlink((c.dir + "/pay-" + std::to_string(p.peer) + "-" + std::to_string(ref.id)).c_str());
    ch->recv_done.store(k_[i] + 1, std::memory_order_release);
  }
  const Choice ch = nccl_choice(c, Coll::all_reduce, true, bytes);
  const double seconds =
      kNcclLatencySeconds + bytes / (ch.busbw_gbs * 1e9 * std::max(0.01f, speed));
  s.t = std::max(s.t, start + seconds * jitter(k_.empty() ? 0 : k_[0]));
  ++st.dev[static_cast<size_t>(c.device)].counters.nccl_ops;
}

}  // namespace

const char* nccl_func(Coll coll) {
  static const char* names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce"};
  return names[static_cast<int>(coll)];
}

Choice nccl_choice(const ncclComm& c, Coll coll, bool p2p, double bytes) {
  const CommInfo& i = c.info;
  Choice ch{"RING", "SIMPLE", 16, 370 * i.nvlink};
  if (bytes < 64 * 1024)
    ch.proto = "LL", ch.channels = 2;
  else if (bytes < 1024 * 1024)
    ch.proto = "LL128", ch.channels = 4;
  if (p2p) ch.busbw_gbs = 360 * i.nvlink;
  if (coll == Coll::all_reduce && !p2p) {
    ch.busbw_gbs = 365 * i.nvlink;
    if (i.nvls && !i.ring_only && bytes >= 1024 * 1024)
      ch.algo = "NVLS", ch.busbw_gbs = 475 * i.nvlink;
  }
  if (i.network) ch.busbw_gbs = 190 * i.ib, ch.algo = "RING";
  ch.busbw_gbs = std::max(ch.busbw_gbs, 1e-3);
  return ch;
}

void issue_collective(State& st, ncclComm& c, Stream& s, const CollCall& call) {
  ncclComm* cp = &c;
  enqueue(st, s, [cp, call] {
    ++cp->pending;
    return std::make_unique<CollOp>(cp, call, cp->issued++);
  });
}

void issue_p2p(State& st, ncclComm& c, Stream& s, const std::vector<P2pCall>& calls) {
  ncclComm* cp = &c;
  enqueue(st, s, [cp, calls] {
    std::vector<std::uint64_t> k;
    for (const P2pCall& p : calls) k.push_back(p.send ? cp->sends[p.peer]++ : cp->recvs[p.peer]++);
    ++cp->pending;
    return std::make_unique<P2pOp>(cp, calls, k);
  });
}

}  // namespace cbsim
