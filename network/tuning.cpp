// network.tuning: the seed's host tuning measured as A/B pairs, each side's setting recorded.
// Effects: thp_madvise (random 8-byte reads over a region with MADV_NOHUGEPAGE vs MADV_HUGEPAGE;
// the global THP switch is never flipped), hugetlb (the same reads, normal pages vs MAP_HUGETLB
// from the reserved pool), tcp_buffers (loopback TCP throughput with the namespace's tcp_rmem /
// tcp_wmem vs the seed's), tcp_buffers_2node (the same between the first two nodes' leaders, each
// node's sysctls set on its own side), governor (a fixed compute loop under the current governor vs
// performance). A setting is changed only with --set network.tuning.allow_changes=true and is
// restored when the case ends, on exit and on SIGINT/SIGTERM/SIGHUP. Formulas: docs/tuning.md.
#include "network/tuning.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/api/abort_cleanup.hpp"
#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"
#include "env/sysfs.hpp"
#include "network/p2p.hpp"
#include "network/tcp_io.hpp"
#if CLUSTERBENCH_HAVE_MPI
#include "core/api/mpi_check.hpp"
#endif

namespace clusterbench::network {

namespace {
double nearest_rank(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}
}  // namespace

AbRatio ab_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty())
    throw std::invalid_argument("A/B needs equal, non-zero numbers of repeats");
  AbRatio r;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] <= 0 || b[i] <= 0) throw std::invalid_argument("A/B times must be positive");
    r.ratios.push_back(a[i] / b[i]);
  }
  std::vector<double> s = r.ratios;
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  r.ratio = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  r.spread = (nearest_rank(s, 75) - nearest_rank(s, 25)) / r.ratio;
  return r;
}

std::string normalise_sysctl(const std::string& text) {
  std::istringstream in(text);
  std::string word, out;
  while (in >> word) out += (out.empty() ? "" : " ") + word;
  return out;
}

namespace {

const std::vector<std::string> kEffects = {"thp_madvise", "hugetlb", "tcp_buffers",
                                           "tcp_buffers_2node", "governor"};
constexpr const char* kSeedTcpRmem = "4096 87380 2147483647";
constexpr const char* kSeedTcpWmem = "4096 65536 2147483647";
constexpr long long kHugePage = 2LL << 20;

/// A /proc/sys or /sys file's bytes as they are (a setting is written back verbatim); "" when it
/// cannot be read.
std::string read_text(const std::string& path) { return sysfs::read_raw(path).value_or(""); }

// --- settings restored on every exit path -------------------------------------------------------

/// Changes sysctl/sysfs files for one case and writes the old text back when it goes out of scope,
/// or, when the run ends by MPI_Abort (a hang, a signal: no destructor runs), through the
/// watchdog's abort cleanups (core/watchdog.hpp).
class SettingGuard {
 public:
  SettingGuard() : cleanup_([this] { restore(); }) {}
  ~SettingGuard() { restore(); }
  SettingGuard(const SettingGuard&) = delete;
  SettingGuard& operator=(const SettingGuard&) = delete;

  /// Writes `value` to `path` after saving the old text (the first one, when a case sets a path
  /// twice). Throws Waived when it cannot.
  void set(const std::string& path, const std::string& value) {
    const std::string old = read_text(path);
    bool saved = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& s : saved_) saved = saved || s.first == path;
      if (!saved) saved_.emplace_back(path, old);
    }
    std::ofstream out(path);
    out << value << "\n";
    out.close();
    if (!out || normalise_sysctl(read_text(path)) != normalise_sysctl(value)) {
      int err = errno;
      if (!saved) forget(path);
      throw Waived("cannot change " + path + " to '" + value + "' (" + std::strerror(err) +
                   "): this process may not change it");
    }
  }

 private:
  void forget(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    saved_.erase(std::remove_if(saved_.begin(), saved_.end(),
                                [&](const auto& s) { return s.first == path; }),
                 saved_.end());
  }
  /// Writes every saved value back, newest first; idempotent. Runs on the watchdog's thread at
  /// an abort, so it takes the lock.
  void restore() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      int fd = ::open(it->first.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
      if (fd < 0) continue;
      ssize_t w = ::write(fd, it->second.data(), it->second.size());
      (void)w;
      ::close(fd);
    }
    saved_.clear();
  }
  std::mutex mu_;
  std::vector<std::pair<std::string, std::string>> saved_;
  AbortCleanup cleanup_;
};

