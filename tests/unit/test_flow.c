/*
 * Dataflow plans (sched/flow.h): build the plans of every rank for the
 * circulant allgather (Alg. 7), the pipelined ring, the n-block broadcast
 * (Alg. 6) and the fc inter-group allgather (every combination of its
 * phases), replay them with the simulator (which applies the
 * executor's issue rules and moves real bytes), and check that every rank
 * ends with every block, that bytes outside the blocks are never written,
 * and that message pairs match. Streams are cut at sizes that do not divide
 * the blocks (1, 3, 7, 64 bytes) and not at all (0); blocks include empty
 * ones and all-empty calls. Also shows that resolve and the simulator
 * reject broken plans (unprovided bytes, overlapping receives, size
 * mismatch, deadlock).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coupler.h"
#include "sched/flow.h"

static int cases;

static unsigned char pat(int block, size_t i) { return (unsigned char)(block * 37 + i * 11 + 1); }

enum { COUNTS_REGULAR, COUNTS_IRREGULAR, COUNTS_ZERO, COUNTS_ONE_BIG, COUNTS_KINDS };
enum { LAYOUT_CONTIG, LAYOUT_GAPS, LAYOUT_REVERSED, LAYOUT_KINDS };

static size_t count_of(int kind, int j, int n) {
  switch (kind) {
  case COUNTS_REGULAR: return 13;
  case COUNTS_IRREGULAR: return j % 3 == 1 ? 0 : (size_t)(j * 7 % 17 + 1);
  case COUNTS_ZERO: return 0;
  default: return j == n / 2 ? 100 : 0;
  }
}

/* displs for a layout; returns the buffer size */
static size_t layout(int kind, int n, const size_t *counts, size_t *displs) {
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    const int j = kind == LAYOUT_REVERSED ? n - 1 - i : i;
    displs[j] = off;
    off += counts[j] + (kind == LAYOUT_CONTIG ? 0 : 3);
  }
  return off + 1;
}

/* buffer of `size` bytes: 0xEE everywhere, blocks in `have` filled */
static unsigned char *buffer(size_t size, int n, const size_t *counts, const size_t *displs,
                             int only) {
  unsigned char *b = malloc(size);
  memset(b, 0xEE, size);
  for (int j = 0; j < n; j++)
    if (only == -1 || only == j)
      for (size_t i = 0; i < counts[j]; i++) b[displs[j] + i] = pat(j, i);
  return b;
}

static int full(const unsigned char *b, size_t size, int n, const size_t *counts,
                const size_t *displs) {
  unsigned char *w = buffer(size, n, counts, displs, -1);
  int ok = memcmp(b, w, size) == 0;
  free(w);
  return ok;
}

/* ---------------------------------------------------------- Alg. 7 */

static void alg7_case(int p, int ck, int lk, size_t chunk) {
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p);
  for (int j = 0; j < p; j++) counts[j] = count_of(ck, j, p);
  const size_t size = layout(lk, p, counts, displs);
  cpli_circ c;
  cpli_circ_init(&c, p);
  cpli_flow *plans = malloc(sizeof *plans * p);
  cpli_flow **pp = malloc(sizeof *pp * p);
  unsigned char **b0 = malloc(sizeof *b0 * p), **b1 = calloc(p, sizeof *b1);
  char why[256] = "";
  int ok = 1;
  for (int r = 0; r < p; r++) {
    cpli_flow_init(&plans[r]);
    pp[r] = &plans[r];
    b0[r] = buffer(size, p, counts, displs, r);
    ok = ok && cpli_flow_have(&plans[r], 0, displs[r], counts[r]) == CPL_OK &&
         cpli_flow_alg7(&plans[r], &c, r, NULL, counts, displs, chunk) == CPL_OK &&
         cpli_flow_resolve(&plans[r], why, sizeof why) == CPL_OK;
  }
  ok = ok && cpli_flow_simulate(p, pp, b0, b1, why, sizeof why) == 0;
  for (int r = 0; r < p && ok; r++) ok = full(b0[r], size, p, counts, displs);
  CHECK(ok, "alg7 p=%d counts %d layout %d chunk %zu: %s", p, ck, lk, chunk, why);
  cases++;
  for (int r = 0; r < p; r++) cpli_flow_free(&plans[r]), free(b0[r]);
  free(plans), free(pp), free(b0), free(b1), free(counts), free(displs);
}

/* The chain depth cpli_circ_alg7_depth predicts, read off rank 0's
 * resolved plan: a send waits for the receives its dependencies name, and
 * by symmetry the peer's send in that round has the depth of ours. */
