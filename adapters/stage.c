/*
 * The built-in staging service (kind: stage). It takes the steps of its one
 * input port and keeps the last `keep` of them, each stage rank only its
 * share of rows of every dataset (cpl_input_select_rows: the rows never
 * reach the other ranks), and serves every link of its output ports at that
 * consumer's own pace: the next step, the latest, or a step by number
 * (cpl_output_serve, cpl_output_requests, cpl_output_send). A full store
 * either holds the producer back (when_full: block) or drops its oldest step
 * (evict). With `drain`, every step is written to HDF5 as it arrives.
 *
 * Every decision (take a step, evict, answer, end) is made from what the
 * collective calls returned, never from a clock or a rank's own state, so
 * all stage ranks make the same calls in the same order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "adapters.h"
#include "builtin.h"
#include "core/error.h"
#include "data/data.h"
#include "h5step.h"
#include "h5util.h"
#include "workflow/model.h"

/* Polling: a short wait for the next input step while there is room, a
 * longer one for requests when only requests can make progress. */
#define WAIT_INPUT 0.005
#define WAIT_REQUESTS 0.02
#define LOG_FIRST 5   /* evictions warned about on stderr; the rest counted */
#define MAX_RUNS 1024 /* runs of received step numbers remembered */

/* Step numbers received, as arithmetic runs first, first + stride, ...: a
 * producer with a constant stride needs one run. Past MAX_RUNS the oldest
 * are forgotten (steps below `forgot` are then unknown). */
typedef struct step_run {
  long first, stride, n;
} step_run;

typedef struct kept_attr {
  char *name;
  hid_t type;
  size_t n;
  void *buf;
} kept_attr;

typedef struct kept_ds {
  char *name;
  hid_t type;
  int rank;
  hsize_t dims[CPL_MAX_RANK], start[CPL_MAX_RANK], count[CPL_MAX_RANK];
  void *rows; /* this rank's rows, the producer's type */
  kept_attr *attrs;
  int nattrs;
} kept_ds;

typedef struct kept_step {
  long step;
  kept_ds *ds;
  int nds;
  kept_attr *attrs; /* the step's own */
  int nattrs;
  size_t bytes; /* held by this rank for it */
} kept_step;

/* One link of one output port, as the stage serves it. */
typedef struct served {
  cpl_output *out;
  int index;            /* in its port's links                       */
  char label[300];      /* "relay.out->ana.in"                        */
  long last;            /* last step it received; -1: none            */
  long want;            /* its pending request, or CPL_REQ_NONE       */
  int ended;            /* end of stream sent, or the consumer left   */
  long sent, missed;    /* steps sent; evicted before it had them    */
  double idle, timeout; /* request-less polling after input end   */
} served;

typedef struct stage {
  const char *name;
  int rank, size;
  MPI_Comm comm;
  cpl_input *in;
  const char *in_port;
  char in_label[300];
  cpl_output **outs;
  const char **out_ports;
  int nout;
  long **wants; /* per port: one request slot per link */
  int *nlinks;
  served *links; /* all ports' links, port by port */
  int nserved;
  /* The store: ring of `keep` steps, oldest at head. */
  kept_step *kept;
  int keep, head, nkept;
  cpli_when_full when_full;
  int input_ended;
  cpl_flow_policy in_policy; /* of the input link: may it drop steps? */
  double in_timeout;         /* of the input link */
  double in_since;           /* agreed clock when the wait began; < 0: none */
  long in_polls;             /* empty polls of the input since then */
  double held_since;         /* rank 0's clock: store full since; < 0: not */
  int held_said;             /* the warning about it was printed */
  int in_allgather;          /* the input link forces delivery: allgather */
  step_run *runs;            /* received step numbers */
  int nruns;
  long forgot; /* steps below it: runs forgotten; -1: none */
  long first_in, last_in, steps_in, evicted;
  size_t held, held_max, bytes_in; /* bytes_in: received from the input */
  /* drain */
  const char *drain;
  char drain_where[1200];
  cpli_h5_steps h5;
} stage;

/* ------------------------------------------------------------ the store */

static kept_step *kept_at(stage *s, int i) { /* i = 0: the oldest */
  return &s->kept[(s->head + i) % s->keep];
}
static kept_step *oldest(stage *s) { return s->nkept ? kept_at(s, 0) : NULL; }
static kept_step *newest(stage *s) { return s->nkept ? kept_at(s, s->nkept - 1) : NULL; }

static void free_attrs(kept_attr *a, int n) {
  for (int i = 0; i < n; i++) {
    free(a[i].name);
    if (a[i].type >= 0) H5Tclose(a[i].type);
    free(a[i].buf);
  }
  free(a);
}

