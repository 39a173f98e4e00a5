/*
 * Selective delivery: the M x N redistribution of one step.
 *
 * Producer rank i sends consumer rank j, in one message, the parts of its
 * blocks inside j's pieces (data/select.h): dataset by dataset in the
 * description's order, piece by piece in the selection's order. Both ends
 * describe those parts with MPI datatypes over their own memory (the
 * producer's block, the consumer's piece buffers), so the message goes
 * from the producer's buffer to the consumer's; except that a message of
 * at most CPLI_REDIST_PACK_MAX bytes is packed into (and received into) a
 * contiguous buffer by each end on its own (see redist.c for why).
 * Only pairs with something in common exchange a message.
 *
 * The producer group chooses between this and the link's allgather for
 * every (description, selection) pair, identically on every rank, with the
 * alpha-beta model; the step header tells the consumers which it was.
 */
#ifndef CPLI_DATA_REDIST_H
#define CPLI_DATA_REDIST_H

#include "data/desc.h"
#include "data/select.h"

/* How a step's data travel (named in its header). SCATTER: each producer
 * rank sends its blocks to one consumer rank (scatter_owner), and the
 * consumer group shares them (intra-group allgatherv): the producer only
 * posts sends, so a step can be left in flight (policy latest). */
enum { CPLI_MODE_ALLGATHER = 0, CPLI_MODE_SELECT = 1, CPLI_MODE_SCATTER = 2 };

/* One part of a message: a box of dataset k (global coordinates). */
typedef struct cpli_rpart {
  int k;
  hsize_t start[CPL_MAX_RANK], count[CPL_MAX_RANK];
} cpli_rpart;

/* A producer rank's plan for one link, valid for one description version
 * and one selection version. */
typedef struct cpli_rplan {
  int valid;
  long desc_version, sel_version;
  int mode;                           /* CPLI_MODE_*                                */
  double cost_allgather, cost_select; /* the model's seconds per step     */
  size_t bytes_needed;                /* sum over consumer ranks of what they read  */
  int q;
  int *first;        /* q + 1: parts of consumer j are             */
  cpli_rpart *parts; /*   parts[first[j] .. first[j+1])            */
  int nparts, cap;
} cpli_rplan;

void cpli_rplan_free(cpli_rplan *pl);

/*
 * Plan link delivery for description d sent by producer rank `me` to q
 * consumer ranks with selections sels[q] (NULL: none selected anything).
 * delivery: the link's YAML choice; opt: the link's collective options
 * (its inter algorithm, for the allgather's cost). Identical on every
 * producer rank.
 */
int cpli_rplan_build(cpli_rplan *pl, const cpli_desc *d, int me, int q, const cpli_sel *sels,
                     int delivery, const cpl_coll_options *opt, const char *where);

/* Point-to-point messages posted and not yet complete (a step in flight):
 * peer[i] is the remote rank of reqs[i], pack[i] its packed copy (or
 * NULL), freed once the message completed. */
typedef struct cpli_posted {
  MPI_Request *reqs;
  int *peer;
  char **pack;
  int n;
} cpli_posted;

/* Test without waiting: *done once every message completed. */
int cpli_posted_test(cpli_posted *m, int *done);
/* Wait until every message completed, or `timeout` seconds pass without
 * any completing (then withdrawn, and the peers still outstanding named;
 * who: "consumer" or "producer"). */
int cpli_posted_wait(cpli_posted *m, double timeout, const char *where, const char *who);
/* Withdraw what is still pending (after a failure), free the bookkeeping. */
void cpli_posted_drop(cpli_posted *m);
/* "0, 2" (at most n bytes): the peers of messages still pending. */
const char *cpli_posted_peers(const cpli_posted *m, char *buf, size_t n);

/* Producer: post this rank's parts (blocks[k]: its block of dataset k),
 * without waiting; *bytes: what it sends. */
int cpli_redist_post(const cpli_rplan *pl, const cpli_desc *d, int me, const void *const *blocks,
                     MPI_Comm comm, int tag, const char *where, cpli_posted *m, size_t *bytes);

/* SCATTER: the consumer rank (of q) that receives producer rank i's blocks
 * (of p). Each consumer gets a contiguous range of producer ranks. */
static inline int cpli_scatter_owner(int i, int p, int q) { return (int)((long)i * q / p); }

/* Producer: post this rank's blocks to its owner, those of the batch
 * (desc.h) packed into one message first; *bytes: what it sends. */
int cpli_scatter_post(const cpli_desc *d, int me, int q, const void *const *blocks, MPI_Comm comm,
                      int tag, const char *where, cpli_posted *m, size_t *bytes);

/* Consumer rank me (of group comm): receive the blocks it owns into the
 * whole-array buffers buf[k] (at the description's offsets), then share
 * them in the group, so every rank holds every dataset whole. The batch
 * (desc.h) travels as one message per producer rank, into `batch`
 * (d->batch_total bytes), is shared in one allgather and unpacked. */
int cpli_scatter_recv(const cpli_desc *d, const cpl_coll_options *opt, MPI_Comm group,
                      char *const *buf, char *batch, MPI_Comm comm, int tag, const char *where,
                      size_t *bytes);

/* Producer: send this rank's parts (blocks[k]: its block of dataset k);
 * *bytes: what it sent. */
int cpli_redist_send(const cpli_rplan *pl, const cpli_desc *d, int me, const void *const *blocks,
                     MPI_Comm comm, int tag, double timeout, const char *where, size_t *bytes);

/* Consumer: receive into the piece buffers: for dataset k, pieces[k] and
 * buf[k] holding them one after another, row-major each. *bytes: what
 * arrived. */
int cpli_redist_recv(const cpli_desc *d, const cpli_boxes *pieces, char *const *buf, MPI_Comm comm,
                     int tag, double timeout, const char *where, size_t *bytes);

/* Bytes of the pieces of one dataset (elements x esize). */
size_t cpli_pieces_bytes(const cpli_boxes *pieces, size_t esize);

#endif
