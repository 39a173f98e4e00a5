/*
 * cpl_init: workflow model + the caller's communicator -> one
 * communicator per component and one intercommunicator per link, and
 * cpli_context_free, which cpl_finalize (data/channel.c) ends with.
 *
 * No rank may hang on a disagreement, so nothing is split until all ranks
 * have agreed: each rank loads the file itself, then one allgather of a
 * small record per rank (load status, file hash, component index) gives
 * every rank the same facts, and cpli_group_agree() the same verdict.
 * The two collectives before the verdict (dup, allgather) are nonblocking
 * and polled against a deadline, so a rank that never calls cpl_init makes
 * the others fail with CPL_ERR_TIMEOUT instead of waiting forever.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "core/error.h"
#include "core/launch.h"
#include "core/trace.h"
#include "core/wait.h"
#include "group/agree.h"
#include "group/context.h"
#include "workflow/model.h"

#define CPLI_INIT_TIMEOUT_DEFAULT 60.0
#define CPLI_FINALIZE_TIMEOUT_DEFAULT 60.0 /* README.md, "Timeouts" */
#define CPLI_LINK_TAG_BASE 7000            /* tag of link k: base + k (< 32767) */

/* Wait for a request, polling, up to `timeout` seconds. */
static int wait_deadline(MPI_Request *req, double timeout, const char *what) {
  cpli_wait w;
  cpli_wait_start(&w, timeout, 200); /* 0.2 ms naps: don't spin on shared cores */
  char said[160];
  snprintf(said, sizeof said, "cpl_init: %s (waiting for every process of the job)", what);
  cpli_wait_describe(&w, cpli_wait_say_text, said);
  for (;;) {
    int done = 0;
    int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return cpli_mpi_check(rc, what, "cpl_init");
    if (done) return CPL_OK;
    if (!cpli_wait_idle(&w)) continue;
    if (w.interrupted) return CPL_ERR_INTERRUPTED;
    return cpli_fail(CPL_ERR_TIMEOUT,
                     "cpl_init: %s did not complete within %g s: some "
                     "process of the job did not call cpl_init (set "
                     "CPL_INIT_TIMEOUT to wait longer)",
                     what, timeout);
  }
}

/* Seconds from the environment variable `var`: `dflt` when unset or
 * empty; anything but a number in (0, 1e6] is CPL_ERR_ENV. */
static int env_seconds(const char *var, double dflt, double *out) {
  *out = dflt;
  const char *s = getenv(var);
  if (!s || !*s) return CPL_OK;
  char *end = NULL;
  double v = strtod(s, &end);
  if (*end || !(v > 0) || v > 1e6)
    return cpli_fail(CPL_ERR_ENV,
                     "%s must be a number of seconds in "
                     "(0, 1e6], got \"%s\"",
                     var, s);
  *out = v;
  return CPL_OK;
}

/* A switch: unset, empty, "0" or "1"; anything else ("yes", "on") is an
 * error, not quietly off. */
static int env_switch(const char *var, int *out) {
  const char *s = getenv(var);
  *out = s && !strcmp(s, "1");
  if (!s || !*s || !strcmp(s, "0") || *out) return CPL_OK;
  return cpli_fail(CPL_ERR_ENV, "%s must be 0 or 1, got \"%s\"", var, s);
}

/* cpl_init's variables. CPL_FINALIZE_TIMEOUT is read now, so a bad value
 * fails here, alike on every rank, and not quietly at cpl_finalize. */
static int init_env(double *timeout, double *finalize_timeout, int *progress) {
  CPLI_TRY(env_seconds("CPL_INIT_TIMEOUT", CPLI_INIT_TIMEOUT_DEFAULT, timeout));
  CPLI_TRY(env_seconds("CPL_FINALIZE_TIMEOUT", CPLI_FINALIZE_TIMEOUT_DEFAULT, finalize_timeout));
  return env_switch("CPL_PROGRESS", progress);
}

int cpli_env_check(void) {
  double t, f;
  int p;
  CPLI_TRY(init_env(&t, &f, &p));
  return cpli_coll_env_check();
}

/* Load the workflow on this rank; on failure put every message (as many
 * as fit) into the last-error text, not only the first. */
static int load_local(const char *path, cpli_workflow **wf) {
  if (!path || !*path)
    return cpli_fail(CPL_ERR_ARG, "no workflow file: pass one to cpl_init "
                                  "or set CPL_WORKFLOW");
  cpl_diag *d = NULL;
  CPLI_TRY(cpl_diag_create(&d));
  int rc = cpl_workflow_load(path, d, wf);
  if (rc != CPL_OK && cpl_diag_count(d) > 1) {
    char msg[2000];
    size_t o = 0;
    msg[0] = '\0';
    for (int i = 0; i < cpl_diag_count(d) && o < sizeof msg; i++)
      o += (size_t)snprintf(msg + o, sizeof msg - o, "%s%s", i ? "\n" : "", cpl_diag_message(d, i));
    cpli_fail(rc, "%s", msg);
  }
  cpl_diag_destroy(d);
  return rc;
}

