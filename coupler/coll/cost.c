/*
 * The alpha-beta cost model, in one place: every formula the engine
 * chooses by (inter- and intra-group algorithms, the circulant variants,
 * the n-block broadcast, the ring-or-Alg. 7 rule). Sending m bytes between
 * two processes costs alpha + m beta; a process sends one and receives
 * one message at a time (the model of Kang et al. and Traff). Each formula
 * is the one stated at the top of the algorithm's own file. Pure: no MPI
 * calls, the parameters come from the tuning snapshot (coll/tuning.h).
 */
#include "coll/cost.h"

#include <math.h>

#include "coll/algorithms.h"
#include "coll/tuning.h"
#include "sched/cut.h"
#include "sched/flow.h"

/* ------------------------------------------- n-block broadcast (Alg. 6) */

double cpli_bcast_cost(int p, size_t bytes, long long n, double alpha, double beta) {
  if (p <= 1 || bytes == 0) return 0;
  if (n < 1) n = 1;
  const int q = cpli_ceil_log2(p);
  return (double)(n - 1 + q) * (alpha + beta * (double)bytes / (double)n);
}

long long cpli_bcast_nblocks(int p, size_t bytes, double alpha, double beta) {
  if (p <= 1 || bytes == 0) return 1;
  const int q = cpli_ceil_log2(p);
  const long long lo = (long long)((bytes + CPLI_MAX_MSG - 1) / CPLI_MAX_MSG);
  /* no block under a stream's smallest piece: an absurd model (CPL_BETA
   * 1e300) cut 64 KiB into 1-byte blocks, 27 s a call */
  const size_t most = bytes / CPLI_CUT_MIN_PIECE;
  const long long hi = most < ((size_t)1 << 40) ? (long long)most : (long long)1 << 40;
  const double n = q > 1 ? sqrt(beta * (double)bytes * (q - 1) / alpha) : 1;
  long long ni = n >= (double)hi ? hi : llround(n);
  if (ni < lo) ni = lo;
  if (ni < 1) ni = 1;
  return ni;
}

/* --------------------------------------------- circulant allgatherv */

int cpli_alg7_startups(const cpli_circ *c) {
  return cpli_flow_enabled() ? cpli_circ_alg7_depth(c) : c->q;
}

int cpli_ring_preferred_ab(const cpli_circ *c, size_t total, double alpha, double beta) {
  const int e = cpli_tuning_now()->ring;
  if (e >= 0) return e;
  const int g = c->p;
  if (g <= 2) return 0; /* one exchange either way */
  if (total / (size_t)g < CPLI_RING_MIN_BLOCK) return 0;
  /* Two rounds (g = 3, 4) are two peers per direction, half the loss. */
  const double share = c->q >= 3 ? CPLI_RING_SHARE : CPLI_RING_SHARE / 2;
  return (g - 1 - cpli_alg7_startups(c)) * alpha <= share * beta * (double)total * (g - 1) / g;
}

int cpli_ring_preferred(int g, size_t total) {
  double alpha, beta;
  cpli_model_params(&alpha, &beta);
  cpli_circ c;
  if (cpli_circ_init(&c, g) != CPL_OK) return 0;
  return cpli_ring_preferred_ab(&c, total, alpha, beta);
}

/* Measured on the development machine: building the full schedule costs
 * about 5 ns per p q^2 (0.7 ms for p = 2000), an MPI hindexed piece about
 * 10 ns to describe. */
#define CIRC_SCHED_COST 5e-9
#define CIRC_PIECE_COST 1e-8

static double alg7_cost(const cpli_circ *c, double m, double maxb, double alpha, double beta) {
  double t = cpli_alg7_startups(c) * alpha;
  for (int k = 0; k < c->q; k++)
    t += beta * fmin(m, (double)(c->skips[k + 1] - c->skips[k]) * maxb);
  return t;
}

