/*
 * Producer side of a port: steps, puts, flow control, transfers.
 *
 * end_step, on every rank of the component, in this order:
 *  1. encode this rank's blocks; root collects the credits that arrived;
 *  2. one intra-group allgather of a small record per rank (did my
 *     description change; root's credits and detaches), so every rank
 *     takes the same decisions from here on;
 *  3. if any description changed, an allgatherv of them; every rank
 *     merges and checks the same way (tiling, both ports' declarations);
 *     a failure goes to the consumers as an ERROR header;
 *  4. per link: the policy, then one transfer per credit; under `all` a
 *     full queue waits for a credit (root waits, then broadcasts); under
 *     `latest` the transfer is only posted, and completes at a later
 *     end_step (queue.c, "steps in flight");
 *  5. steps still queued get a private copy of this rank's blocks, since
 *     the caller's buffers are reused after end_step returns.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/trace.h"
#include "data/output.h"
#include "data/report.h"
#include "data/slab.h"

#define chan(o, ol) cpli_out_chan(o, ol)

static const char *port_name(const cpl_output *o, char *buf, size_t n) {
  snprintf(buf, n, "%s.%s", o->comp->name, o->port->name);
  return buf;
}

/* Once a collective step failed, the port is unusable: say why again. */
/* The first rank r > 0 whose value (v[r * stride]) is not rank 0's, or 0:
 * what a collective call's ranks must agree on, gathered. */
static int rank_differing(const int64_t *v, int size, size_t stride) {
  for (int r = 1; r < size; r++)
    if (v[(size_t)r * stride] != v[0]) return r;
  return 0;
}

static int check_usable(cpl_output *o, const char *call) {
  if (!o) return cpli_fail(CPL_ERR_ARG, "%s: output is NULL", call);
  if (o->failed) return cpli_fail(o->failed, "%s: port failed earlier: %s", call, o->fail_msg);
  return CPL_OK;
}

static int fail_port(cpl_output *o, int rc) {
  o->failed = rc;
  snprintf(o->fail_msg, sizeof o->fail_msg, "%s", cpl_last_error());
  return rc;
}

/* -------------------------------------------------------------- open */

int cpl_output_open(cpl_context *ctx, const char *port, cpl_output **out) {
  CPLI_TRY(cpli_check_null("cpl_output_open", 3, "ctx", (const void *)ctx, "port",
                           (const void *)port, "out", (const void *)out));
  *out = NULL;
  const cpli_component *me = &ctx->wf->comps[ctx->comp];
  int pi = cpli_wf_port_index(me, port);
  if (pi < 0 || !me->ports[pi].output)
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_output_open: component \"%s\" has no "
                     "output port \"%s\"%s",
                     me->name, port, pi >= 0 ? " (it is an input)" : "");
  cpli_data_state *s;
  CPLI_TRY(cpli_data_get(ctx, &s));
  for (int e = 0; e < ctx->nends; e++)
    if (ctx->ends[e].port == pi && (s->chan[e].output_open || s->chan[e].eos_sent))
      return cpli_fail(CPL_ERR_STATE, "cpl_output_open: port %s.%s is %s", me->name, port,
                       s->chan[e].output_open
                           ? "already open"
                           : "closed: its consumers had the end of stream (a port opens once)");
  cpl_output *o = calloc(1, sizeof *o);
  if (!o) return cpli_fail(CPL_ERR_NOMEM, "cpl_output_open: out of memory");
  o->ctx = ctx;
  o->comp = me;
  o->port = &me->ports[pi];
  o->comm = ctx->comm;
  MPI_Comm_rank(o->comm, &o->rank);
  MPI_Comm_size(o->comm, &o->size);
  o->step = -1;
  o->timeout = 1;
  o->links = calloc((size_t)(ctx->nends ? ctx->nends : 1), sizeof *o->links);
  if (!o->links || cpli_data_track(ctx, o, NULL) != CPL_OK) {
    free(o->links);
    free(o);
    return cpli_fail(CPL_ERR_NOMEM, "cpl_output_open: out of memory");
  }
  for (int e = 0; e < ctx->nends; e++) {
    if (ctx->ends[e].port != pi) continue;
    olink *ol = &o->links[o->nl++];
    ol->end = e;
    ol->l = &ctx->wf->links[ctx->ends[e].link];
    ol->desc_sent = -1;
    ol->last_step = -1;
    ol->fly.hdr_req = MPI_REQUEST_NULL;
    if (ol->l->timeout > o->timeout) o->timeout = ol->l->timeout;
    s->chan[e].output_open = 1;
  }
  if (o->nl == 0 && o->rank == 0) /* legal, but never silent */
    fprintf(stderr,
            "coupler: port %s.%s has no link in %s: its steps go "
            "nowhere\n",
            me->name, port, ctx->wf->path);
  *out = o;
  return CPL_OK;
}

/* -------------------------------------------------------------- puts */

