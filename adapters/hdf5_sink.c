/*
 * The built-in HDF5 sink (kind: sink): receives every step of every input
 * link and writes it to one file with parallel HDF5.
 *
 *   @coupler_steps         -1 while the sink writes; at its clean end the
 *                          steps written (h5util.h: CPLI_SINK_MARK)
 *   /step_000000/          one group per step (step number, 6+ digits)
 *       @step              int64 step number (unless the producer set one)
 *       @...               the step's attributes
 *       dataset            global dims, the producer's type, its attributes
 *
 * With several input links (fan-in) the step groups of each link sit under
 * a group "<producer component>.<producer port>". Each sink rank writes a
 * disjoint slab of dim 0 with a collective H5Dwrite; the file is flushed
 * after every step so a crash leaves every finished step readable (unless
 * it strikes inside a flush: see h5util.c on keeping that window short).
 * coupler_steps tells such a file from a finished one (the source warns).
 *
 * After a failure no further collective HDF5 call is made (closes
 * included): the failing rank returns at once and cpl-component aborts the
 * job, instead of ranks waiting in different collectives.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters.h"
#include "builtin.h"
#include "core/error.h"
#include "data/data.h"
#include "h5step.h"
#include "h5util.h"

/* Seconds one look at a link may wait while others are open. */
#define SINK_POLL 0.005

typedef struct sink_link {
  cpl_input *in;
  char label[300]; /* "prod.port->sink.port", for messages      */
  char group[200]; /* group of this link's steps; "" is the root */
  hid_t parent;    /* where the step groups go                   */
  double timeout;  /* the link's                                 */
  double since;    /* agreed time of its last step (or the start) */
  int done;
} sink_link;

typedef struct sink {
  const char *name;
  int rank, size;
  char where[1200]; /* the file, for messages */
  cpli_h5_steps out;
  sink_link *links;
  int nlinks;
} sink;

static int open_links(cpl_context *ctx, sink *s) {
  int n = 0;
  CPLI_TRY(cpl_context_link_count(ctx, &n));
  s->links = calloc((size_t)(n ? n : 1), sizeof *s->links);
  if (!s->links) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  for (int i = 0; i < n; i++) {
    cpl_link_end e;
    CPLI_TRY(cpl_context_link(ctx, i, &e));
    if (e.role != CPL_RECEIVER) continue;
    sink_link *l = &s->links[s->nlinks++];
    snprintf(l->label, sizeof l->label, "%s.%s->%s.%s", e.peer_component, e.peer_port, s->name,
             e.port);
    snprintf(l->group, sizeof l->group, "%s.%s", e.peer_component, e.peer_port);
    cpl_link_info li;
    CPLI_TRY(cpl_workflow_link(cpl_context_workflow(ctx), e.link, &li));
    l->timeout = li.timeout;
    char peer[200];
    snprintf(peer, sizeof peer, "%s.%s", e.peer_component, e.peer_port);
    /* As the stage does: the setting is explicit, so warned of, not refused,
     * but it undoes the rows-only delivery a sink of several ranks relies on. */
    if (cpl_context_workflow(ctx)->links[e.link].delivery == CPLI_DELIVERY_ALLGATHER &&
        s->size > 1 && s->rank == 0)
      fprintf(stderr,
              "cpl-component[%s]: warning: input link %s forces delivery: allgather, so each "
              "of the %d sink ranks receives every step whole (%d times the traffic, a whole "
              "step in flight per rank), though each writes only its rows. Use delivery: "
              "select for the rows-only delivery (auto: by rows once steps are large)\n",
              s->name, l->label, s->size, s->size);
    int rc = cpl_input_open(ctx, e.port, peer, &l->in);
    /* Each rank writes only its rows (write_data in h5step.c), so only those
     * need reach it, as in the stage: n ranks no longer each take every step
     * whole. A lone rank writes every row and keeps the plain allgather. */
    if (rc == CPL_OK && s->size > 1) rc = cpl_input_select_rows(l->in, NULL, s->rank, s->size);
    if (rc != CPL_OK) {
      cpli_error_prefix("link %s: ", l->label);
      return rc;
    }
  }
  return CPL_OK;
}

/* One link: its steps in the root. Fan-in: one group per producer port
 * (the same producer port linked to two of our ports: group names get
 * ":<our port>" so they stay apart). */