static long long ceil_div(size_t a, size_t b) { return (long long)((a + b - 1) / b); }

/* Block count range for Alg. 9: no block piece and no round's message over
 * CPLI_MAX_MSG, and no more blocks than bytes in the largest buffer. */
static void alg9_range(size_t m, size_t maxb, long long *lo, long long *hi) {
  long long a = ceil_div(maxb, CPLI_MAX_MSG), b = ceil_div(m, CPLI_MAX_MSG);
  *lo = a > b ? a : b;
  if (*lo < 1) *lo = 1;
  *hi = maxb > 0 ? (long long)(maxb < (size_t)1 << 40 ? maxb : (size_t)1 << 40) : 1;
  if (*hi < *lo) *hi = *lo;
}

static double alg9_cost(const cpli_circ *c, double m, long long n, double alpha, double beta) {
  const double a = alpha + 2 * CIRC_PIECE_COST * c->p;
  return (double)(n + c->q - 1) * (a + beta * m / (double)n) +
         CIRC_SCHED_COST * c->p * (double)c->q * c->q;
}

static long long alg9_best_n(const cpli_circ *c, size_t m, size_t maxb, double alpha, double beta) {
  const double a = alpha + 2 * CIRC_PIECE_COST * c->p;
  long long lo, hi;
  alg9_range(m, maxb, &lo, &hi);
  double n = c->q > 1 ? sqrt(beta * (double)m * (c->q - 1) / a) : 1;
  long long ni = n > (double)hi ? hi : (long long)llround(n);
  return ni < lo ? lo : ni > hi ? hi : ni;
}

long long cpli_alg9_nblocks(const cpli_circ *c, size_t total, size_t maxb, long long nblocks,
                            double alpha, double beta) {
  long long lo, hi;
  alg9_range(total, maxb, &lo, &hi);
  long long n = nblocks > 0 ? nblocks : alg9_best_n(c, total, maxb, alpha, beta);
  if (n < lo) n = lo; /* never a piece over CPLI_MAX_MSG */
  if (n > hi) n = hi;
  return n;
}

int cpli_circulant_plan(int p, size_t total_bytes, size_t max_block, double alpha, double beta,
                        long long *nblocks) {
  *nblocks = 1;
  if (p <= 2) return CPLI_CIRC_ALG7; /* one round: nothing to pipeline */
  cpli_circ c;
  if (cpli_circ_init(&c, p) != CPL_OK) return CPLI_CIRC_ALG7;
  const long long n = alg9_best_n(&c, total_bytes, max_block, alpha, beta);
  const double t7 = alg7_cost(&c, (double)total_bytes, (double)max_block, alpha, beta);
  const double t9 = alg9_cost(&c, (double)total_bytes, n, alpha, beta);
  if (t9 < t7) {
    *nblocks = n;
    return CPLI_CIRC_ALG9;
  }
  if (cpli_ring_preferred_ab(&c, total_bytes, alpha, beta)) return CPLI_CIRC_RING;
  /* A small allgather whose rounds form one chain gains nothing from the
   * dataflow: lockstep on a relative-order buffer (coll/relative.c). */
  if (total_bytes <= CPLI_RELATIVE_MAX && cpli_alg7_startups(&c) == c.q) return CPLI_CIRC_ALG7_STEP;
  return CPLI_CIRC_ALG7;
}

double cpli_circulant_cost(int p, size_t total_bytes, size_t max_block, double alpha, double beta) {
  if (p <= 1) return 0;
  cpli_circ c;
  if (cpli_circ_init(&c, p) != CPL_OK) return INFINITY;
  long long n;
  const int v = cpli_circulant_plan(p, total_bytes, max_block, alpha, beta, &n);
  if (v == CPLI_CIRC_ALG9) return alg9_cost(&c, (double)total_bytes, n, alpha, beta);
  if (v == CPLI_CIRC_RING) /* pipelined: latencies overlap the transfer */
    return (p - 1) * alpha + beta * fmin((double)total_bytes, (p - 1) * (double)max_block);
  return alg7_cost(&c, (double)total_bytes, (double)max_block, alpha, beta);
}