static void free_step(kept_step *k) {
  for (int i = 0; i < k->nds; i++) {
    kept_ds *d = &k->ds[i];
    free(d->name);
    if (d->type >= 0) H5Tclose(d->type);
    free(d->rows);
    free_attrs(d->attrs, d->nattrs);
  }
  free(k->ds);
  free_attrs(k->attrs, k->nattrs);
  memset(k, 0, sizeof *k);
}

static char *dup_str(const char *str) {
  size_t n = strlen(str) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, str, n);
  return p;
}

/* Copy the attributes of the current input step's `dataset` (NULL: the
 * step's). */
static int keep_attrs(stage *s, const char *dataset, kept_attr **out, int *nout, size_t *bytes) {
  int n = 0;
  CPLI_TRY(cpl_input_attr_count(s->in, dataset, &n));
  kept_attr *v = calloc((size_t)(n ? n : 1), sizeof *v);
  if (!v) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  for (int i = 0; i < n; i++) v[i].type = -1;
  *out = v;
  *nout = n;
  for (int i = 0; i < n; i++) {
    cpl_attr_info a;
    CPLI_TRY(cpl_input_attr(s->in, dataset, i, &a));
    size_t b = H5Tget_size(a.type) * a.n;
    v[i].name = dup_str(a.name);
    v[i].type = H5Tcopy(a.type);
    v[i].n = a.n;
    v[i].buf = malloc(b ? b : 1);
    if (!v[i].name || v[i].type < 0 || !v[i].buf)
      return cpli_fail(CPL_ERR_NOMEM,
                       "attribute \"%s\": out of memory "
                       "(%zu bytes)",
                       a.name, b);
    int rc = cpl_input_attr_get(s->in, dataset, a.name, a.type, a.n, v[i].buf);
    if (rc != CPL_OK) {
      cpli_error_prefix("attribute \"%s\": ", a.name);
      return rc;
    }
    *bytes += b;
  }
  return CPL_OK;
}

/* Copy this rank's rows of dataset i of the current input step. */
static int keep_dataset(stage *s, int i, kept_ds *d, size_t *bytes) {
  cpl_dataset_info info;
  CPLI_TRY(cpl_input_dataset(s->in, i, &info));
  d->type = -1;
  d->name = dup_str(info.name);
  if (!d->name) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  if ((d->type = H5Tcopy(info.type)) < 0)
    return cpli_fail(CPL_ERR_HDF5, "dataset \"%s\": cannot copy its type", info.name);
  d->rank = info.rank;
  memcpy(d->dims, info.dims, (size_t)info.rank * sizeof *d->dims);
  memcpy(d->count, info.dims, (size_t)info.rank * sizeof *d->count);
  cpl_rows_part(info.dims[0], s->rank, s->size, &d->start[0], &d->count[0]);
  size_t b;
  int rc = cpli_block_bytes(d->rank, d->count, H5Tget_size(info.type), info.name, &b);
  if (rc == CPL_OK && !(d->rows = malloc(b ? b : 1)))
    rc = cpli_fail(CPL_ERR_NOMEM, "out of memory (%zu bytes)", b);
  if (rc == CPL_OK && b)
    rc = cpl_input_get(s->in, info.name, info.type, d->start, d->count, d->rows);
  if (rc == CPL_OK) {
    *bytes += b;
    rc = keep_attrs(s, info.name, &d->attrs, &d->nattrs, bytes);
  }
  if (rc != CPL_OK) cpli_error_prefix("dataset \"%s\": ", info.name);
  return rc;
}

static int keep_step(stage *s, long step, kept_step *k) {
  int nds = 0;
  k->step = step;
  CPLI_TRY(cpl_input_dataset_count(s->in, &nds));
  k->ds = calloc((size_t)(nds ? nds : 1), sizeof *k->ds);
  if (!k->ds) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  k->nds = nds;
  for (int i = 0; i < nds; i++) k->ds[i].type = -1;
  for (int i = 0; i < nds; i++) CPLI_TRY(keep_dataset(s, i, &k->ds[i], &k->bytes));
  return keep_attrs(s, NULL, &k->attrs, &k->nattrs, &k->bytes);
}

/* Does link l still want `step`? Not if it ended, received that step or a
 * later one, or asked for a later one by number. */
static int wants(const served *l, long step) {
  return !l->ended && l->last < step && !(l->want >= 0 && l->want > step);
}

static int needed(const stage *s, long step) {
  for (int i = 0; i < s->nserved; i++)
    if (wants(&s->links[i], step)) return 1;
  return 0;
}

