/*
 * Kang et al. (2018), optimal half-duplex inter-group allgather on a fully
 * connected network (Section III), p senders, q receivers, k bytes each.
 *
 * p >= q: senders 0..q-1 send their block to receivers 0..q-1; senders
 *   q..p-1 join the receivers in one group of p whose rank i holds block i,
 *   and that group runs an intra-group allgather(v).
 *   Cost: (1 + ceil(log2 p)) alpha + p k beta (circulant intra phase).
 * p < q: with q = s p + e, receiver j < s p joins broadcast group j mod p,
 *   rooted at sender j mod p; the sender broadcasts its block with Traff's
 *   round-optimal n-block broadcast, not a binomial tree, so the broadcast
 *   costs about k beta instead of 2 k beta. Then receiver subgroups
 *   {t p .. t p + p - 1} (each holds every block once) run an intra-group
 *   allgather. The paper assumes p | q; here the e remainder receivers
 *   join subgroup (j mod s) contributing nothing, so they receive all p
 *   blocks in the allgather phase and the bound still holds.
 *   Cost: about (ceil(log2(s+1)) + ceil(log2 p) + n - 1) alpha
 *         + (p - 1 + (n + ceil(log2(s+1)) - 1)/n) k beta, n blocks.
 * The intra-group phase takes its algorithm as a parameter (a->intra).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/link.h"
#include "coll/select.h"

/* Helper communicators, built once per link direction (collective over the
 * merged communicator: both groups take the same branches). */
static int build(cpli_dir *d, int sender, int lrank) {
  const int p = d->p, q = d->q;
  int color = MPI_UNDEFINED, key = 0, rc;
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
  cpli_intra_args ia = {comm, blk, a->ctx};
  const char *outer = a->ctx->alg;
  a->ctx->alg = cpl_intra_algorithm_name(alg);
  int rc = cpli_intra_fn_of(alg)(&ia);
  a->ctx->alg = outer;
  return rc;
}

/* p >= q */
static int wide(const cpli_inter_args *a, cpli_dir *d, int lrank) {
  const int p = a->p, q = a->q;
  if (a->sender && lrank < q) { /* send to receiver lrank and finish */
    a->ctx->xstep = 0;
    return cpli_xfer(d->merged, a->own, a->own_bytes, p + lrank, NULL, 0,
                     MPI_PROC_NULL, a->ctx);
  }
  size_t *counts = NULL, *displs = NULL;
  char *tmp = NULL;
  cpli_blocks blk = a->blk;
  int rc = CPL_OK;
  if (!a->sender) {
    a->ctx->xstep = 0;
    rc = cpli_xfer(d->merged, NULL, 0, MPI_PROC_NULL, blk.base + blk.displs[lrank],
                   blk.counts[lrank], lrank, a->ctx);
  }
  /* Extra senders relay every block, so they need every size: all equal
   * to their own in a regular call, else broadcast by group rank 0 (a
   * receiver, who knows them). */
  if (rc == CPL_OK && p > q) {
    unsigned long long *c = malloc(sizeof *c * (size_t)p);
    if (!c) return cpli_fail(CPL_ERR_NOMEM, "fc: out of memory for %d sizes", p);
    for (int i = 0; i < p; i++) c[i] = a->sender ? a->own_bytes : blk.counts[i];
    if (!a->regular) {
      MPI_Request req;
      rc = MPI_Ibcast(c, p, MPI_UNSIGNED_LONG_LONG, 0, d->fc_group, &req);
      rc = rc == MPI_SUCCESS ? cpli_waitall(1, &req, a->ctx, d->fc_group, "broadcast of block sizes", -1)
                             : cpli_mpi_check(rc, "MPI_Ibcast", "fc: block sizes");
    }
    if (rc == CPL_OK && a->sender) {
      size_t total = 0;
      counts = malloc(sizeof *counts * 2 * (size_t)p);
      if (counts) {
        displs = counts + p;
        for (int i = 0; i < p; i++) displs[i] = total, total += counts[i] = (size_t)c[i];
        if (counts[lrank] != a->own_bytes)
          rc = cpli_fail(CPL_ERR_MISMATCH,
                         "fc: sender %d contributes %zu bytes but the receivers expect %zu",
                         lrank, a->own_bytes, counts[lrank]);
      }
      tmp = counts ? malloc(total ? total : 1) : NULL;
      if (!tmp && rc == CPL_OK) rc = cpli_fail(CPL_ERR_NOMEM, "fc: out of memory for %zu bytes", total);
      if (rc == CPL_OK) {
        if (a->own_bytes) memcpy(tmp + displs[lrank], a->own, a->own_bytes);
        blk = (cpli_blocks){tmp, counts, displs};
      }
    }
    free(c);
  }
  if (rc == CPL_OK) rc = run_intra(a, d->fc_group, blk);
  free(tmp);
  free(counts);
  return rc;
}

/* p < q */
static int narrow(const cpli_inter_args *a, cpli_dir *d, int lrank) {
  const int p = a->p, s = a->q / p;
  a->ctx->xstep = 0;
  if (a->sender)
    return cpli_bcast_circulant(d->fc_bcast, (void *)a->own, a->own_bytes, 0, 0, a->ctx);
  if (lrank < s * p) {
    const int i = lrank % p;
    CPLI_TRY(cpli_bcast_circulant(d->fc_bcast, a->blk.base + a->blk.displs[i],
                                  a->blk.counts[i], 0, 0, a->ctx));
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

int cpli_inter_fc(const cpli_inter_args *a) {
  cpli_dir *d;
  CPLI_TRY(cpli_link_dir(a->link, a->sender, &d));
  int lrank;
  MPI_Comm_rank(d->local, &lrank);
  if (!d->fc_ready) {
    CPLI_TRY(build(d, a->sender, lrank));
    d->fc_ready = 1;
  }
  return a->p >= a->q ? wide(a, d, lrank) : narrow(a, d, lrank);
}
