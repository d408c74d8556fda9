// allreduce_reference: the plain MPI_Allreduce timing loop that collectives.all_reduce's MPI
// backend must match (busbw ratio >= 0.97 on medians). Every rank:
//   mpirun -np N allreduce_reference [MINBYTES=1024] [MAXBYTES=67108864] [STEP=4] [SECONDS=0.5]
// For each size S (float, sum, out-of-place) it times the way the harness does
// (bench/core/measure.cpp CaseRunImpl::exec with min_time = SECONDS, 0.5 s in the quick suite): 16
// operations calibrate a batch of SECONDS/20, batches warm up for SECONDS/5, then batches are timed
// with MPI_Wtime until SECONDS have passed; a batch's time is the slowest rank's (an MPI_Allreduce
// MAX after it, as nccl-tests and our harness take it). The same durations matter: on a shared
// virtual machine a 0.2 s loop and a 1 s loop see different medians. Prints, on rank 0, one line
// per size: S, the median time per operation in us, busbw = S / t x 2(n-1)/n in GB/s (1e9 B/s;
// docs/metrics.md "Collectives"), and busbw at the fastest batch (robust on a shared machine).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

std::string env(const char* name) { return std::getenv(name) ? std::getenv(name) : ""; }

/// MPI_Init as ALLREDUCE_REFERENCE_THREADS says (serialized: MPI_THREAD_SERIALIZED, as
/// clusterbench initialises MPI for a run with a case that calls MPI from a second thread;
/// multiple: MPI_THREAD_MULTIPLE, as it did before the progress channel moved to TCP; else
/// plain MPI_Init, MPI_THREAD_SINGLE, as clusterbench runs otherwise), to tell the threading
/// level's cost from ours. Returns the loop's
/// communicator: ALLREDUCE_REFERENCE_COMM=split gives one split from MPI_COMM_WORLD, as
/// clusterbench runs each case on its members' communicator (Context::split).
MPI_Comm init(int& argc, char**& argv) {
  const std::string threads = env("ALLREDUCE_REFERENCE_THREADS");
  if (threads == "multiple" || threads == "serialized") {
    int provided = 0;
    MPI_Init_thread(&argc, &argv,
                    threads == "multiple" ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  MPI_Comm comm = MPI_COMM_WORLD;
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (env("ALLREDUCE_REFERENCE_COMM") == "split")
    MPI_Comm_split(MPI_COMM_WORLD, 0, world_rank, &comm);
  return comm;
}

}  // namespace

int main(int argc, char** argv) {
  const MPI_Comm comm = init(argc, argv);
  // ALLREDUCE_REFERENCE_SYNC=barrier: a barrier after each operation, and each timed alone.
  const bool synced = env("ALLREDUCE_REFERENCE_SYNC") == "barrier";
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  long long minb = argc > 1 ? std::atoll(argv[1]) : 1024;
  long long maxb = argc > 2 ? std::atoll(argv[2]) : 64LL << 20;
  double step = argc > 3 ? std::atof(argv[3]) : 4;
  double seconds = argc > 4 ? std::atof(argv[4]) : 0.5;
  if (n < 2 || minb < 4 || maxb < minb || step <= 1 || !(seconds > 0)) {
    if (rank == 0)
      std::fprintf(stderr, "allreduce_reference: bad arguments or fewer than 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  std::vector<float> send(static_cast<size_t>(maxb / 4), 1.0f), recv(send.size());
  if (rank == 0)
    std::printf("# allreduce_reference: %d ranks, float, sum\n#%11s %10s %12s %12s\n", n, "size(B)",
                "time(us)", "busbw", "busbw_best");
  for (double s = static_cast<double>(minb); s <= static_cast<double>(maxb); s *= step) {
    int count = static_cast<int>(static_cast<long long>(s) / 4);
    auto batch = [&](long long ops) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = 0;
      if (synced) {  // each operation from a common start, timed alone (as OSU's loop)
        for (long long k = 0; k < ops; ++k) {
          double t0 = MPI_Wtime();
          MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, comm);
          t += MPI_Wtime() - t0;
          MPI_Barrier(comm);
        }
      } else {
        double t0 = MPI_Wtime();
        for (long long k = 0; k < ops; ++k)
          MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, comm);
        t = MPI_Wtime() - t0;
      }
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return t;
    };
    batch(1);  // warms up (the first operation of a size sets up buffers and connections)
    double t1 = batch(16) / 16;
    long long ops = std::max(1LL, static_cast<long long>(std::ceil(seconds / 20 / t1)));
    MPI_Bcast(&ops, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    // Every rank sums the same slowest-rank batch times, so all leave each loop together.
    for (double warm = 0; warm < seconds / 5;) warm += batch(ops);
    std::vector<double> per_op;
    for (double spent = 0; spent < seconds || per_op.empty();) {
      double t = batch(ops);
      spent += t;
      per_op.push_back(t / static_cast<double>(ops));
    }
    std::sort(per_op.begin(), per_op.end());
    double t = per_op[per_op.size() / 2], tmin = per_op.front();
    double bytes = static_cast<double>(count) * 4, factor = 2.0 * (n - 1) / n;
    if (rank == 0)
      std::printf("%12.0f %10.2f %12.6g %12.6g\n", bytes, t * 1e6, bytes / t / 1e9 * factor,
                  bytes / tmin / 1e9 * factor);
  }
  MPI_Finalize();
  return 0;
}
