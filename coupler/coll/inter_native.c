/*
 * Baseline: MPI_Iallgatherv on the intercommunicator, the receivers
 * contributing nothing. MPICH 4.0 implements it as "remote gather, local
 * broadcast": every sender sends its block straight to receiver 0 (an
 * intercommunicator gatherv), which broadcasts the p blocks among the
 * receivers (binomial tree below 8 processes, else scatter + allgather).
 * Cost, as modelled in cost.c: p alpha + p k beta + bcast(q, p k), since
 * receiver 0 takes the p messages one at a time.
 * MPICH's blocking MPI_Allgather on an intercommunicator is the classic
 * root gathering instead (local gather, root-to-root, local broadcast),
 * modelled by `root`; cpl-bench measures it as the variant "mpi".
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/link.h"

int cpli_inter_native(const cpli_inter_args *a) {
  const int remote = a->sender ? a->q : a->p;
  int *cnt = calloc(2 * (size_t)remote, sizeof *cnt);
  if (!cnt) return cpli_fail(CPL_ERR_NOMEM, "native: out of memory for %d ranks", remote);
  int *dsp = cnt + remote;
  if (!a->sender) {
    for (int i = 0; i < a->p; i++) {
      if (a->blk.counts[i] > INT_MAX || a->blk.displs[i] > INT_MAX) {
        free(cnt);
        return cpli_fail(CPL_ERR_UNSUPPORTED,
                         "native: block %d (%zu bytes at offset %zu) exceeds "
                         "MPI's int counts",
                         i, a->blk.counts[i], a->blk.displs[i]);
      }
      cnt[i] = (int)a->blk.counts[i];
      dsp[i] = (int)a->blk.displs[i];
    }
  } else if (a->own_bytes > INT_MAX) {
    free(cnt);
    return cpli_fail(CPL_ERR_UNSUPPORTED, "native: block of %zu bytes exceeds MPI's int counts",
                     a->own_bytes);
  }
  static char dummy; /* MPI wants a valid address even for empty buffers */
  MPI_Request req;
  a->ctx->xstep = 0;
  int rc = MPI_Iallgatherv(a->sender ? a->own : &dummy, a->sender ? (int)a->own_bytes : 0, MPI_BYTE,
                           a->sender ? (void *)&dummy : a->blk.base, cnt, dsp, MPI_BYTE,
                           a->link->inter, &req);
  if (rc == MPI_SUCCESS) rc = cpli_waitall(1, &req, a->ctx, a->link->inter, "MPI_Iallgatherv", -1);
  else rc = cpli_mpi_check(rc, "MPI_Iallgatherv", "native inter-group allgatherv");
  free(cnt);
  return rc;
}
