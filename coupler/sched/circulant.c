/*
 * Traff's circulant-graph schedules; see circulant.h for the conventions.
 *
 * The baseblock sequence of ranks 1..skips[k]-1 (call it S_k) is recursive:
 * S_{k+1} = S_k, k, (first skips[k+1] - skips[k] - 1 entries of S_k), since
 * in round k the root reaches rank skips[k] and ranks 1..skips[k+1]-skips[k]-1
 * pass their baseblocks on by skips[k] (Lemma 1 guarantees the prefix fits).
 * Prefix counts of S_q therefore take O(q) levels of O(q) vector adds, which
 * replaces the paper's RANGEBLOCKS (Algorithm 3, wrong as transcribed).
 */
#include "sched/circulant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "coupler.h"
#include "sched/sched.h"

#define BIT(v) ((uint64_t)1 << (v))

/* cnt[v] (v < q) = occurrences of baseblock v in ranks 1..L, 0 <= L < p. */
static void prefix_counts(const cpli_circ *c, long long L, int *cnt) {
  memset(cnt, 0, sizeof *cnt * (size_t)(c->q > 0 ? c->q : 1));
  int k = c->q; /* invariant: ranks 1..L are a prefix of S_k */
  while (L > 0) {
    while (L < c->skips[k - 1]) k--;
    /* 1..L covers S_{k-1}, rank skips[k-1] (block k-1), and a prefix of
     * S_{k-1} again */
    for (int v = 0; v < k - 1; v++) cnt[v] += c->full[k - 1][v];
    cnt[k - 1]++;
    L -= c->skips[k - 1];
    k--;
  }
}

int cpli_ceil_log2(long n) {
  int k = 0;
  while ((1L << k) < n) k++;
  return k;
}

int cpli_circ_init(cpli_circ *c, int p) {
  if (!c || p < 1) return cpli_fail(CPL_ERR_ARG, "circulant schedule: need p >= 1, got %d", p);
  c->p = p;
  int q = 0;
  while (q < CPLI_CIRC_QMAX && (1LL << q) < p) q++;
  c->q = q;
  /* Only rows 0..q and columns 0..q-1 of full[] mean anything: zero those,
   * not the whole 4 KiB table (every intra call builds this). */
  for (int k = 0; k <= q; k++) memset(c->full[k], 0, sizeof c->full[k][0] * (size_t)q);
  /* Algorithm 1: successive halving, rounding up. */
  long long s = p;
  for (int k = q; k > 0; k--) {
    c->skips[k] = (int)s;
    s = s / 2 + s % 2;
  }
  c->skips[0] = (int)s; /* 1 */
  long long sum = 0;
  for (int k = 0; k <= q; k++) c->ssum[k] = sum += c->skips[k];
  /* full[k] from full[0..k-1]: S_k = S_{k-1}, k-1, prefix of S_{k-1}. */
  for (int k = 1; k <= q; k++) {
    int pre[CPLI_CIRC_QMAX];
    prefix_counts(c, c->skips[k] - c->skips[k - 1] - 1, pre);
    for (int v = 0; v < k - 1; v++) c->full[k][v] = c->full[k - 1][v] + pre[v];
    c->full[k][k - 1] = 1 + pre[k - 1];
  }
  return CPL_OK;
}

int cpli_circ_alg7_depth(const cpli_circ *c) {
  int depth[CPLI_CIRC_QMAX], longest = 0;
  for (int k = 0; k < c->q; k++) {
    const int last = c->skips[k + 1] - c->skips[k] - 1; /* highest offset sent */
    depth[k] = 1;
    for (int j = 0; j < k && c->skips[j] <= last; j++)
      if (depth[j] + 1 > depth[k]) depth[k] = depth[j] + 1;
    if (depth[k] > longest) longest = depth[k];
  }
  return longest;
}

int cpli_circ_baseblock(const cpli_circ *c, int r) {
  if (r == 0) return c->q;
  /* Algorithm 2: find the homerange [skips[k], skips[k+1]) and fold down. */
  int k = c->q;
  while (r != c->skips[k]) {
    k--;
    if (c->skips[k] < r) r -= c->skips[k];
  }
  return k;
}

