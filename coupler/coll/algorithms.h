/*
 * The algorithm table, one per direction: one row per algorithm with its
 * name, whether `auto` weighs it, its restriction in words, its cost
 * (coll/cost.c) and the function that runs it (coll/inter_*.c, intra_*.c). Everything that
 * lists algorithms reads these rows: the parser (and so the
 * CPL_*_ALGORITHM variables, cpl-bench and its @i variants), the YAML
 * schema's `inter:` and `intra:` keys, the cost model and `auto`, the
 * dispatch in api.c, and the test matrix in tests/dropin/CMakeLists.txt
 * (which reads the names off the rows below: keep one row per line). Both
 * groups of a link must mean the same algorithm by a name, or they
 * deadlock; a second list could drift. Pure (no MPI calls); the run
 * column is expanded only where the MPI code is (api.c).
 *
 * X(enum, name, auto, restriction, cost, run). `auto` takes the cheapest
 * row with auto = 1, the first of equal costs (so row order is the
 * tie-break: Coupler's algorithms before MPI's own).
 */
#ifndef CPLI_COLL_ALGORITHMS_H
#define CPLI_COLL_ALGORITHMS_H

#include <stddef.h>

#include "coupler.h"

#define CPLI_INTER_TABLE(X)                                                                        \
  X(CPL_INTER_FC, "fc", 1, "", cpli_cost_inter_fc, cpli_inter_fc)                                  \
  X(CPL_INTER_RING, "ring", 0, "ring networks; never chosen by auto", cpli_cost_inter_ring,        \
    cpli_inter_ring)                                                                               \
  X(CPL_INTER_ROOT, "root", 0,                                                                     \
    "the fewest messages; never chosen by auto (the model counts hops, not messages)",             \
    cpli_cost_inter_root, cpli_inter_root)                                                         \
  X(CPL_INTER_NATIVE, "native", 1, "", cpli_cost_inter_native, cpli_inter_native)                  \
  X(CPL_INTER_DIRECT_RING, "direct-ring", 1, "", cpli_cost_inter_direct_ring,                      \
    cpli_inter_direct_ring)                                                                        \
  X(CPL_INTER_TWO_HOP, "two-hop", 1, "", cpli_cost_inter_two_hop, cpli_inter_two_hop)              \
  X(CPL_INTER_CHAINS, "chains", 1, "", cpli_cost_inter_chains, cpli_inter_chains)

#define CPLI_INTRA_TABLE(X)                                                                        \
  X(CPL_INTRA_CIRCULANT, "circulant", 1, "", cpli_cost_intra_circulant, cpli_intra_circulant)      \
  X(CPL_INTRA_BRUCK, "bruck", 1, "lockstep; auto finds circulant as cheap (CPL_RING=1 aside)",     \
    cpli_cost_intra_bruck, cpli_intra_bruck)                                                       \
  X(CPL_INTRA_RING, "ring", 1, "", cpli_cost_intra_ring, cpli_intra_ring)                          \
  X(CPL_INTRA_NATIVE, "native", 1, "", cpli_cost_intra_native, cpli_intra_native)                  \
  X(CPL_INTRA_ROOT, "root", 0,                                                                     \
    "the fewest messages; never chosen by the model (it counts hops, not messages)",               \
    cpli_cost_intra_root, cpli_intra_root)

/* Modelled seconds of one algorithm: inter-group for p senders, q
 * receivers and `bytes` in all; intra-group for n ranks, `bytes` in all,
 * largest block maxb, regular if every block has bytes / n. */
typedef double (*cpli_inter_cost_fn)(int p, int q, size_t bytes, double alpha, double beta);
typedef double (*cpli_intra_cost_fn)(int n, size_t bytes, size_t maxb, int regular, double alpha,
                                     double beta);

typedef struct cpli_inter_alg {
  const char *name;
  int autopick;            /* weighed by `auto`                  */
  const char *restriction; /* "" if none                         */
  cpli_inter_cost_fn cost; /* NULL for auto                       */
} cpli_inter_alg;

typedef struct cpli_intra_alg {
  const char *name;
  int autopick;
  const char *restriction;
  cpli_intra_cost_fn cost;
} cpli_intra_alg;

/* Indexed by the enum; row 0 is `auto` (no cost). */
extern const cpli_inter_alg cpli_inter_algs[CPL_INTER_COUNT];
extern const cpli_intra_alg cpli_intra_algs[CPL_INTRA_COUNT];
/* The names alone, for parsers that take a list of strings. */
extern const char *const cpli_inter_names[CPL_INTER_COUNT];
extern const char *const cpli_intra_names[CPL_INTRA_COUNT];

#endif
