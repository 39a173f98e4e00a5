/*
 * Coupler: couple the components of an HPC workflow over MPI.
 *
 * The one public header. Conventions: every call returns a cpl_status
 * (CPL_OK = 0); on failure cpl_last_error() returns a message that says what
 * failed and where. Output parameters come last.
 */
#ifndef COUPLER_H
#define COUPLER_H

#include <hdf5.h>
#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What libcoupler exports: the functions marked CPL_API, nothing else
 * (the library is built with hidden visibility). */
#if defined(__GNUC__)
#define CPL_API __attribute__((visibility("default")))
#else
#define CPL_API
#endif

#define CPL_VERSION_MAJOR 0
#define CPL_VERSION_MINOR 1
#define CPL_VERSION_PATCH 0
#define CPL_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ errors */

typedef enum cpl_status {
  CPL_OK = 0,
  CPL_ERR_ARG,         /* bad argument: NULL buffer, negative count, ...   */
  CPL_ERR_COMM,        /* wrong kind or shape of communicator              */
  CPL_ERR_MPI,         /* an MPI call failed                                */
  CPL_ERR_NOMEM,       /* out of memory                                     */
  CPL_ERR_ENV,         /* bad value in an environment variable              */
  CPL_ERR_PARSE,       /* workflow file is not well-formed YAML             */
  CPL_ERR_CONFIG,      /* workflow file is YAML but not a valid workflow    */
  CPL_ERR_MISMATCH,    /* ranks, components or the workflow file disagree  */
  CPL_ERR_TIMEOUT,     /* a wait ran past its deadline                      */
  CPL_ERR_IO,          /* file system error                                 */
  CPL_ERR_HDF5,        /* an HDF5 call failed                               */
  CPL_ERR_STATE,       /* call out of order (e.g. put outside a step)       */
  CPL_ERR_UNSUPPORTED, /* valid request this build cannot do                */
  CPL_ERR_NOT_FOUND,   /* the requested step is not held by the producer   */
  CPL_ERR_TYPE,        /* a datatype differs from the declared one, or     */
                       /* HDF5 cannot convert between the two              */
  CPL_ERR_SHAPE,       /* dims differ from the declared ones, or blocks do */
                       /* not tile the array (gap, overlap, outside)       */
  CPL_ERR_INTERNAL,    /* a bug in Coupler: please report                   */
  CPL_END_OF_STREAM,   /* not an error: the producer has finished           */
  CPL_ERR_INTERRUPTED, /* a wait ended early: the interrupt check said so   */
                       /* (cpl_set_interrupt_check; a signal, Ctrl-C)      */
  CPL_STATUS_COUNT
} cpl_status;

/* Short fixed description of a status code. Never NULL. */
CPL_API const char *cpl_strerror(int status);

/* The message of the last failure in this thread ("" if none): what failed
 * and where (file:line:col for YAML; link, rank and step for transfers). */
CPL_API const char *cpl_last_error(void);

/* -------------------------------------------------------------- interrupts */

/*
 * Every Coupler wait (steps, transfers, close, finalize, cpl_init, the
 * engine's collectives) polls; a program may register a check that such a
 * wait calls while it waits, every 50 ms or so of waiting (a shorter wait
 * never calls it). When the check returns nonzero the wait gives up as a
 * timeout would, and the call fails with CPL_ERR_INTERRUPTED, its message
 * saying what was awaited (link, rank, step) and that a signal
 * interrupted it. The call leaves what its timeout would leave (a
 * begin_step's request stays out, an end_step's port fails, and peers
 * learn of that as of any failure). For language bindings whose signal
 * handlers only set a flag (Python: coupler/python/README.md, "Ctrl-C");
 * a C program's handler may set a volatile sig_atomic_t the check
 * returns. Without a check, Coupler's waits are not interrupted. Nor is a
 * wait on a nonblocking MPI collective (the engine's native algorithms,
 * its first use of a communicator, a component's ranks waiting for their
 * rank 0), which MPI can neither cancel nor abandon: it ends when every
 * rank arrives (an interrupted rank 0 arrives at once) or at its timeout.
 * After such a timeout MPI still owns that collective's buffers: Coupler
 * leaves its own to MPI, but a native algorithm receives into the caller's
 * buffer, which a program that goes on must neither free nor reuse.
 *
 * One check per process, called in the waiting thread (any thread) with
 * `arg`: `check` replaces the one before, NULL removes it.
 */
