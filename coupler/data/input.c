/*
 * Consumer side of a port. begin_step asks the producer for a step (a
 * credit, with the group's selections when they changed), takes its
 * header on the root, shares it with the group, then receives the step:
 * by the link's allgatherv (every rank then holds every dataset whole, as
 * the producers' blocks concatenated in rank order) or, when the producer
 * chose redistribution, only the pieces this rank selected. inquire and
 * get are local: get assembles the caller's box from the blocks or pieces
 * that intersect it, converting the type if asked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/select.h"
#include "core/error.h"
#include "core/trace.h"
#include "data/data.h"
#include "data/redist.h"
#include "data/report.h"
#include "data/slab.h"

struct cpl_input {
  cpl_context *ctx;
  int end;
  const cpli_link *l;
  MPI_Comm comm;
  int rank, size;
  int in_step, eos;
  int failed; /* status that ended the stream              */
  char fail_msg[1024];
  long step, last; /* current step; last one taken (-1: none)   */
  int credit_out;  /* a credit is unanswered (after a timeout)  */
  long want_out;   /* what it asked for                         */
  cpli_desc *desc;
  int mode;           /* CPLI_MODE_* of the current step           */
  char **buf;         /* per dataset: blocks or pieces, one after  */
  size_t *cap;        /*   another                                 */
  cpli_boxes *pieces; /* per dataset: this rank's pieces           */
  int nbuf;
  size_t *counts; /* nblocks byte counts, then displacements */
  char *batch;    /* the step's batch as it arrives (desc.h)  */
  size_t batch_cap;
  cpli_attrs attrs;
  int *attr_at;      /* per dataset, then the step: its attributes are */
  int *attr_of;      /* attrs.v[attr_of[attr_at[k] .. attr_at[k + 1] - 1]] */
  cpli_sel sel;      /* as the user set it                        */
  cpli_sel sel_used; /* as last sent: what the producer serves    */
  int sel_dirty;
  cpl_input_stats st;
  cpli_event ev; /* the current step, for the trace           */
  /* ev.alg: what the step's allgathers ran */
  char algs[CPLI_ALGS_LEN];
};

int cpl_input_open(cpl_context *ctx, const char *port, const char *peer, cpl_input **out) {
  CPLI_TRY(cpli_check_null("cpl_input_open", 3, "ctx", (const void *)ctx, "port",
                           (const void *)port, "out", (const void *)out));
  *out = NULL;
  const cpli_component *me = &ctx->wf->comps[ctx->comp];
  int pi = cpli_wf_port_index(me, port);
  if (pi < 0 || me->ports[pi].output)
    return cpli_fail(CPL_ERR_ARG, "cpl_input_open: component \"%s\" has no input port \"%s\"%s",
                     me->name, port, pi >= 0 ? " (it is an output)" : "");
  cpl_link_end le;
  CPLI_TRY(cpli_port_link(ctx, port, peer, &le, "cpl_input_open"));
  cpli_data_state *s;
  CPLI_TRY(cpli_data_get(ctx, &s));
  int end = 0;
  while (ctx->ends[end].link != le.link) end++;
  if (s->chan[end].input_open || s->chan[end].detach_sent)
    return cpli_fail(CPL_ERR_STATE, "cpl_input_open: link %s is already %s",
                     ctx->wf->links[le.link].label, s->chan[end].input_open ? "open" : "closed");
  cpl_input *in = calloc(1, sizeof *in);
  if (!in || cpli_data_track(ctx, NULL, in) != CPL_OK) {
    free(in);
    return cpli_fail(CPL_ERR_NOMEM, "cpl_input_open: out of memory");
  }
  in->ctx = ctx;
  in->end = end;
  in->l = &ctx->wf->links[le.link];
  in->comm = ctx->comm;
  MPI_Comm_rank(in->comm, &in->rank);
  MPI_Comm_size(in->comm, &in->size);
  in->step = in->last = -1;
  in->want_out = CPL_STEP_NEXT;
  s->chan[end].input_open = 1;
  *out = in;
  return CPL_OK;
}

int cpl_input_link(const cpl_input *in, cpl_link_end *out) {
  CPLI_TRY(cpli_check_null("cpl_input_link", 2, "in", (const void *)in, "out", (const void *)out));
  return cpl_context_link(in->ctx, in->end, out);
}

/* ------------------------------------------------------------ begin */

static int usable(const cpl_input *in, const char *call) {
  if (!in) return cpli_fail(CPL_ERR_ARG, "%s: input is NULL", call);
  if (in->failed)
    return cpli_fail(in->failed, "%s: link %s failed: %s", call, in->l->label, in->fail_msg);
  return CPL_OK;
}

/* What a request asks for, in words. */
static const char *want_str(long want, char *buf, size_t n) {
  if (want >= 0) snprintf(buf, n, "step %ld", want);
  else snprintf(buf, n, "%s", want == CPL_STEP_LATEST ? "the newest step" : "the next step");
  return buf;
}

/*
 * Before a new credit: if any rank changed its selection, every rank's
 * goes to the root (*blob: per rank a u64 length and its encoding), and
 * each rank's selection in force becomes the one it set. The ranks must
 * ask for the same step (`want`): only the root's request is sent, and a
 * rank that asked for another would take the root's step as its own.
 */
