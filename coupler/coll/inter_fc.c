/*
 * Kang et al. (2018), optimal half-duplex inter-group allgather on a fully
 * connected network (Section III), p senders, q receivers, k bytes each.
 *
 * p >= q: senders 0..q-1 send their block to receivers 0..q-1; senders
 *   q..p-1 join the receivers in one group of p whose rank i holds block i,
 *   and that group runs an intra-group allgather(v).
 *   Cost: (1 + ceil(log2 p)) alpha + p k beta (circulant intra phase);
 *   coll/cost.c charges the allgather's bytes CPLI_DUPLEX_SHARE more, as
 *   its members send while they receive.
 * p < q: with q = s p + e, receiver j < s p joins broadcast group j mod p,
 *   rooted at sender j mod p; the sender broadcasts its block with Traff's
 *   round-optimal n-block broadcast, not a binomial tree, so the broadcast
 *   costs about k beta instead of 2 k beta. Then receiver subgroups
 *   {t p .. t p + p - 1} (each holds every block once) run an intra-group
 *   allgather. The paper assumes p | q; here the e remainder receivers
 *   join subgroup (j - s p) mod s contributing nothing, so they receive all p
 *   blocks in the allgather phase and the bound still holds.
 *   Cost: about (ceil(log2(s+1)) + ceil(log2 p) + n - 1) alpha
 *         + (p - 1 + (n + ceil(log2(s+1)) - 1)/n) k beta, n blocks.
 *
 * Execution. By default the whole algorithm is one dataflow plan on the
 * merged communicator (sched/flow.h: cpli_flow_fc; coll/flow_exec.c):
 * every block moves as a stream, cut into messages where the cut model
 * (sched/cut.h; coll/fc_plan.c) says a forward would otherwise wait: p < q
 * receivers forward the pieces of their broadcast block in the allgather
 * phase while the rest is still arriving; for p > q the direct blocks
 * and the ring after them are cut, as each ring step relays the one
 * before; for p = q they move whole, as every receiver's port is busy
 * throughout (sched/flow.c, cpli_flow_fc, says what was measured). CPL_CHUNK
 * forces one cut everywhere (the behaviour before the model: 32K). The
 * phases overlap and nothing waits for a step boundary. The allgather phase is
 * Traff's Alg. 7 or, where cpli_ring_preferred says its extra start-ups
 * are cheap next to the transfer, a pipelined ring, which keeps one peer
 * per direction (what TCP networks reward). On the emulated cluster (8
 * nodes, 50 MB/s links, one interleaved run of 11, 128 KiB..4 MiB) the
 * lockstep phases took 1.03-1.11 of the bound p k / B at 4|4, 1.07-1.18 at
 * 6|2 and 1.39-2.0 at 2|6; the plan 1.02-1.19, 1.02-1.09 and 1.19-1.48
 * (2|6 at 1 MiB: 1.82 -> 1.19). CPL_FLOW=0
 * runs the lockstep phases below; so does an intra-group algorithm other
 * than circulant or ring asked for by name (a->intra).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/fc_plan.h"
#include "coll/intra_circulant.h"
#include "coll/link.h"
#include "coll/tuning.h"

/* Helper communicators, built once per link direction (collective over the
 * merged communicator: both groups take the same branches). */
static int build(cpli_dir *d, int sender, int lrank, cpli_ctx *ctx) {
  const int p = d->p, q = d->q;
  int color = MPI_UNDEFINED, key = 0, rc;
  /* MPI_Comm_split blocks without a deadline: meet the other group first
   * with a barrier that has one. A group that is not in this call (it
   * failed it on a bad argument, or ran another algorithm) left the
   * other waiting in the split forever, whatever the timeout. */
  MPI_Request req;
  rc = MPI_Ibarrier(d->merged, &req);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Ibarrier", "fc: meeting the other group (first use)"));
  CPLI_TRY(cpli_waitall(1, &req, ctx, d->merged, "fc: meeting the other group (first use)", -1));
  if (p >= q) {
    /* Group rank = block index: receiver j is rank j, extra sender i is i. */
    if (!sender) color = 0, key = lrank;
    else if (lrank >= q) color = 0, key = lrank;
    rc = MPI_Comm_split(d->merged, color, key, &d->fc_group);
    return cpli_mpi_check(rc, "MPI_Comm_split", "fc: building the allgather group");
  }
  const int s = q / p;
  /* Broadcast groups: sender i is rank 0 of group i. */
  if (sender) color = lrank, key = 0;
  else if (lrank < s * p) color = lrank % p, key = 1 + lrank / p;
  rc = MPI_Comm_split(d->merged, color, key, &d->fc_bcast);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Comm_split", "fc: building broadcast groups"));
  /* Receiver subgroups; remainder receivers come last in theirs. */
  color = MPI_UNDEFINED;
  if (!sender) {
    if (lrank < s * p) color = lrank / p, key = lrank % p;
    else color = (lrank - s * p) % s, key = lrank;
  }
  rc = MPI_Comm_split(d->merged, color, key, &d->fc_group);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Comm_split", "fc: building receiver subgroups"));
  if (!sender) {
    int gsize;
    MPI_Comm_size(d->fc_group, &gsize);
    d->fc_extra = gsize - p;
  }
  return CPL_OK;
}

