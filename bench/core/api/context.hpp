// MPI context: world, node split, local rank, node leaders. With CLUSTERBENCH_HAVE_MPI=0 the same
// interface describes a single process (world size 1). All MPI calls of the core live in
// context.cpp, so version and build shims stay in one file.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace clusterbench {

/// The ranks taking part in one case: lock-step reductions run over them only, so a rank for
/// which the case does not apply never blocks its peers.
class Group {
 public:
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  bool member() const { return member_; }
  int size() const { return size_; }
  /// Element-wise max over the group's ranks (members only).
  void allreduce_max(std::vector<double>& v) const;

 private:
  friend class Context;
  Group() = default;
  bool member_ = false;
  bool single_ = false;
  int size_ = 1;
  void* comm_ = nullptr;  // MPI_Comm*
};

/// One process's place in the job. Collective methods must be called by every rank of the
/// communicator they name, in the same order. Errors throw CallError (library "MPI").
class Context {
 public:
  /// Initialises MPI unless it already is, at MPI_THREAD_SERIALIZED when `threads` (a case
  /// calls MPI from a second thread; Benchmark::calls_mpi_from_threads), else MPI_THREAD_SINGLE
  /// (OpenMPI's locks are off: small collectives run at the speed of a plain MPI program); splits
  /// the world by node (MPI_COMM_TYPE_SHARED) and builds the leaders' communicator (local rank
  /// 0 of each node). CLUSTERBENCH_HOSTNAME replaces gethostname().
  static Context& init(int* argc, char*** argv, bool threads = true);
  /// The level MPI provides ("single", "funneled", "serialized", "multiple"; "none" without MPI).
  static std::string mpi_thread_level();
  /// A world of one process that makes no MPI call, even in an MPI build: for unit tests of the
  /// run session and the measurement loop. `host` names it (as CLUSTERBENCH_HOSTNAME would).
  static Context& init_local(const std::string& host);
  static Context& get();
  /// Finalises MPI (once).
  static void finalize();

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int node_index() const { return node_index_; }  ///< 0..node_count-1, by leader world rank
  int node_count() const { return node_count_; }
  bool is_leader() const { return local_rank_ == 0; }
  bool is_root() const { return world_rank_ == 0; }
  const std::string& host() const { return host_; }
  /// Host name of every world rank, indexed by world rank.
  const std::vector<std::string>& rank_hosts() const { return rank_hosts_; }
  /// Distinct hosts in node order.
  std::vector<std::string> hosts() const;

  // World collectives.
  double allreduce_max(double v) const;
  double allreduce_min(double v) const;
  long long allreduce_sum(long long v) const;
  /// Element-wise max over ranks of a vector of equal length on every rank; over the leaders'
  /// communicator when `leaders_only` (call on leaders only).
  void allreduce_max(std::vector<double>& v, bool leaders_only = false) const;
  /// Broadcasts a string from world rank 0.
  std::string bcast(const std::string& s) const;
  /// Gathers one string per rank at world rank 0 (others get an empty vector).
  std::vector<std::string> gather(const std::string& s) const;
  /// Gathers at every rank.
  std::vector<std::string> allgather(const std::string& s) const;
  /// Collective over the world: the group of ranks passing `member` = true.
  std::unique_ptr<Group> split(bool member) const;
  /// Barrier that sleeps between polls instead of spinning (OpenMPI's blocking waits busy-poll
  /// and would steal the cores a node-level benchmark measures).
  void quiet_barrier() const;

  // Leaders' communicator (valid on leaders only).
  void leaders_barrier() const;

  /// Whether this context talks over MPI (false without MPI and after init_local()).
  bool uses_mpi() const { return CLUSTERBENCH_HAVE_MPI && !single_; }
  /// Library version string of the MPI implementation ("" without MPI).
  std::string mpi_version() const;
  /// Aborts every rank (MPI_Abort) with `code`.
  [[noreturn]] void abort(int code) const;

 private:
  Context() = default;
  bool single_ = false;  // init_local(): every collective is the one-process identity
  int world_rank_ = 0, world_size_ = 1, local_rank_ = 0, local_size_ = 1;
  int node_index_ = 0, node_count_ = 1;
  std::string host_;
  std::vector<std::string> rank_hosts_;
  void* node_comm_ = nullptr;     // MPI_Comm*, opaque here so the header needs no mpi.h
  void* leaders_comm_ = nullptr;  // MPI_Comm*, null on non-leaders
};

/// This machine's host name: $CLUSTERBENCH_HOSTNAME when set, else gethostname(); as valid UTF-8
/// (bytes that are not become U+FFFD, records/utf8.hpp).
std::string local_hostname();

}  // namespace clusterbench
