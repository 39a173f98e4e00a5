/*
 * The context cpl_init builds, shared by the group and data layers.
 */
#ifndef CPLI_GROUP_CONTEXT_H
#define CPLI_GROUP_CONTEXT_H

#include "coupler.h"
#include "workflow/model.h"

/* One link as this component sees it. */
typedef struct cpli_end {
  int link; /* global link index                        */
  cpl_role role;
  int port, peer_comp, peer_port;
  MPI_Comm intercomm; /* the link, as cpl_link_end gives it        */
  MPI_Comm ctl;       /* private dup: the data layer's control    */
                      /* channel between the two group roots      */
  MPI_Comm data;      /* private dup the data layer's allgathers  */
                      /* run on: the engine's own dup of a        */
                      /* program's intercomm is another, so the   */
                      /* program's engine calls there never match */
                      /* a step's (which run when a credit comes) */
  int remote_size;
} cpli_end;

struct cpli_data_state; /* data/data.h: ports and link channels */

struct cpl_context {
  cpli_workflow *wf;
  MPI_Comm world; /* private duplicate of the caller's communicator */
  MPI_Comm comm;  /* this component */
  int comp;
  cpli_end *ends; /* links of this component, in global link order */
  int nends;
  struct cpli_data_state *data; /* NULL until a port is opened */
  double finalize_timeout;      /* CPL_FINALIZE_TIMEOUT, checked by cpl_init */
  int progress;                 /* CPL_PROGRESS=1: a line per step (data/report.c) */
};

/* Free the context's communicators and model. cpl_finalize (data layer,
 * data/channel.c) calls it after draining the links: the group layer
 * knows nothing of the layer above it. */
void cpli_context_free(cpl_context *ctx);

/* CPL_ERR_ENV, with the message a process would fail with, if this
 * process's environment makes cpl_init fail (CPL_INIT_TIMEOUT,
 * CPL_FINALIZE_TIMEOUT, CPL_PROGRESS) or every collective (the engine's
 * variables and tuning file: cpli_coll_env_check). cpl-run checks the
 * job's environment with it before starting anything. */
int cpli_env_check(void);

/* cpl_port_link, its messages naming `call` (the public call that asked). */
int cpli_port_link(const cpl_context *ctx, const char *port, const char *peer, cpl_link_end *out,
                   const char *call);

#endif
