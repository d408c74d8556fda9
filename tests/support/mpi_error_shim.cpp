// LD_PRELOAD shim for the collectives tests: on world rank $CB_SHIM_RANK (default 1), the
// $CB_SHIM_FAIL_AT-th float MPI_SUM MPI_Allreduce (on MPI_COMM_WORLD only with
// CB_SHIM_WORLD_ONLY=1) returns MPI_ERR_OTHER without communicating, as a rank whose link or
// library failed inside a collective; its peers wait in that call.
#include <mpi.h>

#include <cstdlib>

extern "C" int MPI_Allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
  static long calls = 0;
  const char* at = std::getenv("CB_SHIM_FAIL_AT");
  const char* which = std::getenv("CB_SHIM_RANK");
  const char* world_only = std::getenv("CB_SHIM_WORLD_ONLY");
  if (world_only && *world_only == '1' && comm != MPI_COMM_WORLD)
    return PMPI_Allreduce(send, recv, count, type, op, comm);
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (at && type == MPI_FLOAT && op == MPI_SUM && rank == (which ? std::atoi(which) : 1) &&
      ++calls == std::atol(at))
    return MPI_ERR_OTHER;
  return PMPI_Allreduce(send, recv, count, type, op, comm);
}