static void alg7_depth_case(int p) {
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p);
  for (int j = 0; j < p; j++) counts[j] = 1, displs[j] = (size_t)j;
  cpli_circ c;
  cpli_circ_init(&c, p);
  cpli_flow f;
  cpli_flow_init(&f);
  char why[256] = "";
  int ok = cpli_flow_have(&f, 0, 0, 1) == CPL_OK &&
           cpli_flow_alg7(&f, &c, 0, NULL, counts, displs, 0) == CPL_OK &&
           cpli_flow_resolve(&f, why, sizeof why) == CPL_OK;
  int depth[CPLI_CIRC_QMAX] = {0}, longest = 0;
  for (size_t i = 0; i < f.nm && ok; i++) {
    const cpli_fmsg *m = &f.m[i];
    if (!m->send) continue;
    int k = 0;
    while (k < c.q && (p - c.skips[k]) % p != m->peer) k++;
    ok = k < c.q;
    depth[k] = 1;
    for (int d = 0; d < m->nd && ok; d++) {
      const int from = f.m[f.dep[m->d0 + (size_t)d]].peer;
      int j = 0;
      while (j < k && c.skips[j] != from) j++;
      ok = j < k;
      if (ok && depth[j] + 1 > depth[k]) depth[k] = depth[j] + 1;
    }
    if (depth[k] > longest) longest = depth[k];
  }
  CHECK(ok && longest == cpli_circ_alg7_depth(&c), "alg7 depth p=%d: plan %d, formula %d %s", p,
        longest, cpli_circ_alg7_depth(&c), why);
  cases++;
  cpli_flow_free(&f);
  free(counts), free(displs);
}

/* ---------------------------------------------------------- ring */

static void ring_case(int p, int ck, int lk, size_t chunk) {
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p);
  for (int j = 0; j < p; j++) counts[j] = count_of(ck, j, p);
  const size_t size = layout(lk, p, counts, displs);
  cpli_flow *plans = malloc(sizeof *plans * p);
  cpli_flow **pp = malloc(sizeof *pp * p);
  unsigned char **b0 = malloc(sizeof *b0 * p), **b1 = calloc(p, sizeof *b1);
  int *rank_of = malloc(sizeof *rank_of * p); /* members in reverse rank order */
  if (!plans || !pp || !b0 || !b1 || !rank_of) abort();
  for (int g = 0; g < p; g++) rank_of[g] = p - 1 - g;
  char why[256] = "";
  int ok = 1;
  for (int g = 0; g < p; g++) {
    const int r = rank_of[g];
    cpli_flow_init(&plans[r]);
    pp[r] = &plans[r];
    b0[r] = buffer(size, p, counts, displs, g);
    ok = ok && cpli_flow_have(&plans[r], 0, displs[g], counts[g]) == CPL_OK &&
         cpli_flow_ring(&plans[r], p, g, rank_of, counts, displs, chunk) == CPL_OK &&
         cpli_flow_resolve(&plans[r], why, sizeof why) == CPL_OK;
  }
  ok = ok && cpli_flow_simulate(p, pp, b0, b1, why, sizeof why) == 0;
  for (int r = 0; r < p && ok; r++) ok = full(b0[r], size, p, counts, displs);
  CHECK(ok, "ring p=%d counts %d layout %d chunk %zu: %s", p, ck, lk, chunk, why);
  cases++;
  for (int r = 0; r < p; r++) cpli_flow_free(&plans[r]), free(b0[r]);
  free(plans), free(pp), free(b0), free(b1), free(counts), free(displs), free(rank_of);
}

/* ---------------------------------------------------------- Alg. 6 */

/* Alg. 6 with n blocks */
static void bcast_case(int p, size_t bytes, long long n) {
  cpli_circ c;
  cpli_circ_init(&c, p);
  cpli_flow *plans = malloc(sizeof *plans * p);
  cpli_flow **pp = malloc(sizeof *pp * p);
  unsigned char **b0 = malloc(sizeof *b0 * p), **b1 = calloc(p, sizeof *b1);
  const size_t off = 5; /* receivers' data sits at an offset */
  unsigned char *src = malloc(bytes + 1);
  for (size_t i = 0; i < bytes; i++) src[i] = pat(3, i);
  char why[256] = "";
  int ok = 1;
  for (int r = 0; r < p; r++) {
    cpli_flow_init(&plans[r]);
    pp[r] = &plans[r];
    b0[r] = malloc(bytes + off + 1);
    memset(b0[r], 0xEE, bytes + off + 1);
    if (r == 0) {
      b1[r] = src;
      ok = ok && cpli_flow_have(&plans[r], 1, 0, bytes) == CPL_OK;
    }
    const size_t o = r == 0 ? 0 : off;
    ok = ok && cpli_flow_bcast(&plans[r], &c, r, NULL, 1, o, bytes, n) == CPL_OK &&
         cpli_flow_resolve(&plans[r], why, sizeof why) == CPL_OK;
  }
  ok = ok && cpli_flow_simulate(p, pp, b0, b1, why, sizeof why) == 0;
  for (int r = 1; r < p && ok; r++) {
    ok = b0[r][off - 1] == 0xEE && b0[r][off + bytes] == 0xEE &&
         memcmp(b0[r] + off, src, bytes) == 0;
    if (!ok) snprintf(why, sizeof why, "rank %d: wrong data", r);
  }
  CHECK(ok, "bcast p=%d bytes %zu n %lld: %s", p, bytes, n, why);
  cases++;
  for (int r = 0; r < p; r++) cpli_flow_free(&plans[r]), free(b0[r]);
  free(plans), free(pp), free(b0), free(b1), free(src);
}

