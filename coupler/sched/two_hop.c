/*
 * The two-hop inter-group allgather as one dataflow plan; see flow.h
 * (cpli_flow_two_hop) for what it does and coll/inter_two_hop.c for why.
 */
#include <stdlib.h>

#include "core/error.h"
#include "coupler.h"
#include "sched/flow.h"

static int first_holder(int b, int p, int q) { return (int)((long long)b * q / p); }

/* Streams the busiest receiver sends with r holders per block: holder
 * index e of block b feeds the non-holders d = r + ((e - b) mod r) + r t
 * < q (see cpli_two_hop_source). O(p r) time, O(q) memory. */
static long long count_fanout(int p, int q, int r) {
  if (r >= q) return 0;
  if ((long long)p * r > 100000) /* bound it: blocks held x fan per block */
    return ((long long)p * r + q - 1) / q * ((q - r + r - 1) / r);
  long long *out = calloc((size_t)q, sizeof *out), most = 0;
  if (!out) return ((long long)p * r + q - 1) / q * ((q - r + r - 1) / r);
  for (int b = 0; b < p; b++)
    for (int e = 0; e < r; e++) {
      const int d0 = r + ((e - b) % r + r) % r;
      if (d0 < q) out[(first_holder(b, p, q) + e) % q] += (q - 1 - d0) / r + 1;
    }
  for (int j = 0; j < q; j++) most = out[j] > most ? out[j] : most;
  free(out);
  return most;
}

long long cpli_two_hop_fanout(int p, int q, int r) {
  /* plans ask once per block, auto on every call, for r = p - 1 and then
   * often r = p: remember the last two */
  static _Thread_local struct {
    int p, q, r;
    long long fan;
  } last[2] = {{-1, -1, -1, 0}, {-1, -1, -1, 0}};
  for (int i = 0; i < 2; i++)
    if (last[i].p == p && last[i].q == q && last[i].r == r) return last[i].fan;
  last[1] = last[0];
  last[0].fan = count_fanout(p, q, r), last[0].p = p, last[0].q = q, last[0].r = r;
  return last[0].fan;
}

int cpli_two_hop_holders(int p, int q, size_t k, double beta) {
  if (p > q || p <= 1) return p < q ? p : q; /* p > q: all direct */
  /* p <= q: r = p - 1 leaves a sender's port room, so that only the
   * receivers' ports are full, if no receiver then feeds more than p
   * streams (fewer holders only feed more); but a block that takes
   * CPLI_TWO_HOP_DIRECT_S or more goes to p holders (fewer relays: the
   * loss of full ports at both ends is a start-up of TCP's shares) */
  if (beta > 0 && (double)k * beta >= CPLI_TWO_HOP_DIRECT_S) return p;
  return cpli_two_hop_fanout(p, q, p - 1) <= p ? p - 1 : p;
}

/* Admission (p > q): receiver j takes its streams in rounds, round i
 * from the senders whose first holder is j - i (a contiguous range of
 * them, in sender order). */
static int range_start(int h, int p, int q) { return (int)(((long long)h * p + q - 1) / q); }

long long cpli_two_hop_admit_position(int b, int j, int p, int q) {
  const int h0 = first_holder(b, p, q), i = ((j - h0) % q + q) % q;
  long long k = b - range_start(h0, p, q);
  for (int t = 0; t < i; t++) {
    const int h = ((j - t) % q + q) % q;
    k += range_start(h + 1, p, q) - range_start(h, p, q);
  }
  return k;
}

/* The sender in position k at receiver j (the inverse). */
static int admit_sender(long long k, int j, int p, int q) {
  for (int t = 0; t < q; t++) {
    const int h = ((j - t) % q + q) % q, n = range_start(h + 1, p, q) - range_start(h, p, q);
    if (k < n) return range_start(h, p, q) + (int)k;
    k -= n;
  }
  return -1;
}

int cpli_two_hop_admits(int p, int q, size_t k, const cpli_cut_model *m) {
  return p > q && p > CPLI_TWO_HOP_MAX_FAN_IN && m->alpha > 0 && m->beta > 0 &&
         2 * m->alpha <= (CPLI_TWO_HOP_FAN_IN - 1) * (double)k * m->beta;
}

int cpli_two_hop_source(int b, int j, int p, int q, int r) {
  const int h0 = first_holder(b, p, q), d = ((j - h0) % q + q) % q;
  if (d < r) return -1;
  /* the non-holders, in ring order after the holders, take turns over the
   * holders, rotated by b so that one holder-receiver pair rarely carries
   * two blocks */
  return (h0 + ((d - r) + b) % r) % q;
}