int cpl_output_begin_step(cpl_output *o, long step) {
  CPLI_TRY(check_usable(o, "cpl_output_begin_step"));
  char pn[200];
  if (o->in_step)
    return cpli_fail(CPL_ERR_STATE,
                     "cpl_output_begin_step: port %s: step "
                     "%ld is still open (call cpl_output_end_step)",
                     port_name(o, pn, sizeof pn), o->step);
  if (step < -1 || (step >= 0 && step <= o->step && !o->serving))
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_output_begin_step: port %s: step %ld "
                     "must be -1 (next) or larger than the previous step %ld",
                     port_name(o, pn, sizeof pn), step, o->step);
  if (step == -1 && o->step == LONG_MAX) /* consumers see step numbers >= 0 */
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_output_begin_step: port %s: step %ld is the last step number there "
                     "is; -1 (next) has no step to number",
                     port_name(o, pn, sizeof pn), o->step);
  o->step = step < 0 ? o->step + 1 : step;
  o->in_step = 1;
  cpli_flights_progress(o); /* steps in flight move while the caller computes */
  return CPL_OK;
}

static put *find_put(cpl_output *o, const char *name) {
  const uint64_t h = cpli_name_hash(name);
  size_t probe = 0;
  for (int k; (k = cpli_index_next(&o->put_names, h, &probe)) >= 0;)
    if (!strcmp(o->puts[k].name, name)) return &o->puts[k];
  return NULL;
}

/* Checks and records one put; the reasons it fails without context
 * (cpl_output_put adds it, only then: formatting it on every call cost
 * the many-dataset step a tenth of its instructions). */
static int put_one(cpl_output *o, const char *name, hid_t type, int rank, const hsize_t dims[],
                   const hsize_t start[], const hsize_t count[], const void *data) {
  char b1[200], b2[200];
  if (find_put(o, name)) return cpli_fail(CPL_ERR_ARG, "put twice in one step");
  if (o->nputs >= CPLI_DATASETS_MAX)
    return cpli_fail(CPL_ERR_UNSUPPORTED, "a step carries at most %d datasets", CPLI_DATASETS_MAX);
  if (rank < 1 || rank > CPL_MAX_RANK)
    return cpli_fail(CPL_ERR_ARG, "rank %d is not in 1..%d", rank, CPL_MAX_RANK);
  if (!dims || !start || !count)
    return cpli_fail(CPL_ERR_ARG, "dims, start and count must not be NULL");
  /* Steps mostly put a few types many times: a type equal to the last
   * one recorded is checked already and shares its copy (H5Tcopy, its
   * H5Tclose and the check were half of what a put cost). Atomic types
   * only, which H5Tequal compares whole (desc.c, encode_type). */
  const int same =
      o->put_type > 0 && H5Iget_type(type) == H5I_DATATYPE && H5Tequal(o->put_type, type) > 0;
  if (!same) CPLI_TRY(cpli_type_check(type, NULL));
  uint64_t vol;
  if (!cpli_box_inside(rank, dims, start, count))
    return cpli_fail(CPL_ERR_ARG, "block %s lies outside the global array %s",
                     cpli_box_str(rank, start, count, b1, sizeof b1),
                     cpli_dims_str(rank, dims, b2, sizeof b2));
  if (cpli_box_volume(rank, dims, &vol) != 0)
    return cpli_fail(CPL_ERR_ARG, "the product of the dims overflows 64 bits");
  cpli_box_volume(rank, count, &vol);
  if (vol > 0 && !data)
    return cpli_fail(CPL_ERR_ARG, "data is NULL for a block of %llu elements",
                     (unsigned long long)vol);
  if (o->nputs == o->capputs) {
    int cap = o->capputs ? 2 * o->capputs : 8;
    put *v = realloc(o->puts, (size_t)cap * sizeof *v);
    if (!v) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
    o->puts = v;
    o->capputs = cap;
  }
  put *p = &o->puts[o->nputs];
  hid_t t = same && H5Iinc_ref(o->put_type) > 0 ? o->put_type : H5Tcopy(type);
  *p = (put){.rank = rank, .data = data, .name = strdup(name), .type = t};
  if (!p->name || p->type < 0 ||
      cpli_index_add(&o->put_names, cpli_name_hash(name), o->nputs) < 0) {
    free(p->name);
    if (p->type >= 0) H5Tclose(p->type);
    return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  }
  if (t != o->put_type) {
    const H5T_class_t c = H5Tget_class(t);
    if ((c == H5T_INTEGER || c == H5T_FLOAT || c == H5T_STRING || c == H5T_BITFIELD) &&
        H5Iinc_ref(t) > 0) {
      if (o->put_type > 0) H5Tclose(o->put_type);
      o->put_type = t;
    }
  }
  size_t n = (size_t)rank * sizeof(hsize_t);
  memcpy(p->dims, dims, n);
  memcpy(p->start, start, n);
  memcpy(p->count, count, n);
  o->nputs++;
  return CPL_OK;
}

