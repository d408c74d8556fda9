// network.p2p: point-to-point bandwidth (unidirectional and bidirectional, large messages) and
// latency (ping-pong of small messages, p50 and p99) between node leaders over MPI, for every
// pair of nodes or a ring. One `link` record per pair (both hosts named) plus the case's cluster
// record holding the node x node matrix. Formulas: docs/metrics.md "Point-to-point". Every MPI
// call of this benchmark is in this file; judgements (slow links) are made in reports/outliers.
#include "network/p2p.hpp"

#if CLUSTERBENCH_HAVE_MPI
#include "core/api/mpi_check.hpp"
#endif

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/api/benchmark.hpp"
#include "core/api/error.hpp"
#include "network/tcp_io.hpp"

namespace clusterbench::network {

std::vector<std::pair<int, int>> p2p_pairs(const std::string& pattern, int nodes) {
  std::vector<std::pair<int, int>> out;
  if (pattern == "all_pairs") {
    for (int i = 0; i < nodes; ++i)
      for (int j = i + 1; j < nodes; ++j) out.emplace_back(i, j);
  } else if (pattern == "ring") {
    for (int i = 0; i < nodes && nodes > 1; ++i) {
      int j = (i + 1) % nodes;
      std::pair<int, int> p = {std::min(i, j), std::max(i, j)};
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  } else {
    throw std::invalid_argument("unknown p2p pattern '" + pattern + "' (all_pairs, ring)");
  }
  return out;
}

namespace {

using Round = std::vector<std::pair<int, int>>;

/// The circle method: rounds r = 0..m-2, pairs (m-1, r) and ((r+k) mod (m-1), (r-k) mod (m-1)).
std::vector<Round> tournament(int n) {
  const int m = n % 2 ? n + 1 : n;
  std::vector<Round> out;
  for (int r = 0; r + 1 < m; ++r) {
    Round round;
    auto add = [&](int a, int b) {
      if (a < n && b < n) round.emplace_back(std::min(a, b), std::max(a, b));
    };
    add(m - 1, r);
    for (int k = 1; k < m / 2; ++k) add((r + k) % (m - 1), (r - k + m - 1) % (m - 1));
    out.push_back(std::move(round));
  }
  return out;
}

/// Pairs into rounds, each pair into the first round where neither node is busy.
std::vector<Round> greedy_rounds(const std::vector<std::pair<int, int>>& pairs) {
  std::vector<Round> out;
  for (auto p : pairs) {
    auto busy = [&p](const Round& r) {
      return std::any_of(r.begin(), r.end(), [&p](auto q) {
        return q.first == p.first || q.first == p.second || q.second == p.first ||
               q.second == p.second;
      });
    };
    auto it = std::find_if_not(out.begin(), out.end(), busy);
    if (it == out.end())
      out.push_back({p});
    else
      it->push_back(p);
  }
  return out;
}

}  // namespace

std::vector<std::vector<std::pair<int, int>>> p2p_rounds(const std::string& pattern, int nodes,
                                                         int sample, bool concurrent) {
  std::vector<Round> rounds;
  if (pattern == "all_pairs")
    rounds = nodes < 2 ? std::vector<Round>{} : tournament(nodes);
  else
    rounds = greedy_rounds(p2p_pairs(pattern, nodes));  // throws for an unknown pattern
  if (sample > 0 && static_cast<size_t>(sample) < rounds.size()) {
    std::vector<Round> kept;
    const size_t all = rounds.size();
    for (size_t i = 0; i < static_cast<size_t>(sample); ++i)
      kept.push_back(rounds[i * all / static_cast<size_t>(sample)]);
    rounds = std::move(kept);
  }
  if (concurrent) return rounds;
  std::vector<Round> one_each;
  for (const auto& r : rounds)
    for (auto p : r) one_each.push_back({p});
  return one_each;
}

double p2p_bytes_per_op(const std::string& mode, long long bytes) {
  return mode == "unidirectional" ? static_cast<double>(bytes) : 2.0 * static_cast<double>(bytes);
}

std::vector<int> node_leader_ranks(const std::vector<std::string>& hosts,
                                   const std::vector<std::string>& rank_hosts) {
  std::vector<int> leader(hosts.size(), -1);
  for (int r = static_cast<int>(rank_hosts.size()) - 1; r >= 0; --r)
    for (size_t h = 0; h < hosts.size(); ++h)
      if (rank_hosts[static_cast<size_t>(r)] == hosts[h]) leader[h] = r;
  return leader;
}

double percentile(std::vector<double> xs, double p) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(xs.size())));
  return xs[std::clamp<size_t>(rank, 1, xs.size()) - 1];
}