/* Drop the oldest kept step to make room. Block mode drops only steps no
 * link needs; in evict mode it may still be wanted: then it is evicted,
 * counted and logged for every link that had not had it. */
static void drop_oldest(stage *s) {
  kept_step *k = oldest(s);
  char who[600] = "";
  size_t o = 0;
  int lost = 0;
  for (int i = 0; i < s->nserved; i++) {
    served *l = &s->links[i];
    if (!wants(l, k->step)) continue;
    l->missed++;
    lost = 1;
    if (o < sizeof who)
      o += (size_t)snprintf(who + o, sizeof who - o, "%s%s", o ? ", " : "", l->label);
  }
  /* A step every link already had (or moved past) is released, as in block
   * mode: only a loss is an eviction worth a warning and a count. */
  if (s->when_full == CPLI_FULL_EVICT && lost) {
    s->evicted++;
    if (s->rank == 0 && s->evicted <= LOG_FIRST)
      fprintf(stderr,
              "cpl-component[%s]: warning: stage full (keep %d): "
              "evicted step %ld, not yet read by %s%s%s\n",
              s->name, s->keep, k->step, who, s->drain ? " (it is in the drain file)" : "",
              s->evicted == LOG_FIRST ? "; further evictions are counted "
                                        "(CPL_VERBOSE=2 lists them)"
                                      : "");
    else
      cpli_report(2, s->name, s->rank, "stage: evicted step %ld, not yet read by %s", k->step, who);
  }
  s->held -= k->bytes;
  free_step(k);
  s->head = (s->head + 1) % s->keep;
  s->nkept--;
}

/* Room for one more input step? Block mode: only when the oldest kept step
 * is no longer needed by any link. */
static int has_room(stage *s) {
  if (s->nkept < s->keep || s->when_full == CPLI_FULL_EVICT) return 1;
  return !needed(s, oldest(s)->step);
}

/* Remember that `step` (larger than any before) was received. */
static void note_received(stage *s, long step) {
  step_run *r = s->nruns ? &s->runs[s->nruns - 1] : NULL;
  if (r && r->n == 1) {
    r->stride = step - r->first;
    r->n = 2;
    return;
  }
  if (r && step == r->first + r->stride * r->n) {
    r->n++;
    return;
  }
  if (s->nruns == MAX_RUNS) { /* forget the oldest half */
    s->forgot = s->runs[MAX_RUNS / 2].first;
    memmove(s->runs, s->runs + MAX_RUNS / 2, (MAX_RUNS - MAX_RUNS / 2) * sizeof *s->runs);
    s->nruns -= MAX_RUNS / 2;
  }
  s->runs[s->nruns++] = (step_run){step, 1, 1};
}

/* 1: `step` was received; 0: it was not; -1: unknown (forgotten). */
static int was_received(const stage *s, long step) {
  if (s->forgot >= 0 && step < s->forgot) return -1;
  for (int i = 0; i < s->nruns; i++) {
    const step_run *r = &s->runs[i];
    if (step >= r->first && step <= r->first + r->stride * (r->n - 1) &&
        (step - r->first) % r->stride == 0)
      return 1;
  }
  return 0;
}

/* Take the step begin_step/try_step just opened: store it, drain it. */
static int take_step(stage *s, long step) {
  if (s->nkept == s->keep) drop_oldest(s);
  kept_step *k = kept_at(s, s->nkept);
  int rc = keep_step(s, step, k);
  s->nkept++; /* even half made: freed with the store */
  s->held += k->bytes;
  if (s->held > s->held_max) s->held_max = s->held;
  if (rc == CPL_OK && s->drain) {
    const void **rows = calloc((size_t)(k->nds ? k->nds : 1), sizeof *rows);
    if (!rows) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
    for (int i = 0; i < k->nds; i++) rows[i] = k->ds[i].rows;
    rc = cpli_h5_write_step(&s->h5, s->h5.file, "", s->in_label, s->in, step, rows);
    free(rows);
    if (rc != CPL_OK) cpli_error_prefix("drain file %s: ", s->drain_where);
  }
  if (rc == CPL_OK) rc = cpl_input_end_step(s->in);
  if (rc != CPL_OK) return rc;
  if (s->steps_in++ == 0) s->first_in = step;
  s->last_in = step;
  note_received(s, step);
  return CPL_OK;
}

/* ------------------------------------------------------------- serving */

static int put_attrs(cpl_output *out, const char *dataset, const kept_attr *a, int n) {
  for (int i = 0; i < n; i++)
    CPLI_TRY(cpl_output_attr(out, dataset, a[i].name, a[i].type, a[i].n, a[i].buf));
  return CPL_OK;
}

