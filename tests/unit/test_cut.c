/*
 * Stream cuts chosen by the model (sched/cut.h) in real plans: for every
 * shape p|q up to 8|8, block sizes (regular, odd, irregular with empty
 * blocks, all empty), both allgather phases and two model settings, build
 * the modelled fc plans of all ranks, replay them with the simulator (real
 * bytes; a message whose two ends were cut differently is a size mismatch
 * there) and check:
 *  - every rank ends with every block;
 *  - both ends of every stream note the same bytes, cut, reason, depth;
 *  - a stream noted "not forwarded" is not read by any later send at the
 *    receiver, and is one message; a stream noted forwarded is read;
 *  - streams the model keeps whole are one message, pipeline streams are
 *    cut as cpli_cut_pieces says and forward or relay arriving bytes.
 * Also the intra-group plans (Alg. 7 and the ring, no fixed cut), the
 * optimum of cpli_cut_pieces against a brute-force search, and the
 * transport limit on huge streams.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coupler.h"
#include "sched/cut.h"
#include "sched/flow.h"

static int cases;

static unsigned char pat(int block, size_t i) { return (unsigned char)(block * 29 + i * 13 + 5); }

enum { K_REGULAR, K_ODD, K_IRREGULAR, K_EMPTY, K_KINDS };

static size_t count_of(int kind, int j, size_t k) {
  switch (kind) {
  case K_REGULAR: return k;
  case K_ODD: return k + (size_t)j % 3;
  case K_IRREGULAR: return j % 3 == 1 ? 0 : k / (size_t)(j + 1) + (size_t)j;
  default: return 0;
  }
}

/* Notes of rank a to b (send) and of b from a (receive) pair in order. */
static int notes_agree(cpli_flow *const *pl, int n, char *why, size_t wl) {
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) {
      if (a == b) continue;
      size_t i = 0, j = 0;
      const cpli_flow *x = pl[a], *y = pl[b];
      for (;;) {
        while (i < x->nnote && !(x->note[i].send && x->note[i].peer == b)) i++;
        while (j < y->nnote && !(!y->note[j].send && y->note[j].peer == a)) j++;
        if (i == x->nnote || j == y->nnote) {
          if (i != x->nnote || j != y->nnote) {
            snprintf(why, wl, "rank %d -> %d: stream counts differ", a, b);
            return 0;
          }
          break;
        }
        const cpli_fnote *s = &x->note[i], *r = &y->note[j];
        if (s->bytes != r->bytes || s->chunk != r->chunk || s->nmsg != r->nmsg ||
            s->why != r->why || s->depth != r->depth) {
          snprintf(why, wl,
                   "rank %d -> %d: send note (%zu B, chunk %zu, %zu msgs, why %d, depth %d) vs "
                   "receive note (%zu B, chunk %zu, %zu msgs, why %d, depth %d)",
                   a, b, s->bytes, s->chunk, s->nmsg, s->why, s->depth, r->bytes, r->chunk, r->nmsg,
                   r->why, r->depth);
          return 0;
        }
        i++, j++;
      }
    }
  return 1;
}

/* Each note's reason against what the plans really do. */
static int notes_true(cpli_flow *const *pl, int n, const cpli_cut_model *cm, char *why, size_t wl) {
  for (int r = 0; r < n; r++) {
    unsigned char *fwd, *relay;
    if (cpli_flow_forwarded(n, pl, r, &fwd, &relay) != CPL_OK) abort();
    for (size_t k = 0; k < pl[r]->nnote; k++) {
      const cpli_fnote *nt = &pl[r]->note[k];
      const size_t lo = (nt->bytes - 1) / CPLI_FLOW_MAX_MSG + 1;
      const char *bad = NULL;
      if (nt->why == CPLI_CUT_LAST && fwd[k]) bad = "noted not forwarded, but forwarded";
      else if ((nt->why == CPLI_CUT_BUSY || nt->why == CPLI_CUT_PORT) && !fwd[k])
        bad = "noted forwarded, but nobody reads it";
      else if ((nt->why == CPLI_CUT_LAST || nt->why == CPLI_CUT_BUSY || nt->why == CPLI_CUT_PORT) &&
               (nt->chunk != 0 || nt->nmsg != lo))
        bad = "kept whole, but cut";
      else if (nt->why == CPLI_CUT_PIPE && nt->chunk > 0 &&
               nt->nmsg != (nt->bytes - 1) / nt->chunk + 1)
        bad = "pipeline cut does not follow its chunk";
      else if (nt->why == CPLI_CUT_PIPE && !fwd[k] && !relay[k])
        bad = "pipeline cut, but neither forwarded nor relayed";
      else if (nt->why == CPLI_CUT_FIXED) bad = "fixed cut without CPL_CHUNK";
      if (bad) {
        snprintf(why, wl, "rank %d stream %zu (%s %d, %zu B, %zu msgs, why %d): %s", r, k,
                 nt->send ? "to" : "from", nt->peer, nt->bytes, nt->nmsg, nt->why, bad);
        free(fwd), free(relay);
        return 0;
      }
    }
    free(fwd), free(relay);
  }
  (void)cm;
  return 1;
}

