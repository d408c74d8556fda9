// network.p2p: point-to-point bandwidth (unidirectional and bidirectional, large messages) and
// latency (ping-pong of small messages, p50 and p99) between node leaders over MPI, for every
// pair of nodes or a ring. One `link` record per pair (both hosts named) plus the case's cluster
// record holding the node x node matrix. Formulas: docs/metrics.md "Point-to-point". Every MPI
// call of this benchmark is in this file; judgements (slow links) are made in reports/outliers.
#include "network/p2p.hpp"

#if CLUSTERBENCH_HAVE_MPI
#include "core/mpi_check.hpp"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>
#include <thread>

#include "core/benchmark.hpp"
#include "core/error.hpp"

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

/// Times one pair with the measurement loop: its two leaders (world ranks `lead_a`, of the lower
/// node, and `lead_b`) move the traffic of `mode`; every other rank waits quietly for lead_a's
/// "batch done", then joins the lock-step reductions. Returns lead_a's one-way latency samples,
/// seconds (latency mode; empty elsewhere).
std::vector<double> time_pair(CaseRun& run, const std::string& mode, int lead_a, int lead_b,
                              std::vector<char>& sbuf, std::vector<char>& rbuf, long long bytes,
                              const std::string& label) {
  const Context& ctx = run.ctx();
  const int me = ctx.world_rank();
  const bool in_pair = me == lead_a || me == lead_b;
  PairIo io{in_pair ? (me == lead_a ? lead_b : lead_a) : -1, me == lead_a, sbuf, rbuf,
            static_cast<int>(bytes)};
  std::vector<double> one_way;
  std::vector<int> others;
  for (int r = 0; r < ctx.world_size(); ++r)
    if (r != lead_a && r != lead_b) others.push_back(r);
  run.exec(
      [&](long long n) -> double {
        if (!in_pair) {
          wait_quietly(lead_a);
          return 0;
        }
        auto t0 = std::chrono::steady_clock::now();
        if (mode == "unidirectional")
          io.unidirectional(n);
        else if (mode == "bidirectional")
          io.bidirectional(n);
        else
          io.latency(n, one_way);
        double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (io.first) release_others(others);
        return t;
      },
      label);
  return one_way;
}

/// One link's record: its metrics, time statistics and extra, and the value its matrix shows.
struct LinkResult {
  std::vector<Metric> metrics;
  TimeStats time;
  json extra;
  double value = 0;  ///< bandwidth (GB/s) or one-way p50 latency (us)
};

/// The link's result from the loop's statistics (`stats`, the slowest rank's): bandwidth from the
/// median, or, in latency mode, the first node's per-message samples, whose percentiles and time
/// statistics reach rank 0 through a world reduction (every rank calls it).
LinkResult link_result(const std::string& mode, long long bytes, const TimeStats& stats,
                       const std::vector<double>& one_way, json extra) {
  LinkResult r{{}, stats, std::move(extra), 0};
  if (mode != "latency") {
    r.value = p2p_bytes_per_op(mode, bytes) / stats.median / 1e9;
    r.metrics.push_back({"bandwidth", r.value, "GB/s", true});
    return r;
  }
  TimeStats own = compute_stats(one_way);
  std::vector<double> v = {percentile(one_way, 50) * 1e6,
                           percentile(one_way, 99) * 1e6,
                           static_cast<double>(own.n),
                           own.min,
                           own.median,
                           own.mean,
                           own.p95,
                           own.max,
                           own.spread};
  world_max(v);
  r.time = TimeStats{static_cast<int>(v[2]), v[3], v[4], v[5], v[6], v[7], v[8]};
  r.metrics.push_back({"latency_p50", v[0], "us", false});
  r.metrics.push_back({"latency_p99", v[1], "us", false});
  r.value = v[0];
  r.extra["samples"] = static_cast<long long>(v[2]);
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
    std::vector<json> out;
    for (const auto& p : patterns) {
      if (std::find(kPatterns.begin(), kPatterns.end(), p) == kPatterns.end())
        throw InputError("--set " + id() + ".patterns: unknown pattern '" + p +
                         "' (all_pairs, ring)");
      for (const auto& m : modes_(s))
        out.push_back({{"pattern", p}, {"mode", m}, {"bytes", m == "latency" ? small : bytes}});
    }
    return out;
  }
  std::string applicable(const NodeEnv& node) const override {
    if (!CLUSTERBENCH_HAVE_MPI) return "built without MPI (-DCLUSTERBENCH_MPI=OFF)";
    int n = static_cast<int>(node.ctx.hosts().size());
    if (n < 2) return "needs at least 2 nodes (this run has " + std::to_string(n) + ")";
    return "";
  }

  /// Pairs one at a time: each pair timed, then its link record; last the case's matrix.
  void run(CaseRun& run) const override {
#if CLUSTERBENCH_HAVE_MPI
    const std::string pattern = run.params().at("pattern");
    const std::string mode = run.params().at("mode");
    const long long bytes = run.params().at("bytes");
    const std::vector<std::string> hosts = run.ctx().hosts();
    const std::vector<int> leader = node_leader_ranks(hosts, run.ctx().rank_hosts());
    std::vector<char> sbuf(static_cast<size_t>(std::max(bytes, 1LL)), 'x');
    std::vector<char> rbuf(sbuf.size());
    LinkMatrix matrix(hosts.size());
    for (auto [a, b] : p2p_pairs(pattern, static_cast<int>(hosts.size()))) {
      const int lead_a = leader[static_cast<size_t>(a)], lead_b = leader[static_cast<size_t>(b)];
      std::vector<double> one_way =
          time_pair(run, mode, lead_a, lead_b, sbuf, rbuf, bytes,
                    "pair:" + std::to_string(a) + "-" + std::to_string(b));
      LinkResult r = link_result(mode, bytes, run.stats(), one_way,
                                 {{ "ranks",
                                    { lead_a,
                                      lead_b } }});
      Scope scope;
      scope.kind = ScopeKind::link;
      scope.hosts = {hosts[static_cast<size_t>(a)], hosts[static_cast<size_t>(b)]};
      matrix.set(a, b, r.value, scope.hosts);
      run.add_record(scope, std::move(r.metrics), r.time, std::move(r.extra));
    }
    record_matrix(run, mode, hosts, matrix);
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
};

CLUSTERBENCH_REGISTER(P2p);

}  // namespace
}  // namespace clusterbench::network