typedef int (*cpl_interrupt_check)(void *arg);
CPL_API void cpl_set_interrupt_check(cpl_interrupt_check check, void *arg);

/* ------------------------------------------------------ collective engine */

/* Inter-group algorithms (half-duplex allgather between two groups). */
typedef enum cpl_inter_algorithm {
  CPL_INTER_AUTO = 0,    /* chosen by the alpha-beta cost model              */
  CPL_INTER_FC,          /* Kang et al., fully connected                     */
  CPL_INTER_RING,        /* Kang et al., ring (MPI_Sendrecv between neighbours)*/
  CPL_INTER_ROOT,        /* root gathering (what MPICH does), baseline       */
  CPL_INTER_NATIVE,      /* MPI_Allgatherv on the intercommunicator          */
  CPL_INTER_DIRECT_RING, /* senders feed a ring of the receivers          */
  CPL_INTER_TWO_HOP,     /* every block in at most two hops               */
  CPL_INTER_CHAINS,      /* senders take turns feeding chains of receivers */
  CPL_INTER_COUNT
} cpl_inter_algorithm;

/* Intra-group algorithms (allgather inside one group). */
typedef enum cpl_intra_algorithm {
  CPL_INTRA_AUTO = 0,  /* chosen by the alpha-beta cost model            */
  CPL_INTRA_CIRCULANT, /* Traff's circulant-graph schedules             */
  CPL_INTRA_BRUCK,     /* Bruck et al. concatenation                    */
  CPL_INTRA_RING,      /* p-1 steps around a ring                       */
  CPL_INTRA_NATIVE,    /* MPI_Allgather(v) of the MPI library           */
  CPL_INTRA_ROOT,      /* all to member 0, which broadcasts             */
  CPL_INTRA_COUNT
} cpl_intra_algorithm;

CPL_API const char *cpl_inter_algorithm_name(cpl_inter_algorithm a);
CPL_API const char *cpl_intra_algorithm_name(cpl_intra_algorithm a);
/* Parse "auto", "fc", ...; CPL_ERR_ARG with the list of valid names if unknown. */
CPL_API int cpl_inter_algorithm_parse(const char *name, cpl_inter_algorithm *out);
CPL_API int cpl_intra_algorithm_parse(const char *name, cpl_intra_algorithm *out);

/* Per-call options. Initialise with cpl_coll_options_init(); NULL means
 * defaults. The environment (CPL_INTER_ALGORITHM, CPL_INTRA_ALGORITHM)
 * overrides the algorithm fields when set to anything but "auto". */
typedef struct cpl_coll_options {
  cpl_inter_algorithm inter;
  cpl_intra_algorithm intra;
  double timeout;    /* seconds any single wait may take; 0: CPL_TIMEOUT
                        from the environment, else 60; < 0: no limit    */
  const char *label; /* names the link in error messages; may be NULL    */
  long step;         /* step number for error messages; -1 if none       */
} cpl_coll_options;

CPL_API void cpl_coll_options_init(cpl_coll_options *opt);

/* Which side of a half-duplex inter-group operation this process is on. */
typedef enum cpl_role { CPL_RECEIVER = 0, CPL_SENDER = 1 } cpl_role;

/*
 * Half-duplex inter-group allgather(v): every process of the receiving group
 * gets the block of every process of the sending group, in rank order.
 * Senders pass sendbuf/sendcount/sendtype (recv arguments are ignored);
 * receivers pass recvbuf/recvcounts/displs/recvtype with one entry per
 * remote (sending) rank (send arguments are ignored). Both groups must pass
 * opposite roles (the same role on both is CPL_ERR_MISMATCH on every rank,
 * found where a direction of the link is first used). Collective over the
 * intercommunicator.
 */
CPL_API int cpl_inter_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, cpl_role role, MPI_Comm intercomm,
                                 const cpl_coll_options *opt);

