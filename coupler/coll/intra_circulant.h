/*
 * Traff circulant allgatherv with its variant forced. The formulas are
 * stated at the top of intra_circulant.c; the cost model and the variant
 * choice are in coll/cost.c.
 */
#ifndef CPLI_INTRA_CIRCULANT_H
#define CPLI_INTRA_CIRCULANT_H

#include <stddef.h>

#include "coll/coll.h"
#include "coll/cost.h"

/* cpli_intra_circulant with the variant forced (CPLI_CIRC_AUTO: as the
 * model says) and, for Alg. 9, the block count (<= 0: as the model says).
 * For tests and benchmarks; every rank must pass the same values. */
int cpli_intra_circulant_v(const cpli_intra_args *a, int variant, long long nblocks);

#endif
