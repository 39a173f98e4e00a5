/*
 * The direct-ring inter-group allgather as one dataflow plan; see flow.h
 * (cpli_flow_direct_ring) for what it does and coll/inter_direct_ring.c
 * for why.
 */
#include <stdlib.h>

#include "core/error.h"
#include "coupler.h"
#include "sched/flow.h"

int cpli_direct_ring_home(int b, int p, int q) { return (int)((long long)b * q / p); }

/* Blocks whose home is receiver g, as segments of buffer 0; returns n. */
static int share(int p, int q, int g, const size_t *counts, const size_t *displs, size_t *so,
                 size_t *sl) {
  int n = 0;
  for (int b = 0; b < p; b++)
    if (cpli_direct_ring_home(b, p, q) == g) so[n] = displs[b], sl[n++] = counts[b];
  return n;
}

int cpli_flow_direct_ring(cpli_flow *f, int p, int q, int me, const size_t *counts,
                          const size_t *displs, size_t own_bytes, const cpli_fc_opts *o) {
  if (p < 1 || q < 1 || me < 0 || me >= p + q)
    return cpli_fail(CPL_ERR_ARG, "direct-ring plan: rank %d of %d senders + %d receivers", me, p,
                     q);
  if (me >= p && (!counts || !displs))
    return cpli_fail(CPL_ERR_ARG, "direct-ring plan: receiver %d needs the block sizes", me - p);
  f->cut_fixed = o->chunk > 0;
  f->note_why = q > 1 ? CPLI_CUT_PIPE : CPLI_CUT_LAST;
  f->note_depth = q > 1 ? 2 : 1;
  if (me < p) { /* sender: the whole block to its home, cut as it will be forwarded */
    CPLI_TRY(cpli_flow_have(f, 1, 0, own_bytes));
    const size_t c = q > 1 ? cpli_flow_pipe_cut(o, own_bytes, 1) : 0;
    return cpli_flow_stream(f, 1, p + cpli_direct_ring_home(me, p, q), 1, 1, (size_t[]){0},
                            &own_bytes, c);
  }
  const int j = me - p;
  for (int b = 0; b < p; b++)
    if (cpli_direct_ring_home(b, p, q) == j)
      CPLI_TRY(cpli_flow_stream(f, 0, b, 0, 1, &displs[b], &counts[b],
                                q > 1 ? cpli_flow_pipe_cut(o, counts[b], 1) : 0));
  if (q == 1) return CPL_OK;
  size_t *seg = malloc(sizeof *seg * 2 * (size_t)p);
  if (!seg) return cpli_fail(CPL_ERR_NOMEM, "direct-ring plan: out of memory");
  size_t *so = seg, *sl = seg + p, smax = 0;
  for (int g = 0; g < q; g++) {
    const int n = share(p, q, g, counts, displs, so, sl);
    size_t s = 0;
    for (int i = 0; i < n; i++) s += sl[i];
    smax = s > smax ? s : smax;
  }
  /* Every step forwards what the step before brings (or, step 0, what the
   * senders are still delivering): one pipeline, cut by the largest share. */
  const size_t c = cpli_flow_pipe_cut(o, smax, 1);
  const int right = p + (j + 1) % q, left = p + (j - 1 + q) % q;
  int rc = CPL_OK;
  for (int s = 0; s + 1 < q && rc == CPL_OK; s++) {
    int n = share(p, q, (j - s + q) % q, counts, displs, so, sl);
    rc = cpli_flow_stream(f, 1, right, 0, n, so, sl, c);
    if (rc != CPL_OK) break;
    n = share(p, q, (j - 1 - s + 2 * q) % q, counts, displs, so, sl);
    rc = cpli_flow_stream(f, 0, left, 0, n, so, sl, c);
  }
  free(seg);
  return rc;
}
