/*
 * Flow control of a producer port: the queue of each link, its policy,
 * and the transfers that answer the consumer's credits. Every rank of the
 * producer takes the same decisions, from credits the root receives and
 * shares (sync_links), so the collective transfers always match.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/select.h"
#include "core/error.h"
#include "core/launch.h"
#include "core/trace.h"
#include "core/wait.h"
#include "data/output.h"
#include "data/report.h"

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
static int copy_local(cpl_output *o, pstep *st) {
  if (st->copied) return CPL_OK;
  st->copied = 1;
  o->held++;
  o->held_bytes += st->copy_bytes;
  if (o->held > o->port_st.queue_max) o->port_st.queue_max = o->held;
  if (o->held_bytes > o->port_st.bytes_max) o->port_st.bytes_max = o->held_bytes;
  if (st->copy_bytes == 0) return CPL_OK;
  st->copy = malloc(st->copy_bytes);
  if (!st->copy)
    return cpli_fail(CPL_ERR_NOMEM,
                     "port %s.%s, step %ld: out of memory "
                     "queueing %zu bytes",
                     o->comp->name, o->port->name, st->step, st->copy_bytes);
  size_t off = 0;
  for (int k = 0; k < st->desc->nd; k++) {
    size_t b = st->desc->d[k].bytes[o->rank];
    if (b) memcpy(st->copy + off, st->block[k], b);
    st->block[k] = st->copy + off;
    off += b;
  }
  return CPL_OK;
}

/* One rank out of memory for a huge step must not leave the others
 * sending: the consumers would wait for its part until the link timeout.
 * So the ranks share their outcomes, and all fail naming the rank; the
 * callers then send the consumers the ERROR header. Only steps that are
 * copied pay for this small allgather. */
int cpli_step_copy(cpl_output *o, pstep *st) {
  if (st->copied) return CPL_OK;
  int rc = copy_local(o, st);
  if (o->size == 1) return rc;
  char why[600];
  snprintf(why, sizeof why, "%s", rc != CPL_OK ? cpl_last_error() : "");
  int64_t *rec = calloc(2 * (size_t)o->size, sizeof *rec);
  if (!rec) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  rec[2 * o->rank] = rc;
  rec[2 * o->rank + 1] = (int64_t)st->copy_bytes;
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = o->timeout;
  opt.label = o->port->name;
  opt.step = st->step;
  double t0 = MPI_Wtime(); /* waiting for a rank a consumer holds is waiting too */
  int arc =
      cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rec, 2, MPI_INT64_T, o->comm, &opt);
  o->port_st.wait_s += MPI_Wtime() - t0;
  int bad = -1;
  for (int r = 0; arc == CPL_OK && r < o->size && bad < 0; r++)
    if (rec[2 * r] != CPL_OK) bad = r;
  if (arc != CPL_OK) rc = arc;
  else if (rc != CPL_OK) rc = cpli_fail(rc, "%s", why); /* its own message stands */
  else if (bad >= 0)
    rc = cpli_fail((int)rec[2 * bad],
                   "port %s.%s, step %ld: producer rank %d could not hold its %lld bytes of "
                   "the step (out of memory), so no rank sends it",
                   o->comp->name, o->port->name, st->step, bad, (long long)rec[2 * bad + 1]);
  free(rec);
  return rc;
}

/* -------------------------------------------------------- transfers */

/* The delivery plan of this step on this link: the allgather unless some
 * consumer rank selected (or the link forces the redistribution). */
static int plan_for(cpl_output *o, olink *ol, const pstep *st, const cpl_coll_options *opt) {
  cpli_rplan *pl = &ol->plan;
  if (ol->sel_version == 0 && ol->l->delivery != CPLI_DELIVERY_SELECT) {
    pl->mode = CPLI_MODE_ALLGATHER; /* nobody ever selected: no planning */
    return CPL_OK;
  }
  if (pl->valid && pl->desc_version == st->desc->version && pl->sel_version == ol->sel_version)
    return CPL_OK;
  char where[300];
  snprintf(where, sizeof where, "link %s, sender %d, step %ld", ol->l->label, o->rank, st->step);
  pl->valid = 0;
  CPLI_TRY(cpli_rplan_build(pl, st->desc, o->rank, o->ctx->ends[ol->end].remote_size,
                            ol->nsels ? ol->sels : NULL, ol->l->delivery, opt, where));
  pl->desc_version = st->desc->version;
  pl->sel_version = ol->sel_version;
  return CPL_OK;
}

/* The trace record and progress line of a step sent; algs: what its
 * allgathers ran (cpli_inter_algs_add), NULL or "" if none ran. */