/* Build kept step k on l's port and send it to l alone. */
static int send_step(stage *s, served *l, const kept_step *k) {
  int rc = cpl_output_begin_step(l->out, k->step);
  for (int i = 0; rc == CPL_OK && i < k->nds; i++) {
    const kept_ds *d = &k->ds[i];
    rc = cpl_output_put(l->out, d->name, d->type, d->rank, d->dims, d->start, d->count, d->rows);
    if (rc == CPL_OK) rc = put_attrs(l->out, d->name, d->attrs, d->nattrs);
    if (rc != CPL_OK) cpli_error_prefix("dataset \"%s\": ", d->name);
  }
  if (rc == CPL_OK) rc = put_attrs(l->out, NULL, k->attrs, k->nattrs);
  if (rc == CPL_OK) rc = cpl_output_send(l->out, l->index);
  if (rc != CPL_OK) return rc;
  l->last = k->step;
  l->sent++;
  cpli_report(2, s->name, s->rank, "stage: sent step %ld to %s", k->step, l->label);
  return CPL_OK;
}

static kept_step *find_step(stage *s, long step) {
  for (int i = 0; i < s->nkept; i++)
    if (kept_at(s, i)->step == step) return kept_at(s, i);
  return NULL;
}

/* Step `want` is not kept and will not come: say what is. */
static int refuse(stage *s, served *l, long want) {
  char why[1600], held[80] = "no step";
  int o = 0;
  if (s->nkept) snprintf(held, sizeof held, "steps %ld..%ld", oldest(s)->step, newest(s)->step);
  o = snprintf(why, sizeof why,
               "step %ld is not held by stage \"%s\": it "
               "holds %s (keep %d)",
               want, s->name, held, s->keep);
  if (s->steps_in == 0)
    o += snprintf(why + o, sizeof why - (size_t)o,
                  "; the stream ended "
                  "before any step");
  else if (want < s->first_in)
    o += snprintf(why + o, sizeof why - (size_t)o,
                  "; its first step was "
                  "%ld",
                  s->first_in);
  else if (want > s->last_in)
    o += snprintf(why + o, sizeof why - (size_t)o,
                  "; the stream ended at "
                  "step %ld",
                  s->last_in);
  else if (!find_step(s, want) && was_received(s, want) == 0)
    o += snprintf(why + o, sizeof why - (size_t)o,
                  s->in_policy == CPL_POLICY_ALL
                      ? "; the producer made no step %ld"
                      : "; the stage never received step %ld (the producer made none, or "
                        "the input link's policy dropped it)",
                  want);
  else if (want < oldest(s)->step && s->drain && was_received(s, want) < 0)
    o += snprintf(why + o, sizeof why - (size_t)o,
                  "; older steps were %s; every step the stage received is in its drain "
                  "file %s (group step_%06ld, if step %ld was made)",
                  s->when_full == CPLI_FULL_EVICT ? "evicted" : "released", s->drain_where, want,
                  want);
  else if (want < oldest(s)->step && !s->drain)
    o += snprintf(why + o, sizeof why - (size_t)o, "; older steps were %s",
                  s->when_full == CPLI_FULL_EVICT ? "evicted" : "released");
  else if (want < oldest(s)->step)
    o += snprintf(why + o, sizeof why - (size_t)o,
                  "; older steps were %s; "
                  "every step the stage received is in its drain file %s "
                  "(group step_%06ld)",
                  s->when_full == CPLI_FULL_EVICT ? "evicted" : "released", s->drain_where, want);
  else
    o += snprintf(why + o, sizeof why - (size_t)o,
                  "; the producer made no "
                  "step %ld",
                  want);
  cpli_report(2, s->name, s->rank, "stage: refused %s: %s", l->label, why);
  return cpl_output_refuse(l->out, l->index, why);
}

static int end_link(stage *s, served *l) {
  l->ended = 1;
  cpli_report(2, s->name, s->rank, "stage: end of stream for %s", l->label);
  return cpl_output_end_link(l->out, l->index);
}