// --- workloads ----------------------------------------------------------------------------------

struct Region {
  void* p = MAP_FAILED;
  size_t bytes = 0;
  ~Region() {
    if (p != MAP_FAILED) ::munmap(p, bytes);
  }
};

/// Anonymous region of `bytes`, 2 MiB aligned, advised, touched. `hugetlb` maps from the pool.
void map_region(Region& r, long long bytes, int advice, bool hugetlb) {
  r.bytes = static_cast<size_t>(bytes);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (hugetlb ? MAP_HUGETLB : 0);
  if (hugetlb) {
    r.p = ::mmap(nullptr, r.bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  } else {
    // Over-allocate so the used part starts on a 2 MiB boundary (THP needs aligned extents).
    r.bytes += static_cast<size_t>(kHugePage);
    r.p = ::mmap(nullptr, r.bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  }
  CHECK_MSG(r.p != MAP_FAILED, "libc",
            std::string("mmap of ") + std::to_string(bytes) + " bytes: " + std::strerror(errno));
  if (advice >= 0) CHECK_SYS(::madvise(r.p, r.bytes, advice));
  std::memset(r.p, 1, r.bytes);
}

uint64_t* aligned(const Region& r) {
  auto a = reinterpret_cast<uintptr_t>(r.p);
  return reinterpret_cast<uint64_t*>((a + kHugePage - 1) & ~static_cast<uintptr_t>(kHugePage - 1));
}

/// Bytes of region `p` backed by transparent hugepages (AnonHugePages in /proc/self/smaps).
long long thp_bytes(const void* p) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  while (std::getline(in, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = addr >= lo && addr < hi;
      continue;
    }
    long long kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %lld kB", &kb) == 1) return kb * 1024;
  }
  return 0;
}

/// n dependent random 8-byte reads over `words` (each index depends on the last value read, so
/// the reads are latency- and TLB-bound). Returns a checksum so the loads stay.
uint64_t random_reads(const uint64_t* data, size_t words, long long n) {
  uint64_t x = 88172645463325252ULL, sum = 0;
  for (long long i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    sum += data[(x + sum) % words];
  }
  return sum;
}

std::atomic<uint64_t> g_sink{0};

/// Loopback TCP: a receiver thread drains; the sender sends `bytes` per operation and waits for
/// a one-byte ack. New sockets per side, so they take the current tcp_rmem/tcp_wmem.
class Loopback {
 public:
  explicit Loopback(long long bytes) : bytes_(bytes), buf_(1 << 20, 'x') {
    int ls = ::socket(AF_INET, SOCK_STREAM, 0);
    CHECK_SYS(ls);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_SYS(::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a));
    CHECK_SYS(::listen(ls, 1));
    socklen_t len = sizeof a;
    CHECK_SYS(::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len));
    send_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    CHECK_SYS(send_fd_);
    CHECK_SYS(::connect(send_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a));
    recv_fd_ = ::accept(ls, nullptr, nullptr);
    ::close(ls);
    CHECK_SYS(recv_fd_);
    receiver_ = std::thread([this] { drain(); });
  }
  ~Loopback() {
    ::shutdown(send_fd_, SHUT_WR);
    receiver_.join();
    ::close(send_fd_);
    ::close(recv_fd_);
  }
  void transfer(long long n) {
    for (long long i = 0; i < n; ++i) {
      for (long long left = bytes_; left > 0;) {
        ssize_t w = ::send(send_fd_, buf_.data(), std::min<long long>(left, buf_.size()), 0);
        CHECK_SYS(w);
        left -= w;
      }
      char ack;
      CHECK_SYS(::recv(send_fd_, &ack, 1, MSG_WAITALL));
    }
  }

 private:
  void drain() {
    std::vector<char> in(1 << 20);
    long long got = 0;
    for (;;) {
      ssize_t r = ::recv(recv_fd_, in.data(), in.size(), 0);
      if (r <= 0) return;
      got += r;
      while (got >= bytes_) {
        got -= bytes_;
        char ack = 1;
        if (::send(recv_fd_, &ack, 1, 0) != 1) return;
      }
    }
  }
  long long bytes_;
  std::vector<char> buf_;
  int send_fd_ = -1, recv_fd_ = -1;
  std::thread receiver_;
};