static int sync_selections(cpl_input *in, const cpl_coll_options *opt, long want, cpli_wbuf *blob) {
  cpli_wbuf mine = {0}, used = {0};
  cpli_sel_encode(&in->sel, &mine);
  /* Declared again as it was (a loop that selects its box before every
   * step): nothing changed, so the producer keeps its plan and the
   * group sends no selections. */
  if (in->sel_dirty) cpli_sel_encode(&in->sel_used, &used);
  if (in->sel_dirty && !mine.oom && !used.oom && mine.len == used.len &&
      (mine.len == 0 || memcmp(mine.p, used.p, mine.len) == 0))
    in->sel_dirty = 0;
  cpli_w_free(&used);
  int64_t *rec = calloc(3 * (size_t)in->size, sizeof *rec);
  int *counts = malloc(2 * (size_t)in->size * sizeof *counts);
  unsigned char *all = NULL;
  int rc = CPL_OK;
  if (!rec || !counts || mine.oom)
    rc = cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", in->l->label);
  if (rc == CPL_OK) {
    rec[3 * in->rank] = in->sel_dirty;
    rec[3 * in->rank + 1] = (int64_t)mine.len;
    rec[3 * in->rank + 2] = want;
    rc =
        cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rec, 3, MPI_INT64_T, in->comm, opt);
    if (rc != CPL_OK) /* the engine's words alone do not say what this wait was */
      cpli_error_prefix("link %s, receiver %d, step after %ld: not every rank of \"%s\" asked for "
                        "a step (its %d ranks call begin_step, begin_step_at, try_step and close "
                        "alike): ",
                        in->l->label, in->rank, in->last, in->ctx->wf->comps[in->l->to_comp].name,
                        in->size);
  }
  for (int r = 1; rc == CPL_OK && r < in->size; r++)
    if (rec[3 * r + 2] != rec[2]) {
      char w0[64], wr[64];
      rc = cpli_fail(CPL_ERR_MISMATCH,
                     "link %s: the consumer ranks asked for different steps: rank 0 for %s, "
                     "rank %d for %s (begin_step, begin_step_at and try_step are collective, "
                     "with the same request on every rank); nothing was asked",
                     in->l->label, want_str((long)rec[2], w0, sizeof w0), r,
                     want_str((long)rec[3 * r + 2], wr, sizeof wr));
    }
  int any = 0;
  size_t total = 0;
  for (int r = 0; rc == CPL_OK && r < in->size; r++) {
    any |= rec[3 * r] != 0;
    total += (size_t)rec[3 * r + 1];
  }
  if (rc == CPL_OK && any && total > 0x7fffffff)
    rc = cpli_fail(CPL_ERR_UNSUPPORTED,
                   "link %s: the selections of the "
                   "consumer ranks take %zu bytes, more than 2 GiB",
                   in->l->label, total);
  if (rc == CPL_OK && any && !(all = malloc(total ? total : 1)))
    rc = cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", in->l->label);
  if (rc == CPL_OK && any) {
    int off = 0;
    for (int r = 0; r < in->size; r++) {
      counts[r] = (int)rec[3 * r + 1];
      counts[in->size + r] = off;
      off += counts[r];
    }
    rc = cpl_intra_allgatherv(mine.p, (int)mine.len, MPI_BYTE, all, counts, counts + in->size,
                              MPI_BYTE, in->comm, opt);
  }
  if (rc == CPL_OK && any && in->rank == 0)
    for (int r = 0; r < in->size; r++) {
      cpli_w_u64(blob, (uint64_t)counts[r]);
      cpli_w_bytes(blob, all + counts[in->size + r], (size_t)counts[r]);
    }
  if (rc == CPL_OK && blob->oom)
    rc = cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", in->l->label);
  if (rc == CPL_OK && any) rc = cpli_sel_copy(&in->sel, &in->sel_used);
  if (rc == CPL_OK && any) in->st.selections++;
  if (rc == CPL_OK) in->sel_dirty = 0;
  cpli_w_free(&mine);
  free(rec);
  free(counts);
  free(all);
  return rc;
}

/* The step a request waits for, as messages name it: "step 7" when it
 * asked for that number, else "step after 6" (the last one taken). */
static const char *waited_str(const cpl_input *in, long want, char *buf, size_t n) {
  if (want >= 0) snprintf(buf, n, "step %ld", want);
  else snprintf(buf, n, "step after %ld", in->last);
  return buf;
}

int cpli_input_no_step(const cpl_input *in, double seconds, long want) {
  const cpli_workflow *wf = in->ctx->wf;
  char waited[64], asked[64];
  /* A try_step's own shorter wait is no failure: the link's timeout is
   * not what to raise. */
  const int tried = seconds < in->l->timeout;
  return cpli_fail(CPL_ERR_TIMEOUT,
                   "link %s, receiver 0, %s: no step from the producer within %g s: "
                   "consumer \"%s\" asked producer \"%s\" for %s and has had no answer; from "
                   "here it cannot tell whether the producer is computing or waiting on another "
                   "of its links (the producer's own messages say); %s",
                   in->l->label, waited_str(in, want, waited, sizeof waited), seconds,
                   wf->comps[in->l->to_comp].name, wf->comps[in->l->from_comp].name,
                   want == CPL_STEP_LATEST ? "its newest step"
                                           : want_str(want, asked, sizeof asked),
                   tried ? "the wait try_step was given, not a failure: the request stays out, "
                           "and a later try_step or begin_step takes the step"
                         : "raise the link's timeout if it computes longer between steps");
}

