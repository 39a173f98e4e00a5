/*
 * Dataflow plans; see flow.h.
 */
#include "sched/flow.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "coupler.h"
#include "sched/sched.h"

void cpli_flow_init(cpli_flow *f) { memset(f, 0, sizeof *f); }

void cpli_flow_free(cpli_flow *f) {
  if (!f) return;
  free(f->m);
  free(f->off);
  free(f->len);
  free(f->dep);
  free(f->hbuf);
  free(f->hoff);
  free(f->hlen);
  free(f->note);
  cpli_flow_init(f);
}

/* Grow *p (element size es, capacity *cap) to hold at least need. */
static int grow(void **p, size_t *cap, size_t need, size_t es) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  void *n = realloc(*p, c * es);
  if (!n) return -1;
  *p = n;
  *cap = c;
  return 0;
}

static int nomem(void) { return cpli_fail(CPL_ERR_NOMEM, "dataflow plan: out of memory"); }

int cpli_flow_have(cpli_flow *f, int buf, size_t off, size_t len) {
  if (len == 0) return CPL_OK;
  size_t c0 = f->ch, c1 = f->ch, c2 = f->ch;
  if (grow((void **)&f->hbuf, &c0, f->nh + 1, sizeof *f->hbuf) ||
      grow((void **)&f->hoff, &c1, f->nh + 1, sizeof *f->hoff) ||
      grow((void **)&f->hlen, &c2, f->nh + 1, sizeof *f->hlen))
    return nomem();
  f->ch = c0 < c1 ? (c0 < c2 ? c0 : c2) : (c1 < c2 ? c1 : c2);
  f->hbuf[f->nh] = buf;
  f->hoff[f->nh] = off;
  f->hlen[f->nh] = len;
  f->nh++;
  f->resolved = 0;
  return CPL_OK;
}

static int add_piece(cpli_flow *f, size_t off, size_t len) {
  cpli_fmsg *m = &f->m[f->nm - 1];
  if (m->np > 0) { /* merge with the previous piece when adjacent */
    size_t last = f->npc - 1;
    if (f->off[last] + f->len[last] == off) {
      f->len[last] += len;
      m->bytes += len;
      return CPL_OK;
    }
  }
  size_t c0 = f->cpc, c1 = f->cpc;
  if (grow((void **)&f->off, &c0, f->npc + 1, sizeof *f->off) ||
      grow((void **)&f->len, &c1, f->npc + 1, sizeof *f->len))
    return nomem();
  f->cpc = c0 < c1 ? c0 : c1;
  f->off[f->npc] = off;
  f->len[f->npc] = len;
  f->npc++;
  m->np++;
  m->bytes += len;
  return CPL_OK;
}

/* Append an empty message (pieces follow with add_piece). */
static int add_msg(cpli_flow *f, int send, int peer, int buf) {
  size_t cm = f->cm;
  if (grow((void **)&f->m, &cm, f->nm + 1, sizeof *f->m)) return nomem();
  f->cm = cm;
  f->m[f->nm++] = (cpli_fmsg){.send = send, .peer = peer, .buf = buf, .p0 = f->npc};
  return CPL_OK;
}

int cpli_flow_signal(cpli_flow *f, int send, int peer, size_t after) {
  CPLI_TRY(add_msg(f, send, peer, 0));
  return send && after != CPLI_FLOW_NONE ? cpli_flow_order(f, after, f->nm - 1) : CPL_OK;
}

int cpli_flow_order(cpli_flow *f, size_t j, size_t i) {
  if (i >= f->nm || !f->m[i].send || j >= i)
    return cpli_fail(CPL_ERR_ARG, "dataflow plan: message %zu cannot wait for message %zu", i, j);
  f->m[i].after = j + 1;
  return CPL_OK;
}