/* No step open or a bad name: said with the port (formatted only now). */
CPLI_COLD static int put_refused(cpl_output *o, const char *name) {
  char pn[200];
  port_name(o, pn, sizeof pn);
  if (!o->in_step)
    return cpli_fail(CPL_ERR_STATE,
                     "cpl_output_put: port %s: no step is open (call cpl_output_begin_step)", pn);
  return cpli_fail(CPL_ERR_ARG, "cpl_output_put: port %s: bad dataset name \"%.255s\" %s", pn,
                   name ? name : "(null)", CPLI_NAME_RULE);
}

CPLI_COLD static void put_failed(cpl_output *o, const char *name) {
  char pn[200], what[400];
  snprintf(what, sizeof what, "cpl_output_put: port %s, step %ld, dataset \"%s\"",
           port_name(o, pn, sizeof pn), o->step, name);
  cpli_error_prefix("%s: ", what);
}

int cpl_output_put(cpl_output *o, const char *name, hid_t type, int rank, const hsize_t dims[],
                   const hsize_t start[], const hsize_t count[], const void *data) {
  CPLI_H5_HELD; /* the type is checked and copied */
  CPLI_TRY(check_usable(o, "cpl_output_put"));
  if (!o->in_step || !cpli_name_ok(name)) return put_refused(o, name);
  const int rc = put_one(o, name, type, rank, dims, start, count, data);
  if (rc != CPL_OK) put_failed(o, name);
  return rc;
}

/* Why cpl_output_attr refuses its arguments (formatted only now). */
CPLI_COLD static int attr_refused(cpl_output *o, const char *dataset, const char *name, size_t n,
                                  const void *value) {
  char pn[200];
  port_name(o, pn, sizeof pn);
  if (!o->in_step) return cpli_fail(CPL_ERR_STATE, "cpl_output_attr: port %s: no step is open", pn);
  if (!cpli_name_ok(name))
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_output_attr: port %s, step %ld: bad attribute name \"%.255s\" %s", pn,
                     o->step, name ? name : "(null)", CPLI_NAME_RULE);
  if (n > 0 && !value)
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_output_attr: port %s, step %ld, attribute \"%s\": value is NULL "
                     "for %zu elements",
                     pn, o->step, name, n);
  return cpli_fail(CPL_ERR_ARG,
                   "cpl_output_attr: port %s, step %ld: attribute \"%s\" of dataset \"%s\", "
                   "which this rank has not put in this step",
                   pn, o->step, name, dataset);
}

int cpl_output_attr(cpl_output *o, const char *dataset, const char *name, hid_t type, size_t n,
                    const void *value) {
  CPLI_TRY(check_usable(o, "cpl_output_attr"));
  if (!o->in_step || !cpli_name_ok(name) || (n > 0 && !value) || (dataset && !find_put(o, dataset)))
    return attr_refused(o, dataset, name, n, value);
  char pn[200];
  int rc = cpli_type_check(type, NULL);
  if (rc != CPL_OK) /* said as cpli_attrs_set says its reasons */
    cpli_error_prefix("attribute \"%s\": ", name);
  else rc = cpli_attrs_set(&o->attrs, dataset ? dataset : "", name, type, n, value);
  if (rc != CPL_OK)
    cpli_error_prefix("cpl_output_attr: port %s, step %ld%s%s%s: ", port_name(o, pn, sizeof pn),
                      o->step, dataset ? ", dataset \"" : "", dataset ? dataset : "",
                      dataset ? "\"" : "");
  return rc;
}

/* ---------------------------------------------------------- end_step */

/* This rank's blocks as a one-block description, encoded. */
static int encode_local(cpl_output *o, cpli_wbuf *w) {
  cpli_desc *d = cpli_desc_new(1);
  if (!d) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  int rc = CPL_OK;
  for (int i = 0; i < o->nputs && rc == CPL_OK; i++) {
    put *p = &o->puts[i];
    int k = cpli_desc_add(d, p->name, p->type, p->rank, p->dims);
    if (k < 0) {
      rc = k == CPLI_DESC_FULL ? cpli_fail(CPL_ERR_UNSUPPORTED,
                                           "a step carries at most %d datasets", CPLI_DATASETS_MAX)
                               : cpli_fail(CPL_ERR_NOMEM, "out of memory");
      break;
    }
    memcpy(d->d[k].start, p->start, (size_t)p->rank * sizeof(hsize_t));
    memcpy(d->d[k].count, p->count, (size_t)p->rank * sizeof(hsize_t));
  }
  if (rc == CPL_OK) rc = cpli_desc_encode(d, w);
  cpli_desc_unref(d);
  return rc;
}

/* Steps 2-3: agree on credits and on the description. `changed` < 0: this
 * rank failed to encode its blocks, with status -changed. */
