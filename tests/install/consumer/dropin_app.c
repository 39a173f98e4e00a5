/* An MPI program that knows nothing of Coupler, linked with the drop-in:
 * MPI_Allgather must reach libcoupler_mpi, and the data must be right. */
#include <mpi.h>
#include <stdio.h>

int cpl_mpi_interposed_calls(void); /* from libcoupler_mpi, see its README */

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int all[64];
  MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
  for (int i = 0; i < size && i < 64; i++) bad += all[i] != i;
  const int calls = cpl_mpi_interposed_calls();
  if (rank == 0)
    printf("dropin_app: %d ranks, %d interposed calls, %s\n", size, calls,
           bad ? "WRONG DATA" : "data right");
  MPI_Finalize();
  return bad || calls < 1;
}