/* Answer l's pending request if it can be; *did says whether it was. */
static int answer(stage *s, served *l, int *did) {
  const long want = l->want;
  kept_step *k = NULL;
  *did = 0;
  if (want == CPL_REQ_NONE) return CPL_OK;
  if (want == CPL_REQ_GONE) { /* the consumer closed its input */
    l->ended = *did = 1;
    /* mark the link done, or every later poll returns at once for it */
    return cpl_output_end_link(l->out, l->index);
  }
  if (want == CPL_STEP_NEXT) {
    for (int i = 0; i < s->nkept && !k; i++)
      if (kept_at(s, i)->step > l->last) k = kept_at(s, i);
  } else if (want == CPL_STEP_LATEST) {
    if (s->nkept && newest(s)->step > l->last) k = newest(s);
  } else if (want >= 0) {
    k = find_step(s, want);
    /* A step not made yet may still come while the input lives. */
    const int may_come = !s->input_ended && (s->steps_in == 0 || want > s->last_in);
    if (!k && !may_come) {
      *did = 1;
      l->want = CPL_REQ_NONE;
      return refuse(s, l, want);
    }
  } else {
    return cpli_fail(CPL_ERR_INTERNAL, "link %s: request %ld is no step", l->label, want);
  }
  if (k) {
    *did = 1;
    l->want = CPL_REQ_NONE;
    return send_step(s, l, k);
  }
  if (s->input_ended && want < 0) { /* nothing newer will come */
    *did = 1;
    l->want = CPL_REQ_NONE;
    return end_link(s, l);
  }
  return CPL_OK; /* stays pending */
}

/* Poll every port with links still open; answer what can be answered.
 * *open: links not ended; *did: anything answered. */
static int serve(stage *s, double wait, int *open, int *did) {
  *open = *did = 0;
  served *l = s->links;
  for (int p = 0; p < s->nout; l += s->nlinks[p], p++) {
    int live = 0;
    for (int j = 0; j < s->nlinks[p]; j++) live += !l[j].ended;
    if (!live) continue;
    long *want = s->wants[p];
    int rc = cpl_output_requests(s->outs[p], wait, want);
    if (rc == CPL_ERR_TIMEOUT) rc = CPL_OK; /* no request: not a failure */
    if (rc != CPL_OK) {
      cpli_error_prefix("output port \"%s\": polling requests: ", s->out_ports[p]);
      return rc;
    }
    /* The poll waited its full `wait` only if no live link had a request. */
    double waited = wait;
    for (int j = 0; j < s->nlinks[p]; j++)
      if (!l[j].ended && want[j] != CPL_REQ_NONE) waited = 0;
    for (int j = 0; j < s->nlinks[p]; j++) {
      served *lj = &l[j];
      if (lj->ended) continue;
      lj->want = want[j];
      int done = 0;
      rc = answer(s, lj, &done);
      if (rc != CPL_OK) {
        cpli_error_prefix("link %s: ", lj->label);
        return rc;
      }
      *did |= done;
      /* After the input ended, a consumer that never asks again is dead:
       * its link's timeout, counted in polling time (the same on every
       * rank), not in clock time. */
      if (s->input_ended && !done && lj->want == CPL_REQ_NONE && (lj->idle += waited) > lj->timeout)
        return cpli_fail(CPL_ERR_TIMEOUT,
                         "link %s: no request from the "
                         "consumer for %g s after the stage's input ended "
                         "(timeout %g s); it received %ld steps, the last "
                         "%ld",
                         lj->label, lj->idle, lj->timeout, lj->sent, lj->last);
      if (done) lj->idle = 0;
      *open += !lj->ended;
    }
  }
  return CPL_OK;
}

/* ---------------------------------------------------------- set-up, end */

/* Exactly one input link; any other shape is a configuration error. */
static int find_input(cpl_context *ctx, stage *s) {
  int nlinks = 0, nin = 0;
  char list[512] = "";
  size_t o = 0;
  CPLI_TRY(cpl_context_link_count(ctx, &nlinks));
  for (int i = 0; i < nlinks; i++) {
    cpl_link_end e;
    CPLI_TRY(cpl_context_link(ctx, i, &e));
    if (e.role != CPL_RECEIVER) continue;
    nin++;
    s->in_port = e.port;
    cpl_link_info li;
    CPLI_TRY(cpl_workflow_link(cpl_context_workflow(ctx), e.link, &li));
    s->in_policy = li.policy;
    s->in_timeout = li.timeout;
    s->in_allgather = cpl_context_workflow(ctx)->links[e.link].delivery == CPLI_DELIVERY_ALLGATHER;
    snprintf(s->in_label, sizeof s->in_label, "%s.%s->%s.%s", e.peer_component, e.peer_port,
             s->name, e.port);
    if (o < sizeof list)
      o += (size_t)snprintf(list + o, sizeof list - o, "%s%s.%s->%s", nin > 1 ? ", " : "",
                            e.peer_component, e.peer_port, e.port);
  }
  if (nin != 1)
    return cpli_fail(CPL_ERR_CONFIG,
                     "stage \"%s\" needs exactly one input "
                     "link (one input port, one producer), but has %d%s%s%s",
                     s->name, nin, nin ? " (" : "", list, nin ? ")" : "");
  return CPL_OK;
}