static int agree(cpl_output *o, int changed, size_t len, const unsigned char *blob) {
  /* Per rank: changed, description length, the root's status, the step
   * number, then the root's view of the links. A root that failed to read
   * the credits still joins the allgather, so the others fail now, not at
   * a timeout. */
  enum { HEAD = 5 };
  int n = HEAD + CPLI_LREC * o->nl;
  int64_t *rec = calloc((size_t)n * (size_t)o->size, sizeof *rec);
  if (!rec) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  int64_t *mine = rec + (size_t)o->rank * n;
  int rc = CPL_OK, root_rc = CPL_OK;
  mine[0] = changed;
  mine[1] = (int64_t)len;
  mine[3] = o->step;
  mine[4] = o->send_link;
  if (o->rank == 0) mine[2] = root_rc = cpli_links_poll(o, mine + HEAD);
  cpli_flights_record(o, mine + HEAD);
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = o->timeout;
  opt.label = o->port->name;
  opt.step = o->step;
  /* Waiting here for a rank held by a consumer is waiting too (wait_s). */
  double t0 = MPI_Wtime();
  rc = cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rec, n, MPI_INT64_T, o->comm, &opt);
  o->port_st.wait_s += MPI_Wtime() - t0;
  if (rc != CPL_OK) /* the engine names the port as its "link": say what this wait was */
    cpli_error_prefix("port %s.%s, step %ld: not every rank of \"%s\" reached the end of the step "
                      "(its %d ranks call begin_step and end_step alike; one may also be held "
                      "by a consumer): ",
                      o->comp->name, o->port->name, o->step, o->comp->name, o->size);
  if (rc == CPL_OK && rec[2] != CPL_OK) {
    if (o->rank == 0) rc = root_rc; /* its own message stands */
    else
      rc = cpli_fail((int)rec[2],
                     "port %s.%s, step %ld: rank 0 of this "
                     "component failed to read the consumers' credits (its "
                     "message says why)",
                     o->comp->name, o->port->name, o->step);
  } else if (root_rc != CPL_OK) {
    rc = root_rc;
  }
  int any = 0, bad = -1; /* bad: the first rank that failed to encode its blocks */
  for (int r = 0; rc == CPL_OK && r < o->size; r++) {
    any |= rec[(size_t)r * n] != 0;
    if (bad < 0 && rec[(size_t)r * n] < 0) bad = r;
  }
  /* Ranks that numbered the step differently would take different queue
   * decisions (requests by step number) and part in a collective. */
  int odd = rc == CPL_OK ? rank_differing(rec + 3, o->size, n) : 0;
  if (odd)
    rc = cpli_fail(CPL_ERR_MISMATCH,
                   "port %s.%s: the component's ranks began different steps: rank 0 step "
                   "%lld, rank %d step %lld (cpl_output_begin_step is collective, with the "
                   "same step number on every rank)",
                   o->comp->name, o->port->name, (long long)rec[3], odd,
                   (long long)rec[(size_t)odd * n + 3]);
  /* A step sent to different links would be half on each, header on one. */
  if (rc == CPL_OK && (odd = rank_differing(rec + 4, o->size, n)))
    rc = cpli_fail(CPL_ERR_MISMATCH,
                   "port %s.%s, step %ld: the component's ranks sent the step to different "
                   "links: rank 0 to link %lld, rank %d to link %lld (cpl_output_send is "
                   "collective, with the same link on every rank)",
                   o->comp->name, o->port->name, o->step, (long long)rec[4], odd,
                   (long long)rec[(size_t)odd * n + 4]);
  if (rc == CPL_OK) rc = cpli_links_adopt(o, rec + HEAD);
  if (rc == CPL_OK) rc = cpli_flights_settle(o, rec, n, HEAD);
  if (rc == CPL_OK && bad >= 0)
    rc = cpli_fail((int)-rec[(size_t)bad * n],
                   "port %s.%s, step %ld: rank %d of this component failed to describe its "
                   "blocks (its message says why)",
                   o->comp->name, o->port->name, o->step, bad);
  if (rc != CPL_OK || !any) {
    free(rec);
    return rc;
  }
  /* Someone's blocks changed: everyone merges everyone's. */
  int *counts = malloc(2 * (size_t)o->size * sizeof *counts);
  size_t *lens = malloc((size_t)o->size * sizeof *lens);
  const unsigned char **blobs = malloc((size_t)o->size * sizeof *blobs);
  unsigned char *all = NULL;
  size_t total = 0;
  for (int r = 0; r < o->size; r++) total += (size_t)rec[(size_t)r * n + 1];
  if (total > 0x7fffffff)
    rc = cpli_fail(CPL_ERR_UNSUPPORTED, "the descriptions of the port's "
                                        "datasets exceed 2 GiB");
  else if (!counts || !lens || !blobs || !(all = malloc(total ? total : 1)))
    rc = cpli_fail(CPL_ERR_NOMEM, "out of memory");
  if (rc == CPL_OK) {
    int off = 0;
    for (int r = 0; r < o->size; r++) {
      counts[r] = (int)rec[(size_t)r * n + 1];
      counts[o->size + r] = off;
      lens[r] = (size_t)counts[r];
      blobs[r] = all + off;
      off += counts[r];
    }
    rc = cpl_intra_allgatherv(blob, (int)len, MPI_BYTE, all, counts, counts + o->size, MPI_BYTE,
                              o->comm, &opt);
  }
  char where[300];
  snprintf(where, sizeof where, "port %s.%s, step %ld", o->comp->name, o->port->name, o->step);
  cpli_desc *m = NULL;
  if (rc == CPL_OK) rc = cpli_desc_merge(o->size, blobs, lens, where, &m);
  /* Declarations of this port and of every consumer's port. */
  if (rc == CPL_OK) rc = cpli_desc_check_port(m, o->comp, o->port, 1, where);
  for (int i = 0; rc == CPL_OK && i < o->nl; i++) {
    const cpli_link *l = o->links[i].l;
    const cpli_component *c = &o->ctx->wf->comps[l->to_comp];
    char w2[400];
    snprintf(w2, sizeof w2, "%s, link %s", where, l->label);
    rc = cpli_desc_check_port(m, c, &c->ports[l->to_port], 0, w2);
  }
  if (rc == CPL_OK) {
    m->version = ++o->versions;
    cpli_desc_unref(o->desc);
    o->desc = m;
  } else {
    cpli_desc_unref(m);
  }
  free(counts);
  free(lens);
  free(blobs);
  free(all);
  free(rec);
  return rc;
}

