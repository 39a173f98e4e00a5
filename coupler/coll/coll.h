/*
 * Internal contract of the collective engine.
 *
 * Algorithms move bytes only. The public entry points (api.c) turn the
 * user's (buffer, count, datatype) triples into byte blocks: contiguous
 * datatypes are used in place (zero copy), others are packed on the way in
 * and unpacked on the way out. So every algorithm sees MPI_BYTE on private
 * communicators and never has to reason about type signatures of blocks it
 * only relays. Coupler assumes a homogeneous machine (the same data
 * representation on every rank), as MPICH on one cluster is.
 *
 * Every wait goes through cpli_waitall, which polls with a deadline: a lost
 * peer is a CPL_ERR_TIMEOUT that names link, rank and step, never a silent
 * hang. Lockstep algorithms use it through cpli_xfer/cpli_xferv; dataflow
 * ones (the pipelined broadcast) post requests ahead and wait on each.
 */
#ifndef CPLI_COLL_H
#define CPLI_COLL_H

#include <stddef.h>

#include "core/error.h"
#include "coupler.h"
#include "sched/flow.h"

/* Where a collective runs, for error messages and deadlines. */
typedef struct cpli_ctx {
  double timeout;    /* seconds per wait; <= 0: wait forever             */
  const char *label; /* link or communicator name ("" if none)           */
  long step;         /* user step, -1 if none                            */
  const char *alg;   /* algorithm running                                */
  int xstep;         /* schedule step inside the algorithm, for messages */
  char who[32];      /* "sender 3", "receiver 0": the caller's own rank  */
  /* inter-group call: the algorithm running, after auto and any switch */
  cpl_inter_algorithm inter;
  /* cpli_waitall's back-off (core/wait.h): 0, spin, as peers are in the
   * same call; a wait on a rank that first waits for another component
   * naps (CPLI_WAIT_NAP_US) */
  unsigned nap_us;
  /* An inter-group call's merged communicator (senders first, nsend of
   * them), set by cpli_link_dir: messages name peers by role
   * (cpli_peer_name). nsend 0: unset, peers are ranks. */
  MPI_Comm merged;
  int nsend;
} cpli_ctx;

/* How messages name peer `rank` of comm: on an inter-group call, by role
 * ("sender 1", "receiver 0"), whichever of the link's communicators comm
 * is (their ranks are none the caller knows: receiver j is rank p + j of
 * the merged one); else "rank 3". Writes into buf and returns it. */
const char *cpli_peer_name(const cpli_ctx *ctx, MPI_Comm comm, int rank, char *buf, size_t n);

/* CPL_ERR_ENV (the message the engine gives) if the environment makes
 * every collective fail: a broken tuning file, a bad CPL_ALPHA, CPL_BETA,
 * CPL_OVERHEAD, CPL_CHUNK, CPL_FLOW or CPL_RING, an unknown
 * CPL_INTER_ALGORITHM or CPL_INTRA_ALGORITHM. (Not CPL_TIMEOUT: only
 * calls without a timeout of their own read it, no link's step does.) */
int cpli_coll_env_check(void);

/* An inter-group call runs algorithm a from now on: what its messages
 * name (alg) and what the entry point reports as run (inter). */
void cpli_ctx_inter(cpli_ctx *ctx, cpl_inter_algorithm a);

/* A byte block list: block i is counts[i] bytes at base + displs[i]. */
typedef struct cpli_blocks {
  char *base;
  const size_t *counts;
  const size_t *displs;
} cpli_blocks;

/* One exchange step: send sbytes at sbuf to dest and receive rbytes into
 * rbuf from src, concurrently. dest or src may be MPI_PROC_NULL; a zero-byte
 * side still sends an empty message, so both ends agree on the step. */
int cpli_xfer(MPI_Comm comm, const void *sbuf, size_t sbytes, int dest, void *rbuf, size_t rbytes,
              int src, cpli_ctx *ctx);

