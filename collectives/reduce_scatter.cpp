// collectives.reduce_scatter: nccl-tests' reduce_scatter (docs/metrics.md "Collectives",
// docs/collectives.md). Sums count (a multiple of n) elements over the ranks; rank r keeps block r.
// S is the total size; factor (n-1)/n. In-place (NCCL), rank r's result sits at r x block of the
// input.
#include <cmath>

#include "collectives/collective.hpp"

namespace clusterbench::collectives {

namespace {
double sum_over_ranks(int n, long long i) {
  double s = 0;
  for (int r = 0; r < n; ++r) s += input_value(r, i);
  return s;
}
Layout layout(long long c, int rank, int n, std::size_t /*elt_size*/) {
  long long block = c / n;
  return {block * n, block, block, 0, rank * block};
}
double factor(int n) { return static_cast<double>(n - 1) / n; }
double expected(int rank, int n, long long i, long long block, int /*root*/) {
  return sum_over_ranks(n, rank * block + i);
}
}  // namespace

const Collective kReduceScatter = {"reduce_scatter", false, true, layout, factor, expected};

namespace {
class ReduceScatter : public CollectiveBenchmark {
 public:
  ReduceScatter() : CollectiveBenchmark(kReduceScatter) {}
};
CLUSTERBENCH_REGISTER(ReduceScatter);
}  // namespace

}  // namespace clusterbench::collectives
