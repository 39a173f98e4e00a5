/*
 * Dataflow plans (pure: no MPI calls).
 *
 * A plan is one rank's part of a collective as a list of messages: receives
 * and sends, each a list of byte pieces of one buffer. It carries no steps:
 * the executor (coll/flow_exec.c) posts every receive at once and issues each
 * send as soon as the receives that bring the bytes it reads have completed
 * (its dependencies, computed here from byte ranges). So a link never waits
 * for a step boundary, only for data: a lockstep round costs a rendezvous
 * and the slowest peer's skew every time, a plan pays them once.
 *
 * Message matching is MPI's: one tag, and both ends list the messages
 * between a pair in the same order. The executor keeps that order per peer
 * (it may issue a send to one peer before an earlier send to another).
 *
 * Transfers are streams, cut into messages of at most `chunk` bytes where
 * a block should move on before all of it has arrived (sched/cut.h says
 * where; CPL_CHUNK forces one cut everywhere). Cuts depend only on a
 * stream's length and on values both ends know, never on memory layout,
 * so both ends agree even when their layouts differ (fc's extra senders
 * stage blocks packed, receivers use the caller's displacements). The
 * plan keeps a note per stream of how and why it was cut (--explain).
 *
 * Builders for Traff's circulant allgather (Alg. 7) and n-block broadcast
 * (Alg. 6) are here; coll/ combines them into the fc plans. The simulator
 * replays the plans of all ranks with the executor's issue rules and moves
 * real bytes, so unit tests check matching, deadlock freedom and delivered
 * data without MPI.
 */
#ifndef CPLI_SCHED_FLOW_H
#define CPLI_SCHED_FLOW_H

#include <stddef.h>

#include "sched/circulant.h"
#include "sched/cut.h"

/* Largest message (MPI int count of MPI_BYTE). */
#define CPLI_FLOW_MAX_MSG ((size_t)0x7fffffff)
/* Most messages one stream is cut into, whatever the chunk asked for (a
 * fixed CPL_CHUNK on a huge stream): every message is a request posted at
 * once by the executor, and MPICH aborts when its request pool runs out
 * (a million receives did). Both ends cut from the same length, so they
 * agree on the cap. Only CPLI_FLOW_MAX_MSG can make a stream longer. */
#define CPLI_FLOW_MAX_STREAM_MSGS ((size_t)4096)

typedef struct cpli_fmsg {
  int send; /* 1: send, 0: receive                                  */
  int peer; /* rank in the communicator the plan runs on            */
  int buf;  /* 0: the blocks buffer; 1: a read-only own buffer      */
  int np;   /* pieces off[p0 .. p0 + np), len[...]                  */
  size_t p0;
  size_t bytes; /* total                                                */
  size_t d0;    /* sends, after resolve: messages waited for,          */
  int nd;       /* dep[d0 .. d0 + nd) (indices into m)                  */
  size_t after; /* sends: 1 + a message to complete first (0: none)    */
} cpli_fmsg;

/* How one stream was cut (sched/cut.h): messages m[m0 .. m0 + nmsg). */
typedef struct cpli_fnote {
  int send, peer;
  int why;   /* CPLI_CUT_... */
  int depth; /* the pipeline's depth (CPLI_CUT_PIPE, CPLI_CUT_BCAST), else 1 */
  size_t bytes, chunk, m0, nmsg;
} cpli_fnote;

typedef struct cpli_flow {
  cpli_fmsg *m;
  size_t nm, cm;
  size_t *off, *len; /* pieces */
  size_t npc, cpc;
  size_t *dep;
  size_t ndep, cdep;
  int *hbuf; /* byte ranges valid before the plan runs */
  size_t *hoff, *hlen;
  size_t nh, ch;
  int resolved;
  cpli_fnote *note; /* one per stream with bytes */
  size_t nnote, cnote;
  /* Set before adding streams: the cut's reason and depth for the notes
   * (builders set them), and cut_fixed when the chunk given is CPL_CHUNK. */
  int note_why, note_depth, cut_fixed;
} cpli_flow;

void cpli_flow_init(cpli_flow *f);
void cpli_flow_free(cpli_flow *f);

/* Bytes [off, off + len) of buffer `buf` hold valid data from the start. */
int cpli_flow_have(cpli_flow *f, int buf, size_t off, size_t len);