/* Root: credit, then the header; every rank: the header, broadcast. */
static int take_header(cpl_input *in, double wait, long want, cpli_hdr *h,
                       unsigned char **payload) {
  *payload = NULL;
  unsigned char *msg = NULL;
  size_t len = 0;
  int rc = CPL_OK;
  memset(h, 0, sizeof *h);
  cpl_coll_options opt;
  cpli_link_options(in->l, in->last, &opt);
  cpli_wbuf sel = {0};
  /* After a timeout the credit is still out: asking twice would make the
   * producer send a step nobody waits for. */
  if (!in->credit_out) rc = sync_selections(in, &opt, want, &sel);
  if (rc != CPL_OK) {
    cpli_w_free(&sel);
    return rc; /* collective: every rank failed the same allgather */
  }
  if (in->rank == 0) {
    cpli_chan *ch = &in->ctx->data->chan[in->end];
    if (!ch->credit_out)
      rc = cpli_chan_send_credit(in->ctx, in->end, CPLI_MSG_CREDIT, want, sel.p, sel.len,
                                 in->l->timeout);
    if (rc == CPL_OK) {
      ch->credit_out = 1;
      rc = cpli_chan_recv_header(in->ctx, in->end, wait, in->last, want, &msg, &len);
    }
    if (rc == CPL_ERR_TIMEOUT) cpli_input_no_step(in, wait, want);
    if (rc == CPL_OK && len < sizeof *h)
      rc = cpli_fail(CPL_ERR_INTERNAL, "link %s: short step header", in->l->label);
    if (rc == CPL_OK) memcpy(h, msg, sizeof *h);
    if (rc == CPL_OK) ch->credit_out = 0; /* every header answers or ends */
    h->root_rc = rc;
    h->credit_out = ch->credit_out;
  }
  cpli_w_free(&sel);
  /* The other ranks wait as long as rank 0 waits for the producer: with
   * naps, not spinning on a core the producer may need. */
  cpli_ctx bctx = {
      .timeout = cpli_peer_timeout(in->l->timeout), .label = in->l->label, .step = in->last};
  int brc = cpli_intra_bcast_napping(h, (int)sizeof *h, MPI_BYTE, in->comm, &bctx);
  if (brc != CPL_OK) {
    free(msg);
    return brc;
  }
  in->credit_out = (int)h->credit_out;
  in->want_out = want;
  if (h->root_rc != CPL_OK) {
    free(msg);
    char waited[64];
    if (in->rank != 0)
      cpli_fail((int)h->root_rc,
                "link %s, receiver %d: rank 0 of this "
                "component %s the %s (its message "
                "says why)",
                in->l->label, in->rank,
                h->root_rc == CPL_ERR_INTERRUPTED ? "was interrupted by a signal waiting for"
                                                  : "failed to take",
                waited_str(in, want, waited, sizeof waited));
    return (int)h->root_rc;
  }
  const int64_t lens[3] = {h->desc_len, h->attr_len, h->msg_len};
  int64_t plen = cpli_r_lengths_sum(lens, 3, 0x7fffffff);
  if (plen < 0 || (in->rank == 0 && (size_t)plen != len - sizeof *h)) {
    free(msg);
    return cpli_fail(CPL_ERR_INTERNAL, "link %s: corrupt step header", in->l->label);
  }
  if (plen == 0) {
    free(msg);
    return CPL_OK;
  }
  unsigned char *p = malloc((size_t)plen);
  if (!p) {
    free(msg);
    return cpli_fail(CPL_ERR_NOMEM, "link %s: out of memory", in->l->label);
  }
  if (in->rank == 0) memcpy(p, msg + sizeof *h, (size_t)plen);
  free(msg);
  brc = cpl_intra_bcast(p, (int)plen, MPI_BYTE, 0, in->comm, &opt);
  if (brc != CPL_OK) {
    free(p);
    return brc;
  }
  *payload = p;
  return CPL_OK;
}

/* A new description: check it, make room for per-dataset state. */
static int set_desc(cpl_input *in, const unsigned char *data, size_t len, const char *where) {
  cpli_desc *d;
  CPLI_TRY(cpli_desc_decode(data, len, where, &d));
  int rc = cpli_desc_finish(d, where);
  int p = in->ctx->ends[in->end].remote_size; /* counts[] has 2 x nblocks */
  if (rc == CPL_OK && d->nblocks != p)
    rc = cpli_fail(CPL_ERR_INTERNAL,
                   "%s: corrupt description: %d blocks "
                   "for %d producer ranks",
                   where, d->nblocks, p);
  const cpli_component *c = &in->ctx->wf->comps[in->l->to_comp];
  if (rc == CPL_OK) rc = cpli_desc_check_port(d, c, &c->ports[in->l->to_port], 0, where);
  if (rc == CPL_OK && d->nd > in->nbuf) {
    char **b = realloc(in->buf, (size_t)d->nd * sizeof *b);
    if (b) in->buf = b;
    size_t *cap = b ? realloc(in->cap, (size_t)d->nd * sizeof *cap) : NULL;
    if (cap) in->cap = cap;
    cpli_boxes *pc = cap ? realloc(in->pieces, (size_t)d->nd * sizeof *pc) : NULL;
    if (pc) in->pieces = pc;
    if (!b || !cap || !pc) rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
    for (int k = in->nbuf; rc == CPL_OK && k < d->nd; k++) {
      in->buf[k] = NULL;
      in->cap[k] = 0;
      in->pieces[k] = (cpli_boxes){0};
    }
    if (rc == CPL_OK) in->nbuf = d->nd;
  }
  size_t *counts =
      rc == CPL_OK ? realloc(in->counts, 2 * (size_t)d->nblocks * sizeof *counts) : NULL;
  if (rc == CPL_OK && !counts) rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
  if (counts) in->counts = counts;
  if (rc != CPL_OK) {
    cpli_desc_unref(d);
    return rc;
  }
  cpli_desc_unref(in->desc);
  in->desc = d;
  return CPL_OK;
}

/* This rank's pieces of every dataset, and buffers sized for the step:
 * whole arrays for the allgather, the pieces for a redistribution. A
 * buffer much larger than needed is given back. */
static int size_buffers(cpl_input *in, const char *where) {
  const cpli_desc *d = in->desc;
  size_t held = 0;
  for (int k = 0; k < d->nd; k++) {
    const cpli_dset *s = &d->d[k];
    if (cpli_sel_pieces(&in->sel_used, s->name, s->rank, s->dims, &in->pieces[k]) < 0)
      return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
    size_t need =
        in->mode == CPLI_MODE_SELECT ? cpli_pieces_bytes(&in->pieces[k], s->esize) : s->total;
    if (need > in->cap[k] || need < in->cap[k] / 2) {
      free(in->buf[k]);
      in->buf[k] = need ? malloc(need) : NULL;
      in->cap[k] = in->buf[k] ? need : 0;
      if (need && !in->buf[k])
        return cpli_fail(CPL_ERR_NOMEM,
                         "%s: out of memory for dataset "
                         "\"%s\" (%zu bytes)",
                         where, s->name, need);
    }
    held += in->cap[k];
  }
  /* The batch arrives whole (allgather, scatter) before it is unpacked. */
  size_t need = in->mode == CPLI_MODE_SELECT ? 0 : d->batch_total;
  if (need > in->batch_cap || need < in->batch_cap / 2) {
    free(in->batch);
    in->batch = need ? malloc(need) : NULL;
    in->batch_cap = in->batch ? need : 0;
    char what[300];
    if (need && !in->batch)
      return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory for %zu bytes of %s", where, need,
                       cpli_batch_str(d, what, sizeof what));
  }
  held += in->batch_cap;
  in->st.bytes_held = held;
  if (held > in->st.bytes_max) in->st.bytes_max = held;
  return CPL_OK;
}

/* The step's small datasets (desc.h, "the batch"), in one allgather,
 * then copied into their buffers. */
