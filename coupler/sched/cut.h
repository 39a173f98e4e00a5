/*
 * How a dataflow plan cuts its streams into messages (pure maths, no MPI).
 *
 * Cutting a stream lets the next hop forward its first bytes before the
 * last have arrived, and costs one message start-up per piece. So a
 * stream is cut only where that buys time:
 *  - not forwarded (no later send reads its bytes, on this rank or at the
 *    receiver): whole, as far as MPI's int counts allow;
 *  - forwarded by a rank whose link has as much of its own to send
 *    meanwhile (Alg. 7's rounds and the intra-group ring: in every round
 *    or ring step a member sends as many blocks as it receives, so what
 *    it forwards has arrived by the time it is needed): whole;
 *  - forwarded by a receiver whose port is busy throughout anyway (fc at
 *    p = q: the direct blocks, then the ring's steps): whole;
 *  - forwarded along a pipeline that would otherwise wait for it (fc's
 *    p < q broadcasts, their receivers forwarding the block they are
 *    still receiving; fc's p > q direct blocks and the ring after them,
 *    whose every step relays what the step before brings, measured 1.26
 *    of the bound at 6|2 whole): m pieces minimising the pipeline's
 *    modelled time.
 * A pipeline of depth d (hops) over L bytes cut into m pieces takes
 *   T(m) = (d - 1) alpha + m o + (m + d - 1) beta L / m
 * (o: what one more message of a stream costs, the per-message overhead;
 * with o = alpha this is (m + d - 1)(alpha + beta L / m)), minimal at
 *   m* = sqrt(beta L (d - 1) / o),
 * clamped to at least ceil(L / CPLI_FLOW_MAX_MSG) pieces and pieces of at
 * least CPLI_CUT_MIN_PIECE bytes (8 KiB). Every input is known to both ends of
 * every message (sizes, p, q, the model parameters), so both cut alike.
 */
#ifndef CPLI_SCHED_CUT_H
#define CPLI_SCHED_CUT_H

#include <stddef.h>

/* No piece below this many bytes: every piece also costs the executor a
 * dependency, a post and polls, which the calibrated per-message overhead
 * (a plain MPI stream) misses. On the emulated cluster (8 nodes, the
 * libraries alternating, ratios to the bound):
 *  - 1 KiB pieces lost 2x at 2-8 KiB per sender (4|4, 8 KiB: 1.56 ms in
 *    2 KiB pieces, 0.64 ms whole); 4 KiB pieces lost at 16 KiB per sender
 *    (2|6, 3|5, 4|4, auto: 0.93-1.51 against 0.69-1.07 with 8 KiB);
 *  - 8 KiB pieces beat 32 KiB ones on deep pipelines (1|7 at 128 KiB:
 *    direct-ring 1.25-1.29 against 1.87-1.88, auto 1.3 against 2.3; 2|6
 *    at 128 KiB, auto 1.13-1.23 against 1.50; 1|7 at 1 MiB 1.2-1.25
 *    against 1.3-1.4) and were even elsewhere (p >= q, 3|5, 4 MiB). */
#define CPLI_CUT_MIN_PIECE ((size_t)8 * 1024)

typedef struct cpli_cut_model {
  double alpha;     /* s: start-up of one message (latency)        */
  double beta;      /* s per byte                                  */
  double overhead;  /* s per further message of a stream (<= 0: alpha) */
  size_t min_piece; /* smallest piece (0: CPLI_CUT_MIN_PIECE; tests use 1) */
} cpli_cut_model;

/* Why a stream is cut as it is (recorded per stream in the plan). */
enum {
  CPLI_CUT_FIXED = 1, /* CPL_CHUNK (or the tuning file's chunk) forces the cut */
  CPLI_CUT_LAST,      /* not forwarded: whole                                   */
  CPLI_CUT_BUSY,      /* forwarded, but the forwarder has its own data to send  */
  CPLI_CUT_PORT,      /* forwarded, but the receiver's port is the bottleneck   */
  CPLI_CUT_PIPE,      /* forwarded along a pipeline of depth d: m* pieces       */
  CPLI_CUT_BCAST      /* a block of an n-block broadcast (n from the pipeline)  */
};

/* One line of explanation for a CPLI_CUT_ value. */
const char *cpli_cut_why_text(int why);

/* Modelled time of a pipeline of depth d over `bytes` in m pieces. */
double cpli_cut_time(const cpli_cut_model *c, size_t bytes, int depth, long long m);

/* The piece count m* for it (1 for depth <= 1 or no bytes). */
long long cpli_cut_pieces(const cpli_cut_model *c, size_t bytes, int depth);

/* The chunk that cuts `bytes` into m pieces: ceil(bytes / m); 0 (whole)
 * for m <= 1. */
size_t cpli_cut_chunk(size_t bytes, long long m);

#endif