void cpli_context_free(cpl_context *ctx) {
  if (!ctx) return;
  for (int i = 0; i < ctx->nends; i++) {
    if (ctx->ends[i].intercomm != MPI_COMM_NULL) MPI_Comm_free(&ctx->ends[i].intercomm);
    if (ctx->ends[i].ctl != MPI_COMM_NULL) MPI_Comm_free(&ctx->ends[i].ctl);
    if (ctx->ends[i].data != MPI_COMM_NULL) MPI_Comm_free(&ctx->ends[i].data);
  }
  free(ctx->ends);
  if (ctx->comm != MPI_COMM_NULL) MPI_Comm_free(&ctx->comm);
  if (ctx->world != MPI_COMM_NULL) MPI_Comm_free(&ctx->world);
  cpli_wf_free(ctx->wf);
  free(ctx);
}

/* Split into components and build the intercommunicators, in global link
 * order with one tag per link: every pair of components walks its common
 * links in the same order, so the blocking creates cannot deadlock. */
static int build_groups(cpl_context *ctx, int nranks, const cpli_rank_rec *recs, int myrank) {
  const cpli_workflow *wf = ctx->wf;
  CPLI_TRY(cpli_mpi_check(MPI_Comm_split(ctx->world, ctx->comp, myrank, &ctx->comm),
                          "MPI_Comm_split", "cpl_init"));
  MPI_Comm_set_errhandler(ctx->comm, MPI_ERRORS_RETURN);
  char cname[MPI_MAX_OBJECT_NAME];
  snprintf(cname, sizeof cname, "cpl:%s", wf->comps[ctx->comp].name);
  MPI_Comm_set_name(ctx->comm, cname);

  int *leaders = malloc((size_t)wf->ncomps * sizeof *leaders);
  ctx->ends = calloc((size_t)(wf->nlinks ? wf->nlinks : 1), sizeof *ctx->ends);
  if (!leaders || !ctx->ends) {
    free(leaders);
    return cpli_fail(CPL_ERR_NOMEM, "cpl_init: out of memory");
  }
  cpli_group_leaders(wf, nranks, recs, leaders);
  int rc = CPL_OK;
  for (int k = 0; k < wf->nlinks && rc == CPL_OK; k++) {
    const cpli_link *l = &wf->links[k];
    int sender = l->from_comp == ctx->comp;
    if (!sender && l->to_comp != ctx->comp) continue;
    cpli_end *e = &ctx->ends[ctx->nends];
    e->link = k;
    e->role = sender ? CPL_SENDER : CPL_RECEIVER;
    e->port = sender ? l->from_port : l->to_port;
    e->peer_comp = sender ? l->to_comp : l->from_comp;
    e->peer_port = sender ? l->to_port : l->from_port;
    e->intercomm = MPI_COMM_NULL;
    rc = cpli_mpi_check(MPI_Intercomm_create(ctx->comm, 0, ctx->world, leaders[e->peer_comp],
                                             CPLI_LINK_TAG_BASE + k, &e->intercomm),
                        "MPI_Intercomm_create", "cpl_init: link %s", l->label);
    if (rc != CPL_OK) break;
    ctx->nends++;
    MPI_Comm_set_errhandler(e->intercomm, MPI_ERRORS_RETURN);
    e->ctl = e->data = MPI_COMM_NULL;
    rc = cpli_mpi_check(MPI_Comm_dup(e->intercomm, &e->ctl), "MPI_Comm_dup", "cpl_init: link %s",
                        l->label);
    if (rc == CPL_OK)
      rc = cpli_mpi_check(MPI_Comm_dup(e->intercomm, &e->data), "MPI_Comm_dup", "cpl_init: link %s",
                          l->label);
    if (rc != CPL_OK) break;
    MPI_Comm_set_errhandler(e->ctl, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(e->data, MPI_ERRORS_RETURN);
    snprintf(cname, sizeof cname, "cpl:%s", l->label);
    MPI_Comm_set_name(e->intercomm, cname);
    MPI_Comm_remote_size(e->intercomm, &e->remote_size);
  }
  free(leaders);
  return rc;
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: this one tells
 * cpl-exec that the program got there. */
static int said_mpi_finalize(MPI_Comm comm, int key, void *value, void *extra) {
  (void)comm, (void)key, (void)value, (void)extra;
  cpli_launch_mpi_finalize();
  return MPI_SUCCESS;
}

int cpl_init(MPI_Comm world, const char *workflow_path, const char *component, cpl_context **out) {
  cpli_launch_init(); /* cpl-exec: this process reached cpl_init */
  if (!out) return cpli_fail(CPL_ERR_ARG, "cpl_init: out is NULL");
  *out = NULL;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) return cpli_fail(CPL_ERR_STATE, "cpl_init: call MPI_Init first");
  static int hooked;
  if (!hooked && cpli_launch_listened()) {
    int key;
    hooked = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, said_mpi_finalize, &key, NULL) ==
                 MPI_SUCCESS &&
             MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL) == MPI_SUCCESS;
  }
  if (world == MPI_COMM_NULL) return cpli_fail(CPL_ERR_COMM, "cpl_init: world is MPI_COMM_NULL");
  int inter = 0;
  MPI_Comm_test_inter(world, &inter);
  if (inter) return cpli_fail(CPL_ERR_COMM, "cpl_init: world is an intercommunicator");

  cpl_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return cpli_fail(CPL_ERR_NOMEM, "cpl_init: out of memory");
  ctx->world = ctx->comm = MPI_COMM_NULL;
  ctx->comp = CPLI_COMP_NONE;

  /* Local work first; its failure is carried into the agreement. */
  double timeout;
  int local = init_env(&timeout, &ctx->finalize_timeout, &ctx->progress);
  const char *path = workflow_path ? workflow_path : getenv("CPL_WORKFLOW");
  const char *name = component ? component : getenv("CPL_COMPONENT");
  if (local == CPL_OK) local = load_local(path, &ctx->wf);
  if (local == CPL_OK && name && *name) {
    ctx->comp = cpl_workflow_component_index(ctx->wf, name);
    if (ctx->comp < 0) ctx->comp = CPLI_COMP_UNKNOWN;
  }
  char local_msg[2048];
  snprintf(local_msg, sizeof local_msg, "%s", cpl_last_error());

  MPI_Request req;
  int rc = cpli_mpi_check(MPI_Comm_idup(world, &ctx->world, &req), "MPI_Comm_idup", "cpl_init");
  if (rc == CPL_OK) rc = wait_deadline(&req, timeout, "MPI_Comm_idup");
  if (rc != CPL_OK) {
    /* An unfinished communicator cannot be freed: leave it (the job is
     * broken anyway and should abort). */
    ctx->world = MPI_COMM_NULL;
    cpli_context_free(ctx);
    return rc;
  }
  MPI_Comm_set_errhandler(ctx->world, MPI_ERRORS_RETURN);
  int nranks, myrank;
  MPI_Comm_size(ctx->world, &nranks);
  MPI_Comm_rank(ctx->world, &myrank);

  /* Nobody writes the trace before the agreement below completes. */
  if (myrank == 0 && local == CPL_OK) cpli_trace_reset(cpli_trace_spec(ctx->wf->trace));

  cpli_rank_rec mine = {.status = local, .comp = ctx->comp, .hash = ctx->wf ? ctx->wf->hash : 0};
  uint32_t *all = malloc((size_t)nranks * CPLI_REC_WORDS * sizeof *all);
  cpli_rank_rec *recs = malloc((size_t)nranks * sizeof *recs);
  if (!all || !recs) {
    /* Cannot take part in the agreement: the others will time out. */
    free(all);
    free(recs);
    cpli_context_free(ctx);
    return cpli_fail(CPL_ERR_NOMEM, "cpl_init: out of memory");
  }
  /* In place: a send buffer on this stack would be read after a timeout
   * returned (MPI can neither cancel nor free the allgather). */
  cpli_rec_pack(&mine, all + (size_t)myrank * CPLI_REC_WORDS);
  rc = cpli_mpi_check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, CPLI_REC_WORDS,
                                     MPI_UINT32_T, ctx->world, &req),
                      "MPI_Iallgather", "cpl_init");
  if (rc == CPL_OK) {
    rc = wait_deadline(&req, timeout, "the agreement allgather");
    if (rc == CPL_ERR_TIMEOUT || rc == CPL_ERR_INTERRUPTED) {
      /* The allgather still owns both buffers and the communicator. */
      ctx->world = MPI_COMM_NULL;
      cpli_context_free(ctx);
      return rc;
    }
  }
  if (rc == CPL_OK) {
    for (int r = 0; r < nranks; r++) cpli_rec_unpack(all + (size_t)r * CPLI_REC_WORDS, &recs[r]);
    if (local != CPL_OK) cpli_fail(local, "%s", local_msg);
    rc = cpli_group_agree(ctx->wf, nranks, recs, myrank, name);
  }
  if (rc == CPL_OK) rc = build_groups(ctx, nranks, recs, myrank);
  free(all);
  free(recs);
  if (rc != CPL_OK) {
    cpli_context_free(ctx);
    return rc;
  }
  *out = ctx;
  return CPL_OK;
}

