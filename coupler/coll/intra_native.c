/*
 * The MPI library's own allgatherv (MPI_Iallgatherv, in place), waited on
 * with the Coupler deadline. Cost: whatever MPICH picks (recursive doubling,
 * Bruck or ring by message size); cost.c models it that way.
 *
 * Sizes: only while all blocks together fit int counts (CPLI_NATIVE_MAX);
 * counts are the same on every rank, so every rank refuses alike before
 * any transfer. Displacements are each rank's own: past int range the
 * blocks are staged in a compact buffer instead.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"

int cpli_native_total(const cpli_blocks *b, int p, size_t *total) {
  *total = 0;
  int fits = 1;
  for (int i = 0; i < p; i++) {
    *total += b->counts[i];
    if (b->counts[i] && b->displs[i] + b->counts[i] > (size_t)INT_MAX) fits = 0;
  }
  return fits;
}

int cpli_intra_native(const cpli_intra_args *a) {
  int p, r;
  MPI_Comm_size(a->comm, &p);
  MPI_Comm_rank(a->comm, &r);
  size_t total;
  const int in_range = cpli_native_total(&a->blk, p, &total);
  if (total > CPLI_NATIVE_MAX)
    return cpli_fail(CPL_ERR_UNSUPPORTED,
                     "native allgatherv: %zu bytes in all exceed the %zu that MPICH's own "
                     "allgatherv moves (int counts); the circulant algorithm moves any size",
                     total, CPLI_NATIVE_MAX);
  int *cnt = malloc(sizeof *cnt * 2 * (size_t)p);
  char *stage = in_range ? NULL : malloc(total ? total : 1);
  if (!cnt || (!in_range && !stage)) {
    free(cnt);
    return cpli_fail(CPL_ERR_NOMEM, "native: out of memory for %d ranks", p);
  }
  int *dsp = cnt + p;
  for (int i = 0, at = 0; i < p; i++) {
    cnt[i] = (int)a->blk.counts[i];
    dsp[i] = in_range ? (int)a->blk.displs[i] : at;
    at += cnt[i];
  }
  char *base = in_range ? a->blk.base : stage;
  if (stage && cnt[r]) memcpy(stage + dsp[r], a->blk.base + a->blk.displs[r], a->blk.counts[r]);
  MPI_Request req;
  a->ctx->xstep = 0;
  int rc =
      MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, base, cnt, dsp, MPI_BYTE, a->comm, &req);
  if (rc != MPI_SUCCESS) rc = cpli_mpi_check(rc, "MPI_Iallgatherv", "native allgatherv");
  else if ((rc = cpli_waitall(1, &req, a->ctx, a->comm, "MPI_Iallgatherv", -1)))
    return rc; /* cnt and stage stay: the pending allgatherv still uses them */
  if (rc == CPL_OK && stage)
    for (int i = 0; i < p; i++)
      if (i != r && cnt[i]) memcpy(a->blk.base + a->blk.displs[i], stage + dsp[i], (size_t)cnt[i]);
  free(stage);
  free(cnt);
  return rc;
}
