// An MPI process that only initialises MPI and sleeps for argv[1] seconds: the third arm of
// io/perf_ratios.sh part 1 (fio by hand beside an idle MPI process, as clusterbench is one
// while it runs fio; docs/fio.md "Ratios").
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  sleep(argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 60);
  MPI_Finalize();
  return 0;
}