static void report_sent(cpl_output *o, olink *ol, const pstep *st, const char *algs, size_t sent,
                        double t_start) {
  cpli_event e = {.link = ol->l->label,
                  .producer = 1,
                  .step = st->step,
                  .bytes = sent,
                  .t_wait = st->t_queued,
                  .t_start = t_start,
                  .t_end = cpli_trace_now_us(),
                  .queue = ol->qn,
                  .dropped = ol->st.dropped};
  for (int k = 0; k < st->desc->nd; k++) e.step_bytes += st->desc->d[k].total;
  e.mode = ol->plan.mode == CPLI_MODE_SELECT ? "select" : "allgather";
  if (ol->fly.st == st) e.mode = ol->fly.mode == CPLI_MODE_SELECT ? "select" : "scatter";
  e.alg = algs && *algs ? algs : NULL;
  cpli_report_step(o->ctx, &e);
}

/* The step's small datasets (desc.h, "the batch"): this rank's blocks
 * packed, in one allgather, before the datasets that move alone. */
static int send_batch(cpl_output *o, const pstep *st, MPI_Comm inter, const cpl_coll_options *opt,
                      char *algs, size_t *sent) {
  const cpli_desc *d = st->desc;
  const size_t mine = d->batch_bytes[o->rank];
  char what[300];
  /* Kept across steps, as the consumer keeps its own (input.c): a new
   * buffer only when the batch grows, or shrinks below half. */
  if (mine > o->batch_cap || mine < o->batch_cap / 2) {
    free(o->batch);
    o->batch = mine ? malloc(mine) : NULL;
    o->batch_cap = o->batch ? mine : 0;
    if (mine && !o->batch)
      return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory packing this rank's %zu bytes",
                       cpli_batch_str(d, what, sizeof what), mine);
  }
  if (mine) cpli_batch_pack(d, o->rank, st->block, o->batch);
  cpl_inter_algorithm ran;
  int rc = cpli_inter_allgatherv_bytes(mine ? o->batch : NULL, mine, NULL, NULL, NULL, CPL_SENDER,
                                       inter, opt, &ran);
  if (rc == CPL_OK) cpli_inter_algs_add(algs, ran);
  else cpli_error_prefix("%s: ", cpli_batch_str(d, what, sizeof what));
  if (rc != CPL_OK) { /* sends MPI may still read: the buffer is MPI's now, */
    o->batch = NULL;  /* never freed (as coll/api.c's broadcast copy)      */
    o->batch_cap = 0;
  }
  *sent += mine;
  return rc;
}

/* Header on the root, then the datasets on every rank: the allgathers, or
 * the redistribution to the boxes the consumer ranks selected. */
int cpli_step_send(cpl_output *o, olink *ol, pstep *st) {
  cpl_context *ctx = o->ctx;
  cpl_coll_options opt;
  cpli_link_options(ol->l, st->step, &opt);
  int rc = plan_for(o, ol, st, &opt);
  int new_desc = st->desc->version != ol->desc_sent;
  if (o->rank == 0) {
    cpli_wbuf d = {0};
    if (rc == CPL_OK && new_desc) rc = cpli_desc_encode(st->desc, &d);
    cpli_hdr h = {.kind = CPLI_HDR_DATA,
                  .step = st->step,
                  .mode = ol->plan.mode,
                  .desc_len = (int64_t)d.len,
                  .attr_len = (int64_t)st->attrs.len};
    if (rc == CPL_OK)
      rc = cpli_chan_send_header(ctx, ol->end, &h, d.p, st->attrs.p, NULL, ol->l->timeout);
    cpli_w_free(&d);
    if (rc != CPL_OK) return rc; /* the others time out in the transfer */
  }
  if (rc != CPL_OK) return rc;
  ol->desc_sent = st->desc->version;
  double t_start = cpli_report_on(ctx) ? cpli_trace_now_us() : 0;
  size_t sent = 0;
  char algs[CPLI_ALGS_LEN] = "";
  if (ol->plan.mode == CPLI_MODE_SELECT) {
    char where[300];
    snprintf(where, sizeof where, "link %s, sender %d, step %ld", ol->l->label, o->rank, st->step);
    rc = cpli_redist_send(&ol->plan, st->desc, o->rank, st->block, ctx->ends[ol->end].ctl,
                          CPLI_TAG_DATA, ol->l->timeout, where, &sent);
  }
  MPI_Comm inter = ctx->ends[ol->end].data;
  if (ol->plan.mode == CPLI_MODE_ALLGATHER && st->desc->nbatched)
    rc = send_batch(o, st, inter, &opt, algs, &sent);
  for (int k = 0; ol->plan.mode == CPLI_MODE_ALLGATHER && k < st->desc->nd && rc == CPL_OK; k++) {
    const cpli_dset *s = &st->desc->d[k];
    if (s->total == 0 || s->batched) continue;
    cpl_inter_algorithm ran;
    rc = cpli_inter_allgatherv_bytes(st->block[k], s->bytes[o->rank], NULL, NULL, NULL, CPL_SENDER,
                                     inter, &opt, &ran);
    if (rc == CPL_OK) cpli_inter_algs_add(algs, ran);
    else cpli_error_prefix("dataset \"%s\": ", s->name);
    sent += s->bytes[o->rank];
  }
  if (rc != CPL_OK)
    cpli_error_prefix("producer \"%s\" sending step %ld to consumer \"%s\": ", o->comp->name,
                      st->step, ctx->wf->comps[ol->l->to_comp].name);
  if (rc == CPL_OK) {
    ol->st.delivered++;
    ol->last_step = st->step;
  }
  if (rc == CPL_OK && t_start > 0) report_sent(o, ol, st, algs, sent, t_start);
  return rc;
}