int cpli_flow_stream(cpli_flow *f, int send, int peer, int buf, int n, const size_t *off,
                     const size_t *len, size_t chunk) {
  if (n < 0 || (!send && buf != 0) || buf < 0 || buf > 1)
    return cpli_fail(CPL_ERR_ARG, "dataflow plan: bad stream (n %d, buffer %d, %s)", n, buf,
                     send ? "send" : "receive");
  size_t L = 0;
  for (int i = 0; i < n; i++) L += len[i];
  if (L == 0) return CPL_OK;
  size_t m = 1;
  if (chunk > 0 && L > chunk) m = (L - 1) / chunk + 1;
  if (m > CPLI_FLOW_MAX_STREAM_MSGS) m = CPLI_FLOW_MAX_STREAM_MSGS;
  const size_t lo = (L - 1) / CPLI_FLOW_MAX_MSG + 1;
  if (m < lo) m = lo;
  size_t cn = f->cnote;
  if (grow((void **)&f->note, &cn, f->nnote + 1, sizeof *f->note)) return nomem();
  f->cnote = cn;
  const int why = f->cut_fixed && f->note_why != CPLI_CUT_BCAST ? CPLI_CUT_FIXED
                  : f->note_why                                 ? f->note_why
                                                                : CPLI_CUT_LAST;
  f->note[f->nnote++] = (cpli_fnote){.send = send,
                                     .peer = peer,
                                     .why = why,
                                     .depth = f->note_depth > 1 ? f->note_depth : 1,
                                     .bytes = L,
                                     .chunk = chunk,
                                     .m0 = f->nm,
                                     .nmsg = m};
  const size_t bq = L / m, brem = L % m;
  int s = 0;     /* current segment */
  size_t so = 0; /* bytes of segment s already used */
  for (size_t i = 0; i < m; i++) {
    size_t want = bq + (i < brem ? 1 : 0);
    CPLI_TRY(add_msg(f, send, peer, buf));
    while (want > 0) {
      while (so == len[s]) s++, so = 0; /* skip used and empty segments */
      size_t take = len[s] - so < want ? len[s] - so : want;
      CPLI_TRY(add_piece(f, off[s] + so, take));
      so += take;
      want -= take;
    }
  }
  f->resolved = 0;
  return CPL_OK;
}

/* ---------------------------------------------------------- resolve */

typedef struct span {
  size_t off, len, msg;
} span;

static int cmp_span(const void *a, const void *b) {
  const span *x = a, *y = b;
  return (x->off > y->off) - (x->off < y->off);
}

/* Merge sorted spans in place (overlapping or touching); returns count. */
static size_t merge_spans(span *s, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    if (w > 0 && s[w - 1].off + s[w - 1].len >= s[i].off) {
      size_t end = s[i].off + s[i].len;
      if (end > s[w - 1].off + s[w - 1].len) s[w - 1].len = end - s[w - 1].off;
    } else {
      s[w++] = s[i];
    }
  }
  return w;
}

/* Is [a, b) inside one of the merged spans h[0..n)? */
static int covered(const span *h, size_t n, size_t a, size_t b) {
  if (a >= b) return 1;
  size_t lo = 0, hi = n; /* first span with end > a */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (h[mid].off + h[mid].len > a) hi = mid;
    else lo = mid + 1;
  }
  return lo < n && h[lo].off <= a && h[lo].off + h[lo].len >= b;
}

size_t cpli_flow_pipe_cut(const cpli_fc_opts *o, size_t bytes, int forwarded) {
  if (!forwarded) return 0;
  if (!o->model || o->chunk) return o->chunk;
  return cpli_cut_chunk(bytes, cpli_cut_pieces(&o->cut, bytes, 2));
}

int cpli_flow_block(cpli_flow *f, int send, int peer, int buf, size_t off, size_t len, size_t c,
                    int forwarded) {
  f->note_why = forwarded ? CPLI_CUT_PIPE : CPLI_CUT_LAST;
  f->note_depth = forwarded ? 2 : 1;
  return cpli_flow_stream(f, send, peer, buf, 1, &off, &len, c);
}

/* Send i (message m) waits for message `on`, once: stamp[on] == i means
 * it already does. */
static int depend(cpli_flow *f, cpli_fmsg *m, size_t *stamp, size_t i, size_t on) {
  if (stamp[on] == i) return CPL_OK;
  stamp[on] = i;
  size_t cd = f->cdep;
  if (grow((void **)&f->dep, &cd, f->ndep + 1, sizeof *f->dep)) return nomem();
  f->cdep = cd;
  f->dep[f->ndep++] = on;
  m->nd++;
  return CPL_OK;
}

