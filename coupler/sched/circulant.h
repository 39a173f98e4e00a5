/*
 * Traff's circulant-graph broadcast schedules (pure: no MPI calls).
 *
 * J. L. Traff, "(Poly)Logarithmic Time Construction of Round-optimal n-Block
 * Broadcast Schedules for Broadcast and irregular Allgather in MPI", 2022:
 * Algorithm 1 (skips), 2 (baseblock), 4 (receive schedule, with the three
 * fixes of ERRATA.md), 5 (send schedule). Algorithm 3 (RANGEBLOCKS) is not
 * used: "which baseblocks occur in ranks [a, b]" is answered from prefix
 * counts, either per rank from the recursive structure of the baseblock
 * sequence (O(q^2) per query, O(q) memory) or, for the full schedule, from
 * a (q+1) x (p+1) prefix-count table (O(q) per query).
 *
 * Conventions (as in the paper's Table 1): q = ceil(log2 p), skips[0..q]
 * with skips[q] = p; the graph has edges r -> r + skips[k] (mod p). In
 * round k of each phase of q rounds, rank r (root 0) receives block
 * recv[k] from r - skips[k] and sends send[k] to r + skips[k]. Entries are
 * relative to the phase: b >= 0 is block b of this phase (the rank's own
 * baseblock), b < 0 is block b + q of the previous phase. The root's
 * baseblock is a convention: we use q (the errata's "count the root as
 * block q"); Table 1 prints 0.
 *
 * Blocks of an n-block broadcast: with x = cpli_circ_offset(q, n) dummy
 * rounds, virtual round v runs from x to x + n + q - 2, uses k = v mod q,
 * and moves block e + q * (v / q) - x for schedule entry e: negative means
 * nothing moves, above n - 1 means block n - 1 (cpli_circ_block). The root
 * never receives, and nobody sends to the root: both ends skip that
 * transfer, so every non-root rank receives each block exactly once (see
 * cpli_circ_verify).
 */
#ifndef CPLI_SCHED_CIRCULANT_H
#define CPLI_SCHED_CIRCULANT_H

#include <stddef.h>
#include <stdint.h>

/* q <= 31 for any int p. */
#define CPLI_CIRC_QMAX 31

/* Per-p constants; O(q^2) space, no per-rank arrays. */
typedef struct cpli_circ {
  int p, q;
  int skips[CPLI_CIRC_QMAX + 1];      /* skips[0..q], skips[q] = p         */
  long long ssum[CPLI_CIRC_QMAX + 1]; /* ssum[i] = skips[0] + .. + skips[i] */
  /* full[k][v]: how often baseblock v occurs in ranks 1..skips[k]-1. */
  int full[CPLI_CIRC_QMAX + 1][CPLI_CIRC_QMAX];
} cpli_circ;

/* ceil(log2 n), 0 for n <= 1: the rounds of a circulant schedule (q),
 * of Bruck's and of a binomial tree. */
int cpli_ceil_log2(long n);

/* Fill *c for p >= 1 ranks (p = 1: q = 0, empty schedules).
 * CPL_ERR_ARG if p < 1. */
int cpli_circ_init(cpli_circ *c, int p);

/* Alg. 7 (regular allgather) run as a dataflow: the longest chain of
 * messages each of which forwards a block the previous one brought. Round
 * k sends offsets 0 .. d_k - 1 (d_k = skips[k+1] - skips[k]); offset j > 0
 * arrived in the round k' with skips[k'] <= j < skips[k'+1]. Rounds that
 * forward nothing start at once, so the chain (1 for p = 3, 2 for p = 5
 * and 6) can be shorter than q; 0 for p = 1. */
int cpli_circ_alg7_depth(const cpli_circ *c);

/* Baseblock of rank r (0 <= r < p): Algorithm 2 for r > 0, q for the root. */
int cpli_circ_baseblock(const cpli_circ *c, int r);

/* First k (0 <= k <= q) entries of rank r's receive schedule (corrected
 * Algorithm 4). Returns 0, or -1 if the construction found no new block
 * for some round (never happens for verified p; reported, not hidden). */
int cpli_circ_recvsched(const cpli_circ *c, int r, int k, int *recv);

/* Rank r's q-entry send schedule (Algorithm 5): send[k] is entry k of the
 * receive schedule of r + skips[k]. Returns 0 or -1 as above. */
int cpli_circ_sendsched(const cpli_circ *c, int r, int *send);

/* Schedules of all p ranks, for the irregular allgather (Algorithm 9),
 * built in O(p q^2) time with O(p q) space. Row r (relative rank r with
 * respect to the root) is recv[r * q .. r * q + q - 1], likewise send. */
typedef struct cpli_circ_full {
  cpli_circ c;
  int *base; /* p baseblocks (base[0] = q) */
  int *recv; /* p * q                      */
  int *send; /* p * q                      */
} cpli_circ_full;

/* CPL_ERR_ARG for p < 1, CPL_ERR_NOMEM, CPL_ERR_INTERNAL if the
 * construction fails (message names p, rank and round). On failure *f is
 * left empty (safe to free). */
int cpli_circ_full_init(cpli_circ_full *f, int p);
void cpli_circ_full_free(cpli_circ_full *f);

/* Number of dummy rounds x for n >= 1 blocks: x + n - 1 + q is a multiple
 * of q (0 for q = 0). */
static inline int cpli_circ_offset(int q, long long n) {
  if (q == 0) return 0;
  return (int)((q - (n - 1 + q) % q) % q);
}

/* Block moved in virtual round v for schedule entry e (see above):
 * -1 if nothing moves, else a block in 0..n-1. */
static inline long long cpli_circ_block(int q, int e, long long v, int x, long long n) {
  long long b = (long long)e + (long long)q * (v / q) - x;
  if (b < 0) return -1;
  return b > n - 1 ? n - 1 : b;
}

/* Simulate the n-block broadcast (Algorithm 6) from root 0 on the given
 * schedules of all p ranks (base[p], recv[p*q], send[p*q], as in
 * cpli_circ_full) and check:
 *  - structure: base[r] in 0..q-1 for r > 0; recv row r > 0 holds base[r]
 *    exactly once, in the round k with skips[k] <= r < skips[k+1], and
 *    q - 1 distinct entries in -q..-1; the root's row holds q distinct
 *    entries in -q..-1 and base[0] == q;
 *  - edges: send[r][k] == recv[(r + skips[k]) mod p][k], so the sender on
 *    edge r -> r + skips[k] moves exactly the block the receiver expects;
 *  - per round: a rank sends only blocks it held before the round (the
 *    root holds all), a non-root rank receives only blocks it does not hold
 *    (no duplicates at all: capping to n - 1 happens only in the last
 *    phase and only in the baseblock round, so it never duplicates);
 *  - after exactly q + n - 1 rounds every rank holds all n blocks.
 * Returns 0 if valid, CPL_ERR_INTERNAL with the first fault in `why`
 * otherwise (CPL_ERR_ARG / CPL_ERR_NOMEM for bad calls). Does not touch
 * the thread's last-error message. */
int cpli_circ_verify(const cpli_circ *c, const int *base, const int *recv, const int *send,
                     long long n, char *why, size_t whylen);

#endif
