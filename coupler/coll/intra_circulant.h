/*
 * Traff circulant algorithms: cost model and variant choice, shared by
 * intra_circulant.c (allgatherv, Alg. 7 / Alg. 9) and bcast_circulant.c
 * (Alg. 6). The formulas are stated at the top of intra_circulant.c.
 *
 * Every rank must reach the same choice, so the inputs are values all
 * ranks share (p, byte counts) and the model parameters, which come from
 * cpli_model_params (CPL_ALPHA / CPL_BETA: keep them equal on all ranks).
 */
#ifndef CPLI_INTRA_CIRCULANT_H
#define CPLI_INTRA_CIRCULANT_H

#include <stddef.h>

#include "coll/coll.h"

/* Which allgatherv variant. CPLI_CIRC_ALG7 runs as a dataflow plan
 * (rounds cut into streams of cpli_flow_chunk() bytes, no step barriers)
 * unless CPL_FLOW=0; CPLI_CIRC_ALG7_STEP is the lockstep execution, one
 * message per round, kept for comparison and tests. CPLI_CIRC_RING is the
 * circulant graph with the single skip 1: a pipelined ring, dataflow. */
enum {
  CPLI_CIRC_AUTO = 0,
  CPLI_CIRC_RING = 1,
  CPLI_CIRC_ALG7 = 7,
  CPLI_CIRC_ALG9 = 9,
  CPLI_CIRC_ALG7_STEP = 17
};

/* Modelled time (s) of the circulant allgatherv of `total_bytes` over p
 * ranks whose largest block is `max_block` bytes: the cheaper of Alg. 7
 * and Alg. 9 with its best block count. 0 for p <= 1. */
double cpli_circulant_cost(int p, size_t total_bytes, size_t max_block,
                           double alpha, double beta);

/* The variant (CPLI_CIRC_ALG7, CPLI_CIRC_ALG9 or, where Alg. 7 wins and
 * cpli_ring_preferred_ab says so, CPLI_CIRC_RING) the model picks, and for
 * Alg. 9 the number of blocks per rank's buffer in *nblocks (else 1). */
int cpli_circulant_plan(int p, size_t total_bytes, size_t max_block,
                        double alpha, double beta, long long *nblocks);

/* Modelled time of the n-block broadcast of `bytes` over p ranks, and the n
 * that minimises it: n* = sqrt(beta bytes (q-1) / alpha), clamped to
 * [max(1, ceil(bytes / CPLI_MAX_MSG)), max(1, bytes)]. */
double cpli_circulant_bcast_cost(int p, size_t bytes, long long n,
                                 double alpha, double beta);
long long cpli_circulant_bcast_nblocks(int p, size_t bytes, double alpha,
                                       double beta);

/* cpli_intra_circulant with the variant forced (CPLI_CIRC_AUTO: as the
 * model says) and, for Alg. 9, the block count (<= 0: as the model says).
 * For tests and benchmarks; every rank must pass the same values. */
int cpli_intra_circulant_v(const cpli_intra_args *a, int variant,
                           long long nblocks);

#endif
