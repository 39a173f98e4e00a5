/*
 * The validated workflow model: plain C structs for the other layers (groups,
 * data, stage, tools). A cpl_workflow that exists is valid: every reference
 * is resolved to an index and every value is in range. Each element carries
 * the line:col where it was declared, for later error messages.
 */
#ifndef CPLI_WORKFLOW_MODEL_H
#define CPLI_WORKFLOW_MODEL_H

#include <stdint.h>

#include "coupler.h"

/* Bounds the validator enforces (documented in README.md). */
#define CPLI_WF_MAX_NAME 64 /* characters in a name              */
#define CPLI_WF_MAX_COMPONENTS 1024
#define CPLI_WF_MAX_LINKS 4096
#define CPLI_WF_MAX_PORTS 256        /* per component                    */
#define CPLI_WF_MAX_DATASETS 1024    /* per port                          */
#define CPLI_WF_MAX_NPROCS (1 << 20) /* per component                    */
#define CPLI_WF_MAX_TOTAL (1 << 24)  /* whole job                         */
#define CPLI_WF_MAX_DEPTH 1024       /* link queue depth                  */
#define CPLI_WF_MAX_EVERY 1000000    /* N of every:N                      */
#define CPLI_WF_MAX_TIMEOUT 604800.0 /* one week, in seconds              */
#define CPLI_WF_MAX_DIMS 32          /* dataset rank                      */
#define CPLI_WF_MAX_ARGS 4096        /* command words                     */
#define CPLI_WF_MAX_KEEP 1024        /* steps a stage keeps               */
#define CPLI_WF_MAX_HOSTNAME 253     /* characters in a host name         */
/* Largest dataset (type size x dims): 64 TiB, the data layer's
 * CPLI_DATASET_MAX_BYTES, past which a step is CPL_ERR_UNSUPPORTED. */
#define CPLI_WF_MAX_DATASET_BYTES ((uint64_t)1 << 46)
#define CPLI_WF_DEFAULT_DEPTH 2
#define CPLI_WF_DEFAULT_KEEP 2
#define CPLI_WF_DEFAULT_TIMEOUT 60.0

/* What messages call a buffer loaded without a name (its default
 * workflow name is "workflow"). */
#define CPLI_WF_NO_FILE "<workflow>"

typedef struct cpli_pos {
  int line, col;
} cpli_pos;

typedef struct cpli_dataset {
  char *name;
  char *type;      /* "float64", ...; NULL when not declared      */
  int ndims;       /* -1 when not declared                        */
  long long *dims; /* ndims extents                               */
  cpli_pos pos;
} cpli_dataset;

typedef struct cpli_port {
  char *name;
  int output; /* 1: outputs (producer side), 0: inputs      */
  cpli_dataset *datasets;
  int ndatasets;
  cpli_pos pos;
} cpli_port;

typedef struct cpli_envvar {
  char *name, *value;
  cpli_pos pos;
} cpli_envvar;

/* What a full stage does with a new step (YAML `when_full`). */
typedef enum cpli_when_full {
  CPLI_FULL_BLOCK = 0, /* take no step until the oldest is no longer needed */
  CPLI_FULL_EVICT,     /* drop the oldest kept step (counted, logged)       */
  CPLI_FULL_COUNT
} cpli_when_full;

typedef struct cpli_component {
  char *name;
  int nprocs;
  cpl_component_kind kind;
  char **argv; /* argc words then NULL (CPL_KIND_COMMAND)     */
  int argc;
  cpli_pos *argpos;         /* of each word (a string command: the string's) */
  char *file;               /* sink/source HDF5 file; NULL otherwise        */
  char *workdir;            /* NULL: the launcher's working directory      */
  int keep;                 /* stage: steps kept (CPLI_WF_DEFAULT_KEEP)     */
  cpli_when_full when_full; /* stage: what a full store does         */
  char *drain;              /* stage: HDF5 file of every step; NULL: none   */
  cpli_envvar *env;
  int nenv;
  cpli_port *ports; /* outputs and inputs, in file order            */
  int nports;
  /* Placement (YAML hosts:, ppn:), turned into the launcher's syntax by
   * cpl-run (tools/launch.c). */
  char **hosts; /* host names of hosts: [..]; NULL for a count   */
  int nhosts;   /* names in hosts, or N of hosts: N; 0: not set  */
  int ppn;      /* processes per node; 0: not set               */
  cpli_pos pos, nprocs_pos, command_pos, workdir_pos, file_pos, drain_pos;
} cpli_component;

/* How a link moves a step to the consumer ranks (YAML `delivery`). */
typedef enum cpli_delivery {
  CPLI_DELIVERY_AUTO = 0,  /* by the cost model and what consumers selected */
  CPLI_DELIVERY_ALLGATHER, /* every rank gets every dataset whole           */
  CPLI_DELIVERY_SELECT,    /* redistribution to the boxes ranks selected    */
  CPLI_DELIVERY_COUNT
} cpli_delivery;

typedef struct cpli_link {
  int from_comp, from_port; /* indices into comps / comps[].ports    */
  int to_comp, to_port;
  cpl_inter_algorithm inter;
  cpl_intra_algorithm intra;
  cpl_flow_policy policy;
  int every; /* N of every:N, 1 otherwise             */
  int depth;
  double timeout;
  cpli_delivery delivery; /* how a step reaches the consumer ranks */
  char *label;            /* "sim.out->ana.in", for messages       */
  cpli_pos pos;
  cpli_pos policy_pos, depth_pos; /* of the keys; line 0: not given */
  cpli_pos inter_pos;             /* likewise                        */
} cpli_link;