/* Receiver 0 of an allgatherv whose senders sent their sizes (native):
 * MPI_ERR_TRUNCATE naming the first sender whose block is not
 * counts[i] bytes (counts that differ from the senders' but add up to the
 * same total, which the blocks' own messages cannot show), else CPL_OK. */
int cpli_sizes_agree(const unsigned long long *sizes, const size_t *counts, int p);

/* As cpli_xfer, for several pieces per side (offsets relative to the
 * base pointers); pieces travel as one message with an hindexed type. */
int cpli_xferv(MPI_Comm comm, const void *sbase, int ns, const size_t *slen, const size_t *soff,
               int dest, void *rbase, int nr, const size_t *rlen, const size_t *roff, int src,
               cpli_ctx *ctx);

/* Broadcast from rank 0 of comm (on the engine's private duplicate, as
 * cpl_intra_bcast), for ranks that may wait long for rank 0 (it waits on
 * another component first): they nap between polls (CPLI_WAIT_NAP_US)
 * instead of spinning, so an idle rank leaves a shared core to the ranks
 * that work. CPL_ERR_TIMEOUT after ctx->timeout; buf is not written
 * after that (a late rank 0 broadcasts into a copy the call leaves MPI). */
int cpli_intra_bcast_napping(void *buf, int count, MPI_Datatype type, MPI_Comm comm, cpli_ctx *ctx);

/* All ranks of comm use the same cost model (coll/tuning_agree.c):
 * CPL_ERR_MISMATCH on every rank otherwise. Collective; once per
 * communicator, where the engine first sets it up. On a link direction's
 * merged communicator `role` is this rank's (CPL_SENDER or CPL_RECEIVER),
 * and both must be there; -1 elsewhere. */
int cpli_tuning_agree(MPI_Comm comm, const char *where, int role);

/* Wait for n requests with the ctx deadline; `what` names the operation
 * and peer the remote rank, for the timeout message. peer < 0 marks a
 * nonblocking collective, which MPI does not allow to cancel; point-to-point
 * requests are cancelled on timeout. */
int cpli_waitall(int n, MPI_Request *reqs, cpli_ctx *ctx, MPI_Comm comm, const char *what,
                 int peer);

/* A completed receive (status st, from peer) brought exactly `want`
 * bytes: CPL_OK, else MPI_ERR_TRUNCATE saying what came and what was
 * expected. A longer message is MPI's truncation already; a shorter one
 * MPI accepts, and would leave the rest of the block as it was, so every
 * receive of a step or plan is checked (senders that pass fewer elements
 * than the receivers' counts, which the receivers cannot otherwise see). */
int cpli_recv_size(const MPI_Status *st, size_t want, cpli_ctx *ctx, MPI_Comm comm, int peer);
/* cpli_waitall for one receive from peer, then cpli_recv_size. */
int cpli_wait_recv(MPI_Request *req, size_t want, cpli_ctx *ctx, MPI_Comm comm, int peer);

/* Small allgathers (up to this many bytes in all) gather in a buffer in
 * the rank's relative order, one contiguous message per step
 * (coll/relative.c): there a message costs more than copying the blocks. */
#define CPLI_RELATIVE_MAX ((size_t)64 << 10)

/* One poll of req[0..n), as MPI_Testsome but driving MPI's progress at
 * most once: the indices of the requests found complete (now freed) in
 * idx[0..*outcount) and their statuses in st[0..*outcount), starting at
 * *at and moving it on (coll/flow_exec.c). Returns an MPI error code. */
int cpli_poll_some(int n, MPI_Request *req, int *at, int *idx, MPI_Status *st, int *outcount);

/* Message header for failures inside a collective: "link L, receiver R,
 * step S (ALG step X)", naming the caller by ctx->who (its rank in its own
 * group) or else by its rank in comm. Writes into buf and returns it. */