/* ------------------------------------------------- steps in flight (latest)
 *
 * Under `latest`, end_step only posts a step's messages (the header on the
 * root, this rank's blocks on every rank) and returns: a consumer that
 * stops in the middle of a step (SIGSTOP, a debugger) cannot hold the
 * producer. Each later end_step tests the messages; every rank's "still
 * pending" travels in the agreement (output.c), so all ranks see the step
 * complete at the same end_step, however their own messages progressed.
 * While a step is in flight, newer ones wait in the queue (within depth,
 * the step in flight included) and are dropped as usual. A step in flight
 * longer than the link timeout fails the port, decided by the root's clock. */

static void fly_free(cpl_output *o, oflight *fl) {
  free(fl->hdr);
  cpli_step_unref(o, fl->st);
  *fl = (oflight){.hdr_req = MPI_REQUEST_NULL};
}

static int fly_post(cpl_output *o, olink *ol, pstep *st) {
  cpl_context *ctx = o->ctx;
  oflight *fl = &ol->fly;
  /* The messages outlive end_step: they must not read the caller's buffers. */
  CPLI_TRY(cpli_step_copy(o, st));
  cpl_coll_options opt;
  cpli_link_options(ol->l, st->step, &opt);
  CPLI_TRY(plan_for(o, ol, st, &opt));
  *fl = (oflight){.hdr_req = MPI_REQUEST_NULL,
                  .mode = ol->plan.mode == CPLI_MODE_SELECT ? CPLI_MODE_SELECT : CPLI_MODE_SCATTER,
                  .t_posted = MPI_Wtime(),
                  .t_start_us = cpli_report_on(ctx) ? cpli_trace_now_us() : 0,
                  .dropped0 = ol->st.dropped};
  int new_desc = st->desc->version != ol->desc_sent;
  int rc = CPL_OK;
  if (o->rank == 0) {
    cpli_wbuf d = {0};
    if (new_desc) rc = cpli_desc_encode(st->desc, &d);
    cpli_hdr h = {.kind = CPLI_HDR_DATA,
                  .step = st->step,
                  .mode = fl->mode,
                  .desc_len = (int64_t)d.len,
                  .attr_len = (int64_t)st->attrs.len};
    if (rc == CPL_OK)
      rc = cpli_chan_post_header(ctx, ol->end, &h, d.p, st->attrs.p, &fl->hdr_req, &fl->hdr);
    cpli_w_free(&d);
  }
  char where[300];
  snprintf(where, sizeof where, "link %s, sender %d, step %ld", ol->l->label, o->rank, st->step);
  MPI_Comm ctl = ctx->ends[ol->end].ctl;
  if (rc == CPL_OK && fl->mode == CPLI_MODE_SELECT)
    rc = cpli_redist_post(&ol->plan, st->desc, o->rank, st->block, ctl, CPLI_TAG_DATA, where,
                          &fl->msgs, &fl->sent);
  else if (rc == CPL_OK)
    rc = cpli_scatter_post(st->desc, o->rank, ctx->ends[ol->end].remote_size, st->block, ctl,
                           CPLI_TAG_DATA, where, &fl->msgs, &fl->sent);
  if (rc != CPL_OK) { /* the port fails; the others time out */
    free(fl->hdr);
    *fl = (oflight){.hdr_req = MPI_REQUEST_NULL};
    return rc;
  }
  ol->desc_sent = st->desc->version;
  st->refs++;
  fl->st = st;
  cpli_launch_progress(ol->l->label, st->step); /* no collective records it */
  return CPL_OK;
}

/* This rank's part of the step in flight: 0 done, 1 pending, 2 failed. */
static int fly_test(cpl_output *o, oflight *fl) {
  int done = 1, hdone = 1;
  int rc = cpli_posted_test(&fl->msgs, &done);
  if (rc == CPL_OK && fl->hdr_req != MPI_REQUEST_NULL)
    rc = cpli_mpi_check(MPI_Test(&fl->hdr_req, &hdone, MPI_STATUS_IGNORE), "MPI_Test",
                        "port %s.%s: a step header in flight", o->comp->name, o->port->name);
  if (rc != CPL_OK) return 2;
  return !(done && hdone);
}

void cpli_flights_progress(cpl_output *o) {
  for (int i = 0; i < o->nl; i++)
    if (o->links[i].fly.st) (void)fly_test(o, &o->links[i].fly);
}