/* Holder h of block b (index e = h - first holder) passes it on to the
 * non-holders d = r + ((e - b) mod r) + r t < q (ring order after the
 * first holder), the inverse of cpli_two_hop_source; returns the first
 * such d, or q if none. */
static int first_target(int b, int h, int p, int q, int r) {
  const int e = ((h - first_holder(b, p, q)) % q + q) % q;
  if (e >= r) return q;
  return r + ((e - b) % r + r) % r;
}

static int relays(int b, int h, int p, int q, int r) { return first_target(b, h, p, q, r) < q; }

int cpli_flow_two_hop(cpli_flow *f, int p, int q, int me, const size_t *counts,
                      const size_t *displs, size_t own_bytes, const cpli_fc_opts *o) {
  if (p < 1 || q < 1 || me < 0 || me >= p + q)
    return cpli_fail(CPL_ERR_ARG, "two-hop plan: rank %d of %d senders + %d receivers", me, p, q);
  if (me >= p && (!counts || !displs))
    return cpli_fail(CPL_ERR_ARG, "two-hop plan: receiver %d needs the block sizes", me - p);
  f->cut_fixed = o->chunk > 0;
  if (me < p) { /* sender: its block to its r holders */
    const int r = cpli_two_hop_holders(p, q, own_bytes, o->cut.beta);
    const int admits = cpli_two_hop_admits(p, q, own_bytes, &o->cut);
    CPLI_TRY(cpli_flow_have(f, 1, 0, own_bytes));
    for (int i = 0; i < r; i++) {
      const int h = (first_holder(me, p, q) + i) % q, rel = relays(me, h, p, q, r);
      size_t go = CPLI_FLOW_NONE; /* the receiver's signal to start */
      if (admits && cpli_two_hop_admit_position(me, h, p, q) >= CPLI_TWO_HOP_FAN_IN) {
        go = f->nm;
        CPLI_TRY(cpli_flow_signal(f, 0, p + h, CPLI_FLOW_NONE));
      }
      const size_t m0 = f->nm;
      CPLI_TRY(cpli_flow_block(f, 1, p + h, 1, 0, own_bytes, cpli_flow_pipe_cut(o, own_bytes, rel),
                               rel));
      if (go != CPLI_FLOW_NONE && f->nm > m0) CPLI_TRY(cpli_flow_order(f, go, m0));
    }
    return CPL_OK;
  }
  /* Receiver j: every block from its sender or from one holder, and the
   * blocks it holds on to the receivers that take them from it. Between
   * two receivers both ends list their streams by block. */
  const int j = me - p;
  size_t *last = p > q ? malloc(sizeof *last * (size_t)p) : NULL; /* stream b's last message */
  if (p > q && !last) return cpli_fail(CPL_ERR_NOMEM, "two-hop plan: out of memory");
  int rc = CPL_OK;
  for (int b = 0; b < p && rc == CPL_OK; b++) {
    const int r = cpli_two_hop_holders(p, q, counts[b], o->cut.beta);
    const int src = cpli_two_hop_source(b, j, p, q, r);
    if (src < 0) {
      const int rel = relays(b, j, p, q, r);
      rc = cpli_flow_block(f, 0, b, 0, displs[b], counts[b], cpli_flow_pipe_cut(o, counts[b], rel),
                           rel);
      if (last) last[b] = counts[b] ? f->nm - 1 : CPLI_FLOW_NONE;
    } else {
      rc = cpli_flow_block(f, 0, p + src, 0, displs[b], counts[b],
                           cpli_flow_pipe_cut(o, counts[b], 1), 1);
    }
    const int h0 = first_holder(b, p, q);
    for (int d = first_target(b, j, p, q, r); d < q && rc == CPL_OK; d += r)
      rc = cpli_flow_block(f, 1, p + (h0 + d) % q, 0, displs[b], counts[b],
                           cpli_flow_pipe_cut(o, counts[b], 1), 1);
  }
  /* Admission: the sender in position k starts when the stream in position
   * k - CPLI_TWO_HOP_FAN_IN has arrived (p > q: every stream is direct). */
  for (long long k = CPLI_TWO_HOP_FAN_IN; last && k < p && rc == CPL_OK; k++) {
    const int s = admit_sender(k, j, p, q);
    if (cpli_two_hop_admits(p, q, counts[s], &o->cut))
      rc = cpli_flow_signal(f, 1, s, last[admit_sender(k - CPLI_TWO_HOP_FAN_IN, j, p, q)]);
  }
  free(last);
  return rc;
}
