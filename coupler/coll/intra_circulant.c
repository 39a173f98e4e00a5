/*
 * Circulant allgatherv: J. L. Traff, "(Poly)Logarithmic Time Construction
 * of Round-optimal n-Block Broadcast Schedules for Broadcast and irregular
 * Allgather in MPI" (2022).
 *
 * Alg. 7 (regular allgather, used for any counts): q = ceil(log2 p) rounds;
 * in round k rank r sends the blocks of ranks r .. r + d_k - 1 (mod p),
 * d_k = skips[k+1] - skips[k], to r - skips[k] and receives those of
 * r + skips[k] .. r + skips[k+1] - 1 from r + skips[k]. A cyclic range of
 * ranks is at most two contiguous pieces of a contiguous layout; pieces go
 * straight from and into the caller's buffer as one hindexed message.
 *   T7 = q alpha + beta * sum_k min(m, d_k * maxb)
 * (m total bytes, maxb the largest block; regular: q alpha + beta m (p-1)/p).
 * One big block travels in every round, so T7 tends to q beta maxb.
 * As a dataflow the latency term is the dependency chain D <= q
 * (cpli_circ_alg7_depth): rounds that forward nothing go at once, so
 * p = 3 costs one start-up, p = 5, 6 two, where MPICH's Bruck pays q.
 *
 * Alg. 7 runs as a dataflow plan (sched/flow.h, coll/flow_exec.c): every
 * receive posted at once, and each round's stream sent as soon as the
 * bytes it forwards have arrived. Rounds then overlap instead of paying a
 * synchronisation each. Streams are whole (sched/cut.h: in every round a
 * rank sends as many blocks as it receives, so what it forwards arrives
 * in time) unless CPL_CHUNK forces a cut. CPL_FLOW=0 selects the lockstep
 * execution.
 *
 * Ring: the circulant graph with the single skip 1, as a pipelined
 * dataflow plan (p - 1 blocks passed on piece by piece). Same bandwidth
 * term, p - 1 start-ups instead of ceil(log2 p), but one peer per
 * direction; the plan picks it where cpli_ring_preferred_ab says the extra
 * start-ups are cheap next to the transfer (large blocks). On the emulated
 * cluster, p = 5..8: Alg. 7 3-11% slower than MPICH's ring allgather from
 * 32 KiB up, the ring within +-3% of it.
 *   T_ring = (p - 1) alpha + beta * sum of the p - 1 blocks passed on.
 *
 * Alg. 9 (irregular allgather, n blocks per buffer): every rank j is the
 * root of an n-block broadcast (Alg. 6) of its buffer on the full
 * schedule; rank r plays relative rank r - j in broadcast j. Each of the
 * n + q - 1 rounds sends one block of every buffer (about m / n bytes) as
 * one hindexed message of up to p pieces; nothing is packed.
 *   T9(n) = (n + q - 1)(alpha' + beta m / n) + c_s p q^2,
 *   alpha' = alpha + 2 c_p p (building the two p-piece datatypes a round),
 *   best n* = sqrt(beta m (q - 1) / alpha'), giving about
 *   (q - 1) alpha' + 2 sqrt((q - 1) alpha' beta m) + beta m.
 * c_s (schedule construction per p q^2) and c_p (per datatype piece) are
 * measured constants of this implementation (coll/cost.c).
 *
 * The cheaper of T7 and T9(n*) runs (Alg. 7 as the ring where preferred);
 * all ranks see the same counts and model parameters and so choose alike.
 */
#include "coll/intra_circulant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/tuning.h"
#include "sched/circulant.h"
#include "sched/plan_cache.h"

/* ------------------------------------------------------------- pieces */

typedef struct pieces {
  int n, cap;
  size_t *len, *off;
  size_t bytes;
} pieces;