void cpli_flights_record(cpl_output *o, int64_t *rec) {
  double now = MPI_Wtime();
  for (int i = 0; i < o->nl; i++) {
    olink *ol = &o->links[i];
    int64_t *r = rec + CPLI_LREC * i;
    r[4] = ol->fly.st ? fly_test(o, &ol->fly) : 0;
    r[5] = ol->fly.st && o->rank == 0 && now - ol->fly.t_posted > ol->l->timeout;
  }
}

/* The step in flight is complete on every rank: it is delivered. */
static void fly_done(cpl_output *o, olink *ol) {
  oflight *fl = &ol->fly;
  pstep *st = fl->st;
  ol->st.delivered++;
  ol->last_step = st->step;
  cpli_posted_drop(&fl->msgs); /* frees the bookkeeping: nothing is pending */
  if (fl->t_start_us > 0) report_sent(o, ol, st, NULL, fl->sent, fl->t_start_us);
  fly_free(o, fl);
}

/* The words for a step in flight that did not complete: what is still
 * outstanding, as far as this rank knows. */
static void fly_outstanding(cpl_output *o, olink *ol, const char *pending, char *buf, size_t n) {
  const oflight *fl = &ol->fly;
  char peers[128];
  cpli_posted_peers(&fl->msgs, peers, sizeof peers);
  const char *cons = o->ctx->wf->comps[ol->l->to_comp].name;
  size_t k = 0;
  if (fl->hdr_req != MPI_REQUEST_NULL)
    k += (size_t)snprintf(buf, n, "its rank 0 has not taken the step header; ");
  if (k < n && *peers)
    k += (size_t)snprintf(buf + k, n - k,
                          "consumer \"%s\" rank(s) %s %s not taken this rank's data; ", cons, peers,
                          strchr(peers, ',') ? "have" : "has");
  if (k < n) snprintf(buf + k, n - k, "producer rank(s) %s still sending", pending);
}

int cpli_flights_settle(cpl_output *o, const int64_t *all, int n, int off) {
  for (int i = 0; i < o->nl; i++) {
    olink *ol = &o->links[i];
    if (!ol->fly.st) continue;
    char pending[128] = "";
    size_t k = 0;
    int failed = -1;
    for (int r = 0; r < o->size; r++) {
      int64_t v = all[(size_t)r * n + off + CPLI_LREC * i + 4];
      if (v == 2 && failed < 0) failed = r;
      if (v && k + 16 < sizeof pending)
        k += (size_t)snprintf(pending + k, sizeof pending - k, "%s%d", k ? ", " : "", r);
    }
    if (failed >= 0)
      return cpli_fail(CPL_ERR_MPI,
                       "link %s, sender %d, step %ld: producer rank %d failed testing the "
                       "step's messages (its message says why)",
                       ol->l->label, o->rank, ol->fly.st->step, failed);
    if (!k) {
      fly_done(o, ol);
      continue;
    }
    if (all[off + CPLI_LREC * i + 5]) { /* the root's clock decides */
      char what[512];
      fly_outstanding(o, ol, pending, what, sizeof what);
      return cpli_fail(CPL_ERR_TIMEOUT,
                       "link %s, sender %d, step %ld: producer \"%s\" posted step %ld more than "
                       "%g s ago (the link timeout) and consumer \"%s\" has not taken it (policy "
                       "latest: the producer went on, %ld newer steps dropped meanwhile): %s",
                       ol->l->label, o->rank, ol->fly.st->step, o->comp->name, ol->fly.st->step,
                       ol->l->timeout, o->ctx->wf->comps[ol->l->to_comp].name,
                       ol->st.dropped - ol->fly.dropped0, what);
    }
  }
  return CPL_OK;
}

/* Close: wait for the step in flight (each rank for its own messages, up
 * to the link timeout), then agree whether every rank's completed. */
