/*
 * The control channel between the roots of a link, the data layer's
 * per-context state, the drain at cpl_finalize and cpl_finalize itself
 * (protocol in data.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/launch.h"
#include "core/trace.h"
#include "core/wait.h"
#include "data/data.h"

/* Roots wait with naps (core/wait.h): the rank they wait for may share
 * their core. */
int cpli_poll_request(MPI_Request *req, double timeout, const char *what, int *done) {
  cpli_wait w;
  cpli_wait_start(&w, timeout, CPLI_WAIT_NAP_US);
  cpli_wait_describe(&w, cpli_wait_say_text, what);
  *done = 0;
  for (;;) {
    int rc = MPI_Test(req, done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return cpli_mpi_check(rc, "MPI_Test", "control channel");
    if (*done) return CPL_OK;
    if (cpli_wait_idle(&w)) return w.interrupted ? CPL_ERR_INTERRUPTED : CPL_OK;
  }
}

static const char *label(cpl_context *ctx, int end) {
  return ctx->wf->links[ctx->ends[end].link].label;
}

/* Send a small message and see it complete (eager: at once). */
static int send_wait(cpl_context *ctx, int end, const void *buf, int n, int tag, double timeout,
                     const char *what) {
  MPI_Request req;
  int done;
  int rc = MPI_Isend(buf, n, MPI_BYTE, 0, tag, ctx->ends[end].ctl, &req);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Isend", "link %s: %s", label(ctx, end), what));
  char said[256];
  snprintf(said, sizeof said, "link %s: %s", label(ctx, end), what);
  rc = cpli_poll_request(&req, timeout, said, &done);
  if (rc != CPL_OK && rc != CPL_ERR_INTERRUPTED) return rc; /* MPI_Test failed */
  if (rc == CPL_OK && done) return CPL_OK;
  MPI_Cancel(&req);
  MPI_Request_free(&req);
  if (rc != CPL_OK) return rc;
  return cpli_fail(CPL_ERR_TIMEOUT,
                   "link %s: %s did not complete within "
                   "%g s",
                   label(ctx, end), what, timeout);
}

/* ------------------------------------------------------------- producer */

static int take_credit_msg(cpl_context *ctx, int end, cpli_chan *ch, MPI_Message *m,
                           MPI_Status *st) {
  int n = 0;
  MPI_Get_count(st, MPI_BYTE, &n);
  unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
  if (!b) {
    MPI_Mrecv(NULL, 0, MPI_BYTE, m, MPI_STATUS_IGNORE); /* truncates */
    return cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", label(ctx, end));
  }
  int rc = MPI_Mrecv(b, n, MPI_BYTE, m, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) free(b);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Mrecv", "link %s: credit", label(ctx, end)));
  cpli_credit c;
  if ((size_t)n < sizeof c) {
    free(b);
    return cpli_fail(CPL_ERR_INTERNAL,
                     "link %s: short credit message (%d "
                     "bytes)",
                     label(ctx, end), n);
  }
  memcpy(&c, b, sizeof c);
  if (c.sel_len < 0 || (size_t)c.sel_len != (size_t)n - sizeof c) {
    free(b);
    return cpli_fail(CPL_ERR_INTERNAL, "link %s: corrupt credit message", label(ctx, end));
  }
  if (c.kind == CPLI_MSG_DETACH) {
    ch->detached = 1;
  } else if (!ch->detached) {
    ch->credits++;
    ch->want = (long)c.want;
    if (c.sel_len > 0) { /* keep the selections, for the group to share */
      free(ch->sel);
      ch->sel = malloc((size_t)c.sel_len);
      if (!ch->sel) {
        free(b);
        ch->sel_len = 0;
        return cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", label(ctx, end));
      }
      memcpy(ch->sel, b + sizeof c, (size_t)c.sel_len);
      ch->sel_len = (size_t)c.sel_len;
      ch->sel_version++;
    }
  }
  free(b);
  return CPL_OK;
}

int cpli_chan_poll(cpl_context *ctx, int end) {
  cpli_chan *ch = &ctx->data->chan[end];
  /* MPICH's Improbe matches what it has already taken in, then polls the
   * network: a credit that arrived while the producer computed is seen by
   * the second look only. One look left it queued until the next end_step,
   * so every step reached a waiting consumer one producer step late. */
  for (int looks = 0; looks < 2;) {
    int flag = 0;
    MPI_Message m;
    MPI_Status st;
    int rc = MPI_Improbe(0, CPLI_TAG_CREDIT, ctx->ends[end].ctl, &flag, &m, &st);
    CPLI_TRY(cpli_mpi_check(rc, "MPI_Improbe", "link %s", label(ctx, end)));
    if (!flag) {
      looks++;
      continue;
    }
    CPLI_TRY(take_credit_msg(ctx, end, ch, &m, &st));
  }
  return CPL_OK;
}

static double link_timeout(cpl_context *ctx, int end) {
  return ctx->wf->links[ctx->ends[end].link].timeout;
}

/* Watchdog descriptions of the roots' waits. */
typedef struct watched {
  cpl_context *ctx;
  int end;
  const char *phase;
  long after; /* the consumer's last step, or CPLI_NO_STEP */
  long want;  /* a step number asked for, else below 0 */
} watched;

static void say_end(const void *arg, char *buf, unsigned long n) {
  const watched *x = arg;
  const cpli_end *e = &x->ctx->ends[x->end];
  char step[48] = "";
  if (x->want >= 0) snprintf(step, sizeof step, ", step %ld", x->want);
  else if (x->after != CPLI_NO_STEP) snprintf(step, sizeof step, ", step after %ld", x->after);
  snprintf(buf, n, "link %s, %s rank 0%s: %s (peer: %s rank 0)", label(x->ctx, x->end),
           e->role == CPL_SENDER ? "producer" : "consumer", step, x->phase,
           x->ctx->wf->comps[e->peer_comp].name);
}

int cpli_chan_wait_credit(cpl_context *ctx, int end, double timeout, int (*other)(void *),
                          void *arg) {
  cpli_chan *ch = &ctx->data->chan[end];
  cpli_wait w;
  cpli_wait_start(&w, timeout, CPLI_WAIT_NAP_US);
  watched x = {ctx, end, "waiting for the consumer to ask for a step (credit)", CPLI_NO_STEP,
               CPL_STEP_NEXT};
  cpli_wait_watch(&w, say_end, &x);
  for (;;) {
    CPLI_TRY(cpli_chan_poll(ctx, end));
    if (ch->credits > 0 || ch->detached || (other && other(arg))) return CPL_OK;
    if (cpli_wait_idle(&w)) return cpli_wait_failed(&w); /* a timeout: caller says */
  }
}

/* Send a fixed part and up to three payloads as one message (the header
 * or credit formats of data.h), under the same deadline as send_wait. */
static int pack_parts(cpl_context *ctx, int end, const void *fixed, size_t flen,
                      const void *const part[3], const size_t len[3], const char *what,
                      unsigned char **out, size_t *n) {
  *n = flen + len[0] + len[1] + len[2];
  if (*n > 0x7fffffff)
    return cpli_fail(CPL_ERR_UNSUPPORTED, "link %s: %s: a message of %zu bytes is more than 2 GiB",
                     label(ctx, end), what, *n);
  unsigned char *buf = *out = malloc(*n);
  if (!buf) return cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", label(ctx, end));
  memcpy(buf, fixed, flen);
  size_t o = flen;
  for (int i = 0; i < 3; i++) {
    if (len[i]) memcpy(buf + o, part[i], len[i]);
    o += len[i];
  }
  return CPL_OK;
}

static int send_parts(cpl_context *ctx, int end, int tag, const void *fixed, size_t flen,
                      const void *const part[3], const size_t len[3], double timeout,
                      const char *what) {
  unsigned char *buf;
  size_t n;
  CPLI_TRY(pack_parts(ctx, end, fixed, flen, part, len, what, &buf, &n));
  int rc = send_wait(ctx, end, buf, (int)n, tag, timeout, what);
  free(buf);
  return rc;
}

int cpli_chan_send_header(cpl_context *ctx, int end, const cpli_hdr *h, const void *desc,
                          const void *attrs, const void *msg, double timeout) {
  const void *part[3] = {desc, attrs, msg};
  const size_t len[3] = {(size_t)h->desc_len, (size_t)h->attr_len, (size_t)h->msg_len};
  int rc = send_parts(ctx, end, CPLI_TAG_HEADER, h, sizeof *h, part, len, timeout,
                      "sending a step header to the consumer");
  if (rc == CPL_OK) ctx->data->chan[end].headers_sent++;
  return rc;
}

int cpli_chan_post_header(cpl_context *ctx, int end, const cpli_hdr *h, const void *desc,
                          const void *attrs, MPI_Request *req, unsigned char **buf) {
  const void *part[3] = {desc, attrs, NULL};
  const size_t len[3] = {(size_t)h->desc_len, (size_t)h->attr_len, 0};
  size_t n;
  CPLI_TRY(pack_parts(ctx, end, h, sizeof *h, part, len, "a step header", buf, &n));
  int rc = MPI_Isend(*buf, (int)n, MPI_BYTE, 0, CPLI_TAG_HEADER, ctx->ends[end].ctl, req);
  if (rc != MPI_SUCCESS) {
    free(*buf);
    *buf = NULL;
  }
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Isend", "link %s: step header", label(ctx, end)));
  ctx->data->chan[end].headers_sent++;
  return CPL_OK;
}

/* ------------------------------------------------------------- consumer */

int cpli_chan_send_credit(cpl_context *ctx, int end, int64_t kind, long want, const void *sel,
                          size_t sel_len, double timeout) {
  cpli_chan *ch = &ctx->data->chan[end];
  if (kind == CPLI_MSG_CREDIT) {
    cpli_credit c = {.kind = kind, .want = want, .sel_len = (int64_t)sel_len};
    const void *part[3] = {sel, NULL, NULL};
    const size_t len[3] = {sel_len, 0, 0};
    return send_parts(ctx, end, CPLI_TAG_CREDIT, &c, sizeof c, part, len, timeout,
                      "sending a credit to the producer");
  }
  /* DETACH completes at finalize: the producer may be long gone by now,
   * or still computing. */
  ch->msg = (cpli_credit){.kind = kind};
  ch->detach_sent = 1;
  int rc = MPI_Isend(&ch->msg, (int)sizeof ch->msg, MPI_BYTE, 0, CPLI_TAG_CREDIT,
                     ctx->ends[end].ctl, &ch->detach_req);
  return cpli_mpi_check(rc, "MPI_Isend", "link %s: detach", label(ctx, end));
}

int cpli_chan_recv_header(cpl_context *ctx, int end, double timeout, long after, long want,
                          unsigned char **buf, size_t *len) {
  *buf = NULL;
  *len = 0;
  cpli_wait w;
  cpli_wait_start(&w, timeout, CPLI_WAIT_NAP_US);
  watched x = {ctx, end,
               want >= 0                 ? "waiting for the producer to send this step (header)"
               : want == CPL_STEP_LATEST ? "waiting for the producer's newest step (header)"
                                         : "waiting for the producer's next step (header)",
               after, want};
  /* A try (cpl_input_try_step) waits briefly on purpose: not a hang. */
  if (timeout >= link_timeout(ctx, end)) cpli_wait_watch(&w, say_end, &x);
  else cpli_wait_describe(&w, say_end, &x);
  MPI_Message m;
  MPI_Status st;
  for (;;) {
    int flag = 0;
    int rc = MPI_Improbe(0, CPLI_TAG_HEADER, ctx->ends[end].ctl, &flag, &m, &st);
    CPLI_TRY(cpli_mpi_check(rc, "MPI_Improbe", "link %s", label(ctx, end)));
    if (flag) break;
    if (cpli_wait_idle(&w)) return cpli_wait_failed(&w); /* a timeout: caller says */
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

void cpli_link_options(const cpli_link *l, long step, cpl_coll_options *opt) {
  cpl_coll_options_init(opt);
  opt->inter = l->inter;
  opt->intra = l->intra;
  opt->timeout = l->timeout;
  opt->label = l->label;
  opt->step = step;
}

int cpli_data_get(cpl_context *ctx, cpli_data_state **out) {
  if (!ctx->data) {
    /* HDF5 initialises itself at its first call, and H5T_NATIVE_* are
     * calls (H5open()) that a program makes in its own threads, outside
     * cpl_hdf5_lock, when the puts and gets run in several: done here, in
     * a port's open (one thread at a time), before any of them can run. */
    cpl_hdf5_lock();
    H5open();
    cpl_hdf5_unlock();
    cpli_data_state *s = calloc(1, sizeof *s);
    cpli_chan *ch = calloc((size_t)(ctx->nends ? ctx->nends : 1), sizeof *ch);
    cpli_prog *prog = calloc((size_t)(ctx->nends ? ctx->nends : 1), sizeof *prog);
    if (!s || !ch || !prog) {
      free(s);
      free(ch);
      free(prog);
      return cpli_fail(CPL_ERR_NOMEM, "out of memory");
    }
    s->prog = prog;
    s->maxprog = ctx->nends;
    for (int i = 0; i < ctx->nends; i++) ch[i].detach_req = MPI_REQUEST_NULL;
    s->chan = ch;
    s->progress = ctx->progress;
    s->trace = cpli_trace_open(cpli_trace_spec(ctx->wf->trace));
    if (cpli_trace_chrome(s->trace)) { /* names for the viewer's rows */
      char line[400];
      int rank = 0;
      MPI_Comm_rank(ctx->comm, &rank);
      int n = snprintf(line, sizeof line,
                       "{\"name\":\"process_name\",\"ph\":"
                       "\"M\",\"pid\":%d,\"args\":{\"name\":\"%s\"}},",
                       ctx->comp, ctx->wf->comps[ctx->comp].name);
      cpli_trace_line(s->trace, line, (size_t)n);
      n = snprintf(line, sizeof line,
                   "{\"name\":\"thread_name\",\"ph\":\"M\","
                   "\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"rank %d\"}},",
                   ctx->comp, rank, rank);
      cpli_trace_line(s->trace, line, (size_t)n);
    }
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

/* Components reach cpl_finalize at their own pace (one may compute long
 * after its last step): the drain waits CPL_FINALIZE_TIMEOUT seconds
 * (cpl_init read it), default 60 like every other wait, and never less
 * than the link's. */
static double finalize_timeout(cpl_context *ctx, int end) {
  const double t = ctx->finalize_timeout;
  return t > link_timeout(ctx, end) ? t : link_timeout(ctx, end);
}

/* Producer root: everything up to DETACH, then the BYE count. */
static int settle_producer(cpl_context *ctx, int end) {
  cpli_chan *ch = &ctx->data->chan[end];
  double t = finalize_timeout(ctx, end);
  while (!ch->detached) {
    ch->credits = 0;
    int rc = cpli_chan_wait_credit(ctx, end, t, NULL, NULL);
    if (rc == CPL_ERR_TIMEOUT)
      return cpli_fail(rc,
                       "cpl_finalize: link %s: the consumer did not "
                       "close its input within %g s (did it reach "
                       "cpl_finalize? CPL_FINALIZE_TIMEOUT)",
                       label(ctx, end), t);
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
  char said[256];
  snprintf(said, sizeof said,
           "cpl_finalize: link %s: waiting for the producer to reach cpl_finalize",
           label(ctx, end));
  if (ch->detach_req != MPI_REQUEST_NULL)
    CPLI_TRY(cpli_poll_request(&ch->detach_req, t, said, &done));
  int64_t n = 0;
  MPI_Request req;
  int rc = MPI_Irecv(&n, (int)sizeof n, MPI_BYTE, 0, CPLI_TAG_BYE, ctx->ends[end].ctl, &req);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Irecv", "cpl_finalize: link %s", label(ctx, end)));
  if (done) rc = cpli_poll_request(&req, t, said, &done);
  if (rc != CPL_OK && rc != CPL_ERR_INTERRUPTED) return rc; /* MPI_Test failed */
  if (rc != CPL_OK || !done) { /* n is on this stack: withdraw the receive */
    MPI_Cancel(&req);
    MPI_Request_free(&req);
    if (rc != CPL_OK) return rc;
    return cpli_fail(CPL_ERR_TIMEOUT,
                     "cpl_finalize: link %s: the producer "
                     "did not reach cpl_finalize within %g s (CPL_FINALIZE_TIMEOUT)",
                     label(ctx, end), t);
  }
  while (ch->headers_recv < n) {
    unsigned char *buf;
    size_t len;
    rc = cpli_chan_recv_header(ctx, end, t, CPLI_NO_STEP, CPL_STEP_NEXT, &buf, &len);
    if (rc == CPL_ERR_TIMEOUT)
      return cpli_fail(rc,
                       "cpl_finalize: link %s: a step header announced "
                       "by the producer never arrived",
                       label(ctx, end));
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
      rc = cpli_chan_send_credit(ctx, e, CPLI_MSG_DETACH, 0, NULL, 0, link_timeout(ctx, e));
    }
    keep_first(rc, &first, msg, sizeof msg);
  }
  for (int e = 0; root && e < ctx->nends; e++) {
    int rc = ctx->ends[e].role == CPL_SENDER ? settle_producer(ctx, e) : settle_consumer(ctx, e);
    keep_first(rc, &first, msg, sizeof msg);
  }
  for (int e = 0; e < ctx->nends; e++)
    if (s->chan[e].detach_req != MPI_REQUEST_NULL) {
      MPI_Cancel(&s->chan[e].detach_req);
      MPI_Request_free(&s->chan[e].detach_req);
    }
  for (int e = 0; e < ctx->nends; e++) free(s->chan[e].sel);
  cpli_trace_close(s->trace);
  free(s->chan);
  free(s->prog);
  free(s->outs);
  free(s->ins);
  free(s);
  ctx->data = NULL;
  if (first != CPL_OK) cpli_fail(first, "%s", msg);
  return first;
}

/* The end of a context belongs to the layer on top: ports left open are
 * closed and every link's control channel drained (even for ports this
 * component never opened: its peers wait for EOS or DETACH) before the
 * group layer frees the communicators. */
int cpl_finalize(cpl_context *ctx) {
  cpli_launch_finalize(); /* cpl-exec: this process reached cpl_finalize */
  if (!ctx) return CPL_OK;
  int rc = cpli_data_finalize(ctx);
  cpli_context_free(ctx);
  return rc;
}
