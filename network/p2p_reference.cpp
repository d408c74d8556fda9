// p2p_reference: the plain MPI_Send/MPI_Recv streaming loop that network.p2p's unidirectional
// bandwidth must match (the goal: ratio >= 0.97 on medians). Ranks 0 and 1 only:
//   mpirun -np 2 p2p_reference [BYTES=4194304] [MESSAGES=64] [REPEATS=11]
// Prints the median over REPEATS of BYTES * MESSAGES / seconds in GB/s (1e9 B/s). Each repeat
// streams MESSAGES sends and ends with one empty ack, as network.p2p's batch does.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    std::fprintf(stderr, "p2p_reference: needs 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long bytes = argc > 1 ? std::atol(argv[1]) : 4L << 20;
  int messages = argc > 2 ? std::atoi(argv[2]) : 64;
  int repeats = argc > 3 ? std::atoi(argv[3]) : 11;
  std::vector<char> buf(static_cast<size_t>(bytes), 'x');
  std::vector<double> gbs;
  for (int r = 0; r < repeats + 1 && rank < 2; ++r) {  // the first repeat warms up
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < messages; ++i) {
      if (rank == 0)
        MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      else
        MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
    if (rank == 0)
      MPI_Recv(nullptr, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
      MPI_Send(nullptr, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    if (r > 0) gbs.push_back(static_cast<double>(bytes) * messages / t / 1e9);
  }
  if (rank == 0) {
    std::sort(gbs.begin(), gbs.end());
    std::printf("p2p_reference: %ld B x %d messages, median of %d repeats: %.4f GB/s\n", bytes,
                messages, repeats, gbs[gbs.size() / 2]);
  }
  MPI_Finalize();
  return 0;
}