/* Each output port serves its links; one `served` per link. */
static int open_outputs(cpl_context *ctx, stage *s) {
  const cpl_workflow *wf = cpl_context_workflow(ctx);
  s->outs = calloc((size_t)s->nout, sizeof *s->outs);
  s->wants = calloc((size_t)s->nout, sizeof *s->wants);
  s->nlinks = calloc((size_t)s->nout, sizeof *s->nlinks);
  if (!s->outs || !s->wants || !s->nlinks) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  int total = 0;
  for (int p = 0; p < s->nout; p++) {
    int rc = cpl_output_open(ctx, s->out_ports[p], &s->outs[p]);
    if (rc == CPL_OK) rc = cpl_output_serve(s->outs[p]);
    if (rc == CPL_OK) rc = cpl_output_link_count(s->outs[p], &s->nlinks[p]);
    if (rc != CPL_OK) {
      cpli_error_prefix("output port \"%s\": ", s->out_ports[p]);
      return rc;
    }
    s->wants[p] = calloc((size_t)(s->nlinks[p] ? s->nlinks[p] : 1), sizeof **s->wants);
    if (!s->wants[p]) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
    total += s->nlinks[p];
  }
  s->links = calloc((size_t)(total ? total : 1), sizeof *s->links);
  if (!s->links) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  for (int p = 0; p < s->nout; p++)
    for (int j = 0; j < s->nlinks[p]; j++) {
      served *l = &s->links[s->nserved++];
      cpl_link_end e;
      cpl_link_info li;
      CPLI_TRY(cpl_output_link(s->outs[p], j, &e));
      CPLI_TRY(cpl_workflow_link(wf, e.link, &li));
      *l = (served){
          .out = s->outs[p], .index = j, .last = -1, .want = CPL_REQ_NONE, .timeout = li.timeout};
      snprintf(l->label, sizeof l->label, "%s.%s->%s.%s", s->name, e.port, e.peer_component,
               e.peer_port);
    }
  return CPL_OK;
}

static int open_ports(cpl_context *ctx, stage *s) {
  CPLI_TRY(find_input(ctx, s));
  CPLI_TRY(cpli_linked_ports(ctx, CPL_SENDER, &s->out_ports, &s->nout));
  if (s->nout == 0)
    return cpli_fail(CPL_ERR_CONFIG,
                     "stage \"%s\" has no linked output port: "
                     "nothing to serve",
                     s->name);
  /* Warn, not refuse: the run is still correct and the store still holds
   * only this rank's rows, but every rank receives each step whole, which
   * breaks the memory and traffic bound the user may have sized for. The
   * setting is explicit, so it may be wanted (e.g. to compare algorithms). */
  if (s->in_allgather && s->size > 1 && s->rank == 0)
    fprintf(stderr,
            "cpl-component[%s]: warning: input link %s forces delivery: allgather, so each "
            "of the %d stage ranks receives every step whole (%d times the traffic, a whole "
            "step in flight per rank); the store still keeps only each rank's rows. Use "
            "delivery: select for the rows-only delivery (auto: by rows once steps are large)\n",
            s->name, s->in_label, s->size, s->size);
  int rc = cpl_input_open(ctx, s->in_port, NULL, &s->in);
  /* Each rank keeps only its rows; under select (or auto, for all but small
   * steps) only those reach it. */
  if (rc == CPL_OK) rc = cpl_input_select_rows(s->in, NULL, s->rank, s->size);
  if (rc != CPL_OK) {
    cpli_error_prefix("input port \"%s\": ", s->in_port);
    return rc;
  }
  return open_outputs(ctx, s);
}

static int open_drain(stage *s) {
  if (!s->drain) return CPL_OK;
  cpli_h5_describe_path(s->drain, s->drain_where, sizeof s->drain_where);
  s->h5 = (cpli_h5_steps){.file = -1, .dxpl = -1, .rank = s->rank, .size = s->size, .who = s->name};
  int rc = cpli_h5_make_parent_dirs(s->drain, s->comm);
  if (rc == CPL_OK) rc = cpli_h5_file(s->drain, s->comm, 1, &s->h5.file, &s->h5.dxpl);
  if (rc == CPL_OK) rc = cpli_h5_mark(s->h5.file, -1);
  if (rc != CPL_OK) cpli_error_prefix("drain file %s: ", s->drain_where);
  return rc;
}