/* ------------------------------------------------ algorithm costs */

/* MPICH 4.0's broadcast of m bytes among g processes (MPIR_Bcast_intra_auto
 * and its nonblocking twin): binomial tree below 12 KiB or 8 processes,
 * else scatter then recursive-doubling allgather (below 512 KiB, g a power
 * of two) or ring allgather. */
static double bcast_mpich(int g, double m, double alpha, double beta) {
  if (g <= 1) return 0;
  const int L = cpli_ceil_log2(g);
  if (m < 12288 || g < 8) return L * (alpha + beta * m);
  const double scatter = L * alpha + beta * m * (g - 1) / g;
  if (m < 524288 && (g & (g - 1)) == 0) return 2 * scatter;
  return scatter + (g - 1) * alpha + beta * m * (g - 1) / g;
}

/* Bytes on the critical path of a lockstep doubling allgather (Bruck,
 * MPICH's recursive doubling) among n ranks: ceil(log2 n) rounds, round k
 * sends min(2^k, n - 2^k) blocks to one peer. Nothing overlaps, so every
 * round costs its largest message, and with irregular blocks one big
 * block is forwarded in every round that holds it: a round costs up to
 * min(m, blocks * maxb), not a share of m. Regular: m - m/n in all. */
static double doubling_bytes(int n, double m, double maxb, int regular) {
  if (regular) return m - m / n;
  double b = 0;
  for (long d = 1; d < n; d *= 2) b += fmin(m, (double)(d < n - d ? d : n - d) * maxb);
  return b;
}

double cpli_cost_intra_circulant(int n, size_t bytes, size_t maxb, int regular, double alpha,
                                 double beta) {
  if (n <= 1) return 0;
  /* the best of Alg. 7 and Alg. 9, or the ring where preferred */
  return cpli_circulant_cost(n, bytes, regular ? bytes / (size_t)n : maxb, alpha, beta);
}

double cpli_cost_intra_bruck(int n, size_t bytes, size_t maxb, int regular, double alpha,
                             double beta) {
  if (n <= 1) return 0;
  /* Alg. 7's rounds run in lockstep (intra_bruck.c): its ceil(log2 n)
   * start-ups without the dataflow's overlap, and its several peers per
   * direction, which cost the link rate the ring rule charges Alg. 7 for
   * (CPLI_RING_SHARE of the transfer, cpli_ring_preferred_ab). */
  return cpli_ceil_log2(n) * alpha +
         (1 + CPLI_RING_SHARE) * beta * doubling_bytes(n, (double)bytes, (double)maxb, regular);
}

double cpli_cost_intra_ring(int n, size_t bytes, size_t maxb, int regular, double alpha,
                            double beta) {
  if (n <= 1) return 0;
  const double k = regular ? (double)bytes / n : (double)maxb;
  return (n - 1) * (alpha + beta * k); /* lockstep: the big block one hop a step */
}

double cpli_cost_intra_native(int n, size_t bytes, size_t maxb, int regular, double alpha,
                              double beta) {
  if (n <= 1) return 0;
  /* MPICH: recursive doubling / Bruck below 80 KiB total, ring above.
   * Both keep several peers per direction, so they pay the ring rule's
   * charge as Bruck does: without it native undercut the circulant
   * allgather wherever the ring rule had chosen the ring (p = 8 at 8 KiB
   * on the emulated cluster: native 0.85-0.91x MPICH's blocking
   * MPI_Allgather, the ring 1.10-1.18x). */
  const double m = (double)bytes;
  if (m < 81920)
    return cpli_ceil_log2(n) * alpha +
           (1 + CPLI_RING_SHARE) * beta * doubling_bytes(n, m, (double)maxb, regular);
  return cpli_cost_intra_ring(n, bytes, maxb, regular, alpha, beta);
}

