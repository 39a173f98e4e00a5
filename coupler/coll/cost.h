/*
 * The alpha-beta cost model and the choices made by it (cost.c). Every
 * rank must reach the same choice, so the inputs are values all ranks
 * share (p, q, byte counts) and the model parameters (CPL_ALPHA, CPL_BETA:
 * keep them equal on all ranks).
 */
#ifndef CPLI_COLL_COST_H
#define CPLI_COLL_COST_H

#include <stddef.h>

#include "coll/coll.h"
#include "sched/circulant.h"

/* Round-optimal n-block broadcast (Alg. 6, bcast_circulant.c) of `bytes`
 * over p ranks: its time with n blocks, and the n that minimises it,
 * n* = sqrt(beta bytes (q-1) / alpha), clamped to
 * [max(1, ceil(bytes / CPLI_MAX_MSG)), max(1, bytes / CPLI_CUT_MIN_PIECE)]. */
double cpli_bcast_cost(int p, size_t bytes, long long n, double alpha, double beta);
long long cpli_bcast_nblocks(int p, size_t bytes, double alpha, double beta);

/* Which circulant allgatherv variant. CPLI_CIRC_ALG7 runs as a dataflow
 * plan (rounds cut into streams of cpli_flow_chunk() bytes, no step
 * barriers) unless CPL_FLOW=0; CPLI_CIRC_ALG7_STEP is the lockstep
 * execution, one message per round, kept for comparison and tests.
 * CPLI_CIRC_RING is the circulant graph with the single skip 1: a
 * pipelined ring, dataflow. */
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
double cpli_circulant_cost(int p, size_t total_bytes, size_t max_block, double alpha, double beta);

/* The variant (CPLI_CIRC_ALG7, CPLI_CIRC_ALG9 or, where Alg. 7 wins and
 * cpli_ring_preferred_ab says so, CPLI_CIRC_RING) the model picks, and for
 * Alg. 9 the number of blocks per rank's buffer in *nblocks (else 1). */
int cpli_circulant_plan(int p, size_t total_bytes, size_t max_block, double alpha, double beta,
                        long long *nblocks);

/* Alg. 9's block count on c's group: `nblocks` if > 0, else the model's
 * best; clamped so no piece exceeds CPLI_MAX_MSG and no block is empty. */
long long cpli_alg9_nblocks(const cpli_circ *c, size_t total, size_t maxb, long long nblocks,
                            double alpha, double beta);

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
 * allgathers stay on Alg. 7. With two rounds (g = 3, 4) Alg. 7 keeps two
 * peers per direction and the share is halved: at g = 4 the full share
 * chose the ring from about 4 KiB per block, where it took 1.5 times
 * MPICH's time, and up to 32 KiB it was never ahead of Alg. 7 (emulated
 * cluster, alpha 58 us). CPL_RING (0 or 1) overrides; _ab takes the
 * group's schedule and explicit model parameters. */
#define CPLI_RING_SHARE 0.25
/* ... but never for blocks under this many bytes: their messages go out
 * whole at once, and several peers per direction lose nothing the ring
 * would save, while its start-ups stay (emulated cluster, quiet, alpha
 * 21 us: at p = 7 and 8 the rule took the ring from about 2 KiB per
 * block, which took 0.67-0.78x MPICH's time at 4 KiB; the ring 0.45-0.56x
 * at 1-4 KiB, 1.14-1.15x at 8 KiB, p = 8). */
#define CPLI_RING_MIN_BLOCK ((size_t)8 * 1024)
/* A port that sends and receives at once (a ring shift: every member
 * sends to its successor while it receives from its predecessor) moves
 * bytes slower than one stream in one direction: the calibration's shift
 * took 1.03-1.05 of a one-way stream on 5 and 8 emulated nodes and 1.11
 * on 16 (scripts/cluster/RESULTS.md). Charged to the phases of the
 * inter-group plans whose receivers pass blocks on while taking theirs
 * (fc's allgather among the receivers), so that a plan whose ports each
 * carry one stream in one direction at a time (chains) wins where the
 * bytes are the same. */
#define CPLI_DUPLEX_SHARE 0.05
/* What a round that starts on a signal pays besides the signal's two
 * start-ups: the waking of the head that sends it and of the sender that
 * waits for it. Nothing on ranks with cores of their own; on the emulated
 * cluster's 8 ranks on 2 cores, under load, about a millisecond a round
 * (4|4, chains against two-hop, ratios to the bound: 64 KiB 1.94-2.41
 * against 1.29-1.45, 16 KiB 5.9 against 2.4, 1 MiB 1.15-1.19 against
 * 1.09; quiet, 1 MiB 1.02 against 1.02-1.06). Charged to chains' rounds of
 * whole blocks (p >= q), so that it takes those only where the rounds
 * are long: blocks of about 40 ms and more. */