/* ---------------------------------------------------------- fc */

static void fc_case(int p, int q, int ck, int lk, size_t chunk, long long nb, int ring) {
  const cpli_fc_opts o = {.chunk = chunk, .ring = ring, .nblocks = nb};
  const int N = p + q;
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p);
  size_t *packed = malloc(sizeof *packed * p);
  for (int j = 0; j < p; j++) counts[j] = count_of(ck, j, p);
  const size_t size = layout(lk, p, counts, displs);
  const size_t psize = layout(LAYOUT_CONTIG, p, counts, packed); /* extra senders */
  cpli_flow *plans = malloc(sizeof *plans * N);
  cpli_flow **pp = malloc(sizeof *pp * N);
  unsigned char **b0 = malloc(sizeof *b0 * N), **b1 = calloc(N, sizeof *b1);
  if (!plans || !pp || !b0 || !b1 || N < 1) abort();
  char why[256] = "";
  int ok = 1;
  for (int r = 0; r < N; r++) {
    cpli_flow_init(&plans[r]);
    pp[r] = &plans[r];
    const int extra = r < p && p > q && r >= q;
    if (r < p) {
      b1[r] = malloc(counts[r] + 1);
      for (size_t i = 0; i < counts[r]; i++) b1[r][i] = pat(r, i);
      b0[r] = extra ? buffer(psize, p, counts, packed, r) : NULL;
    } else {
      b0[r] = buffer(size, p, counts, displs, -2);
    }
    const size_t *cn = r >= p || extra ? counts : NULL;
    const size_t *dp = r >= p ? displs : extra ? packed : NULL;
    ok = ok &&
         cpli_flow_fc(&plans[r], p, q, r, cn, dp, counts[r < p ? r : 0] * (r < p), &o) == CPL_OK &&
         cpli_flow_resolve(&plans[r], why, sizeof why) == CPL_OK;
    if (!ok && !why[0]) snprintf(why, sizeof why, "rank %d: %s", r, cpl_last_error());
  }
  ok = ok && cpli_flow_simulate(N, pp, b0, b1, why, sizeof why) == 0;
  for (int r = 0; r < N && ok; r++) {
    if (r >= p) ok = full(b0[r], size, p, counts, displs);
    else if (p > q && r >= q) ok = full(b0[r], psize, p, counts, packed);
    if (!ok) snprintf(why, sizeof why, "rank %d does not hold every block", r);
  }
  CHECK(ok, "fc %d|%d counts %d layout %d chunk %zu nblocks %lld ring %d: %s", p, q, ck, lk, chunk,
        nb, ring, why);
  cases++;
  for (int r = 0; r < N; r++) cpli_flow_free(&plans[r]), free(b0[r]), free(b1[r]);
  free(plans), free(pp), free(b0), free(b1), free(counts), free(displs), free(packed);
}

/* ------------------------------------------- direct-ring and two-hop */

typedef int (*inter_builder)(cpli_flow *f, int p, int q, int me, const size_t *counts,
                             const size_t *displs, size_t own_bytes, const cpli_fc_opts *o);

/* chunk > 0: that fixed cut; 0: the model's cuts with 1-byte pieces
 * allowed, so the small test blocks are cut too. */
static void inter_case(inter_builder build, const char *name, int p, int q, int ck, int lk,
                       size_t chunk, double beta) {
  const cpli_fc_opts o = {.chunk = chunk,
                          .model = 1,
                          .cut = {.alpha = 1e-6, .beta = beta, .overhead = 1e-6, .min_piece = 1}};
  const int N = p + q;
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p);
  for (int j = 0; j < p; j++) counts[j] = count_of(ck, j, p);
  const size_t size = layout(lk, p, counts, displs);
  cpli_flow *plans = malloc(sizeof *plans * N);
  cpli_flow **pp = malloc(sizeof *pp * N);
  unsigned char **b0 = calloc(N, sizeof *b0), **b1 = calloc(N, sizeof *b1);
  if (!plans || !pp || !b0 || !b1) abort();
  char why[256] = "";
  int ok = 1;
  for (int r = 0; r < N; r++) {
    cpli_flow_init(&plans[r]);
    pp[r] = &plans[r];
    if (r < p) {
      b1[r] = malloc(counts[r] + 1);
      for (size_t i = 0; i < counts[r]; i++) b1[r][i] = pat(r, i);
    } else {
      b0[r] = buffer(size, p, counts, displs, -2);
    }
    ok = ok &&
         build(&plans[r], p, q, r, r < p ? NULL : counts, r < p ? NULL : displs,
               r < p ? counts[r] : 0, &o) == CPL_OK &&
         cpli_flow_resolve(&plans[r], why, sizeof why) == CPL_OK;
    if (!ok && !why[0]) snprintf(why, sizeof why, "rank %d: %s", r, cpl_last_error());
  }
  ok = ok && cpli_flow_simulate(N, pp, b0, b1, why, sizeof why) == 0;
  for (int r = p; r < N && ok; r++)
    if (!(ok = full(b0[r], size, p, counts, displs)))
      snprintf(why, sizeof why, "rank %d does not hold every block", r);
  CHECK(ok, "%s %d|%d counts %d layout %d chunk %zu: %s", name, p, q, ck, lk, chunk, why);
  cases++;
  for (int r = 0; r < N; r++) cpli_flow_free(&plans[r]), free(b0[r]), free(b1[r]);
  free(plans), free(pp), free(b0), free(b1), free(counts), free(displs);
}

