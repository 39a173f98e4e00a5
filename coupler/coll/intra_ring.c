/*
 * Ring allgather(v): p - 1 steps; in step s rank r passes block (r - s) to
 * r + 1 and takes block (r - s - 1) from r - 1, so every block travels once
 * around the ring. Baseline for the Kang ring comparison.
 *
 * Cost (alpha-beta): (p - 1) alpha + beta * sum over steps of the largest
 * block moved in that step; for regular blocks of k bytes, (p-1)(alpha + k beta).
 */
#include "coll/coll.h"

int cpli_intra_ring(const cpli_intra_args *a) {
  int p, r;
  MPI_Comm_size(a->comm, &p);
  MPI_Comm_rank(a->comm, &r);
  const int right = (r + 1) % p, left = (r - 1 + p) % p;
  for (int s = 0; s < p - 1; s++) {
    const int sb = ((r - s) % p + p) % p;
    const int rb = ((r - s - 1) % p + p) % p;
    a->ctx->xstep = s;
    CPLI_TRY(cpli_xfer(a->comm, a->blk.base + a->blk.displs[sb], a->blk.counts[sb], right,
                       a->blk.base + a->blk.displs[rb], a->blk.counts[rb], left, a->ctx));
  }
  return CPL_OK;
}