#define CPLI_SIGNAL_WAKE_S 0.001
int cpli_ring_preferred(int g, size_t total);
int cpli_ring_preferred_ab(const cpli_circ *c, size_t total, double alpha, double beta);
/* Start-ups Alg. 7 pays on c's group: its dependency chain when it runs
 * as a dataflow, its q rounds in lockstep (CPL_FLOW=0). */
int cpli_alg7_startups(const cpli_circ *c);

/* The rows' cost functions (algorithms.h), one per algorithm; each
 * formula is the one stated in the algorithm's own file. */
double cpli_cost_intra_circulant(int n, size_t bytes, size_t maxb, int regular, double alpha,
                                 double beta);
double cpli_cost_intra_bruck(int n, size_t bytes, size_t maxb, int regular, double alpha,
                             double beta);
double cpli_cost_intra_ring(int n, size_t bytes, size_t maxb, int regular, double alpha,
                            double beta);
double cpli_cost_intra_native(int n, size_t bytes, size_t maxb, int regular, double alpha,
                              double beta);
double cpli_cost_intra_root(int n, size_t bytes, size_t maxb, int regular, double alpha,
                            double beta);
double cpli_cost_inter_fc(int p, int q, size_t bytes, double alpha, double beta);
double cpli_cost_inter_ring(int p, int q, size_t bytes, double alpha, double beta);
double cpli_cost_inter_root(int p, int q, size_t bytes, double alpha, double beta);
double cpli_cost_inter_native(int p, int q, size_t bytes, double alpha, double beta);
double cpli_cost_inter_direct_ring(int p, int q, size_t bytes, double alpha, double beta);
double cpli_cost_inter_two_hop(int p, int q, size_t bytes, double alpha, double beta);
double cpli_cost_inter_chains(int p, int q, size_t bytes, double alpha, double beta);

/* Cost of one intra algorithm with an explicit largest block (INFINITY
 * for AUTO or an invalid value). */
double cpli_intra_cost_v(cpl_intra_algorithm a, int n, size_t bytes, size_t maxb, int regular,
                         double alpha, double beta);
/* Intra algorithm with the least modelled cost for n ranks, `bytes` in
 * total, largest block `maxb` (among the rows `auto` weighs, the first of
 * equal costs); _ab with explicit model parameters. */
cpl_intra_algorithm cpli_intra_pick(int n, size_t bytes, size_t maxb, int regular);
cpl_intra_algorithm cpli_intra_pick_ab(int n, size_t bytes, size_t maxb, int regular, double alpha,
                                       double beta);
/* What member 0 of root's broadcast sends at most: ceil(log2 n)
 * messages of the other n - 1 blocks, each at most maxb bytes. */
size_t cpli_intra_root_sends(int n, size_t maxb);
/* cpli_intra_pick's rule: root for n >= 3 where member 0 sends at most
 * root_bytes (the tuning's intra_root_bytes, 0 by default), else
 * cpli_intra_pick_ab. */
cpl_intra_algorithm cpli_intra_pick_tuned(int n, size_t bytes, size_t maxb, int regular,
                                          double alpha, double beta, size_t root_bytes);
/* cpl_intra_cost and cpl_inter_cost on the current tuning snapshot
 * (AUTO: the cost of what auto picks, for intra). */
double cpli_intra_cost(cpl_intra_algorithm a, int p, size_t bytes, double alpha, double beta);
double cpli_inter_cost(cpl_inter_algorithm a, int p, int q, size_t bytes, double alpha,
                       double beta);
/* The inter algorithm `auto` picks for p senders, q receivers and `bytes`
 * in all: the cheapest row `auto` weighs, the first of equal costs; the
 * first on the current tuning snapshot (kept per thread, as
 * cpli_intra_pick), _ab with explicit model parameters. */
cpl_inter_algorithm cpli_inter_pick(int p, int q, size_t bytes);
cpl_inter_algorithm cpli_inter_pick_ab(int p, int q, size_t bytes, double alpha, double beta);
/* cpli_inter_pick's rule: root for p, q >= 2 and blocks (bytes / p) of
 * at most root_max bytes (the tuning's inter_root_max: the calibration's
 * measured switch point, 0 by default), else cpli_inter_pick_ab. */
cpl_inter_algorithm cpli_inter_pick_tuned(int p, int q, size_t bytes, double alpha, double beta,
                                          size_t root_max);

#endif