/* A stream of n segments (segment i: len[i] bytes at off[i] of buffer
 * buf, zero-length segments allowed), read as one string of L = sum len
 * bytes, sent to (send = 1) or received from peer as m = ceil(L / chunk)
 * messages, message i covering bytes [floor(i L / m), floor((i+1) L / m))
 * of the string (chunk 0: no cutting; never a message over
 * CPLI_FLOW_MAX_MSG, never more than CPLI_FLOW_MAX_STREAM_MSGS messages
 * unless that forces it; nothing at all if L == 0). Receives go to buffer 0.
 * Returns CPL_OK, CPL_ERR_NOMEM or CPL_ERR_ARG. */
int cpli_flow_stream(cpli_flow *f, int send, int peer, int buf, int n, const size_t *off,
                     const size_t *len, size_t chunk);

/* A message without bytes to or from peer, the last of the plan; a send
 * waits for message `after` (CPLI_FLOW_NONE: nothing). Its completion at
 * the receiver says that the sender got that far. */
#define CPLI_FLOW_NONE ((size_t)-1)
int cpli_flow_signal(cpli_flow *f, int send, int peer, size_t after);
/* Send i is issued only once message j < i of the same plan has completed,
 * besides waiting for its data: an order among a rank's own streams (a
 * sender that should feed its peers one after another, not all at once).
 * CPL_ERR_ARG if i is not a send or j >= i. */
int cpli_flow_order(cpli_flow *f, size_t j, size_t i);
/* Dependencies: every byte a send reads must be valid from the start or be
 * written by a receive, and the send waits for each such receive (and for
 * the message cpli_flow_order put before it).
 * CPL_ERR_INTERNAL (first fault in why) if two receives write the same
 * byte, a receive writes a byte valid from the start, or a send reads a
 * byte nobody provides. Does not touch the last-error message. */
int cpli_flow_resolve(cpli_flow *f, char *why, size_t whylen);

/* Traff Alg. 7 on the circulant graph of c->p members: member r receives
 * blocks r + skips[k] .. r + skips[k+1] - 1 from r + skips[k] and sends
 * blocks r .. r + skips[k+1] - skips[k] - 1 to r - skips[k], k = 0..q-1,
 * each round as one stream (block j: counts[j] bytes at displs[j] of
 * buffer 0). rank_of[g] is member g's rank in the communicator (NULL:
 * g). The caller declares (have) or receives member r's own block. */
int cpli_flow_alg7(cpli_flow *f, const cpli_circ *c, int r, const int *rank_of,
                   const size_t *counts, const size_t *displs, size_t chunk);

/* Traff Alg. 6: n-block broadcast of `bytes` bytes from member 0 of c->p
 * members, one message per block and round; this is member rel. The root
 * reads buffer `root_buf` at offset `off`, the others receive into buffer
 * 0 at `off`. Blocks: the first bytes % n are one byte longer. n is
 * clamped to 1..bytes and so that blocks fit one message. */
int cpli_flow_bcast(cpli_flow *f, const cpli_circ *c, int rel, const int *rank_of, int root_buf,
                    size_t off, size_t bytes, long long n);
/* The same over a string of nseg segments (segment i: len[i] bytes at
 * off[i]; a member's segments may lie elsewhere than another's, the
 * blocks are cut from the string). */
int cpli_flow_bcast_segs(cpli_flow *f, const cpli_circ *c, int rel, const int *rank_of,
                         int root_buf, int nseg, const size_t *off, const size_t *len, long long n);

/* Pipelined ring allgather over n members: member r sends blocks r, r-1,
 * .., r-n+2 to r+1 and receives blocks r-1, .., r-n+1 from r-1 (mod n),
 * each block one stream; a block is passed on piece by piece as it
 * arrives. One peer per direction for the whole operation. */
int cpli_flow_ring(cpli_flow *f, int n, int r, const int *rank_of, const size_t *counts,
                   const size_t *displs, size_t chunk);
/* The same with two cuts: `first` for a member's first send (its own
 * block, which may still be arriving) and for every send of members
 * nown .. n-1 (who hold no block of their own, so all they send is
 * still arriving), `rest` for the others. */
int cpli_flow_ring_cut(cpli_flow *f, int n, int r, const int *rank_of, const size_t *counts,
                       const size_t *displs, size_t first, size_t rest, int nown);

