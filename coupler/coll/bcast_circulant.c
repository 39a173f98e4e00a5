/*
 * Round-optimal n-block broadcast: J. L. Traff, "(Poly)Logarithmic Time
 * Construction of Round-optimal n-Block Broadcast Schedules for Broadcast
 * and irregular Allgather in MPI" (2022), Algorithm 6, on the receive and
 * send schedules of Algorithms 4 (corrected: sched/ERRATA.md) and 5 computed
 * by each rank for itself in O(q^4) steps, no communication.
 *
 * Ranks are renumbered relative to the root. The buffer is cut into n
 * blocks; with x dummy rounds (x + n - 1 + q a multiple of q) rank r in
 * round v sends block send[v mod q] + q (v / q) - x to r + skips[v mod q]
 * and receives recv[v mod q] + q (v / q) - x from r - skips[v mod q];
 * negative blocks move nothing, blocks past n - 1 are block n - 1. The
 * root receives nothing and nobody sends to it (both ends know), so every
 * other rank gets each block exactly once: n - 1 + q rounds, the optimum
 * for a one-ported network.
 *
 * Cost (alpha-beta, m bytes, q = ceil(log2 p)):
 *   T(n) = (n - 1 + q)(alpha + beta m / n), minimal at
 *   n* = sqrt(beta m (q - 1) / alpha):
 *   T = (q - 1) alpha + 2 sqrt((q - 1) alpha beta m) + beta m.
 * nblocks = 0 takes n* (cpli_bcast_nblocks, coll/cost.c), clamped to
 * blocks of at least CPLI_CUT_MIN_PIECE (8 KiB; one block for less) and
 * at most CPLI_MAX_MSG bytes.
 *
 * Execution is dataflow rather than lockstep: receives are posted rounds
 * ahead and a send waits only for the receive that brought its block, not
 * for the previous round's send to be matched. Lockstep rounds pay a
 * rendezvous handshake each; on a loaded or oversubscribed node that made
 * large broadcasts several times slower than MPI_Bcast. Every wait still
 * goes through cpli_waitall and its deadline. The schedule guarantees no
 * block is received twice, so receives posted ahead never share a buffer.
 */
#include <math.h>
#include <stdlib.h>

#include "coll/coll.h"
#include "coll/intra_circulant.h"
#include "coll/tuning.h"
#include "sched/circulant.h"

#define BCAST_TAG 7719

/* Block b: the first bytes % n blocks are one byte longer. */
static size_t blk_off(size_t bq, size_t brem, long long b) {
  return (size_t)b * bq + ((size_t)b < brem ? (size_t)b : brem);
}
static size_t blk_len(size_t bq, size_t brem, long long b) {
  return bq + ((size_t)b < brem ? 1 : 0);
}

/* Round index (0-based) in which a non-root rank receives block b, or -1.
 * Block b < n - 1 arrives uncapped: entry e in phase P with
 * e + qP - x = b. Block n - 1 may also arrive capped, in the last phase. */
static long long recv_round(const int *recv, int q, int x, long long n, long long b) {
  const long long vend = x + n + q - 1;
  for (int k = 0; k < q; k++) {
    const long long d = b + x - recv[k];
    long long v = -1;
    if (d >= 0 && d % q == 0) v = d + k; /* q * (d / q) + k */
    if ((v < x || v >= vend) && b == n - 1)
      v = vend - q + k; /* capped, in the last phase (vend is a multiple of q) */
    if (v >= x && v < vend && cpli_circ_block(q, recv[k], v, x, n) == b) return v - x;
  }
  return -1;
}

