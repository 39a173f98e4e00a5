/*
 * Baseline: MPI_Iallgatherv on the intercommunicator, the receivers
 * contributing nothing. MPICH 4.0 implements it as "remote gather, local
 * broadcast": every sender sends its block straight to receiver 0 (an
 * intercommunicator gatherv), which broadcasts the p blocks among the
 * receivers (binomial tree below 8 processes, else scatter + allgather).
 * Cost, as modelled in cost.c: alpha + p k beta + bcast(q, p k): the p
 * messages reach receiver 0 at once, and its port is the bound.
 * MPICH's blocking MPI_Allgather on an intercommunicator is the classic
 * root gathering instead (local gather, root-to-root, local broadcast),
 * modelled by `root`; cpl-bench measures it as the variant "mpi".
 *
 * Sizes: only while the p blocks together fit int counts
 * (CPLI_NATIVE_MAX). Receivers know the total; senders of a regular call
 * compute it, senders of an allgatherv first exchange their sizes, so both
 * groups decide alike before any transfer. Chosen by `auto`, a call past
 * the limit runs fc instead; asked for by name, it fails on every rank.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/link.h"
#include "coll/select.h"

/* The total bytes of all p blocks, known alike on both sides. */
static int all_bytes(const cpli_inter_args *a, size_t *total, int *in_range) {
  *in_range = 1;
  cpli_dir *d;
  /* Built collectively on first use: both groups call, though only the
   * senders use it here. */
  if (!a->regular) CPLI_TRY(cpli_link_dir(a->link, a->sender, a->ctx, &d));
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
  int rc = cpli_sender_counts(d, a->own_bytes, 0, counts, a->ctx);
  *total = 0;
  for (int i = 0; i < a->p; i++) *total += counts[i];
  free(counts);
  return rc;
}

int cpli_inter_native(const cpli_inter_args *a) {
  size_t total;
  int in_range;
  CPLI_TRY(all_bytes(a, &total, &in_range));
  if (cpli_native_to_fc(a->by_auto, total)) {
    cpli_ctx_inter(a->ctx, CPL_INTER_FC);
    return cpli_inter_fc(a);
  }
  if (total > CPLI_NATIVE_MAX)
    return cpli_fail(CPL_ERR_UNSUPPORTED,
                     "native: %zu bytes from all senders exceed the %zu that MPICH's own "
                     "allgatherv moves (int counts); fc, ring and root move any size",
                     total, CPLI_NATIVE_MAX);
  const int remote = a->sender ? a->q : a->p;
  int *cnt = calloc(2 * (size_t)remote, sizeof *cnt);
  char *stage = in_range ? NULL : malloc(total ? total : 1);
  if (!cnt || (!in_range && !stage)) {
    free(cnt);
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
  MPI_Request req;
  a->ctx->xstep = 0;
  int rc = MPI_Iallgatherv(a->sender ? a->own : &dummy, a->sender ? (int)a->own_bytes : 0, MPI_BYTE,
                           a->sender ? (void *)&dummy
                           : stage   ? stage
                                     : a->blk.base,
                           cnt, dsp, MPI_BYTE, a->link->inter, &req);
  if (rc != MPI_SUCCESS)
    rc = cpli_mpi_check(rc, "MPI_Iallgatherv", "native inter-group allgatherv");
  else if ((rc = cpli_waitall(1, &req, a->ctx, a->link->inter, "MPI_Iallgatherv", -1)))
    return rc; /* cnt and stage stay: the pending allgatherv still uses them */
  if (rc == CPL_OK && stage)
    for (int i = 0; i < a->p; i++)
      if (cnt[i]) memcpy(a->blk.base + a->blk.displs[i], stage + dsp[i], (size_t)cnt[i]);
  free(stage);
  free(cnt);
  return rc;
}
