/*
 * MPI_Abort, through MPI's profiling interface: a component's process
 * that calls it is named (core/launch.h: cpli_launch_abort) before
 * MPICH's launcher kills the job, whose banner names only the job rank.
 * Nothing is said outside cpl-run.
 */
#include <mpi.h>

#include "core/launch.h"
#include "coupler.h"

CPL_API int MPI_Abort(MPI_Comm comm, int errorcode) { /* exported: it replaces MPICH's */
  /* Outside MPI_Init..MPI_Finalize MPICH refuses MPI_Abort itself, and
   * would name the MPI_Comm_rank below instead, a call the program never
   * made: leave the words to it. */
  int up = 0, down = 0;
  PMPI_Initialized(&up);
  PMPI_Finalized(&down);
  if (up && !down) {
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cpli_launch_abort(rank, errorcode);
  }
  return PMPI_Abort(comm, errorcode);
}
