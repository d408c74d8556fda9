// collectives.broadcast: nccl-tests' broadcast (docs/metrics.md "Collectives",
// docs/collectives.md). The root's count elements reach every rank; factor 1.
#include <cmath>

#include "collectives/collective.hpp"

namespace clusterbench::collectives {

namespace {
Layout layout(long long c, int /*rank*/, int /*n*/, std::size_t /*elt_size*/) {
  return {c, c, c, 0, 0};
}
double factor(int /*n*/) { return 1.0; }
double expected(int /*rank*/, int /*n*/, long long i, long long /*block*/, int root) {
  return input_value(root, i);
}
}  // namespace

const Collective kBroadcast = {"broadcast", true, false, layout, factor, expected};

namespace {
class Broadcast : public CollectiveBenchmark {
 public:
  Broadcast() : CollectiveBenchmark(kBroadcast) {}
};
CLUSTERBENCH_REGISTER(Broadcast);
}  // namespace

}  // namespace clusterbench::collectives
