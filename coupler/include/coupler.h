/*
 * Coupler: couple the components of an HPC workflow over MPI.
 *
 * The one public header. Conventions: every call returns a cpl_status
 * (CPL_OK = 0); on failure cpl_last_error() returns a message that says what
 * failed and where. Output parameters come last.
 */
#ifndef COUPLER_H
#define COUPLER_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
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
  CPL_ERR_MISMATCH,    /* ranks or components disagree (sizes, names, ...)  */
  CPL_ERR_TIMEOUT,     /* a wait ran past its deadline                      */
  CPL_ERR_IO,          /* file system error                                 */
  CPL_ERR_HDF5,        /* an HDF5 call failed                               */
  CPL_ERR_STATE,       /* call out of order (e.g. put outside a step)       */
  CPL_ERR_UNSUPPORTED, /* valid request this build cannot do                */
  CPL_ERR_INTERNAL,    /* a bug in Coupler: please report                   */
  CPL_END_OF_STREAM,   /* not an error: the producer has finished           */
  CPL_STATUS_COUNT
} cpl_status;

/* Short fixed description of a status code. Never NULL. */
const char *cpl_strerror(int status);

/* The message of the last failure in this thread ("" if none): what failed
 * and where (file:line:col for YAML; link, rank and step for transfers). */
const char *cpl_last_error(void);

/* ------------------------------------------------------ collective engine */

/* Inter-group algorithms (half-duplex allgather between two groups). */
typedef enum cpl_inter_algorithm {
  CPL_INTER_AUTO = 0, /* chosen by the alpha-beta cost model              */
  CPL_INTER_FC,       /* Kang et al., fully connected                     */
  CPL_INTER_RING,     /* Kang et al., ring (MPI_Sendrecv between neighbours)*/
  CPL_INTER_ROOT,     /* root gathering (what MPICH does), baseline       */
  CPL_INTER_NATIVE,   /* MPI_Allgatherv on the intercommunicator          */
  CPL_INTER_COUNT
} cpl_inter_algorithm;

/* Intra-group algorithms (allgather inside one group). */
typedef enum cpl_intra_algorithm {
  CPL_INTRA_AUTO = 0,    /* chosen by the alpha-beta cost model            */
  CPL_INTRA_CIRCULANT,   /* Traff's circulant-graph schedules             */
  CPL_INTRA_BRUCK,       /* Bruck et al. concatenation                    */
  CPL_INTRA_RING,        /* p-1 steps around a ring                       */
  CPL_INTRA_NATIVE,      /* MPI_Allgather(v) of the MPI library           */
  CPL_INTRA_COUNT
} cpl_intra_algorithm;

const char *cpl_inter_algorithm_name(cpl_inter_algorithm a);
const char *cpl_intra_algorithm_name(cpl_intra_algorithm a);
/* Parse "auto", "fc", ...; CPL_ERR_ARG with the list of valid names if unknown. */
int cpl_inter_algorithm_parse(const char *name, cpl_inter_algorithm *out);
int cpl_intra_algorithm_parse(const char *name, cpl_intra_algorithm *out);

/* Per-call options. Initialise with cpl_coll_options_init(); NULL means
 * defaults. The environment (CPL_INTER_ALGORITHM, CPL_INTRA_ALGORITHM)
 * overrides the algorithm fields when set to anything but "auto". */
typedef struct cpl_coll_options {
  cpl_inter_algorithm inter;
  cpl_intra_algorithm intra;
  double timeout;     /* seconds any single wait may take; 0: CPL_TIMEOUT
                         from the environment, else 600; < 0: no limit   */
  const char *label;  /* names the link in error messages; may be NULL    */
  long step;          /* step number for error messages; -1 if none       */
} cpl_coll_options;

void cpl_coll_options_init(cpl_coll_options *opt);

/* Which side of a half-duplex inter-group operation this process is on. */
typedef enum cpl_role { CPL_RECEIVER = 0, CPL_SENDER = 1 } cpl_role;

/*
 * Half-duplex inter-group allgather(v): every process of the receiving group
 * gets the block of every process of the sending group, in rank order.
 * Senders pass sendbuf/sendcount/sendtype (recv arguments are ignored);
 * receivers pass recvbuf/recvcounts/displs/recvtype with one entry per
 * remote (sending) rank (send arguments are ignored). Both groups must pass
 * opposite roles. Collective over the intercommunicator.
 */
int cpl_inter_allgatherv(const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf,
                         const int recvcounts[], const int displs[],
                         MPI_Datatype recvtype, cpl_role role,
                         MPI_Comm intercomm, const cpl_coll_options *opt);

int cpl_inter_allgather(const void *sendbuf, int sendcount,
                        MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, cpl_role role,
                        MPI_Comm intercomm, const cpl_coll_options *opt);

/* Intra-group allgather(v) with MPI semantics (MPI_IN_PLACE allowed). */
int cpl_intra_allgatherv(const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf,
                         const int recvcounts[], const int displs[],
                         MPI_Datatype recvtype, MPI_Comm comm,
                         const cpl_coll_options *opt);

int cpl_intra_allgather(const void *sendbuf, int sendcount,
                        MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, MPI_Comm comm,
                        const cpl_coll_options *opt);

/* Round-optimal n-block broadcast (Traff), MPI_Bcast semantics. */
int cpl_intra_bcast(void *buf, int count, MPI_Datatype type, int root,
                    MPI_Comm comm, const cpl_coll_options *opt);

/* The algorithm `auto` (or the environment) picks for this call shape:
 * p senders, q receivers, `bytes` the total bytes every receiver gets. */
int cpl_inter_select(int p, int q, size_t bytes,
                     const cpl_coll_options *opt, cpl_inter_algorithm *out);
int cpl_intra_select(int p, size_t bytes, int regular,
                     const cpl_coll_options *opt, cpl_intra_algorithm *out);

/* Predicted time in seconds of an algorithm under the alpha-beta model
 * (alpha = latency s, beta = s/byte), `bytes` total per receiver. */
double cpl_inter_cost(cpl_inter_algorithm a, int p, int q, size_t bytes,
                      double alpha, double beta);
double cpl_intra_cost(cpl_intra_algorithm a, int p, size_t bytes,
                      double alpha, double beta);

#ifdef __cplusplus
}
#endif
#endif /* COUPLER_H */