CPL_API int cpl_inter_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, cpl_role role,
                                MPI_Comm intercomm, const cpl_coll_options *opt);

/* Intra-group allgather(v) with MPI semantics (MPI_IN_PLACE allowed). */
CPL_API int cpl_intra_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, MPI_Comm comm, const cpl_coll_options *opt);

CPL_API int cpl_intra_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                const cpl_coll_options *opt);

/* Round-optimal n-block broadcast (Traff), MPI_Bcast semantics. */
CPL_API int cpl_intra_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                            const cpl_coll_options *opt);

/* The algorithm `auto` (or the environment) picks for this call shape:
 * p senders, q receivers (both >= 1, else CPL_ERR_ARG), `bytes` the total
 * bytes every receiver gets. */
CPL_API int cpl_inter_select(int p, int q, size_t bytes, const cpl_coll_options *opt,
                             cpl_inter_algorithm *out);

/* Predicted time in seconds of an algorithm under the alpha-beta model
 * (alpha = latency s, beta = s/byte), `bytes` total per receiver.
 * INFINITY for an algorithm the model does not price, NAN when p or q is
 * less than 1. */
CPL_API double cpl_inter_cost(cpl_inter_algorithm a, int p, int q, size_t bytes, double alpha,
                              double beta);
CPL_API double cpl_intra_cost(cpl_intra_algorithm a, int p, size_t bytes, double alpha,
                              double beta);

/* =============================================================== workflow
 * Workflow descriptions (YAML, parsed and validated without MPI) and the
 * process groups cpl_init() builds from them: one communicator per
 * component, one intercommunicator per link. Every YAML key is documented
 * in coupler/workflow/README.md.
 */

/* ------------------------------------------------------------ diagnostics */

/* A list of error messages, each "file:line:col: message". Loading collects
 * every error it finds, not only the first. */
typedef struct cpl_diag cpl_diag;

CPL_API int cpl_diag_create(cpl_diag **out);
CPL_API void cpl_diag_destroy(cpl_diag *diag);
/* Messages stored: at most 100, the rest are only counted. */
CPL_API int cpl_diag_count(const cpl_diag *diag);
/* Errors found, stored or not. */
CPL_API int cpl_diag_total(const cpl_diag *diag);
/* Message i, 0 <= i < count, in file order; "" when out of range. */
CPL_API const char *cpl_diag_message(const cpl_diag *diag, int i);

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
CPL_API int cpl_workflow_load(const char *path, cpl_diag *diag, cpl_workflow **out);

/* Same from memory; `name` stands for the file name in messages. */
CPL_API int cpl_workflow_load_buffer(const char *data, size_t len, const char *name, cpl_diag *diag,
                                     cpl_workflow **out);

CPL_API void cpl_workflow_destroy(cpl_workflow *wf);

CPL_API const char *cpl_workflow_name(const cpl_workflow *wf);
/* The path as given to cpl_workflow_load. */
CPL_API const char *cpl_workflow_path(const cpl_workflow *wf);
CPL_API int cpl_workflow_component_count(const cpl_workflow *wf);
CPL_API int cpl_workflow_link_count(const cpl_workflow *wf);
/* Sum of nprocs: the size the MPI job must have. */
CPL_API int cpl_workflow_total_procs(const cpl_workflow *wf);
/* Index of a component by name, or -1. */
CPL_API int cpl_workflow_component_index(const cpl_workflow *wf, const char *name);

typedef struct cpl_component_info {
  const char *name;
  int nprocs;
  cpl_component_kind kind;
  int argc;                /* CPL_KIND_COMMAND: program and arguments */
  const char *const *argv; /* argc entries, then NULL                 */
  const char *file;        /* sink/source: HDF5 file; else NULL       */
  int line;                /* where it is declared in the file        */
} cpl_component_info;

CPL_API int cpl_workflow_component(const cpl_workflow *wf, int index, cpl_component_info *out);

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

CPL_API int cpl_workflow_link(const cpl_workflow *wf, int index, cpl_link_info *out);

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
CPL_API int cpl_init(MPI_Comm world, const char *workflow_path, const char *component,
                     cpl_context **out);