static int fly_complete(cpl_output *o, olink *ol) {
  oflight *fl = &ol->fly;
  char where[300];
  snprintf(where, sizeof where, "link %s, sender %d, step %ld", ol->l->label, o->rank,
           fl->st->step);
  int rc = CPL_OK, done = 1;
  if (fl->hdr_req != MPI_REQUEST_NULL) {
    char said[400];
    snprintf(said, sizeof said,
             "%s: closing, waiting for consumer \"%s\" rank 0 to take the step header", where,
             o->ctx->wf->comps[ol->l->to_comp].name);
    rc = cpli_poll_request(&fl->hdr_req, ol->l->timeout, said, &done);
    if (rc == CPL_OK && !done)
      rc = cpli_fail(CPL_ERR_TIMEOUT,
                     "%s: closing, consumer \"%s\" rank 0 did not take the step header "
                     "within %g s",
                     where, o->ctx->wf->comps[ol->l->to_comp].name, ol->l->timeout);
  }
  if (rc == CPL_OK) rc = cpli_posted_wait(&fl->msgs, ol->l->timeout, where, "consumer");
  int64_t *st = calloc((size_t)o->size, sizeof *st);
  if (!st) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  st[o->rank] = rc;
  cpl_coll_options opt;
  cpli_link_options(ol->l, fl->st->step, &opt);
  opt.timeout = cpli_peer_timeout(ol->l->timeout);
  int arc =
      cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, st, 1, MPI_INT64_T, o->comm, &opt);
  int bad = -1;
  for (int r = 0; arc == CPL_OK && r < o->size && bad < 0; r++)
    if (st[r] != CPL_OK) bad = r;
  free(st);
  if (arc != CPL_OK) return arc;
  if (bad >= 0) {
    if (rc == CPL_OK)
      rc = cpli_fail(CPL_ERR_TIMEOUT,
                     "%s: closing, producer rank %d could not complete the step "
                     "in flight (its message says why)",
                     where, bad);
    return rc; /* cpli_queue_drop withdraws what is left */
  }
  fly_done(o, ol);
  return CPL_OK;
}

static pstep *pop(olink *ol) {
  pstep *st = ol->q[0];
  memmove(ol->q, ol->q + 1, (size_t)(ol->qn - 1) * sizeof *ol->q);
  ol->qn--;
  return st;
}

/* A queued step the consumer's request passed over (it asked for the
 * latest, or for a later step). */
static void pass_over(cpl_output *o, olink *ol) {
  ol->st.skipped++;
  cpli_step_unref(o, pop(ol));
}

static void log_drop(cpl_output *o, olink *ol, const pstep *st) {
  ol->st.dropped++;
  cpli_report_drop(o->ctx, ol->l->label, st->step, ol->qn);
  if (o->rank != 0 || ol->stale_logged >= 3) return;
  ol->stale_logged++;
  fprintf(stderr,
          "coupler: link %s: dropped step %ld (policy latest, depth "
          "%d: the consumer is behind)%s\n",
          ol->l->label, st->step, ol->l->depth,
          ol->stale_logged == 3 ? "; further drops are "
                                  "counted and reported when the port closes"
                                : "");
}

/* Policy latest drops the oldest queued step. */
static void drop_oldest(cpl_output *o, olink *ol) {
  pstep *st = pop(ol);
  log_drop(o, ol, st);
  cpli_step_unref(o, st);
}

int cpli_queue_send_missing(cpl_output *o, olink *ol, const char *why) {
  cpli_chan *ch = chan(o, ol);
  ch->credits--;
  if (o->rank != 0) return CPL_OK;
  cpli_hdr h = {.kind = CPLI_HDR_MISSING,
                .status = CPL_ERR_NOT_FOUND,
                .step = ch->want,
                .msg_len = (int64_t)strlen(why) + 1};
  return cpli_chan_send_header(o->ctx, ol->end, &h, NULL, NULL, why, ol->l->timeout);
}

/* Answer the pending credits: the step each asks for, passing over the
 * queued steps it does not want; a step that is not held (passed, dropped,
 * never made) is answered MISSING. A request for a step not made yet waits. */
static int serve_credits(cpl_output *o, olink *ol, int post) {
  cpli_chan *ch = chan(o, ol);
  while (ch->credits > 0 && !ch->detached) {
    long want = ch->want;
    if (want == CPL_STEP_LATEST)
      while (ol->qn > 1) pass_over(o, ol);
    /* Under policy latest the next step is the newest: the credit usually
     * arrives between end_steps, and is served after the next one queued
     * a newer step. */
    if (want == CPL_STEP_NEXT && ol->l->policy == CPL_POLICY_LATEST)
      while (ol->qn > 1) drop_oldest(o, ol);
    if (want >= 0) {
      while (ol->qn > 0 && ol->q[0]->step < want) pass_over(o, ol);
      int gone = ol->qn > 0 ? ol->q[0]->step > want : want <= o->step;
      if (gone) {
        char why[300];
        if (ol->qn > 0)
          snprintf(why, sizeof why,
                   "step %ld is not held by the producer "
                   "(it holds steps %ld..%ld)",
                   want, ol->q[0]->step, ol->q[ol->qn - 1]->step);
        else
          snprintf(why, sizeof why,
                   "step %ld is not held by the producer "
                   "(it holds none; its last step is %ld)",
                   want, o->step);
        CPLI_TRY(cpli_queue_send_missing(o, ol, why));
        continue;
      }
    }
    if (ol->qn == 0) break;
    pstep *st = pop(ol);
    ch->credits--;
    int rc = post ? fly_post(o, ol, st) : cpli_step_send(o, ol, st);
    cpli_step_unref(o, st);
    CPLI_TRY(rc);
    if (post) break; /* one step in flight at a time */
  }
  return CPL_OK;
}

