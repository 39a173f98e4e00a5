/*
 * Workflow descriptions and component groups: the section of coupler.h that
 * belongs to the workflow layer (to be merged into coupler.h). Key reference:
 * coupler/workflow/README.md.
 *
 * Two levels:
 *  - cpl_workflow: a YAML workflow file parsed and validated without MPI
 *    (tools, tests, launchers use this);
 *  - cpl_context: what cpl_init() hands each MPI process: its component's
 *    communicator and one intercommunicator per link of that component.
 */
#ifndef CPL_WORKFLOW_API_H
#define CPL_WORKFLOW_API_H

#include <stddef.h>

#include "coupler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ diagnostics */

/* A list of error messages, each "file:line:col: message". Loading collects
 * every error it finds, not only the first. */
typedef struct cpl_diag cpl_diag;

int cpl_diag_create(cpl_diag **out);
void cpl_diag_destroy(cpl_diag *diag);
/* Messages stored: at most 100, the rest are only counted. */
int cpl_diag_count(const cpl_diag *diag);
/* Errors found, stored or not. */
int cpl_diag_total(const cpl_diag *diag);
/* Message i, 0 <= i < count, in file order; "" when out of range. */
const char *cpl_diag_message(const cpl_diag *diag, int i);

/* -------------------------------------------------------------- workflows */

typedef struct cpl_workflow cpl_workflow;

/* What a component runs: a user command or a Coupler built-in. */
typedef enum cpl_component_kind {
  CPL_KIND_COMMAND = 0, /* `command:` program and arguments            */
  CPL_KIND_SINK,        /* built-in: writes what it receives to HDF5    */
  CPL_KIND_SOURCE,      /* built-in: replays an HDF5 file               */
  CPL_KIND_STAGE,       /* built-in: staging component                  */
  CPL_KIND_COUNT
} cpl_component_kind;

/* Flow control of a link when the consumer falls behind. */
typedef enum cpl_flow_policy {
  CPL_POLICY_ALL = 0, /* every step is delivered; the producer blocks   */
  CPL_POLICY_LATEST,  /* stale steps are dropped (counted and logged)   */
  CPL_POLICY_EVERY,   /* every N-th step is delivered                   */
  CPL_POLICY_COUNT
} cpl_flow_policy;

/* Parse and validate a workflow file. Without MPI. On failure returns
 * CPL_ERR_IO, CPL_ERR_PARSE (not YAML) or CPL_ERR_CONFIG (not a valid
 * workflow), *out is NULL, every error is appended to diag (may be NULL),
 * and cpl_last_error() holds the first one and the error count. */
int cpl_workflow_load(const char *path, cpl_diag *diag, cpl_workflow **out);

/* Same from memory; `name` stands for the file name in messages. */
int cpl_workflow_load_buffer(const char *data, size_t len, const char *name,
                             cpl_diag *diag, cpl_workflow **out);

void cpl_workflow_destroy(cpl_workflow *wf);

const char *cpl_workflow_name(const cpl_workflow *wf);
/* The path as given to cpl_workflow_load. */
const char *cpl_workflow_path(const cpl_workflow *wf);
int cpl_workflow_component_count(const cpl_workflow *wf);
int cpl_workflow_link_count(const cpl_workflow *wf);
/* Sum of nprocs: the size the MPI job must have. */
int cpl_workflow_total_procs(const cpl_workflow *wf);
/* Index of a component by name, or -1. */
int cpl_workflow_component_index(const cpl_workflow *wf, const char *name);

typedef struct cpl_component_info {
  const char *name;
  int nprocs;
  cpl_component_kind kind;
  int argc;                /* CPL_KIND_COMMAND: program and arguments */
  const char *const *argv; /* argc entries, then NULL                 */
  const char *file;        /* sink/source: HDF5 file; else NULL       */
  int line;                /* where it is declared in the file        */
} cpl_component_info;

int cpl_workflow_component(const cpl_workflow *wf, int index,
                           cpl_component_info *out);

typedef struct cpl_link_info {
  const char *from_component, *from_port; /* producer side (output port) */
  const char *to_component, *to_port;     /* consumer side (input port)  */
  int from_index, to_index;               /* component indices           */
  cpl_inter_algorithm inter;
  cpl_intra_algorithm intra;
  cpl_flow_policy policy;
  int every;      /* N of policy every:N; 1 otherwise                  */
  int depth;      /* queue depth in steps                              */
  double timeout; /* seconds any wait on this link may take            */
  int line;       /* where it is declared                              */
} cpl_link_info;

int cpl_workflow_link(const cpl_workflow *wf, int index, cpl_link_info *out);

/* ----------------------------------------------- components and groups */

typedef struct cpl_context cpl_context;

/*
 * Join the workflow. Collective over `world` (every process of the job
 * calls it; `world` is duplicated, never used afterwards).
 * workflow_path: NULL means the environment variable CPL_WORKFLOW.
 * component:     this process's component; NULL means CPL_COMPONENT.
 * Every process validates the file; then all agree (one allgather) on
 * file contents, job size = sum of nprocs, and each component's rank
 * count. Any disagreement returns the same error (CPL_ERR_MISMATCH,
 * CPL_ERR_CONFIG, ...) on every process, without hanging and without
 * creating communicators. Ranks of a component need not be contiguous.
 */
int cpl_init(MPI_Comm world, const char *workflow_path, const char *component,
             cpl_context **out);

/* Free every communicator and the context. Collective over the job. */
int cpl_finalize(cpl_context *ctx);

const cpl_workflow *cpl_context_workflow(const cpl_context *ctx);
/* This process's component index and name. */
int cpl_context_component(const cpl_context *ctx, int *index,
                          const char **name);
/* The component's communicator: use it instead of MPI_COMM_WORLD. Owned by
 * the context (freed by cpl_finalize). */
int cpl_component_comm(const cpl_context *ctx, MPI_Comm *out);

/* One link as seen from this component. */
typedef struct cpl_link_end {
  int link;                 /* global link index (cpl_workflow_link)    */
  cpl_role role;            /* CPL_SENDER on the producer side          */
  const char *port;         /* local port                               */
  const char *peer_component, *peer_port;
  MPI_Comm intercomm;       /* owned by the context                     */
  int remote_size;          /* ranks of the peer component              */
} cpl_link_end;

/* Links this component takes part in, in global link order. */
int cpl_context_link_count(const cpl_context *ctx, int *count);
int cpl_context_link(const cpl_context *ctx, int i, cpl_link_end *out);

/* The link of a local port. `peer` ("component" or "component.port")
 * picks one when the port has several links (fan-out, fan-in); NULL
 * is fine when there is only one. */
int cpl_port_link(const cpl_context *ctx, const char *port, const char *peer,
                  cpl_link_end *out);

#ifdef __cplusplus
}
#endif
#endif /* CPL_WORKFLOW_API_H */