static void forget_put_type(cpl_output *o) {
  CPLI_H5_HELD;
  if (o->put_type > 0) H5Tclose(o->put_type);
  o->put_type = 0;
}

static void clear_puts(cpl_output *o) {
  CPLI_H5_HELD;
  for (int i = 0; i < o->nputs; i++) {
    free(o->puts[i].name);
    H5Tclose(o->puts[i].type);
  }
  o->nputs = 0;
  cpli_index_reset(&o->put_names);
  cpli_attrs_clear(&o->attrs);
}

/* The step as a queue entry pointing at the caller's blocks. */
static int make_step(cpl_output *o, pstep **out) {
  pstep *st = calloc(1, sizeof *st);
  const cpli_desc *d = o->desc;
  if (!st || !(st->block = calloc((size_t)(d->nd ? d->nd : 1), sizeof *st->block))) {
    free(st);
    return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  }
  st->step = o->step;
  st->ordinal = o->ordinal;
  st->t_queued = cpli_report_on(o->ctx) ? cpli_trace_now_us() : 0;
  st->desc = o->desc;
  o->desc->refs++;
  for (int k = 0; k < d->nd; k++) {
    const put *p = find_put(o, d->d[k].name);
    st->block[k] = p ? p->data : NULL;
    st->copy_bytes += d->d[k].bytes[o->rank];
  }
  int rc = o->rank == 0 ? cpli_attrs_encode(&o->attrs, &st->attrs) : CPL_OK;
  if (rc != CPL_OK) {
    cpli_desc_unref(st->desc);
    free(st->block);
    free(st);
    return rc;
  }
  st->refs = 1; /* the caller's, until end_step returns */
  *out = st;
  return CPL_OK;
}

/* The end of every step: agree on the description, then make the step.
 * On failure the consumers are told, and the port is over. */
static int finish_step(cpl_output *o, pstep **out) {
  o->in_step = 0;
  *out = NULL;
  cpli_wbuf w = {0};
  int lrc = encode_local(o, &w);
  char lmsg[1024] = "";
  if (lrc != CPL_OK) {
    snprintf(lmsg, sizeof lmsg, "%s", cpl_last_error());
    cpli_w_free(&w);
  }
  int changed = lrc != CPL_OK ? -lrc
                              : !o->desc || w.len != o->local.len ||
                                    (w.len && memcmp(w.p, o->local.p, w.len) != 0);
  /* A local failure must still take part in the agreement, or the other
   * ranks would hang; there it fails them all. Its own message stands. */
  int rc = agree(o, changed, w.len, w.p);
  if (lrc != CPL_OK)
    rc = cpli_fail(lrc, "port %s.%s, step %ld: %s", o->comp->name, o->port->name, o->step, lmsg);
  if (rc != CPL_OK) {
    cpli_queue_send_error(o, rc);
    cpli_w_free(&w);
    clear_puts(o);
    return fail_port(o, rc);
  }
  cpli_w_free(&o->local);
  o->local = w;
  rc = make_step(o, out);
  o->port_st.steps++;
  if (rc != CPL_OK) {
    cpli_queue_send_error(o, rc);
    clear_puts(o);
    return fail_port(o, rc);
  }
  return CPL_OK;
}