int cpli_links_poll(cpl_output *o, int64_t *rec) {
  int rc = CPL_OK;
  for (int i = 0; i < o->nl && rc == CPL_OK; i++) rc = cpli_chan_poll(o->ctx, o->links[i].end);
  for (int i = 0; i < o->nl; i++) {
    const cpli_chan *ch = chan(o, &o->links[i]);
    int64_t *r = rec + CPLI_LREC * i;
    r[0] = ch->credits;
    r[1] = ch->detached;
    r[2] = ch->want;
    r[3] = ch->sel_version;
  }
  return rc;
}

/* Decode the q selections the root received on link ol (bcast from it). */
static int take_selections(cpl_output *o, olink *ol, long version) {
  cpli_chan *ch = chan(o, ol);
  int64_t len = o->rank == 0 ? (int64_t)ch->sel_len : 0;
  cpl_coll_options opt;
  cpli_link_options(ol->l, o->step, &opt);
  CPLI_TRY(cpl_intra_bcast(&len, 1, MPI_INT64_T, 0, o->comm, &opt));
  unsigned char *b = o->rank == 0 ? ch->sel : malloc(len > 0 ? (size_t)len : 1);
  if (!b) return cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", ol->l->label);
  int rc = len > 0x7fffffff ? cpli_fail(CPL_ERR_UNSUPPORTED,
                                        "link %s: "
                                        "selections over 2 GiB",
                                        ol->l->label)
                            : cpl_intra_bcast(b, (int)len, MPI_BYTE, 0, o->comm, &opt);
  int q = o->ctx->ends[ol->end].remote_size;
  if (rc == CPL_OK && ol->nsels != q) {
    cpli_sel *v = calloc((size_t)q, sizeof *v);
    if (!v) rc = cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", ol->l->label);
    for (int j = 0; v && j < ol->nsels; j++) cpli_sel_free(&ol->sels[j]);
    if (v) {
      free(ol->sels);
      ol->sels = v;
      ol->nsels = q;
    }
  }
  cpli_rbuf r = cpli_r_init(b, (size_t)len);
  for (int j = 0; rc == CPL_OK && j < q && !r.bad; j++) {
    uint64_t n = cpli_r_u64(&r);
    const void *p = n <= r.len - r.pos ? cpli_r_bytes(&r, (size_t)n) : NULL;
    cpli_rbuf one = cpli_r_init(p, p ? (size_t)n : 0);
    if (p) cpli_sel_decode(&one, &ol->sels[j]);
    r.bad |= !p || one.bad || one.pos != one.len;
  }
  if (rc == CPL_OK && (r.bad || r.pos != r.len))
    rc = cpli_fail(CPL_ERR_INTERNAL,
                   "link %s: corrupt selections from the "
                   "consumers (%lld bytes)",
                   ol->l->label, (long long)len);
  if (o->rank != 0) free(b);
  if (rc == CPL_OK) ol->sel_version = version;
  return rc;
}

int cpli_links_adopt(cpl_output *o, const int64_t *rec) {
  int rc = CPL_OK;
  for (int i = 0; i < o->nl; i++) {
    olink *ol = &o->links[i];
    const int64_t *r = rec + CPLI_LREC * i;
    if (o->rank != 0) {
      chan(o, ol)->credits = r[0];
      chan(o, ol)->detached = (int)r[1];
      chan(o, ol)->want = (long)r[2];
    }
    if (r[3] != ol->sel_version && rc == CPL_OK) rc = take_selections(o, ol, (long)r[3]);
  }
  return rc;
}

/* Root: wait up to `seconds` for a credit or DETACH on any link. */
static int wait_any(cpl_output *o, double seconds) {
  cpli_wait w;
  cpli_wait_start(&w, seconds, CPLI_WAIT_NAP_US);
  char said[200];
  snprintf(said, sizeof said, "port %s.%s, step %ld: rank 0 waiting for the consumers' requests",
           o->comp->name, o->port->name, o->step);
  cpli_wait_describe(&w, cpli_wait_say_text, said);
  for (;;) {
    for (int i = 0; i < o->nl; i++) {
      CPLI_TRY(cpli_chan_poll(o->ctx, o->links[i].end));
      const cpli_chan *ch = chan(o, &o->links[i]);
      if ((ch->credits > 0 || ch->detached) && !ch->eos_sent) return CPL_OK;
    }
    if (cpli_wait_idle(&w)) /* no request: not an error; an interrupt is */
      return w.interrupted ? CPL_ERR_INTERRUPTED : CPL_OK;
  }
}

/* Could a credit of link ol be served now, without waiting? (The links
 * a producer serves while it waits for a credit on another.) */
static int servable(cpl_output *o, olink *ol) {
  const cpli_chan *ch = chan(o, ol);
  if (ch->credits <= 0 || ch->detached || ch->eos_sent || ol->fly.st) return 0;
  /* a step number made by now is sent, or answered MISSING */
  return ch->want < 0 ? ol->qn > 0 : ch->want <= o->step;
}

