/* Algorithm names, environment overrides and the alpha-beta cost model. */
#ifndef CPLI_SELECT_H
#define CPLI_SELECT_H

#include "coll/coll.h"
#include "coll/tuning.h"

/* Model parameters: CPL_ALPHA (s) and CPL_BETA (s/byte) from the
 * environment, else defaults for a typical cluster (coll/tuning.h). */
void cpli_model_params(double *alpha, double *beta);

/* Environment override for the inter/intra algorithm; CPL_ERR_ENV with the
 * valid names if set to something unknown. AUTO when unset. */
int cpli_env_inter(cpl_inter_algorithm *out);
int cpli_env_intra(cpl_intra_algorithm *out);

/* cpl_inter_select on the values the caller's entry point has read
 * (coll/tuning.h): the environment is not read again. */
int cpli_inter_select(int p, int q, size_t bytes, const cpl_coll_options *opt,
                      cpl_inter_algorithm *out);

/* The intra algorithm asked for by the options or, overriding them, the
 * environment; AUTO if neither names one. */
int cpli_intra_requested(const cpl_coll_options *opt, cpl_intra_algorithm *out);

/* Intra algorithm with the least modelled cost for n ranks, `bytes` in
 * total, largest block `maxb`. */
cpl_intra_algorithm cpli_intra_pick(int n, size_t bytes, size_t maxb, int regular);

/* Cost of one intra algorithm with an explicit largest block. */
double cpli_intra_cost_v(cpl_intra_algorithm a, int n, size_t bytes, size_t maxb,
                         int regular, double alpha, double beta);

/* Block size both groups assume when choosing the inter-group algorithm
 * for an irregular call, whose senders do not know each other's sizes. */
#define CPLI_NOMINAL_BLOCK ((size_t)64 * 1024)

/* Dataflow plans (coll/flow_exec.c): the size of the messages streams are
 * cut into (CPL_CHUNK bytes, optional K or M suffix; default
 * CPLI_DEFAULT_CHUNK), and whether plans are used at all (CPL_FLOW=0 runs
 * the lockstep implementations instead, for A/B comparisons). Every rank
 * must see the same values. */
size_t cpli_flow_chunk(void);
int cpli_flow_enabled(void);

/* Allgather of `total` bytes among g members: run the pipelined ring
 * (skip 1 only) rather than Alg. 7's skips 1, 2, 4, ..? Both move the same
 * bytes; the ring pays g - 1 start-ups instead of ceil(log2 g) but keeps
 * one peer per direction, which TCP rewards: on the emulated cluster a
 * pattern with several peers per node loses 5-20% of the link rate
 * (all-to-all 1.20 of the bound against 1.05 for a ring shift, 5 nodes,
 * 2 MiB), and Alg. 7 lost 3-11% to the ring from 32 KiB up. The ring is
 * chosen while its extra start-ups cost at most CPLI_RING_SHARE of the
 * transfer time, (g - 1 - D) alpha <= share * beta * total (g - 1) / g,
 * where D is Alg. 7's dependency chain as a dataflow (cpli_circ_alg7_depth;
 * ceil(log2 g) in lockstep). So for g = 3 (D = 1, the ring 2) small
 * allgathers stay on Alg. 7. CPL_RING (0 or 1) overrides; _ab takes
 * the group's schedule and explicit model parameters.
 * A p < q broadcast to g members of `bytes` runs as a pipelined chain
 * rather than Alg. 6 only if CPL_FC_CHAIN=1 (slower where measured). */
#define CPLI_RING_SHARE 0.25
int cpli_ring_preferred(int g, size_t total);
int cpli_ring_preferred_ab(const cpli_circ *c, size_t total, double alpha, double beta);
/* Start-ups Alg. 7 pays on c's group: its dependency chain when it runs
 * as a dataflow, its q rounds in lockstep (CPL_FLOW=0). */
int cpli_alg7_startups(const cpli_circ *c);
int cpli_chain_preferred(int g, size_t bytes);

/* ceil(log2 n), 0 for n <= 1. */
int cpli_ceil_log2(long n);

#endif
