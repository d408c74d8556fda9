// Core-to-core drift (docs/compare.md "Host drift"): a multi-rank case whose ranks' cores were
// placed further apart in one run than in the other measured the placement, not the software. The
// round trips the case runner takes around each case (extra.host_probe.c2c_ns) tell.
#pragma once

#include <string>

#include "records/result.hpp"

namespace clusterbench::report {

/// A multi-rank case (cluster or link scope) carries the core-to-core round trips around it
/// (extra.host_probe.c2c_ns: [before, after] the case, ns; one such pair a round in
/// extra.rounds.c2c_ns on a case spread over rounds). A window (a round, or the case) with a
/// reading more than kC2cTolerance above the nearest reading of either side (more than 2x) ran,
/// at least in part, on cores placed further apart (a virtual machine's vCPUs moved). When the
/// two sides did so in different shares of their windows, MPI's traffic between their ranks
/// moved with the cores, and a change is not judged, by any factor, when the side with the
/// larger share is the slower: the round trip's ratio does not bound a bandwidth's (measured: a
/// 2 MiB all_reduce 6.4x slower in the round whose round trip was 4.3x longer). 2x, because one
/// placement's own readings span 56-99 ns on this project's VM and the other's 316-420 ns
/// (docs/compare.md "Host drift").
inline constexpr double kC2cTolerance = 1.0;

/// A round-trip reading at or above this (ns) was not measured: the probe gives up after 5 ms.
inline constexpr double kC2cMaxNs = 5e6;

/// Why a multi-rank case's change is not judged for its core-to-core round trips ("" when it
/// is, or when a side measured none): see kC2cTolerance.
std::string c2c_drift(const ResultRecord& baseline, const ResultRecord& current);

/// How a multi-rank case's cores moved: why (`reason`, "" when they did not, or a side measured
/// none), and which side had them further apart (`longer`: +1 CURRENT, -1 BASELINE).
struct C2cMove {
  std::string reason;
  int longer = 0;
};

/// The move of the cores of a multi-rank case between its two records (c2c_drift's reason, and
/// which side was the further apart).
C2cMove c2c_move(const ResultRecord& baseline, const ResultRecord& current);

}  // namespace clusterbench::report