double cpli_cost_intra_root(int n, size_t bytes, size_t maxb, int regular, double alpha,
                            double beta) {
  (void)maxb, (void)regular;
  if (n <= 1) return 0;
  /* member 0 takes the other blocks, then a binomial broadcast of about
   * all of them per hop (intra_root.c) */
  const double m = (double)bytes;
  return alpha + beta * m + cpli_ceil_log2(n) * (alpha + beta * m);
}

/* Strictly cheaper, beyond rounding: two formulas that sum the same terms
 * in another order (fc's ring for q = 1 and native) are a tie, and a tie
 * goes to the earlier row. */
static int cheaper(double c, double best) { return c < best * (1 - 1e-9); }

double cpli_intra_cost_v(cpl_intra_algorithm a, int n, size_t bytes, size_t maxb, int regular,
                         double alpha, double beta) {
  if (a <= CPL_INTRA_AUTO || a >= CPL_INTRA_COUNT) return INFINITY;
  return cpli_intra_algs[a].cost(n, bytes, maxb, regular, alpha, beta);
}

cpl_intra_algorithm cpli_intra_pick_ab(int n, size_t bytes, size_t maxb, int regular, double alpha,
                                       double beta) {
  cpl_intra_algorithm best = CPL_INTRA_CIRCULANT;
  double bc = INFINITY;
  for (int a = 1; a < CPL_INTRA_COUNT; a++) {
    if (!cpli_intra_algs[a].autopick) continue;
    const double c = cpli_intra_algs[a].cost(n, bytes, maxb, regular, alpha, beta);
    if (cheaper(c, bc)) bc = c, best = (cpl_intra_algorithm)a;
  }
  return best;
}

/* Weighing every row costs more than a small allgather's own work
 * (several circulant schedules built per call), and a loop calls with the
 * same shape again and again: the pickers keep their last answer per
 * thread, as long as the tuning snapshot (its version: the environment
 * and tuning file) and the shape are the same. */
typedef struct pick_memo {
  unsigned version; /* 0: empty */
  int a, b;
  size_t c, d;
  int pick;
} pick_memo;

/* Is the memo's answer the one for this shape? If not, it takes the
 * shape; the caller then stores the new answer. */
static int memo_hit(pick_memo *m, unsigned version, int a, int b, size_t c, size_t d) {
  if (m->version == version && m->a == a && m->b == b && m->c == c && m->d == d) return 1;
  *m = (pick_memo){.version = version, .a = a, .b = b, .c = c, .d = d};
  return 0;
}

cpl_intra_algorithm cpli_intra_pick(int n, size_t bytes, size_t maxb, int regular) {
  static _Thread_local pick_memo last;
  const cpli_tuning *t = cpli_tuning_now();
  if (!memo_hit(&last, t->version, n, regular, bytes, maxb))
    last.pick =
        cpli_intra_pick_tuned(n, bytes, maxb, regular, t->alpha, t->beta, t->intra_root_bytes);
  return (cpl_intra_algorithm)last.pick;
}

size_t cpli_intra_root_sends(int n, size_t maxb) {
  return n < 2 ? 0 : (size_t)cpli_ceil_log2(n) * (size_t)(n - 1) * maxb;
}

cpl_intra_algorithm cpli_intra_pick_tuned(int n, size_t bytes, size_t maxb, int regular,
                                          double alpha, double beta, size_t root_bytes) {
  /* root sends 2 (n - 1) messages, the others n ceil(log2 n) (more from
   * n = 3 on; at n = 2 one exchange either way): as for the inter-group
   * rule, where the calibration found the fewest messages fastest. The
   * bound is on what member 0 sends, which grows with n as well as with
   * the blocks (emulated cluster: root won at 1 KiB for p = 3 and 5 and
   * lost from 512 B at p = 8, where member 0 sends 3 messages of 7
   * blocks). */
  if (n >= 3 && root_bytes > 0 && cpli_intra_root_sends(n, maxb) <= root_bytes)
    return CPL_INTRA_ROOT;
  return cpli_intra_pick_ab(n, bytes, maxb, regular, alpha, beta);
}

