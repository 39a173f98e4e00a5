/*
 * The MPI library's own allgatherv (MPI_Iallgatherv, in place), waited on
 * with the Coupler deadline. Cost: whatever MPICH picks (recursive doubling,
 * Bruck or ring by message size); cost.c models it that way.
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/coll.h"

int cpli_intra_native(const cpli_intra_args *a) {
  int p;
  MPI_Comm_size(a->comm, &p);
  int *cnt = malloc(sizeof *cnt * 2 * (size_t)p);
  if (!cnt) return cpli_fail(CPL_ERR_NOMEM, "native: out of memory for %d ranks", p);
  int *dsp = cnt + p;
  for (int i = 0; i < p; i++) {
    if (a->blk.counts[i] > INT_MAX || a->blk.displs[i] > INT_MAX) {
      free(cnt);
      return cpli_fail(CPL_ERR_UNSUPPORTED,
                       "native allgatherv: block %d (%zu bytes at offset %zu) "
                       "exceeds MPI's int counts",
                       i, a->blk.counts[i], a->blk.displs[i]);
    }
    cnt[i] = (int)a->blk.counts[i];
    dsp[i] = (int)a->blk.displs[i];
  }
  MPI_Request req;
  a->ctx->xstep = 0;
  int rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a->blk.base, cnt, dsp, MPI_BYTE,
                           a->comm, &req);
  if (rc == MPI_SUCCESS) rc = cpli_waitall(1, &req, a->ctx, a->comm, "MPI_Iallgatherv", -1);
  else rc = cpli_mpi_check(rc, "MPI_Iallgatherv", "native allgatherv");
  free(cnt);
  return rc;
}