static void fc_model_case(int p, int q, int kind, size_t k, int ring, const cpli_cut_model *cm) {
  cpli_fc_opts o = {.ring = ring, .nblocks = 1, .model = 1, .cut = *cm};
  const int N = p + q;
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p);
  size_t *packed = malloc(sizeof *packed * p);
  size_t size = 0, psize = 0;
  for (int j = 0; j < p; j++) {
    counts[j] = count_of(kind, j, k);
    displs[j] = size + 2, size += counts[j] + 2; /* gaps */
    packed[j] = psize, psize += counts[j];
  }
  size += 1, psize += 1;
  cpli_flow *plans = calloc(N, sizeof *plans);
  cpli_flow **pp = malloc(sizeof *pp * N);
  unsigned char **b0 = calloc(N, sizeof *b0), **b1 = calloc(N, sizeof *b1);
  if (!counts || !displs || !packed || !plans || !pp || !b0 || !b1) abort();
  char why[512] = "";
  int ok = 1;
  for (int r = 0; r < N; r++) {
    cpli_flow_init(&plans[r]);
    pp[r] = &plans[r];
    const int extra = r < p && p > q && r >= q;
    if (r < p) {
      b1[r] = malloc(counts[r] + 1);
      for (size_t i = 0; i < counts[r]; i++) b1[r][i] = pat(r, i);
    }
    if (r >= p || extra) {
      const size_t *dp = r >= p ? displs : packed;
      b0[r] = malloc(r >= p ? size : psize);
      memset(b0[r], 0xEE, r >= p ? size : psize);
      if (extra)
        for (size_t i = 0; i < counts[r]; i++) b0[r][dp[r] + i] = pat(r, i);
    }
    ok = ok &&
         cpli_flow_fc(&plans[r], p, q, r, r >= p || extra ? counts : NULL,
                      r >= p  ? displs
                      : extra ? packed
                              : NULL,
                      r < p ? counts[r] : 0, &o) == CPL_OK &&
         cpli_flow_resolve(&plans[r], why, sizeof why) == CPL_OK;
    if (!ok && !why[0]) snprintf(why, sizeof why, "rank %d: %s", r, cpl_last_error());
  }
  ok = ok && cpli_flow_simulate(N, pp, b0, b1, why, sizeof why) == 0;
  for (int r = p; r < N && ok; r++)
    for (int j = 0; j < p && ok; j++)
      for (size_t i = 0; i < counts[j] && ok; i++)
        if (b0[r][displs[j] + i] != pat(j, i))
          ok = 0, snprintf(why, sizeof why, "receiver %d: block %d byte %zu wrong", r - p, j, i);
  ok = ok && notes_agree(pp, N, why, sizeof why) && notes_true(pp, N, cm, why, sizeof why);
  /* p < q: the broadcast and the forwards follow the model */
  for (int r = p; r < N && ok && p < q && kind == K_REGULAR && k > 0; r++)
    for (size_t x = 0; x < plans[r].nnote && ok; x++) {
      const cpli_fnote *nt = &plans[r].note[x];
      if (nt->why != CPLI_CUT_PIPE) continue;
      const long long m = cpli_flow_fc_nblocks(p, q, k, &o);
      if (nt->chunk != cpli_cut_chunk(k, m))
        ok = 0, snprintf(why, sizeof why, "rank %d: pipeline chunk %zu, model %zu (m %lld)", r,
                         nt->chunk, cpli_cut_chunk(k, m), m);
    }
  CHECK(ok, "fc %d|%d kind %d k %zu ring %d overhead %g: %s", p, q, kind, k, ring, cm->overhead,
        why);
  cases++;
  for (int r = 0; r < N; r++) cpli_flow_free(&plans[r]), free(b0[r]), free(b1[r]);
  free(plans), free(pp), free(b0), free(b1), free(counts), free(displs), free(packed);
}

