// collectives.all_reduce: nccl-tests' all_reduce (docs/metrics.md "Collectives",
// docs/collectives.md). Every rank ends with the element-wise sum over the ranks; factor 2(n-1)/n.
#include <cmath>

#include "collectives/collective.hpp"

namespace clusterbench::collectives {

namespace {
double sum_over_ranks(int n, long long i) {
  double s = 0;
  for (int r = 0; r < n; ++r) s += input_value(r, i);
  return s;
}
Layout layout(long long c, int /*rank*/, int /*n*/, std::size_t /*elt_size*/) {
  return {c, c, c, 0, 0};
}
double factor(int n) { return 2.0 * (n - 1) / n; }
double expected(int /*rank*/, int n, long long i, long long /*block*/, int /*root*/) {
  return sum_over_ranks(n, i);
}
}  // namespace

const Collective kAllReduce = {"all_reduce", false, true, layout, factor, expected};

namespace {
class AllReduce : public CollectiveBenchmark {
 public:
  AllReduce() : CollectiveBenchmark(kAllReduce) {}
};
CLUSTERBENCH_REGISTER(AllReduce);
}  // namespace

}  // namespace clusterbench::collectives