static int pieces_alloc(pieces *ps, int cap) {
  ps->n = 0;
  ps->cap = cap;
  ps->bytes = 0;
  ps->len = malloc(sizeof *ps->len * 2 * (size_t)cap);
  ps->off = ps->len ? ps->len + cap : NULL;
  return ps->len ? CPL_OK
                 : cpli_fail(CPL_ERR_NOMEM, "circulant: out of memory for %d message pieces", cap);
}

/* Append bytes [off, off+len), merged with the previous piece if adjacent,
 * split so no piece exceeds CPLI_MAX_MSG. Capacity is checked by the
 * caller's sizing (see alg7). */
static void pieces_add(pieces *ps, size_t off, size_t len) {
  ps->bytes += len;
  while (len > 0) {
    if (ps->n > 0) {
      size_t *pl = &ps->len[ps->n - 1];
      if (ps->off[ps->n - 1] + *pl == off && *pl < CPLI_MAX_MSG) {
        size_t add = CPLI_MAX_MSG - *pl < len ? CPLI_MAX_MSG - *pl : len;
        *pl += add;
        off += add;
        len -= add;
        continue;
      }
    }
    size_t take = len < CPLI_MAX_MSG ? len : CPLI_MAX_MSG;
    ps->len[ps->n] = take;
    ps->off[ps->n] = off;
    ps->n++;
    off += take;
    len -= take;
  }
}

/* ------------------------------------------------------------- Alg. 7 */

static void range_pieces(const cpli_blocks *b, int p, int first, int count, pieces *ps) {
  ps->n = 0;
  ps->bytes = 0;
  for (int i = 0, j = first; i < count; i++, j = j + 1 == p ? 0 : j + 1)
    if (b->counts[j]) pieces_add(ps, b->displs[j], b->counts[j]);
}

static int alg7(const cpli_intra_args *a, const cpli_circ *c, int r, size_t total) {
  const int p = c->p;
  if (total <= CPLI_RELATIVE_MAX) { /* one contiguous message per round */
    int count[CPLI_CIRC_QMAX];
    for (int k = 0; k < c->q; k++) count[k] = c->skips[k + 1] - c->skips[k];
    return cpli_rounds_relative(a, p, r, c->q, c->skips, count);
  }
  /* one piece per block plus one per CPLI_MAX_MSG of an oversized block */
  size_t cap = (size_t)p;
  for (int j = 0; j < p; j++) cap += a->blk.counts[j] / CPLI_MAX_MSG;
  if (cap > (size_t)1 << 30)
    return cpli_fail(CPL_ERR_UNSUPPORTED, "circulant: %zu message pieces", cap);
  pieces s = {0}, rv = {0};
  CPLI_TRY(pieces_alloc(&s, (int)cap));
  int rc = pieces_alloc(&rv, (int)cap);
  for (int k = 0; k < c->q && rc == CPL_OK; k++) {
    const int d = c->skips[k + 1] - c->skips[k];
    const int to = (int)(((long long)r - c->skips[k] + p) % p);
    const int from = (int)(((long long)r + c->skips[k]) % p);
    range_pieces(&a->blk, p, r, d, &s);
    range_pieces(&a->blk, p, from, d, &rv);
    /* Both ends compute the same pieces, so an empty side is skipped on
     * both: no zero-byte message. */
    a->ctx->xstep = k;
    rc = cpli_xferv(a->comm, a->blk.base, s.n, s.len, s.off, s.bytes ? to : MPI_PROC_NULL,
                    a->blk.base, rv.n, rv.len, rv.off, rv.bytes ? from : MPI_PROC_NULL, a->ctx);
  }
  free(s.len);
  free(rv.len);
  return rc;
}

typedef struct alg7_plan {
  const cpli_intra_args *a;
  const size_t *displs; /* where the plan puts each block */
  int p, r, ring;
  size_t chunk;
} alg7_plan;