/* Closing: may link ol end now? One with nothing queued may; one whose
 * last step is still in flight (policy latest posts it and goes on) once
 * its consumer asks for more, which it does only after taking that step:
 * the consumer may be waiting for this end before it reads another link. */
static int ends_now(cpl_output *o, olink *ol) {
  const cpli_chan *ch = chan(o, ol);
  return o->closing && ol->qn == 0 && !ch->eos_sent && !ch->detached &&
         (!ol->fly.st || ch->credits > 0);
}

typedef struct waiting_on {
  cpl_output *o;
  int li;
} waiting_on;

/* Root, while waiting for a credit on link li: has another link one to
 * serve? (Polls the other channels.) */
static int other_servable(void *arg) {
  const waiting_on *w = arg;
  for (int i = 0; i < w->o->nl; i++)
    if (i != w->li && cpli_chan_poll(w->o->ctx, w->o->links[i].end) == CPL_OK &&
        (servable(w->o, &w->o->links[i]) || ends_now(w->o, &w->o->links[i])))
      return 1;
  return 0;
}

/* The broadcast of a request poll (wait_on -2), while rank 0 waits up to
 * `seconds` for requests first: the other ranks wait with naps, not in a
 * spinning collective that keeps a core busy while a serving stage is
 * idle, and takes it from the consumers it serves. */
static int bcast_napping(cpl_output *o, int64_t *rec, int n, double seconds, double timeout) {
  cpli_ctx ctx = {.timeout = timeout, .label = o->port->name, .step = o->step};
  const int rc = cpli_intra_bcast_napping(rec, n, MPI_INT64_T, o->comm, &ctx);
  if (rc == CPL_ERR_TIMEOUT)
    cpli_error_prefix("port %s.%s, step %ld: rank 0 polls for requests for at most %g s: ",
                      o->comp->name, o->port->name, o->step, seconds);
  return rc;
}

/*
 * Give every rank the root's view of the channels: credits, detaches,
 * requests and selections per link. With `wait_on` >= 0 the root first
 * waits (up to that link's timeout) for a credit or DETACH on it; with -2,
 * for one on any link, at most `seconds` (not an error). A root failure
 * reaches all ranks.
 */
int cpli_links_sync(cpl_output *o, int wait_on, double seconds) {
  int n = 1 + CPLI_LREC * o->nl;
  int64_t *rec = calloc((size_t)n, sizeof *rec);
  if (!rec) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  int rc = CPL_OK;
  if (o->rank == 0) {
    waiting_on w = {o, wait_on};
    if (wait_on >= 0)
      rc = cpli_chan_wait_credit(o->ctx, o->links[wait_on].end, o->links[wait_on].l->timeout,
                                 o->nl > 1 ? other_servable : NULL, &w);
    else if (wait_on == -2) rc = wait_any(o, seconds);
    int prc = cpli_links_poll(o, rec + 1);
    rec[0] = rc = rc == CPL_OK ? prc : rc;
  }
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = cpli_peer_timeout(wait_on == -2 ? seconds : o->timeout);
  opt.label = o->port->name;
  opt.step = o->step;
  int brc = wait_on == -2 && seconds > 0 ? bcast_napping(o, rec, n, seconds, opt.timeout)
                                         : cpl_intra_bcast(rec, n, MPI_INT64_T, 0, o->comm, &opt);
  if (brc == CPL_OK && o->rank != 0) {
    rc = (int)rec[0];
    if (rc != CPL_OK && rc != CPL_ERR_TIMEOUT)
      cpli_fail(rc,
                "port %s.%s, step %ld: rank 0 %s the "
                "consumers' credits (its message says why)",
                o->comp->name, o->port->name, o->step,
                rc == CPL_ERR_INTERRUPTED ? "was interrupted by a signal waiting for"
                                          : "failed reading");
  }
  if (brc == CPL_OK && rc == CPL_OK) brc = cpli_links_adopt(o, rec + 1);
  if (brc == CPL_OK && rc == CPL_ERR_TIMEOUT) { /* the same words everywhere */
    const olink *ol = &o->links[wait_on];
    char last[64] = "any step yet", queued[64] = "";
    if (ol->last_step >= 0) snprintf(last, sizeof last, "a step since step %ld", ol->last_step);
    /* what waits, the step being ended included (it is queued first) */
    if (ol->qn > 1)
      snprintf(queued, sizeof queued, "steps %ld..%ld", ol->q[0]->step, ol->q[ol->qn - 1]->step);
    else snprintf(queued, sizeof queued, "step %ld", ol->q[0]->step);
    cpli_fail(rc,
              "link %s, sender 0, step %ld: the consumer took no step within %g s: producer "
              "\"%s\" is waiting on consumer \"%s\" (its rank 0 sends the requests), which has "
              "not asked for %s (policy all, depth %d; waiting: %s): is it stuck, or slower "
              "than the link timeout allows?",
              ol->l->label, ol->q[0]->step, ol->l->timeout, o->comp->name,
              o->ctx->wf->comps[ol->l->to_comp].name, last, ol->l->depth, queued);
  }
  free(rec);
  return brc != CPL_OK ? brc : rc;
}

