/*
 * fc's plan options; see fc_plan.h.
 */
#include "coll/fc_plan.h"

#include "coll/cost.h"
#include "coll/tuning.h"

void cpli_fc_plan_opts(int p, int q, size_t k, size_t total, cpl_intra_algorithm intra, int pure,
                       cpli_fc_opts *o) {
  const cpli_tuning *t = cpli_tuning_now();
  *o = (cpli_fc_opts){.chunk = t->chunk, .nblocks = 1, .model = 1};
  o->cut = (cpli_cut_model){.alpha = t->alpha, .beta = t->beta, .overhead = t->overhead};
  /* Allgather phase: the ring unless the caller asked for the circulant
   * algorithm or the model finds the ring's p - 1 latencies too dear; every
   * member of a group decides from the same sizes. */
  if (!pure) {
    const int g = p >= q ? p : p + (q % p + q / p - 1) / (q / p);
    o->ring = intra == CPL_INTRA_RING || (intra == CPL_INTRA_AUTO && cpli_ring_preferred(g, total));
  }
  if (p < q) {
    /* With a fixed cut, Alg. 6 keeps the block count it had before the cut
     * model (at least one block per chunk); otherwise the model's. */
    if (o->chunk > 0) o->nblocks = cpli_bcast_nblocks(q / p + 1, k, t->alpha, t->beta);
    o->nblocks = cpli_flow_fc_nblocks(p, q, k, o);
  }
}

void cpli_model_plan_opts(cpli_fc_opts *o) {
  const cpli_tuning *t = cpli_tuning_now();
  *o = (cpli_fc_opts){.chunk = t->chunk,
                      .model = 1,
                      .cut = {.alpha = t->alpha, .beta = t->beta, .overhead = t->overhead}};
}

int cpli_inter_plan_build(cpli_flow *f, const void *plan) {
  const cpli_inter_plan *a = plan;
  return a->fn(f, a->p, a->q, a->me, a->counts, a->displs, a->own_bytes, a->o);
}
