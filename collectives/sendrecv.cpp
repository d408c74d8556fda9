// collectives.sendrecv: nccl-tests' sendrecv (docs/metrics.md "Collectives", docs/collectives.md).
// Each rank sends count elements to rank + 1 and receives from rank - 1 (a ring, as nccl-tests'
// sendrecv); factor 1.
#include <cmath>

#include "collectives/collective.hpp"

namespace clusterbench::collectives {

namespace {
Layout layout(long long c, int /*rank*/, int /*n*/, std::size_t /*elt_size*/) {
  return {c, c, c, 0, 0};
}
double factor(int /*n*/) { return 1.0; }
double expected(int rank, int n, long long i, long long /*block*/, int /*root*/) {
  return input_value((rank - 1 + n) % n, i);
}
}  // namespace

const Collective kSendrecv = {"sendrecv", false, false, layout, factor, expected};

namespace {
class Sendrecv : public CollectiveBenchmark {
 public:
  Sendrecv() : CollectiveBenchmark(kSendrecv) {}
};
CLUSTERBENCH_REGISTER(Sendrecv);
}  // namespace

}  // namespace clusterbench::collectives