#if CLUSTERBENCH_HAVE_MPI
/// Sends `text` to world rank `peer` (tag) / receives such a message from it.
void send_text(const std::string& text, int peer, int tag) {
  CHECK_MPI(
      MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, peer, tag, MPI_COMM_WORLD));
}
std::string recv_text(int peer, int tag) {
  MPI_Status st;
  CHECK_MPI(MPI_Probe(peer, tag, MPI_COMM_WORLD, &st));
  int n = 0;
  CHECK_MPI(MPI_Get_count(&st, MPI_CHAR, &n));
  std::string out(static_cast<size_t>(n), '\0');
  CHECK_MPI(MPI_Recv(out.data(), n, MPI_CHAR, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  return out;
}

/// One TCP connection between two node leaders (world ranks), made with the socket-buffer
/// sysctls in force on each side when it is constructed. The receiver listens on every address
/// and sends its port and IPv4 addresses over MPI (tag 6); the sender tries them in turn (2 s
/// each) and answers with the address it reached, or the errors (tag 7). Both ranks construct
/// it; both throw when no address connects.
class TcpLink {
 public:
  TcpLink(bool sender, int peer, long long bytes)
      : sender_(sender), bytes_(bytes), buf_(1 << 20, 'x') {
    if (!sender_) {
      int ls = ::socket(AF_INET, SOCK_STREAM, 0);
      CHECK_SYS(ls);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      CHECK_SYS(::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a));
      CHECK_SYS(::listen(ls, 1));
      socklen_t len = sizeof a;
      CHECK_SYS(::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len));
      std::string offer = std::to_string(ntohs(a.sin_port));
      for (const auto& ip : ipv4_addresses()) offer += " " + ip;
      send_text(offer, peer, 6);
      std::string answer = recv_text(peer, 7);  // "ok ADDR" or "error TEXT"
      if (answer.rfind("ok ", 0) == 0) {
        pollfd p{ls, POLLIN, 0};
        fd_ = ::poll(&p, 1, 5000) == 1 ? ::accept(ls, nullptr, nullptr) : -1;
        address = answer.substr(3);
      }
      ::close(ls);
      if (fd_ < 0)
        throw std::runtime_error(answer.rfind("ok ", 0) == 0
                                     ? "the peer connected but accept() failed"
                                     : answer.substr(answer.find(' ') + 1));
    } else {
      std::istringstream offer(recv_text(peer, 6));
      int port = 0;
      offer >> port;
      std::string ip, errors;
      while (fd_ < 0 && offer >> ip) {
        std::string err;
        fd_ = connect_within(ip, port, 2000, err);
        if (fd_ >= 0)
          address = ip;
        else
          errors += (errors.empty() ? "" : ", ") + ip + ": " + err;
      }
      std::string why = "TCP connect to port " + std::to_string(port) + " of the peer failed (" +
                        (errors.empty() ? "it offered no IPv4 address" : errors) + ")";
      send_text(fd_ >= 0 ? "ok " + address : "error " + why, peer, 7);
      if (fd_ < 0) throw std::runtime_error(why);
    }
  }
  ~TcpLink() {
    if (fd_ >= 0) ::close(fd_);
  }
  TcpLink(const TcpLink&) = delete;
  TcpLink& operator=(const TcpLink&) = delete;

  /// n operations: the sender sends `bytes` and waits for a one-byte ack; the receiver reads
  /// `bytes` and sends the ack.
  void transfer(long long n) {
    for (long long i = 0; i < n; ++i) {
      for (long long left = bytes_; left > 0;) {
        size_t chunk = static_cast<size_t>(std::min<long long>(left, buf_.size()));
        ssize_t r = sender_ ? ::send(fd_, buf_.data(), chunk, MSG_NOSIGNAL)
                            : ::recv(fd_, buf_.data(), chunk, 0);
        CHECK_SYS(r);
        if (r == 0) throw std::runtime_error("the peer closed the TCP connection");
        left -= r;
      }
      char ack = 1;
      CHECK_SYS(sender_ ? ::recv(fd_, &ack, 1, MSG_WAITALL) : ::send(fd_, &ack, 1, MSG_NOSIGNAL));
    }
  }
  std::string address;  ///< the receiver's address the connection uses

 private:
  bool sender_;
  long long bytes_;
  std::vector<char> buf_;
  int fd_ = -1;
};
#endif

