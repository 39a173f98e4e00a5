/*
 * The options of fc's dataflow plan (sched/flow.h: cpli_fc_opts) from the
 * tuning snapshot and the model: the allgather phase (ring or Alg. 7),
 * the p < q broadcasts, and how streams are cut (sched/cut.h, or
 * CPL_CHUNK). Pure, so cpl-sched --explain shows exactly what the library
 * runs. Every input is known to every rank of the plan.
 */
#ifndef CPLI_COLL_FC_PLAN_H
#define CPLI_COLL_FC_PLAN_H

#include <stddef.h>

#include "coupler.h"
#include "sched/flow.h"

/* p senders, q receivers; k: the block this rank's broadcast group moves
 * (p < q; a sender's own, a receiver's block j mod p); total: all p
 * blocks (ignored by pure senders, who pass pure = 1). */
void cpli_fc_plan_opts(int p, int q, size_t k, size_t total, cpl_intra_algorithm intra, int pure,
                       cpli_fc_opts *o);

/* The options of the plans cut by the model alone (direct-ring, two-hop):
 * the tuning snapshot's cut parameters and fixed chunk. */
void cpli_model_plan_opts(cpli_fc_opts *o);

/* An inter-group plan builder (cpli_flow_fc, cpli_flow_direct_ring) with
 * its arguments, for cpli_flow_run_cached: cpli_inter_plan_build(f, &plan). */
typedef int (*cpli_inter_plan_fn)(cpli_flow *f, int p, int q, int me, const size_t *counts,
                                  const size_t *displs, size_t own_bytes, const cpli_fc_opts *o);
typedef struct cpli_inter_plan {
  cpli_inter_plan_fn fn;
  int p, q, me;
  const size_t *counts, *displs;
  size_t own_bytes;
  const cpli_fc_opts *o;
} cpli_inter_plan;
int cpli_inter_plan_build(cpli_flow *f, const void *plan);

#endif
