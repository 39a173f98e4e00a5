/*
 * Bruck et al. (1997) concatenation allgather, one-port version.
 *
 * Round k (distance d = 2^k): rank r sends the blocks it holds, owners
 * r .. r + min(d, p - d) - 1, to r - d and receives owners r + d .. from
 * r + d. After ceil(log2 p) rounds rank r holds owners r .. r + p - 1, that
 * is everything. Small allgathers (CPLI_RELATIVE_MAX) run as the paper
 * has it, on a buffer in relative order with a final rotation
 * (coll/relative.c); larger ones receive blocks straight into their place
 * in the caller's buffer, several blocks per message through an hindexed
 * type.
 *
 * Cost: ceil(log2 p) alpha + beta * (p - 1) k for regular blocks of k bytes.
 * Rounds run in lockstep (no overlap), and a round's message holds every
 * block the sender has gathered, so with irregular blocks one big block
 * is forwarded in every round after it arrives: round k costs up to
 * min(m, min(2^k, p - 2^k) maxb). cost.c adds the share of the transfer
 * the ring rule charges patterns with several peers per direction (as
 * Alg. 7 has), so `auto` finds the circulant algorithm at most as dear.
 */
#include <stdlib.h>

#include "coll/coll.h"

int cpli_intra_bruck(const cpli_intra_args *a) {
  int p, r;
  MPI_Comm_size(a->comm, &p);
  MPI_Comm_rank(a->comm, &r);
  if (p == 1) return CPL_OK;
  size_t total = 0;
  for (int i = 0; i < p; i++) total += a->blk.counts[i];
  if (total <= CPLI_RELATIVE_MAX) { /* the paper's version: relative order */
    int skip[32], count[32], k = 0;
    for (int d = 1; d < p; d *= 2, k++) skip[k] = d, count[k] = d < p - d ? d : p - d;
    return cpli_rounds_relative(a, p, r, k, skip, count);
  }
  size_t *buf = malloc(sizeof *buf * 4 * (size_t)p);
  if (!buf) return cpli_fail(CPL_ERR_NOMEM, "bruck: out of memory for %d ranks", p);
  size_t *slen = buf, *soff = buf + p, *rlen = buf + 2 * p, *roff = buf + 3 * p;
  int rc = CPL_OK;
  for (int d = 1, k = 0; d < p && rc == CPL_OK; d *= 2, k++) {
    const int n = d < p - d ? d : p - d;
    for (int i = 0; i < n; i++) {
      const int so = (r + i) % p, ro = (r + d + i) % p;
      slen[i] = a->blk.counts[so];
      soff[i] = a->blk.displs[so];
      rlen[i] = a->blk.counts[ro];
      roff[i] = a->blk.displs[ro];
    }
    a->ctx->xstep = k;
    rc = cpli_xferv(a->comm, a->blk.base, n, slen, soff, (r - d + p) % p, a->blk.base, n, rlen,
                    roff, (r + d) % p, a->ctx);
  }
  free(buf);
  return rc;
}