int cpli_flow_resolve(cpli_flow *f, char *why, size_t whylen) {
  size_t nr = 0, nh[2] = {0, 0};
  for (size_t i = 0; i < f->nm; i++)
    if (!f->m[i].send) nr += (size_t)f->m[i].np;
  for (size_t i = 0; i < f->nh; i++) nh[f->hbuf[i] ? 1 : 0]++;
  span *rs = malloc(sizeof *rs * (nr ? nr : 1));
  span *hs[2] = {malloc(sizeof(span) * (nh[0] ? nh[0] : 1)),
                 malloc(sizeof(span) * (nh[1] ? nh[1] : 1))};
  size_t *stamp = malloc(sizeof *stamp * (f->nm ? f->nm : 1));
  int rc = CPL_OK;
  if (!rs || !hs[0] || !hs[1] || !stamp) {
    rc = nomem();
    goto out;
  }
  nr = 0;
  for (size_t i = 0; i < f->nm; i++) {
    stamp[i] = (size_t)-1;
    if (f->m[i].send) continue;
    for (int j = 0; j < f->m[i].np; j++) {
      size_t pc = f->m[i].p0 + (size_t)j;
      rs[nr++] = (span){f->off[pc], f->len[pc], i};
    }
  }
  qsort(rs, nr, sizeof *rs, cmp_span);
  for (size_t i = 1; i < nr; i++)
    if (rs[i - 1].off + rs[i - 1].len > rs[i].off) {
      rc = cpli_sched_invalid(why, whylen, "receives %zu and %zu both write byte %zu",
                              rs[i - 1].msg, rs[i].msg, rs[i].off);
      goto out;
    }
  nh[0] = nh[1] = 0;
  for (size_t i = 0; i < f->nh; i++) {
    int b = f->hbuf[i] ? 1 : 0;
    hs[b][nh[b]++] = (span){f->hoff[i], f->hlen[i], 0};
  }
  for (int b = 0; b < 2; b++) {
    qsort(hs[b], nh[b], sizeof(span), cmp_span);
    nh[b] = merge_spans(hs[b], nh[b]);
  }
  /* no receive may overwrite data valid from the start */
  for (size_t i = 0, h = 0; i < nr; i++) {
    while (h < nh[0] && hs[0][h].off + hs[0][h].len <= rs[i].off) h++;
    if (h < nh[0] && hs[0][h].off < rs[i].off + rs[i].len) {
      rc = cpli_sched_invalid(why, whylen,
                              "receive %zu writes byte %zu, which holds data from the start",
                              rs[i].msg, rs[i].off > hs[0][h].off ? rs[i].off : hs[0][h].off);
      goto out;
    }
  }
  f->ndep = 0;
  for (size_t i = 0; i < f->nm; i++) {
    cpli_fmsg *m = &f->m[i];
    if (!m->send) continue;
    m->d0 = f->ndep;
    m->nd = 0;
    for (int j = 0; j < m->np; j++) {
      const size_t pc = m->p0 + (size_t)j, a = f->off[pc], b = a + f->len[pc];
      if (m->buf == 1) {
        if (!covered(hs[1], nh[1], a, b)) {
          rc = cpli_sched_invalid(why, whylen,
                                  "send %zu reads bytes %zu..%zu of the own buffer, not all valid",
                                  i, a, b - 1);
          goto out;
        }
        continue;
      }
      size_t lo = 0, hi = nr; /* first receive piece ending after a */
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rs[mid].off + rs[mid].len > a) hi = mid;
        else lo = mid + 1;
      }
      size_t cur = a;
      for (size_t k = lo; k < nr && rs[k].off < b; k++) {
        if (!covered(hs[0], nh[0], cur, rs[k].off)) {
          rc = cpli_sched_invalid(why, whylen, "send %zu reads byte %zu, which nothing provides", i,
                                  cur);
          goto out;
        }
        if (rs[k].off + rs[k].len > cur) cur = rs[k].off + rs[k].len;
        if ((rc = depend(f, m, stamp, i, rs[k].msg)) != CPL_OK) goto out;
      }
      if (cur < b && !covered(hs[0], nh[0], cur, b)) {
        rc = cpli_sched_invalid(why, whylen, "send %zu reads byte %zu, which nothing provides", i,
                                cur);
        goto out;
      }
    }
    if (m->after && (rc = depend(f, m, stamp, i, m->after - 1)) != CPL_OK) goto out; /* order */
  }
  f->resolved = 1;
out:
  free(rs);
  free(hs[0]);
  free(hs[1]);
  free(stamp);
  return rc;
}

/* ---------------------------------------------------------- builders */

static int map(const int *rank_of, int g) { return rank_of ? rank_of[g] : g; }

/* The note of a stream whose receiver forwards it (or not): the caller's
 * pipeline cut when it set one, else whole for that reason. */
static void note_fwd(cpli_flow *f, int caller, int forwarded) {
  f->note_why = caller == CPLI_CUT_PIPE ? caller : forwarded ? CPLI_CUT_BUSY : CPLI_CUT_LAST;
}

/* Does member r of Alg. 7 forward what it receives in round k? It gets
 * the blocks at offsets skips[k] .. skips[k+1] - 1 from itself and sends
 * offsets 0 .. d_k' - 1 in round k' > k: forwarded iff a non-empty block
 * lies in both (both ends know the counts, so they agree). */
static int alg7_forwarded(const cpli_circ *c, int r, int k, const size_t *counts) {
  const int p = c->p;
  for (int k2 = k + 1; k2 < c->q; k2++) {
    const int d2 = c->skips[k2 + 1] - c->skips[k2];
    for (int off = c->skips[k]; off < c->skips[k + 1] && off < d2; off++)
      if (counts[((long long)r + off) % p]) return 1;
  }
  return 0;
}

