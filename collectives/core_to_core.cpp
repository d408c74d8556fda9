// core_to_core: prints the core-to-core round trip of this host in ns (core/host_probe.hpp
// core_to_core_ns: one cache line passed between this CPU and another online one, the median of
// batches of 64 round trips), for allreduce_vs_reference.sh to bracket each peer tool's launch
// with: on a virtual machine the round trip switches between speeds as the hypervisor moves the
// vCPUs, and every tool's small-message time moves with it.
//   core_to_core [SECONDS=0.02]
// Prints one number, or -1 when not measured (one online CPU, or the other CPU did not answer).
#include <cstdio>
#include <cstdlib>

#include "core/api/host_probe.hpp"

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.02;
  if (!(seconds > 0 && seconds <= 10)) {
    std::fprintf(stderr, "core_to_core: SECONDS must be in (0, 10]\n");
    return 2;
  }
  std::printf("%.1f\n", clusterbench::core_to_core_ns(seconds));
  return 0;
}