/* Close the ports left open, free every communicator and the context.
 * Collective over the job. The context and those ports' handles are
 * invalid afterwards (as after cpl_output_close / cpl_input_close). */
CPL_API int cpl_finalize(cpl_context *ctx);

CPL_API const cpl_workflow *cpl_context_workflow(const cpl_context *ctx);
/* This process's component index and name. */
CPL_API int cpl_context_component(const cpl_context *ctx, int *index, const char **name);
/* The component's communicator: use it instead of MPI_COMM_WORLD. Owned by
 * the context (freed by cpl_finalize). */
CPL_API int cpl_component_comm(const cpl_context *ctx, MPI_Comm *out);

/* One link as seen from this component. */
typedef struct cpl_link_end {
  int link;         /* global link index (cpl_workflow_link)    */
  cpl_role role;    /* CPL_SENDER on the producer side          */
  const char *port; /* local port                               */
  const char *peer_component, *peer_port;
  MPI_Comm intercomm; /* owned by the context; free for the        */
                      /* program's own calls: steps move on a     */
                      /* private duplicate                        */
  int remote_size;    /* ranks of the peer component              */
} cpl_link_end;

/* Links this component takes part in, in global link order. */
CPL_API int cpl_context_link_count(const cpl_context *ctx, int *count);
CPL_API int cpl_context_link(const cpl_context *ctx, int i, cpl_link_end *out);

/* The link of a local port. `peer` ("component" or "component.port")
 * picks one when the port has several links (fan-out, fan-in); NULL
 * is fine when there is only one. */
CPL_API int cpl_port_link(const cpl_context *ctx, const char *port, const char *peer,
                          cpl_link_end *out);

/* ================================================================== data
 * Datasets and steps over links. A producer component publishes steps on
 * an output port; every link from that port (fan-out) delivers them to its
 * consumer's input port. A step holds HDF5-described datasets: a datatype,
 * global dims, and each producer rank's block (a hyperslab). By default
 * consumers get the whole global array of every dataset on every rank
 * (allgather semantics) and read it, or any hyperslab of it, in any
 * convertible type; a consumer rank that selects boxes (see "selective
 * delivery" below) receives and holds only those.
 *
 * Producer, per output port:             Consumer, per input port:
 *   cpl_output_open                        cpl_input_open
 *   loop: cpl_output_begin_step            loop: cpl_input_begin_step
 *         cpl_output_put (per dataset)           (stop at CPL_END_OF_STREAM)
 *         cpl_output_attr (optional)             cpl_input_inquire / _get
 *         cpl_output_end_step                    cpl_input_end_step
 *   cpl_output_close (end of stream)       cpl_input_close
 *
 * Calls on one port are collective over the component (every rank makes
 * them, in the same order, with the same step number or request: ranks
 * that differ get CPL_ERR_MISMATCH); put, attr, inquire and get are local. Data move
 * at end of step with the link's inter-group allgather, when the consumer
 * asks for the next step; until then end_step keeps a copy, at most `depth`
 * steps per link. When the queue is full, the link's policy decides: `all`
 * waits for the consumer, `latest` drops the oldest queued step (counted,
 * logged to stderr), `every:N` offers only every N-th step. Every wait is
 * bounded by the link's timeout, and a timeout names link, rank and step.
 * cpl_finalize closes ports left open (and frees them, like close).
 */

/* HDF5 and threads. Debian's HDF5, like most builds, is not thread-safe,
 * and the data calls use it (datatypes) in put, attr, get, begin_step,
 * end_step and close. Coupler holds this process-wide recursive lock
 * whenever it calls HDF5, never across a wait, so the local calls (put,
 * attr, inquire, get) may run in several threads at once, on different
 * ports. The collective calls (open, begin_step, try_step, end_step,
 * close, finalize) of one component share its communicator: one thread at
 * a time, even on different ports. A program that calls HDF5 itself while
 * another of its threads may be inside a Coupler call holds the lock
 * around its own HDF5 calls. The first port a context opens initialises
 * HDF5, so the H5open() that the H5T_NATIVE_* macros call in the
 * program's threads needs no lock from then on. */
CPL_API void cpl_hdf5_lock(void);
CPL_API void cpl_hdf5_unlock(void);

