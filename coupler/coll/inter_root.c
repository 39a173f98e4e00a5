/*
 * Root gathering (the strategy of MPICH and Open MPI; Kang et al. Sec.
 * III-A): gather to sender 0, one message sender 0 -> receiver 0,
 * broadcast among the receivers: p + q - 1 messages in all, the fewest
 * any allgather between the groups can send (fc and two-hop send p q or
 * more). Fewer messages did not make it faster: on the emulated cluster
 * at p < q and 1-4 KiB two-hop and fc kept ahead of it (2|6 at 2 KiB:
 * 0.78-0.85x of MPICH against 0.64x), so `auto` picks it nowhere.
 *
 * The gather is binomial, in lockstep (below); the broadcast is Traff's
 * round-optimal one (bcast_circulant.c), pipelined in n* blocks for large
 * totals. Both use large-count messages, so no size is refused.
 *
 * Cost: gather ceil(log2 p) alpha + (p-1) k beta; root-to-root
 * alpha + p k beta; broadcast of m = p k bytes in n blocks among q,
 * (n - 1 + ceil(log2 q))(alpha + beta m / n) (cost.c).
 *
 * The blocks travel as one message, so a receiver could not see blocks of
 * other sizes than it expects when they add up to the same total (an
 * erroneous MPI_Allgatherv, which MPICH and the other algorithms refuse
 * with MPI_ERR_TRUNCATE). Sender 0, which gathered every sender's size,
 * sends them ahead of the blocks, posted at once with them (8 p bytes, no
 * extra round); receiver 0 compares them with its counts and, after its
 * broadcast (the other receivers must not wait forever), fails with
 * MPI_ERR_TRUNCATE.
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

/* Binomial gather to sender 0, in lockstep: in round k a sender whose
 * rank has bit k set sends the blocks it holds (its own and its
 * subtree's, ranks lrank .. lrank + 2^k - 1, contiguous in sender order)
 * to lrank - 2^k and is done; the others receive the next 2^k blocks
 * from lrank + 2^k. ceil(log2 p) rounds, one message per sender: p - 1 in
 * all, as MPICH's binomial gather. `tmp` holds this rank's subtree, block
 * lrank at tmp[0]. */
static int gather(const cpli_inter_args *a, cpli_dir *d, int lrank, const size_t *off, char *tmp) {
  const int p = a->p;
  if (a->own_bytes) memcpy(tmp, a->own, a->own_bytes);
  int rc = CPL_OK, k = 0;
  for (int mask = 1; mask < p && rc == CPL_OK; mask <<= 1, k++) {
    a->ctx->xstep = k;
    const int hi = lrank + mask < p ? lrank + mask : p; /* blocks held: lrank .. hi - 1 */
    if (lrank & mask)
      return cpli_xfer(d->local, tmp, off[hi] - off[lrank], lrank - mask, NULL, 0, MPI_PROC_NULL,
                       a->ctx);
    if (hi < p) {
      const int end = hi + mask < p ? hi + mask : p;
      rc = cpli_xfer(d->local, NULL, 0, MPI_PROC_NULL, tmp + (off[hi] - off[lrank]),
                     off[end] - off[hi], hi, a->ctx);
    }
  }
  return rc;
}

static int senders(const cpli_inter_args *a, cpli_dir *d) {
  int lrank;
  MPI_Comm_rank(d->local, &lrank);
  size_t *counts = malloc(sizeof *counts * (2 * (size_t)a->p + 1));
  unsigned long long *sizes = NULL;
  char *tmp = NULL;
  int rc = counts ? CPL_OK : cpli_fail(CPL_ERR_NOMEM, "root: out of memory");
  if (rc == CPL_OK) rc = cpli_sender_counts(d, a->own_bytes, a->regular, counts, a->ctx);
  size_t *off = counts + a->p, total = 0;
  if (rc == CPL_OK) off[a->p] = total = prefix(counts, a->p, off);
  /* this rank's subtree: ranks lrank .. lrank + lowest set bit - 1 */
  const int top = lrank == 0 || lrank + (lrank & -lrank) > a->p ? a->p : lrank + (lrank & -lrank);
  const size_t held = rc == CPL_OK ? off[top] - off[lrank] : 0;
  if (rc == CPL_OK && !(tmp = malloc(held ? held : 1)))
    rc = cpli_fail(CPL_ERR_NOMEM, "root: out of memory for %zu gathered bytes", held);
  if (rc == CPL_OK) rc = gather(a, d, lrank, off, tmp);
  if (rc == CPL_OK && lrank == 0 && !(sizes = malloc(sizeof *sizes * (size_t)a->p)))
    rc = cpli_fail(CPL_ERR_NOMEM, "root: out of memory for %d sizes", a->p);
  if (rc == CPL_OK && lrank == 0) {
    for (int i = 0; i < a->p; i++) sizes[i] = counts[i];
    a->ctx->xstep = cpli_ceil_log2(a->p);
    rc = cpli_xfer_sized(d->merged, a->p, 1, sizes, sizeof *sizes * (size_t)a->p, tmp, total,
                         a->ctx);
  }
  free(sizes);
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
  unsigned long long *sizes = NULL;
  if (rc == CPL_OK && lrank == 0 && !(sizes = malloc(sizeof *sizes * (size_t)a->p)))
    rc = cpli_fail(CPL_ERR_NOMEM, "root: out of memory for %d sizes", a->p);
  if (rc == CPL_OK && lrank == 0) {
    a->ctx->xstep = cpli_ceil_log2(a->p);
    rc = cpli_xfer_sized(d->merged, 0, 0, sizes, sizeof *sizes * (size_t)a->p, buf, total, a->ctx);
  }
  const int agreed =
      rc == CPL_OK && lrank == 0 ? cpli_sizes_agree(sizes, a->blk.counts, a->p) : CPL_OK;
  free(sizes);
  if (rc == CPL_OK && a->q > 1 && total > 0)
    rc = cpli_bcast_circulant(d->local, buf, total, 0, 0, a->ctx);
  if (rc == CPL_OK) rc = agreed;
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
