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

/// Bytes on the wire per operation of a mode: unidirectional `bytes`, bidirectional 2 * bytes
/// (both directions at once), latency: one message each way, 2 * bytes.
double p2p_bytes_per_op(const std::string& mode, long long bytes);

/// Nearest-rank percentile (p in (0, 100]) of `xs`; 0 for an empty input.
double percentile(std::vector<double> xs, double p);

}  // namespace clusterbench::network
