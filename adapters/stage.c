/*
 * The built-in staging component (kind: stage). It forwards every step of
 * its one input port to all of its output ports: same step numbers,
 * datasets, dims, types and attributes. Each stage rank re-publishes a slab
 * of dim 0 (cpli_split_rows), so the stage's ranks tile every array again.
 *
 * Why it decouples: the stage takes the next input step as soon as it has
 * handed the current one to its output links, whose queues (depth, policy
 * from the workflow file) then absorb a slow consumer; the producer only
 * waits when those queues are full too (policy all).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "adapters.h"
#include "builtin.h"

typedef struct stage {
  const char *name; /* component, for messages */
  int rank, size;
  cpl_input *in;
  const char *in_port;
  cpl_output **outs;
  const char **out_ports;
  int nout;
} stage;

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
    if (o < sizeof list)
      o += (size_t)snprintf(list + o, sizeof list - o, "%s%s.%s->%s",
                            nin > 1 ? ", " : "", e.peer_component,
                            e.peer_port, e.port);
  }
  if (nin != 1)
    return cpli_fail(CPL_ERR_CONFIG, "stage \"%s\" needs exactly one input "
                     "link (one input port, one producer), but has %d%s%s%s",
                     s->name, nin, nin ? " (" : "", list, nin ? ")" : "");
  return CPL_OK;
}

static int forward_attrs(stage *s, const char *dataset) {
  int n = 0;
  CPLI_TRY(cpl_input_attr_count(s->in, dataset, &n));
  for (int i = 0; i < n; i++) {
    cpl_attr_info a;
    CPLI_TRY(cpl_input_attr(s->in, dataset, i, &a));
    size_t bytes = H5Tget_size(a.type) * a.n;
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf) return cpli_fail(CPL_ERR_NOMEM, "attribute \"%s\": out of "
                               "memory (%zu bytes)", a.name, bytes);
    int rc = cpl_input_attr_get(s->in, dataset, a.name, a.type, a.n, buf);
    for (int k = 0; rc == CPL_OK && k < s->nout; k++)
      rc = cpl_output_attr(s->outs[k], dataset, a.name, a.type, a.n, buf);
    free(buf);
    if (rc != CPL_OK) {
      cpli_error_prefix("attribute \"%s\": ", a.name);
      return rc;
    }
  }
  return CPL_OK;
}

/* Read this rank's slab of dataset i and put it on every output. The
 * buffer must live until the outputs' end_step: the caller frees it. */
static int forward_dataset(stage *s, int i, void **buf) {
  cpl_dataset_info d;
  CPLI_TRY(cpl_input_dataset(s->in, i, &d));
  hsize_t start[CPL_MAX_RANK] = {0}, count[CPL_MAX_RANK];
  memcpy(count, d.dims, (size_t)d.rank * sizeof *count);
  cpli_split_rows(d.dims[0], s->rank, s->size, &start[0], &count[0]);
  size_t bytes;
  int rc = cpli_block_bytes(d.rank, count, H5Tget_size(d.type), d.name, &bytes);
  if (rc == CPL_OK && !(*buf = malloc(bytes ? bytes : 1)))
    rc = cpli_fail(CPL_ERR_NOMEM, "out of memory (%zu bytes)", bytes);
  if (rc == CPL_OK)
    rc = cpl_input_get(s->in, d.name, d.type, start, count, *buf);
  for (int k = 0; rc == CPL_OK && k < s->nout; k++)
    rc = cpl_output_put(s->outs[k], d.name, d.type, d.rank, d.dims, start,
                        count, *buf);
  if (rc == CPL_OK) rc = forward_attrs(s, d.name);
  if (rc != CPL_OK) cpli_error_prefix("dataset \"%s\": ", d.name);
  return rc;
}

