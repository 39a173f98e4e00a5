/*
 * Root gathering inside one group: every member sends its block whole to
 * member 0, which broadcasts along a binomial tree (each member passes to
 * a child every block but the child's own). One dataflow plan
 * (sched/flow.h: cpli_flow_intra_root), kept in the communicator's plan
 * cache.
 *
 * Why: 2 (p - 1) messages, where Bruck, Alg. 7 and MPICH's recursive
 * doubling send p ceil(log2 p), in 1 + ceil(log2 p) hops instead of
 * ceil(log2 p). Where every message costs CPU that other ranks wait for
 * (ranks sharing cores), small blocks are faster this way; the model
 * counts hops and bytes, so only the calibration's intra_root_bytes makes
 * `auto` take it (cost.c).
 *
 * Cost: member 0's port takes the other p - 1 blocks, alpha + (m - k)
 * beta; then ceil(log2 p) hops of up to m - k bytes each, binomial.
 */
#include "coll/coll.h"
#include "sched/flow.h"
#include "sched/plan_cache.h"

typedef struct root_plan {
  int p, r;
  const size_t *counts, *displs;
} root_plan;

static int build(cpli_flow *f, const void *arg) {
  const root_plan *x = arg;
  return cpli_flow_intra_root(f, x->p, x->r, x->counts, x->displs);
}

int cpli_intra_root(const cpli_intra_args *a) {
  int p, r;
  MPI_Comm_size(a->comm, &p);
  MPI_Comm_rank(a->comm, &r);
  const root_plan x = {p, r, a->blk.counts, a->blk.displs};
  const double param[] = {-4}; /* the circulant's plans start with 1 or 7 */
  cpli_plan_key key;
  cpli_plan_key_make(&key, param, 1, p, a->blk.counts, a->blk.displs);
  a->ctx->xstep = 0;
  const int rc = cpli_flow_run_cached(a->plans, &key, build, &x, (cpli_plan_what){"root", r, p, -1},
                                      a->comm, a->blk.base, NULL, a->ctx);
  cpli_plan_key_free(&key);
  return rc;
}