const char *cpli_ctx_where(const cpli_ctx *ctx, MPI_Comm comm, char *buf, size_t n);

/* Run a resolved dataflow plan (sched/flow.h) on comm: every receive
 * posted at once, each send issued when its data has arrived. base0 is
 * buffer 0 of the plan, base1 buffer 1 (NULL if the plan does not use it).
 * Deadline per wait as for cpli_waitall, restarted by any progress. */
int cpli_flow_run(const cpli_flow *f, MPI_Comm comm, char *base0, const char *base1, cpli_ctx *ctx);

/* Which plan: the algorithm, this rank and the shape (q < 0: one group of
 * p), named only when building it fails (a cache hit formats nothing). */
typedef struct cpli_plan_what {
  const char *alg;
  int rank, p, q;
} cpli_plan_what;

/* Run the plan kept under key in cache (both may be NULL: no caching);
 * on a miss build it with build(f, arg), resolve it and keep it. A plan
 * that does not resolve is a bug in Coupler, reported with `what`. */
struct cpli_plan_cache;
struct cpli_plan_key;
typedef int (*cpli_flow_build_fn)(cpli_flow *f, const void *arg);
int cpli_flow_run_cached(struct cpli_plan_cache *cache, const struct cpli_plan_key *key,
                         cpli_flow_build_fn build, const void *arg, cpli_plan_what what,
                         MPI_Comm comm, char *base0, const char *base1, cpli_ctx *ctx);

/* Largest message of the MPI calls that take int counts (the dataflow
 * executor, the broadcast's blocks): algorithms cut pieces at this size.
 * cpli_xfer and cpli_xferv use large-count calls and take any size. */
#define CPLI_MAX_MSG ((size_t)0x7fffffff)

/* MPICH's own collectives (native) are used
 * only while all the blocks of a call together fit int counts: MPICH
 * 4.0.2's MPI_Iallgatherv_c with one 2 GiB block grew to 12.7 GB and was
 * killed. Every rank of both groups knows this total before any transfer
 * (senders of an allgatherv after exchanging their sizes), so the limit
 * is decided alike everywhere. */
#define CPLI_NATIVE_MAX ((size_t)0x7fffffff)

/* The data layer's entry points: blocks as bytes of any size (size_t
 * counts and displacements, no datatypes, no copy), with the algorithm
 * choice and checks of cpl_inter_allgatherv / cpl_intra_allgatherv. The
 * sender passes its own block; receivers the p blocks. The intra one is
 * in place: every rank's own block is already at its displacement.
 * *ran (unless NULL) is set on success to the inter-group algorithm that
 * moved the blocks, after auto and native's switch to fc. */
int cpli_inter_allgatherv_bytes(const void *own, size_t own_bytes, void *recvbuf,
                                const size_t counts[], const size_t displs[], cpl_role role,
                                MPI_Comm intercomm, const cpl_coll_options *opt,
                                cpl_inter_algorithm *ran);
int cpli_intra_allgatherv_bytes(void *buf, const size_t counts[], const size_t displs[],
                                MPI_Comm comm, const cpl_coll_options *opt);

/* Is buf a NULL pointer where count elements of type would be? NULL is
 * MPI_BOTTOM, right for a type of absolute addresses (true lower bound
 * not 0); wrong when data would sit at address 0, as MPI sees it. */
int cpli_buffer_null(const void *buf, long long count, MPI_Datatype type);

/* --------------------------------------------------------- intra-group */

/* Allgatherv inside comm (a private communicator). On entry the calling
 * rank's own block is already in place in `blk`; on return every block is.
 * Counts and displacements are in bytes and identical on every rank. */
struct cpli_plan_cache;
typedef struct cpli_intra_args {
  MPI_Comm comm;
  cpli_blocks blk;
  cpli_ctx *ctx;
  struct cpli_plan_cache *plans; /* the communicator's plans; NULL: none */
} cpli_intra_args;

