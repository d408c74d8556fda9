// What changed around the numbers between two runs (docs/compare.md "Environment changes"): the
// run settings (suite, --only, --rounds, --set) and each host's env fields (versions, firmware,
// tuning, software), grouped so that one change over a thousand hosts is one row.
#pragma once

#include <string>
#include <vector>

#include "records/run_dir.hpp"

namespace clusterbench::report {

/// One environment field that differs, with the hosts where it changed that way.
struct EnvChange {
  std::string field;  ///< "driver", "cuda_runtime", "gpu vbios", "nic firmware mlx5_0/1", ...
  std::string baseline, current;
  std::vector<std::string> hosts;
};

/// Every difference between BASELINE's and CURRENT's run settings and env records.
struct EnvDiff {
  std::vector<EnvChange> changes;  ///< the run settings first (hosts "all"), then env fields
  std::vector<std::string> hosts_removed, hosts_added;
};

/// The differences of `baseline` and `current`: run settings, then per host present in both the
/// env fields that differ, grouped by (field kind, baseline value, current value) with their hosts.
EnvDiff diff_env(const RunDir& baseline, const RunDir& current);

}  // namespace clusterbench::report