static int receive_batch(cpl_input *in, const cpl_coll_options *opt, const char *where) {
  const cpli_desc *d = in->desc;
  char what[300];
  cpl_inter_algorithm ran;
  int rc = cpli_inter_allgatherv_bytes(NULL, 0, in->batch, d->batch_bytes, d->batch_offset,
                                       CPL_RECEIVER, in->ctx->ends[in->end].data, opt, &ran);
  if (rc != CPL_OK) { /* as for a dataset of its own (receive) */
    if (strstr(cpl_last_error(), in->l->label))
      cpli_error_prefix("%s: ", cpli_batch_str(d, what, sizeof what));
    else cpli_error_prefix("%s: %s: ", where, cpli_batch_str(d, what, sizeof what));
    return rc;
  }
  cpli_inter_algs_add(in->algs, ran);
  cpli_batch_unpack(d, in->batch, in->buf);
  in->st.bytes += d->batch_total;
  return CPL_OK;
}

/* The step's data: the allgathers, or this rank's pieces. */
static int receive(cpl_input *in, long step, const char *where) {
  cpl_coll_options opt;
  cpli_link_options(in->l, step, &opt);
  const cpli_desc *d = in->desc;
  in->algs[0] = '\0';
  if (in->mode == CPLI_MODE_SELECT) {
    size_t got = 0;
    int rc = cpli_redist_recv(d, in->pieces, in->buf, in->ctx->ends[in->end].ctl, CPLI_TAG_DATA,
                              in->l->timeout, where, &got);
    in->st.bytes += got;
    in->st.selective++;
    return rc;
  }
  if (in->mode == CPLI_MODE_SCATTER) { /* a step the producer left in flight */
    size_t got = 0;
    int rc = cpli_scatter_recv(d, &opt, in->comm, in->buf, in->batch, in->ctx->ends[in->end].ctl,
                               CPLI_TAG_DATA, where, &got);
    in->st.bytes += got;
    return rc;
  }
  size_t *counts = in->counts, *displs = in->counts + d->nblocks;
  MPI_Comm inter = in->ctx->ends[in->end].data;
  if (d->nbatched) CPLI_TRY(receive_batch(in, &opt, where));
  for (int k = 0; k < d->nd; k++) {
    const cpli_dset *s = &d->d[k];
    if (s->total == 0 || s->batched) continue;
    for (int b = 0; b < d->nblocks; b++) {
      counts[b] = s->bytes[b];
      displs[b] = s->offset[b];
    }
    cpl_inter_algorithm ran;
    int rc = cpli_inter_allgatherv_bytes(NULL, 0, in->buf[k], counts, displs, CPL_RECEIVER, inter,
                                         &opt, &ran);
    if (rc == CPL_OK) cpli_inter_algs_add(in->algs, ran);
    if (rc != CPL_OK) {
      /* The engine names link, rank and step when a transfer fails; its
       * own refusals (the environment, the model) do not. */
      if (strstr(cpl_last_error(), in->l->label)) cpli_error_prefix("dataset \"%s\": ", s->name);
      else cpli_error_prefix("%s: dataset \"%s\": ", where, s->name);
      return rc;
    }
    in->st.bytes += s->total;
  }
  return CPL_OK;
}

static int fail_link(cpl_input *in, int rc) {
  in->failed = rc;
  snprintf(in->fail_msg, sizeof in->fail_msg, "%s", cpl_last_error());
  return rc;
}

/* The group of an attribute: its dataset's index, nd for the step's, -1
 * for a dataset the step does not have. */
static int attr_group(const cpli_desc *d, const cpli_attr *a) {
  return a->dataset[0] ? cpli_desc_find(d, a->dataset) : d->nd;
}

/* The step's attributes grouped by dataset (the step's last), each group
 * in the order they were set: counting them, or taking the i-th, must not
 * look at every attribute of the step. */
static int group_attrs(cpl_input *in, const char *where) {
  const cpli_desc *d = in->desc;
  const cpli_attrs *a = &in->attrs;
  int *at = realloc(in->attr_at, ((size_t)d->nd + 2) * sizeof *at);
  if (at) in->attr_at = at;
  int *of = at ? realloc(in->attr_of, (size_t)(a->n ? a->n : 1) * sizeof *of) : NULL;
  if (of) in->attr_of = of;
  if (!of) return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
  memset(at, 0, ((size_t)d->nd + 2) * sizeof *at);
  /* A counting sort. An attribute of a dataset the step does not have (a
   * corrupt step) is left out: a producer sets only those of its puts. */
  for (int i = 0; i < a->n; i++) { /* at[g + 1]: how many group g has */
    const int g = attr_group(d, &a->v[i]);
    if (g >= 0) at[g + 1]++;
  }
  for (int g = 0; g <= d->nd; g++) at[g + 1] += at[g]; /* at[g]: where group g starts */
  for (int i = 0; i < a->n; i++) {                     /* at[g] moves on to where group g ends */
    const int g = attr_group(d, &a->v[i]);
    if (g >= 0) of[at[g]++] = i;
  }
  memmove(at + 1, at, ((size_t)d->nd + 1) * sizeof *at); /* back to the starts */
  at[0] = 0;
  return CPL_OK;
}

/* begin_step, try_step, begin_step_at: wait up to `wait` seconds for the
 * header of the step `want` asks for. */