/* two-hop's shape: every receiver takes exactly p streams (one per
 * block), a sender sends r, and the busiest receiver sends what
 * cpli_two_hop_fanout says (the cost model reads it); for p > q no
 * receiver sends anything; for p <= q a long block has p holders. */
static void two_hop_shape(int p, int q, double beta) {
  const cpli_fc_opts o = {.model = 1, .cut = {.alpha = 1e-6, .beta = beta, .overhead = 1e-6}};
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p);
  for (int b = 0; b < p; b++) counts[b] = 3, displs[b] = 3 * (size_t)b;
  const int r = cpli_two_hop_holders(p, q, 3, beta);
  long long most = 0;
  /* admission: a receiver's places are a permutation of its p senders,
   * and the senders in places FAN_IN and later wait for its signal */
  const int admits = cpli_two_hop_admits(p, q, 3, &o.cut);
  int acks = 0, gates = 0;
  int ok = r >= 1 && r <= (p < q ? p : q) && (p <= q || r == q) &&
           (p > q || p < 2 || 3 * beta < CPLI_TWO_HOP_DIRECT_S || r == p) && (!admits || p > q);
  for (int j = 0; j < q && admits && ok; j++) {
    char *seen = calloc((size_t)p, 1);
    for (int b = 0; b < p && ok; b++) {
      const long long k = cpli_two_hop_admit_position(b, j, p, q);
      ok = k >= 0 && k < p && !seen[k];
      if (ok) seen[k] = 1;
    }
    free(seen);
  }
  for (int me = 0; me < p + q && ok; me++) {
    cpli_flow f;
    cpli_flow_init(&f);
    ok = cpli_flow_two_hop(&f, p, q, me, me < p ? NULL : counts, me < p ? NULL : displs,
                           me < p ? counts[me] : 0, &o) == CPL_OK;
    int sends = 0, recvs = 0, ordered = 0, signals = 0;
    for (size_t i = 0; i < f.nnote && ok; i++) f.note[i].send ? sends++ : recvs++;
    for (size_t i = 0; i < f.nm && ok; i++) {
      ordered += f.m[i].after > 0;
      signals += f.m[i].np == 0 && f.m[i].send == (me >= p);
    }
    if (me < p) {
      int waits = 0;
      for (int j = 0; j < q && admits; j++)
        waits += cpli_two_hop_admit_position(me, j, p, q) >= CPLI_TWO_HOP_FAN_IN;
      ok = ok && sends == r && recvs == 0 && ordered == waits && signals == ordered;
      gates += waits;
    } else {
      ok = ok && recvs == p && ordered == signals; /* blocks of 3: every signal after one */
      acks += signals;
    }
    if (me >= p) most = sends > most ? sends : most;
    cpli_flow_free(&f);
  }
  ok = ok && acks == gates &&
       acks == (admits && p > CPLI_TWO_HOP_FAN_IN ? q * (p - CPLI_TWO_HOP_FAN_IN) : 0);
  CHECK(ok && most == cpli_two_hop_fanout(p, q, r) && (p <= q || most == 0),
        "two-hop %d|%d: r %d, busiest receiver sends %lld streams, fanout says %lld", p, q, r, most,
        cpli_two_hop_fanout(p, q, r));
  cases++;
  free(counts), free(displs);
}

/* root: every receiver with its own layout (its broadcast cuts the
 * string of blocks, not its memory), delivered whole; and with blocks
 * too small to cut (n = 1), p + q - 1 sends in all, the senders' each to
 * receiver 0 whole. */
