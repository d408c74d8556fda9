// collectives.alltoall: nccl-tests' alltoall (docs/metrics.md "Collectives", docs/collectives.md).
// Rank r sends block b of its block x n elements to rank b, and receives block r of every rank in
// rank order; block is count/n rounded down to whole 16-byte units, as nccl-tests' alltoall
// (src/alltoall.cu), so that every peer's block starts 16-byte aligned. S is what one rank sends;
// factor (n-1)/n.
#include <cmath>

#include "collectives/collective.hpp"

namespace clusterbench::collectives {

namespace {
Layout layout(long long c, int /*rank*/, int n, std::size_t elt_size) {
  const long long per_unit = 16 / static_cast<long long>(elt_size);  // elements per 16 bytes
  long long block = c / n / per_unit * per_unit;
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
