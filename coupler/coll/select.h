/* Algorithm names, environment overrides and the alpha-beta cost model. */
#ifndef CPLI_SELECT_H
#define CPLI_SELECT_H

#include "coll/coll.h"

/* Model parameters: CPL_ALPHA (s) and CPL_BETA (s/byte) from the
 * environment, else defaults for a typical cluster. */
void cpli_model_params(double *alpha, double *beta);

/* Environment override for the inter/intra algorithm; CPL_ERR_ENV with the
 * valid names if set to something unknown. AUTO when unset. */
int cpli_env_inter(cpl_inter_algorithm *out);
int cpli_env_intra(cpl_intra_algorithm *out);

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

/* ceil(log2 n), 0 for n <= 1. */
int cpli_ceil_log2(long n);

#endif
