// collectives.all_gather: nccl-tests' all_gather (docs/metrics.md "Collectives",
// docs/collectives.md). Each rank contributes a block of count/n; every rank ends with all blocks
// in rank order. S is the total gathered size; factor (n-1)/n. In-place, rank r's block sits at r x
// block.
#include <cmath>

#include "collectives/collective.hpp"

namespace clusterbench::collectives {

namespace {
Layout layout(long long c, int rank, int n, std::size_t /*elt_size*/) {
  long long block = c / n;
  return {block, block * n, block, rank * block, 0};
}
double factor(int n) { return static_cast<double>(n - 1) / n; }
double expected(int /*rank*/, int /*n*/, long long i, long long block, int /*root*/) {
  return input_value(static_cast<int>(i / block), i % block);
}
}  // namespace

const Collective kAllGather = {"all_gather", false, false, layout, factor, expected};

namespace {
class AllGather : public CollectiveBenchmark {
 public:
  AllGather() : CollectiveBenchmark(kAllGather) {}
};
CLUSTERBENCH_REGISTER(AllGather);
}  // namespace

}  // namespace clusterbench::collectives