static int alg7_build(cpli_flow *f, const void *arg) {
  const alg7_plan *x = arg;
  const size_t *counts = x->a->blk.counts;
  f->cut_fixed = x->chunk > 0; /* CPL_CHUNK; else whole streams */
  CPLI_TRY(cpli_flow_have(f, 0, x->displs[x->r], counts[x->r]));
  if (x->ring) return cpli_flow_ring(f, x->p, x->r, NULL, counts, x->displs, x->chunk);
  cpli_circ c;
  CPLI_TRY(cpli_circ_init(&c, x->p));
  return cpli_flow_alg7(f, &c, x->r, NULL, counts, x->displs, x->chunk);
}

/* Alg. 7 (or the ring) as a dataflow plan, built once per layout and
 * kept in the communicator's plan cache. Small allgathers
 * (CPLI_RELATIVE_MAX) gather in relative order, as coll/relative.c does,
 * so that no stream is two pieces packed into a staging buffer. */
static int alg7_flow(const cpli_intra_args *a, int p, int r, int ring, size_t total) {
  const cpli_blocks *b = &a->blk;
  const int relative = !ring && total <= CPLI_RELATIVE_MAX;
  cpli_relative rel = {0};
  if (relative) CPLI_TRY(cpli_relative_open(b, p, r, &rel));
  const alg7_plan x = {a, relative ? rel.at : b->displs, p, r, ring, cpli_flow_chunk()};
  const double param[] = {ring ? 1 : 7, (double)x.chunk, relative};
  cpli_plan_key key; /* a key without memory caches nothing */
  cpli_plan_key_make(&key, param, 3, p, b->counts, b->displs);
  int rc =
      cpli_flow_run_cached(a->plans, &key, alg7_build, &x, (cpli_plan_what){"circulant", r, p, -1},
                           a->comm, relative ? rel.buf : b->base, NULL, a->ctx);
  cpli_plan_key_free(&key);
  if (relative) cpli_relative_close(&rel, b, p, r, rc == CPL_OK);
  return rc;
}

/* ------------------------------------------------------------- Alg. 9 */

/* Block b of n of a c-byte buffer: the first c % n blocks are one longer. */
static size_t blk_start(size_t c, long long n, long long b) {
  const size_t q = c / (size_t)n, rem = c % (size_t)n;
  return (size_t)b * q + ((size_t)b < rem ? (size_t)b : rem);
}
static size_t blk_len(size_t c, long long n, long long b) {
  return c / (size_t)n + ((size_t)b < c % (size_t)n ? 1 : 0);
}

static int alg9(const cpli_intra_args *a, int p, int r, long long n) {
  cpli_circ_full f;
  CPLI_TRY(cpli_circ_full_init(&f, p));
  const int q = f.c.q, x = cpli_circ_offset(q, n);
  pieces s = {0}, rv = {0};
  /* at most one piece per buffer: blocks never exceed CPLI_MAX_MSG */
  int rc = pieces_alloc(&s, p);
  if (rc == CPL_OK) rc = pieces_alloc(&rv, p);
  const long long vend = x + n + q - 1;
  for (long long v = x; v < vend && rc == CPL_OK; v++) {
    const int k = (int)(v % q);
    const int to = (int)(((long long)r + f.c.skips[k]) % p);
    const int from = (int)(((long long)r - f.c.skips[k] + p) % p);
    s.n = rv.n = 0;
    s.bytes = rv.bytes = 0;
    for (int j = 0; j < p; j++) {
      const size_t cj = a->blk.counts[j];
      if (cj == 0) continue;
      /* In broadcast j (root j) this rank is relative rank rr. */
      const int rr = r >= j ? r - j : r - j + p;
      if (to != j) { /* nobody sends to a broadcast's root */
        long long b = cpli_circ_block(q, f.send[(size_t)rr * q + k], v, x, n);
        if (b >= 0 && blk_len(cj, n, b))
          pieces_add(&s, a->blk.displs[j] + blk_start(cj, n, b), blk_len(cj, n, b));
      }
      if (rr != 0) { /* the root of broadcast j receives nothing */
        long long b = cpli_circ_block(q, f.recv[(size_t)rr * q + k], v, x, n);
        if (b >= 0 && blk_len(cj, n, b))
          pieces_add(&rv, a->blk.displs[j] + blk_start(cj, n, b), blk_len(cj, n, b));
      }
    }
    a->ctx->xstep = (int)(v - x);
    rc = cpli_xferv(a->comm, a->blk.base, s.n, s.len, s.off, s.bytes ? to : MPI_PROC_NULL,
                    a->blk.base, rv.n, rv.len, rv.off, rv.bytes ? from : MPI_PROC_NULL, a->ctx);
  }
  free(s.len);
  free(rv.len);
  cpli_circ_full_free(&f);
  return rc;
}