double cpli_intra_cost(cpl_intra_algorithm a, int p, size_t bytes, double alpha, double beta) {
  const size_t k = p ? bytes / (size_t)p : 0;
  if (a == CPL_INTRA_AUTO) a = cpli_intra_pick_ab(p, bytes, k, 1, alpha, beta);
  return cpli_intra_cost_v(a, p, bytes, k, 1, alpha, beta);
}

double cpli_cost_inter_fc(int p, int q, size_t bytes, double alpha, double beta) {
  const double k = p ? (double)bytes / p : 0;
  if (p >= q) /* one inter step, then an allgather among p, whose members
               * send and receive at once (CPLI_DUPLEX_SHARE) */
    return alpha + beta * k + cpli_intra_cost(CPL_INTRA_AUTO, p, bytes, alpha, beta) +
           CPLI_DUPLEX_SHARE * beta * (p - 1) * k;
  /* Traff's broadcast among more than two keeps several peers per
   * direction busy on every member, which costs link rate as it does
   * Alg. 7 (CPLI_RING_SHARE; 1|7 at 1 MiB on the emulated cluster: 1.55-1.88
   * of the bound, against 1.05 unweighted). */
  const int g = q / p + 1;
  const double bb = g > 2 ? (1 + CPLI_RING_SHARE) * beta : beta;
  return cpli_bcast_cost(g, (size_t)k, cpli_bcast_nblocks(g, (size_t)k, alpha, beta), alpha, bb) +
         cpli_intra_cost(CPL_INTRA_AUTO, p + (q % p ? (q % p + q / p - 1) / (q / p) : 0), bytes,
                         alpha, beta);
}

double cpli_cost_inter_ring(int p, int q, size_t bytes, double alpha, double beta) {
  /* p + q/2 steps of one block each (even sizes; odd sizes round up). */
  const double k = p ? (double)bytes / p : 0;
  const int pe = p + (p & 1), qe = q + (q & 1);
  return (pe + qe / 2) * (alpha + beta * k);
}

double cpli_cost_inter_root(int p, int q, size_t bytes, double alpha, double beta) {
  (void)p;
  /* every block straight to receiver 0 (its port takes all m bytes, the
   * start-ups overlap), then Traff's broadcast among the receivers
   * (inter_root.c) */
  const double m = (double)bytes;
  return alpha + beta * m +
         cpli_bcast_cost(q, bytes, cpli_bcast_nblocks(q, bytes, alpha, beta), alpha, beta);
}

double cpli_cost_inter_native(int p, int q, size_t bytes, double alpha, double beta) {
  (void)p;
  /* MPICH's MPI_Iallgatherv on an intercommunicator: every sender sends
   * straight to receiver 0 (an intercommunicator gatherv), then receiver 0
   * broadcasts locally; no local gather, no root-to-root hop. The p
   * messages arrive at once and their start-ups overlap: receiver 0's
   * port is the bound, one start-up and m bytes. Measured on the emulated
   * cluster (8 nodes, 400 mbit/s): 3|1 and 7|1 at 1-4 MiB native took
   * 1.00-1.01 of that bound, fc 1.15-1.32 (scripts/cluster/RESULTS.md).
   * Running MPICH's nonblocking schedule costs more start-ups than its
   * one round: at 1-4 KiB native took 0.13-0.48 ms where two-hop, the
   * same streams posted directly, took 0.05-0.26; two more alpha. */
  const double m = (double)bytes;
  return 3 * alpha + beta * m + bcast_mpich(q, m, alpha, beta);
}