/* ------------------------------------------------------------ accessors */

const cpl_workflow *cpl_context_workflow(const cpl_context *ctx) { return ctx ? ctx->wf : NULL; }

int cpl_context_component(const cpl_context *ctx, int *index, const char **name) {
  if (!ctx) return cpli_fail(CPL_ERR_ARG, "cpl_context_component: ctx is NULL");
  if (index) *index = ctx->comp;
  if (name) *name = ctx->wf->comps[ctx->comp].name;
  return CPL_OK;
}

int cpl_component_comm(const cpl_context *ctx, MPI_Comm *out) {
  CPLI_TRY(
      cpli_check_null("cpl_component_comm", 2, "ctx", (const void *)ctx, "out", (const void *)out));
  *out = ctx->comm;
  return CPL_OK;
}

int cpl_context_link_count(const cpl_context *ctx, int *count) {
  CPLI_TRY(cpli_check_null("cpl_context_link_count", 2, "ctx", (const void *)ctx, "count",
                           (const void *)count));
  *count = ctx->nends;
  return CPL_OK;
}

static void fill_end(const cpl_context *ctx, const cpli_end *e, cpl_link_end *out) {
  const cpli_workflow *wf = ctx->wf;
  const cpli_component *peer = &wf->comps[e->peer_comp];
  *out = (cpl_link_end){
      .link = e->link,
      .role = e->role,
      .port = wf->comps[ctx->comp].ports[e->port].name,
      .peer_component = peer->name,
      .peer_port = peer->ports[e->peer_port].name,
      .intercomm = e->intercomm,
      .remote_size = e->remote_size,
  };
}

