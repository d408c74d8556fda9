// Families resolved per benchmark id (families.hpp).
#include "reports/families.hpp"

namespace clusterbench::report {

FamilyView resolve_family(const std::vector<SpecFamily>& families, const std::string& benchmark) {
  FamilyView view;
  for (const auto& f : families) {
    if (!glob_match(f.benchmark, benchmark)) continue;
    if (f.outlier_tolerance) view.outlier_tolerance = f.outlier_tolerance;
    if (f.prometheus) view.prometheus = &*f.prometheus;
    if (!f.series.empty()) view.soak = f.series == "soak";
  }
  return view;
}

const FamilyView& FamilyCache::operator()(const std::string& benchmark) {
  auto it = cache_.find(benchmark);
  if (it == cache_.end())
    it = cache_.emplace(benchmark, resolve_family(families_, benchmark)).first;
  return it->second;
}

}  // namespace clusterbench::report
