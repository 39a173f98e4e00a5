/*
 * Flow control of a producer port: the queue of each link, its policy,
 * and the transfers that answer the consumer's credits. Every rank of the
 * producer takes the same decisions, from credits the root receives and
 * shares (sync_links), so the collective transfers always match.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/output.h"

#define chan(o, ol) cpli_out_chan(o, ol)

/* ---------------------------------------------------------- held steps */

void cpli_step_unref(cpl_output *o, pstep *st) {
  if (--st->refs > 0) return;
  if (st->copied) {
    o->held--;
    o->held_bytes -= st->copy_bytes;
  }
  cpli_desc_unref(st->desc);
  cpli_w_free(&st->attrs);
  free(st->block);
  free(st->copy);
  free(st);
}

/* Make the step independent of the caller's buffers. */
int cpli_step_copy(cpl_output *o, pstep *st) {
  if (st->copied) return CPL_OK;
  st->copied = 1;
  o->held++;
  o->held_bytes += st->copy_bytes;
  if (o->held > o->port_st.queue_max) o->port_st.queue_max = o->held;
  if (o->held_bytes > o->port_st.bytes_max) o->port_st.bytes_max = o->held_bytes;
  if (st->copy_bytes == 0) return CPL_OK;
  st->copy = malloc(st->copy_bytes);
  if (!st->copy)
    return cpli_fail(CPL_ERR_NOMEM, "port %s.%s, step %ld: out of memory "
                     "queueing %zu bytes", o->comp->name, o->port->name,
                     st->step, st->copy_bytes);
  size_t off = 0;
  for (int k = 0; k < st->desc->nd; k++) {
    size_t b = st->desc->d[k].bytes[o->rank];
    if (b) memcpy(st->copy + off, st->block[k], b);
    st->block[k] = st->copy + off;
    off += b;
  }
  return CPL_OK;
}

/* -------------------------------------------------------- transfers */

/* Header on the root, then the datasets' allgathers on every rank. */
static int send_step(cpl_output *o, olink *ol, pstep *st) {
  cpl_context *ctx = o->ctx;
  int rc = CPL_OK;
  int new_desc = st->desc->version != ol->desc_sent;
  if (o->rank == 0) {
    cpli_wbuf d = {0};
    if (new_desc) rc = cpli_desc_encode(st->desc, &d);
    cpli_hdr h = {.kind = CPLI_HDR_DATA, .step = st->step,
                  .desc_len = (int64_t)d.len, .attr_len = (int64_t)st->attrs.len};
    if (rc == CPL_OK)
      rc = cpli_chan_send_header(ctx, ol->end, &h, d.p, st->attrs.p, NULL,
                                 ol->l->timeout);
    cpli_w_free(&d);
    if (rc != CPL_OK) return rc; /* the others time out in the allgather */
  }
  ol->desc_sent = st->desc->version;
  cpl_coll_options opt;
  cpli_link_options(ol->l, st->step, &opt);
  MPI_Comm inter = ctx->ends[ol->end].intercomm;
  for (int k = 0; k < st->desc->nd && rc == CPL_OK; k++) {
    const cpli_dset *s = &st->desc->d[k];
    if (s->total == 0) continue;
    rc = cpl_inter_allgatherv(st->block[k], (int)s->bytes[o->rank], MPI_BYTE,
                              NULL, NULL, NULL, MPI_BYTE, CPL_SENDER, inter, &opt);
    if (rc != CPL_OK)
      cpli_error_prefix("dataset \"%s\": ", s->name);
  }
  if (rc == CPL_OK) ol->st.delivered++;
  return rc;
}

static int serve_credits(cpl_output *o, olink *ol) {
  cpli_chan *ch = chan(o, ol);
  while (ch->credits > 0 && ol->qn > 0 && !ch->detached) {
    pstep *st = ol->q[0];
    memmove(ol->q, ol->q + 1, (size_t)(ol->qn - 1) * sizeof *ol->q);
    ol->qn--;
    ch->credits--;
    int rc = send_step(o, ol, st);
    cpli_step_unref(o, st);
    CPLI_TRY(rc);
  }
  return CPL_OK;
}

int cpli_links_poll(cpl_output *o, int64_t *rec) {
  int rc = CPL_OK;
  for (int i = 0; i < o->nl && rc == CPL_OK; i++)
    rc = cpli_chan_poll(o->ctx, o->links[i].end);
  for (int i = 0; i < o->nl; i++) {
    rec[2 * i] = chan(o, &o->links[i])->credits;
    rec[2 * i + 1] = chan(o, &o->links[i])->detached;
  }
  return rc;
}

void cpli_links_take(cpl_output *o, const int64_t *rec) {
  for (int i = 0; i < o->nl; i++) {
    chan(o, &o->links[i])->credits = rec[2 * i];
    chan(o, &o->links[i])->detached = (int)rec[2 * i + 1];
  }
}