/* How cpli_flow_fc runs its phases. */
typedef struct cpli_fc_opts {
  size_t chunk;      /* stream cut (0: none); with `model`: a fixed cut that
                      * overrides the model (CPL_CHUNK), 0 the model's cuts */
  int ring;          /* intra-group phase: 1 pipelined ring, 0 Alg. 7         */
  long long nblocks; /* Alg. 6 broadcasts: blocks (with `model` and no
                      * chunk: the model's, this is ignored)               */
  int model;         /* 1: cut streams by the model below (sched/cut.h)      */
  cpli_cut_model cut;
} cpli_fc_opts;

/* The cut of one block's stream, alike at both ends: forwarded (read by a
 * later send at the receiving end), a depth-2 pipeline cut by the
 * block's own length under o->model, or o->chunk when that is fixed or
 * there is no model; not forwarded, whole. */
size_t cpli_flow_pipe_cut(const cpli_fc_opts *o, size_t bytes, int forwarded);
/* One block (len bytes at off of buffer buf) as a stream cut at c, its
 * note saying pipeline (depth 2) if forwarded, else last. */
int cpli_flow_block(cpli_flow *f, int send, int peer, int buf, size_t off, size_t len, size_t c,
                    int forwarded);

/* Kang et al.'s fully connected inter-group allgather as one plan, on the
 * merged communicator of p senders (ranks 0..p-1) and q receivers (ranks
 * p..p+q-1); `me` is this rank there.
 *  p >= q: sender j < q streams its block to receiver j; receivers and the
 *    extra senders q..p-1 (member i holds block i) allgather (Alg. 7 or
 *    the ring, o->ring).
 *  p < q, q = s p + e: sender i broadcasts (Alg. 6 with o->nblocks blocks)
 *    to receivers j < s p with j mod p = i, in order
 *    of j; receiver subgroups {t p .. t p + p - 1} allgather, each of the e
 *    remainder receivers joining subgroup (j - s p) mod s with an empty
 *    block. The allgather forwards a block while it is still arriving.
 * Senders read their own block (own_bytes) from buffer 1 at offset 0.
 * Receivers, and for p > q the extra senders (which relay), give all p
 * block sizes and offsets of buffer 0 in counts/displs; the extra senders'
 * own block must be in place there. Pure senders may pass NULL.
 * With o->model (and no o->chunk): for p >= q the direct blocks and the
 * ring after them are depth-2 pipelines (CPLI_CUT_PIPE; the direct block
 * cut by its own length, the ring by the largest block; p = 2: the ring's
 * one step whole), Alg. 7's streams whole (CPLI_CUT_BUSY, CPLI_CUT_LAST);
 * without the model and a cut, CPLI_CUT_PORT; p < q broadcasts use
 * cpli_cut_pieces(k, ceil(log2(s+1)) + 1) blocks, the extra hop being
 * the subgroup's forward, and the subgroup's streams that forward a block
 * still arriving are cut at the largest block's broadcast piece. */
int cpli_flow_fc(cpli_flow *f, int p, int q, int me, const size_t *counts, const size_t *displs,
                 size_t own_bytes, const cpli_fc_opts *o);

/* The direct-ring inter-group allgather as one plan, on the same merged
 * communicator as cpli_flow_fc (coll/inter_direct_ring.c). Sender b sends
 * its block to its home, receiver cpli_direct_ring_home(b) = floor(b q / p)
 * (spread evenly: for p < q some receivers have none, for p > q some have
 * several); the receivers then pass every block on around a ring,
 * receiver j to j + 1, q - 1 steps, in step s the blocks whose home is
 * j - s. Every step forwards what the step before brings, so with
 * o->model all of it is one depth-2 pipeline (the direct blocks cut by
 * their own length, the ring's streams by the largest home's bytes);
 * o->chunk forces one cut. Receivers give all p block sizes and offsets of
 * buffer 0 (counts, displs); senders read their own block from buffer 1
 * and need nothing else. */
int cpli_direct_ring_home(int b, int p, int q);
int cpli_flow_direct_ring(cpli_flow *f, int p, int q, int me, const size_t *counts,
                          const size_t *displs, size_t own_bytes, const cpli_fc_opts *o);