/* ---------------------------------------------------------- entry points */

/* cpli_circulant_plan for this shape, kept per thread while the shape and
 * the tuning snapshot stay (see cpli_intra_pick: a loop repeats them). */
static int plan_of(int p, size_t total, size_t maxb, long long *n) {
  static _Thread_local struct {
    unsigned version; /* 0: empty */
    int p, variant;
    size_t total, maxb;
    long long n;
  } last;
  const cpli_tuning *t = cpli_tuning_now();
  if (last.version != t->version || last.p != p || last.total != total || last.maxb != maxb) {
    last.variant = cpli_circulant_plan(p, total, maxb, t->alpha, t->beta, &last.n);
    last.version = t->version, last.p = p, last.total = total, last.maxb = maxb;
  }
  *n = last.n;
  return last.variant;
}

int cpli_intra_circulant_v(const cpli_intra_args *a, int variant, long long nblocks) {
  if (!a || !a->ctx || a->comm == MPI_COMM_NULL)
    return cpli_fail(CPL_ERR_ARG, "circulant allgatherv: missing communicator or context");
  int p, r;
  CPLI_TRY(cpli_mpi_check(MPI_Comm_size(a->comm, &p), "MPI_Comm_size", "circulant allgatherv"));
  CPLI_TRY(cpli_mpi_check(MPI_Comm_rank(a->comm, &r), "MPI_Comm_rank", "circulant allgatherv"));
  if (p == 1) return CPL_OK;
  size_t total = 0, maxb = 0;
  for (int j = 0; j < p; j++) {
    total += a->blk.counts[j];
    if (a->blk.counts[j] > maxb) maxb = a->blk.counts[j];
  }
  if (total == 0) return CPL_OK; /* every rank sees the same zero counts */
  double alpha, beta;
  cpli_model_params(&alpha, &beta);
  if (variant == CPLI_CIRC_AUTO) {
    long long n;
    variant = plan_of(p, total, maxb, &n);
    if (nblocks <= 0) nblocks = n;
  }
  if (variant == CPLI_CIRC_RING && !cpli_flow_enabled()) variant = CPLI_CIRC_ALG7;
  /* a cached plan needs no schedule: build one only for the others */
  if (variant == CPLI_CIRC_RING || (variant == CPLI_CIRC_ALG7 && cpli_flow_enabled()))
    return alg7_flow(a, p, r, variant == CPLI_CIRC_RING, total);
  if (variant != CPLI_CIRC_ALG7 && variant != CPLI_CIRC_ALG7_STEP && variant != CPLI_CIRC_ALG9)
    return cpli_fail(CPL_ERR_ARG, "circulant allgatherv: unknown variant %d", variant);
  cpli_circ c;
  CPLI_TRY(cpli_circ_init(&c, p));
  if (variant == CPLI_CIRC_ALG9)
    return alg9(a, p, r, cpli_alg9_nblocks(&c, total, maxb, nblocks, alpha, beta));
  return alg7(a, &c, r, total);
}

int cpli_intra_circulant(const cpli_intra_args *a) {
  return cpli_intra_circulant_v(a, CPLI_CIRC_AUTO, 0);
}