/// HugePages_Free and HugePages_Total of /proc/meminfo (0 where absent).
std::pair<long long, long long> hugepages() {
  long long free_pages = 0, total = 0;
  std::ifstream mi("/proc/meminfo");
  std::string k, rest;
  long long v = 0;
  while (mi >> k >> v) {
    if (k == "HugePages_Free:") free_pages = v;
    if (k == "HugePages_Total:") total = v;
    std::getline(mi, rest);
  }
  return {free_pages, total};
}

/// The knobs of network.tuning as one plan or case reads them.
struct TuningOptions {
  bool allow = false;       ///< allow_changes=true: a case may change a setting and restore it
  int repeats = 5;          ///< A/B pairs
  long long bytes = 0;      ///< the page effects' region, whole 2 MiB pages
  long long tcp_bytes = 0;  ///< bytes per TCP transfer
  std::string refuse;       ///< how a waiver for a setting to change ends: the knob that allows it
};

/// One A/B case: what choosing a side does (`side`, it may change a setting), the operation the
/// loop times (`work`), the setting recorded for each side and what the operation is. What the
/// side and work functions use lives here, so it outlives them; the guard comes first, so it
/// restores the settings after the regions and sockets they served are gone.
struct AbCase {
  SettingGuard guard;
  Region ra, rb;
  std::unique_ptr<Loopback> loop;
#if CLUSTERBENCH_HAVE_MPI
  std::unique_ptr<TcpLink> link;
#endif
  bool use_b = false;
  std::function<void(bool)> side;
  std::function<double(long long)> work;
  json setting_a, setting_b;
  std::string unit_note;
};

