/*
 * Direct-ring inter-group allgather, p senders, q receivers, any sizes:
 * each sender sends its block to one receiver (its home, spread evenly),
 * and the receivers pass every block on around a ring. One dataflow plan
 * (sched/flow.h: cpli_flow_direct_ring) on the merged communicator.
 *
 * Why, next to Kang et al.'s fc: on a full-duplex network the bound is a
 * receiver's incoming link, p k bytes, and this plan puts exactly that on
 * every receiver's link (its home blocks from the senders, the rest from
 * its left neighbour), while every node talks to one peer per direction,
 * plus the senders of its home blocks. fc's p < q broadcasts keep several
 * peers per direction busy on every receiver (Traff's circulant rounds),
 * and its p > q extra senders relay every block; on the emulated cluster
 * (TCP over shaped veths, where several peers per node cost rate) both
 * stay further from the bound. The price is the pipeline's depth: a block
 * crosses up to q - 1 hops, so start-ups and the pipeline's fill grow with
 * q, and auto weighs it by the model (cost.c).
 */

#include "coll/fc_plan.h"
#include "coll/link.h"
#include "sched/plan_cache.h"

int cpli_inter_direct_ring(const cpli_inter_args *a) {
  return cpli_inter_run_model_plan(a, cpli_flow_direct_ring, -1, "direct-ring");
}

int cpli_inter_run_model_plan(const cpli_inter_args *a, cpli_inter_plan_fn fn, int tag,
                              const char *name) {
  cpli_dir *d;
  CPLI_TRY(cpli_link_dir(a->link, a->sender, a->ctx, &d));
  int lrank;
  MPI_Comm_rank(d->local, &lrank);
  const int p = a->p, q = a->q, me = a->sender ? lrank : p + lrank;
  cpli_fc_opts o;
  cpli_model_plan_opts(&o);
  /* Everything the plan depends on; fc's plans in the same cache start
   * with their chunk (>= 0), the others with their negative tag. */
  const double param[] = {tag,        (double)o.chunk, o.cut.alpha,
                          o.cut.beta, o.cut.overhead,  (double)(a->sender ? a->own_bytes : 0)};
  const size_t *counts = a->sender ? NULL : a->blk.counts,
               *displs = a->sender ? NULL : a->blk.displs;
  cpli_plan_key key; /* a key without memory caches nothing */
  cpli_plan_key_make(&key, param, 6, a->sender ? 0 : p, counts, displs);
  const cpli_inter_plan plan = {fn, p, q, me, counts, displs, a->own_bytes, &o};
  a->ctx->xstep = 0;
  const int rc = cpli_flow_run_cached(
      &d->plans, &key, cpli_inter_plan_build, &plan, (cpli_plan_what){name, me, p, q}, d->merged,
      a->sender ? NULL : a->blk.base, a->sender ? a->own : NULL, a->ctx);
  cpli_plan_key_free(&key);
  return rc;
}
