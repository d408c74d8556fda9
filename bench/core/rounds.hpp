// Rounds (--rounds; docs/compare.md "Rounds"): a case measured once per round of the plan, its
// rounds seconds to a minute apart, so that its repetitions sample the host's states instead of
// one 50 ms window of it. The session measures; this merges each round's records of a case into
// the one record that stands for it.
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"

namespace clusterbench {

/// The records of one case after `rounds.size()` of `planned` rounds: `rounds[k]` holds round
/// k+1's records of the case (one per scope, in the order written), each round's matched to the
/// others by case key, in the first round's order.
/// - A record that is not ok in some round stands for the case as it is (the first such round),
///   a failed one's message prefixed "round K of N: ".
/// - Otherwise the last round's record, with each metric's value the median of the rounds' values
///   and `reps` those values (one repetition per round), except a count (unit "count": the sum)
///   and a best (name ending "_best": the best of the rounds), which have no reps. `time` is the
///   stats of the rounds' median times, `duration_s` their sum, `started_at` the first round's.
///   `extra.rounds` holds {planned, run, values: {metric: [per round]}, c2c_ns: [[before, after]
///   per round]}; the host probe keeps the last round's cpu and memory readings and the rounds'
///   median CPU share, without its core-to-core pair (the rounds' readings are in extra.rounds).
/// Every record but a final merge (`final` false) is marked extra.snapshot: a later round's
/// record of the case replaces it (records.md), and one stands if the run ends before.
std::vector<ResultRecord> merge_rounds(const std::vector<std::vector<ResultRecord>>& rounds,
                                       int planned, bool final);

/// The `extra.rounds` of the last snapshot of `case_key` in the records file `path` (JSON lines):
/// what a round case's earlier rounds measured, for the failed record of a run aborted in a later
/// round that a rank other than 0 writes (only rank 0 merged the rounds). null when none; lines
/// that are not records (a torn last line) are skipped.
json snapshot_rounds(const std::string& path, const std::string& case_key);

/// What the time left of a run is made of, per planned case (rank 0's plan).
struct CaseCost {
  bool to_run = true;
  bool in_rounds = false;  ///< run once per round
  double estimate_s = 0;   ///< the benchmark's estimate: the case's (one-shot) or one round's
  double measured_s = -1;  ///< what the case took when it last ran (one round), -1 not yet
};

/// Seconds left once case `index` of round `round` (1-based) of `rounds` has ended: the cases
/// after it in this round (in round 1 every case, later only the round cases), then `rounds` -
/// `round` more rounds of the round cases. A case that ran already counts what it took; one that
/// has not, its estimate times how far the measured cases ran over or under theirs (their
/// measured sum over their estimated sum, within 0.25..8): a loaded machine's first round moves
/// every estimate after it.
double time_left(const std::vector<CaseCost>& plan, size_t index, int round, int rounds);

}  // namespace clusterbench