static int run_intra(const cpli_inter_args *a, MPI_Comm comm, cpli_blocks blk) {
  int n;
  MPI_Comm_size(comm, &n);
  size_t bytes = 0, maxb = 0;
  int regular = 1;
  for (int i = 0; i < n; i++) {
    bytes += blk.counts[i];
    if (blk.counts[i] > maxb) maxb = blk.counts[i];
    if (blk.counts[i] != blk.counts[0]) regular = 0;
  }
  cpl_intra_algorithm alg = a->intra;
  if (alg == CPL_INTRA_AUTO) alg = cpli_intra_pick(n, bytes, maxb, regular);
  cpli_intra_args ia = {comm, blk, a->ctx, NULL};
  const char *outer = a->ctx->alg;
  a->ctx->alg = cpl_intra_algorithm_name(alg);
  int rc = cpli_intra_fn_of(alg)(&ia);
  a->ctx->alg = outer;
  return rc;
}

/* Extra senders (p > q, rank >= q) relay every block, so they need every
 * size, all equal to their own in a regular call, else broadcast by group
 * rank 0 (a receiver, who knows them; collective over fc_group, so the
 * receivers take part), and a staging buffer of all p blocks with their
 * own in place. On an extra sender *blk, *tmp and *mem are set (free both
 * after use); others keep a->blk. */
static int relay_layout(const cpli_inter_args *a, cpli_dir *d, int lrank, cpli_blocks *blk,
                        char **tmp, size_t **mem) {
  const int p = a->p, q = a->q;
  *blk = a->blk;
  *tmp = NULL;
  *mem = NULL;
  if (p <= q || (a->sender && lrank < q)) return CPL_OK;
  unsigned long long *c = malloc(sizeof *c * (size_t)p);
  if (!c) return cpli_fail(CPL_ERR_NOMEM, "fc: out of memory for %d sizes", p);
  for (int i = 0; i < p; i++) c[i] = a->sender ? a->own_bytes : a->blk.counts[i];
  int rc = CPL_OK;
  if (!a->regular) {
    MPI_Request req;
    rc = MPI_Ibcast(c, p, MPI_UNSIGNED_LONG_LONG, 0, d->fc_group, &req);
    if (rc != MPI_SUCCESS) rc = cpli_mpi_check(rc, "MPI_Ibcast", "fc: block sizes");
    else if ((rc = cpli_waitall(1, &req, a->ctx, d->fc_group, "broadcast of block sizes", -1)))
      return rc; /* c stays: the pending broadcast may still write it */
  }
  if (rc == CPL_OK && a->sender) {
    size_t total = 0, *counts = malloc(sizeof *counts * 2 * (size_t)p), *displs;
    if (!counts) rc = cpli_fail(CPL_ERR_NOMEM, "fc: out of memory for %d sizes", p);
    if (rc == CPL_OK) {
      displs = counts + p;
      for (int i = 0; i < p; i++) displs[i] = total, total += counts[i] = (size_t)c[i];
      if (counts[lrank] != a->own_bytes)
        rc = cpli_fail(CPL_ERR_MISMATCH,
                       "fc: sender %d contributes %zu bytes but the receivers expect %zu", lrank,
                       a->own_bytes, counts[lrank]);
    }
    char *t = rc == CPL_OK ? malloc(total ? total : 1) : NULL;
    if (!t && rc == CPL_OK) rc = cpli_fail(CPL_ERR_NOMEM, "fc: out of memory for %zu bytes", total);
    if (rc == CPL_OK) {
      if (a->own_bytes) memcpy(t + displs[lrank], a->own, a->own_bytes);
      *blk = (cpli_blocks){t, counts, displs};
      *tmp = t;
      *mem = counts;
    } else {
      free(t);
      free(counts);
    }
  }
  free(c);
  return rc;
}

/* p >= q, lockstep phases */
static int wide(const cpli_inter_args *a, cpli_dir *d, int lrank) {
  const int p = a->p, q = a->q;
  if (a->sender && lrank < q) { /* send to receiver lrank and finish */
    a->ctx->xstep = 0;
    return cpli_xfer(d->merged, a->own, a->own_bytes, p + lrank, NULL, 0, MPI_PROC_NULL, a->ctx);
  }
  int rc = CPL_OK;
  if (!a->sender) {
    a->ctx->xstep = 0;
    rc = cpli_xfer(d->merged, NULL, 0, MPI_PROC_NULL, a->blk.base + a->blk.displs[lrank],
                   a->blk.counts[lrank], lrank, a->ctx);
  }
  cpli_blocks blk;
  char *tmp = NULL;
  size_t *mem = NULL;
  if (rc == CPL_OK) rc = relay_layout(a, d, lrank, &blk, &tmp, &mem);
  if (rc == CPL_OK) rc = run_intra(a, d->fc_group, blk);
  free(tmp);
  free(mem);
  return rc;
}

