/*
 * Round-optimal n-block broadcast: J. L. Traff, "(Poly)Logarithmic Time
 * Construction of Round-optimal n-Block Broadcast Schedules for Broadcast
 * and irregular Allgather in MPI" (2022), Algorithm 6, on the receive and
 * send schedules of Algorithms 4 (corrected, see ERRATA.md) and 5 computed
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
 * nblocks = 0 takes n*, clamped to [1, m] and to blocks of at most
 * CPLI_MAX_MSG bytes.
 */
#include <math.h>

#include "coll/coll.h"
#include "coll/intra_circulant.h"
#include "coll/select.h"
#include "sched/circulant.h"

double cpli_circulant_bcast_cost(int p, size_t bytes, long long n, double alpha,
                                 double beta) {
  if (p <= 1 || bytes == 0) return 0;
  if (n < 1) n = 1;
  const int q = cpli_ceil_log2(p);
  return (double)(n - 1 + q) * (alpha + beta * (double)bytes / (double)n);
}

long long cpli_circulant_bcast_nblocks(int p, size_t bytes, double alpha,
                                       double beta) {
  if (p <= 1 || bytes == 0) return 1;
  const int q = cpli_ceil_log2(p);
  const long long lo = (long long)((bytes + CPLI_MAX_MSG - 1) / CPLI_MAX_MSG);
  const long long hi = bytes < ((size_t)1 << 40) ? (long long)bytes : (long long)1 << 40;
  const double n = q > 1 ? sqrt(beta * (double)bytes * (q - 1) / alpha) : 1;
  long long ni = n >= (double)hi ? hi : llround(n);
  if (ni < lo) ni = lo;
  if (ni < 1) ni = 1;
  return ni;
}

int cpli_bcast_circulant(MPI_Comm comm, void *buf, size_t bytes, int root,
                         int nblocks, cpli_ctx *ctx) {
  if (comm == MPI_COMM_NULL || !ctx)
    return cpli_fail(CPL_ERR_ARG, "circulant broadcast: missing communicator or context");
  int p, rank;
  CPLI_TRY(cpli_mpi_check(MPI_Comm_size(comm, &p), "MPI_Comm_size", "circulant broadcast"));
  CPLI_TRY(cpli_mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", "circulant broadcast"));
  if (root < 0 || root >= p)
    return cpli_fail(CPL_ERR_ARG, "circulant broadcast: root %d outside 0..%d", root, p - 1);
  if (nblocks < 0)
    return cpli_fail(CPL_ERR_ARG, "circulant broadcast: nblocks %d < 0", nblocks);
  if (p == 1 || bytes == 0) return CPL_OK;
  if (!buf)
    return cpli_fail(CPL_ERR_ARG, "circulant broadcast: NULL buffer for %zu bytes", bytes);

  long long n = nblocks;
  if (n == 0) {
    double alpha, beta;
    cpli_model_params(&alpha, &beta);
    n = cpli_circulant_bcast_nblocks(p, bytes, alpha, beta);
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
                     "(a bug in Coupler)", rel, p);
  const int x = cpli_circ_offset(q, n);
  const size_t bq = bytes / (size_t)n, brem = bytes % (size_t)n;
  char *const base = buf;
  for (long long v = x; v < x + n + q - 1; v++) {
    const int k = (int)(v % q);
    const int to = (int)(((long long)rel + c.skips[k]) % p);
    const int from = (int)(((long long)rel - c.skips[k] + p) % p);
    const long long bs = to == 0 ? -1 : cpli_circ_block(q, send[k], v, x, n);
    const long long br = rel == 0 ? -1 : cpli_circ_block(q, recv[k], v, x, n);
    if (bs < 0 && br < 0) continue; /* the peers skip this round too */
    /* block b: the first bytes % n blocks are one byte longer */
    const size_t so = bs < 0 ? 0 : (size_t)bs * bq + ((size_t)bs < brem ? (size_t)bs : brem);
    const size_t ro = br < 0 ? 0 : (size_t)br * bq + ((size_t)br < brem ? (size_t)br : brem);
    const size_t sl = bs < 0 ? 0 : bq + ((size_t)bs < brem);
    const size_t rl = br < 0 ? 0 : bq + ((size_t)br < brem);
    ctx->xstep = (int)(v - x);
    CPLI_TRY(cpli_xfer(comm, base + so, sl, bs < 0 ? MPI_PROC_NULL : (int)(((long long)to + root) % p),
                       base + ro, rl, br < 0 ? MPI_PROC_NULL : (int)(((long long)from + root) % p), ctx));
  }
  return CPL_OK;
}
