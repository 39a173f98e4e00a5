/* Algorithm names, environment overrides and selection (the cost model
 * itself: coll/cost.h). */
#ifndef CPLI_SELECT_H
#define CPLI_SELECT_H

#include "coll/coll.h"
#include "coll/cost.h"
#include "coll/tuning.h"

/* Environment override for the inter/intra algorithm; CPL_ERR_ENV with the
 * valid names if set to something unknown. AUTO when unset. */
int cpli_env_inter(cpl_inter_algorithm *out);
int cpli_env_intra(cpl_intra_algorithm *out);

/* cpl_inter_select on the values the caller's entry point has read
 * (coll/tuning.h): the environment is not read again. */
int cpli_inter_select(int p, int q, size_t bytes, const cpl_coll_options *opt,
                      cpl_inter_algorithm *out);

/* The inter/intra algorithm asked for by the options or, overriding them,
 * the environment; AUTO if neither names one. */
int cpli_inter_requested(const cpl_coll_options *opt, cpl_inter_algorithm *out);
int cpli_intra_requested(const cpl_coll_options *opt, cpl_intra_algorithm *out);
/* For the forecasts of cpl-run --dry-run and cpl-validate: what a link's
 * algorithm `file` (not AUTO) becomes in the run, in words: the
 * environment's override, or why the run would fail; NULL if it stands. */
const char *cpli_inter_forecast(cpl_inter_algorithm file, char *buf, size_t n);

/* Block size both groups assume when choosing the inter-group algorithm
 * for an irregular call, whose senders do not know each other's sizes. */
#define CPLI_NOMINAL_BLOCK ((size_t)64 * 1024)

/* The choice rule both groups of an inter-group call apply (the engine
 * and the drop-in alike, or they would deadlock): cpli_inter_select on
 * p * block bytes when every block has `block` bytes (regular, or one
 * sender: `block` is its block), else on p nominal blocks. */
int cpli_inter_choose(int p, int q, size_t block, int regular, const cpl_coll_options *opt,
                      cpl_inter_algorithm *out);

/* Does native, given `total` bytes from all senders, hand the call to fc?
 * Only when auto chose it (by_auto) and the blocks pass int counts
 * (CPLI_NATIVE_MAX); asked for by name, native refuses such a call. */
int cpli_native_to_fc(int by_auto, size_t total);

/* The algorithm cpli_inter_allgatherv_bytes will run for p blocks, the
 * first of `first` bytes, together `total`: its choice (cpli_inter_choose
 * on an irregular call) and native's switch to fc. For planners (the data
 * layer's cost of the allgather delivery, the tools' dry runs); the
 * engine reports what ran. */
int cpli_inter_bytes_algorithm(int p, int q, size_t first, size_t total,
                               const cpl_coll_options *opt, cpl_inter_algorithm *out);

/* A list of inter-group algorithms, e.g. what one step's allgathers ran
 * (one per dataset): each name once, in the order added, joined by "+"
 * ("fc", "fc+direct-ring"). Room for every algorithm's name. */
#define CPLI_ALGS_LEN 96
void cpli_inter_algs_add(char algs[CPLI_ALGS_LEN], cpl_inter_algorithm a);

/* Add to algs what the data layer's allgather of a dataset of `total`
 * bytes will run from p to q ranks, known before any run (a workflow's
 * declarations, the current environment): one producer's block is the
 * whole dataset; several producers' blocks do not matter (auto chooses for
 * nominal blocks). CPL_ERR_ENV when the environment or tuning file would
 * fail every collective. */
int cpli_inter_dataset_algs_add(int p, int q, size_t total, const cpl_coll_options *opt,
                                char algs[CPLI_ALGS_LEN]);

#endif
