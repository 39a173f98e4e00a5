/*
 * The chains inter-group allgather as one dataflow plan; see flow.h
 * (cpli_flow_chains) for what it does and coll/inter_chains.c for why.
 */
#include "core/error.h"
#include "coupler.h"
#include "sched/flow.h"

int cpli_chains_groups(int p, int q) { return p < q ? p : q; }

int cpli_chains_depth(int p, int q) {
  const int g = cpli_chains_groups(p, q);
  return g > 0 ? (q + g - 1) / g : 0;
}

/* The block group g takes in round rho (sender b feeds group b + rho). */
static int round_block(int g, int rho, int p) { return ((g - rho) % p + p) % p; }

/* Members of group g: receivers g, g + G, g + 2G, ... < q. */
static int group_size(int g, int G, int q) { return (q - g + G - 1) / G; }

/* Sender b: its block to the head of every group, one round after the
 * other; from the second round on each stream waits for the head's word
 * that the round before is nearly in. */
static int sender_plan(cpli_flow *f, int p, int q, int b, size_t own_bytes, const cpli_fc_opts *o) {
  const int G = cpli_chains_groups(p, q);
  CPLI_TRY(cpli_flow_have(f, 1, 0, own_bytes));
  for (int rho = 0; rho < p; rho++) {
    const int g = (b + rho) % p;
    if (g >= G) continue; /* p > q: no group this round */
    size_t go = CPLI_FLOW_NONE;
    if (rho > 0) {
      go = f->nm;
      CPLI_TRY(cpli_flow_signal(f, 0, p + g, CPLI_FLOW_NONE));
    }
    const int fwd = group_size(g, G, q) > 1;
    const size_t m0 = f->nm;
    CPLI_TRY(
        cpli_flow_block(f, 1, p + g, 1, 0, own_bytes, cpli_flow_pipe_cut(o, own_bytes, fwd), fwd));
    if (go != CPLI_FLOW_NONE && f->nm > m0) CPLI_TRY(cpli_flow_order(f, go, m0));
  }
  return CPL_OK;
}

int cpli_flow_chains(cpli_flow *f, int p, int q, int me, const size_t *counts, const size_t *displs,
                     size_t own_bytes, const cpli_fc_opts *o) {
  if (p < 1 || q < 1 || me < 0 || me >= p + q)
    return cpli_fail(CPL_ERR_ARG, "chains plan: rank %d of %d senders + %d receivers", me, p, q);
  if (me >= p && (!counts || !displs))
    return cpli_fail(CPL_ERR_ARG, "chains plan: receiver %d needs the block sizes", me - p);
  f->cut_fixed = o->chunk > 0;
  if (me < p) return sender_plan(f, p, q, me, own_bytes, o);
  const int G = cpli_chains_groups(p, q), j = me - p, g = j % G, t = j / G;
  const int fwd = group_size(g, G, q) > 1, down = t + 1 < group_size(g, G, q);
  size_t last = CPLI_FLOW_NONE; /* the latest receive that brought bytes */
  for (int rho = 0; rho < p; rho++) {
    const int b = round_block(g, rho, p);
    const size_t c = cpli_flow_pipe_cut(o, counts[b], fwd), m0 = f->nm;
    CPLI_TRY(cpli_flow_block(f, 0, t == 0 ? b : me - G, 0, displs[b], counts[b], c, fwd));
    if (f->nm > m0) /* the head's word goes when one piece is left to come */
      last = f->nm - (f->nm - m0 > 1 ? 2 : 1);
    if (down) CPLI_TRY(cpli_flow_block(f, 1, me + G, 0, displs[b], counts[b], c, 1));
    if (t == 0 && rho + 1 < p) CPLI_TRY(cpli_flow_signal(f, 1, round_block(g, rho + 1, p), last));
  }
  return CPL_OK;
}