static int begin(cpl_input *in, const char *call, double wait, long want, long *step) {
  CPLI_TRY(usable(in, call));
  if (in->in_step)
    return cpli_fail(CPL_ERR_STATE,
                     "%s: link %s: step %ld "
                     "is still open (call cpl_input_end_step)",
                     call, in->l->label, in->step);
  if (in->eos) return CPL_END_OF_STREAM;
  if (in->credit_out && want != in->want_out) {
    char asked[64];
    return cpli_fail(CPL_ERR_STATE,
                     "%s: link %s: the request for %s is still unanswered (it timed out); ask "
                     "for the same until it is",
                     call, in->l->label, want_str(in->want_out, asked, sizeof asked));
  }
  cpli_hdr h;
  unsigned char *p;
  int report = cpli_report_on(in->ctx);
  double t_wait = report ? cpli_trace_now_us() : 0;
  CPLI_TRY(take_header(in, wait, want, &h, &p));
  if (h.kind == CPLI_HDR_EOS) {
    free(p);
    in->eos = 1;
    cpli_report_flush(in->ctx, in->l->label);
    return CPL_END_OF_STREAM;
  }
  if (h.kind == CPLI_HDR_ERROR || h.kind == CPLI_HDR_MISSING) {
    int st = h.status > 0 && h.status < CPL_STATUS_COUNT ? (int)h.status : CPL_ERR_MISMATCH;
    char msg[1024];
    snprintf(msg, sizeof msg, "producer: %.*s", (int)h.msg_len, p ? (char *)p : "");
    free(p);
    if (h.kind == CPLI_HDR_MISSING) /* an answer, not the end of the link */
      return cpli_fail(CPL_ERR_NOT_FOUND, "link %s, receiver %d: %s", in->l->label, in->rank, msg);
    in->failed = st;
    snprintf(in->fail_msg, sizeof in->fail_msg, "%s", msg);
    return cpli_fail(in->failed, "link %s, receiver %d: %s", in->l->label, in->rank, in->fail_msg);
  }
  char where[300];
  snprintf(where, sizeof where, "link %s, receiver %d, step %ld", in->l->label, in->rank,
           (long)h.step);
  int rc = CPL_OK;
  if (h.kind != CPLI_HDR_DATA || (!in->desc && h.desc_len == 0) ||
      (h.mode != CPLI_MODE_ALLGATHER && h.mode != CPLI_MODE_SELECT && h.mode != CPLI_MODE_SCATTER))
    rc = cpli_fail(CPL_ERR_INTERNAL, "%s: unexpected step header", where);
  if (rc == CPL_OK && h.desc_len) rc = set_desc(in, p, (size_t)h.desc_len, where);
  if (rc == CPL_OK) rc = cpli_attrs_decode(p + h.desc_len, (size_t)h.attr_len, where, &in->attrs);
  if (rc == CPL_OK) rc = group_attrs(in, where);
  free(p);
  in->mode = (int)h.mode;
  /* Without a valid description there is no way to join the producers'
   * transfers, so the link is over. */
  double t_start = report ? cpli_trace_now_us() : 0;
  size_t before = in->st.bytes;
  if (rc == CPL_OK) rc = size_buffers(in, where);
  if (rc == CPL_OK) rc = receive(in, (long)h.step, where);
  if (rc != CPL_OK) return fail_link(in, rc);
  if (report) {
    in->ev = (cpli_event){.link = in->l->label,
                          .step = (long)h.step,
                          .bytes = in->st.bytes - before,
                          .t_wait = t_wait,
                          .t_start = t_start,
                          .t_end = cpli_trace_now_us(),
                          .mode = in->mode == CPLI_MODE_SELECT    ? "select"
                                  : in->mode == CPLI_MODE_SCATTER ? "scatter"
                                                                  : "allgather",
                          .alg = *in->algs ? in->algs : NULL};
    for (int k = 0; k < in->desc->nd; k++) in->ev.step_bytes += in->desc->d[k].total;
    cpli_report_step(in->ctx, &in->ev);
  }
  in->st.steps++;
  in->step = in->last = (long)h.step;
  in->in_step = 1;
  if (step) *step = in->step;
  return CPL_OK;
}

int cpl_input_begin_step(cpl_input *in, long *step) {
  return begin(in, "cpl_input_begin_step", in ? in->l->timeout : 0, CPL_STEP_NEXT, step);
}

int cpl_input_begin_step_at(cpl_input *in, long want, long *step) {
  if (in && want < CPL_STEP_LATEST)
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_input_begin_step_at: link %s: %ld is "
                     "neither a step number nor CPL_STEP_NEXT/LATEST",
                     in->l->label, want);
  return begin(in, "cpl_input_begin_step_at", in ? in->l->timeout : 0, want, step);
}

int cpl_input_try_step(cpl_input *in, double seconds, long *step) {
  if (in && !(seconds >= 0 && seconds <= in->l->timeout))
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_input_try_step: link %s: wait %g s is "
                     "not in [0, %g] (the link timeout)",
                     in->l->label, seconds, in->l->timeout);
  return begin(in, "cpl_input_try_step", seconds, CPL_STEP_NEXT, step);
}

int cpl_input_end_step(cpl_input *in) {
  CPLI_TRY(usable(in, "cpl_input_end_step"));
  if (!in->in_step)
    return cpli_fail(CPL_ERR_STATE,
                     "cpl_input_end_step: link %s: no step is "
                     "open",
                     in->l->label);
  in->in_step = 0;
  if (in->ev.link && cpli_report_on(in->ctx)) {
    in->ev.t_done = cpli_trace_now_us();
    cpli_report_step(in->ctx, &in->ev);
    in->ev.link = NULL;
  }
  return CPL_OK;
}

/* ---------------------------------------------------------- selections */

int cpl_input_select(cpl_input *in, const char *dataset, int ndims, int nboxes,
                     const hsize_t start[], const hsize_t count[]) {
  if (!in) return cpli_fail(CPL_ERR_ARG, "cpl_input_select: input is NULL");
  if (dataset && !cpli_name_ok(dataset))
    return cpli_fail(CPL_ERR_ARG, "cpl_input_select: link %s: bad dataset name \"%.255s\" %s",
                     in->l->label, dataset, CPLI_NAME_RULE);
  int rc = cpli_sel_set_boxes(&in->sel, dataset, ndims, nboxes, start, count);
  if (rc != CPL_OK)
    cpli_error_prefix("cpl_input_select: link %s, receiver %d, %s%s%s: ", in->l->label, in->rank,
                      dataset ? "dataset \"" : "default", dataset ? dataset : "",
                      dataset ? "\"" : "");
  else in->sel_dirty = 1;
  return rc;
}

int cpl_input_select_rows(cpl_input *in, const char *dataset, int part, int nparts) {
  if (!in) return cpli_fail(CPL_ERR_ARG, "cpl_input_select_rows: input is NULL");
  if (dataset && !cpli_name_ok(dataset))
    return cpli_fail(CPL_ERR_ARG, "cpl_input_select_rows: link %s: bad dataset name \"%.255s\" %s",
                     in->l->label, dataset, CPLI_NAME_RULE);
  int rc = cpli_sel_set_rows(&in->sel, dataset, part, nparts);
  if (rc != CPL_OK)
    cpli_error_prefix("cpl_input_select_rows: link %s, receiver %d: ", in->l->label, in->rank);
  else in->sel_dirty = 1;
  return rc;
}

