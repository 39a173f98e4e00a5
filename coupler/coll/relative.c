/*
 * Lockstep rounds on a buffer in relative order, for small allgathers.
 *
 * Bruck's algorithm and Traff's Alg. 7 share one pattern: in round k rank
 * r sends the blocks of ranks r .. r + n_k - 1 to r - s_k and receives
 * those of r + s_k .. r + s_k + n_k - 1 from r + s_k. Kept in the rank's
 * relative order (block r first, then r + 1, ...), both ranges are one
 * contiguous run, so every round is one plain message each way; in the
 * caller's layout the ranges that wrap past rank p - 1 are two pieces,
 * packed or described by a datatype. One copy puts the blocks in place at
 * the end (the final rotation of Bruck et al.).
 *
 * Why lockstep and not the dataflow executor: where the rounds form one
 * dependency chain (Alg. 7 at p = 4, 7, 8, Bruck always) the dataflow has
 * nothing to overlap and its bookkeeping per call shows. Emulated cluster,
 * 8 nodes, MPICH's MPI_Allgather / ours, 1-2 KiB: p = 7 0.90-0.97x here
 * against 0.83-0.91x for the dataflow plan (scripts/cluster/RESULTS.md,
 * "Small intra-group allgathers").
 */
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"

int cpli_rounds_relative(const cpli_intra_args *a, int p, int r, int rounds, const int *skip,
                         const int *count) {
  const cpli_blocks *b = &a->blk;
  size_t *rel = malloc(sizeof *rel * ((size_t)p + 1)); /* rel[i]: where block r + i starts */
  if (!rel) return cpli_fail(CPL_ERR_NOMEM, "out of memory for %d ranks", p);
  rel[0] = 0;
  for (int i = 0, j = r; i < p; i++, j = j + 1 == p ? 0 : j + 1) rel[i + 1] = rel[i] + b->counts[j];
  const size_t total = rel[p];
  char *tmp = malloc(total ? total : 1);
  if (!tmp) {
    free(rel);
    return cpli_fail(CPL_ERR_NOMEM, "out of memory staging %zu bytes", total);
  }
  if (b->counts[r]) memcpy(tmp, b->base + b->displs[r], b->counts[r]); /* base may be NULL */
  int rc = CPL_OK;
  for (int k = 0; k < rounds && rc == CPL_OK; k++) {
    const int s = skip[k], n = count[k];
    a->ctx->xstep = k;
    rc = cpli_xfer(a->comm, tmp, rel[n], (r - s + p) % p, tmp + rel[s], rel[s + n] - rel[s],
                   (r + s) % p, a->ctx);
  }
  for (int i = 1, j = r + 1 == p ? 0 : r + 1; i < p && rc == CPL_OK;
       i++, j = j + 1 == p ? 0 : j + 1)
    if (b->counts[j]) memcpy(b->base + b->displs[j], tmp + rel[i], b->counts[j]);
  free(tmp);
  free(rel);
  return rc;
}