/* Release queued steps a departed consumer will never take. A step still
 * in flight (after a failure) is withdrawn; its copy is left to the
 * process's end, since MPI may still read a cancelled send's buffer. */
void cpli_queue_drop(cpl_output *o, olink *ol) {
  ol->st.undelivered += ol->qn;
  while (ol->qn > 0) cpli_step_unref(o, ol->q[--ol->qn]);
  oflight *fl = &ol->fly;
  if (!fl->st) return;
  ol->st.undelivered++;
  cpli_posted_drop(&fl->msgs);
  if (fl->hdr_req != MPI_REQUEST_NULL) {
    MPI_Cancel(&fl->hdr_req);
    MPI_Request_free(&fl->hdr_req);
  }
  *fl = (oflight){.hdr_req = MPI_REQUEST_NULL};
}

int cpli_queue_end_link(cpl_output *o, olink *ol) {
  cpli_chan *ch = chan(o, ol);
  if (ch->eos_sent) return CPL_OK;
  ch->eos_sent = 1;
  ch->credits = 0; /* the end of stream answers a pending request */
  if (o->rank != 0 || ch->detached) return CPL_OK;
  cpli_hdr h = {.kind = CPLI_HDR_EOS, .step = o->step};
  return cpli_chan_send_header(o->ctx, ol->end, &h, NULL, NULL, NULL, ol->l->timeout);
}

int cpli_queue_end_drained(cpl_output *o) {
  for (int j = 0; j < o->nl; j++) {
    olink *ol = &o->links[j];
    if (!ends_now(o, ol)) continue;
    if (ol->fly.st) CPLI_TRY(fly_complete(o, ol)); /* taken: the consumer asks for more */
    CPLI_TRY(cpli_queue_end_link(o, ol));
  }
  return CPL_OK;
}

/* Wait for credits until the queue fits `limit` (after the step in
 * flight, if any, completed); the time counts as waiting (wait_s). */
int cpli_queue_drain(cpl_output *o, int li, int limit) {
  olink *ol = &o->links[li];
  double t0 = MPI_Wtime();
  int rc = ol->fly.st ? fly_complete(o, ol) : CPL_OK;
  while (rc == CPL_OK && ol->qn > limit) {
    if (o->closing) rc = cpli_queue_end_drained(o);
    if (rc != CPL_OK) break;
    if (chan(o, ol)->detached) {
      cpli_queue_drop(o, ol);
      break;
    }
    if (chan(o, ol)->credits == 0) rc = cpli_links_sync(o, li, 0);
    /* The other links' consumers are served meanwhile: one component
     * reading two of them in turn may wait on the other first. */
    for (int j = 0; rc == CPL_OK && j < o->nl; j++)
      if (j != li && servable(o, &o->links[j]))
        rc = serve_credits(o, &o->links[j], o->links[j].l->policy == CPL_POLICY_LATEST);
    if (rc == CPL_OK) rc = serve_credits(o, ol, 0);
  }
  ol->st.wait_s += MPI_Wtime() - t0;
  return rc;
}

/* Policy for one link after the step was enqueued. */
int cpli_queue_apply(cpl_output *o, int li) {
  olink *ol = &o->links[li];
  if (ol->l->policy == CPL_POLICY_LATEST) {
    /* Held: depth steps, besides the one in flight (never waited for). */
    while (ol->qn > ol->l->depth) drop_oldest(o, ol);
    return ol->fly.st ? CPL_OK : serve_credits(o, ol, 1);
  }
  /* Transfers count as waiting too: a consumer may stop inside one. */
  double t0 = MPI_Wtime();
  int rc = serve_credits(o, ol, 0);
  ol->st.wait_s += MPI_Wtime() - t0;
  return rc == CPL_OK ? cpli_queue_drain(o, li, ol->l->depth) : rc;
}

/* Tell every consumer why the port failed; they return it from begin_step. */
void cpli_queue_send_error(cpl_output *o, int status) {
  if (o->rank != 0) return;
  const char *msg = cpl_last_error();
  for (int i = 0; i < o->nl; i++) {
    olink *ol = &o->links[i];
    cpli_chan *ch = chan(o, ol);
    if (ch->detached || ch->eos_sent) continue;
    cpli_hdr h = {.kind = CPLI_HDR_ERROR,
                  .status = status,
                  .step = o->step,
                  .msg_len = (int64_t)strlen(msg) + 1};
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", msg);
    cpli_chan_send_header(o->ctx, ol->end, &h, NULL, NULL, keep, ol->l->timeout);
    cpli_fail(status, "%s", keep);
    ch->eos_sent = 1; /* nothing may follow an error */
  }
}