static void intra_case(int p, size_t k, int ring) {
  cpli_circ c;
  if (cpli_circ_init(&c, p) != CPL_OK) abort();
  size_t *counts = malloc(sizeof *counts * p), *displs = malloc(sizeof *displs * p), size = 0;
  for (int j = 0; j < p; j++)
    counts[j] = count_of(K_IRREGULAR, j, k), displs[j] = size, size += counts[j];
  cpli_flow *plans = calloc(p, sizeof *plans);
  cpli_flow **pp = malloc(sizeof *pp * p);
  unsigned char **b0 = calloc(p, sizeof *b0), **b1 = calloc(p, sizeof *b1);
  char why[512] = "";
  int ok = 1;
  for (int r = 0; r < p; r++) {
    pp[r] = &plans[r];
    b0[r] = calloc(size + 1, 1);
    for (size_t i = 0; i < counts[r]; i++) b0[r][displs[r] + i] = pat(r, i);
    ok = ok && cpli_flow_have(&plans[r], 0, displs[r], counts[r]) == CPL_OK &&
         (ring ? cpli_flow_ring(&plans[r], p, r, NULL, counts, displs, 0)
               : cpli_flow_alg7(&plans[r], &c, r, NULL, counts, displs, 0)) == CPL_OK &&
         cpli_flow_resolve(&plans[r], why, sizeof why) == CPL_OK;
  }
  ok = ok && cpli_flow_simulate(p, pp, b0, b1, why, sizeof why) == 0;
  for (int r = 0; r < p && ok; r++)
    for (int j = 0; j < p && ok; j++)
      for (size_t i = 0; i < counts[j] && ok; i++)
        if (b0[r][displs[j] + i] != pat(j, i)) ok = 0, snprintf(why, sizeof why, "rank %d", r);
  cpli_cut_model cm = {1e-5, 1e-9, 0, 1};
  ok = ok && notes_agree(pp, p, why, sizeof why) && notes_true(pp, p, &cm, why, sizeof why);
  CHECK(ok, "intra %s p %d k %zu: %s", ring ? "ring" : "alg7", p, k, why);
  cases++;
  for (int r = 0; r < p; r++) cpli_flow_free(&plans[r]), free(b0[r]);
  free(plans), free(pp), free(b0), free(b1), free(counts), free(displs);
}

static void pieces_cases(void) {
  const double alphas[] = {1e-6, 5e-5, 5e-4}, betas[] = {1e-10, 2.09e-8};
  const size_t sizes[] = {1, 1000, 4096, 65536, 1 << 20, 3u << 22};
  for (size_t a = 0; a < 3; a++)
    for (size_t b = 0; b < 2; b++)
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int d = 1; d <= 6; d++) {
          const cpli_cut_model cm = {alphas[a], betas[b], alphas[a] / (1 + (double)s), 0};
          const long long m = cpli_cut_pieces(&cm, sizes[s], d);
          const long long hi = (long long)(sizes[s] / CPLI_CUT_MIN_PIECE);
          long long best = 1;
          for (long long x = 1; x <= (hi > 1 ? hi : 1); x++)
            if (cpli_cut_time(&cm, sizes[s], d, x) < cpli_cut_time(&cm, sizes[s], d, best))
              best = x;
          CHECK(m == best || cpli_cut_time(&cm, sizes[s], d, m) <=
                                 cpli_cut_time(&cm, sizes[s], d, best) * (1 + 1e-12),
                "pieces alpha %g beta %g size %zu depth %d: %lld, brute force %lld", alphas[a],
                betas[b], sizes[s], d, m, best);
          CHECK(d > 1 || m == 1, "depth 1 is whole (%lld)", m);
          cases++;
        }
  /* the brief's formula when overhead = alpha: (m + d - 1)(alpha + beta L / m) */
  const cpli_cut_model cm = {1e-4, 2e-8, 0, 0};
  CHECK(fabs(cpli_cut_time(&cm, 1 << 20, 3, 7) - 9 * (1e-4 + 2e-8 * (1 << 20) / 7.0)) < 1e-12,
        "pipeline time formula");
  /* more than MPI's int count: at least ceil(L / max) pieces, also whole */
  const size_t huge = CPLI_FLOW_MAX_MSG * (size_t)2 + 5;
  CHECK(cpli_cut_pieces(&cm, huge, 1) == 3, "huge, depth 1: %lld", cpli_cut_pieces(&cm, huge, 1));
  CHECK(cpli_cut_pieces(&cm, huge, 3) >= 3, "huge, depth 3");
  CHECK(cpli_cut_chunk(100, 1) == 0 && cpli_cut_chunk(100, 3) == 34 && cpli_cut_chunk(0, 5) == 0,
        "chunk of m pieces");
  cases += 4;
}

int main(void) {
  pieces_cases();
  const size_t ks[] = {0, 1, 7, 1000, 4099};
  /* overhead 1e-7: many pieces; 0 (= alpha): few */
  const cpli_cut_model models[] = {{1e-5, 1e-9, 1e-7, 1}, {1e-5, 1e-9, 0, 1}};
  for (int p = 1; p <= 8; p++)
    for (int q = 1; q <= 8; q++)
      for (int kind = 0; kind < K_KINDS; kind++)
        for (size_t s = 0; s < sizeof ks / sizeof *ks; s++)
          for (int v = 0; v < 4; v++) {
            if (kind == K_EMPTY && s > 0) continue;
            fc_model_case(p, q, kind, ks[s], v & 1, &models[v >> 1]);
          }
  const int big[][2] = {{2, 15}, {3, 20}, {12, 4}, {5, 13}};
  for (size_t i = 0; i < sizeof big / sizeof *big; i++)
    for (int v = 0; v < 4; v++)
      fc_model_case(big[i][0], big[i][1], K_ODD, 2001, v & 1, &models[v >> 1]);
  for (int p = 1; p <= 12; p++)
    for (size_t s = 0; s < sizeof ks / sizeof *ks; s++)
      intra_case(p, ks[s], 0), intra_case(p, ks[s], 1);
  printf("cut: %d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