static int forward_step(stage *s, long step) {
  int nds = 0;
  CPLI_TRY(cpl_input_dataset_count(s->in, &nds));
  void **bufs = calloc((size_t)(nds ? nds : 1), sizeof *bufs);
  if (!bufs) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  int rc = CPL_OK;
  for (int k = 0; rc == CPL_OK && k < s->nout; k++) {
    rc = cpl_output_begin_step(s->outs[k], step);
    if (rc != CPL_OK) cpli_error_prefix("output port \"%s\": ", s->out_ports[k]);
  }
  for (int i = 0; rc == CPL_OK && i < nds; i++)
    rc = forward_dataset(s, i, &bufs[i]);
  if (rc == CPL_OK) rc = forward_attrs(s, NULL);
  for (int k = 0; rc == CPL_OK && k < s->nout; k++) {
    rc = cpl_output_end_step(s->outs[k]);
    if (rc != CPL_OK) cpli_error_prefix("output port \"%s\": ", s->out_ports[k]);
  }
  for (int i = 0; i < nds; i++) free(bufs[i]);
  free(bufs);
  return rc;
}

static int open_ports(cpl_context *ctx, stage *s) {
  CPLI_TRY(find_input(ctx, s));
  CPLI_TRY(cpli_linked_ports(ctx, CPL_SENDER, &s->out_ports, &s->nout));
  if (s->nout == 0)
    return cpli_fail(CPL_ERR_CONFIG, "stage \"%s\" has no linked output port: "
                     "nothing to forward to", s->name);
  s->outs = calloc((size_t)s->nout, sizeof *s->outs);
  if (!s->outs) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  int rc = cpl_input_open(ctx, s->in_port, NULL, &s->in);
  if (rc != CPL_OK) {
    cpli_error_prefix("input port \"%s\": ", s->in_port);
    return rc;
  }
  for (int k = 0; k < s->nout; k++) {
    rc = cpl_output_open(ctx, s->out_ports[k], &s->outs[k]);
    if (rc != CPL_OK) {
      cpli_error_prefix("output port \"%s\": ", s->out_ports[k]);
      return rc;
    }
  }
  return CPL_OK;
}

/* Deliver what the output queues still hold, then end every stream. */
static int close_ports(stage *s) {
  int rc = CPL_OK;
  for (int k = 0; k < s->nout; k++) {
    int r = cpl_output_close(s->outs[k]);
    s->outs[k] = NULL;
    if (r != CPL_OK && rc == CPL_OK) {
      cpli_error_prefix("closing output port \"%s\": ", s->out_ports[k]);
      rc = r;
    }
  }
  int r = cpl_input_close(s->in);
  s->in = NULL;
  if (r != CPL_OK && rc == CPL_OK) {
    cpli_error_prefix("closing input port \"%s\": ", s->in_port);
    rc = r;
  }
  return rc;
}

int cpli_stage_run(cpl_context *ctx) {
  stage s = {0};
  MPI_Comm comm;
  cpli_whoami(ctx, &s.name, &s.rank);
  CPLI_TRY(cpl_component_comm(ctx, &comm));
  MPI_Comm_size(comm, &s.size);
  int rc = open_ports(ctx, &s);
  long step = -1, last = -1;
  while (rc == CPL_OK) {
    rc = cpl_input_begin_step(s.in, &step);
    if (rc == CPL_END_OF_STREAM) {
      rc = close_ports(&s);
      break;
    }
    if (rc != CPL_OK) {
      cpli_error_prefix("waiting for the step after %ld: ", last);
      break;
    }
    rc = forward_step(&s, step);
    if (rc == CPL_OK) rc = cpl_input_end_step(s.in);
    if (rc != CPL_OK) cpli_error_prefix("step %ld: ", step);
    last = step;
  }
  /* On failure the ports stay open: the caller aborts the job, and a clean
   * close could wait on peers that will never answer. */
  free(s.outs);
  free(s.out_ports);
  if (rc != CPL_OK)
    cpli_error_prefix("stage \"%s\" (input port \"%s\"): ", s.name,
                      s.in_port ? s.in_port : "?");
  return rc;
}