/*
 * Give every rank the root's view of the channels: credits and detaches
 * per link. With `wait_on` >= 0 the root first waits (up to that link's
 * timeout) for a credit or DETACH on it. A root failure reaches all ranks.
 */
static int sync_links(cpl_output *o, int wait_on) {
  int n = 1 + 2 * o->nl;
  int64_t *rec = calloc((size_t)n, sizeof *rec);
  if (!rec) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  int rc = CPL_OK;
  if (o->rank == 0) {
    if (wait_on >= 0)
      rc = cpli_chan_wait_credit(o->ctx, o->links[wait_on].end,
                                 o->links[wait_on].l->timeout);
    int prc = cpli_links_poll(o, rec + 1);
    rec[0] = rc = rc == CPL_OK ? prc : rc;
  }
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = 2 * o->timeout + 10; /* beyond the root's own wait */
  opt.label = o->port->name;
  opt.step = o->step;
  int brc = cpl_intra_bcast(rec, n, MPI_INT64_T, 0, o->comm, &opt);
  if (brc == CPL_OK && o->rank != 0) {
    rc = (int)rec[0];
    cpli_links_take(o, rec + 1);
    if (rc != CPL_OK && rc != CPL_ERR_TIMEOUT)
      cpli_fail(rc, "port %s.%s, step %ld: rank 0 failed reading the "
                "consumers' credits (its message says why)", o->comp->name,
                o->port->name, o->step);
  }
  if (brc == CPL_OK && rc == CPL_ERR_TIMEOUT) { /* the same words everywhere */
    const olink *ol = &o->links[wait_on];
    cpli_fail(rc, "link %s, sender 0, step %ld: the consumer took no step "
              "within %g s (policy all, depth %d, %d steps queued): is it "
              "stuck, or slower than the link timeout allows?", ol->l->label,
              ol->q[0]->step, ol->l->timeout, ol->l->depth, ol->qn);
  }
  free(rec);
  return brc != CPL_OK ? brc : rc;
}

/* Release queued steps a departed consumer will never take. */
void cpli_queue_drop(cpl_output *o, olink *ol) {
  ol->st.undelivered += ol->qn;
  while (ol->qn > 0) cpli_step_unref(o, ol->q[--ol->qn]);
}

/* Under `all`: wait for credits until the queue fits its depth. */
int cpli_queue_drain(cpl_output *o, int li, int limit) {
  olink *ol = &o->links[li];
  double t0 = MPI_Wtime();
  int rc = CPL_OK;
  while (rc == CPL_OK && ol->qn > limit) {
    if (chan(o, ol)->detached) {
      cpli_queue_drop(o, ol);
      break;
    }
    if (chan(o, ol)->credits == 0) rc = sync_links(o, li);
    if (rc == CPL_OK) rc = serve_credits(o, ol);
  }
  ol->st.wait_s += MPI_Wtime() - t0;
  return rc;
}

static void log_drop(cpl_output *o, olink *ol, const pstep *st) {
  ol->st.dropped++;
  if (o->rank != 0 || ol->stale_logged >= 3) return;
  ol->stale_logged++;
  fprintf(stderr, "coupler: link %s: dropped step %ld (policy latest, depth "
          "%d: the consumer is behind)%s\n", ol->l->label, st->step,
          ol->l->depth, ol->stale_logged == 3 ? "; further drops are "
          "counted and reported when the port closes" : "");
}

/* Policy for one link after the step was enqueued. */
int cpli_queue_apply(cpl_output *o, int li) {
  olink *ol = &o->links[li];
  if (ol->l->policy == CPL_POLICY_LATEST) {
    while (ol->qn > ol->l->depth) {
      pstep *st = ol->q[0];
      memmove(ol->q, ol->q + 1, (size_t)(ol->qn - 1) * sizeof *ol->q);
      ol->qn--;
      log_drop(o, ol, st);
      cpli_step_unref(o, st);
    }
    return serve_credits(o, ol);
  }
  CPLI_TRY(serve_credits(o, ol));
  return cpli_queue_drain(o, li, ol->l->depth);
}


/* Tell every consumer why the port failed; they return it from begin_step. */
void cpli_queue_send_error(cpl_output *o, int status) {
  if (o->rank != 0) return;
  const char *msg = cpl_last_error();
  for (int i = 0; i < o->nl; i++) {
    olink *ol = &o->links[i];
    cpli_chan *ch = chan(o, ol);
    if (ch->detached || ch->eos_sent) continue;
    cpli_hdr h = {.kind = CPLI_HDR_ERROR, .status = status, .step = o->step,
                  .msg_len = (int64_t)strlen(msg) + 1};
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", msg);
    cpli_chan_send_header(o->ctx, ol->end, &h, NULL, NULL, keep, ol->l->timeout);
    cpli_fail(status, "%s", keep);
    ch->eos_sent = 1; /* nothing may follow an error */
  }
}