int cpli_flow_alg7(cpli_flow *f, const cpli_circ *c, int r, const int *rank_of,
                   const size_t *counts, const size_t *displs, size_t chunk) {
  const int p = c->p;
  if (p <= 1) return CPL_OK;
  size_t *seg = malloc(sizeof *seg * 2 * (size_t)p);
  if (!seg) return nomem();
  size_t *so = seg, *sl = seg + p;
  int rc = CPL_OK;
  const int caller = f->note_why;
  for (int k = 0; k < c->q && rc == CPL_OK; k++) {
    const int d = c->skips[k + 1] - c->skips[k];
    const int from = (int)(((long long)r + c->skips[k]) % p);
    const int to = (int)(((long long)r - c->skips[k] + p) % p);
    note_fwd(f, caller, alg7_forwarded(c, r, k, counts));
    for (int i = 0; i < d; i++) {
      const int j = (from + i) % p;
      so[i] = displs[j];
      sl[i] = counts[j];
    }
    rc = cpli_flow_stream(f, 0, map(rank_of, from), 0, d, so, sl, chunk);
    for (int i = 0; i < d && rc == CPL_OK; i++) {
      const int j = (r + i) % p;
      so[i] = displs[j];
      sl[i] = counts[j];
    }
    note_fwd(f, caller, alg7_forwarded(c, to, k, counts));
    if (rc == CPL_OK) rc = cpli_flow_stream(f, 1, map(rank_of, to), 0, d, so, sl, chunk);
  }
  f->note_why = caller;
  free(seg);
  return rc;
}

/* Bytes [lo, lo + l) of the string that n segments (off, len; segment i
 * starts at string byte at[i]) form, as pieces of those segments in
 * so, sl; returns how many. */
static int string_range(int n, const size_t *off, const size_t *len, const size_t *at, size_t lo,
                        size_t l, size_t *so, size_t *sl) {
  int a = 0, b = n - 1; /* the last segment starting at or before lo */
  while (a < b) {
    const int mid = a + (b - a + 1) / 2;
    if (at[mid] <= lo) a = mid;
    else b = mid - 1;
  }
  int k = 0;
  for (int i = a; i < n && l > 0; i++) {
    if (lo >= at[i] + len[i]) continue; /* empty, or ends before lo */
    const size_t from = lo - at[i], take = len[i] - from < l ? len[i] - from : l;
    so[k] = off[i] + from;
    sl[k++] = take;
    lo += take;
    l -= take;
  }
  return k;
}

#define BCAST_STACK_SEGS 8 /* segments described without malloc */

int cpli_flow_bcast_segs(cpli_flow *f, const cpli_circ *c, int rel, const int *rank_of,
                         int root_buf, int nseg, const size_t *off, const size_t *len,
                         long long n) {
  const int p = c->p, q = c->q;
  size_t bytes = 0;
  for (int i = 0; i < nseg; i++) bytes += len[i];
  if (p <= 1 || bytes == 0) return CPL_OK;
  if (rel < 0 || rel >= p) return cpli_fail(CPL_ERR_ARG, "broadcast plan: member %d of %d", rel, p);
  if (n < 1) n = 1;
  if ((unsigned long long)n > bytes) n = (long long)bytes;
  const long long lo = (long long)((bytes - 1) / CPLI_FLOW_MAX_MSG + 1);
  if (n < lo) n = lo;
  int recv[CPLI_CIRC_QMAX], send[CPLI_CIRC_QMAX];
  if (cpli_circ_recvsched(c, rel, q, recv) || cpli_circ_sendsched(c, rel, send))
    return cpli_fail(CPL_ERR_INTERNAL, "broadcast plan: no schedule for member %d of %d", rel, p);
  size_t stack[3 * BCAST_STACK_SEGS + 1];
  size_t *at = nseg <= BCAST_STACK_SEGS ? stack : malloc(sizeof *at * (3 * (size_t)nseg + 1));
  if (!at) return nomem();
  size_t *so = at + nseg + 1, *sl = so + nseg;
  at[0] = 0;
  for (int i = 0; i < nseg; i++) at[i + 1] = at[i] + len[i];
  const int x = cpli_circ_offset(q, n);
  const size_t bq = bytes / (size_t)n, brem = bytes % (size_t)n;
  const int caller = f->note_why;
  f->note_why = CPLI_CUT_BCAST;
  int rc = CPL_OK;
  for (long long t = 0; t < n + q - 1 && rc == CPL_OK; t++) {
    const long long v = x + t;
    const int k = (int)(v % q);
    for (int dir = 0; dir < 2 && rc == CPL_OK; dir++) { /* 0: the receive, 1: the send */
      if (dir == 0 && rel == 0) continue;               /* the root receives nothing */
      const int peer = dir ? (int)(((long long)rel + c->skips[k]) % p)
                           : (int)(((long long)rel - c->skips[k] + p) % p);
      if (dir && peer == 0) continue; /* nobody sends to the root */
      const long long b = cpli_circ_block(q, dir ? send[k] : recv[k], v, x, n);
      if (b < 0) continue;
      const size_t bo = (size_t)b * bq + ((size_t)b < brem ? (size_t)b : brem);
      const size_t bl = bq + ((size_t)b < brem ? 1 : 0);
      const int ns = string_range(nseg, off, len, at, bo, bl, so, sl);
      rc = cpli_flow_stream(f, dir, map(rank_of, peer), dir && rel == 0 ? root_buf : 0, ns, so, sl,
                            0);
    }
  }
  f->note_why = caller;
  if (at != stack) free(at);
  return rc;
}