/* The two-hop inter-group allgather as one plan, on the same merged
 * communicator as cpli_flow_fc (coll/inter_two_hop.c). Block b goes
 * straight from sender b to r = cpli_two_hop_holders(p, q, counts[b],
 * o->cut.beta) receivers, its holders, floor(b q / p) and the r - 1
 * after it in ring order; every other receiver takes it from one holder
 * (cpli_two_hop_source), so each byte crosses at most two hops and every
 * receiver takes each block on exactly one stream. p > q: r = q, every
 * receiver gets every block from its sender. p <= q: r = p - 1 if then
 * no receiver feeds more than p streams (cpli_two_hop_fanout), so that
 * only the receivers' ports are full, and r = p otherwise or for a block
 * that takes CPLI_TWO_HOP_DIRECT_S or more at rate 1 / beta. p > q: a
 * receiver may let senders in a few at a time (cpli_two_hop_admits). With o->model a
 * relayed block is a depth-2 pipeline (cut by its own length, the
 * holder's receive and its sends alike), the others move whole; o->chunk
 * forces one cut on relayed blocks. Receivers give all p block sizes and
 * offsets of buffer 0; senders read their own block from buffer 1 and
 * need nothing else. */
/* From this transfer time on (s), a block goes to p holders: on the
 * emulated cluster 4|4 took 1.16-1.18 of the bound with r = p and
 * 1.07-1.08 with r = p - 1 at 1 MiB per block (20 ms), 1.03 and 1.12-1.14
 * at 16 MiB (330 ms), about even at 2-4 MiB. */
#define CPLI_TWO_HOP_DIRECT_S 0.08
/* From this many senders on (p < q), a receiver's p streams at once cost
 * rate as several peers per node do elsewhere, whatever the block's
 * length (coll/cost.c). */
#define CPLI_TWO_HOP_MANY 3
int cpli_two_hop_holders(int p, int q, size_t k, double beta);
/* p > q, TCP incast: p streams into one port overflow its queue, and
 * TCP's retransmission timeouts (200 ms) stall the transfer. Past
 * CPLI_TWO_HOP_MAX_FAN_IN senders, a receiver lets CPLI_TWO_HOP_FAN_IN of
 * its streams in at once: it takes them in rounds, round i from the
 * senders whose first holder is j - i (cpli_two_hop_admit_position gives
 * a sender's place in that order), and the stream in place k starts on
 * the receiver's signal that the one in place k - FAN_IN has arrived.
 * Each wait points to an earlier place, so the plan cannot deadlock.
 * Admitted: blocks whose transfer keeps the port busy while a signal's 2
 * start-ups pass, 2 alpha <= (FAN_IN - 1) k beta. Waiting for MPI's send
 * completion would not do: TCP takes a megabyte into its buffers and
 * completes it. Measured on the emulated cluster, 16 nodes, 1 MiB per
 * block, ratio to the bound (median of 9, two runs each):
 *   all at once: 12|4 1.29-1.39 (about 500 packets dropped and one TCP
 *   timeout per call), 10|6 1.41-1.49, 9|7 1.29-1.38, 15|1 1.17;
 *   a sender keeping w of its q streams going (the previous scheme):
 *   14|2 1.06-1.07, 13|3 1.13-1.14, 12|4 1.05-1.08, 10|6 1.19, 9|7
 *   1.17-1.23;
 *   admission: 15|1 1.00, 14|2 1.00, 13|3 1.00, 12|4 1.01-1.03, 10|6
 *   1.06-1.07, 9|7 1.10.
 *   8 nodes (no drops): staggered senders hurt where q does not divide p
 *   (5|3 1.11-1.19, 5|2 1.13-1.20 at 1-4 MiB, all at once 0.97-1.01),
 *   hence only past 8 senders. */
#define CPLI_TWO_HOP_MAX_FAN_IN 8
#define CPLI_TWO_HOP_FAN_IN 4
int cpli_two_hop_admits(int p, int q, size_t k, const cpli_cut_model *m);
long long cpli_two_hop_admit_position(int b, int j, int p, int q);
long long cpli_two_hop_fanout(int p, int q, int r);         /* busiest receiver's streams out */
int cpli_two_hop_source(int b, int j, int p, int q, int r); /* -1: j holds b */
int cpli_flow_two_hop(cpli_flow *f, int p, int q, int me, const size_t *counts,
                      const size_t *displs, size_t own_bytes, const cpli_fc_opts *o);