double cpli_cost_inter_direct_ring(int p, int q, size_t bytes, double alpha, double beta) {
  if (p < 1 || q < 1) return 0;
  /* A receiver's port takes every byte once (its home blocks from the
   * senders, the others from its ring neighbour), in one pipeline of q
   * hops cut as the plan cuts it (sched/cut.h, by the largest home's
   * bytes; the per-message overhead taken as alpha, which is all this
   * signature knows): q start-ups and q - 1 pieces of fill
   * (inter_direct_ring.c). */
  const size_t k = bytes / (size_t)p, home = k * (size_t)((p + q - 1) / q);
  const cpli_cut_model cut = {.alpha = alpha, .beta = beta, .overhead = alpha};
  size_t c = cpli_cut_chunk(home, cpli_cut_pieces(&cut, home, 2));
  if (c == 0 || q == 1) c = home;
  double t = q * alpha + beta * ((double)bytes + (double)(q - 1) * (double)c);
  /* For 1 < p < q a home takes its direct block while the ring already
   * brings it another, at half rate each, and the receivers after it wait:
   * about one block time more (2|6 at 1 MiB on the emulated cluster: 1.46
   * of the bound, 3|5: 1.29-1.37). For p > q a home takes several senders
   * at once, which costs the rate that several peers per node cost. */
  if (p > 1 && p < q) t += beta * (double)k;
  if (p > q) t += CPLI_RING_SHARE * beta * (double)home;
  /* p >= q: the ring's members send while they take their blocks, as in
   * fc (CPLI_DUPLEX_SHARE; p < q: every plan's receivers do) */
  if (p >= q) t += CPLI_DUPLEX_SHARE * beta * ((double)bytes - (double)home);
  return t;
}

double cpli_cost_inter_two_hop(int p, int q, size_t bytes, double alpha, double beta) {
  if (p < 1 || q < 1) return 0;
  /* Every receiver's port takes every byte once; a sender sends its block
   * to r holders, and the busiest receiver passes on `fan` blocks
   * (sched/flow.h: cpli_flow_two_hop). The busiest port sets the rate; a
   * relayed block adds a start-up and one piece of fill. */
  const size_t k = bytes / (size_t)p;
  const int r = cpli_two_hop_holders(p, q, k, beta);
  const long long fan = cpli_two_hop_fanout(p, q, r);
  const double port = (double)(fan > p ? fan : p) * (double)k;
  /* With r = p > 1 the senders' ports are as full as the receivers',
   * each shared by p streams, and the fair shares at the two ends of a
   * stream do not line up at first: rate is lost as several peers per
   * node lose it elsewhere (emulated cluster, 1 MiB: 4|4 1.18 of the
   * bound, 3|5 1.21, 2|6 1.26-1.43; with room at the senders, p > q,
   * 1.00-1.04 at every size from 128 KiB). Blocks long enough to go to p
   * holders by choice outlast that (4|4 at 16 MiB: 1.03). But p < q
   * receivers that each take CPLI_TWO_HOP_MANY or more streams at once
   * lose it however long the blocks (1 MiB: 8 nodes at 400 mbit/s, 3|5
   * 1.11-1.14; 16 nodes, 87-350 ms a block at 100 and 25 mbit/s, 4|12
   * 1.30-1.34, 7|9 1.14-1.17; chains, one stream per port, 1.04-1.07,
   * 1.02-1.03, 1.02-1.05). Nor do p = q blocks long enough to go to p
   * holders: 8|8 at 1 MiB on 16 nodes, 85-350 ms a block at 100 and
   * 25 mbit/s, 1.09-1.13 (chains 1.00 at 25 mbit/s). */
  const int both_full = p > 1 && r == p;
  const int many_in = p < q && p >= CPLI_TWO_HOP_MANY;
  const double bb = both_full || many_in ? (1 + CPLI_RING_SHARE) * beta : beta;
  double t = alpha + bb * port;
  if (r < q) {
    const cpli_cut_model cut = {.alpha = alpha, .beta = beta, .overhead = alpha};
    const size_t c = cpli_cut_chunk(k, cpli_cut_pieces(&cut, k, 2));
    t += alpha + beta * (double)(c ? c : k);
    /* p >= q: the relaying receivers send while they take their blocks */
    if (p >= q) t += CPLI_DUPLEX_SHARE * beta * (double)fan * (double)k;
  }
  return t;
}