static void root_case(int p, int q, int ck, double beta) {
  const cpli_fc_opts o = {.model = 1,
                          .cut = {.alpha = 1e-6, .beta = beta, .overhead = 1e-6, .min_piece = 1}};
  const int N = p + q;
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p * N);
  size_t *size = malloc(sizeof *size * N);
  for (int j = 0; j < p; j++) counts[j] = count_of(ck, j, p);
  cpli_flow *plans = malloc(sizeof *plans * N);
  cpli_flow **pp = malloc(sizeof *pp * N);
  unsigned char **b0 = calloc(N, sizeof *b0), **b1 = calloc(N, sizeof *b1);
  char why[256] = "";
  int ok = 1, nonzero = 0;
  size_t sends = 0;
  for (int j = 0; j < p; j++) nonzero += counts[j] > 0;
  for (int r = 0; r < N; r++) {
    cpli_flow_init(&plans[r]);
    pp[r] = &plans[r];
    size_t *d = displs + (size_t)p * r;
    size[r] = layout(r % LAYOUT_KINDS, p, counts, d);
    if (r < p) {
      b1[r] = malloc(counts[r] + 1);
      for (size_t i = 0; i < counts[r]; i++) b1[r][i] = pat(r, i);
    } else {
      b0[r] = buffer(size[r], p, counts, d, -2);
    }
    ok = ok &&
         cpli_flow_root(&plans[r], p, q, r, r < p ? NULL : counts, r < p ? NULL : d,
                        r < p ? counts[r] : 0, &o) == CPL_OK &&
         cpli_flow_resolve(&plans[r], why, sizeof why) == CPL_OK;
    for (size_t i = 0; i < plans[r].nm; i++) {
      const cpli_fmsg *m = &plans[r].m[i];
      sends += m->send;
      if (r < p && m->send) ok = ok && m->peer == p && m->bytes == counts[r];
    }
  }
  ok = ok && cpli_flow_simulate(N, pp, b0, b1, why, sizeof why) == 0;
  for (int r = p; r < N && ok; r++)
    if (!(ok = full(b0[r], size[r], p, counts, displs + (size_t)p * r)))
      snprintf(why, sizeof why, "receiver %d does not hold every block", r - p);
  CHECK(ok, "root %d|%d counts %d, beta %g: %s", p, q, ck, beta, why);
  if (beta < 1e-8 && nonzero)
    CHECK(sends == (size_t)(nonzero + q - 1), "root %d|%d counts %d: %zu sends, not %d", p, q, ck,
          sends, nonzero + q - 1);
  cases++;
  for (int r = 0; r < N; r++) cpli_flow_free(&plans[r]), free(b0[r]), free(b1[r]);
  free(plans), free(pp), free(b0), free(b1), free(counts), free(displs), free(size);
}

/* intra root: every member with its own layout, delivered whole; with
 * every block non-empty, 2 (p - 1) sends in all, p - 1 of them to
 * member 0 whole. */
static void intra_root_case(int p, int ck) {
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p * p);
  size_t *size = malloc(sizeof *size * p);
  for (int j = 0; j < p; j++) counts[j] = count_of(ck, j, p);
  cpli_flow *plans = malloc(sizeof *plans * p);
  cpli_flow **pp = malloc(sizeof *pp * p);
  unsigned char **b0 = malloc(sizeof *b0 * p), **b1 = calloc(p, sizeof *b1);
  char why[256] = "";
  int ok = 1, nonzero = 0;
  size_t sends = 0, to0 = 0;
  for (int j = 0; j < p; j++) nonzero += counts[j] > 0;
  for (int r = 0; r < p; r++) {
    cpli_flow_init(&plans[r]);
    pp[r] = &plans[r];
    size_t *d = displs + (size_t)p * r;
    size[r] = layout(r % LAYOUT_KINDS, p, counts, d);
    b0[r] = buffer(size[r], p, counts, d, r);
    ok = ok && cpli_flow_intra_root(&plans[r], p, r, counts, d) == CPL_OK &&
         cpli_flow_resolve(&plans[r], why, sizeof why) == CPL_OK;
    for (size_t i = 0; i < plans[r].nm; i++) {
      const cpli_fmsg *m = &plans[r].m[i];
      sends += m->send;
      if (r > 0 && m->send && m->peer == 0) to0++, ok = ok && m->bytes == counts[r];
    }
  }
  ok = ok && cpli_flow_simulate(p, pp, b0, b1, why, sizeof why) == 0;
  for (int r = 0; r < p && ok; r++)
    if (!(ok = full(b0[r], size[r], p, counts, displs + (size_t)p * r)))
      snprintf(why, sizeof why, "member %d does not hold every block", r);
  CHECK(ok, "intra root p=%d counts %d: %s", p, ck, why);
  if (nonzero == p)
    CHECK(sends == 2 * (size_t)(p - 1) && to0 == (size_t)(p - 1),
          "intra root p=%d: %zu sends (%zu to member 0), not %d", p, sends, to0, 2 * (p - 1));
  cases++;
  for (int r = 0; r < p; r++) cpli_flow_free(&plans[r]), free(b0[r]);
  free(plans), free(pp), free(b0), free(b1), free(counts), free(displs), free(size);
}

/* chains' order, which the simulator cannot see (any order delivers):
 * sender b feeds the heads b, b + 1, ... (mod p, those < G) one after
 * another, waiting for a signal before every stream but round 0's; the
 * head of chain g takes blocks g, g - 1, ... from their senders and
 * signals the next round's sender; the others take all p blocks from the
 * member before them, in the same order; every member but a chain's last
 * passes each block on to the next, and nobody else sends data. */