#define CPL_MAX_RANK 32 /* most dimensions of a dataset */

typedef struct cpl_output cpl_output;
typedef struct cpl_input cpl_input;

/* Open output port `port` of this component (all of its links). */
CPL_API int cpl_output_open(cpl_context *ctx, const char *port, cpl_output **out);

/* Start a step. `step` is the step number consumers see: >= 0 and larger
 * than the previous one, or -1 for the previous one plus 1 (0 first). */
CPL_API int cpl_output_begin_step(cpl_output *out, long step);

/*
 * Add a dataset to the step: its name, element type, global dims (rank
 * 1..CPL_MAX_RANK), and this rank's block: the hyperslab start[]/count[]
 * of the global array, stored row-major and contiguous at `data`. A rank
 * with no part passes count with a zero (data may then be NULL) or skips
 * the put. Together the blocks of all ranks must tile the global array,
 * with no gap and no overlap; end_step checks it. `data` must stay valid
 * and unchanged until cpl_output_end_step returns.
 */
CPL_API int cpl_output_put(cpl_output *out, const char *name, hid_t type, int rank,
                           const hsize_t dims[], const hsize_t start[], const hsize_t count[],
                           const void *data);

/* A small attribute (n elements of `type`, at most 64 KiB) of the step
 * (dataset NULL) or of a dataset put in this step. Attributes of rank 0
 * travel; other ranks may set them too, they are not sent. */
CPL_API int cpl_output_attr(cpl_output *out, const char *dataset, const char *name, hid_t type,
                            size_t n, const void *value);

/* Finish the step and hand it to every link (see policies above). */
CPL_API int cpl_output_end_step(cpl_output *out);

/* Deliver queued steps (waiting for consumers under the link timeout),
 * then signal end of stream, and free the port. With a step begun and not
 * ended: CPL_ERR_STATE, which the consumers get instead of end of stream. */
CPL_API int cpl_output_close(cpl_output *out);

typedef struct cpl_output_stats {
  long steps;       /* steps ended on the port                          */
  long delivered;   /* steps the consumer received                      */
  long dropped;     /* policy latest: stale steps dropped               */
  long skipped;     /* policy every:N: steps not offered; and queued    */
                    /* steps a request for the latest or a later step   */
                    /* number passed over (cpl_input_begin_step_at)     */
  long undelivered; /* not taken: the consumer closed its input early  */
                    /* (or never opened it), or the port failed       */
  int queue_max;    /* most steps held at once                          */
  size_t bytes_max; /* most bytes held in step copies at once           */
  double wait_s;    /* time end_step/close waited for the consumer:     */
                    /* for credits and inside transfers; the port's     */
                    /* also for the other producer ranks (agreement)    */
} cpl_output_stats;

/* Links of the port (fan-out), and each one's counters; link -1 sums them
 * (queue_max and bytes_max: the port's own maxima). */
CPL_API int cpl_output_link_count(const cpl_output *out, int *n);
/* Link i of the port (0 <= i < count), as cpl_context_link reports it. */
CPL_API int cpl_output_link(const cpl_output *out, int i, cpl_link_end *le);
CPL_API int cpl_output_stats_get(const cpl_output *out, int link, cpl_output_stats *st);

/* Open input port `port`; `peer` ("component" or "component.port") picks
 * the link when several end at the port (fan-in), else NULL. */
CPL_API int cpl_input_open(cpl_context *ctx, const char *port, const char *peer, cpl_input **out);

/* Wait for the next step (up to the link timeout). Returns CPL_OK with its
 * number in *step (may be NULL), CPL_END_OF_STREAM after the producer's
 * last step, or an error: a producer-side failure (description mismatch,
 * ...) arrives here with the producer's message. */
CPL_API int cpl_input_begin_step(cpl_input *in, long *step);

/* As cpl_input_begin_step, but wait at most `seconds` (0: only look; at
 * most the link timeout). CPL_ERR_TIMEOUT here is not a failure: the
 * request stays open and a later call (try or begin) takes the step. With
 * several inputs (fan-in) it takes steps from whichever link has one. */
