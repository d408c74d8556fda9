// network.p2p: point-to-point bandwidth and latency between node leaders over MPI.
// Formulas: docs/metrics.md "Point-to-point (network.p2p)"; guide: docs/p2p.md.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace clusterbench::network {

/// The node pairs (indices into the node list, i < j) a pattern visits, in order.
/// "all_pairs": every pair (n(n-1)/2); "ring": (i, i+1 mod n) for each i, without duplicates
/// (n = 2 gives one pair). Throws std::invalid_argument for another pattern name.
std::vector<std::pair<int, int>> p2p_pairs(const std::string& pattern, int nodes);

/// Rounds of disjoint pairs (each node in at most one pair per round) that together visit the
/// pattern's pairs, so that a round's pairs can run at once. all_pairs: the round-robin
/// tournament by the circle method (node m-1 fixed, the others rotate; m = n, or n + 1 with a
/// phantom node for odd n, whose partner rests): n-1 rounds of n/2 pairs (odd n: n rounds of
/// (n-1)/2), every pair exactly once. ring: its pairs greedily in rounds (2 for even n, 3 for
/// odd). `sample` K > 0 keeps K of the rounds, evenly spread (round floor(i * R / K) for i < K),
/// the same on every run; 0 keeps all. `concurrent` false puts each pair in a round of its own,
/// in the same order. Throws std::invalid_argument for another pattern name.
std::vector<std::vector<std::pair<int, int>>> p2p_rounds(const std::string& pattern, int nodes,
                                                         int sample = 0, bool concurrent = true);

/// Bytes on the wire per operation of a mode: unidirectional `bytes`, bidirectional 2 * bytes
/// (both directions at once), latency: one message each way, 2 * bytes.
double p2p_bytes_per_op(const std::string& mode, long long bytes);

/// Ranks outside a pair wait for world rank `from` (the pair's first rank) to say its batch is
/// done, sleeping between polls: OpenMPI's blocking waits busy-poll and would steal the cores the
/// pair uses. MPI builds only; tag 5 of MPI_COMM_WORLD.
void wait_quietly(int from);

/// The pair's first rank: tells every rank in `others` (world ranks) that the batch is done.
void release_others(const std::vector<int>& others);

/// World rank of each node's leader (its lowest world rank), in the order of Context::hosts().
std::vector<int> node_leader_ranks(const std::vector<std::string>& hosts,
                                   const std::vector<std::string>& rank_hosts);

/// Nearest-rank percentile (p in (0, 100]) of `xs`; 0 for an empty input.
double percentile(std::vector<double> xs, double p);

}  // namespace clusterbench::network
