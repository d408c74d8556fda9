// The spec table's families (clusterbench.spec/2 "families", docs/specs.md "Families"), resolved
// per benchmark id: what reports/ knows about a benchmark comes from the table, never from code.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "records/spec.hpp"

namespace clusterbench::report {

/// Fleet-outlier tolerance (fraction) of a benchmark no family gives one.
inline constexpr double kDefaultOutlierTolerance = 0.10;

/// A benchmark's families merged: each field from the last family whose glob matches the id and
/// that sets it (so a specific family after a general one refines it).
struct FamilyView {
  std::optional<double> outlier_tolerance;
  const std::vector<PrometheusGauge>* prometheus = nullptr;  ///< nullptr: no headline gauges
  bool soak = false;  ///< series "soak": records carry a time series (reports/burnin.hpp)
};

/// Resolves `benchmark` over `families` (Spec::families).
FamilyView resolve_family(const std::vector<SpecFamily>& families, const std::string& benchmark);

/// resolve_family() memoised per benchmark id, for loops over records (a glob match per
/// family per record was most of a 700,000-record loop). One per loop: it is not thread-safe.
class FamilyCache {
 public:
  explicit FamilyCache(const std::vector<SpecFamily>& families) : families_(families) {}
  const FamilyView& operator()(const std::string& benchmark);

 private:
  const std::vector<SpecFamily>& families_;
  std::unordered_map<std::string, FamilyView> cache_;
};

}  // namespace clusterbench::report