int cpl_output_end_step(cpl_output *o) {
  CPLI_TRY(check_usable(o, "cpl_output_end_step"));
  if (!o->in_step || o->serving)
    return cpli_fail(
        CPL_ERR_STATE, "cpl_output_end_step: port %s.%s: %s", o->comp->name, o->port->name,
        o->serving ? "a serving port sends steps with cpl_output_send" : "no step is open");
  pstep *st = NULL;
  o->send_link = -1;
  CPLI_TRY(finish_step(o, &st));
  int rc = CPL_OK;
  for (int i = 0; rc == CPL_OK && i < o->nl; i++) {
    olink *ol = &o->links[i];
    ol->st.steps++;
    /* A consumer gone, or a link ended (cpl_output_end_link): its
     * consumer has the end of stream, and asks for nothing more. */
    if (chan(o, ol)->detached || chan(o, ol)->eos_sent) {
      ol->st.undelivered++;
      continue;
    }
    if (o->ordinal % ol->l->every != 0) {
      ol->st.skipped++;
      continue;
    }
    pstep **q = realloc(ol->q, (size_t)(ol->qn + 1) * sizeof *q);
    if (!q) {
      rc = cpli_fail(CPL_ERR_NOMEM, "out of memory");
      break;
    }
    ol->q = q;
    ol->q[ol->qn++] = st;
    st->refs++;
    rc = cpli_queue_apply(o, i);
  }
  o->ordinal++;
  if (st) {
    /* Whatever is still queued outlives the caller's buffers. */
    if (rc == CPL_OK && st->refs > 1) rc = cpli_step_copy(o, st);
    cpli_step_unref(o, st);
  }
  clear_puts(o);
  if (rc != CPL_OK) {
    cpli_queue_send_error(o, rc); /* consumers must not wait for what will not come */
    return fail_port(o, rc);
  }
  return CPL_OK;
}

/* ------------------------------------------------------------- close */

int cpl_output_close(cpl_output *o) {
  if (!o) return CPL_OK;
  cpl_context *ctx = o->ctx;
  int rc = CPL_OK; /* a failure reported earlier is not reported again */
  char pn[200];
  port_name(o, pn, sizeof pn);
  if (!o->failed && o->in_step) {
    clear_puts(o);
    o->in_step = 0;
    rc = cpli_fail(CPL_ERR_STATE,
                   "cpl_output_close: port %s: step %ld was "
                   "never ended; it is not sent",
                   pn, o->step);
  }
  /* Deliver what is queued, then end the stream. A step left open stays
   * the error: a failure to deliver is said after it, not instead. */
  char open_msg[1024];
  snprintf(open_msg, sizeof open_msg, "%s", rc != CPL_OK ? cpl_last_error() : "");
  o->closing = !open_msg[0]; /* a drained link ends at once */
  for (int i = 0; i < o->nl && !o->failed; i++) {
    int r = cpli_queue_drain(o, i, 0);
    if (r != CPL_OK) {
      cpli_queue_send_error(o, r); /* as end_step: no consumer waits for what will not come */
      fail_port(o, r);
      if (rc == CPL_OK) rc = r;
      else cpli_error_prefix("%s; then, delivering the steps queued before it: ", open_msg);
      break;
    }
  }
  /* A step left open means the producer stopped inside it (an error, an
   * exit through cpl_finalize): its consumers get that, not an end of
   * stream that would make what they hold look complete. */
  if (open_msg[0] && !o->failed) {
    cpli_fail(CPL_ERR_STATE, "%s", open_msg);
    cpli_queue_send_error(o, CPL_ERR_STATE);
  }
  for (int i = 0; i < o->nl; i++) {
    olink *ol = &o->links[i];
    cpli_chan *ch = chan(o, ol);
    cpli_queue_drop(o, ol); /* only after a failure is anything left */
    if (!o->failed) {
      const int r = cpli_queue_end_link(o, ol);
      if (r != CPL_OK && rc == CPL_OK) rc = r;
    }
    ch->eos_sent = 1;
    ch->output_open = 0;
    cpli_report_flush(ctx, ol->l->label);
    const cpl_output_stats *s = &ol->st;
    /* Name only the losses there were: drops by latest blame no one. */
    char why[200] = "";
    int n = s->dropped ? snprintf(why, sizeof why, "%ld dropped by policy latest", s->dropped) : 0;
    if (s->undelivered)
      snprintf(why + n, sizeof why - (size_t)n, "%s%ld not taken: %s", n ? ", " : "",
               s->undelivered,
               o->failed   ? "the port failed"
               : ol->ended ? "the producer ended the link (cpl_output_end_link)"
                           : "the consumer closed its input early, or never opened it");
    if (o->rank == 0 && *why)
      fprintf(stderr, "coupler: link %s: %ld of %ld steps not delivered (%s)\n", ol->l->label,
              s->dropped + s->undelivered, s->steps, why);
  }
  cpli_data_untrack(ctx, o, NULL);
  clear_puts(o);
  forget_put_type(o);
  cpli_w_free(&o->local);
  free(o->batch);
  cpli_desc_unref(o->desc);
  free(o->puts);
  cpli_index_free(&o->put_names);
  for (int i = 0; i < o->nl; i++) {
    olink *ol = &o->links[i];
    free(ol->q);
    for (int j = 0; j < ol->nsels; j++) cpli_sel_free(&ol->sels[j]);
    free(ol->sels);
    cpli_rplan_free(&ol->plan);
  }
  free(o->links);
  free(o);
  return rc;
}