/* Blocks in ranks a..b, 0 <= a <= b < p, without tables. */
static uint64_t lin_blocks(const cpli_circ *c, long long a, long long b) {
  uint64_t m = 0;
  if (a == 0) {
    m |= BIT(c->q);
    a = 1;
  }
  if (a > b) return m;
  int cb[CPLI_CIRC_QMAX], ca[CPLI_CIRC_QMAX];
  prefix_counts(c, b, cb);
  prefix_counts(c, a - 1, ca);
  for (int v = 0; v < c->q; v++)
    if (cb[v] > ca[v]) m |= BIT(v);
  return m;
}

/* Split a cyclic range into at most two linear ones. */
typedef uint64_t (*lin_fn)(const void *ctx, long long a, long long b);

static uint64_t cyclic_blocks(int p, lin_fn f, const void *ctx, long long a, long long b) {
  long long len = b - a + 1;
  if (len <= 0) return 0;
  if (len >= p) return f(ctx, 0, p - 1);
  a = ((a % p) + p) % p;
  b = a + len - 1;
  if (b < p) return f(ctx, a, b);
  return f(ctx, a, p - 1) | f(ctx, 0, b - p);
}

static uint64_t lin_direct(const void *ctx, long long a, long long b) {
  return lin_blocks((const cpli_circ *)ctx, a, b);
}

/* What the receive-schedule construction needs to ask about baseblocks. */
typedef struct oracle {
  const cpli_circ *c;
  lin_fn lin;
  const void *ctx;
  const int *base; /* all baseblocks, or NULL: compute them */
} oracle;

static int oracle_base(const oracle *o, int r) {
  return o->base ? o->base[r] : cpli_circ_baseblock(o->c, r);
}

static int top_bit(uint64_t m) {
  int v = 63;
  while (!(m & BIT(v))) v--;
  return v;
}

/* Corrected Algorithm 4 (ERRATA.md): rounds i = 0..k-1; the root counts as
 * block q; B starts with the rank's own baseblock, so the q - 1 (root: q)
 * other rounds each pick a distinct previous-phase block. */
static int recv_core(const oracle *o, int r, int k, int *recv) {
  const cpli_circ *c = o->c;
  const int p = c->p, q = c->q;
  const int own = oracle_base(o, r);
  uint64_t B = BIT(own);
  for (int i = 0; i < k; i++) {
    if (r != 0 && c->skips[i] <= r && r < c->skips[i + 1]) {
      recv[i] = own; /* the root's wave reaches r in round i */
      continue;
    }
    int b;
    if (i == 0) {
      b = oracle_base(o, r > 0 ? r - 1 : p - 1);
    } else if (i < q - 1) {
      /* New blocks of the from-rank r - skips[i]: first those from ranks
       * r - skips[i+1] + 1 .. r - skips[i] (r gets the rest next round),
       * else those it can have got in rounds before i (Lemma 1). */
      uint64_t U = cyclic_blocks(p, o->lin, o->ctx, (long long)r - c->skips[i + 1] + 1,
                                 (long long)r - c->skips[i]) &
                   ~B;
      if (!U)
        U = cyclic_blocks(p, o->lin, o->ctx, (long long)r - c->ssum[i],
                          (long long)r - c->skips[i + 1]) &
            ~B;
      U &= BIT(q) - 1; /* the root (block q) is never a previous-phase block */
      if (!U) return -1;
      b = top_bit(U);
    } else {
      uint64_t U = (BIT(q) - 1) & ~B; /* the one block still missing */
      if (!U) return -1;
      b = top_bit(U);
    }
    B |= BIT(b);
    recv[i] = b - q;
  }
  return 0;
}

int cpli_circ_recvsched(const cpli_circ *c, int r, int k, int *recv) {
  oracle o = {c, lin_direct, c, NULL};
  return recv_core(&o, r, k, recv);
}

int cpli_circ_sendsched(const cpli_circ *c, int r, int *send) {
  oracle o = {c, lin_direct, c, NULL};
  int tmp[CPLI_CIRC_QMAX];
  for (int i = 0; i < c->q; i++) {
    if (recv_core(&o, (int)(((long long)r + c->skips[i]) % c->p), i + 1, tmp)) return -1;
    send[i] = tmp[i];
  }
  return 0;
}

/* ------------------------------------------------------- full schedule */

