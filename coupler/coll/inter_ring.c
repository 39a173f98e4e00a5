/*
 * Kang et al. (2018), optimal half-duplex inter-group allgather on a ring
 * (Section IV), replayed with point-to-point exchanges between ring
 * neighbours only, as the paper emulates it with MPI_Sendrecv.
 *
 * The schedule (sched/ring.c: Algorithms 1 and 3 with the fixes of
 * sched/ERRATA.md, the p > q generalisation, virtual processes for odd
 * sizes) is computed once per link direction; each rank keeps only its
 * own sends and receives per step. Senders relay other senders' blocks, so they stage all p blocks.
 *
 * Cost: (p + q/2)(alpha + k beta) for even p, q (odd sizes: see
 * cpli_ring_steps_bound), against (p + q - 1)(alpha + k beta) for the
 * intra-group ring allgather over all p + q processes.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/link.h"
#include "sched/ring.h"

static int build(cpli_dir *d, int me) {
  cpli_schedule s = {0};
  CPLI_TRY(cpli_ring_schedule(d->p, d->q, &s));
  const int n = s.nsteps;
  d->ring_nsteps = n;
  d->ring_send_to = malloc(sizeof(int) * (size_t)(n ? n : 1));
  d->ring_send_msg = malloc(sizeof(int) * (size_t)(n ? n : 1));
  d->ring_recv_from = malloc(sizeof(int) * (size_t)(n ? n : 1));
  d->ring_recv_msg = malloc(sizeof(int) * (size_t)(n ? n : 1));
  d->ring_recv_dup = calloc((size_t)(n ? n : 1), 1);
  unsigned char *held = calloc((size_t)d->p, 1);
  if (!d->ring_send_to || !d->ring_send_msg || !d->ring_recv_from || !d->ring_recv_msg ||
      !d->ring_recv_dup || !held) {
    free(held);
    cpli_schedule_free(&s);
    return cpli_fail(CPL_ERR_NOMEM, "ring: out of memory for a %d-step schedule", n);
  }
  for (int i = 0; i < n; i++)
    d->ring_send_to[i] = d->ring_recv_from[i] = MPI_PROC_NULL,
    d->ring_send_msg[i] = d->ring_recv_msg[i] = -1;
  if (me < d->p) held[me] = 1;
  for (size_t i = 0; i < s.n; i++) { /* sorted by step */
    const cpli_transfer *t = &s.t[i];
    if (t->from == me) d->ring_send_to[t->step] = t->to, d->ring_send_msg[t->step] = t->msg;
    if (t->to == me) {
      d->ring_recv_from[t->step] = t->from;
      d->ring_recv_msg[t->step] = t->msg;
      d->ring_recv_dup[t->step] = held[t->msg];
      held[t->msg] = 1;
    }
  }
  free(held);
  cpli_schedule_free(&s);
  return CPL_OK;
}

int cpli_inter_ring(const cpli_inter_args *a) {
  cpli_dir *d;
  CPLI_TRY(cpli_link_dir(a->link, a->sender, a->ctx, &d));
  int me;
  MPI_Comm_rank(d->merged, &me);
  if (!d->ring_ready) {
    CPLI_TRY(build(d, me));
    d->ring_ready = 1;
  }
  /* Where each block lives on this rank. */
  cpli_blocks blk = a->blk;
  size_t *mem = NULL;
  char *stage = NULL, *scratch = NULL;
  int rc = CPL_OK;
  if (a->sender) {
    mem = malloc(sizeof *mem * 2 * (size_t)a->p);
    if (!mem) return cpli_fail(CPL_ERR_NOMEM, "ring: out of memory for %d sizes", a->p);
    rc = cpli_sender_counts(d, a->own_bytes, a->regular, mem, a->ctx);
    size_t total = 0;
    for (int i = 0; rc == CPL_OK && i < a->p; i++) mem[a->p + i] = total, total += mem[i];
    if (rc == CPL_OK && !(stage = malloc(total ? total : 1)))
      rc = cpli_fail(CPL_ERR_NOMEM, "ring: out of memory staging %zu bytes", total);
    if (rc == CPL_OK) {
      if (a->own_bytes) memcpy(stage + mem[a->p + me], a->own, a->own_bytes);
      blk = (cpli_blocks){stage, mem, mem + a->p};
    }
  }
  size_t maxb = 0;
  for (int i = 0; rc == CPL_OK && i < a->p; i++)
    if (blk.counts[i] > maxb) maxb = blk.counts[i];
  for (int s = 0; rc == CPL_OK && s < d->ring_nsteps; s++) {
    const int sm = d->ring_send_msg[s], rm = d->ring_recv_msg[s];
    if (sm < 0 && rm < 0) continue;
    char *rbuf = NULL;
    if (rm >= 0) {
      rbuf = blk.base + blk.displs[rm];
      if (d->ring_recv_dup[s]) { /* never overwrite a block we may be sending */
        if (!scratch && !(scratch = malloc(maxb ? maxb : 1))) {
          rc = cpli_fail(CPL_ERR_NOMEM, "ring: out of memory");
          break;
        }
        rbuf = scratch;
      }
    }
    a->ctx->xstep = s;
    rc = cpli_xfer(d->merged, sm >= 0 ? blk.base + blk.displs[sm] : NULL,
                   sm >= 0 ? blk.counts[sm] : 0, d->ring_send_to[s], rbuf,
                   rm >= 0 ? blk.counts[rm] : 0, d->ring_recv_from[s], a->ctx);
  }
  free(scratch);
  free(stage);
  free(mem);
  return rc;
}
