// Progress: see progress.hpp.
#include "core/progress.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#if CLUSTERBENCH_HAVE_MPI
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <sstream>

#include "core/api/tcp.hpp"
#endif

namespace clusterbench {

namespace {
std::atomic<long long> g_case{-1}, g_started{0}, g_finished{0};
ProgressChannel* g_channel = nullptr;
}  // namespace

namespace progress {
void next_case() {
  g_started.store(0, std::memory_order_relaxed);
  g_finished.store(0, std::memory_order_relaxed);
  g_case.fetch_add(1, std::memory_order_relaxed);
}
void started(long long ops) { g_started.fetch_add(ops, std::memory_order_relaxed); }
void finished(long long ops) { g_finished.fetch_add(ops, std::memory_order_relaxed); }
RankProgress mine(int rank) {
  RankProgress p;
  p.rank = rank;
  p.case_index = g_case.load(std::memory_order_relaxed);
  p.started = g_started.load(std::memory_order_relaxed);
  p.finished = g_finished.load(std::memory_order_relaxed);
  return p;
}
}  // namespace progress

Unfinished describe_unfinished(const std::vector<RankProgress>& all,
                               const std::vector<std::string>& hosts) {
  Unfinished out;
  long long c = -1, k = 0;
  for (const auto& p : all)
    if (p.answered) c = std::max(c, p.case_index);
  for (const auto& p : all)
    if (p.answered && p.case_index == c) k = std::max(k, p.started);
  auto host_of = [&](int r) {
    return r >= 0 && r < static_cast<int>(hosts.size()) ? hosts[static_cast<size_t>(r)] : "?";
  };
  auto counts = [](const RankProgress& p) {
    return std::to_string(p.started) + " started, " + std::to_string(p.finished) + " finished";
  };
  std::string stopped, waiting;
  int n_stopped = 0, n_waiting = 0;
  for (const auto& p : all) {
    std::string state, why;
    if (!p.answered) {
      state = "silent";
      why = "no answer: process stopped or its node is down";
    } else if (p.case_index < c) {
      state = "behind";
      why = "still in an earlier case";
    } else if (p.started < k) {
      state = "behind";
      why = "never started operation " + std::to_string(k) + " of the case; " + counts(p);
    } else if (p.finished < k) {
      state = "waiting";
    } else {
      state = "finished";
    }
    json item = {{"rank", p.rank}, {"host", host_of(p.rank)}, {"state", state}};
    if (p.answered)
      item.update({{"case_index", p.case_index}, {"started", p.started}, {"finished", p.finished}});
    out.ranks.push_back(item);
    std::string who = "rank " + std::to_string(p.rank) + " on " + host_of(p.rank);
    if (state == "silent" || state == "behind") {
      stopped += std::string(n_stopped++ ? ", " : "") + who + " (" + why + ")";
    } else if (state == "waiting") {
      waiting += std::string(n_waiting++ ? ", " : "") + who;
    }
  }
  if (all.empty()) return out;
  if (n_stopped > 0) {
    out.text = "; did not finish: " + stopped;
    if (n_waiting > 0) out.text += "; waiting for it: " + waiting;
  } else if (n_waiting > 0) {
    out.text = "; did not finish: " + waiting + " (every one inside operation " +
               std::to_string(k) + " of the case, none behind: a link or the library hangs)";
  }
  return out;
}

#if CLUSTERBENCH_HAVE_MPI

namespace {

// The wire (one request per connection; text, so that a stray connection is easy to reject):
//   request  "CB1 <nonce> <to rank> <from rank> <ask|abort|recording> <payload bytes>\n<payload>"
//   reply    "CB1 <nonce> <rank> <case> <started> <finished> <root records an abort: 0|1>\n"
// The nonce is rank 0's random number for this run: a process that is not this run's rank `to`
// (an address that exists on several hosts, a port reused) closes without a reply.
constexpr const char* kMagic = "CB1";
constexpr size_t kMaxPayload = 1 << 16;

std::string state_line(unsigned long long nonce, const RankProgress& p, bool recording) {
  return std::string(kMagic) + " " + std::to_string(nonce) + " " + std::to_string(p.rank) + " " +
         std::to_string(p.case_index) + " " + std::to_string(p.started) + " " +
         std::to_string(p.finished) + " " + (recording ? "1" : "0") + "\n";
}

}  // namespace

struct ProgressChannel::Impl {
  const Context& ctx;
  std::function<void(const std::string&)> on_peer_abort;
  bool threaded = false;
  unsigned long long nonce = 0;
  int listen_fd = -1;
  int wake_fd = -1;
  std::vector<tcp::Endpoint> peers;  // by rank, as this rank reaches them
  std::thread thread;
  std::mutex mu;  // peer_aborted
  bool peer_aborted = false;
  std::atomic<bool> root_abort_posted{false};  // rank 0: it records the abort
  std::atomic<bool> root_recording{false};     // another rank: rank 0 said so

  Impl(const Context& c, std::function<void(const std::string&)> f)
      : ctx(c), on_peer_abort(std::move(f)) {}

