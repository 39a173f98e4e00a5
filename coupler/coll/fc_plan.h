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

#endif