static void chains_shape(int p, int q) {
  const cpli_fc_opts o = {.model = 1, .cut = {.alpha = 1e-6, .beta = 1e-6, .overhead = 1e-6}};
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p);
  int *want = malloc(sizeof *want * 2 * (size_t)p), *got = want + p;
  for (int b = 0; b < p; b++) counts[b] = 3, displs[b] = 3 * (size_t)b;
  const int G = cpli_chains_groups(p, q);
  int ok = G == (p < q ? p : q) && cpli_chains_depth(p, q) == (q + G - 1) / G;
  for (int me = 0; me < p + q && ok; me++) {
    cpli_flow f;
    cpli_flow_init(&f);
    ok = cpli_flow_chains(&f, p, q, me, me < p ? NULL : counts, me < p ? NULL : displs,
                          me < p ? counts[me] : 0, &o) == CPL_OK;
    /* the peers of its data streams, in plan order (a stream's pieces
     * are one entry), and what they should be */
    const int j = me - p, g = me < p ? -1 : j % G, head = me >= p && j < G;
    int nwant = 0, ngot = 0, sig_out = 0, sig_in = 0, ordered = 0, fwd = 0;
    for (int r = 0; r < p; r++) {
      if (me < p && (me + r) % p < G) want[nwant++] = p + (me + r) % p;
      if (me >= p) want[nwant++] = head ? ((g - r) % p + p) % p : me - G;
    }
    for (size_t i = 0; i < f.nm && ok; i++) {
      const cpli_fmsg *m = &f.m[i];
      ordered += m->after > 0;
      if (m->np == 0 && m->send) /* a head's signal to the next round's sender */
        ok = head && m->peer == ((g - 1 - sig_out++) % p + p) % p;
      else if (m->np == 0) sig_in++;
    }
    for (size_t i = 0; i < f.nnote && ok; i++) {
      const cpli_fnote *n = &f.note[i];
      if (me >= p && n->send) ok = j + G < q && n->peer == me + G, fwd++;
      else if ((ok = ngot < p)) got[ngot++] = n->peer;
    }
    ok = ok && ngot == nwant && !memcmp(got, want, sizeof *got * (size_t)ngot);
    if (me < p) ok = ok && sig_in == nwant - ((me % p) < G) && ordered == sig_in;
    else ok = ok && sig_in == 0 && sig_out == (head ? p - 1 : 0) && (fwd > 0) == (j + G < q);
    CHECK(ok, "chains %d|%d: rank %d's plan is not in the rounds' order", p, q, me);
    cpli_flow_free(&f);
  }
  cases++;
  free(counts), free(displs), free(want);
}

/* ---------------------------------------------------------- faults */