int cpl_input_select_clear(cpl_input *in) {
  if (!in) return cpli_fail(CPL_ERR_ARG, "cpl_input_select_clear: input is NULL");
  in->sel_dirty |= in->sel.active;
  cpli_sel_clear(&in->sel);
  return CPL_OK;
}

int cpl_input_stats_get(const cpl_input *in, cpl_input_stats *st) {
  CPLI_TRY(
      cpli_check_null("cpl_input_stats_get", 2, "in", (const void *)in, "st", (const void *)st));
  *st = in->st;
  return CPL_OK;
}

int cpl_input_close(cpl_input *in) {
  if (!in) return CPL_OK;
  cpl_context *ctx = in->ctx;
  int rc = CPL_OK;
  /* A request still out (a try_step that timed out) is answered first:
   * the producer may be sending that step already, and would wait for
   * this consumer to join until the link timeout, then fail its port. The
   * step is taken and dropped; waiting is bounded by the link timeout. */
  if (in->credit_out && !in->in_step && !in->eos && !in->failed) {
    rc = begin(in, "cpl_input_close", in->l->timeout, in->want_out, NULL);
    if (rc == CPL_OK) cpl_input_end_step(in);
    /* only an interrupt is the caller's business: the rest is what the
     * producer's port reports */
    if (rc != CPL_ERR_INTERRUPTED) rc = CPL_OK;
  }
  if (in->rank == 0) {
    const int drc =
        cpli_chan_send_credit(ctx, in->end, CPLI_MSG_DETACH, 0, NULL, 0, in->l->timeout);
    if (rc == CPL_OK) rc = drc;
  }
  cpli_report_flush(ctx, in->l->label);
  ctx->data->chan[in->end].detach_sent = 1;
  ctx->data->chan[in->end].input_open = 0;
  cpli_data_untrack(ctx, NULL, in);
  for (int k = 0; k < in->nbuf; k++) {
    free(in->buf[k]);
    cpli_boxes_free(&in->pieces[k]);
  }
  free(in->buf);
  free(in->cap);
  free(in->pieces);
  cpli_sel_free(&in->sel);
  cpli_sel_free(&in->sel_used);
  free(in->counts);
  free(in->batch);
  cpli_attrs_clear(&in->attrs);
  free(in->attr_at);
  free(in->attr_of);
  cpli_desc_unref(in->desc);
  free(in);
  return rc;
}

/* ----------------------------------------------------------- queries */

static int in_step(const cpl_input *in, const char *call) {
  CPLI_TRY(usable(in, call));
  if (!in->in_step)
    return cpli_fail(CPL_ERR_STATE, "%s: link %s: no step is open", call, in->l->label);
  return CPL_OK;
}

static void fill_info(const cpl_input *in, int k, cpl_dataset_info *info) {
  const cpli_dset *s = &in->desc->d[k];
  memset(info, 0, sizeof *info);
  info->name = s->name;
  info->type = s->type;
  info->rank = s->rank;
  memcpy(info->dims, s->dims, (size_t)s->rank * sizeof *s->dims);
  info->bytes = s->total;
  info->nattrs = in->attr_at[k + 1] - in->attr_at[k];
}

int cpl_input_dataset_count(const cpl_input *in, int *n) {
  CPLI_TRY(in_step(in, "cpl_input_dataset_count"));
  if (!n) return cpli_fail(CPL_ERR_ARG, "cpl_input_dataset_count: n is NULL");
  *n = in->desc->nd;
  return CPL_OK;
}

int cpl_input_dataset(const cpl_input *in, int i, cpl_dataset_info *info) {
  CPLI_TRY(in_step(in, "cpl_input_dataset"));
  if (!info) return cpli_fail(CPL_ERR_ARG, "cpl_input_dataset: info is NULL");
  if (i < 0 || i >= in->desc->nd)
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_input_dataset: link %s, step %ld: no dataset %d (step has %d)",
                     in->l->label, in->step, i, in->desc->nd);
  fill_info(in, i, info);
  return CPL_OK;
}

static int find(const cpl_input *in, const char *name, const char *call) {
  int k = name ? cpli_desc_find(in->desc, name) : -1;
  if (k < 0) { /* name the datasets there are, as far as they fit */
    char have[512] = "";
    size_t o = 0;
    for (int i = 0; i < in->desc->nd && o < sizeof have; i++)
      o += (size_t)snprintf(have + o, sizeof have - o, "%s\"%s\"", i ? ", " : "",
                            in->desc->d[i].name);
    if (o >= sizeof have) memcpy(have + sizeof have - 5, " ...", 5);
    cpli_fail(CPL_ERR_ARG, "%s: link %s, step %ld: no dataset \"%s\"; the step has %s%s", call,
              in->l->label, in->step, name ? name : "(null)", in->desc->nd ? "" : "none", have);
  }
  return k;
}

int cpl_input_inquire(const cpl_input *in, const char *name, cpl_dataset_info *info) {
  CPLI_TRY(in_step(in, "cpl_input_inquire"));
  int k = find(in, name, "cpl_input_inquire");
  if (k < 0) return CPL_ERR_ARG;
  if (!info) return cpli_fail(CPL_ERR_ARG, "cpl_input_inquire: info is NULL");
  fill_info(in, k, info);
  return CPL_OK;
}

/* *same: memtype is the stored type; else HDF5 must convert between them
 * (CPL_ERR_TYPE if it cannot). The helpers below say only what failed: the
 * calls prefix their context (get_failed, attr_failed). */
static int type_match(hid_t stored, hid_t memtype, int *same) {
  CPLI_H5_HELD;
  char t1[64], t2[64];
  /* A bad id is our error, not HDF5's: asked first (H5Iget_type reports
   * nothing), which costs far less than silencing HDF5 around H5Tequal. */
  if (H5Iget_type(memtype) != H5I_DATATYPE || (*same = H5Tequal(stored, memtype)) < 0)
    return cpli_fail(CPL_ERR_ARG, "memtype is not a datatype");
  if (!*same && !cpli_type_convertible(stored, memtype))
    return cpli_fail(CPL_ERR_TYPE, "HDF5 cannot convert %s to %s",
                     cpli_type_str(stored, t1, sizeof t1), cpli_type_str(memtype, t2, sizeof t2));
  return CPL_OK;
}