static int close_all(stage *s) {
  cpl_input_stats st;
  int rc = cpl_input_stats_get(s->in, &st);
  s->bytes_in = st.bytes;
  for (int p = 0; p < s->nout && rc == CPL_OK; p++) {
    rc = cpl_output_close(s->outs[p]);
    s->outs[p] = NULL;
    if (rc != CPL_OK) cpli_error_prefix("closing output port \"%s\": ", s->out_ports[p]);
  }
  if (rc == CPL_OK) {
    rc = cpl_input_close(s->in);
    s->in = NULL;
    if (rc != CPL_OK) cpli_error_prefix("closing input port \"%s\": ", s->in_port);
  }
  if (rc == CPL_OK && s->drain) {
    rc = cpli_h5_mark(s->h5.file, s->h5.steps);
    if (rc != CPL_OK) cpli_error_prefix("drain file %s: ", s->drain_where);
    H5Pclose(s->h5.dxpl);
    if (H5Fclose(s->h5.file) < 0) rc = cpli_h5_fail("closing the drain file %s", s->drain_where);
    s->h5.file = -1;
  }
  return rc;
}

static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

/* The summary line (CPL_VERBOSE 1, report.c): what came in, what each link
 * got, evictions, memory. Memory and CPU are the largest over the ranks. */
static void summary(stage *s) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  double mine[4] = {(double)s->held_max, (double)ru.ru_maxrss * 1024.0, (double)s->bytes_in, cpu};
  double most[4];
  MPI_Reduce(mine, most, 4, MPI_DOUBLE, MPI_MAX, 0, s->comm);
  if (s->rank != 0) return;
  char line[4096];
  int o = snprintf(line, sizeof line, "steps in %ld", s->steps_in);
  if (s->steps_in)
    o += snprintf(line + o, sizeof line - (size_t)o, " (%ld..%ld)", s->first_in, s->last_in);
  o += snprintf(line + o, sizeof line - (size_t)o, "; served");
  for (int i = 0; i < s->nserved && o < (int)sizeof line; i++)
    o += snprintf(line + o, sizeof line - (size_t)o, "%s %s %ld", i ? "," : "", s->links[i].label,
                  s->links[i].sent);
  for (int i = 0; i < s->nserved && o < (int)sizeof line; i++)
    if (s->links[i].missed)
      o += snprintf(line + o, sizeof line - (size_t)o, "; %s missed %ld", s->links[i].label,
                    s->links[i].missed);
  if (o < (int)sizeof line)
    o += snprintf(line + o, sizeof line - (size_t)o,
                  "; keep %d %s, evicted "
                  "%ld",
                  s->keep, cpli_when_full_name(s->when_full), s->evicted);
  if (s->drain && o < (int)sizeof line)
    o += snprintf(line + o, sizeof line - (size_t)o, "; drain %s (%ld steps)", s->drain_where,
                  s->steps_in);
  if (o < (int)sizeof line)
    snprintf(line + o, sizeof line - (size_t)o,
             "; received %.2f MiB, store "
             "peak %.2f MiB, peak RSS %.1f MiB, CPU %.1f s (largest of %d "
             "ranks) in %.1f s",
             mib(most[2]), mib(most[0]), mib(most[1]), most[3], s->size, cpli_report_elapsed());
  cpli_report(1, s->name, s->rank, "stage: %s", line);
}

/* Has the input gone without a step for its link's timeout? The polls
 * are short and their outcome agreed, so every rank asks rank 0's clock
 * at the same polls: when the wait begins, then every 64th. A stage
 * that holds its producer back (full store) is not waiting. */
static int input_overdue(stage *s) {
  if (s->in_since < 0) {
    s->in_since = cpli_agreed_now(s->comm);
    s->in_polls = 0;
  }
  return ++s->in_polls % 64 == 0 && cpli_agreed_now(s->comm) - s->in_since > s->in_timeout;
}

/* Full in block mode, the stage holds its producer back (policy all or
 * every:N: it waits, and fails after its link's timeout naming only the
 * stage). Say once, at half that timeout, which links hold the stage, so
 * the stuck consumer is named. Rank 0, its own clock: a message only. */
static void say_held(stage *s, int held) {
  if (!held || s->rank != 0) {
    s->held_since = -1;
    s->held_said = 0;
    return;
  }
  const double now = MPI_Wtime();
  if (s->held_since < 0) s->held_since = now;
  if (s->held_said || now - s->held_since <= s->in_timeout / 2) return;
  s->held_said = 1;
  const long step = oldest(s)->step;
  char who[1024] = "";
  size_t o = 0;
  for (int i = 0; i < s->nserved && o < sizeof who; i++) {
    const served *l = &s->links[i];
    if (!wants(l, step)) continue;
    char last[32] = "none";
    if (l->last >= 0) snprintf(last, sizeof last, "step %ld", l->last);
    o += (size_t)snprintf(who + o, sizeof who - o, "%s%s (last sent: %s; %s)", o ? ", " : "",
                          l->label, last, l->want == CPL_REQ_NONE ? "no request" : "a request");
  }
  fprintf(stderr,
          "cpl-component[%s]: warning: stage full for %.3g s (keep %d, when_full block), holding "
          "back the producer of %s (half its %g s timeout): step %ld is still wanted by %s\n",
          s->name, now - s->held_since, s->keep, s->in_label, s->in_timeout, step, who);
}