CPL_API int cpl_input_try_step(cpl_input *in, double seconds, long *step);

typedef struct cpl_dataset_info {
  const char *name;
  hid_t type; /* the producer's type; owned by the input, */
              /* valid until cpl_input_end_step           */
  int rank;
  hsize_t dims[CPL_MAX_RANK];
  size_t bytes; /* size of the global array, stored type    */
  int nattrs;
} cpl_dataset_info;

/* Datasets of the current step, by index (0..count-1) or by name. */
CPL_API int cpl_input_dataset_count(const cpl_input *in, int *n);
CPL_API int cpl_input_dataset(const cpl_input *in, int i, cpl_dataset_info *info);
CPL_API int cpl_input_inquire(const cpl_input *in, const char *name, cpl_dataset_info *info);

/* Copy the hyperslab start[]/count[] (NULL, NULL: the whole array) of a
 * dataset into buf, row-major, converted to memtype (H5T_NATIVE_DOUBLE,
 * ...; CPL_ERR_TYPE if HDF5 cannot convert the stored type to it). */
CPL_API int cpl_input_get(cpl_input *in, const char *name, hid_t memtype, const hsize_t start[],
                          const hsize_t count[], void *buf);

typedef struct cpl_attr_info {
  const char *name;
  hid_t type; /* owned by the input, valid until cpl_input_end_step */
  size_t n;   /* elements                                            */
} cpl_attr_info;

/* Attributes of the step (dataset NULL) or of a dataset. */
CPL_API int cpl_input_attr_count(const cpl_input *in, const char *dataset, int *n);
CPL_API int cpl_input_attr(const cpl_input *in, const char *dataset, int i, cpl_attr_info *info);
/* Attribute `name` of the step (dataset NULL) or of a dataset. */
CPL_API int cpl_input_attr_inquire(const cpl_input *in, const char *dataset, const char *name,
                                   cpl_attr_info *info);
/* Read attribute `name` converted to memtype into buf, which has room for
 * n elements (CPL_ERR_ARG if the attribute has more). */
CPL_API int cpl_input_attr_get(const cpl_input *in, const char *dataset, const char *name,
                               hid_t memtype, size_t n, void *buf);

CPL_API int cpl_input_end_step(cpl_input *in);

/* Requests for cpl_input_begin_step_at (step numbers are >= 0). */
#define CPL_STEP_NEXT (-1L)   /* the step after the last one taken     */
#define CPL_STEP_LATEST (-2L) /* the newest step the producer holds    */

/* As cpl_input_begin_step, but ask for a particular step: CPL_STEP_NEXT,
 * CPL_STEP_LATEST (older steps are passed over by this consumer), or a step
 * number. A producer serves a step it still holds (queued, or kept by a
 * stage) or waits to make it; one it no longer holds, or never made, is
 * CPL_ERR_NOT_FOUND with the range it holds, and the link stays usable. */
CPL_API int cpl_input_begin_step_at(cpl_input *in, long want, long *step);

/* -------------------------------------------------- selective delivery
 * By default every consumer rank receives every dataset whole. A rank that
 * declares what it reads reads only that, and, when the step moves by
 * redistribution, receives only that: the producer ranks send each
 * consumer rank the parts of their blocks inside its boxes (an M x N
 * redistribution), so a rank's memory for a step is its boxes, not the
 * global arrays. Selections are local calls, made after open or between
 * steps; they take effect at the next begin_step and stay until changed.
 * Once a rank selected anything, it reads only what it selected: a get
 * outside its boxes is CPL_ERR_ARG, and datasets it did not select (by
 * name or by a default) are not sent to it by the redistribution. Which
 * mechanism moves the step (the allgather to every rank, or the
 * redistribution) is the link's `delivery` (YAML): `auto` picks by the
 * cost model, per step. A step moved by the allgather brings every rank
 * every dataset whole, selections or not (cpl_input_stats: `selective`
 * counts the steps that were not, `bytes_held` what a rank holds).
 */

/* Read only these boxes of `dataset` (NULL: of every dataset with `ndims`
 * dimensions that has no selection of its own). start and count hold
 * nboxes x ndims values, box after box. Boxes may overlap (shared elements
 * travel once) and may reach past the array (they are clipped to it);
 * nboxes 0 means this rank reads nothing of it. Replaces an earlier
 * selection of the same dataset (or of the default). */