/* Room for n elements of the larger of two types, for an in-place
 * H5Tconvert. */
static int conv_alloc(hid_t a, hid_t b, size_t n, char **out) {
  CPLI_H5_HELD;
  size_t sa = H5Tget_size(a), sb = H5Tget_size(b), big = sa > sb ? sa : sb;
  if (n > SIZE_MAX / big) return cpli_fail(CPL_ERR_ARG, "selection too large");
  *out = malloc(n > 0 ? n * big : 1);
  if (!*out) return cpli_fail(CPL_ERR_NOMEM, "out of memory converting");
  return CPL_OK;
}

/* tmp (from conv_alloc) holds n src_type elements: convert them in place
 * and copy the result to dst. Frees tmp. */
static int convert_into(hid_t src_type, hid_t dst_type, size_t n, char *tmp, void *dst) {
  CPLI_H5_HELD;
  size_t ds = H5Tget_size(dst_type);
  /* Compound conversions take members the source lacks from the
   * background: the caller's buffer, which keeps them as H5Dread does. */
  int compound = H5Tget_class(dst_type) == H5T_COMPOUND;
  char *bkg = compound ? malloc(n ? n * ds : 1) : NULL;
  if (compound && !bkg) {
    free(tmp);
    return cpli_fail(CPL_ERR_NOMEM, "out of memory converting");
  }
  if (bkg && n) memcpy(bkg, dst, n * ds);
  herr_t e;
  H5E_BEGIN_TRY { e = H5Tconvert(src_type, dst_type, n, tmp, bkg, H5P_DEFAULT); }
  H5E_END_TRY;
  if (e >= 0) memcpy(dst, tmp, n * ds);
  free(tmp);
  free(bkg);
  if (e < 0) return cpli_fail(CPL_ERR_HDF5, "H5Tconvert failed");
  return CPL_OK;
}

/* Elements of box (start, count) inside the disjoint pieces. */
static uint64_t covered(const cpli_boxes *pc, const hsize_t *start, const hsize_t *count) {
  uint64_t in = 0, v;
  hsize_t is[CPL_MAX_RANK], ic[CPL_MAX_RANK];
  for (int m = 0; m < pc->n; m++)
    if (cpli_box_intersect(pc->rank, pc->start + (size_t)m * pc->rank,
                           pc->count + (size_t)m * pc->rank, start, count, is, ic) &&
        cpli_box_volume(pc->rank, ic, &v) == 0)
      in += v;
  return in;
}

/* What cpl_input_get failed on, before the reason get_box gave. Only on
 * failure: formatting it on every call cost the many-dataset step a
 * tenth of its instructions. */
CPLI_COLD static void get_failed(const cpl_input *in, const cpli_dset *s) {
  char what[400];
  snprintf(what, sizeof what, "cpl_input_get: link %s, step %ld, dataset \"%s\"", in->l->label,
           in->step, s->name);
  cpli_error_prefix("%s: ", what);
}

static int get_box(cpl_input *in, int k, hid_t memtype, const hsize_t start[],
                   const hsize_t count[], void *buf) {
  const cpli_dset *s = &in->desc->d[k];
  char b1[200], b2[200];
  hsize_t zero[CPL_MAX_RANK] = {0};
  if ((start == NULL) != (count == NULL))
    return cpli_fail(CPL_ERR_ARG, "give both start and count, or neither");
  if (!start) {
    start = zero;
    count = s->dims;
  }
  if (!cpli_box_inside(s->rank, s->dims, start, count))
    return cpli_fail(CPL_ERR_ARG, "box %s lies outside the array %s",
                     cpli_box_str(s->rank, start, count, b1, sizeof b1),
                     cpli_dims_str(s->rank, s->dims, b2, sizeof b2));
  /* The type first: a get that reads nothing this step (an empty array or
   * box) says what the same get of a later, non-empty step would. */
  int same;
  CPLI_TRY(type_match(s->type, memtype, &same));
  uint64_t n;
  cpli_box_volume(s->rank, count, &n);
  if (n == 0) return CPL_OK;
  const cpli_boxes *pc = &in->pieces[k];
  int dflt;
  const int sel_rank = cpli_sel_boxes_rank(&in->sel_used, s->name, &dflt);
  if (in->sel_used.active && sel_rank && sel_rank != s->rank) /* boxes of no use here */
    return cpli_fail(CPL_ERR_ARG,
                     dflt ? "this rank has no selection of its own for it and its default "
                            "selection (dataset NULL) has boxes of %d dimension%s, but the dataset "
                            "has %d, so it receives nothing of it (select it by name, ndims %d)"
                          : "this rank selected boxes of %d dimension%s for it, but the dataset "
                            "has %d, so it receives nothing of it (give cpl_input_select ndims %d)",
                     sel_rank, sel_rank == 1 ? "" : "s", s->rank, s->rank);
  if (in->sel_used.active && covered(pc, start, count) < n)
    return cpli_fail(CPL_ERR_ARG,
                     "box %s is not inside the boxes this "
                     "rank selected (%d piece%s%s%s; %s)",
                     cpli_box_str(s->rank, start, count, b1, sizeof b1), pc->n,
                     pc->n == 1 ? "" : "s", pc->n ? ", the first " : "",
                     pc->n ? cpli_box_str(s->rank, pc->start, pc->count, b2, sizeof b2) : "",
                     in->sel_dirty ? "this rank changed its selection after asking for this "
                                     "step (during the step, or while a try_step that timed "
                                     "out was still out): the change takes effect from the "
                                     "next step"
                                   : "select it before begin_step");
  if (!buf) return cpli_fail(CPL_ERR_ARG, "buf is NULL");
  if (n > SIZE_MAX / s->esize) return cpli_fail(CPL_ERR_ARG, "selection too large");
  /* Converting: assemble in a buffer the conversion then works in. */
  char *dst = buf;
  if (!same) CPLI_TRY(conv_alloc(s->type, memtype, (size_t)n, &dst));
  if (in->mode == CPLI_MODE_SELECT) { /* from this rank's pieces */
    size_t off = 0;
    for (int m = 0; m < pc->n; m++) {
      const hsize_t *ps = pc->start + (size_t)m * s->rank;
      const hsize_t *pn = pc->count + (size_t)m * s->rank;
      cpli_slab_copy(s->rank, s->esize, ps, pn, in->buf[k] + off, start, count, dst);
      uint64_t v;
      cpli_box_volume(s->rank, pn, &v);
      off += (size_t)v * s->esize;
    }
  } else {
    for (int b = 0; b < in->desc->nblocks; b++)
      if (s->bytes[b])
        cpli_slab_copy(s->rank, s->esize, s->start + (size_t)b * s->rank,
                       s->count + (size_t)b * s->rank, in->buf[k] + s->offset[b], start, count,
                       dst);
  }
  return same ? CPL_OK : convert_into(s->type, memtype, (size_t)n, dst, buf);
}