static int run(stage *s) {
  for (;;) {
    int took = 0, open = 0, answered = 0, rc = CPL_OK;
    if (s->input_ended || !has_room(s)) s->in_since = -1; /* not waiting on the producer */
    say_held(s, !s->input_ended && !has_room(s) && s->in_policy != CPL_POLICY_LATEST);
    if (!s->input_ended && has_room(s)) {
      long step = -1;
      rc = cpl_input_try_step(s->in, WAIT_INPUT, &step);
      if (rc == CPL_OK) {
        took = 1;
        s->in_since = -1;
        rc = take_step(s, step);
        if (rc != CPL_OK) cpli_error_prefix("step %ld: ", step);
      } else if (rc == CPL_END_OF_STREAM) {
        s->input_ended = took = 1;
        rc = CPL_OK;
      } else if (rc == CPL_ERR_TIMEOUT && !input_overdue(s)) {
        rc = CPL_OK; /* nothing yet: the request stays open */
      } else {
        /* Polled, the link's timeout never ran out: say it as begin_step would. */
        if (rc == CPL_ERR_TIMEOUT) rc = cpli_input_no_step(s->in, s->in_timeout, CPL_STEP_NEXT);
        cpli_error_prefix("input link %s: waiting for the step after %ld: ", s->in_label,
                          s->last_in);
      }
      if (rc != CPL_OK) return rc;
    }
    /* Only look while input steps may come; wait when only requests can
     * make progress. */
    const int input_waits = !s->input_ended && has_room(s);
    CPLI_TRY(serve(s, input_waits ? 0 : WAIT_REQUESTS, &open, &answered));
    if (s->input_ended && open == 0) return CPL_OK;
    /* A request that cannot be answered yet returns at once from the poll:
     * do not spin on it while the input is held back. */
    if (!took && !answered && !input_waits) nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
  }
}

int cpli_stage_run(cpl_context *ctx) {
  stage s = {.first_in = -1,
             .last_in = -1,
             .forgot = -1,
             .in_since = -1,
             .held_since = -1,
             .h5 = {.file = -1, .dxpl = -1}};
  int index = -1;
  cpli_whoami(ctx, &s.name, &s.rank);
  CPLI_TRY(cpl_component_comm(ctx, &s.comm));
  CPLI_TRY(cpl_context_component(ctx, &index, NULL));
  MPI_Comm_size(s.comm, &s.size);
  const cpli_component *c = &cpl_context_workflow(ctx)->comps[index];
  s.keep = c->keep;
  s.when_full = c->when_full;
  s.drain = c->drain;
  s.kept = calloc((size_t)s.keep, sizeof *s.kept);
  s.runs = malloc(MAX_RUNS * sizeof *s.runs);
  int rc = s.kept && s.runs ? CPL_OK : cpli_fail(CPL_ERR_NOMEM, "out of memory");
  if (rc == CPL_OK) rc = open_ports(ctx, &s);
  if (rc == CPL_OK) rc = open_drain(&s);
  if (rc == CPL_OK) rc = run(&s);
  if (rc == CPL_OK) rc = close_all(&s);
  if (rc == CPL_OK) summary(&s);
  /* On failure the ports stay open: the caller aborts the job, and a clean
   * close could wait on peers that will never answer. */
  for (int i = 0; s.kept && i < s.nkept; i++) free_step(kept_at(&s, i));
  for (int p = 0; s.wants && p < s.nout; p++) free(s.wants[p]);
  free(s.kept);
  free(s.runs);
  free(s.wants);
  free(s.nlinks);
  free(s.links);
  free(s.outs);
  free(s.out_ports);
  if (rc != CPL_OK && s.h5.file >= 0) {
    /* What is left, as the sink says it: each step was flushed when drained. */
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", cpl_last_error());
    rc = cpli_fail(rc, "%s; the %ld step%s drained before are complete in drain file %s", msg,
                   s.h5.steps, s.h5.steps == 1 ? "" : "s", s.drain_where);
  }
  if (rc != CPL_OK)
    cpli_error_prefix("stage \"%s\" (input port \"%s\"): ", s.name, s.in_port ? s.in_port : "?");
  return rc;
}