  // Every rank listens on an ephemeral port of every address and tells the others where.
  void open() {
    int port = 0;
    try {  // a rank that cannot listen still takes part in the allgather below, with port 0
      listen_fd = tcp::listen_on("", port);
      ::fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
      ::fcntl(listen_fd, F_SETFL, ::fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
      ::listen(listen_fd, 128);
      wake_fd = ::eventfd(0, EFD_CLOEXEC);
    } catch (const std::exception&) {
      port = 0;
    }
    std::string mine = std::to_string(std::random_device{}()) + "." +
                       std::to_string(std::random_device{}()) + " " + std::to_string(port);
    try {
      for (const auto& ip : tcp::ipv4_addresses()) mine += " " + ip;
    } catch (const std::exception&) {
      // no address: the others reach this rank only from its own host
    }
    const auto all = ctx.allgather(mine);
    nonce = std::stoull(all[0].substr(0, all[0].find('.'))) * 4294967296ull +
            std::stoull(all[0].substr(all[0].find('.') + 1));
    for (size_t r = 0; r < all.size(); ++r) {
      std::istringstream in(all[r]);
      std::string skip, ip;
      tcp::Endpoint e;
      in >> skip >> e.port;
      if (ctx.rank_hosts()[r] == ctx.host()) e.addrs.push_back("127.0.0.1");
      while (in >> ip) e.addrs.push_back(ip);
      peers.push_back(e);
    }
    threaded = listen_fd >= 0 && wake_fd >= 0 && peers[0].port > 0;
  }

  // The thread answers every question. Connections are served side by side, each with one
  // second from its accept to its whole request (a stray client that sends nothing, or a byte at
  // a time, delays no one else); beyond kMaxClients the oldest is dropped. Errors here must never
  // end the run: a broken channel only loses the names.
  struct Client {
    int fd;
    std::string in;
    std::chrono::steady_clock::time_point until;
  };
  static constexpr size_t kMaxClients = 64;

  void loop() {
    std::vector<Client> clients;
    while (true) {
      std::vector<pollfd> fds = {{listen_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
      for (const auto& c : clients) fds.push_back({c.fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), clients.empty() ? -1 : 100) < 0 && errno != EINTR) break;
      if (fds[1].revents) break;
      const auto now = std::chrono::steady_clock::now();
      std::vector<Client> kept;
      for (size_t i = 0; i < clients.size(); ++i) {
        int state = fds[i + 2].revents ? take(clients[i]) : 0;
        if (state == 0 && now > clients[i].until) state = -1;
        if (state != 0)
          ::close(clients[i].fd);
        else
          kept.push_back(std::move(clients[i]));
      }
      clients.swap(kept);
      for (int fd;
           (fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
        if (clients.size() >= kMaxClients) {
          ::close(clients.front().fd);
          clients.erase(clients.begin());
        }
        clients.push_back({fd, "", now + std::chrono::seconds(1)});
      }
    }
    for (const auto& c : clients) ::close(c.fd);
  }

  /// Reads what `c` sent and serves it once it is whole: 1 served, -1 not a request of this run
  /// (or closed), 0 more to come.
  int take(Client& c) {
    char buf[4096];
    ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
    if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    if (r == 0) return -1;
    c.in.append(buf, static_cast<size_t>(r));
    const size_t nl = c.in.find('\n');
    if (nl == std::string::npos) return c.in.size() > 256 ? -1 : 0;
    std::istringstream in(c.in.substr(0, nl));
    std::string magic, verb;
    unsigned long long n = 0;
    int to = -1, from = -1;
    size_t len = 0;
    if (!(in >> magic >> n >> to >> from >> verb >> len) || magic != kMagic || n != nonce ||
        to != ctx.world_rank() || len > kMaxPayload || from < 0 || from >= ctx.world_size())
      return -1;
    if (c.in.size() - nl - 1 < len) return 0;
    const std::string payload = c.in.substr(nl + 1, len);
    if (verb == "abort" && ctx.is_root()) peer_abort(from, payload);
    if (verb == "recording" && from == 0) root_recording.store(true);
    const std::string reply =
        state_line(nonce, progress::mine(ctx.world_rank()), root_abort_posted.load());
    ::send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);  // a short line
    return 1;
  }

  void peer_abort(int from, const std::string& text) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (peer_aborted) return;
      peer_aborted = true;
    }
    const auto& hosts = ctx.rank_hosts();
    std::string host =
        from < static_cast<int>(hosts.size()) ? hosts[static_cast<size_t>(from)] : "?";
    on_peer_abort("rank " + std::to_string(from) + " on " + host + " aborted: " + text);
  }

  std::string request(int to, const std::string& verb, const std::string& payload = "") const {
    return std::string(kMagic) + " " + std::to_string(nonce) + " " + std::to_string(to) + " " +
           std::to_string(ctx.world_rank()) + " " + verb + " " + std::to_string(payload.size()) +
           "\n" + payload;
  }