struct cpl_workflow {
  char *path; /* as given, for messages                */
  char *name;
  char *trace; /* `trace:` spec (core/trace.h); NULL: none */
  cpli_component *comps;
  int ncomps;
  cpli_link *links; /* in file order = global link order     */
  int nlinks;
  int total_procs;
  uint64_t hash; /* FNV-1a of the file bytes              */
};
typedef struct cpl_workflow cpli_workflow;

/* Build the model from a parsed tree (schema.c). Errors go to d; returns
 * CPL_OK or CPL_ERR_CONFIG (partial model freed) or CPL_ERR_NOMEM. */
struct cpli_ynode;
int cpli_wf_from_tree(const struct cpli_ynode *root, const char *file, cpl_diag *d,
                      cpli_workflow **out);

/* Cross-checks on a complete model: names, references, totals (check.c). */
void cpli_wf_check(cpli_workflow *wf, const char *file, cpl_diag *d);

/* The program a command component runs, as cpl-run passes it to mpiexec:
 * a path with '/' is taken relative to wfdir (the workflow file's
 * directory, absolute), a bare name is looked up in PATH (the component's
 * env PATH if it sets one). Writes the path to out and returns 0, or
 * returns an errno value (ENOENT, EACCES, ...) and writes what was tried. */
int cpli_wf_program(const cpli_component *c, const char *wfdir, char *out, size_t size);

/* A script's "#!" interpreter (programs.c): 0 if path is no script or its
 * interpreter is executable, else an errno value (interp: the
 * interpreter; *crlf: the line ends in "\r\n", which no exec survives). */
int cpli_wf_interpreter(const char *path, char *interp, size_t size, int *crlf);

/* Check that every command component's program exists and is executable
 * (programs.c); errors at the command's line:col. */
void cpli_wf_check_programs(const cpli_workflow *wf, const char *wfdir, cpl_diag *d);

/* Check that every workdir is a directory this user can enter, relative
 * to the current directory (as mpiexec -wdir takes it); errors at the
 * workdir's line:col. For runs on this host only (programs.c). */
void cpli_wf_check_workdirs(const cpli_workflow *wf, cpl_diag *d);

/* Command words hydra's mpiexec cannot pass: ":" separates its programs
 * (the rest of the line would start as another program, and the job
 * hangs in MPI_Init). Errors at the word's line:col (programs.c). */
void cpli_wf_check_hydra_words(const cpli_workflow *wf, cpl_diag *d);

/* Free a model (complete or partial). */
void cpli_wf_free(cpli_workflow *wf);

/* Names of enum values as written in YAML; NULL if out of range. */
const char *cpli_kind_name(cpl_component_kind k);
const char *cpli_policy_name(cpl_flow_policy p);
const char *cpli_delivery_name(cpli_delivery d);
const char *cpli_when_full_name(cpli_when_full w);

/* The dataset types a workflow may declare (`type:`), in one table: the
 * schema checks names against it, the data layer maps each to its HDF5
 * native type (data/desc.c), cpl-validate sizes steps with it. */
typedef enum cpli_dtype {
  CPLI_DT_INT8,
  CPLI_DT_INT16,
  CPLI_DT_INT32,
  CPLI_DT_INT64,
  CPLI_DT_UINT8,
  CPLI_DT_UINT16,
  CPLI_DT_UINT32,
  CPLI_DT_UINT64,
  CPLI_DT_FLOAT32,
  CPLI_DT_FLOAT64,
  CPLI_DT_CHAR,
  CPLI_DT_BYTE,
  CPLI_DT_COUNT
} cpli_dtype;
extern const char *const cpli_dtype_names[CPLI_DT_COUNT];
/* Index of a type name, or -1; its size in bytes, or 0 if unknown. */
int cpli_dtype_find(const char *name);
size_t cpli_dtype_size(const char *name);
/* Can data of type a be read as type b? What the data layer allows on a
 * consumer's port (HDF5 conversion, data/desc.c cpli_type_convertible),
 * without HDF5: every pair of the types above (test wf_dtype_convertible). */
int cpli_dtype_convertible(const char *a, const char *b);

/* Bytes of one dataset (one step of a port) as declared by type and dims;
 * 0 when unknown. */
size_t cpli_dataset_bytes(const cpli_dataset *d);
size_t cpli_port_bytes(const cpli_port *p);

/* How a link's steps travel when not by its inter-group allgather, in the
 * progress line's words, for the tools' forecasts: "select" under
 * delivery: select (every step is redistributed), "scatter" under policy
 * latest (a step left in flight is scattered; steps still queued at close
 * go by the allgather); NULL: the allgather (delivery auto may still pick
 * select for a step where consumer ranks select). */
const char *cpli_link_bypass(const cpli_link *l);

/* Under delivery auto, a consumer whose ranks declare their rows (a stage;
 * a sink of several ranks, each writing its rows) has each step moved by
 * select wherever the cost model finds that cheaper, which depends on the
 * producer's blocks: the tools' allgather forecast then says so. Returns
 * that consumer's kind ("stage", "sink"), or NULL. */
const char *cpli_link_reads_rows(const cpli_workflow *wf, const cpli_link *l);

/* Index of a port by name in a component, or -1. */
int cpli_wf_port_index(const cpli_component *c, const char *name);

/* Edit distance, capped (returns cap+1 when larger): used for "did you
 * mean" suggestions. */
int cpli_edit_distance(const char *a, const char *b, int cap);

#endif