/* ------------------------------------------------------------- stats */

int cpl_output_link_count(const cpl_output *o, int *n) {
  CPLI_TRY(
      cpli_check_null("cpl_output_link_count", 2, "out", (const void *)o, "n", (const void *)n));
  *n = o->nl;
  return CPL_OK;
}

int cpl_output_link(const cpl_output *o, int i, cpl_link_end *le) {
  if (!o || !le) return cpli_fail(CPL_ERR_ARG, "cpl_output_link: %s is NULL", o ? "le" : "output");
  if (i < 0 || i >= o->nl)
    return cpli_fail(CPL_ERR_ARG, "cpl_output_link: port %s.%s has no link %d (it has %d)",
                     o->comp->name, o->port->name, i, o->nl);
  return cpl_context_link(o->ctx, o->links[i].end, le);
}

int cpl_output_stats_get(const cpl_output *o, int link, cpl_output_stats *st) {
  if (!o || !st)
    return cpli_fail(CPL_ERR_ARG, "cpl_output_stats_get: %s is NULL", o ? "st" : "output");
  if (link < -1 || link >= o->nl)
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_output_stats_get: port %s.%s has no link %d (links 0..%d, or -1 "
                     "for all)",
                     o->comp->name, o->port->name, link, o->nl - 1);
  if (link >= 0) {
    *st = o->links[link].st;
    st->queue_max = o->port_st.queue_max;
    st->bytes_max = o->port_st.bytes_max;
    return CPL_OK;
  }
  *st = o->port_st;
  for (int i = 0; i < o->nl; i++) {
    const cpl_output_stats *s = &o->links[i].st;
    st->delivered += s->delivered;
    st->dropped += s->dropped;
    st->skipped += s->skipped;
    st->undelivered += s->undelivered;
    st->wait_s += s->wait_s;
  }
  return CPL_OK;
}

/* ------------------------------------------------------------ serving */

int cpl_output_serve(cpl_output *o) {
  CPLI_TRY(check_usable(o, "cpl_output_serve"));
  if (o->in_step || o->port_st.steps > 0)
    return cpli_fail(CPL_ERR_STATE,
                     "cpl_output_serve: port %s.%s: call it "
                     "before the first step",
                     o->comp->name, o->port->name);
  o->serving = 1;
  return CPL_OK;
}

/* The link of a serving call, which must have a request pending. */
static int pending_link(cpl_output *o, int link, const char *call, olink **out) {
  CPLI_TRY(check_usable(o, call));
  if (!o->serving)
    return cpli_fail(CPL_ERR_STATE,
                     "%s: port %s.%s is not serving (call "
                     "cpl_output_serve after open)",
                     call, o->comp->name, o->port->name);
  if (link < 0 || link >= o->nl)
    return cpli_fail(CPL_ERR_ARG, "%s: port %s.%s has no link %d (it has %d)", call, o->comp->name,
                     o->port->name, link, o->nl);
  olink *ol = &o->links[link];
  cpli_chan *ch = chan(o, ol);
  if (ch->credits <= 0 || ch->detached || ch->eos_sent)
    return cpli_fail(CPL_ERR_STATE, "%s: link %s has no request pending", call, ol->l->label);
  *out = ol;
  return CPL_OK;
}

int cpl_output_requests(cpl_output *o, double seconds, long want[]) {
  CPLI_TRY(check_usable(o, "cpl_output_requests"));
  if (!o->serving || !want || !(seconds >= 0)) {
    char why[80] = "not serving (call cpl_output_serve)";
    if (o->serving && !want) snprintf(why, sizeof why, "want is NULL");
    else if (o->serving) snprintf(why, sizeof why, "wait %g s is not a number >= 0", seconds);
    return cpli_fail(CPL_ERR_ARG, "cpl_output_requests: port %s.%s: %s", o->comp->name,
                     o->port->name, why);
  }
  double t0 = MPI_Wtime();
  int rc = cpli_links_sync(o, -2, seconds);
  for (int i = 0; i < o->nl; i++) o->links[i].st.wait_s += MPI_Wtime() - t0;
  if (rc != CPL_OK) return fail_port(o, rc);
  for (int i = 0; i < o->nl; i++) {
    const cpli_chan *ch = chan(o, &o->links[i]);
    want[i] = ch->detached || ch->eos_sent ? CPL_REQ_GONE
              : ch->credits > 0            ? ch->want
                                           : CPL_REQ_NONE;
  }
  return CPL_OK;
}