  /// Parses a reply from `rank`; false when it is not one.
  bool parse(const std::string& reply, int rank, RankProgress& p, bool& recording) const {
    std::istringstream in(reply);
    std::string magic;
    unsigned long long n = 0;
    int r = -1, rec = 0;
    if (!(in >> magic >> n >> r >> p.case_index >> p.started >> p.finished >> rec) ||
        magic != kMagic || n != nonce || r != rank)
      return false;
    p.rank = rank, p.answered = true, recording = rec != 0;
    return true;
  }
};

ProgressChannel::ProgressChannel(const Context& ctx,
                                 std::function<void(const std::string&)> on_peer_abort)
    : impl_(std::make_unique<Impl>(ctx, std::move(on_peer_abort))) {
  g_channel = this;
  if (!ctx.uses_mpi() || ctx.world_size() < 2) return;  // nobody to ask
  impl_->open();
  if (impl_->threaded) impl_->thread = std::thread([this] { impl_->loop(); });
}

ProgressChannel::~ProgressChannel() {
  g_channel = nullptr;
  if (impl_->thread.joinable()) {
    const uint64_t one = 1;
    if (::write(impl_->wake_fd, &one, sizeof one) == sizeof one)
      impl_->thread.join();
    else
      impl_->thread.detach();
  }
  if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
  if (impl_->wake_fd >= 0) ::close(impl_->wake_fd);
}

std::vector<RankProgress> ProgressChannel::collect(double seconds) {
  const Context& ctx = impl_->ctx;
  std::vector<RankProgress> all(static_cast<size_t>(ctx.world_size()));
  for (int r = 0; r < ctx.world_size(); ++r) {
    all[static_cast<size_t>(r)].rank = r;
    all[static_cast<size_t>(r)].answered = r == ctx.world_rank();
  }
  all[static_cast<size_t>(ctx.world_rank())] = progress::mine(ctx.world_rank());
  if (!ctx.is_root()) return {};
  if (!impl_->threaded) return ctx.world_size() == 1 ? all : std::vector<RankProgress>{};
  std::vector<std::string> asks(all.size());
  for (int r = 1; r < ctx.world_size(); ++r)
    asks[static_cast<size_t>(r)] = impl_->request(r, "ask");
  const auto replies = tcp::request_all(impl_->peers, asks, seconds);
  bool recording = false;
  for (int r = 1; r < ctx.world_size(); ++r) {
    RankProgress p;
    if (impl_->parse(replies[static_cast<size_t>(r)], r, p, recording))
      all[static_cast<size_t>(r)] = p;
  }
  return all;
}

ProgressChannel::Root ProgressChannel::root_state(double seconds) {
  if (impl_->ctx.is_root() || !impl_->threaded) return Root::running;
  if (impl_->root_recording.load()) return Root::recording;
  std::vector<std::string> asks{impl_->request(0, "ask")};
  const auto replies = tcp::request_all({impl_->peers[0]}, asks, seconds);
  RankProgress p;
  bool recording = false;
  if (!impl_->parse(replies[0], 0, p, recording))
    return impl_->root_recording.load() ? Root::recording : Root::silent;
  return recording || impl_->root_recording.load() ? Root::recording : Root::running;
}

void ProgressChannel::post_root_abort() {
  const Context& ctx = impl_->ctx;
  if (!ctx.is_root() || !impl_->threaded || impl_->root_abort_posted.exchange(true)) return;
  // Told to every rank at once, on a thread of its own that owns copies of what it needs: the
  // caller never waits, and a rank that mpirun terminates next knows to leave the records.
  std::vector<std::string> notices(impl_->peers.size());
  for (int r = 1; r < ctx.world_size(); ++r)
    notices[static_cast<size_t>(r)] = impl_->request(r, "recording");
  std::thread([peers = impl_->peers, notices = std::move(notices)] {
    tcp::request_all(peers, notices, 1.0);
  }).detach();
}

void ProgressChannel::post_abort(const std::string& reason) {
  if (impl_->ctx.is_root() || !impl_->threaded) return;
  // A dead or stopped rank 0 never answers: a second at most.
  std::vector<std::string> req{impl_->request(0, "abort", reason.substr(0, kMaxPayload))};
  tcp::request_all({impl_->peers[0]}, req, 1.0);
}

#else  // built without MPI: one process, nothing to ask

struct ProgressChannel::Impl {
  const Context& ctx;
};

ProgressChannel::ProgressChannel(const Context& ctx, std::function<void(const std::string&)>)
    : impl_(std::make_unique<Impl>(Impl{ctx})) {
  g_channel = this;
}
ProgressChannel::~ProgressChannel() { g_channel = nullptr; }
std::vector<RankProgress> ProgressChannel::collect(double) {
  return {progress::mine(impl_->ctx.world_rank())};
}
ProgressChannel::Root ProgressChannel::root_state(double) { return Root::running; }
void ProgressChannel::post_root_abort() {}
void ProgressChannel::post_abort(const std::string&) {}

#endif

ProgressChannel* ProgressChannel::current() { return g_channel; }

Unfinished who_did_not_finish(const Context& ctx, double seconds) {
  ProgressChannel* ch = ProgressChannel::current();
  if (!ch || !ctx.is_root()) return {};
  return describe_unfinished(ch->collect(seconds), ctx.rank_hosts());
}

}  // namespace clusterbench