int cpli_flow_bcast(cpli_flow *f, const cpli_circ *c, int rel, const int *rank_of, int root_buf,
                    size_t off, size_t bytes, long long n) {
  return cpli_flow_bcast_segs(f, c, rel, rank_of, root_buf, 1, &off, &bytes, n);
}

int cpli_flow_ring_cut(cpli_flow *f, int n, int r, const int *rank_of, const size_t *counts,
                       const size_t *displs, size_t first, size_t rest, int nown) {
  if (n <= 1) return CPL_OK;
  const int right = map(rank_of, (r + 1) % n), left = map(rank_of, (r - 1 + n) % n);
  const int lm = (r - 1 + n) % n, caller = f->note_why;
  for (int i = 0; i < n - 1; i++) {
    const int sb = ((r - i) % n + n) % n, rb = ((r - i - 1) % n + n) % n;
    /* step i: the receiver forwards it unless it is its last (n - 2) */
    const int sfirst = i == 0 || r >= nown, rfirst = i == 0 || lm >= nown;
    note_fwd(f, sfirst ? caller : 0, i < n - 2);
    CPLI_TRY(cpli_flow_stream(f, 1, right, 0, 1, &displs[sb], &counts[sb], sfirst ? first : rest));
    note_fwd(f, rfirst ? caller : 0, i < n - 2);
    CPLI_TRY(cpli_flow_stream(f, 0, left, 0, 1, &displs[rb], &counts[rb], rfirst ? first : rest));
  }
  f->note_why = caller;
  return CPL_OK;
}

int cpli_flow_ring(cpli_flow *f, int n, int r, const int *rank_of, const size_t *counts,
                   const size_t *displs, size_t chunk) {
  return cpli_flow_ring_cut(f, n, r, rank_of, counts, displs, chunk, chunk, n);
}

/* Depth of fc's p < q broadcast pipeline: Alg. 6's rounds, plus the
 * subgroup's forward when there is a subgroup allgather. */
static int fc_bcast_depth(int p, int q) {
  return cpli_ceil_log2(q / p + 1) + (p > 1 || q % p > 0 ? 1 : 0);
}

long long cpli_flow_fc_nblocks(int p, int q, size_t k, const cpli_fc_opts *o) {
  return cpli_flow_bcast_nblocks(k, fc_bcast_depth(p, q), o);
}

long long cpli_flow_bcast_nblocks(size_t k, int depth, const cpli_fc_opts *o) {
  if (!o->model) return o->nblocks;
  if (o->chunk == 0) return cpli_cut_pieces(&o->cut, k, depth);
  long long c = k ? (long long)((k - 1) / o->chunk + 1) : 1;
  /* one block per chunk, but no more blocks than a stream has messages */
  if (c > (long long)CPLI_FLOW_MAX_STREAM_MSGS) c = (long long)CPLI_FLOW_MAX_STREAM_MSGS;
  return c > o->nblocks ? c : o->nblocks;
}

