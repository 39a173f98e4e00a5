/*
 * Baseline: MPI_Iallgatherv on the intercommunicator, the receivers
 * contributing nothing. MPICH 4.0 implements it as "remote gather, local
 * broadcast": every sender sends its block straight to receiver 0 (an
 * intercommunicator gatherv), which broadcasts the p blocks among the
 * receivers (binomial tree below 8 processes, else scatter + allgather).
 * Cost, as modelled in cost.c: alpha + p k beta + bcast(q, p k): the p
 * messages reach receiver 0 at once, and its port is the bound.
 * `root` runs the same pattern as one dataflow plan of Coupler's. MPICH's
 * blocking MPI_Allgather on an intercommunicator is the classic root
 * gathering instead (local gather, root-to-root, local broadcast);
 * cpl-bench measures it as the variant "mpi".
 *
 * Sizes: only while the p blocks together fit int counts
 * (CPLI_NATIVE_MAX). Receivers know the total; senders of a regular call
 * compute it, senders of an allgatherv first exchange their sizes, so both
 * groups decide alike before any transfer. Chosen by `auto`, a call past
 * the limit runs fc instead; asked for by name, it fails on every rank.
 *
 * An allgatherv whose blocks differ from the receivers' counts but add up
 * to the same total (erroneous in MPI) passes MPICH's MPI_Iallgatherv
 * unnoticed, the blocks misplaced. The senders have every sender's size
 * (the exchange above), so sender 0 sends them to receiver 0, posted with
 * the allgatherv (8 p bytes beside its p blocks, no extra round), and
 * receiver 0 fails with MPI_ERR_TRUNCATE (under `root` it receives every
 * block on its own, and a longer one is MPI_ERR_TRUNCATE there).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/link.h"
#include "coll/select.h"

#define SIZES_TAG 7719 /* the senders' sizes, on the direction's merged comm */

/* The total bytes of all p blocks, known alike on both sides; for an
 * allgatherv also the direction (*d) and, on sender 0, every sender's
 * size into sizes[p] (sent to receiver 0). */
static int all_bytes(const cpli_inter_args *a, size_t *total, int *in_range, cpli_dir **d,
                     unsigned long long *sizes) {
  *in_range = 1;
  *d = NULL;
  /* Built collectively on first use: both groups call. */
  if (!a->regular) CPLI_TRY(cpli_link_dir(a->link, a->sender, a->ctx, d));
  if (!a->sender) {
    *in_range = cpli_native_total(&a->blk, a->p, total);
    return CPL_OK;
  }
  if (a->regular) {
    *total = (size_t)a->p * a->own_bytes;
    return CPL_OK;
  }
  size_t *counts = malloc(sizeof *counts * (size_t)a->p);
  if (!counts) return cpli_fail(CPL_ERR_NOMEM, "native: out of memory for %d sizes", a->p);
  int rc = cpli_sender_counts(*d, a->own_bytes, 0, counts, a->ctx);
  *total = 0;
  for (int i = 0; i < a->p; i++) *total += counts[i], sizes[i] = counts[i];
  free(counts);
  return rc;
}

int cpli_inter_native(const cpli_inter_args *a) {
  size_t total;
  int in_range;
  cpli_dir *d;
  /* Stays MPI's, as cnt and stage, if the wait fails. */
  unsigned long long *sizes = a->regular ? NULL : malloc(sizeof *sizes * (size_t)a->p);
  if (!a->regular && !sizes)
    return cpli_fail(CPL_ERR_NOMEM, "native: out of memory for %d sizes", a->p);
  int rc = all_bytes(a, &total, &in_range, &d, sizes);
  if (rc == CPL_OK && cpli_native_to_fc(a->by_auto, total)) {
    free(sizes);
    cpli_ctx_inter(a->ctx, CPL_INTER_FC);
    return cpli_inter_fc(a);
  }
  if (rc != CPL_OK) {
    free(sizes);
    return rc;
  }
  if (total > CPLI_NATIVE_MAX) {
    free(sizes);
    return cpli_fail(CPL_ERR_UNSUPPORTED,
                     "native: %zu bytes from all senders exceed the %zu that MPICH's own "
                     "allgatherv moves (int counts); fc, ring and root move any size",
                     total, CPLI_NATIVE_MAX);
  }
  const int remote = a->sender ? a->q : a->p;
  int *cnt = calloc(2 * (size_t)remote, sizeof *cnt);
  char *stage = in_range ? NULL : malloc(total ? total : 1);
  if (!cnt || (!in_range && !stage)) {
    free(cnt);
    free(stage);
    free(sizes);
    return cpli_fail(CPL_ERR_NOMEM, "native: out of memory for %d ranks", remote);
  }
  int *dsp = cnt + remote;
  if (!a->sender)
    for (int i = 0, at = 0; i < a->p; i++) {
      cnt[i] = (int)a->blk.counts[i];
      dsp[i] = in_range ? (int)a->blk.displs[i] : at;
      at += cnt[i];
    }
  static char dummy; /* MPI wants a valid address even for empty buffers */
  MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  a->ctx->xstep = 0;
  int lrank = -1; /* sender 0 sends the sizes, receiver 0 takes them */
  if (d) MPI_Comm_rank(d->local, &lrank);
  const int nsizes = a->p;
  if (lrank == 0 && a->sender)
    rc = MPI_Isend(sizes, nsizes, MPI_UNSIGNED_LONG_LONG, a->p, SIZES_TAG, d->merged, &req[1]);
  else if (lrank == 0)
    rc = MPI_Irecv(sizes, nsizes, MPI_UNSIGNED_LONG_LONG, 0, SIZES_TAG, d->merged, &req[1]);
  if (rc != MPI_SUCCESS) {
    free(cnt);
    free(stage);
    free(sizes);
    return cpli_mpi_check(rc, a->sender ? "MPI_Isend" : "MPI_Irecv",
                          "native inter-group allgatherv: the senders' sizes");
  }
  rc = MPI_Iallgatherv(a->sender ? a->own : &dummy, a->sender ? (int)a->own_bytes : 0, MPI_BYTE,
                       a->sender ? (void *)&dummy
                       : stage   ? stage
                                 : a->blk.base,
                       cnt, dsp, MPI_BYTE, a->link->inter, &req[0]);
  if (rc != MPI_SUCCESS) /* the sizes' message, if any, is left to MPI */
    rc = cpli_mpi_check(rc, "MPI_Iallgatherv", "native inter-group allgatherv");
  else if ((rc = cpli_waitall(2, req, a->ctx, a->link->inter, "MPI_Iallgatherv", -1)))
    return rc; /* cnt, stage and sizes stay: the pending calls still use them */
  if (rc == CPL_OK && lrank == 0 && !a->sender) rc = cpli_sizes_agree(sizes, a->blk.counts, a->p);
  if (rc == CPL_OK && stage)
    for (int i = 0; i < a->p; i++)
      if (cnt[i]) memcpy(a->blk.base + a->blk.displs[i], stage + dsp[i], (size_t)cnt[i]);
  free(stage);
  free(cnt);
  free(sizes);
  return rc;
}
