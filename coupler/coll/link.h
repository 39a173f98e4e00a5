/*
 * Per-intercommunicator cache ("link"): a private duplicate for Coupler's
 * traffic plus the helper communicators and schedules each algorithm needs,
 * built on first use and freed with the user's communicator (attribute
 * delete callback). Helpers are kept per direction, because a process may
 * be a sender in one call and a receiver in the next.
 */
#ifndef CPLI_LINK_H
#define CPLI_LINK_H

#include "coll/coll.h"
#include "sched/plan_cache.h"
#include "sched/sched.h"

typedef struct cpli_dir {
  int ready;
  int p, q;        /* senders, receivers                               */
  MPI_Comm merged; /* senders first: rank = sender i or p + receiver j */
  MPI_Comm local;  /* this side's group, private                       */
  /* fc (built on first use) */
  int fc_ready;
  MPI_Comm fc_group; /* p >= q: receivers + extra senders, rank = block;
                        p < q: one receiver subgroup (+ remainder)       */
  MPI_Comm fc_bcast; /* p < q: broadcast group, root (sender) is rank 0  */
  int fc_extra;      /* p < q: number of remainder members in fc_group   */
  /* ring (built on first use): this rank's steps of the schedule */
  int ring_ready;
  int ring_nsteps;
  int *ring_send_to, *ring_send_msg; /* per step; -1 = idle */
  int *ring_recv_from, *ring_recv_msg;
  unsigned char *ring_recv_dup; /* receipt of a message already held */
  cpli_plan_cache plans;        /* fc dataflow plans                 */
  int agreed;                   /* cpli_tuning_agree at first use, and */
  char *disagreed;              /* its message: every later call fails */
} cpli_dir;

typedef struct cpli_link {
  MPI_Comm inter; /* private dup of the user's intercommunicator */
  int lrank, lsize, rsize;
  int tainted;     /* a call failed: see cpli_comm_taint */
  cpli_dir dir[2]; /* [0] this side receives, [1] this side sends  */
} cpli_link;

/* The cached link of a user intercommunicator, created (collectively, on
 * both groups) on first use. */
int cpli_link_get(MPI_Comm user_inter, cpli_ctx *ctx, cpli_link **out);

/* Merged and local communicators for one direction (collective on first
 * use: both groups must call with opposite roles; a group that does not
 * come, for instance after failing the call's other direction, is a
 * timeout under ctx's deadline, not a hang in MPI_Intercomm_merge). */
int cpli_link_dir(cpli_link *l, int sender, cpli_ctx *ctx, cpli_dir **out);

/* Byte counts of all p senders, on senders: all equal to own_bytes for a
 * regular call, else an allgather inside the sending group. `counts` has
 * p entries. */
int cpli_sender_counts(cpli_dir *d, size_t own_bytes, int regular, size_t *counts, cpli_ctx *ctx);

/* Cache for intra-group communicators: a private dup and its plans
 * (plans may be NULL). The first use dups under ctx's deadline and checks
 * that the ranks agree on the cost model; a disagreement then fails every
 * call on the communicator (CPL_ERR_MISMATCH), as it does every call on
 * an inter-group link direction (cpli_link_dir). */
int cpli_intra_comm_get(MPI_Comm user_comm, cpli_ctx *ctx, MPI_Comm *priv, cpli_plan_cache **plans);

/* A call on user_comm (an intercommunicator's link or an intra-group
 * cache) failed. It may leave messages in flight: receives are cancelled,
 * sends are not, and a sender's blocks may still arrive. Were the private
 * communicators freed with the user's, MPI would give their context to a
 * later communicator, whose calls would match those stale messages (a
 * drop-in MPI_Allgatherv that failed with MPI_ERR_TRUNCATE under chains,
 * then a new intercommunicator's first call hung). So they are never
 * freed: a few communicators leaked per failure. */
void cpli_comm_taint(MPI_Comm user_comm, int inter);

#endif
