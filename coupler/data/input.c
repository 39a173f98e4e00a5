/*
 * Consumer side of a port. begin_step asks the producer for a step (a
 * credit), takes its header on the root, shares it with the group, then
 * takes part in one allgatherv per dataset: afterwards every rank holds
 * every dataset whole, as the producers' blocks concatenated in rank
 * order. inquire and get are local: get assembles the caller's selection
 * from the blocks that intersect it, converting the type if asked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/data.h"
#include "data/slab.h"

struct cpl_input {
  cpl_context *ctx;
  int end;
  const cpli_link *l;
  MPI_Comm comm;
  int rank, size;
  int in_step, eos;
  int failed;               /* status that ended the stream              */
  char fail_msg[1024];
  long step, last;          /* current step; last one taken (-1: none)   */
  cpli_desc *desc;
  char **buf;               /* per dataset: the blocks, concatenated     */
  size_t *cap;
  int nbuf;
  int *counts;              /* nblocks counts, then displacements        */
  cpli_attrs attrs;
};

int cpl_input_open(cpl_context *ctx, const char *port, const char *peer,
                   cpl_input **out) {
  if (!ctx || !port || !out)
    return cpli_fail(CPL_ERR_ARG, "cpl_input_open: NULL argument");
  *out = NULL;
  const cpli_component *me = &ctx->wf->comps[ctx->comp];
  int pi = cpli_wf_port_index(me, port);
  if (pi >= 0 && me->ports[pi].output)
    return cpli_fail(CPL_ERR_ARG, "cpl_input_open: port %s.%s is an output",
                     me->name, port);
  cpl_link_end le;
  CPLI_TRY(cpl_port_link(ctx, port, peer, &le));
  cpli_data_state *s;
  CPLI_TRY(cpli_data_get(ctx, &s));
  int end = 0;
  while (ctx->ends[end].link != le.link) end++;
  if (s->chan[end].input_open || s->chan[end].detach_sent)
    return cpli_fail(CPL_ERR_STATE, "cpl_input_open: link %s is already %s",
                     ctx->wf->links[le.link].label,
                     s->chan[end].input_open ? "open" : "closed");
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
  s->chan[end].input_open = 1;
  *out = in;
  return CPL_OK;
}

int cpl_input_link(const cpl_input *in, cpl_link_end *out) {
  if (!in || !out) return cpli_fail(CPL_ERR_ARG, "cpl_input_link: NULL argument");
  return cpl_context_link(in->ctx, in->end, out);
}

/* ------------------------------------------------------------ begin */

static int usable(const cpl_input *in, const char *call) {
  if (!in) return cpli_fail(CPL_ERR_ARG, "%s: input is NULL", call);
  if (in->failed)
    return cpli_fail(in->failed, "%s: link %s failed: %s", call, in->l->label,
                     in->fail_msg);
  return CPL_OK;
}