/* A copy of the blocks in rank r's relative order (block r first, then
 * r + 1, ...): at[j] is where block j starts in buf, at[p] the total.
 * Open stages the rank's own block; close copies the others into the
 * caller's layout when `ok`, and frees (coll/relative.c). */
typedef struct cpli_relative {
  size_t *at;
  char *buf;
} cpli_relative;
int cpli_relative_open(const cpli_blocks *b, int p, int r, cpli_relative *x);
void cpli_relative_close(cpli_relative *x, const cpli_blocks *b, int p, int r, int ok);

/* Lockstep rounds on a relative-order buffer: in round k send blocks
 * r .. r + count[k] - 1 to r - skip[k], receive r + skip[k] ..
 * r + skip[k] + count[k] - 1 from r + skip[k] (coll/relative.c). */
int cpli_rounds_relative(const cpli_intra_args *a, int p, int r, int rounds, const int *skip,
                         const int *count);

typedef int (*cpli_intra_fn)(const cpli_intra_args *a);

int cpli_intra_circulant(const cpli_intra_args *a); /* Traff Alg. 7 / 9 */
int cpli_intra_bruck(const cpli_intra_args *a);
int cpli_intra_ring(const cpli_intra_args *a);
int cpli_intra_native(const cpli_intra_args *a);
int cpli_intra_root(const cpli_intra_args *a);

/* Sum of the p block sizes into *total; returns 1 if every block also
 * ends within int displacements (native's own layout limit). */
int cpli_native_total(const cpli_blocks *b, int p, size_t *total);

/* Round-optimal n-block broadcast (Traff Alg. 6) of bytes from root,
 * split into nblocks blocks (0: choose by the cost model). */
int cpli_bcast_circulant(MPI_Comm comm, void *buf, size_t bytes, int root, int nblocks,
                         cpli_ctx *ctx);

cpli_intra_fn cpli_intra_fn_of(cpl_intra_algorithm a);

/* --------------------------------------------------------- inter-group */

struct cpli_link;

/* Half-duplex inter-group allgatherv in bytes. On senders, `own` is this
 * sender's block; on receivers, `blk` has one block per sender. Every
 * process knows p and q; `sender_counts` (all p byte counts) is available
 * on receivers always and on senders only after cpli_link_sender_counts. */
typedef struct cpli_inter_args {
  struct cpli_link *link;
  int sender;      /* 1 on the sending group                */
  int p, q;        /* sizes of sending and receiving groups */
  int regular;     /* every block has own_bytes (allgather) */
  const void *own; /* senders: own block                    */
  size_t own_bytes;
  cpli_blocks blk;           /* receivers: all p blocks               */
  cpl_intra_algorithm intra; /* algorithm for intra-group phases      */
  int by_auto;               /* chosen by auto: native may hand to fc */
  cpli_ctx *ctx;
} cpli_inter_args;

typedef int (*cpli_inter_fn)(const cpli_inter_args *a);

int cpli_inter_fc(const cpli_inter_args *a);
int cpli_inter_ring(const cpli_inter_args *a);
int cpli_inter_root(const cpli_inter_args *a);
int cpli_inter_native(const cpli_inter_args *a);
int cpli_inter_direct_ring(const cpli_inter_args *a);
int cpli_inter_two_hop(const cpli_inter_args *a);
int cpli_inter_chains(const cpli_inter_args *a);

/* Run an inter-group plan cut by the model (direct-ring, two-hop): build
 * it with fn from the tuning snapshot, keep it in the link's plan cache
 * under `tag` (negative: fc's keys start with its chunk) and run it. */
int cpli_inter_run_model_plan(const cpli_inter_args *a,
                              int (*fn)(cpli_flow *f, int p, int q, int me, const size_t *counts,
                                        const size_t *displs, size_t own_bytes,
                                        const cpli_fc_opts *o),
                              int tag, const char *name);

#endif
