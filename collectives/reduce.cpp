// collectives.reduce: nccl-tests' reduce (docs/metrics.md "Collectives", docs/collectives.md).
// The element-wise sum over the ranks reaches the root only; factor 1.
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
double factor(int /*n*/) { return 1.0; }
double expected(int rank, int n, long long i, long long /*block*/, int root) {
  return rank == root ? sum_over_ranks(n, i) : std::nan("");
}
}  // namespace

const Collective kReduce = {"reduce", true, true, layout, factor, expected};

namespace {
class Reduce : public CollectiveBenchmark {
 public:
  Reduce() : CollectiveBenchmark(kReduce) {}
};
CLUSTERBENCH_REGISTER(Reduce);
}  // namespace

}  // namespace clusterbench::collectives