static void broken_plans(void) {
  char why[256];
  cpli_flow a, b;
  /* a send of bytes nobody provides */
  cpli_flow_init(&a);
  cpli_flow_stream(&a, 1, 1, 0, 1, (size_t[]){0}, (size_t[]){10}, 0);
  CHECK(cpli_flow_resolve(&a, why, sizeof why) == CPL_ERR_INTERNAL && strstr(why, "nothing"),
        "unprovided bytes accepted");
  cpli_flow_free(&a);
  /* two receives writing one byte */
  cpli_flow_init(&a);
  cpli_flow_stream(&a, 0, 1, 0, 1, (size_t[]){0}, (size_t[]){10}, 0);
  cpli_flow_stream(&a, 0, 1, 0, 1, (size_t[]){9}, (size_t[]){3}, 0);
  CHECK(cpli_flow_resolve(&a, why, sizeof why) == CPL_ERR_INTERNAL && strstr(why, "both write"),
        "overlapping receives accepted");
  cpli_flow_free(&a);
  /* a receive over data valid from the start */
  cpli_flow_init(&a);
  cpli_flow_have(&a, 0, 5, 1);
  cpli_flow_stream(&a, 0, 1, 0, 1, (size_t[]){0}, (size_t[]){10}, 0);
  CHECK(cpli_flow_resolve(&a, why, sizeof why) == CPL_ERR_INTERNAL, "overwrite accepted");
  cpli_flow_free(&a);
  /* size mismatch: 10 bytes cut in 3 against in 2 */
  unsigned char x0[32] = {0}, y0[32] = {0};
  unsigned char *b0[2] = {x0, y0}, *b1[2] = {NULL, NULL};
  cpli_flow *pp[2] = {&a, &b};
  cpli_flow_init(&a);
  cpli_flow_init(&b);
  cpli_flow_have(&a, 0, 0, 10);
  cpli_flow_stream(&a, 1, 1, 0, 1, (size_t[]){0}, (size_t[]){10}, 4);
  cpli_flow_stream(&b, 0, 0, 0, 1, (size_t[]){0}, (size_t[]){10}, 5);
  cpli_flow_resolve(&a, why, sizeof why);
  cpli_flow_resolve(&b, why, sizeof why);
  CHECK(cpli_flow_simulate(2, pp, b0, b1, why, sizeof why) == CPL_ERR_INTERNAL &&
            strstr(why, "expects"),
        "size mismatch accepted");
  cpli_flow_free(&a);
  cpli_flow_free(&b);
  /* deadlock: each forwards what it has not received yet */
  cpli_flow_init(&a);
  cpli_flow_init(&b);
  cpli_flow_stream(&a, 0, 1, 0, 1, (size_t[]){0}, (size_t[]){4}, 0);
  cpli_flow_stream(&a, 1, 1, 0, 1, (size_t[]){0}, (size_t[]){4}, 0);
  cpli_flow_stream(&b, 0, 0, 0, 1, (size_t[]){0}, (size_t[]){4}, 0);
  cpli_flow_stream(&b, 1, 0, 0, 1, (size_t[]){0}, (size_t[]){4}, 0);
  cpli_flow_resolve(&a, why, sizeof why);
  cpli_flow_resolve(&b, why, sizeof why);
  CHECK(cpli_flow_simulate(2, pp, b0, b1, why, sizeof why) == CPL_ERR_INTERNAL &&
            strstr(why, "stuck"),
        "deadlock not found");
  cpli_flow_free(&a);
  cpli_flow_free(&b);
  /* an order the data does not need is still kept: each sends only after
   * its receive, so neither ever sends */
  cpli_flow_init(&a);
  cpli_flow_init(&b);
  cpli_flow_have(&a, 0, 4, 4);
  cpli_flow_have(&b, 0, 4, 4);
  cpli_flow_stream(&a, 0, 1, 0, 1, (size_t[]){0}, (size_t[]){4}, 0);
  cpli_flow_stream(&a, 1, 1, 0, 1, (size_t[]){4}, (size_t[]){4}, 0);
  cpli_flow_stream(&b, 0, 0, 0, 1, (size_t[]){0}, (size_t[]){4}, 0);
  cpli_flow_stream(&b, 1, 0, 0, 1, (size_t[]){4}, (size_t[]){4}, 0);
  CHECK(cpli_flow_order(&a, 0, 1) == CPL_OK && cpli_flow_order(&b, 0, 1) == CPL_OK &&
            cpli_flow_order(&a, 1, 0) == CPL_ERR_ARG && cpli_flow_order(&a, 1, 1) == CPL_ERR_ARG,
        "cpli_flow_order accepted a receive or a later message");
  cpli_flow_resolve(&a, why, sizeof why);
  cpli_flow_resolve(&b, why, sizeof why);
  CHECK(a.m[1].nd == 1 && a.dep[a.m[1].d0] == 0, "order not among the dependencies");
  CHECK(cpli_flow_simulate(2, pp, b0, b1, why, sizeof why) == CPL_ERR_INTERNAL &&
            strstr(why, "stuck"),
        "order ignored by the simulator");
  cpli_flow_free(&a);
  cpli_flow_free(&b);
  /* stream cuts: 10 bytes at chunk 4 -> 3 messages of 4, 3, 3 */
  cpli_flow_init(&a);
  cpli_flow_stream(&a, 0, 1, 0, 2, (size_t[]){0, 20}, (size_t[]){6, 4}, 4);
  CHECK(a.nm == 3 && a.m[0].bytes == 4 && a.m[1].bytes == 3 && a.m[2].bytes == 3 &&
            a.m[1].np == 2 && a.off[a.m[1].p0 + 1] == 20,
        "stream cut wrong (%zu messages)", a.nm);
  cpli_flow_free(&a);
  /* a tiny chunk on a long stream: at most CPLI_FLOW_MAX_STREAM_MSGS
   * messages (a million posted receives crashed MPICH), bytes all covered */
  cpli_flow_init(&a);
  const size_t big = (size_t)1 << 20;
  cpli_flow_stream(&a, 1, 1, 0, 1, (size_t[]){0}, &big, 1);
  size_t sum = 0;
  for (size_t i = 0; i < a.nm; i++) sum += a.m[i].bytes;
  CHECK(a.nm == CPLI_FLOW_MAX_STREAM_MSGS && sum == big && a.m[0].bytes == 256,
        "1 MiB at chunk 1: %zu messages, %zu bytes", a.nm, sum);
  cpli_flow_free(&a);
  const cpli_fc_opts fo = {.chunk = 1, .model = 1, .nblocks = 1};
  CHECK(cpli_flow_fc_nblocks(2, 5, big, &fo) == (long long)CPLI_FLOW_MAX_STREAM_MSGS,
        "fc blocks at chunk 1: %lld", cpli_flow_fc_nblocks(2, 5, big, &fo));
  cases += 10;
}