#if CLUSTERBENCH_HAVE_MPI
void wait_quietly(int from) {
  MPI_Request req;
  char done = 0;
  CHECK_MPI(MPI_Irecv(&done, 1, MPI_BYTE, from, 5, MPI_COMM_WORLD, &req));
  for (int flag = 0;;) {
    CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    if (flag) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void release_others(const std::vector<int>& others) {
  char done = 1;
  for (int r : others) CHECK_MPI(MPI_Send(&done, 1, MPI_BYTE, r, 5, MPI_COMM_WORLD));
}

#endif

namespace {

const std::vector<std::string> kModes = {"unidirectional", "bidirectional", "latency"};
const std::vector<std::string> kPatterns = {"all_pairs", "ring"};

#if CLUSTERBENCH_HAVE_MPI

/// One pair's traffic. `peer` is the other leader's world rank; `first` is the lower node.
struct PairIo {
  int peer;
  bool first;
  std::vector<char>& sbuf;
  std::vector<char>& rbuf;
  int bytes;

  /// Unidirectional streaming: the first node sends n messages, the second receives them and
  /// acknowledges the batch with one empty message (osu_bw's ack, without a window).
  void unidirectional(long long n) const {
    for (long long i = 0; i < n; ++i) {
      if (first)
        CHECK_MPI(MPI_Send(sbuf.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
      else
        CHECK_MPI(
            MPI_Recv(rbuf.data(), bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    if (first)
      CHECK_MPI(MPI_Recv(nullptr, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    else
      CHECK_MPI(MPI_Send(nullptr, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD));
  }
  /// Both directions at once: each side posts its receive and its send, then waits for both.
  void bidirectional(long long n) const {
    for (long long i = 0; i < n; ++i) {
      MPI_Request req[2];
      CHECK_MPI(MPI_Irecv(rbuf.data(), bytes, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[0]));
      CHECK_MPI(MPI_Isend(sbuf.data(), bytes, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[1]));
      CHECK_MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    }
  }
  /// Ping-pong; the first node times each round trip and keeps half of it (seconds).
  void latency(long long n, std::vector<double>& one_way) const {
    for (long long i = 0; i < n; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      if (first) {
        CHECK_MPI(MPI_Send(sbuf.data(), bytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD));
        CHECK_MPI(
            MPI_Recv(rbuf.data(), bytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double rtt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        one_way.push_back(rtt / 2);
      } else {
        CHECK_MPI(
            MPI_Recv(rbuf.data(), bytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Send(sbuf.data(), bytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD));
      }
    }
  }
};

/// Element-wise max over every world rank (the values a pair's ranks hold reach rank 0).
void world_max(std::vector<double>& v) {
  CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX,
                          MPI_COMM_WORLD));
}

/// Every rank waits here for every other, sleeping between polls (MPI_Ibarrier + MPI_Test every
/// 200 us): a rank whose pair is done, or that has none, must not busy-poll the cores that the
/// pairs still moving data need.
void quiet_barrier() {
  MPI_Request req;
  CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &req));
  for (int flag = 0;;) {
    CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    if (flag) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

/// Where each node leader's traffic goes on one rail (a NIC name, the same on every node):
/// "ADDR PORT" of its listening socket on that NIC's IPv4 address, from every world rank (empty
/// for ranks that are not leaders). Throws, on every rank alike, naming each leader's host that
/// has no IPv4 address on the rail.
struct RailEndpoints {
  std::vector<std::string> addr;
  std::vector<int> port;
  int listen_fd = -1;
  ~RailEndpoints() {
    if (listen_fd >= 0) ::close(listen_fd);
  }
};

void open_rail(const Context& ctx, const std::string& rail, bool leader, RailEndpoints& ep) {
  std::string mine;
  if (leader) {
    auto ips = ipv4_addresses(rail);
    if (!ips.empty()) {
      int port = 0;
      ep.listen_fd = listen_on(ips.front(), port);
      mine = ips.front() + " " + std::to_string(port);
    } else {
      mine = "-";
    }
  }
  std::vector<std::string> all = ctx.allgather(mine);
  std::string missing;
  ep.addr.assign(all.size(), "");
  ep.port.assign(all.size(), 0);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] == "-") missing += (missing.empty() ? "" : ", ") + ctx.rank_hosts()[r];
    std::istringstream in(all[r]);
    in >> ep.addr[r] >> ep.port[r];
  }
  if (!missing.empty())
    throw std::runtime_error("rail '" + rail + "': no IPv4 address on an up interface of that " +
                             "name on " + missing);
}

/// This rank's part in one round: the pair it moves data in (index into the round), its peer's
/// world rank and whether it is the pair's lower node; pair -1 when it rests.
struct Role {
  int pair = -1, peer = -1;
  bool first = false;
};

Role role_in(const std::vector<std::pair<int, int>>& round, const std::vector<int>& leader,
             int me) {
  for (size_t k = 0; k < round.size(); ++k) {
    int a = leader[static_cast<size_t>(round[k].first)];
    int b = leader[static_cast<size_t>(round[k].second)];
    if (me == a || me == b) return {static_cast<int>(k), me == a ? b : a, me == a};
  }
  return {};
}

/// The TCP connection of this rank's pair on a rail, made before the round's loop: the lower
/// node connects from its rail address to the upper node's listener and names itself (its world
/// rank), so that a stray connection is refused. Both ends fail within 20 s.
int connect_rail_pair(const RailEndpoints& ep, const Role& role, int me) {
  const int ms = 20000;
  int fd = -1;
  if (role.first) {
    std::string err;
    fd = connect_within(ep.addr[static_cast<size_t>(role.peer)],
                        ep.port[static_cast<size_t>(role.peer)], ms, err,
                        ep.addr[static_cast<size_t>(me)]);
    if (fd < 0)
      throw std::runtime_error("TCP connect to " + ep.addr[static_cast<size_t>(role.peer)] +
                               " failed: " + err);
    tune_socket(fd, 60);
    int32_t who = me;
    send_all(fd, reinterpret_cast<const char*>(&who), sizeof who);
  } else {
    fd = accept_within(ep.listen_fd, ms);
    if (fd < 0) throw std::runtime_error("no TCP connection from the peer within 20 s");
    tune_socket(fd, 60);
    int32_t who = -1;
    recv_all(fd, reinterpret_cast<char*>(&who), sizeof who);
    if (who != role.peer) {
      ::close(fd);
      throw std::runtime_error("TCP connection from world rank " + std::to_string(who) +
                               ", expected " + std::to_string(role.peer));
    }
  }
  return fd;
}

/// Every rank together: this rank's pair connects on the rail (connect_rail_pair); when any
/// rank failed, every rank throws the same error naming each failing host, so that none is left
/// waiting in the round. Returns the socket (-1 for a rank that rests).
int connect_round(const Context& ctx, const RailEndpoints& ep, const Role& role, int me,
                  const std::string& rail, size_t round) {
  int fd = -1;
  std::string err;
  if (role.pair >= 0) try {
      fd = connect_rail_pair(ep, role, me);
    } catch (const std::exception& e) {
      err = e.what();
    }
  std::vector<std::string> all = ctx.allgather(err);
  std::string why;
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) why += (why.empty() ? "" : "; ") + ctx.rank_hosts()[r] + ": " + all[r];
  if (why.empty()) return fd;
  if (fd >= 0) ::close(fd);
  throw std::runtime_error("rail '" + rail + "', round " + std::to_string(round) + ": " + why);
}

/// One round's traffic on this rank: MPI (rail "mpi") or the pair's TCP socket.
struct Traffic {
  const std::string& mode;
  const Role& role;
  std::vector<char>& sbuf;
  std::vector<char>& rbuf;
  long long bytes;
  int fd = -1;  ///< TCP socket of a rail, -1 over MPI

  void run(long long n, std::vector<double>& one_way) const {
    if (fd >= 0) {
      TcpPairIo io{fd, role.first, sbuf, rbuf, static_cast<size_t>(bytes)};
      if (mode == "unidirectional") return io.unidirectional(n);
      if (mode == "bidirectional") return io.bidirectional(n);
      return io.latency(n, one_way);
    }
    PairIo io{role.peer, role.first, sbuf, rbuf, static_cast<int>(bytes)};
    if (mode == "unidirectional") return io.unidirectional(n);
    if (mode == "bidirectional") return io.bidirectional(n);
    io.latency(n, one_way);
  }
};

/// Repetitions of a link's bandwidth carried through a round's reduction: the last ones timed.
constexpr size_t kMaxLinkReps = 32;
/// Fields of one pair in a round's reduction: its lower node's time statistics (seconds per
/// operation), the link's value and, in latency mode, the one-way p99 (us); then, in a bandwidth
/// mode, how many repetitions follow and their bandwidths (GB/s), kMaxLinkReps slots.
constexpr size_t kStatFields = 9;
constexpr size_t kPairFields = kStatFields + 1 + kMaxLinkReps;

/// The statistics of this rank's pair, from its own per-operation times of the timed batches
/// (the last `timed` of `own`) or its one-way latency samples.
std::vector<double> pair_fields(const std::string& mode, long long bytes,
                                const std::vector<double>& own, size_t timed,
                                const std::vector<double>& one_way) {
  std::vector<double> mine(own.end() - static_cast<long>(std::min(timed, own.size())), own.end());
  TimeStats st = compute_stats(mode == "latency" ? one_way : mine);
  std::vector<double> f(kPairFields, 0);
  const double stats[] = {
      static_cast<double>(st.n), st.min, st.median, st.mean, st.p95, st.max, st.spread};
  std::copy(std::begin(stats), std::end(stats), f.begin());
  if (mode == "latency") {
    f[7] = microseconds(percentile(one_way, 50));
    f[8] = microseconds(percentile(one_way, 99));
    return f;
  }
  const Work work = Work::bytes(p2p_bytes_per_op(mode, bytes));
  f[7] = work.rate(st.median);
  const size_t n = std::min(mine.size(), kMaxLinkReps);
  f[kStatFields] = static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) f[kStatFields + 1 + i] = work.rate(mine[mine.size() - n + i]);
  return f;
}

/// Times every pair of one round at once with the measurement loop: each pair's leaders move the
/// traffic of `mode`, then every rank meets in quiet_barrier; the loop's lock-step decides the
/// batch and the iterations for all (the slowest pair). Each pair's own statistics reach every
/// rank through one world reduction: kPairFields per pair, in round order.
std::vector<double> time_round(CaseRun& run, const std::string& mode, const Role& role,
                               const Traffic& traffic, size_t pairs, long long bytes,
                               const std::string& label) {
  std::vector<double> own, one_way;
  run.exec(
      [&](long long n) -> double {
        double t = 0;
        std::exception_ptr error;  // rethrown after the barrier, which every rank must reach
        if (role.pair >= 0) try {
            auto t0 = std::chrono::steady_clock::now();
            traffic.run(n, one_way);
            t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            own.push_back(t / static_cast<double>(n));
          } catch (...) {
            error = std::current_exception();
          }
        quiet_barrier();
        if (error) std::rethrow_exception(error);
        return t;
      },
      label);
  std::vector<double> all(pairs * kPairFields, 0);
  if (role.pair >= 0 && role.first) {
    auto f = pair_fields(mode, bytes, own, run.samples().size(), one_way);
    std::copy(f.begin(), f.end(), all.begin() + static_cast<long>(role.pair * kPairFields));
  }
  world_max(all);
  return all;
}

/// One link's record from its fields in a round's reduction.
struct LinkResult {
  std::vector<Metric> metrics;
  TimeStats time;
  double value = 0;  ///< bandwidth (GB/s) or one-way p50 latency (us)
};

LinkResult link_result(const std::string& mode, const double* f) {
  LinkResult r;
  r.time = TimeStats{static_cast<int>(f[0]), f[1], f[2], f[3], f[4], f[5], f[6]};
  r.value = f[7];
  if (mode == "latency") {
    r.metrics.push_back({"latency_p50", f[7], "us", false});
    r.metrics.push_back({"latency_p99", f[8], "us", false});
  } else {
    const auto n = static_cast<long>(std::min(f[kStatFields], static_cast<double>(kMaxLinkReps)));
    std::vector<double> reps(f + kStatFields + 1, f + kStatFields + 1 + std::max(0L, n));
    r.metrics.push_back({"bandwidth", f[7], "GB/s", true, std::move(reps)});
  }
  return r;
}

/// The node x node matrix of one case, filled pair by pair.
struct LinkMatrix {
  explicit LinkMatrix(size_t nodes) : values(nodes, std::vector<double>(nodes, 0)) {}
  void set(int a, int b, double value, const std::vector<std::string>& hosts) {
    values[static_cast<size_t>(a)][static_cast<size_t>(b)] = value;
    values[static_cast<size_t>(b)][static_cast<size_t>(a)] = value;
    measured.push_back(value);
    links.push_back({{"hosts", hosts}, {"value", value}});
  }
  std::vector<std::vector<double>> values;
  std::vector<double> measured;  ///< every link's value, in pair order
  json links = json::array();
};

/// The case's own (cluster) record: its slowest and fastest links and the matrix.
void record_matrix(CaseRun& run, const std::string& mode, const std::vector<std::string>& hosts,
                   LinkMatrix& m) {
  std::sort(m.measured.begin(), m.measured.end());
  std::string unit = mode == "latency" ? "us" : "GB/s";
  std::string what = mode == "latency" ? "latency_p50" : "bandwidth";
  run.add_metric("min_link_" + what, m.measured.front(), unit, mode != "latency");
  run.add_metric("max_link_" + what, m.measured.back(), unit, mode != "latency");
  run.set_extra("matrix",
                {{"hosts", hosts}, {"unit", unit}, {"metric", what}, {"values", m.values}});
  run.set_extra("links", m.links);
}
#endif

/// One case of network.p2p, typed: its params are written and read here only.
struct P2pCase {
  std::string pattern;       ///< all_pairs | ring
  std::string mode;          ///< the p2p mode (bandwidth, bidirectional, latency)
  long long bytes = 0;       ///< message size
  std::string rail = "mpi";  ///< "mpi" (MPI's own path) or a rail's interface

  json params() const {
    json c = {{"pattern", pattern}, {"mode", mode}, {"bytes", bytes}};
    if (rail != "mpi") c["rail"] = rail;  // the MPI path keeps the params it always had
    return c;
  }
  /// The case of `p`; an absent key reads as empty, 0 or "mpi".
  static P2pCase of(const json& p) {
    return {p.value("pattern", ""), p.value("mode", ""), p.value("bytes", 0LL),
            p.value("rail", "mpi")};
  }
};

class P2p : public Benchmark {
 public:
  std::string id() const override { return "network.p2p"; }
  std::string description() const override {
    return "point-to-point bandwidth (uni/bidirectional) and latency between node leaders, MPI";
  }
  Level level() const override { return Level::cluster; }
  std::vector<json> cases(const Settings& s) const override {
    auto patterns = patterns_(s);
    long long bytes = bytes_(s);
    long long small = latency_bytes_(s);
    if (bytes < 1 || bytes > (1LL << 30) || small < 0 || small > (1LL << 20))
      throw InputError("--set " + id() + ".bytes must be in 1..1G and latency_bytes in 0..1M");
    rounds_(s);  // a negative count is refused here, at plan time
    auto rails = rails_(s);
    if (rails.empty()) throw InputError("--set " + id() + ".rails: name at least one (mpi)");
    for (size_t i = 0; i < rails.size(); ++i)
      if (std::find(rails.begin(), rails.begin() + static_cast<long>(i), rails[i]) !=
          rails.begin() + static_cast<long>(i))
        throw InputError("--set " + id() + ".rails: '" + rails[i] + "' is named twice");
    for (const auto& r : rails)
      if (r != "mpi" && (r.empty() || r.size() >= 16 || r.find_first_of("/ \t") != r.npos))
        throw InputError("--set " + id() + ".rails: '" + r +
                         "' is not an interface name (1-15 characters, no '/' or space) or mpi");
    std::vector<json> out;
    for (const auto& p : patterns) {
      if (std::find(kPatterns.begin(), kPatterns.end(), p) == kPatterns.end())
        throw InputError("--set " + id() + ".patterns: unknown pattern '" + p +
                         "' (all_pairs, ring)");
      for (const auto& rail : rails)
        for (const auto& m : modes_(s)) {
          out.push_back(P2pCase{p, m, m == "latency" ? small : bytes, rail}.params());
        }
    }
    return out;
  }
  std::string applicable(const NodeEnv& node) const override {
    if (!CLUSTERBENCH_HAVE_MPI) return "built without MPI (-DCLUSTERBENCH_MPI=OFF)";
    int n = static_cast<int>(node.ctx.hosts().size());
    if (n < 2) return "needs at least 2 nodes (this run has " + std::to_string(n) + ")";
    return "";
  }

  /// The pattern's pairs in rounds of disjoint pairs (p2p_rounds), each round timed at once;
  /// one link record per pair, then the case's matrix and its schedule.
  void run(CaseRun& run) const override {
#if CLUSTERBENCH_HAVE_MPI
    const P2pCase c = P2pCase::of(run.params());
    const std::string& pattern = c.pattern;
    const std::string& mode = c.mode;
    const long long bytes = c.bytes;
    const std::string& rail = c.rail;
    const bool concurrent = schedule_(run.settings()) == "rounds";
    const Context& ctx = run.ctx();
    const std::vector<std::string> hosts = ctx.hosts();
    const std::vector<int> leader = node_leader_ranks(hosts, ctx.rank_hosts());
    const int me = ctx.world_rank();
    const bool is_leader = std::find(leader.begin(), leader.end(), me) != leader.end();
    RailEndpoints ep;
    if (rail != "mpi") open_rail(ctx, rail, is_leader, ep);
    std::vector<char> sbuf(static_cast<size_t>(std::max(bytes, 1LL)), 'x');
    std::vector<char> rbuf(sbuf.size());
    LinkMatrix matrix(hosts.size());
    auto rounds = p2p_rounds(pattern, static_cast<int>(hosts.size()),
                             static_cast<int>(rounds_(run.settings())), concurrent);
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t ri = 0; ri < rounds.size(); ++ri) {
      const auto& round = rounds[ri];
      Role role = role_in(round, leader, me);
      Traffic traffic{mode, role, sbuf, rbuf, bytes};
      struct Close {
        int& fd;
        ~Close() {
          if (fd >= 0) ::close(fd);
        }
      } close_fd{traffic.fd};
      if (rail != "mpi") traffic.fd = connect_round(ctx, ep, role, me, rail, ri);
      auto f =
          time_round(run, mode, role, traffic, round.size(), bytes, "round:" + std::to_string(ri));
      for (size_t k = 0; k < round.size(); ++k) {
        auto [a, b] = round[k];
        LinkResult r = link_result(mode, f.data() + k * kPairFields);
        Scope scope;
        scope.kind = ScopeKind::link;
        scope.hosts = {hosts[static_cast<size_t>(a)], hosts[static_cast<size_t>(b)]};
        matrix.set(a, b, r.value, scope.hosts);
        json extra = {{"ranks",
                       { leader[static_cast<size_t>(a)],
                         leader[static_cast<size_t>(b)] }},
                      {"round", ri},
                      { "concurrent_pairs",
                        round.size() }};
        if (rail != "mpi")
          extra["addresses"] = {ep.addr[static_cast<size_t>(leader[static_cast<size_t>(a)])],
                                ep.addr[static_cast<size_t>(leader[static_cast<size_t>(b)])]};
        if (mode == "latency") extra["samples"] = r.time.n;
        run.add_record(scope, std::move(r.metrics), r.time, std::move(extra));
      }
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    record_matrix(run, mode, hosts, matrix);
    size_t pairs = 0;
    for (const auto& r : rounds) pairs += r.size();
    run.set_extra("schedule", {{"kind", concurrent ? "rounds" : "sequential"},
                               {"rounds", rounds.size()},
                               {"pairs", pairs},
                               { "wall_s",
                                 wall }});
    if (rail != "mpi") run.set_extra("rail", rail);
#else
    (void)run;
    throw Waived("built without MPI (-DCLUSTERBENCH_MPI=OFF)");
#endif
  }

 private:
  Knob<std::vector<std::string>> patterns_ =
      knobs_.list("patterns", SuiteDefault("all_pairs", "all_pairs", "all_pairs,ring"),
                  "node pairs, one case each: all_pairs (every pair), ring (i with i+1 mod n)");
  Knob<std::vector<std::string>> modes_ = knobs_.choices(
      "modes", kModes, "one case each: uni/bidirectional bandwidth (bytes), latency (ping-pong)");
  Knob<long long> bytes_ = knobs_.size("bytes", SuiteDefault("4M", "64M", "64M"),
                                       "message size of the bandwidth modes, 1..1G");
  Knob<long long> latency_bytes_ =
      knobs_.size("latency_bytes", "8", "message size of the latency ping-pong, 0..1M");
  Knob<std::string> schedule_ = knobs_.choice(
      "schedule", {"rounds", "sequential"},
      "rounds: disjoint pairs at once (a round-robin tournament, n-1 rounds for all_pairs); "
      "sequential: one pair at a time");
  Knob<long long> rounds_ = knobs_.integer(
      "rounds", "0", "rounds",
      "all_pairs: measure K of the n-1 rounds, evenly spread (every node meets K peers); 0: all");
  Knob<std::vector<std::string>> rails_ = knobs_.list(
      "rails", "mpi",
      "paths, one case each: mpi (MPI's own choice of NIC), or a NIC name present on every node "
      "(TCP sockets bound to its IPv4 address: one rail of a rail-optimised fabric)");
};

CLUSTERBENCH_REGISTER(P2p);

}  // namespace
}  // namespace clusterbench::network