int cpl_output_send(cpl_output *o, int link) {
  olink *ol;
  CPLI_TRY(pending_link(o, link, "cpl_output_send", &ol));
  if (!o->in_step)
    return cpli_fail(CPL_ERR_STATE,
                     "cpl_output_send: port %s.%s: no step "
                     "is open",
                     o->comp->name, o->port->name);
  /* A request for a step number is answered with that step: the consumer
   * takes what comes as the step it asked for. */
  const long want = chan(o, ol)->want;
  if (want >= 0 && o->step != want) {
    const long open = o->step;
    o->in_step = 0;
    clear_puts(o);
    return cpli_fail(CPL_ERR_ARG,
                     "cpl_output_send: port %s.%s: link %s asked for step %ld, the open step is "
                     "%ld (answer it with step %ld or cpl_output_refuse); step %ld is dropped, "
                     "the request still pending",
                     o->comp->name, o->port->name, ol->l->label, want, open, want, open);
  }
  pstep *st;
  o->send_link = link;
  CPLI_TRY(finish_step(o, &st));
  ol->st.steps++;
  if (chan(o, ol)->detached) { /* it closed while the step was agreed */
    ol->st.undelivered++;
    cpli_step_unref(o, st);
    clear_puts(o);
    return CPL_OK;
  }
  chan(o, ol)->credits--;
  int rc = cpli_step_send(o, ol, st); /* straight from the caller's buffers */
  cpli_step_unref(o, st);
  clear_puts(o);
  if (rc != CPL_OK) {
    cpli_queue_send_error(o, rc);
    return fail_port(o, rc);
  }
  return CPL_OK;
}

/* refuse and end_link act on rank 0's word alone (only it sends to the
 * consumer), while every rank updates the link's state: ranks naming
 * different links would part ways silently. They agree first, before any
 * rank checks the link on its own. */
static int ranks_name_one_link(cpl_output *o, int link, const char *call) {
  if (o->size == 1) return CPL_OK;
  int64_t *links = malloc(sizeof *links * (size_t)o->size);
  if (!links)
    return cpli_fail(CPL_ERR_NOMEM, "%s: port %s.%s: out of memory", call, o->comp->name,
                     o->port->name);
  links[o->rank] = link;
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = o->timeout;
  opt.label = o->port->name;
  opt.step = o->step;
  int rc =
      cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, links, 1, MPI_INT64_T, o->comm, &opt);
  if (rc != CPL_OK)
    cpli_error_prefix("%s: port %s.%s: not every rank of \"%s\" made the call (it is collective): ",
                      call, o->comp->name, o->port->name, o->comp->name);
  const int r = rc == CPL_OK ? rank_differing(links, o->size, 1) : 0;
  if (r)
    rc = cpli_fail(CPL_ERR_MISMATCH,
                   "%s: port %s.%s: the component's ranks named different links: rank 0 link "
                   "%lld, rank %d link %lld (the call is collective, with the same link on "
                   "every rank)",
                   call, o->comp->name, o->port->name, (long long)links[0], r, (long long)links[r]);
  free(links);
  if (rc != CPL_OK) {
    cpli_queue_send_error(o, rc); /* the consumers must not wait for an answer */
    return fail_port(o, rc);
  }
  return CPL_OK;
}

int cpl_output_refuse(cpl_output *o, int link, const char *why) {
  olink *ol;
  CPLI_TRY(check_usable(o, "cpl_output_refuse"));
  CPLI_TRY(ranks_name_one_link(o, link, "cpl_output_refuse"));
  CPLI_TRY(pending_link(o, link, "cpl_output_refuse", &ol));
  int rc = cpli_queue_send_missing(o, ol, why ? why : "step not held");
  return rc == CPL_OK ? CPL_OK : fail_port(o, rc);
}

int cpl_output_end_link(cpl_output *o, int link) {
  CPLI_TRY(check_usable(o, "cpl_output_end_link"));
  CPLI_TRY(ranks_name_one_link(o, link, "cpl_output_end_link"));
  if (link < 0 || link >= o->nl)
    return cpli_fail(CPL_ERR_ARG, "cpl_output_end_link: port %s.%s has no link %d (it has %d)",
                     o->comp->name, o->port->name, link, o->nl);
  olink *ol = &o->links[link];
  /* What is not sent from now on is the producer's choice, not a
   * consumer's early close (the reason close gives). */
  ol->ended |= !chan(o, ol)->eos_sent && !chan(o, ol)->detached;
  const int rc = cpli_queue_end_link(o, ol);
  return rc == CPL_OK ? CPL_OK : fail_port(o, rc);
}