int main(void) {
  const size_t chunks[] = {0, 1, 3, 7, 64};
  broken_plans();
  for (int p = 1; p <= 24; p++)
    for (int ck = 0; ck < COUNTS_KINDS; ck++)
      for (int lk = 0; lk < LAYOUT_KINDS; lk++)
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) alg7_case(p, ck, lk, chunks[c]);
  for (int p = 25; p <= 70; p += 9) alg7_case(p, COUNTS_IRREGULAR, LAYOUT_GAPS, 5);
  for (int p = 1; p <= 1100; p++) alg7_depth_case(p);
  alg7_depth_case(4097);
  alg7_depth_case(65537);
  for (int p = 1; p <= 17; p++)
    for (int ck = 0; ck < COUNTS_KINDS; ck++)
      for (int lk = 0; lk < LAYOUT_KINDS; lk++)
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) ring_case(p, ck, lk, chunks[c]);
  const size_t sizes[] = {1, 2, 7, 100, 1001};
  const long long ns[] = {1, 2, 3, 5, 64, 2000};
  for (int p = 2; p <= 20; p++)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
      for (size_t n = 0; n < sizeof ns / sizeof *ns; n++) bcast_case(p, sizes[s], ns[n]);
  bcast_case(33, 1000, 7);
  bcast_case(65, 300, 20);
  for (int p = 1; p <= 9; p++)
    for (int q = 1; q <= 9; q++)
      for (int ck = 0; ck < COUNTS_KINDS; ck++)
        for (int lk = 0; lk < LAYOUT_KINDS; lk++)
          for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c += 2)
            for (int ring = 0; ring < 2; ring++)
              fc_case(p, q, ck, lk, chunks[c], 1 + (p + q + ck) % 4, ring);
  const int big[][2] = {{2, 15}, {3, 20}, {4, 13}, {5, 22}, {20, 3}, {16, 5}, {7, 30}, {12, 12}};
  for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
    fc_case(big[i][0], big[i][1], COUNTS_IRREGULAR, LAYOUT_REVERSED, 7, 3, 0);
    fc_case(big[i][0], big[i][1], COUNTS_REGULAR, LAYOUT_CONTIG, 5, 1, 0);
    fc_case(big[i][0], big[i][1], COUNTS_IRREGULAR, LAYOUT_GAPS, 3, 2, 1);
    fc_case(big[i][0], big[i][1], COUNTS_ONE_BIG, LAYOUT_CONTIG, 0, 1, 1);
  }
  for (int p = 1; p <= 9; p++)
    for (int q = 1; q <= 9; q++)
      for (int ck = 0; ck < COUNTS_KINDS; ck++)
        for (int lk = 0; lk < LAYOUT_KINDS; lk++)
          for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
            inter_case(cpli_flow_direct_ring, "direct-ring", p, q, ck, lk, chunks[c], 1e-6);
            inter_case(cpli_flow_chains, "chains", p, q, ck, lk, chunks[c], 1e-6);
            inter_case(cpli_flow_root, "root", p, q, ck, lk, chunks[c], 1e-6);
            inter_case(cpli_flow_two_hop, "two-hop", p, q, ck, lk, chunks[c], 1e-6);
            /* blocks of 9 bytes and more take 80 ms: p holders for those */
            inter_case(cpli_flow_two_hop, "two-hop (mixed holders)", p, q, ck, lk, chunks[c],
                       CPLI_TWO_HOP_DIRECT_S / 9);
          }
  /* past 8 senders: a receiver lets 4 in at once (blocks of every size:
   * admitted and not in one plan) */
  for (int ck = 0; ck < COUNTS_KINDS; ck++) {
    inter_case(cpli_flow_two_hop, "two-hop", 20, 1, ck, LAYOUT_GAPS, 0, 1e-6);
    inter_case(cpli_flow_two_hop, "two-hop", 13, 3, ck, LAYOUT_REVERSED, 0, 1e-6);
  }
  for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
    inter_case(cpli_flow_direct_ring, "direct-ring", big[i][0], big[i][1], COUNTS_IRREGULAR,
               LAYOUT_REVERSED, 0, 1e-6);
    inter_case(cpli_flow_chains, "chains", big[i][0], big[i][1], COUNTS_IRREGULAR, LAYOUT_REVERSED,
               0, 1e-6);
    inter_case(cpli_flow_root, "root", big[i][0], big[i][1], COUNTS_IRREGULAR, LAYOUT_GAPS, 3,
               1e-6);
    inter_case(cpli_flow_two_hop, "two-hop", big[i][0], big[i][1], COUNTS_IRREGULAR,
               LAYOUT_REVERSED, 0, CPLI_TWO_HOP_DIRECT_S / 9);
  }
  for (int p = 1; p <= 24; p++)
    for (int q = 1; q <= 40; q++) {
      two_hop_shape(p, q, 1e-6); /* 3-byte blocks: short, r = p - 1 where it fits */
      two_hop_shape(p, q, 1);    /* 3 s per block: long, r = p for p <= q */
      two_hop_shape(p, q, 1e-7); /* p > 8, but too short a block to admit */
      chains_shape(p, q);
    }
  for (int p = 1; p <= 40; p++)
    for (int ck = 0; ck < COUNTS_KINDS; ck++) intra_root_case(p, ck);
  for (int p = 1; p <= 9; p++)
    for (int q = 1; q <= 12; q++)
      for (int ck = 0; ck < COUNTS_KINDS; ck++) {
        root_case(p, q, ck, 1e-9); /* one block: n = 1 */
        root_case(p, q, ck, 1e-3); /* n > 1 */
      }
  printf("flow: %d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