int cpli_flow_fc(cpli_flow *f, int p, int q, int me, const size_t *counts, const size_t *displs,
                 size_t own_bytes, const cpli_fc_opts *o) {
  /* With the model, chunk is a fixed override; without, the one cut. */
  const int modelled = o->model && o->chunk == 0;
  const size_t chunk = o->chunk;
  if (p < 1 || q < 1 || me < 0 || me >= p + q)
    return cpli_fail(CPL_ERR_ARG, "fc plan: rank %d of %d senders + %d receivers", me, p, q);
  const int sender = me < p;
  f->cut_fixed = chunk > 0;
  if (sender) CPLI_TRY(cpli_flow_have(f, 1, 0, own_bytes));
  if ((!sender || (p > q && me >= q)) && (!counts || !displs))
    return cpli_fail(CPL_ERR_ARG, "fc plan: rank %d needs the block sizes", me);
  cpli_circ c;
  if (p >= q) {
    /* The direct block is forwarded by its receiver at once, in the
     * allgather's first step (unless p = 1), and every later step of the
     * ring relays what the step before brings. For p > q the ring also
     * holds senders, whose blocks are there from the start: sent whole,
     * each step would hold the ring back by a block time (6|2 at 1 MiB on
     * the emulated cluster: 1.26 of the bound whole, 1.09 with only the
     * direct blocks and the first step cut, 1.01-1.03 with every step
     * cut). So both are pipelines of depth 2: the direct block is cut by
     * its own length (its sender knows no other size), the ring's streams
     * by the largest. For p = q the ring holds receivers only, all taking
     * their direct blocks at once and then the ring's steps together:
     * every receiver's port is busy from first byte to last, so pieces
     * only cost start-ups and split the port between two streams (4|4,
     * 21 rounds: 1.03-1.04 of the bound whole at 512 KiB and 1 MiB, 1.11-
     * 1.12 cut; 1.07-1.08 both at 2 MiB). */
    const int cut = modelled && p > q; /* p > q >= 1: p > 1 */
    f->note_why = p > 1 ? (cut ? CPLI_CUT_PIPE : CPLI_CUT_PORT) : CPLI_CUT_LAST;
    f->note_depth = cut ? 2 : 1;
    const size_t L = sender ? own_bytes : counts[me - p];
    const size_t direct = cut ? cpli_cut_chunk(L, cpli_cut_pieces(&o->cut, L, 2)) : chunk;
    if (sender && me < q) /* straight to receiver me */
      return cpli_flow_stream(f, 1, p + me, 1, 1, (size_t[]){0}, &own_bytes, direct);
    int *rank_of = malloc(sizeof *rank_of * (size_t)p);
    if (!rank_of) return nomem();
    for (int g = 0; g < p; g++) rank_of[g] = g < q ? p + g : g;
    const int g = sender ? me : me - p;
    int rc = CPL_OK;
    if (sender) rc = cpli_flow_have(f, 0, displs[g], counts[g]);
    else rc = cpli_flow_stream(f, 0, g, 0, 1, &displs[g], &counts[g], direct);
    f->note_why = 0; /* the allgather's builders note their streams */
    if (rc == CPL_OK && o->ring && cut && p > 2) {
      /* p = 2: the ring's one step is not forwarded, whole. */
      size_t kmax = 0;
      for (int m = 0; m < p; m++) kmax = counts[m] > kmax ? counts[m] : kmax;
      const size_t pipe = cpli_cut_chunk(kmax, cpli_cut_pieces(&o->cut, kmax, 2));
      f->note_why = CPLI_CUT_PIPE;
      rc = cpli_flow_ring_cut(f, p, g, rank_of, counts, displs, pipe, pipe, 0);
      f->note_why = 0;
    } else if (rc == CPL_OK && o->ring)
      rc = cpli_flow_ring(f, p, g, rank_of, counts, displs, chunk);
    if (rc == CPL_OK && !o->ring) rc = cpli_circ_init(&c, p);
    if (rc == CPL_OK && !o->ring) rc = cpli_flow_alg7(f, &c, g, rank_of, counts, displs, chunk);
    free(rank_of);
    return rc;
  }
  const int s = q / p, e = q % p;
  f->note_depth = o->model ? fc_bcast_depth(p, q) : 1;
  int *rank_of = malloc(sizeof *rank_of * (size_t)(p + (s + 1) + e / s + 1));
  if (!rank_of) return nomem();
  int rc = cpli_circ_init(&c, s + 1);
  /* broadcast group of sender i: member 0 is the sender, t > 0 receiver i + (t-1) p */
  const int j = me - p, i = sender ? me : j % p;
  if (rc == CPL_OK && (sender || j < s * p)) {
    for (int t = 0; t <= s; t++) rank_of[t] = t == 0 ? i : p + i + (t - 1) * p;
    const int t = sender ? 0 : 1 + j / p;
    const size_t off = sender ? 0 : displs[i], bytes = sender ? own_bytes : counts[i];
    rc = cpli_flow_bcast(f, &c, t, rank_of, 1, off, bytes, cpli_flow_fc_nblocks(p, q, bytes, o));
  }
  if (rc != CPL_OK || sender) {
    free(rank_of);
    return rc;
  }
  /* receiver subgroup T: receivers T p .. T p + p - 1, then remainder
   * receivers s p + u (u < e, u mod s = T) with empty blocks */
  const int T = j < s * p ? j / p : (j - s * p) % s;
  int n = 0, g = -1;
  for (int m = 0; m < p; m++) rank_of[n++] = p + T * p + m;
  for (int u = T; u < e; u += s) {
    if (s * p + u == j) g = n;
    rank_of[n++] = p + s * p + u;
  }
  if (j < s * p) g = j % p;
  /* Modelled: streams that forward a block still arriving by broadcast are
   * cut at the largest block's broadcast piece (every member knows all
   * sizes). The ring's later steps are whole when every member has a block
   * of its own to send meanwhile; remainder members have none, so a ring
   * with them is one long pipeline and every step is cut (3|5 at 1 MiB on
   * the emulated cluster: 1.74 of the bound with whole steps, 1.36 cut). */
  size_t pipe = chunk;
  if (modelled) {
    size_t kmax = 0;
    for (int m = 0; m < p; m++) kmax = counts[m] > kmax ? counts[m] : kmax;
    pipe = cpli_cut_chunk(kmax, cpli_flow_fc_nblocks(p, q, kmax, o));
    f->note_why = CPLI_CUT_PIPE;
  } else {
    f->note_why = 0;
  }
  size_t *cd = calloc(2 * (size_t)n, sizeof *cd);
  if (!cd) rc = nomem();
  for (int m = 0; rc == CPL_OK && m < p; m++) cd[m] = counts[m], cd[n + m] = displs[m];
  /* members with a block of their own: all but the remainder (0: cut all) */
  int nown = n;
  if (modelled) nown = n == p ? p : 0;
  if (rc == CPL_OK && o->ring)
    rc = cpli_flow_ring_cut(f, n, g, rank_of, cd, cd + n, pipe, modelled ? 0 : chunk, nown);
  if (rc == CPL_OK && !o->ring) rc = cpli_circ_init(&c, n);
  if (rc == CPL_OK && !o->ring) rc = cpli_flow_alg7(f, &c, g, rank_of, cd, cd + n, pipe);
  f->note_why = 0;
  free(cd);
  free(rank_of);
  return rc;
}