/* tab[i * (q+1) + v]: occurrences of baseblock v (q = root) in ranks [0, i). */
typedef struct table {
  int q;
  const int *tab;
} table;

static uint64_t lin_table(const void *ctx, long long a, long long b) {
  const table *t = ctx;
  const int w = t->q + 1;
  const int *lo = t->tab + a * w, *hi = t->tab + (b + 1) * w;
  uint64_t m = 0;
  for (int v = 0; v < w; v++)
    if (hi[v] > lo[v]) m |= BIT(v);
  return m;
}

void cpli_circ_full_free(cpli_circ_full *f) {
  if (!f) return;
  free(f->base);
  free(f->recv);
  free(f->send);
  f->base = f->recv = f->send = NULL;
}

int cpli_circ_full_init(cpli_circ_full *f, int p) {
  if (!f) return cpli_fail(CPL_ERR_ARG, "circulant full schedule: NULL output");
  memset(f, 0, sizeof *f);
  CPLI_TRY(cpli_circ_init(&f->c, p));
  const int q = f->c.q, w = q + 1;
  const size_t pq = (size_t)p * (size_t)(q > 0 ? q : 1);
  f->base = malloc(sizeof *f->base * (size_t)p);
  f->recv = malloc(sizeof *f->recv * pq);
  f->send = malloc(sizeof *f->send * pq);
  int *tab = malloc(sizeof *tab * ((size_t)p + 1) * (size_t)w);
  if (!f->base || !f->recv || !f->send || !tab) {
    free(tab);
    cpli_circ_full_free(f);
    return cpli_fail(CPL_ERR_NOMEM, "circulant full schedule: out of memory for p = %d", p);
  }
  /* Baseblocks in one linear pass: rank r in homerange k (r > skips[k])
   * repeats rank r - skips[k]. */
  f->base[0] = q;
  for (int k = 0, r = 1; r < p; r++) {
    while (r >= f->c.skips[k + 1]) k++;
    f->base[r] = r == f->c.skips[k] ? k : f->base[r - f->c.skips[k]];
  }
  memset(tab, 0, sizeof *tab * (size_t)w);
  for (int r = 0; r < p; r++) {
    memcpy(tab + (size_t)(r + 1) * w, tab + (size_t)r * w, sizeof *tab * (size_t)w);
    tab[(size_t)(r + 1) * w + f->base[r]]++;
  }
  table t = {q, tab};
  oracle o = {&f->c, lin_table, &t, f->base};
  for (int r = 0; r < p; r++) {
    if (recv_core(&o, r, q, f->recv + (size_t)r * q)) {
      free(tab);
      cpli_circ_full_free(f);
      return cpli_fail(CPL_ERR_INTERNAL,
                       "circulant schedule for p = %d: no new block for rank %d "
                       "(a bug in Coupler's schedule construction)",
                       p, r);
    }
  }
  free(tab);
  for (int r = 0; r < p; r++)
    for (int k = 0; k < q; k++)
      f->send[(size_t)r * q + k] = f->recv[(size_t)(((long long)r + f->c.skips[k]) % p) * q + k];
  return CPL_OK;
}

/* ------------------------------------------------------------ verifier */

static int check_structure(const cpli_circ *c, const int *base, const int *recv, char *why,
                           size_t whylen) {
  const int p = c->p, q = c->q;
  if (base[0] != q)
    return cpli_sched_invalid(why, whylen, "p=%d: root baseblock %d, expected q=%d", p, base[0], q);
  for (int r = 0; r < p; r++) {
    const int *row = recv + (size_t)r * q;
    if (r > 0 && (base[r] < 0 || base[r] >= q))
      return cpli_sched_invalid(why, whylen, "p=%d: rank %d baseblock %d outside 0..%d", p, r,
                                base[r], q - 1);
    uint64_t seen = 0;
    int own = 0;
    for (int k = 0; k < q; k++) {
      const int e = row[k];
      const int home = r > 0 && c->skips[k] <= r && r < c->skips[k + 1];
      if (home) {
        if (e != base[r])
          return cpli_sched_invalid(why, whylen,
                                    "p=%d: rank %d round %d (its homerange) receives %d, not "
                                    "its baseblock %d",
                                    p, r, k, e, base[r]);
        own++;
        continue;
      }
      if (e < -q || e > -1)
        return cpli_sched_invalid(why, whylen,
                                  "p=%d: rank %d round %d receives %d, expected a "
                                  "previous-phase block in %d..-1",
                                  p, r, k, e, -q);
      if (seen & BIT(e + q))
        return cpli_sched_invalid(why, whylen, "p=%d: rank %d receives block %d twice in a phase",
                                  p, r, e);
      seen |= BIT(e + q);
    }
    if (r > 0 && own != 1)
      return cpli_sched_invalid(why, whylen, "p=%d: rank %d receives its baseblock %d times", p, r,
                                own);
  }
  return 0;
}

