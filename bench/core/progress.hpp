// Progress: where each rank is in the run, so that rank 0's watchdog can name the ranks and hosts
// that did not finish a hung case (docs/design.md "Who writes").
// Each rank counts, in memory, the case it is in and the operations of that case it has issued
// and completed (two relaxed atomic increments per batch: nothing a timed loop can feel). A thread
// per rank answers rank 0's question "where are you?", and carries a rank's own abort (a failed
// NCCL communicator) to rank 0, which then writes the record. The channel is TCP beside MPI, not
// MPI: MPI is then initialised at MPI_THREAD_SINGLE (MPI_THREAD_SERIALIZED only for a run with a
// case that calls MPI from a second thread; Context::init), not MPI_THREAD_MULTIPLE, whose
// locking made small collectives up to 3x slower. Each rank listens on an ephemeral port of every
// IPv4 address; the ports and addresses are exchanged once over MPI; a question is one short
// connection. The thread sleeps in poll(): no message travels and nothing wakes while the run is
// healthy. Without IPv4 between the nodes the channel only loses the names, never the deadline.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/api/context.hpp"
#include "core/api/ops_progress.hpp"
#include "records/records.hpp"

namespace clusterbench {

/// One rank's place: the case it is in (its index in the plan, -1 before the first) and the
/// operations of that case it has issued (`started`) and completed (`finished`).
struct RankProgress {
  int rank = 0;
  long long case_index = -1;
  long long started = 0;
  long long finished = 0;
  bool answered = true;  ///< false: no answer to rank 0 in time (process stopped, node down)
};

namespace progress {
/// The runner, before each case (every rank, same order): the next case, counts reset.
void next_case();
/// This rank's progress now.
RankProgress mine(int rank);
}  // namespace progress

/// Who did not finish: `text` ("" when nothing is known) is appended to an abort reason, `ranks`
/// ([{rank, host, state, case_index, started, finished}], state one of silent | behind | waiting
/// | finished) goes into the failed record's extra.
struct Unfinished {
  std::string text;
  json ranks = json::array();
};

/// Judges every rank's progress (`all`, one per rank, `hosts` indexed by rank). Let C be the
/// latest case an answering rank is in and K the most operations any rank has started in it:
/// a rank that did not answer is `silent`; one in an earlier case, or that started fewer than K,
/// is `behind` (it never reached the operation its peers wait in); one that started K but
/// finished fewer is `waiting`; else `finished`. The text names the silent and behind ranks with
/// their hosts, then the waiting ones; with none silent or behind, every rank waits inside the
/// same operation (a link or the library hangs) and the text says so.
Unfinished describe_unfinished(const std::vector<RankProgress>& all,
                               const std::vector<std::string>& hosts);

/// The channel (see the file comment). Constructed by every rank together on the main thread (one
/// allgather of the addresses). Without MPI, with one rank, or when this rank or rank 0 cannot
/// listen, it runs no thread and collect() knows only this rank.
class ProgressChannel {
 public:
  /// `on_peer_abort(reason)` runs on rank 0's channel thread, once, when another rank reports
  /// that it aborts the run; `reason` names that rank and host.
  ProgressChannel(const Context& ctx, std::function<void(const std::string&)> on_peer_abort);
  ~ProgressChannel();
  ProgressChannel(const ProgressChannel&) = delete;
  ProgressChannel& operator=(const ProgressChannel&) = delete;

  /// Rank 0, any thread: asks every rank where it is (all at once, 256 connections at a time) and
  /// waits up to `seconds` for the answers. One entry per rank, by rank; ranks that did not
  /// answer (stopped, dead, unreachable) have `answered` false.
  std::vector<RankProgress> collect(double seconds);
  /// What a non-root rank learns of rank 0 when it aborts: rank 0 said that it records the
  /// abort itself (`recording`), answered (`running`), or neither in time (`silent`: stopped,
  /// killed, or its node is down).
  enum class Root { recording, running, silent };
  /// Another rank, any thread: asks rank 0 and waits up to `seconds` for its answer, which says
  /// whether it records the abort (post_root_abort). `running` on rank 0 itself and without a
  /// working channel (nothing is known).
  Root root_state(double seconds);
  /// Rank 0, any thread, never waits: tells every other rank (and says in its answers) that rank 0
  /// records the abort, so that a rank that mpirun then terminates leaves the records to it.
  void post_root_abort();
  /// Another rank: tells rank 0 that this rank aborts the run and why (no-op on rank 0).
  void post_abort(const std::string& reason);

  /// The run's channel, or null outside a run.
  static ProgressChannel* current();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Rank 0 at an abort: collect() for up to `seconds`, then describe_unfinished(); empty without
/// a channel.
Unfinished who_did_not_finish(const Context& ctx, double seconds = 1.0);

}  // namespace clusterbench