int cpl_context_link(const cpl_context *ctx, int i, cpl_link_end *out) {
  if (!ctx || !out)
    return cpli_fail(CPL_ERR_ARG, "cpl_context_link: %s is NULL", ctx ? "out" : "ctx");
  if (i < 0 || i >= ctx->nends)
    return cpli_fail(CPL_ERR_ARG, "cpl_context_link: component \"%s\" has no link %d (it has %d)",
                     ctx->wf->comps[ctx->comp].name, i, ctx->nends);
  fill_end(ctx, &ctx->ends[i], out);
  return CPL_OK;
}

/* Does peer ("comp" or "comp.port") match this end? */
static int peer_matches(const cpl_context *ctx, const cpli_end *e, const char *peer) {
  if (!peer) return 1;
  const cpli_component *pc = &ctx->wf->comps[e->peer_comp];
  size_t n = strlen(pc->name);
  if (strncmp(peer, pc->name, n) != 0) return 0;
  if (peer[n] == '\0') return 1;
  return peer[n] == '.' && strcmp(peer + n + 1, pc->ports[e->peer_port].name) == 0;
}

int cpl_port_link(const cpl_context *ctx, const char *port, const char *peer, cpl_link_end *out) {
  return cpli_port_link(ctx, port, peer, out, "cpl_port_link");
}

int cpli_port_link(const cpl_context *ctx, const char *port, const char *peer, cpl_link_end *out,
                   const char *call) {
  CPLI_TRY(cpli_check_null(call, 3, "ctx", (const void *)ctx, "port", (const void *)port, "out",
                           (const void *)out));
  const cpli_component *me = &ctx->wf->comps[ctx->comp];
  int p = cpli_wf_port_index(me, port);
  if (p < 0)
    return cpli_fail(CPL_ERR_ARG,
                     "%s: component \"%s\" has no "
                     "port \"%s\"",
                     call, me->name, port);
  const cpli_end *found = NULL;
  int nfound = 0;
  char labels[512] = "";
  size_t o = 0;
  for (int i = 0; i < ctx->nends; i++) {
    const cpli_end *e = &ctx->ends[i];
    if (e->port != p || !peer_matches(ctx, e, peer)) continue;
    if (!found) found = e;
    nfound++;
    if (o < sizeof labels)
      o += (size_t)snprintf(labels + o, sizeof labels - o, "%s%s", nfound > 1 ? ", " : "",
                            ctx->wf->links[e->link].label);
  }
  if (nfound == 0)
    return cpli_fail(CPL_ERR_ARG, "%s: port %s.%s has no link%s%s", call, me->name, port,
                     peer ? " to " : "", peer ? peer : "");
  if (nfound > 1)
    return cpli_fail(CPL_ERR_ARG,
                     "%s: port %s.%s has %d links "
                     "(%s): name the peer",
                     call, me->name, port, nfound, labels);
  fill_end(ctx, found, out);
  return CPL_OK;
}