/* ---------------------------------------------------------- forwarded */

/* The message of plan g matching message mi of plan f (rank me), or g->nm:
 * the same ordinal among the messages between the two, other direction. */
static size_t partner(const cpli_flow *f, size_t mi, int me, const cpli_flow *g) {
  const int peer = f->m[mi].peer, send = f->m[mi].send;
  size_t ord = 0, seen = 0, x;
  for (x = 0; x < mi; x++) ord += f->m[x].send == send && f->m[x].peer == peer;
  for (x = 0; x < g->nm; x++)
    if (g->m[x].send != send && g->m[x].peer == me && seen++ == ord) break;
  return x;
}

/* Whether send i waits for a receive that brings bytes (not only for a
 * signal, as a sender that waits for its turn does). */
static int waits_for_data(const cpli_flow *f, size_t i) {
  for (int d = 0; d < f->m[i].nd; d++)
    if (f->m[f->dep[f->m[i].d0 + (size_t)d]].np > 0) return 1;
  return 0;
}

int cpli_flow_forwarded(int nranks, cpli_flow *const *plans, int me, unsigned char **fwd,
                        unsigned char **relay) {
  const cpli_flow *f = plans[me];
  *fwd = calloc(f->nnote ? f->nnote : 1, 1);
  if (relay) *relay = calloc(f->nnote ? f->nnote : 1, 1);
  if (!*fwd || (relay && !*relay)) goto nomem;
  for (size_t k = 0; k < f->nnote; k++) {
    const cpli_fnote *nt = &f->note[k];
    if (nt->peer < 0 || nt->peer >= nranks) continue;
    const cpli_flow *g = plans[nt->peer];
    const cpli_flow *rf = nt->send ? g : f; /* the receiving end */
    unsigned char *dep = calloc(rf->nm ? rf->nm : 1, 1);
    if (!dep) goto nomem;
    for (size_t x = 0; x < rf->ndep; x++) dep[rf->dep[x]] = 1;
    for (size_t mi = nt->m0; mi < nt->m0 + nt->nmsg; mi++) {
      const size_t pm = partner(f, mi, me, g);
      if (pm == g->nm) continue;
      (*fwd)[k] |= dep[nt->send ? pm : mi];
      if (relay) (*relay)[k] |= waits_for_data(nt->send ? f : g, nt->send ? mi : pm);
    }
    free(dep);
  }
  return CPL_OK;
nomem:
  free(*fwd);
  *fwd = NULL;
  if (relay) free(*relay), *relay = NULL;
  return nomem();
}

/* ---------------------------------------------------------- simulate */

typedef struct key {
  int peer;
  size_t ord, msg;
} key;

static int cmp_key(const void *a, const void *b) {
  const key *x = a, *y = b;
  if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
  return (x->ord > y->ord) - (x->ord < y->ord);
}

