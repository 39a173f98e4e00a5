/*
 * The control channel between the roots of a link, the data layer's
 * per-context state, and the drain at cpl_finalize (protocol in data.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "data/data.h"

/* Spin briefly, then nap: a waiting root must not steal a shared core
 * from the rank it waits for. */
static void backoff(long *spins) {
  if (++*spins < 200) return;
  struct timespec nap = {0, 50000};
  nanosleep(&nap, NULL);
}

int cpli_poll_request(MPI_Request *req, double timeout, int *done) {
  double t0 = MPI_Wtime();
  long spins = 0;
  *done = 0;
  for (;;) {
    int rc = MPI_Test(req, done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return cpli_mpi_check(rc, "MPI_Test", "control channel");
    if (*done || MPI_Wtime() - t0 > timeout) return CPL_OK;
    backoff(&spins);
  }
}

static const char *label(cpl_context *ctx, int end) {
  return ctx->wf->links[ctx->ends[end].link].label;
}

/* Send a small message and see it complete (eager: at once). */
static int send_wait(cpl_context *ctx, int end, const void *buf, int n,
                     int tag, double timeout, const char *what) {
  MPI_Request req;
  int done;
  int rc = MPI_Isend(buf, n, MPI_BYTE, 0, tag, ctx->ends[end].ctl, &req);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Isend", "link %s: %s", label(ctx, end), what));
  CPLI_TRY(cpli_poll_request(&req, timeout, &done));
  if (done) return CPL_OK;
  MPI_Cancel(&req);
  MPI_Request_free(&req);
  return cpli_fail(CPL_ERR_TIMEOUT, "link %s: %s did not complete within "
                   "%g s", label(ctx, end), what, timeout);
}

/* ------------------------------------------------------------- producer */

static int take_credit_msg(cpl_context *ctx, int end, cpli_chan *ch) {
  int64_t m[2];
  int rc = MPI_Recv(m, (int)sizeof m, MPI_BYTE, 0, CPLI_TAG_CREDIT,
                    ctx->ends[end].ctl, MPI_STATUS_IGNORE);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Recv", "link %s: credit", label(ctx, end)));
  if (m[0] == CPLI_MSG_DETACH) ch->detached = 1;
  else if (!ch->detached) ch->credits++;
  return CPL_OK;
}

int cpli_chan_poll(cpl_context *ctx, int end) {
  cpli_chan *ch = &ctx->data->chan[end];
  for (;;) {
    int flag = 0;
    int rc = MPI_Iprobe(0, CPLI_TAG_CREDIT, ctx->ends[end].ctl, &flag,
                        MPI_STATUS_IGNORE);
    CPLI_TRY(cpli_mpi_check(rc, "MPI_Iprobe", "link %s", label(ctx, end)));
    if (!flag) return CPL_OK;
    CPLI_TRY(take_credit_msg(ctx, end, ch));
  }
}

int cpli_chan_wait_credit(cpl_context *ctx, int end, double timeout) {
  cpli_chan *ch = &ctx->data->chan[end];
  double t0 = MPI_Wtime();
  long spins = 0;
  for (;;) {
    CPLI_TRY(cpli_chan_poll(ctx, end));
    if (ch->credits > 0 || ch->detached) return CPL_OK;
    if (MPI_Wtime() - t0 > timeout) return CPL_ERR_TIMEOUT; /* caller says */
    backoff(&spins);
  }
}

int cpli_chan_send_header(cpl_context *ctx, int end, const cpli_hdr *h,
                          const void *desc, const void *attrs,
                          const void *msg, double timeout) {
  size_t n = sizeof *h + (size_t)(h->desc_len + h->attr_len + h->msg_len);
  if (n > 0x7fffffff)
    return cpli_fail(CPL_ERR_UNSUPPORTED, "link %s: step header of %zu bytes "
                     "is too large", label(ctx, end), n);
  unsigned char *buf = malloc(n);
  if (!buf) return cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", label(ctx, end));
  unsigned char *o = buf;
  memcpy(o, h, sizeof *h);
  o += sizeof *h;
  if (h->desc_len) memcpy(o, desc, (size_t)h->desc_len);
  o += h->desc_len;
  if (h->attr_len) memcpy(o, attrs, (size_t)h->attr_len);
  o += h->attr_len;
  if (h->msg_len) memcpy(o, msg, (size_t)h->msg_len);
  int rc = send_wait(ctx, end, buf, (int)n, CPLI_TAG_HEADER, timeout,
                     "sending a step header to the consumer");
  free(buf);
  if (rc == CPL_OK) ctx->data->chan[end].headers_sent++;
  return rc;
}

/* ------------------------------------------------------------- consumer */

int cpli_chan_send_credit(cpl_context *ctx, int end, int64_t kind,
                          double timeout) {
  cpli_chan *ch = &ctx->data->chan[end];
  ch->msg[0] = kind;
  ch->msg[1] = 0;
  if (kind == CPLI_MSG_CREDIT)
    return send_wait(ctx, end, ch->msg, (int)sizeof ch->msg, CPLI_TAG_CREDIT,
                     timeout, "sending a credit to the producer");
  /* DETACH completes at finalize: the producer may be long gone by now,
   * or still computing. */
  ch->detach_sent = 1;
  int rc = MPI_Isend(ch->msg, (int)sizeof ch->msg, MPI_BYTE, 0,
                     CPLI_TAG_CREDIT, ctx->ends[end].ctl, &ch->detach_req);
  return cpli_mpi_check(rc, "MPI_Isend", "link %s: detach", label(ctx, end));
}

int cpli_chan_recv_header(cpl_context *ctx, int end, double timeout,
                          unsigned char **buf, size_t *len) {
  *buf = NULL;
  *len = 0;
  double t0 = MPI_Wtime();
  long spins = 0;
  MPI_Message m;
  MPI_Status st;
  for (;;) {
    int flag = 0;
    int rc = MPI_Improbe(0, CPLI_TAG_HEADER, ctx->ends[end].ctl, &flag, &m, &st);
    CPLI_TRY(cpli_mpi_check(rc, "MPI_Improbe", "link %s", label(ctx, end)));
    if (flag) break;
    if (MPI_Wtime() - t0 > timeout) return CPL_ERR_TIMEOUT; /* caller says */
    backoff(&spins);
  }
  int n = 0;
  MPI_Get_count(&st, MPI_BYTE, &n);
  unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
  if (!b) {
    MPI_Mrecv(NULL, 0, MPI_BYTE, &m, MPI_STATUS_IGNORE); /* truncates */
    return cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", label(ctx, end));
  }
  int rc = MPI_Mrecv(b, n, MPI_BYTE, &m, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    free(b);
    return cpli_mpi_check(rc, "MPI_Mrecv", "link %s", label(ctx, end));
  }
  ctx->data->chan[end].headers_recv++;
  *buf = b;
  *len = (size_t)n;
  return CPL_OK;
}

/* ---------------------------------------------------------------- state */

int cpli_data_get(cpl_context *ctx, cpli_data_state **out) {
  if (!ctx->data) {
    cpli_data_state *s = calloc(1, sizeof *s);
    cpli_chan *ch = calloc((size_t)(ctx->nends ? ctx->nends : 1), sizeof *ch);
    if (!s || !ch) {
      free(s);
      free(ch);
      return cpli_fail(CPL_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < ctx->nends; i++) ch[i].detach_req = MPI_REQUEST_NULL;
    s->chan = ch;
    ctx->data = s;
  }
  *out = ctx->data;
  return CPL_OK;
}

static int push(void ***v, int *n, int *cap, void *x) {
  if (*n == *cap) {
    int c = *cap ? 2 * *cap : 4;
    void **nv = realloc(*v, (size_t)c * sizeof *nv);
    if (!nv) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
    *v = nv;
    *cap = c;
  }
  (*v)[(*n)++] = x;
  return CPL_OK;
}

static void pull(void **v, int *n, void *x) {
  for (int i = 0; i < *n; i++)
    if (v[i] == x) {
      memmove(v + i, v + i + 1, (size_t)(*n - i - 1) * sizeof *v);
      (*n)--;
      return;
    }
}

int cpli_data_track(cpl_context *ctx, cpl_output *o, cpl_input *in) {
  cpli_data_state *s = ctx->data;
  return o ? push((void ***)&s->outs, &s->nouts, &s->capouts, o)
           : push((void ***)&s->ins, &s->nins, &s->capins, in);
}

void cpli_data_untrack(cpl_context *ctx, cpl_output *o, cpl_input *in) {
  cpli_data_state *s = ctx->data;
  if (o) pull((void **)s->outs, &s->nouts, o);
  else pull((void **)s->ins, &s->nins, in);
}

/* ------------------------------------------------------------- finalize */

static double link_timeout(cpl_context *ctx, int end) {
  return ctx->wf->links[ctx->ends[end].link].timeout;
}

/* Components reach cpl_finalize at their own pace (one may compute long
 * after its last step): the drain waits CPL_FINALIZE_TIMEOUT seconds,
 * default 60 like every other wait, and never less than the link's. */
static double finalize_timeout(cpl_context *ctx, int end) {
  double t = 60; /* README.md, "Timeouts" */
  const char *s = getenv("CPL_FINALIZE_TIMEOUT");
  if (s && *s) {
    char *e;
    double v = strtod(s, &e);
    if (!*e && v > 0) t = v;
  }
  return t > link_timeout(ctx, end) ? t : link_timeout(ctx, end);
}

/* Producer root: everything up to DETACH, then the BYE count. */
static int settle_producer(cpl_context *ctx, int end) {
  cpli_chan *ch = &ctx->data->chan[end];
  double t = finalize_timeout(ctx, end);
  while (!ch->detached) {
    ch->credits = 0;
    int rc = cpli_chan_wait_credit(ctx, end, t);
    if (rc == CPL_ERR_TIMEOUT)
      return cpli_fail(rc, "cpl_finalize: link %s: the consumer did not "
                       "close its input within %g s (did it reach "
                       "cpl_finalize? CPL_FINALIZE_TIMEOUT)", label(ctx, end), t);
    CPLI_TRY(rc);
  }
  int64_t n = ch->headers_sent;
  return send_wait(ctx, end, &n, (int)sizeof n, CPLI_TAG_BYE, t,
                   "cpl_finalize: sending the header count");
}

/* Consumer root: the BYE count, then every header not yet received. */
static int settle_consumer(cpl_context *ctx, int end) {
  cpli_chan *ch = &ctx->data->chan[end];
  double t = finalize_timeout(ctx, end);
  int done = 1;
  if (ch->detach_req != MPI_REQUEST_NULL)
    CPLI_TRY(cpli_poll_request(&ch->detach_req, t, &done));
  int64_t n = 0;
  MPI_Request req;
  int rc = MPI_Irecv(&n, (int)sizeof n, MPI_BYTE, 0, CPLI_TAG_BYE,
                     ctx->ends[end].ctl, &req);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Irecv", "cpl_finalize: link %s", label(ctx, end)));
  if (done) CPLI_TRY(cpli_poll_request(&req, t, &done));
  if (!done) {
    MPI_Cancel(&req);
    MPI_Request_free(&req);
    return cpli_fail(CPL_ERR_TIMEOUT, "cpl_finalize: link %s: the producer "
                     "did not reach cpl_finalize within %g s (CPL_FINALIZE_TIMEOUT)",
                     label(ctx, end), t);
  }
  while (ch->headers_recv < n) {
    unsigned char *buf;
    size_t len;
    rc = cpli_chan_recv_header(ctx, end, t, &buf, &len);
    if (rc == CPL_ERR_TIMEOUT)
      return cpli_fail(rc, "cpl_finalize: link %s: a step header announced "
                       "by the producer never arrived", label(ctx, end));
    CPLI_TRY(rc);
    free(buf);
  }
  return CPL_OK;
}

/* The first failure is the one reported; later ones overwrite the
 * last-error text, so its message is kept aside. */
static void keep_first(int rc, int *first, char *msg, size_t n) {
  if (rc == CPL_OK || *first != CPL_OK) return;
  *first = rc;
  snprintf(msg, n, "%s", cpl_last_error());
}

int cpli_data_finalize(cpl_context *ctx) {
  cpli_data_state *s;
  int first = cpli_data_get(ctx, &s);
  if (first != CPL_OK) return first;
  char msg[2048] = "";
  /* Inputs first: a component that stops consuming must say so before it
   * waits on its own consumers, or a chain of them could wait in a circle. */
  while (s->nins > 0) {
    int rc = cpl_input_close(s->ins[s->nins - 1]);
    keep_first(rc, &first, msg, sizeof msg);
  }
  while (s->nouts > 0) {
    int rc = cpl_output_close(s->outs[s->nouts - 1]);
    keep_first(rc, &first, msg, sizeof msg);
  }
  int root = 0;
  MPI_Comm_rank(ctx->comm, &root);
  root = root == 0;
  /* Two passes, so no root waits before it has sent what others wait for:
   * first every EOS and DETACH goes out, then each side drains. */
  for (int e = 0; root && e < ctx->nends; e++) {
    cpli_chan *ch = &s->chan[e];
    int rc = CPL_OK;
    if (ctx->ends[e].role == CPL_SENDER && !ch->eos_sent) {
      cpli_hdr h = {.kind = CPLI_HDR_EOS, .step = -1};
      ch->eos_sent = 1;
      rc = cpli_chan_send_header(ctx, e, &h, NULL, NULL, NULL, link_timeout(ctx, e));
    } else if (ctx->ends[e].role == CPL_RECEIVER && !ch->detach_sent) {
      rc = cpli_chan_send_credit(ctx, e, CPLI_MSG_DETACH, link_timeout(ctx, e));
    }
    keep_first(rc, &first, msg, sizeof msg);
  }
  for (int e = 0; root && e < ctx->nends; e++) {
    int rc = ctx->ends[e].role == CPL_SENDER ? settle_producer(ctx, e)
                                             : settle_consumer(ctx, e);
    keep_first(rc, &first, msg, sizeof msg);
  }
  for (int e = 0; e < ctx->nends; e++)
    if (s->chan[e].detach_req != MPI_REQUEST_NULL) {
      MPI_Cancel(&s->chan[e].detach_req);
      MPI_Request_free(&s->chan[e].detach_req);
    }
  free(s->chan);
  free(s->outs);
  free(s->ins);
  free(s);
  ctx->data = NULL;
  if (first != CPL_OK) cpli_fail(first, "%s", msg);
  return first;
}
