/*
 * The algorithm names, in one table: the engine's parser (and so the
 * CPL_*_ALGORITHM variables and cpl-bench), the YAML schema's `inter:` and
 * `intra:` keys, and every message that names an algorithm read them
 * here. Both groups of a link must mean the same algorithm by a name, or
 * they deadlock; a second copy could drift. Pure (no MPI calls).
 */
#ifndef CPLI_COLL_ALGORITHMS_H
#define CPLI_COLL_ALGORITHMS_H

#include "coupler.h"

extern const char *const cpli_inter_names[CPL_INTER_COUNT];
extern const char *const cpli_intra_names[CPL_INTRA_COUNT];

#endif
