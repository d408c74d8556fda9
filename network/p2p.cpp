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
#endif

class P2p : public Benchmark {
 public:
  std::string id() const override { return "network.p2p"; }
  std::string description() const override {
    return "point-to-point bandwidth (uni/bidirectional) and latency between node leaders, MPI";
  }
  Level level() const override { return Level::cluster; }
  std::vector<std::string> knobs() const override {
    return {"patterns", "modes", "bytes", "latency_bytes", "min_time"};
  }
  std::vector<json> cases(const Settings& s) const override {
    auto patterns =
        s.get_list(id(), "patterns",
                   s.by_suite<std::vector<std::string>>({"all_pairs"}, {"all_pairs"}, kPatterns));
    long long bytes = s.get_size(id(), "bytes", s.by_suite(4LL << 20, 64LL << 20, 64LL << 20));
    long long small = s.get_size(id(), "latency_bytes", 8);
    if (bytes < 1 || bytes > (1LL << 30) || small < 0 || small > (1LL << 20))
      throw InputError("--set " + id() + ".bytes must be in 1..1G and latency_bytes in 0..1M");
    std::vector<json> out;
    for (const auto& p : patterns) {
      if (std::find(kPatterns.begin(), kPatterns.end(), p) == kPatterns.end())
        throw InputError("--set " + id() + ".patterns: unknown pattern '" + p +
                         "' (all_pairs, ring)");
      for (const auto& m : s.get_choices(id(), "modes", kModes)) {
        out.push_back({{"pattern", p}, {"mode", m}, {"bytes", m == "latency" ? small : bytes}});
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

  void run(CaseRun& run) const override {
#if CLUSTERBENCH_HAVE_MPI
    const Context& ctx = run.ctx();
    const std::string pattern = run.params().at("pattern");
    const std::string mode = run.params().at("mode");
    const long long bytes = run.params().at("bytes");
    std::vector<std::string> hosts = ctx.hosts();
    std::vector<int> leader = node_leader_ranks(hosts, ctx.rank_hosts());
    std::vector<char> sbuf(static_cast<size_t>(std::max(bytes, 1LL)), 'x');
    std::vector<char> rbuf(sbuf.size());
    const int nodes = static_cast<int>(hosts.size());
    std::vector<std::vector<double>> matrix(hosts.size(), std::vector<double>(hosts.size(), 0));
    std::vector<double> values;
    json links = json::array();
    for (auto [a, b] : p2p_pairs(pattern, nodes)) {
      int me = ctx.world_rank();
      bool in_pair = me == leader[static_cast<size_t>(a)] || me == leader[static_cast<size_t>(b)];
      PairIo io{
          in_pair ? leader[static_cast<size_t>(me == leader[static_cast<size_t>(a)] ? b : a)] : -1,
          me == leader[static_cast<size_t>(a)], sbuf, rbuf, static_cast<int>(bytes)};
      std::vector<double> one_way;
      std::vector<int> others;
      for (int r = 0; r < ctx.world_size(); ++r)
        if (r != leader[static_cast<size_t>(a)] && r != leader[static_cast<size_t>(b)])
          others.push_back(r);
      // Ranks outside the pair wait quietly, then join the lock-step reductions.
      run.exec(
          [&](long long n) -> double {
            if (!in_pair) {
              wait_quietly(leader[static_cast<size_t>(a)]);
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
          "pair:" + std::to_string(a) + "-" + std::to_string(b));
      Scope scope;
      scope.kind = "link";
      scope.hosts = {hosts[static_cast<size_t>(a)], hosts[static_cast<size_t>(b)]};
      std::vector<Metric> metrics;
      TimeStats time = run.stats();
      json extra = {
          { "ranks",
            { leader[static_cast<size_t>(a)],
              leader[static_cast<size_t>(b)] } }};
      double value = 0;
      if (mode == "latency") {
        // The first node's per-message samples: percentiles and time statistics reach rank 0.
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
        time = TimeStats{static_cast<int>(v[2]), v[3], v[4], v[5], v[6], v[7], v[8]};
        metrics.push_back({"latency_p50", v[0], "us", false});
        metrics.push_back({"latency_p99", v[1], "us", false});
        value = v[0];
        extra["samples"] = static_cast<long long>(v[2]);
      } else {
        value = p2p_bytes_per_op(mode, bytes) / time.median / 1e9;
        metrics.push_back({"bandwidth", value, "GB/s", true});
      }
      matrix[static_cast<size_t>(a)][static_cast<size_t>(b)] = value;
      matrix[static_cast<size_t>(b)][static_cast<size_t>(a)] = value;
      values.push_back(value);
      links.push_back({{"hosts", scope.hosts}, { "value", value }});
      run.add_record(scope, std::move(metrics), time, std::move(extra));
    }
    std::sort(values.begin(), values.end());
    std::string unit = mode == "latency" ? "us" : "GB/s";
    std::string what = mode == "latency" ? "latency_p50" : "bandwidth";
    run.add_metric("min_link_" + what, values.front(), unit, mode != "latency");
    run.add_metric("max_link_" + what, values.back(), unit, mode != "latency");
    run.set_extra("matrix", {{"hosts", hosts}, {"unit", unit}, {"metric", what}, {
                               "values",
                               matrix
                             }});
    run.set_extra("links", links);
#else
    (void)run;
    throw Waived("built without MPI (-DCLUSTERBENCH_MPI=OFF)");
#endif
  }
};

CLUSTERBENCH_REGISTER(P2p);

}  // namespace
}  // namespace clusterbench::network