int cpli_flow_simulate(int nranks, cpli_flow *const *plans, unsigned char *const *buf0,
                       unsigned char *const *buf1, char *why, size_t whylen) {
  int rc = 0;
  key **recvs = calloc((size_t)nranks, sizeof *recvs);
  size_t *nrecv = calloc((size_t)nranks, sizeof *nrecv);
  unsigned char **done = calloc((size_t)nranks, sizeof *done);
  size_t **sord = calloc((size_t)nranks, sizeof *sord); /* ordinal of each send per peer */
  size_t **next = calloc((size_t)nranks, sizeof *next); /* next send ordinal per peer */
  size_t *first = calloc((size_t)nranks, sizeof *first);
  unsigned char *tmp = NULL;
  size_t tmpcap = 0;
  if (!recvs || !nrecv || !done || !sord || !next || !first) {
    rc = CPL_ERR_NOMEM;
    goto out;
  }
  for (int r = 0; r < nranks; r++) {
    const cpli_flow *f = plans[r];
    if (!f->resolved) {
      rc = cpli_sched_invalid(why, whylen, "rank %d: plan not resolved", r);
      goto out;
    }
    size_t *cnt_s = calloc((size_t)nranks, sizeof *cnt_s),
           *cnt_r = calloc((size_t)nranks, sizeof *cnt_r);
    recvs[r] = malloc(sizeof(key) * (f->nm ? f->nm : 1));
    done[r] = calloc(f->nm ? f->nm : 1, 1);
    sord[r] = malloc(sizeof(size_t) * (f->nm ? f->nm : 1));
    next[r] = calloc((size_t)nranks, sizeof(size_t));
    if (!cnt_s || !cnt_r || !recvs[r] || !done[r] || !sord[r] || !next[r]) {
      free(cnt_s);
      free(cnt_r);
      rc = CPL_ERR_NOMEM;
      goto out;
    }
    for (size_t i = 0; i < f->nm; i++) {
      const cpli_fmsg *m = &f->m[i];
      if (m->peer < 0 || m->peer >= nranks || m->peer == r) {
        free(cnt_s);
        free(cnt_r);
        rc = cpli_sched_invalid(why, whylen, "rank %d message %zu: bad peer %d", r, i, m->peer);
        goto out;
      }
      if (m->send) sord[r][i] = cnt_s[m->peer]++;
      else recvs[r][nrecv[r]++] = (key){m->peer, cnt_r[m->peer]++, i};
    }
    free(cnt_s);
    free(cnt_r);
    qsort(recvs[r], nrecv[r], sizeof(key), cmp_key);
  }
  for (int progress = 1; progress;) {
    progress = 0;
    for (int r = 0; r < nranks; r++) {
      const cpli_flow *f = plans[r];
      while (first[r] < f->nm && (f->m[first[r]].send ? done[r][first[r]] : 1)) first[r]++;
      for (size_t i = first[r]; i < f->nm; i++) {
        const cpli_fmsg *m = &f->m[i];
        if (!m->send || done[r][i] || sord[r][i] != next[r][m->peer]) continue;
        int ready = 1;
        for (int d = 0; d < m->nd && ready; d++) ready = done[r][f->dep[m->d0 + (size_t)d]];
        if (!ready) continue;
        /* deliver into the receiver's matching receive */
        const int y = m->peer;
        key want = {r, sord[r][i], 0};
        key *hit = bsearch(&want, recvs[y], nrecv[y], sizeof(key), cmp_key);
        if (!hit) {
          rc = cpli_sched_invalid(why, whylen,
                                  "send %zu of rank %d (#%zu to rank %d) has no matching receive",
                                  i, r, sord[r][i], y);
          goto out;
        }
        const cpli_fmsg *t = &plans[y]->m[hit->msg];
        if (t->bytes != m->bytes) {
          rc = cpli_sched_invalid(why, whylen,
                                  "send %zu of rank %d carries %zu bytes, receive %zu of rank %d "
                                  "expects %zu",
                                  i, r, m->bytes, hit->msg, y, t->bytes);
          goto out;
        }
        if (m->bytes > tmpcap) {
          unsigned char *n = realloc(tmp, m->bytes);
          if (!n) {
            rc = CPL_ERR_NOMEM;
            goto out;
          }
          tmp = n;
          tmpcap = m->bytes;
        }
        size_t w = 0;
        for (int j = 0; j < m->np; j++) {
          const size_t pc = m->p0 + (size_t)j;
          memcpy(tmp + w, (m->buf ? buf1[r] : buf0[r]) + f->off[pc], f->len[pc]);
          w += f->len[pc];
        }
        w = 0;
        for (int j = 0; j < t->np; j++) {
          const size_t pc = t->p0 + (size_t)j;
          memcpy(buf0[y] + plans[y]->off[pc], tmp + w, plans[y]->len[pc]);
          w += plans[y]->len[pc];
        }
        done[y][hit->msg] = 1;
        done[r][i] = 1;
        next[r][y]++;
        progress = 1;
      }
    }
  }
  for (int r = 0; r < nranks; r++)
    for (size_t i = 0; i < plans[r]->nm; i++)
      if (!done[r][i]) {
        const cpli_fmsg *m = &plans[r]->m[i];
        rc = cpli_sched_invalid(
            why, whylen, "stuck: rank %d %s %zu %s rank %d (%zu bytes) never completes", r,
            m->send ? "send" : "receive", i, m->send ? "to" : "from", m->peer, m->bytes);
        goto out;
      }
out:
  for (int r = 0; recvs && r < nranks; r++) {
    free(recvs[r]);
    if (done) free(done[r]);
    if (sord) free(sord[r]);
    if (next) free(next[r]);
  }
  free(recvs);
  free(nrecv);
  free(done);
  free(sord);
  free(next);
  free(first);
  free(tmp);
  return rc;
}