int cpli_circ_verify(const cpli_circ *c, const int *base, const int *recv, const int *send,
                     long long n, char *why, size_t whylen) {
  if (why && whylen) why[0] = '\0';
  if (!c || !base || (c->q > 0 && (!recv || !send)) || n < 1) {
    if (why && whylen) snprintf(why, whylen, "bad arguments (n=%lld)", n);
    return CPL_ERR_ARG;
  }
  const int p = c->p, q = c->q;
  int rc = check_structure(c, base, recv, why, whylen);
  if (rc) return rc;
  for (int r = 0; r < p; r++)
    for (int k = 0; k < q; k++) {
      const int t = (int)(((long long)r + c->skips[k]) % p);
      if (send[(size_t)r * q + k] != recv[(size_t)t * q + k])
        return cpli_sched_invalid(why, whylen,
                                  "p=%d: edge %d->%d round %d: sender sends %d, receiver "
                                  "expects %d",
                                  p, r, t, k, send[(size_t)r * q + k], recv[(size_t)t * q + k]);
    }
  if (p == 1) return 0; /* the root holds everything, zero rounds */

  /* got[r * n + b]: round in which r obtained block b (-1 root, INT-ish
   * sentinel never). Held before round v means got < v. */
  const long long NEVER = (long long)1 << 62;
  long long *got = malloc(sizeof *got * (size_t)p * (size_t)n);
  if (!got) {
    if (why && whylen) snprintf(why, whylen, "out of memory (p=%d, n=%lld)", p, n);
    return CPL_ERR_NOMEM;
  }
  for (size_t i = 0; i < (size_t)p * (size_t)n; i++) got[i] = NEVER;
  for (long long b = 0; b < n; b++) got[b] = -1;
  const int x = cpli_circ_offset(q, n);
  const long long vend = x + n + q - 1; /* q + n - 1 real rounds */
  for (long long v = x; v < vend && !rc; v++) {
    const int k = (int)(v % q);
    for (int r = 1; r < p && !rc; r++) {
      /* the transfer on edge f -> r; the root receives nothing */
      const int f = (int)(((long long)r - c->skips[k] + p) % p);
      const long long br = cpli_circ_block(q, recv[(size_t)r * q + k], v, x, n);
      const long long bs = cpli_circ_block(q, send[(size_t)f * q + k], v, x, n);
      if (br != bs)
        rc = cpli_sched_invalid(why, whylen,
                                "p=%d n=%lld round %lld: %d sends block %lld, %d "
                                "expects %lld",
                                p, n, v - x, f, bs, r, br);
      else if (br < 0) continue;
      else if (got[(size_t)f * n + br] >= v)
        rc = cpli_sched_invalid(why, whylen,
                                "p=%d n=%lld round %lld: %d sends block %lld to %d "
                                "before holding it",
                                p, n, v - x, f, br, r);
      else if (got[(size_t)r * n + br] != NEVER)
        rc = cpli_sched_invalid(why, whylen,
                                "p=%d n=%lld round %lld: %d receives block %lld "
                                "again (from %d)",
                                p, n, v - x, r, br, f);
      else got[(size_t)r * n + br] = v;
    }
  }
  for (int r = 1; r < p && !rc; r++)
    for (long long b = 0; b < n; b++)
      if (got[(size_t)r * n + b] == NEVER) {
        rc = cpli_sched_invalid(why, whylen,
                                "p=%d n=%lld: rank %d lacks block %lld after %lld "
                                "rounds",
                                p, n, r, b, n + q - 1);
        break;
      }
  free(got);
  return rc;
}