/// thp_madvise (huge = false): random reads over a region advised MADV_NOHUGEPAGE (A) or
/// MADV_HUGEPAGE (B); hugetlb (huge = true): over normal pages (A) or MAP_HUGETLB pages from the
/// reserved pool (B), which is grown for the case when allowed.
void setup_pages(AbCase& c, const TuningOptions& o, bool huge) {
  std::string thp = read_text("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!huge && thp.find("[never]") != std::string::npos)
    throw Waived("transparent hugepages are [never] here: madvise has no effect");
  if (huge) {
    auto [free_pages, total] = hugepages();
    long long need = o.bytes / kHugePage;
    if (free_pages < need) {
      if (!o.allow)
        throw Waived("needs " + std::to_string(need) + " free 2 MiB hugepages (vm.nr_hugepages " +
                     std::to_string(total) + ", " + std::to_string(free_pages) + " free)" +
                     o.refuse);
      c.guard.set("/proc/sys/vm/nr_hugepages", std::to_string(total + need - free_pages));
    }
  }
  map_region(c.ra, o.bytes, MADV_NOHUGEPAGE, false);
  if (huge)
    map_region(c.rb, o.bytes, -1, true);
  else
    map_region(c.rb, o.bytes, MADV_HUGEPAGE, false);
  c.setting_a = {{"pages", "4 KiB (MADV_NOHUGEPAGE)"}, {"thp_enabled", normalise_sysctl(thp)}};
  c.setting_b = huge ? json{{"pages", "2 MiB (MAP_HUGETLB)"}}
                     : json{{"pages", "THP (MADV_HUGEPAGE)"},
                            {"thp_enabled", normalise_sysctl(thp)},
                            {"anon_huge_bytes", thp_bytes(aligned(c.rb))}};
  c.side = [&c](bool b) { c.use_b = b; };
  const size_t words = static_cast<size_t>(o.bytes) / sizeof(uint64_t);
  c.work = [&c, huge, words](long long n) {
    const uint64_t* d =
        c.use_b ? (huge ? static_cast<uint64_t*>(c.rb.p) : aligned(c.rb)) : aligned(c.ra);
    g_sink += random_reads(d, words, n);
    return -1.0;
  };
  c.unit_note = "random 8-byte reads";
}

const char* const kTcpRmem = "/proc/sys/net/ipv4/tcp_rmem";
const char* const kTcpWmem = "/proc/sys/net/ipv4/tcp_wmem";

/// tcp_buffers: loopback TCP transfers with this network namespace's tcp_rmem/tcp_wmem (A) and
/// the seed's (B); new sockets for each side, so they take the values in force.
void setup_tcp_loopback(AbCase& c, CaseRun& run, const TuningOptions& o) {
  const std::string rp = kTcpRmem, wp = kTcpWmem;
  std::string cur_r = normalise_sysctl(read_text(rp)), cur_w = normalise_sysctl(read_text(wp));
  if (cur_r.empty()) throw Waived("no " + rp + " here");
  if (!o.allow)
    throw Waived("changes net.ipv4.tcp_rmem/tcp_wmem (of this network namespace)" + o.refuse);
  c.setting_a = {{"tcp_rmem", cur_r},
                 {"tcp_wmem", cur_w},
                 {"rmem_max", normalise_sysctl(read_text("/proc/sys/net/core/rmem_max"))}};
  c.setting_b = {{"tcp_rmem", kSeedTcpRmem},
                 {"tcp_wmem", kSeedTcpWmem},
                 {"rmem_max", c.setting_a["rmem_max"]}};
  c.side = [&c, tcp_bytes = o.tcp_bytes, rp, wp, cur_r, cur_w](bool b) {
    c.loop.reset();
    c.guard.set(rp, b ? kSeedTcpRmem : cur_r);
    c.guard.set(wp, b ? kSeedTcpWmem : cur_w);
    c.loop = std::make_unique<Loopback>(tcp_bytes);
  };
  c.work = [&c](long long n) {
    c.loop->transfer(n);
    return -1.0;
  };
  run.set_extra("bytes_per_op", o.tcp_bytes);
  c.unit_note = "loopback TCP transfers";
}

#if CLUSTERBENCH_HAVE_MPI
/// Runs `step` on this rank, then agrees with every rank on how it went: a pair rank that cannot
/// change its sysctls or connect must not leave the others waiting in a collective. Throws
/// Waived where any rank was waived, std::runtime_error where any failed (this rank's text, or
/// that the other node could not set up its side).
void agree(const Context& ctx, const std::function<void()>& step) {
  std::string err;
  bool waived = false;
  try {
    step();
  } catch (const Waived& w) {
    err = w.what(), waived = true;
  } catch (const std::exception& e) {
    err = e.what();
  }
  double worst = ctx.allreduce_max(err.empty() ? 0.0 : waived ? 1.0 : 2.0);
  if (worst == 0) return;
  if (err.empty()) err = "the other node of the pair could not set up its side";
  if (worst == 1) throw Waived(err);
  throw std::runtime_error(err);
}

/// The two nodes of tcp_buffers_2node: the first two nodes' leaders (sender, receiver), and every
/// other rank, which waits.
struct TcpPair {
  std::vector<std::string> hosts;
  int me = -1, snd = -1, rcv = -1;
  bool in_pair = false;
  std::vector<int> others;
};

TcpPair tcp_pair(const Context& ctx) {
  TcpPair p;
  p.hosts = ctx.hosts();
  if (p.hosts.size() < 2)
    throw Waived("needs at least 2 nodes (this run has " + std::to_string(p.hosts.size()) +
                 "); tcp_buffers measures the same effect over loopback");
  std::vector<int> leader = node_leader_ranks(p.hosts, ctx.rank_hosts());
  p.me = ctx.world_rank(), p.snd = leader[0], p.rcv = leader[1];
  p.in_pair = p.me == p.snd || p.me == p.rcv;
  for (int r = 0; r < ctx.world_size(); ++r)
    if (r != p.snd && r != p.rcv) p.others.push_back(r);
  return p;
}

/// Side A's and B's settings of both nodes: each side's current values reach the sender (rank
/// 0's record holds the evidence).
void record_tcp_2node_settings(AbCase& c, const TcpPair& p, const std::string& cur_r,
                               const std::string& cur_w) {
  std::string peer_r = cur_r, peer_w = cur_w;
  if (p.me == p.rcv) send_text(cur_r + "\n" + cur_w, p.snd, 8);
  if (p.me == p.snd) {
    std::istringstream in(recv_text(p.rcv, 8));
    std::getline(in, peer_r), std::getline(in, peer_w);
  }
  const json hosts = {p.hosts[0], p.hosts[1]};
  c.setting_a = {{"hosts", hosts}, {"tcp_rmem", {cur_r, peer_r}}, {"tcp_wmem", {cur_w, peer_w}}};
  c.setting_b = {{"hosts", hosts},
                 {"tcp_rmem", {kSeedTcpRmem, kSeedTcpRmem}},
                 {"tcp_wmem", {kSeedTcpWmem, kSeedTcpWmem}}};
}

/// tcp_buffers_2node: TCP transfers from the first node's leader to the second's, each node's
/// sysctls set on its own side; every rank agrees on each step.
void setup_tcp_2node(AbCase& c, CaseRun& run, const TuningOptions& o) {
  const Context& ctx = run.ctx();
  const TcpPair p = tcp_pair(ctx);
  const std::string rp = kTcpRmem, wp = kTcpWmem;
  std::string cur_r = normalise_sysctl(read_text(rp)), cur_w = normalise_sysctl(read_text(wp));
  agree(ctx, [&] {
    if (!p.in_pair) return;
    if (cur_r.empty()) throw Waived("no " + rp + " on " + ctx.host());
    if (!o.allow)
      throw Waived("changes net.ipv4.tcp_rmem/tcp_wmem on " + p.hosts[0] + " and " + p.hosts[1] +
                   o.refuse);
  });
  record_tcp_2node_settings(c, p, cur_r, cur_w);
  c.side = [&c, &ctx, p, tcp_bytes = o.tcp_bytes, rp, wp, cur_r, cur_w](bool b) {
    agree(ctx, [&] {
      if (!p.in_pair) return;
      c.link.reset();
      c.guard.set(rp, b ? kSeedTcpRmem : cur_r);
      c.guard.set(wp, b ? kSeedTcpWmem : cur_w);
    });
    agree(ctx, [&] {
      if (p.in_pair)
        c.link = std::make_unique<TcpLink>(p.me == p.snd, p.me == p.snd ? p.rcv : p.snd, tcp_bytes);
    });
  };
  c.work = [&c, p](long long n) -> double {
    if (!p.in_pair) {
      wait_quietly(p.snd);
      return 0;
    }
    auto t0 = std::chrono::steady_clock::now();
    c.link->transfer(n);
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (p.me == p.snd) release_others(p.others);
    return t;
  };
  run.set_extra("bytes_per_op", o.tcp_bytes);
  c.unit_note = "TCP transfers from " + p.hosts[0] + " to " + p.hosts[1];
}
#endif

/// governor: a fixed compute loop under the current CPU frequency governor (A) and performance
/// (B), set on every CPU.
void setup_governor(AbCase& c, const TuningOptions& o) {
  std::string gov = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor";
  std::string cur = normalise_sysctl(read_text(gov));
  if (cur.empty())
    throw Waived("no cpufreq driver (" + gov + " is absent): the governor cannot be set here");
  if (!o.allow) throw Waived("changes the CPU frequency governor" + o.refuse);
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  c.setting_a = {{"governor", cur}};
  c.setting_b = {{"governor", "performance"}};
  c.side = [&c, cpus, cur](bool b) {
    for (int cpu = 0; cpu < cpus; ++cpu)
      c.guard.set("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor",
                  b ? "performance" : cur);
  };
  c.work = [](long long n) {
    double x = 1.0;
    for (long long i = 0; i < n * 100000; ++i) x = x * 1.0000001 + 1e-9;
    g_sink += static_cast<uint64_t>(x);
    return -1.0;
  };
  c.unit_note = "fixed compute loops";
}

/// Alternating repeats: A, B, A, B, ... (ABAB rather than AABB, so drift hits both sides). Each
/// side's median seconds per operation, per repeat.
std::pair<std::vector<double>, std::vector<double>> measure_ab(CaseRun& run, AbCase& c,
                                                               int repeats) {
  std::vector<double> ta, tb;
  for (int r = 0; r < repeats; ++r) {
    for (bool b : {false, true}) {
      c.side(b);
      run.exec(c.work, std::string(b ? "B" : "A") + "/repeat:" + std::to_string(r + 1));
      (b ? tb : ta).push_back(run.stats().median);
    }
  }
  return {ta, tb};
}

/// The ratio t_A / t_B and its spread, with each side's setting and times.
void record_ab(CaseRun& run, const AbCase& c, const std::vector<double>& ta,
               const std::vector<double>& tb) {
  AbRatio ab = ab_ratio(ta, tb);
  // Each ABAB repeat's ratio is a repetition: compare tests a move of the effect on them.
  run.add_metric("ratio", ab.ratio, "ratio", true, ab.ratios);
  run.add_metric("ratio_spread", ab.spread, "ratio", false);
  run.set_extra("a", {{"setting", c.setting_a}, {"seconds_per_op", ta}});
  run.set_extra("b", {{"setting", c.setting_b}, {"seconds_per_op", tb}});
  run.set_extra("ratios", ab.ratios);
  run.set_extra("ratio_definition",
                "t_A / t_B per repeat (median), " + c.unit_note + "; > 1: B is faster");
  if (std::fabs(ab.ratio - 1) <= ab.spread)
    run.set_extra("effect", "none measurable here: |ratio - 1| within the spread");
}

class Tuning : public Benchmark {
 public:
  std::string id() const override { return "network.tuning"; }
  std::string description() const override {
    return "host tuning A/B effects: THP madvise, hugetlb, TCP buffers, governor (ratio)";
  }
  Level level() const override { return Level::node; }
  /// tcp_buffers_2node runs on every rank (the first two nodes' leaders talk, the rest wait).
  Level case_level(const json& params) const override {
    return params.value("effect", "") == "tcp_buffers_2node" ? Level::cluster : Level::node;
  }
  std::vector<json> cases(const Settings& s) const override {
    options(s);  // checked when the plan is made: exit 2
    std::vector<json> out;
    for (const auto& e : effects_(s)) out.push_back({{"effect", e}});
    return out;
  }
  std::string applicable(const NodeEnv&) const override { return ""; }

  /// 2 x repeats measurement loops (A and B) of 0.05 s each beyond their loop, plus touching
  /// both regions (page effects) at 2 GB/s (calibrated on the idle 2-core CI machine: 1.9-2.0 s
  /// for thp_madvise in `ci`; docs/launch.md "Estimates"); an effect that would be waived
  /// at once (a setting to change without allow_changes=true, too few free hugepages) 0.05 s.
  double estimate_s(const Settings& s, const json& params) const override {
    double repeats = static_cast<double>(repeats_(s));
    double bytes = static_cast<double>(bytes_(s));
    std::string e = params.value("effect", "");
    // Effects that change a setting are waived at once unless allow_changes=true.
    bool changes = e == "tcp_buffers" || e == "tcp_buffers_2node" || e == "governor";
    bool allow = allow_changes_(s) == "true";
    if (changes && !allow) return 0.05;
    if (e == "hugetlb" && !allow)  // waived at once without enough free hugepages
      if (hugepages().first * kHugePage < static_cast<long long>(bytes)) return 0.05;
    double touch = e == "thp_madvise" || e == "hugetlb" ? 2 * bytes / 2e9 : 0;
    return touch + 2 * repeats * (0.05 + loop_estimate_s(min_time(s), 0));
  }

  /// Set-up of the effect's two sides, the alternating A/B loops, then the record.
  void run(CaseRun& run) const override {
    const TuningOptions o = options(run.settings());
    const std::string effect = run.params().at("effect");
    AbCase c;
    if (effect == "thp_madvise" || effect == "hugetlb") {
      setup_pages(c, o, effect == "hugetlb");
    } else if (effect == "tcp_buffers") {
      setup_tcp_loopback(c, run, o);
    } else if (effect == "tcp_buffers_2node") {
#if CLUSTERBENCH_HAVE_MPI
      setup_tcp_2node(c, run, o);
#else
      throw Waived("built without MPI (-DCLUSTERBENCH_MPI=OFF): one node only");
#endif
    } else {
      setup_governor(c, o);
    }
    auto [ta, tb] = measure_ab(run, c, o.repeats);
    c.loop.reset();
#if CLUSTERBENCH_HAVE_MPI
    if (c.link) {
      run.set_extra("address", c.link->address);
      c.link.reset();
    }
#endif
    record_ab(run, c, ta, tb);
  }

 private:
  /// Reads and checks the knobs (InputError naming --set ID.KEY).
  TuningOptions options(const Settings& s) const {
    TuningOptions o;
    // At most 1000: 2000 loops of 0.05 s at least, half an hour; more is a typo.
    if (repeats_(s) < 5 || repeats_(s) > 1000) {
      std::string what = "--set " + id() + ".repeats must be 5..1000 (got ";
      what.append(std::to_string(repeats_(s))).push_back(')');
      throw InputError(what);
    }
    o.repeats = static_cast<int>(repeats_(s));
    o.allow = allow_changes_(s) == "true";
    o.bytes = std::max(bytes_(s) / kHugePage, 1LL) * kHugePage;
    o.tcp_bytes = tcp_bytes_(s);
    o.refuse = "; --set " + id() +
               ".allow_changes=true lets the case change it for the measurement and restore it";
    return o;
  }

  Knob<std::vector<std::string>> effects_ = knobs_.choices(
      "effects", kEffects,
      "A/B pairs, one case each: THP madvise, hugetlb pages, TCP buffers (loopback, 2 nodes), "
      "CPU governor");
  Knob<std::string> allow_changes_ = knobs_.choice(
      "allow_changes", {"false", "true"},
      "true: a case may change a sysctl or the governor for its measurement (then restored)");
  Knob<long long> repeats_ =
      knobs_.integer("repeats", "5", "count", "A/B repeats per case, alternating (at least 5)");
  Knob<long long> bytes_ =
      knobs_.size("bytes", SuiteDefault("256M", "1G", "4G"),
                  "region of the page effects' random reads (rounded to whole 2 MiB pages)");
  Knob<long long> tcp_bytes_ = knobs_.size("tcp_bytes", SuiteDefault("16M", "64M", "256M"),
                                           "bytes per transfer of the tcp_buffers effects");
};

CLUSTERBENCH_REGISTER(Tuning);

}  // namespace
}  // namespace clusterbench::network