double cpli_cost_inter_chains(int p, int q, size_t bytes, double alpha, double beta) {
  if (p < 1 || q < 1) return 0;
  /* Every port carries p blocks, one stream at a time. A head signals the
   * next round's sender when one piece of a block is left to come: with
   * blocks in several pieces the rounds follow one another without a gap,
   * and the pipeline's fill is paid once, a start-up per hop and d - 1
   * pieces; a block in one piece (chains of one, p >= q, move blocks
   * whole) makes every later round wait for the signal, two start-ups
   * and the waking of two ranks (CPLI_SIGNAL_WAKE_S).
   * Its receivers never send at p >= q: no CPLI_DUPLEX_SHARE. */
  const size_t k = bytes / (size_t)p;
  const int d = cpli_chains_depth(p, q);
  size_t c = k;
  if (d > 1) {
    const cpli_cut_model cut = {.alpha = alpha, .beta = beta, .overhead = alpha};
    c = cpli_cut_chunk(k, cpli_cut_pieces(&cut, k, 2));
    if (c == 0 || c > k) c = k;
  }
  const double waits = c < k ? 0 : (p - 1) * (2 * alpha + CPLI_SIGNAL_WAKE_S);
  return d * alpha + waits + alpha + beta * ((double)p * (double)k + (double)(d - 1) * (double)c);
}

double cpli_inter_cost(cpl_inter_algorithm a, int p, int q, size_t bytes, double alpha,
                       double beta) {
  if (a <= CPL_INTER_AUTO || a >= CPL_INTER_COUNT) return INFINITY;
  return cpli_inter_algs[a].cost(p, q, bytes, alpha, beta);
}

cpl_inter_algorithm cpli_inter_pick(int p, int q, size_t bytes) {
  static _Thread_local pick_memo last;
  const cpli_tuning *t = cpli_tuning_now();
  if (!memo_hit(&last, t->version, p, q, bytes, 0))
    last.pick = cpli_inter_pick_tuned(p, q, bytes, t->alpha, t->beta, t->inter_root_max);
  return (cpl_inter_algorithm)last.pick;
}

cpl_inter_algorithm cpli_inter_pick_tuned(int p, int q, size_t bytes, double alpha, double beta,
                                          size_t root_max) {
  /* root sends p + q - 1 messages, every other plan p q or more for
   * p, q >= 2 (at p = 1 fc's broadcast sends as few in fewer hops, at
   * q = 1 root is two-hop's plan): where the calibration found the
   * fewest messages fastest, the model's hops and bytes do not decide. */
  if (p >= 2 && q >= 2 && root_max > 0 && bytes / (size_t)p <= root_max) return CPL_INTER_ROOT;
  return cpli_inter_pick_ab(p, q, bytes, alpha, beta);
}

cpl_inter_algorithm cpli_inter_pick_ab(int p, int q, size_t bytes, double alpha, double beta) {
  cpl_inter_algorithm best = CPL_INTER_FC;
  double bc = INFINITY;
  for (int a = 1; a < CPL_INTER_COUNT; a++) {
    if (!cpli_inter_algs[a].autopick) continue;
    const double c = cpli_inter_algs[a].cost(p, q, bytes, alpha, beta);
    if (cheaper(c, bc)) bc = c, best = (cpl_inter_algorithm)a;
  }
  return best;
}