/* Root: credit, then the header; every rank: the header, broadcast. */
static int take_header(cpl_input *in, double wait, cpli_hdr *h,
                       unsigned char **payload) {
  *payload = NULL;
  unsigned char *msg = NULL;
  size_t len = 0;
  int rc = CPL_OK;
  memset(h, 0, sizeof *h);
  if (in->rank == 0) {
    /* After a timeout the credit is still out: asking twice would make
     * the producer send a step nobody waits for. */
    cpli_chan *ch = &in->ctx->data->chan[in->end];
    if (!ch->credit_out)
      rc = cpli_chan_send_credit(in->ctx, in->end, CPLI_MSG_CREDIT, in->l->timeout);
    if (rc == CPL_OK) {
      ch->credit_out = 1;
      rc = cpli_chan_recv_header(in->ctx, in->end, wait, &msg, &len);
    }
    if (rc == CPL_ERR_TIMEOUT)
      cpli_fail(rc, "link %s, receiver 0, step after %ld: no step from the "
                "producer within %g s (raise the link's timeout if it computes "
                "longer between steps)", in->l->label, in->last, wait);
    if (rc == CPL_OK && len < sizeof *h)
      rc = cpli_fail(CPL_ERR_INTERNAL, "link %s: short step header", in->l->label);
    if (rc == CPL_OK) memcpy(h, msg, sizeof *h);
    if (rc == CPL_OK && h->kind == CPLI_HDR_DATA) ch->credit_out = 0;
    h->root_rc = rc;
  }
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = 2 * in->l->timeout + 10; /* beyond the root's own wait */
  opt.label = in->l->label;
  opt.step = in->last;
  int brc = cpl_intra_bcast(h, (int)sizeof *h, MPI_BYTE, 0, in->comm, &opt);
  if (brc != CPL_OK) {
    free(msg);
    return brc;
  }
  if (h->root_rc != CPL_OK) {
    free(msg);
    if (in->rank != 0)
      cpli_fail((int)h->root_rc, "link %s, receiver %d: rank 0 of this "
                "component failed to take the step after %ld (its message "
                "says why)", in->l->label, in->rank, in->last);
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

/* A new description: check it and size the buffers. */
static int set_desc(cpl_input *in, const unsigned char *data, size_t len,
                    const char *where) {
  cpli_desc *d;
  CPLI_TRY(cpli_desc_decode(data, len, where, &d));
  int rc = cpli_desc_finish(d, where);
  int p = in->ctx->ends[in->end].remote_size; /* counts[] has 2 x nblocks */
  if (rc == CPL_OK && d->nblocks != p)
    rc = cpli_fail(CPL_ERR_INTERNAL, "%s: corrupt description: %d blocks "
                   "for %d producer ranks", where, d->nblocks, p);
  const cpli_component *c = &in->ctx->wf->comps[in->l->to_comp];
  if (rc == CPL_OK) rc = cpli_desc_check_port(d, c, &c->ports[in->l->to_port], 0, where);
  if (rc == CPL_OK && d->nd > in->nbuf) {
    char **b = realloc(in->buf, (size_t)d->nd * sizeof *b);
    size_t *cap = b ? realloc(in->cap, (size_t)d->nd * sizeof *cap) : NULL;
    if (b) in->buf = b;
    if (cap) in->cap = cap;
    if (!b || !cap) rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
    for (int k = in->nbuf; rc == CPL_OK && k < d->nd; k++) {
      in->buf[k] = NULL;
      in->cap[k] = 0;
    }
    if (rc == CPL_OK) in->nbuf = d->nd;
  }
  int *counts = rc == CPL_OK ? realloc(in->counts, 2 * (size_t)d->nblocks * sizeof *counts) : NULL;
  if (rc == CPL_OK && !counts) rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
  if (counts) in->counts = counts;
  for (int k = 0; rc == CPL_OK && k < d->nd; k++) {
    if (d->d[k].total <= in->cap[k]) continue;
    free(in->buf[k]);
    in->buf[k] = malloc(d->d[k].total);
    in->cap[k] = in->buf[k] ? d->d[k].total : 0;
    if (!in->buf[k]) rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory for "
                                    "dataset \"%s\" (%zu bytes)", where,
                                    d->d[k].name, d->d[k].total);
  }
  if (rc != CPL_OK) {
    cpli_desc_unref(d);
    return rc;
  }
  cpli_desc_unref(in->desc);
  in->desc = d;
  return CPL_OK;
}

/* begin_step and try_step: wait up to `wait` seconds for the header. */
static int begin(cpl_input *in, double wait, long *step) {
  CPLI_TRY(usable(in, "cpl_input_begin_step"));
  if (in->in_step)
    return cpli_fail(CPL_ERR_STATE, "cpl_input_begin_step: link %s: step %ld "
                     "is still open (call cpl_input_end_step)", in->l->label,
                     in->step);
  if (in->eos) return CPL_END_OF_STREAM;
  cpli_hdr h;
  unsigned char *p;
  CPLI_TRY(take_header(in, wait, &h, &p));
  if (h.kind == CPLI_HDR_EOS) {
    free(p);
    in->eos = 1;
    return CPL_END_OF_STREAM;
  }
  if (h.kind == CPLI_HDR_ERROR) {
    in->failed = h.status > 0 && h.status < CPL_STATUS_COUNT ? (int)h.status
                                                             : CPL_ERR_MISMATCH;
    snprintf(in->fail_msg, sizeof in->fail_msg, "producer: %.*s",
             (int)h.msg_len, p ? (char *)p : "");
    free(p);
    return cpli_fail(in->failed, "link %s, receiver %d: %s", in->l->label,
                     in->rank, in->fail_msg);
  }
  char where[300];
  snprintf(where, sizeof where, "link %s, receiver %d, step %ld", in->l->label,
           in->rank, (long)h.step);
  int rc = CPL_OK;
  if (h.kind != CPLI_HDR_DATA || (!in->desc && h.desc_len == 0))
    rc = cpli_fail(CPL_ERR_INTERNAL, "%s: unexpected step header", where);
  if (rc == CPL_OK && h.desc_len)
    rc = set_desc(in, p, (size_t)h.desc_len, where);
  if (rc == CPL_OK)
    rc = cpli_attrs_decode(p + h.desc_len, (size_t)h.attr_len, where, &in->attrs);
  free(p);
  if (rc != CPL_OK) {
    /* The producers are already in the data allgathers; without a valid
     * description there is no way to join them, so the link is over. */
    in->failed = rc;
    snprintf(in->fail_msg, sizeof in->fail_msg, "%s", cpl_last_error());
    return rc;
  }
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.inter = in->l->inter;
  opt.intra = in->l->intra;
  opt.timeout = in->l->timeout;
  opt.label = in->l->label;
  opt.step = (long)h.step;
  const cpli_desc *d = in->desc;
  int *counts = in->counts, *displs = in->counts + d->nblocks;
  MPI_Comm inter = in->ctx->ends[in->end].intercomm;
  for (int k = 0; k < d->nd && rc == CPL_OK; k++) {
    const cpli_dset *s = &d->d[k];
    if (s->total == 0) continue;
    for (int b = 0; b < d->nblocks; b++) {
      counts[b] = (int)s->bytes[b];
      displs[b] = (int)s->offset[b];
    }
    rc = cpl_inter_allgatherv(NULL, 0, MPI_BYTE, in->buf[k], counts, displs,
                              MPI_BYTE, CPL_RECEIVER, inter, &opt);
    if (rc != CPL_OK) cpli_error_prefix("dataset \"%s\": ", s->name);
  }
  if (rc != CPL_OK) {
    in->failed = rc;
    snprintf(in->fail_msg, sizeof in->fail_msg, "%s", cpl_last_error());
    return rc;
  }
  in->step = in->last = (long)h.step;
  in->in_step = 1;
  if (step) *step = in->step;
  return CPL_OK;
}

int cpl_input_begin_step(cpl_input *in, long *step) {
  return begin(in, in ? in->l->timeout : 0, step);
}

int cpl_input_try_step(cpl_input *in, double seconds, long *step) {
  if (in && !(seconds >= 0 && seconds <= in->l->timeout))
    return cpli_fail(CPL_ERR_ARG, "cpl_input_try_step: link %s: wait %g s is "
                     "not in [0, %g] (the link timeout)", in->l->label,
                     seconds, in->l->timeout);
  return begin(in, seconds, step);
}

int cpl_input_end_step(cpl_input *in) {
  CPLI_TRY(usable(in, "cpl_input_end_step"));
  if (!in->in_step)
    return cpli_fail(CPL_ERR_STATE, "cpl_input_end_step: link %s: no step is "
                     "open", in->l->label);
  in->in_step = 0;
  return CPL_OK;
}

int cpl_input_close(cpl_input *in) {
  if (!in) return CPL_OK;
  cpl_context *ctx = in->ctx;
  int rc = CPL_OK;
  if (in->rank == 0)
    rc = cpli_chan_send_credit(ctx, in->end, CPLI_MSG_DETACH, in->l->timeout);
  ctx->data->chan[in->end].detach_sent = 1;
  ctx->data->chan[in->end].input_open = 0;
  cpli_data_untrack(ctx, NULL, in);
  for (int k = 0; k < in->nbuf; k++) free(in->buf[k]);
  free(in->buf);
  free(in->cap);
  free(in->counts);
  cpli_attrs_clear(&in->attrs);
  cpli_desc_unref(in->desc);
  free(in);
  return rc;
}

/* ----------------------------------------------------------- queries */

static int in_step(const cpl_input *in, const char *call) {
  CPLI_TRY(usable(in, call));
  if (!in->in_step)
    return cpli_fail(CPL_ERR_STATE, "%s: link %s: no step is open", call,
                     in->l->label);
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
  for (int i = 0; i < in->attrs.n; i++)
    info->nattrs += !strcmp(in->attrs.v[i].dataset, s->name);
}

int cpl_input_dataset_count(const cpl_input *in, int *n) {
  CPLI_TRY(in_step(in, "cpl_input_dataset_count"));
  if (!n) return cpli_fail(CPL_ERR_ARG, "cpl_input_dataset_count: n is NULL");
  *n = in->desc->nd;
  return CPL_OK;
}

int cpl_input_dataset(const cpl_input *in, int i, cpl_dataset_info *info) {
  CPLI_TRY(in_step(in, "cpl_input_dataset"));
  if (!info || i < 0 || i >= in->desc->nd)
    return cpli_fail(CPL_ERR_ARG, "cpl_input_dataset: no dataset %d (step has "
                     "%d)", i, in->desc->nd);
  fill_info(in, i, info);
  return CPL_OK;
}

static int find(const cpl_input *in, const char *name, const char *call) {
  int k = name ? cpli_desc_find(in->desc, name) : -1;
  if (k < 0)
    cpli_fail(CPL_ERR_ARG, "%s: link %s, step %ld: no dataset \"%s\"", call,
              in->l->label, in->step, name ? name : "(null)");
  return k;
}

int cpl_input_inquire(const cpl_input *in, const char *name,
                      cpl_dataset_info *info) {
  CPLI_TRY(in_step(in, "cpl_input_inquire"));
  int k = find(in, name, "cpl_input_inquire");
  if (k < 0) return CPL_ERR_ARG;
  if (!info) return cpli_fail(CPL_ERR_ARG, "cpl_input_inquire: info is NULL");
  fill_info(in, k, info);
  return CPL_OK;
}

/* Room for n elements of the larger of two types, for an in-place
 * H5Tconvert. */
static int conv_alloc(hid_t a, hid_t b, size_t n, const char *what,
                      char **out) {
  size_t sa = H5Tget_size(a), sb = H5Tget_size(b), big = sa > sb ? sa : sb;
  if (n > SIZE_MAX / big)
    return cpli_fail(CPL_ERR_ARG, "%s: selection too large", what);
  *out = malloc(n > 0 ? n * big : 1);
  if (!*out) return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory converting", what);
  return CPL_OK;
}

/* tmp (from conv_alloc) holds n src_type elements: convert them in place
 * and copy the result to dst. Frees tmp. */
static int convert_into(hid_t src_type, hid_t dst_type, size_t n, char *tmp,
                        void *dst, const char *what) {
  size_t ds = H5Tget_size(dst_type);
  /* Compound conversions may read the destination's old values. */
  int compound = H5Tget_class(dst_type) == H5T_COMPOUND;
  char *bkg = compound ? calloc(n ? n : 1, ds) : NULL;
  if (compound && !bkg) {
    free(tmp);
    return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory converting", what);
  }
  herr_t e;
  H5E_BEGIN_TRY { e = H5Tconvert(src_type, dst_type, n, tmp, bkg, H5P_DEFAULT); } H5E_END_TRY;
  if (e >= 0) memcpy(dst, tmp, n * ds);
  free(tmp);
  free(bkg);
  if (e < 0) return cpli_fail(CPL_ERR_HDF5, "%s: H5Tconvert failed", what);
  return CPL_OK;
}

int cpl_input_get(cpl_input *in, const char *name, hid_t memtype,
                  const hsize_t start[], const hsize_t count[], void *buf) {
  CPLI_TRY(in_step(in, "cpl_input_get"));
  int k = find(in, name, "cpl_input_get");
  if (k < 0) return CPL_ERR_ARG;
  const cpli_dset *s = &in->desc->d[k];
  char what[400], t1[64], t2[64], b1[200], b2[200];
  snprintf(what, sizeof what, "cpl_input_get: link %s, step %ld, dataset "
           "\"%s\"", in->l->label, in->step, s->name);
  hsize_t zero[CPL_MAX_RANK] = {0};
  if ((start == NULL) != (count == NULL))
    return cpli_fail(CPL_ERR_ARG, "%s: give both start and count, or neither", what);
  if (!start) {
    start = zero;
    count = s->dims;
  }
  if (!cpli_box_inside(s->rank, s->dims, start, count))
    return cpli_fail(CPL_ERR_ARG, "%s: selection %s lies outside the array %s",
                     what, cpli_box_str(s->rank, start, count, b1, sizeof b1),
                     cpli_dims_str(s->rank, s->dims, b2, sizeof b2));
  uint64_t n;
  cpli_box_volume(s->rank, count, &n);
  if (n == 0) return CPL_OK;
  if (!buf) return cpli_fail(CPL_ERR_ARG, "%s: buf is NULL", what);
  int same = H5Tequal(s->type, memtype);
  if (same < 0) return cpli_fail(CPL_ERR_ARG, "%s: memtype is not a datatype", what);
  if (!same && !cpli_type_convertible(s->type, memtype))
    return cpli_fail(CPL_ERR_MISMATCH, "%s: HDF5 cannot convert %s to %s", what,
                     cpli_type_str(s->type, t1, sizeof t1),
                     cpli_type_str(memtype, t2, sizeof t2));
  if (n > SIZE_MAX / s->esize)
    return cpli_fail(CPL_ERR_ARG, "%s: selection too large", what);
  /* Converting: assemble in a buffer the conversion then works in. */
  char *dst = buf;
  if (!same) CPLI_TRY(conv_alloc(s->type, memtype, (size_t)n, what, &dst));
  for (int b = 0; b < in->desc->nblocks; b++)
    if (s->bytes[b])
      cpli_slab_copy(s->rank, s->esize, s->start + (size_t)b * s->rank,
                     s->count + (size_t)b * s->rank, in->buf[k] + s->offset[b],
                     start, count, dst);
  return same ? CPL_OK : convert_into(s->type, memtype, (size_t)n, dst, buf, what);
}

/* ------------------------------------------------------------ attributes */

static int attr_index(const cpl_input *in, const char *dataset, int i) {
  const char *ds = dataset ? dataset : "";
  for (int k = 0; k < in->attrs.n; k++)
    if (!strcmp(in->attrs.v[k].dataset, ds) && i-- == 0) return k;
  return -1;
}

int cpl_input_attr_count(const cpl_input *in, const char *dataset, int *n) {
  CPLI_TRY(in_step(in, "cpl_input_attr_count"));
  if (!n) return cpli_fail(CPL_ERR_ARG, "cpl_input_attr_count: n is NULL");
  if (dataset && find(in, dataset, "cpl_input_attr_count") < 0) return CPL_ERR_ARG;
  *n = 0;
  while (attr_index(in, dataset, *n) >= 0) (*n)++;
  return CPL_OK;
}

int cpl_input_attr(const cpl_input *in, const char *dataset, int i,
                   cpl_attr_info *info) {
  CPLI_TRY(in_step(in, "cpl_input_attr"));
  int k = info && i >= 0 ? attr_index(in, dataset, i) : -1;
  if (k < 0)
    return cpli_fail(CPL_ERR_ARG, "cpl_input_attr: link %s, step %ld: no "
                     "attribute %d of %s%s%s", in->l->label, in->step, i,
                     dataset ? "dataset \"" : "the step", dataset ? dataset : "",
                     dataset ? "\"" : "");
  const cpli_attr *a = &in->attrs.v[k];
  *info = (cpl_attr_info){.name = a->name, .type = a->type, .n = a->n};
  return CPL_OK;
}

static const cpli_attr *attr_find(const cpl_input *in, const char *dataset,
                                  const char *name) {
  const char *ds = dataset ? dataset : "";
  for (int k = 0; name && k < in->attrs.n; k++)
    if (!strcmp(in->attrs.v[k].dataset, ds) && !strcmp(in->attrs.v[k].name, name))
      return &in->attrs.v[k];
  return NULL;
}

static const char *attr_what(const cpl_input *in, const char *call,
                             const char *dataset, const char *name, char *buf,
                             size_t n) {
  snprintf(buf, n, "%s: link %s, step %ld, attribute \"%s\"%s%s%s", call,
           in->l->label, in->step, name ? name : "(null)",
           dataset ? " of dataset \"" : "", dataset ? dataset : "",
           dataset ? "\"" : "");
  return buf;
}

int cpl_input_attr_inquire(const cpl_input *in, const char *dataset,
                           const char *name, cpl_attr_info *info) {
  CPLI_TRY(in_step(in, "cpl_input_attr_inquire"));
  const cpli_attr *a = attr_find(in, dataset, name);
  char what[400];
  if (!a || !info)
    return cpli_fail(CPL_ERR_ARG, "%s: %s", attr_what(in, "cpl_input_attr_inquire",
                     dataset, name, what, sizeof what), a ? "info is NULL" : "not found");
  *info = (cpl_attr_info){.name = a->name, .type = a->type, .n = a->n};
  return CPL_OK;
}

int cpl_input_attr_get(const cpl_input *in, const char *dataset,
                       const char *name, hid_t memtype, size_t n, void *buf) {
  CPLI_TRY(in_step(in, "cpl_input_attr_get"));
  const cpli_attr *a = attr_find(in, dataset, name);
  char what[400], t1[64], t2[64];
  attr_what(in, "cpl_input_attr_get", dataset, name, what, sizeof what);
  if (!a) return cpli_fail(CPL_ERR_ARG, "%s: not found", what);
  if (a->n > n)
    return cpli_fail(CPL_ERR_ARG, "%s: has %zu elements, the buffer room for "
                     "%zu", what, a->n, n);
  if (a->n && !buf) return cpli_fail(CPL_ERR_ARG, "%s: buf is NULL", what);
  int same = H5Tequal(a->type, memtype);
  if (same < 0) return cpli_fail(CPL_ERR_ARG, "%s: memtype is not a datatype", what);
  if (same) {
    memcpy(buf, a->value, a->bytes);
    return CPL_OK;
  }
  if (!cpli_type_convertible(a->type, memtype))
    return cpli_fail(CPL_ERR_MISMATCH, "%s: HDF5 cannot convert %s to %s", what,
                     cpli_type_str(a->type, t1, sizeof t1),
                     cpli_type_str(memtype, t2, sizeof t2));
  char *tmp;
  CPLI_TRY(conv_alloc(a->type, memtype, a->n, what, &tmp));
  memcpy(tmp, a->value, a->bytes);
  return convert_into(a->type, memtype, a->n, tmp, buf, what);
}
