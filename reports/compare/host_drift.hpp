// Host drift (docs/compare.md "Host drift"): a host that ran at another speed in one of the runs,
// or whose cases shared their CPUs or disk with other work, explains a host-side change: such a
// change is left unjudged (not_comparable) rather than called a regression.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "records/result.hpp"
#include "reports/compare/judge.hpp"

namespace clusterbench::report {

/// A host whose reference probe (extra.host_probe of its records: bench/core/host_probe.hpp) ran
/// at a different speed in the two runs: the medians differ by more than kHostDriftTolerance and
/// the two-sided Mann-Whitney p on the samples (>= kMinReps a side) is below kAlpha.
struct HostDrift {
  std::string host, probe;           ///< probe: cpu_mops | mem_gbps
  double baseline = 0, current = 0;  ///< medians of the samples
  double change_pct = 0;             ///< (current - baseline) / baseline * 100
  double p_value = 1;
  int baseline_n = 0, current_n = 0;
};

/// How far a host's probe may move between runs before it counts as drift: the probe's own
/// run-to-run spread on a quiet machine is a few percent (docs/compare.md "Host drift").
inline constexpr double kHostDriftTolerance = 0.10;

/// A case's own CPU share (extra.host_probe.cpu_share: its process's CPU seconds per wall second
/// while it ran) is compared when the larger of the two sides' is at least kBusyShare (half a
/// core: a process that computes or spins; one that waits on I/O or children says nothing); a
/// change of more than kShareTolerance of the larger means other work shared the case's cores in
/// the run with the smaller.
inline constexpr double kBusyShare = 0.5;
inline constexpr double kShareTolerance = 0.15;

/// Probe samples per host and probe name, from the ok records that carry extra.host_probe.
using ProbeSamples = std::map<std::string, std::map<std::string, std::vector<double>>>;
ProbeSamples probe_samples(const std::vector<ResultRecord>& records);

/// The drifts between two runs' probe samples, one per host and probe that drifted.
std::vector<HostDrift> host_drift(const ProbeSamples& baseline, const ProbeSamples& current);

/// Whether a record measures the host (CPU, memory, MPI, sockets, disks) rather than a GPU: no
/// GPU in its scope and not over NCCL.
bool host_bound(const ResultRecord& r);

/// How a case's message starts when host drift left its change unjudged (compare.md lists them).
inline constexpr const char* kDriftMessage = "not judged: host drift: ";

/// "node01 ran 22.5% slower in CURRENT (host probe cpu_mops 100 -> 77.5, p = 0.008, n = 5/5)".
std::string drift_text(const HostDrift& d);

/// Host-bound cases whose metrics moved while their host's conditions changed are not judged
/// (not_comparable, their message starting with kDriftMessage): the host, not what runs on it,
/// changed speed. Causes, in order: other work on the case's disk (extra.disk_load), a changed
/// CPU share of the case itself (extra.host_probe.cpu_share), a move of a multi-rank case's cores
/// (core_to_core.hpp), a host's probe drift (`drift`). The same measurement at another scope
/// follows the unjudged one. Returns how many cases were left unjudged.
int discount_drift(std::vector<CaseChange>& cases, const std::vector<HostDrift>& drift);

}  // namespace clusterbench::report