int cpl_input_get(cpl_input *in, const char *name, hid_t memtype, const hsize_t start[],
                  const hsize_t count[], void *buf) {
  CPLI_TRY(in_step(in, "cpl_input_get"));
  int k = find(in, name, "cpl_input_get");
  if (k < 0) return CPL_ERR_ARG;
  const int rc = get_box(in, k, memtype, start, count, buf);
  if (rc != CPL_OK) get_failed(in, &in->desc->d[k]);
  return rc;
}

/* ------------------------------------------------------------ attributes */

/* Attribute i of `dataset` (NULL or "": of the step): its index in
 * attrs.v, or -1. */
static int attr_index(const cpl_input *in, const char *dataset, int i) {
  const int g = dataset && *dataset ? cpli_desc_find(in->desc, dataset) : in->desc->nd;
  if (g < 0 || i < 0 || i >= in->attr_at[g + 1] - in->attr_at[g]) return -1;
  return in->attr_of[in->attr_at[g] + i];
}

int cpl_input_attr_count(const cpl_input *in, const char *dataset, int *n) {
  CPLI_TRY(in_step(in, "cpl_input_attr_count"));
  if (!n) return cpli_fail(CPL_ERR_ARG, "cpl_input_attr_count: n is NULL");
  const int g = dataset ? find(in, dataset, "cpl_input_attr_count") : in->desc->nd;
  if (g < 0) return CPL_ERR_ARG;
  *n = in->attr_at[g + 1] - in->attr_at[g];
  return CPL_OK;
}

int cpl_input_attr(const cpl_input *in, const char *dataset, int i, cpl_attr_info *info) {
  CPLI_TRY(in_step(in, "cpl_input_attr"));
  if (!info) return cpli_fail(CPL_ERR_ARG, "cpl_input_attr: info is NULL");
  int k = i >= 0 ? attr_index(in, dataset, i) : -1;
  if (k < 0)
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_input_attr: link %s, step %ld: no "
                     "attribute %d of %s%s%s",
                     in->l->label, in->step, i, dataset ? "dataset \"" : "the step",
                     dataset ? dataset : "", dataset ? "\"" : "");
  const cpli_attr *a = &in->attrs.v[k];
  *info = (cpl_attr_info){.name = a->name, .type = a->type, .n = a->n};
  return CPL_OK;
}

static const cpli_attr *attr_find(const cpl_input *in, const char *dataset, const char *name) {
  const int k = name ? cpli_attrs_find(&in->attrs, dataset ? dataset : "", name) : -1;
  return k < 0 ? NULL : &in->attrs.v[k];
}

static const char *attr_what(const cpl_input *in, const char *call, const char *dataset,
                             const char *name, char *buf, size_t n) {
  snprintf(buf, n, "%s: link %s, step %ld, attribute \"%s\"%s%s%s", call, in->l->label, in->step,
           name ? name : "(null)", dataset ? " of dataset \"" : "", dataset ? dataset : "",
           dataset ? "\"" : "");
  return buf;
}

int cpl_input_attr_inquire(const cpl_input *in, const char *dataset, const char *name,
                           cpl_attr_info *info) {
  CPLI_TRY(in_step(in, "cpl_input_attr_inquire"));
  const cpli_attr *a = attr_find(in, dataset, name);
  char what[400];
  if (!a || !info)
    return cpli_fail(CPL_ERR_ARG, "%s: %s",
                     attr_what(in, "cpl_input_attr_inquire", dataset, name, what, sizeof what),
                     a ? "info is NULL" : "not found");
  *info = (cpl_attr_info){.name = a->name, .type = a->type, .n = a->n};
  return CPL_OK;
}

/* The attribute's value, converted to memtype; the reasons it fails
 * without context (cpl_input_attr_get adds it, only then). */
static int attr_copy(const cpli_attr *a, hid_t memtype, size_t n, void *buf) {
  if (a->n > n) return cpli_fail(CPL_ERR_ARG, "has %zu elements, the buffer room for %zu", a->n, n);
  if (a->n && !buf) return cpli_fail(CPL_ERR_ARG, "buf is NULL");
  int same;
  CPLI_TRY(type_match(a->type, memtype, &same));
  if (a->n == 0) return CPL_OK; /* nothing to copy, and buf may be NULL */
  if (same) {
    memcpy(buf, a->value, a->bytes);
    return CPL_OK;
  }
  char *tmp;
  CPLI_TRY(conv_alloc(a->type, memtype, a->n, &tmp));
  memcpy(tmp, a->value, a->bytes);
  return convert_into(a->type, memtype, a->n, tmp, buf);
}

CPLI_COLD static void attr_failed(const cpl_input *in, const char *dataset, const char *name) {
  char what[400];
  cpli_error_prefix("%s: ", attr_what(in, "cpl_input_attr_get", dataset, name, what, sizeof what));
}

int cpl_input_attr_get(const cpl_input *in, const char *dataset, const char *name, hid_t memtype,
                       size_t n, void *buf) {
  CPLI_TRY(in_step(in, "cpl_input_attr_get"));
  const cpli_attr *a = attr_find(in, dataset, name);
  const int rc = a ? attr_copy(a, memtype, n, buf) : cpli_fail(CPL_ERR_ARG, "not found");
  if (rc != CPL_OK) attr_failed(in, dataset, name);
  return rc;
}
