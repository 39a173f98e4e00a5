/*
 * Root gathering as one dataflow plan, between two groups (cpli_flow_root)
 * and inside one (cpli_flow_intra_root); see flow.h for what they do and
 * coll/inter_root.c, coll/intra_root.c for why.
 */
#include <stdlib.h>

#include "core/error.h"
#include "coupler.h"
#include "sched/flow.h"

int cpli_flow_root(cpli_flow *f, int p, int q, int me, const size_t *counts, const size_t *displs,
                   size_t own_bytes, const cpli_fc_opts *o) {
  if (p < 1 || q < 1 || me < 0 || me >= p + q)
    return cpli_fail(CPL_ERR_ARG, "root plan: rank %d of %d senders + %d receivers", me, p, q);
  if (me >= p && (!counts || !displs))
    return cpli_fail(CPL_ERR_ARG, "root plan: receiver %d needs the block sizes", me - p);
  /* The blocks travel to receiver 0 whole, whatever the cut: a block of
   * another size than it expects then never fits its receive by chance
   * (MPI_ERR_TRUNCATE there), as pieces cut from each end's own length
   * could. The broadcast still starts with the first block in. */
  f->note_why = CPLI_CUT_PORT; /* and receiver 0's port takes p blocks in all */
  f->note_depth = 1;
  if (me < p) {
    CPLI_TRY(cpli_flow_have(f, 1, 0, own_bytes));
    return cpli_flow_stream(f, 1, p, 1, 1, (size_t[]){0}, &own_bytes, 0);
  }
  const int j = me - p;
  if (j == 0)
    for (int b = 0; b < p; b++)
      CPLI_TRY(cpli_flow_stream(f, 0, b, 0, 1, &displs[b], &counts[b], 0));
  if (q == 1) return CPL_OK;
  size_t bytes = 0;
  for (int b = 0; b < p; b++) bytes += counts[b];
  cpli_circ c;
  CPLI_TRY(cpli_circ_init(&c, q));
  int *rank_of = malloc(sizeof *rank_of * (size_t)q);
  if (!rank_of) return cpli_fail(CPL_ERR_NOMEM, "root plan: out of memory for %d receivers", q);
  for (int g = 0; g < q; g++) rank_of[g] = p + g;
  const int rc = cpli_flow_bcast_segs(f, &c, j, rank_of, 0, p, displs, counts,
                                      cpli_flow_bcast_nblocks(bytes, cpli_ceil_log2(q), o));
  free(rank_of);
  return rc;
}

/* The blocks of all p members but `skip`, in order, as segments of one
 * stream; returns how many (zero-length blocks left out). */
static int all_but(int p, int skip, const size_t *counts, const size_t *displs, size_t *off,
                   size_t *len) {
  int n = 0;
  for (int b = 0; b < p; b++)
    if (b != skip && counts[b]) off[n] = displs[b], len[n++] = counts[b];
  return n;
}

int cpli_flow_intra_root(cpli_flow *f, int p, int r, const size_t *counts, const size_t *displs) {
  if (p < 1 || r < 0 || r >= p || !counts || !displs)
    return cpli_fail(CPL_ERR_ARG, "intra root plan: member %d of %d", r, p);
  CPLI_TRY(cpli_flow_have(f, 0, displs[r], counts[r]));
  if (p == 1) return CPL_OK;
  size_t *off = malloc(sizeof *off * 2 * (size_t)p);
  if (!off) return cpli_fail(CPL_ERR_NOMEM, "intra root plan: out of memory for %d members", p);
  size_t *len = off + p;
  int rc = CPL_OK;
  if (r != 0) /* every block whole to member 0 */
    rc = cpli_flow_stream(f, 1, 0, 0, 1, &displs[r], &counts[r], 0);
  else
    for (int b = 1; b < p && rc == CPL_OK; b++)
      rc = cpli_flow_stream(f, 0, b, 0, 1, &displs[b], &counts[b], 0);
  /* Binomial broadcast from 0: member r takes everything but its own
   * block from r - lowbit(r) and passes to r + 2^j (2^j < lowbit(r))
   * everything but that member's block, the largest subtree first. */
  int top = 1;
  if (r == 0)
    while (top < p) top <<= 1;
  else top = r & -r;
  if (rc == CPL_OK && r != 0)
    rc = cpli_flow_stream(f, 0, r - top, 0, all_but(p, r, counts, displs, off, len), off, len, 0);
  for (int m = top >> 1; m > 0 && rc == CPL_OK; m >>= 1)
    if (r + m < p)
      rc = cpli_flow_stream(f, 1, r + m, 0, all_but(p, r + m, counts, displs, off, len), off, len,
                            0);
  free(off);
  return rc;
}