CPL_API int cpl_input_select(cpl_input *in, const char *dataset, int ndims, int nboxes,
                             const hsize_t start[], const hsize_t count[]);

/* Read only part `part` of `nparts` of dimension 0 (rows split as evenly as
 * possible, part 0 first; other dimensions whole), resolved at every step
 * from the dataset's dims. dataset NULL: every dataset without a selection
 * of its own, whatever its rank. */
CPL_API int cpl_input_select_rows(cpl_input *in, const char *dataset, int part, int nparts);

/* The rows [*start, *start + *count) of n that part `part` of `nparts`
 * reads under cpl_input_select_rows: contiguous, balanced (counts differ
 * by at most one, the first parts take the extra rows), parts in order.
 * A part outside 0..nparts-1 gets no rows (*start 0, *count 0). */
CPL_API void cpl_rows_part(hsize_t n, int part, int nparts, hsize_t *start, hsize_t *count);

/* Forget this rank's selections: whole datasets again from the next step. */
CPL_API int cpl_input_select_clear(cpl_input *in);

typedef struct cpl_input_stats {
  long steps;        /* steps taken                                    */
  long selective;    /* of them, moved by redistribution               */
  size_t bytes;      /* bytes this rank received, all steps            */
  size_t bytes_held; /* bytes of step data this rank holds now         */
  size_t bytes_max;  /* most bytes of step data held at once           */
  long selections;   /* times the group's selections went to the
                      * producer, before a step some rank of it had
                      * changed its own (one declared again as it was
                      * changes nothing: the producer keeps its plan)  */
} cpl_input_stats;

CPL_API int cpl_input_stats_get(const cpl_input *in, cpl_input_stats *st);

/* Tell the producer this consumer is done (it stops waiting for it), and
 * free the port. */
CPL_API int cpl_input_close(cpl_input *in);

/* Which link this port is, as cpl_port_link reports it. */
CPL_API int cpl_input_link(const cpl_input *in, cpl_link_end *out);

/* ------------------------------------------------ serving steps on request
 * A component that keeps steps (a staging service) answers each consumer's
 * requests itself instead of queueing every step for every link: it polls
 * the port's links for requests, then builds the step a request asks for
 * (begin_step, puts, attrs) and sends it to that one link. All calls are
 * collective over the component, like the rest of the port's calls; ranks
 * that name different links to send, refuse or end_link get
 * CPL_ERR_MISMATCH (and so do the consumers waiting on the port).
 */

/* Switch a freshly opened port to serving: end_step is replaced by
 * cpl_output_send, and step numbers need not increase. */
CPL_API int cpl_output_serve(cpl_output *out);

#define CPL_REQ_NONE (-3L) /* no request pending on the link           */
#define CPL_REQ_GONE (-4L) /* the consumer closed its input (or ended)  */

/* Wait up to `seconds` until some link has a request; want[i] (one per link
 * of the port, cpl_output_link_count) is then CPL_REQ_NONE, CPL_REQ_GONE,
 * or what the consumer asked for: CPL_STEP_NEXT, CPL_STEP_LATEST or a step
 * number. A request stays pending until answered. */
CPL_API int cpl_output_requests(cpl_output *out, double seconds, long want[]);

/* End the step built since begin_step and send it to link `link`, which
 * must have a request pending; the step's data move before it returns. A
 * request for a step number takes that step only: another is CPL_ERR_ARG,
 * the open step dropped and the request still pending. */
CPL_API int cpl_output_send(cpl_output *out, int link);

/* Answer link's pending request with CPL_ERR_NOT_FOUND and this message
 * (the consumer's begin_step_at returns it; the link stays usable). */
CPL_API int cpl_output_refuse(cpl_output *out, int link, const char *why);

/* End of stream for one link: its pending and later requests get
 * CPL_END_OF_STREAM. */
CPL_API int cpl_output_end_link(cpl_output *out, int link);

#ifdef __cplusplus
}
#endif
#endif /* COUPLER_H */
