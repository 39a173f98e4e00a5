/*
 * Root gathering (the strategy of MPICH and Open MPI; Kang et al. Sec.
 * III-A), built from the library's intra-group collectives as in the
 * paper's experiments: gather to sender 0, one message sender 0 ->
 * receiver 0, broadcast among the receivers.
 *
 * Cost: gather log2(p) alpha + (p-1) k beta; root-to-root alpha + p k beta;
 * broadcast of p k bytes: the paper assumes scatter + allgather,
 * 2 log2(q) alpha + 2 p k beta, about 4 p k beta in all against p k beta
 * for fc; MPICH's MPI_Ibcast uses a binomial tree below 8 processes,
 * log2(q) (alpha + p k beta) (cost.c models what MPICH does).
 *
 * Sizes: MPICH's gather and broadcast are used while the p blocks fit int
 * counts (CPLI_NATIVE_MAX); both groups know the total (the senders
 * exchange their sizes anyway). Past it the root receives each block as
 * one large-count message and the receivers broadcast with Coupler's
 * circulant broadcast, so no size is refused.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/link.h"

/* Gathered blocks travel concatenated in sender order; offsets are the
 * prefix sums of the counts. */
static size_t prefix(const size_t *counts, int n, size_t *off) {
  size_t t = 0;
  for (int i = 0; i < n; i++) {
    off[i] = t;
    t += counts[i];
  }
  return t;
}

/* Gather to sender 0: MPICH's gatherv within int counts, else one
 * message per sender. */
static int gather(const cpli_inter_args *a, cpli_dir *d, int lrank, const size_t *counts,
                  const size_t *off, size_t total, char *tmp) {
  a->ctx->xstep = 0;
  if (total > CPLI_NATIVE_MAX) {
    if (lrank != 0)
      return cpli_xfer(d->local, a->own, a->own_bytes, 0, NULL, 0, MPI_PROC_NULL, a->ctx);
    if (a->own_bytes) memcpy(tmp + off[0], a->own, a->own_bytes);
    int rc = CPL_OK;
    for (int i = 1; i < a->p && rc == CPL_OK; i++)
      rc = cpli_xfer(d->local, NULL, 0, MPI_PROC_NULL, tmp + off[i], counts[i], i, a->ctx);
    return rc;
  }
  int *ic = malloc(sizeof *ic * 2 * (size_t)a->p);
  if (!ic) return cpli_fail(CPL_ERR_NOMEM, "root: out of memory");
  for (int i = 0; i < a->p; i++) {
    ic[i] = (int)counts[i];
    ic[a->p + i] = (int)off[i];
  }
  MPI_Request req;
  int rc = MPI_Igatherv(a->own, (int)a->own_bytes, MPI_BYTE, tmp, ic, ic + a->p, MPI_BYTE, 0,
                        d->local, &req);
  rc = rc == MPI_SUCCESS ? cpli_waitall(1, &req, a->ctx, d->local, "gather to the sender root", -1)
                         : cpli_mpi_check(rc, "MPI_Igatherv", "root: gather");
  free(ic);
  return rc;
}

static int senders(const cpli_inter_args *a, cpli_dir *d) {
  int lrank;
  MPI_Comm_rank(d->local, &lrank);
  size_t *counts = malloc(sizeof *counts * 2 * (size_t)a->p);
  char *tmp = NULL;
  int rc = counts ? CPL_OK : cpli_fail(CPL_ERR_NOMEM, "root: out of memory");
  if (rc == CPL_OK) rc = cpli_sender_counts(d, a->own_bytes, a->regular, counts, a->ctx);
  size_t total = 0;
  if (rc == CPL_OK) total = prefix(counts, a->p, counts + a->p);
  if (rc == CPL_OK && lrank == 0 && !(tmp = malloc(total ? total : 1)))
    rc = cpli_fail(CPL_ERR_NOMEM, "root: out of memory for %zu gathered bytes", total);
  if (rc == CPL_OK) rc = gather(a, d, lrank, counts, counts + a->p, total, tmp);
  if (rc == CPL_OK && lrank == 0) {
    a->ctx->xstep = 1;
    rc = cpli_xfer(d->merged, tmp, total, a->p, NULL, 0, MPI_PROC_NULL, a->ctx);
  }
  free(tmp);
  free(counts);
  return rc;
}

static int receivers(const cpli_inter_args *a, cpli_dir *d) {
  int lrank;
  MPI_Comm_rank(d->local, &lrank);
  size_t *off = malloc(sizeof *off * (size_t)a->p);
  if (!off) return cpli_fail(CPL_ERR_NOMEM, "root: out of memory");
  const size_t total = prefix(a->blk.counts, a->p, off);
  /* Receive in place when the caller's blocks are already concatenated. */
  int in_place = 1;
  for (int i = 0; i < a->p; i++)
    if (a->blk.counts[i] && a->blk.displs[i] != a->blk.displs[0] + off[i]) in_place = 0;
  /* no bytes: maybe no buffer either (MPI allows NULL for zero counts) */
  char *buf = total == 0 ? NULL : in_place ? a->blk.base + a->blk.displs[0] : malloc(total);
  int rc = buf || total == 0 ? CPL_OK
                             : cpli_fail(CPL_ERR_NOMEM, "root: out of memory for %zu bytes", total);
  if (rc == CPL_OK && lrank == 0) {
    a->ctx->xstep = 1;
    rc = cpli_xfer(d->merged, NULL, 0, MPI_PROC_NULL, buf, total, 0, a->ctx);
  }
  if (rc == CPL_OK && a->q > 1) {
    a->ctx->xstep = 2;
    if (total > CPLI_NATIVE_MAX) {
      rc = cpli_bcast_circulant(d->local, buf, total, 0, 0, a->ctx);
    } else {
      MPI_Request req;
      rc = MPI_Ibcast(buf, (int)total, MPI_BYTE, 0, d->local, &req);
      rc = rc == MPI_SUCCESS
               ? cpli_waitall(1, &req, a->ctx, d->local, "broadcast among receivers", -1)
               : cpli_mpi_check(rc, "MPI_Ibcast", "root: broadcast");
    }
  }
  if (rc == CPL_OK && !in_place)
    for (int i = 0; i < a->p; i++)
      if (a->blk.counts[i]) memcpy(a->blk.base + a->blk.displs[i], buf + off[i], a->blk.counts[i]);
  if (!in_place) free(buf);
  free(off);
  return rc;
}

int cpli_inter_root(const cpli_inter_args *a) {
  cpli_dir *d;
  CPLI_TRY(cpli_link_dir(a->link, a->sender, a->ctx, &d));
  return a->sender ? senders(a, d) : receivers(a, d);
}
