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

int cpli_relative_open(const cpli_blocks *b, int p, int r, cpli_relative *x) {
  size_t total = 0;
  for (int j = 0; j < p; j++) total += b->counts[j];
  x->at = malloc(sizeof *x->at * ((size_t)p + 1) + (total ? total : 1));
  if (!x->at) return cpli_fail(CPL_ERR_NOMEM, "out of memory staging %zu bytes", total);
  x->buf = (char *)(x->at + p + 1);
  size_t at = 0;
  for (int i = 0, j = r; i < p; i++, j = j + 1 == p ? 0 : j + 1) x->at[j] = at, at += b->counts[j];
  x->at[p] = total;
  if (b->counts[r]) memcpy(x->buf, b->base + b->displs[r], b->counts[r]); /* base may be NULL */
  return CPL_OK;
}

void cpli_relative_close(cpli_relative *x, const cpli_blocks *b, int p, int r, int ok) {
  for (int j = 0; ok && j < p; j++)
    if (j != r && b->counts[j]) memcpy(b->base + b->displs[j], x->buf + x->at[j], b->counts[j]);
  free(x->at);
  x->at = NULL;
}

/* Where the block at relative position i starts; position p is the end. */
static size_t rel_at(const cpli_relative *x, int p, int r, int i) {
  return i < p ? x->at[(r + i) % p] : x->at[p];
}

int cpli_rounds_relative(const cpli_intra_args *a, int p, int r, int rounds, const int *skip,
                         const int *count) {
  cpli_relative x;
  CPLI_TRY(cpli_relative_open(&a->blk, p, r, &x));
  int rc = CPL_OK;
  for (int k = 0; k < rounds && rc == CPL_OK; k++) {
    const int s = skip[k], n = count[k];
    a->ctx->xstep = k;
    const size_t from = rel_at(&x, p, r, s);
    rc = cpli_xfer(a->comm, x.buf, rel_at(&x, p, r, n), (r - s + p) % p, x.buf + from,
                   rel_at(&x, p, r, s + n) - from, (r + s) % p, a->ctx);
  }
  cpli_relative_close(&x, &a->blk, p, r, rc == CPL_OK);
  return rc;
}