/* The chains inter-group allgather as one plan, on the same merged
 * communicator as cpli_flow_fc (coll/inter_chains.c). The receivers form
 * G = min(p, q) chains (cpli_chains_groups): receiver j is in chain
 * j mod G at place j / G, so a chain is at most cpli_chains_depth(p, q)
 * = ceil(q / G) long. In round rho = 0 .. p - 1 sender b streams its
 * block to the head of chain (b + rho) mod p (if that is < G: for p > q
 * a sender sits out p - q rounds), and every member passes what it takes
 * on to the next. So every node has one peer per direction at a time,
 * every receiver's port takes each block once, and a sender's port
 * carries its block G times. From the second round on, a sender's stream
 * waits for the head's signal, sent when one piece of the round before
 * is left to come: the rounds follow one another at the heads without
 * overlapping (TCP takes megabytes into its buffers, so a sender's own
 * send completion says nothing about the head). Blocks of chains longer
 * than one are depth-2 pipelines (cut by their own length) under
 * o->model, or cut at o->chunk; the others move whole. Receivers give
 * all p block sizes and offsets of buffer 0; senders read their own
 * block from buffer 1. */
int cpli_chains_groups(int p, int q);
int cpli_chains_depth(int p, int q);
int cpli_flow_chains(cpli_flow *f, int p, int q, int me, const size_t *counts, const size_t *displs,
                     size_t own_bytes, const cpli_fc_opts *o);

/* Root gathering as one plan on the same merged communicator
 * (coll/inter_root.c): every sender sends its block whole (never cut,
 * whatever o says) to receiver 0, which broadcasts all p blocks, read as
 * one string, among the q receivers (Alg. 6: n blocks of the string by
 * the model's pipeline of ceil(log2 q) hops, one per fixed chunk, or
 * o->nblocks without the model), each as soon as the blocks it covers
 * are in. p + q - 1 messages when n = 1. Receivers give all p block sizes
 * and offsets of buffer 0; senders read their own block from buffer 1. */
int cpli_flow_root(cpli_flow *f, int p, int q, int me, const size_t *counts, const size_t *displs,
                   size_t own_bytes, const cpli_fc_opts *o);

/* The same inside one group of p members (coll/intra_root.c): member r's
 * block (buffer 0 at displs[r], in place) goes whole to member 0, which
 * broadcasts along a binomial tree, each member passing to a child every
 * block but the child's own, as one stream: 2 (p - 1) messages in
 * 1 + ceil(log2 p) hops. */
int cpli_flow_intra_root(cpli_flow *f, int p, int r, const size_t *counts, const size_t *displs);

/* Replay the plans of nranks ranks (plans[r], buffers buf0[r], buf1[r]) on
 * an instant network: every rank posts its receives, issues sends in plan
 * order as their dependencies complete (per peer in order), and the i-th
 * send from X to Y lands in Y's i-th receive from X, whose size must be
 * equal. Bytes are copied. Returns 0 when every message was delivered;
 * CPL_ERR_INTERNAL with the fault in why for a size mismatch, a message
 * with no partner, or a deadlock (nothing can move, something left).
 * Plans must be resolved. */
/* The p < q broadcasts' block count of a k-byte block under o (the model's
 * or, with a fixed chunk, max(o->nblocks, ceil(k / chunk))); the same
 * value cpli_flow_fc uses. */
long long cpli_flow_fc_nblocks(int p, int q, size_t k, const cpli_fc_opts *o);
/* The same for any broadcast of k bytes whose pipeline is `depth` hops. */
long long cpli_flow_bcast_nblocks(size_t k, int depth, const cpli_fc_opts *o);

/* For each stream note of plan `me` (plans of all nranks ranks, resolved):
 * whether its bytes are forwarded (read by a later send) at the receiving
 * end, in fwd[note], and whether the sending end relays bytes it received
 * (a message of the send waits for a receive), in relay[note] (relay may
 * be NULL). Both allocated, nnote entries; free them. Sends are matched to
 * the peer's receives in order, as in MPI. CPL_OK or CPL_ERR_NOMEM. */
int cpli_flow_forwarded(int nranks, cpli_flow *const *plans, int me, unsigned char **fwd,
                        unsigned char **relay);

int cpli_flow_simulate(int nranks, cpli_flow *const *plans, unsigned char *const *buf0,
                       unsigned char *const *buf1, char *why, size_t whylen);

#endif