int cpli_bcast_circulant(MPI_Comm comm, void *buf, size_t bytes, int root, int nblocks,
                         cpli_ctx *ctx) {
  if (comm == MPI_COMM_NULL || !ctx)
    return cpli_fail(CPL_ERR_ARG, "circulant broadcast: missing communicator or context");
  int p, rank;
  CPLI_TRY(cpli_mpi_check(MPI_Comm_size(comm, &p), "MPI_Comm_size", "circulant broadcast"));
  CPLI_TRY(cpli_mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", "circulant broadcast"));
  if (root < 0 || root >= p)
    return cpli_fail(CPL_ERR_ARG, "circulant broadcast: root %d outside 0..%d", root, p - 1);
  if (nblocks < 0) return cpli_fail(CPL_ERR_ARG, "circulant broadcast: nblocks %d < 0", nblocks);
  if (p == 1 || bytes == 0) return CPL_OK;
  if (!buf) return cpli_fail(CPL_ERR_ARG, "circulant broadcast: NULL buffer for %zu bytes", bytes);

  long long n = nblocks;
  if (n == 0) {
    double alpha, beta;
    cpli_model_params(&alpha, &beta);
    n = cpli_bcast_nblocks(p, bytes, alpha, beta);
  }
  if ((size_t)n > bytes) n = (long long)bytes; /* no empty blocks */
  const long long lo = (long long)((bytes + CPLI_MAX_MSG - 1) / CPLI_MAX_MSG);
  if (n < lo) n = lo;

  cpli_circ c;
  CPLI_TRY(cpli_circ_init(&c, p));
  const int q = c.q;
  const int rel = rank >= root ? rank - root : rank - root + p;
  int recv[CPLI_CIRC_QMAX], send[CPLI_CIRC_QMAX];
  if (cpli_circ_recvsched(&c, rel, q, recv) || cpli_circ_sendsched(&c, rel, send))
    return cpli_fail(CPL_ERR_INTERNAL,
                     "circulant broadcast: no schedule for rank %d of %d "
                     "(a bug in Coupler)",
                     rel, p);
  const int x = cpli_circ_offset(q, n);
  const long long R = n + q - 1; /* rounds; round t is virtual round x + t */
  const size_t bq = bytes / (size_t)n, brem = bytes % (size_t)n;
  char *const base = buf;
  /* Receives are posted D rounds ahead in a ring of W = 2D slots, so
   * reusing a slot waits only for a receive D rounds old; D exceeds the
   * longest receive-to-forward gap (under two phases). */
  const int D = 2 * q + 16, W = 2 * D;
  MPI_Request *req = malloc(sizeof *req * 2 * (size_t)W);
  long long *slot_round = malloc(sizeof *slot_round * (size_t)W);
  int *peer = malloc(sizeof *peer * 2 * (size_t)W); /* for timeout messages */
  size_t *rlen = malloc(sizeof *rlen * (size_t)W);  /* what each receive must bring */
  if (!req || !slot_round || !peer || !rlen) {
    free(req);
    free(slot_round);
    free(peer);
    free(rlen);
    return cpli_fail(CPL_ERR_NOMEM, "circulant broadcast: out of memory");
  }
  MPI_Request *rreq = req, *sreq = req + W;
  for (int i = 0; i < W; i++) {
    rreq[i] = sreq[i] = MPI_REQUEST_NULL;
    slot_round[i] = -1;
    peer[i] = peer[W + i] = -1;
  }
  int rc = CPL_OK;
  long long posted = 0; /* receives posted for rounds < posted */
  char where[256];
  for (long long t = 0; t < R && rc == CPL_OK; t++) {
    ctx->xstep = (int)t;
    /* Post receives ahead: the sender never waits for a handshake, and
     * MPI matches a pair's messages in round order (one tag, both sides
     * post in round order). */
    while (posted < R && posted <= t + D && rc == CPL_OK) {
      const int slot = (int)(posted % W);
      if (rreq[slot] != MPI_REQUEST_NULL) /* round posted - W, long due */
        rc = cpli_wait_recv(&rreq[slot], rlen[slot], ctx, comm, peer[slot]);
      const long long v = x + posted;
      const long long br = rel == 0 ? -1 : cpli_circ_block(q, recv[v % q], v, x, n);
      slot_round[slot] = posted;
      if (br >= 0 && rc == CPL_OK) {
        const int from = (int)(((long long)rel - c.skips[v % q] + p) % p);
        const int src = (int)(((long long)from + root) % p);
        peer[slot] = src;
        rlen[slot] = blk_len(bq, brem, br);
        rc = cpli_mpi_check(MPI_Irecv(base + blk_off(bq, brem, br), (int)blk_len(bq, brem, br),
                                      MPI_BYTE, src, BCAST_TAG, comm, &rreq[slot]),
                            "MPI_Irecv", "%s: receive from rank %d",
                            cpli_ctx_where(ctx, comm, where, sizeof where), src);
      }
      posted++;
    }
    if (rc != CPL_OK) break;
    const long long v = x + t;
    const int k = (int)(v % q);
    const int to = (int)(((long long)rel + c.skips[k]) % p);
    const long long bs = to == 0 ? -1 : cpli_circ_block(q, send[k], v, x, n);
    if (bs < 0) continue;
    if (rel != 0) { /* wait for the round that brought block bs */
      const long long u = recv_round(recv, q, x, n, bs);
      if (u < 0 || u >= t) {
        rc = cpli_fail(CPL_ERR_INTERNAL,
                       "circulant broadcast: rank %d would send block "
                       "%lld in round %lld before receiving it (a bug in Coupler)",
                       rel, bs, t);
        break;
      }
      const int us = (int)(u % W);
      if (slot_round[us] == u && rreq[us] != MPI_REQUEST_NULL)
        rc = cpli_wait_recv(&rreq[us], rlen[us], ctx, comm, peer[us]);
      if (rc != CPL_OK) break;
    }
    const int slot = (int)(t % W);
    if (sreq[slot] != MPI_REQUEST_NULL)
      rc = cpli_waitall(1, &sreq[slot], ctx, comm, "send", peer[W + slot]);
    if (rc != CPL_OK) break;
    const int dest = (int)(((long long)to + root) % p);
    peer[W + slot] = dest;
    rc = cpli_mpi_check(MPI_Isend(base + blk_off(bq, brem, bs), (int)blk_len(bq, brem, bs),
                                  MPI_BYTE, dest, BCAST_TAG, comm, &sreq[slot]),
                        "MPI_Isend", "%s: send to rank %d",
                        cpli_ctx_where(ctx, comm, where, sizeof where), dest);
  }
  for (int i = 0; i < 2 * W && rc == CPL_OK; i++) { /* drain, naming each peer */
    ctx->xstep = (int)R;
    if (req[i] != MPI_REQUEST_NULL)
      rc = i < W ? cpli_wait_recv(&req[i], rlen[i], ctx, comm, peer[i])
                 : cpli_waitall(1, &req[i], ctx, comm, "send", peer[i]);
  }
  if (rc != CPL_OK) { /* leave nothing pending on the caller's buffer */
    for (int i = 0; i < 2 * W; i++)
      if (req[i] != MPI_REQUEST_NULL) {
        if (i < W) MPI_Cancel(&req[i]);
        MPI_Request_free(&req[i]);
      }
  }
  free(req);
  free(slot_round);
  free(peer);
  free(rlen);
  return rc;
}