/* p < q, lockstep phases */
static int narrow(const cpli_inter_args *a, cpli_dir *d, int lrank) {
  const int p = a->p, s = a->q / p;
  a->ctx->xstep = 0;
  if (a->sender)
    return cpli_bcast_circulant(d->fc_bcast, (void *)a->own, a->own_bytes, 0, 0, a->ctx);
  if (lrank < s * p) {
    const int i = lrank % p;
    CPLI_TRY(cpli_bcast_circulant(d->fc_bcast, a->blk.base + a->blk.displs[i], a->blk.counts[i], 0,
                                  0, a->ctx));
  }
  if (d->fc_extra == 0) return run_intra(a, d->fc_group, a->blk);
  /* Remainder members contribute empty blocks at the end of the group. */
  const int n = p + d->fc_extra;
  size_t *cd = malloc(sizeof *cd * 2 * (size_t)n);
  if (!cd) return cpli_fail(CPL_ERR_NOMEM, "fc: out of memory for %d blocks", n);
  for (int i = 0; i < n; i++) {
    cd[i] = i < p ? a->blk.counts[i] : 0;
    cd[n + i] = i < p ? a->blk.displs[i] : 0;
  }
  int rc = run_intra(a, d->fc_group, (cpli_blocks){a->blk.base, cd, cd + n});
  free(cd);
  return rc;
}

/* Any p, q: the whole algorithm as one dataflow plan on the merged
 * communicator (sched/flow.h: cpli_flow_fc). */
static int dataflow(const cpli_inter_args *a, cpli_dir *d, int lrank) {
  const int p = a->p, q = a->q, me = a->sender ? lrank : p + lrank;
  cpli_blocks blk;
  char *tmp = NULL;
  size_t *mem = NULL;
  CPLI_TRY(relay_layout(a, d, lrank, &blk, &tmp, &mem));
  const int pure = a->sender && !tmp;
  size_t total = 0;
  for (int i = 0; !pure && i < p; i++) total += blk.counts[i];
  const size_t k = p >= q ? 0 : a->sender ? a->own_bytes : a->blk.counts[lrank % p];
  cpli_fc_opts o;
  cpli_fc_plan_opts(p, q, k, total, a->intra, pure, &o);
  /* Everything the plan depends on; the link keeps plans per direction. */
  const double param[] = {(double)o.chunk,
                          o.ring,
                          (double)o.nblocks,
                          o.cut.alpha,
                          o.cut.beta,
                          o.cut.overhead,
                          (double)(a->sender ? a->own_bytes : 0)};
  cpli_plan_key key; /* a key without memory caches nothing */
  cpli_plan_key_make(&key, param, 7, pure ? 0 : p, pure ? NULL : blk.counts,
                     pure ? NULL : blk.displs);
  const cpli_inter_plan plan = {cpli_flow_fc,
                                p,
                                q,
                                me,
                                pure ? NULL : blk.counts,
                                pure ? NULL : blk.displs,
                                a->sender ? a->own_bytes : 0,
                                &o};
  a->ctx->xstep = 0;
  const int rc = cpli_flow_run_cached(&d->plans, &key, cpli_inter_plan_build, &plan,
                                      (cpli_plan_what){"fc", me, p, q}, d->merged,
                                      pure ? NULL : blk.base, a->sender ? a->own : NULL, a->ctx);
  cpli_plan_key_free(&key);
  free(tmp);
  free(mem);
  return rc;
}

int cpli_inter_fc(const cpli_inter_args *a) {
  cpli_dir *d;
  CPLI_TRY(cpli_link_dir(a->link, a->sender, a->ctx, &d));
  int lrank;
  MPI_Comm_rank(d->local, &lrank);
  if (!d->fc_ready) {
    CPLI_TRY(build(d, a->sender, lrank, a->ctx));
    d->fc_ready = 1;
  }
  /* The plan's allgather phase is the circulant or the ring algorithm;
   * another one asked for by name runs in the lockstep phases. */
  if (cpli_flow_enabled() &&
      (a->intra == CPL_INTRA_AUTO || a->intra == CPL_INTRA_CIRCULANT || a->intra == CPL_INTRA_RING))
    return dataflow(a, d, lrank);
  return a->p >= a->q ? wide(a, d, lrank) : narrow(a, d, lrank);
}
