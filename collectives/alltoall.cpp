// collectives.alltoall: nccl-tests' alltoall (docs/metrics.md "Collectives", docs/collectives.md).
// Rank r sends block b of its count/n x n elements to rank b, and receives block r of every
// rank in rank order. S is what one rank sends; factor (n-1)/n.
#include <cmath>

#include "collectives/collective.hpp"

namespace clusterbench::collectives {

namespace {
Layout layout(long long c, int /*rank*/, int n) {
  long long block = c / n;
  return {block * n, block * n, block, 0, 0};
}
double factor(int n) { return static_cast<double>(n - 1) / n; }
double expected(int rank, int /*n*/, long long i, long long block, int /*root*/) {
  return input_value(static_cast<int>(i / block), rank * block + i % block);
}
}  // namespace

const Collective kAlltoall = {"alltoall", false, false, layout, factor, expected};

namespace {
class Alltoall : public CollectiveBenchmark {
 public:
  Alltoall() : CollectiveBenchmark(kAlltoall) {}
};
CLUSTERBENCH_REGISTER(Alltoall);
}  // namespace

}  // namespace clusterbench::collectives