static int make_link_groups(sink *s) {
  for (int i = 0; i < s->nlinks; i++) {
    sink_link *l = &s->links[i];
    if (s->nlinks == 1) {
      l->group[0] = '\0';
      l->parent = s->out.file;
      continue;
    }
    /* Compared on the labels' producer side ("prod.port->"), which stay
     * as they are: a group renamed here must not hide the duplicate from
     * the other link, which needs its sink port appended too. */
    const size_t plen = (size_t)(strstr(l->label, "->") - l->label);
    for (int j = 0; j < s->nlinks; j++)
      if (j != i && strncmp(s->links[j].label, l->label, plen + 2) == 0) {
        const char *port = strrchr(l->label, '.') + 1;
        size_t len = strlen(l->group);
        snprintf(l->group + len, sizeof l->group - len, ":%s", port);
        break;
      }
    l->parent = H5Gcreate2(s->out.file, l->group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (l->parent < 0)
      return cpli_h5_fail("cannot create group \"%s\" for link %s", l->group, l->label);
  }
  return CPL_OK;
}

/* Take a step from whichever open link has one, round robin among the
 * ready ones so no producer starves. A blocking begin_step on one link
 * would leave the others unasked and fail their producers. try_step's
 * outcome is agreed over the consumer group, so all ranks take the same
 * turns (calls are collective). A link fails only when its own timeout
 * passes without a step. */
static int receive_all(sink *s, MPI_Comm comm) {
  int open = s->nlinks, next = 0;
  double now = cpli_agreed_now(comm);
  for (int i = 0; i < s->nlinks; i++) s->links[i].since = now;
  while (open > 0) {
    int took = 0;
    for (int k = 0; k < s->nlinks && !took; k++) {
      const int i = (next + k) % s->nlinks;
      sink_link *l = &s->links[i];
      if (l->done) continue;
      long step = -1;
      /* Alone, a link may wait longer per call: no one else to ask. */
      int rc = cpl_input_try_step(l->in, fmin(open == 1 ? 1.0 : SINK_POLL, l->timeout), &step);
      if (rc == CPL_ERR_TIMEOUT && now - l->since <= l->timeout) continue;
      if (rc == CPL_ERR_TIMEOUT) /* in the words of a begin_step that timed out */
        return cpli_input_no_step(l->in, l->timeout, CPL_STEP_NEXT);
      took = 1;
      next = i + 1;
      l->since = now;
      if (rc == CPL_END_OF_STREAM) {
        l->done = 1;
        open--;
        rc = cpl_input_close(l->in);
        l->in = NULL;
        if (rc != CPL_OK) cpli_error_prefix("link %s: closing: ", l->label);
        if (rc != CPL_OK) return rc;
        continue;
      }
      if (rc != CPL_OK) {
        cpli_error_prefix("link %s: waiting for the next step: ", l->label);
        return rc;
      }
      const double before = s->out.bytes;
      char b[32];
      rc = cpli_h5_write_step(&s->out, l->parent, l->group, l->label, l->in, step, NULL);
      if (rc == CPL_OK)
        cpli_report(2, s->name, s->rank, "sink: step %ld from %s: %s", step, l->label,
                    cpli_report_bytes(s->out.bytes - before, b, sizeof b));
      if (rc == CPL_OK) rc = cpl_input_end_step(l->in);
      if (rc != CPL_OK) {
        cpli_error_prefix("link %s: step %ld: ", l->label, step);
        return rc;
      }
    }
    now = cpli_agreed_now(comm);
  }
  return CPL_OK;
}

int cpli_hdf5_sink_run(cpl_context *ctx, const char *path) {
  sink s = {.out = {.file = -1, .dxpl = -1}};
  MPI_Comm comm;
  cpli_whoami(ctx, &s.name, &s.rank);
  CPLI_TRY(cpl_component_comm(ctx, &comm));
  MPI_Comm_size(comm, &s.size);
  s.out.rank = s.rank;
  s.out.size = s.size;
  s.out.who = s.name;
  cpli_h5_describe_path(path, s.where, sizeof s.where);
  int rc = open_links(ctx, &s);
  if (rc == CPL_OK) rc = cpli_h5_make_parent_dirs(path, comm);
  if (rc == CPL_OK) rc = cpli_h5_file(path, comm, 1, &s.out.file, &s.out.dxpl);
  if (rc == CPL_OK && s.nlinks == 0 && s.rank == 0)
    fprintf(stderr,
            "cpl-component[%s]: warning: sink has no input link; "
            "file %s stays empty\n",
            s.name, s.where);
  if (rc == CPL_OK) rc = cpli_h5_mark(s.out.file, -1);
  if (rc == CPL_OK) rc = make_link_groups(&s);
  if (rc == CPL_OK) rc = receive_all(&s, comm);
  for (int i = 0; rc == CPL_OK && s.nlinks > 1 && i < s.nlinks; i++)
    if (H5Gclose(s.links[i].parent) < 0)
      rc = cpli_h5_fail("closing group \"%s\"", s.links[i].group);
  if (rc == CPL_OK) rc = cpli_h5_mark(s.out.file, s.out.steps); /* the clean end */
  if (s.out.dxpl >= 0) H5Pclose(s.out.dxpl);
  if (rc == CPL_OK && H5Fclose(s.out.file) < 0) rc = cpli_h5_fail("closing the file");
  free(s.links); /* on failure ports stay open: the job is aborted */
  if (rc == CPL_OK) {
    char b[32];
    cpli_report(1, s.name, s.rank, "sink: %ld step%s, %s from %d link%s written to %s in %.1f s",
                s.out.steps, s.out.steps == 1 ? "" : "s",
                cpli_report_bytes(s.out.bytes, b, sizeof b), s.nlinks, s.nlinks == 1 ? "" : "s",
                s.where, cpli_report_elapsed());
  }
  if (rc != CPL_OK && s.out.file >= 0) {
    /* What is left: each step was flushed when it was written. */
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", cpl_last_error());
    rc = cpli_fail(rc, "%s; the %ld step%s written before are complete in the file", msg,
                   s.out.steps, s.out.steps == 1 ? "" : "s");
  }
  if (rc != CPL_OK) cpli_error_prefix("hdf5 sink \"%s\": file %s: ", s.name, s.where);
  return rc;
}
