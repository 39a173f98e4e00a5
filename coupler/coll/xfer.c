/*
 * Point-to-point steps of every algorithm, with deadlines.
 *
 * A step posts its receive and its send together (the bidirectional model:
 * a process may send and receive at once) and waits for both. Waiting polls
 * (cpli_poll_some, core/wait.h) instead of blocking in MPI_Waitall, so a
 * peer that died or never entered the collective surfaces as
 * CPL_ERR_TIMEOUT naming link, rank and step. MPICH's progress engine
 * busy-polls inside MPI_Waitall anyway; polling with
 * MPI_Request_get_status was measured as fast (coll/flow_exec.c).
 *
 * Sizes: messages use MPI 4's large-count calls (MPI_Isend_c, hindexed_c),
 * so a step moves pieces of any size, 2 GiB and more, in one message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "core/wait.h"

#define CPLI_TAG 7717

const char *cpli_ctx_where(const cpli_ctx *ctx, MPI_Comm comm, char *buf, size_t n) {
  char who[48], step[32] = "";
  if (ctx && ctx->who[0]) {
    snprintf(who, sizeof who, "%s", ctx->who);
  } else {
    int rank = -1;
    if (comm != MPI_COMM_NULL) MPI_Comm_rank(comm, &rank);
    snprintf(who, sizeof who, "rank %d", rank);
  }
  if (ctx && ctx->step >= 0) snprintf(step, sizeof step, ", step %ld", ctx->step);
  snprintf(buf, n, "%s%s%s%s%s (%s step %d)", ctx && ctx->label && ctx->label[0] ? "link " : "",
           ctx && ctx->label ? ctx->label : "", ctx && ctx->label && ctx->label[0] ? ", " : "", who,
           step, ctx && ctx->alg ? ctx->alg : "collective", ctx ? ctx->xstep : -1);
  return buf;
}

const char *cpli_peer_name(const cpli_ctx *ctx, MPI_Comm comm, int rank, char *buf, size_t n) {
  int m = -1; /* the peer's rank in the merged communicator */
  if (ctx && ctx->nsend > 0 && comm != MPI_COMM_NULL && rank >= 0) {
    MPI_Group g, gm;
    if (comm == ctx->merged) m = rank;
    else if (MPI_Comm_group(comm, &g) == MPI_SUCCESS) { /* fc's groups, the local one */
      if (MPI_Comm_group(ctx->merged, &gm) == MPI_SUCCESS) {
        if (MPI_Group_translate_ranks(g, 1, &rank, gm, &m) != MPI_SUCCESS) m = -1;
        MPI_Group_free(&gm);
      }
      MPI_Group_free(&g);
    }
  }
  if (m >= 0) /* MPI_UNDEFINED is negative */
    snprintf(buf, n, m < ctx->nsend ? "sender %d" : "receiver %d",
             m < ctx->nsend ? m : m - ctx->nsend);
  else snprintf(buf, n, "rank %d", rank);
  return buf;
}

/* The watchdog's description of a step's wait. */
typedef struct watched {
  const cpli_ctx *ctx;
  MPI_Comm comm;
  const char *what;
  int peer;
} watched;

static void say_step(const void *arg, char *buf, unsigned long n) {
  const watched *x = arg;
  char where[256];
  cpli_ctx_where(x->ctx, x->comm, where, sizeof where);
  char peer[32];
  if (x->peer >= 0)
    snprintf(buf, n, "%s: %s with %s", where, x->what,
             cpli_peer_name(x->ctx, x->comm, x->peer, peer, sizeof peer));
  else snprintf(buf, n, "%s: %s", where, x->what);
}

/* " with sender P" for messages (formatted only when one is printed). */
static const char *peer_text(const cpli_ctx *ctx, MPI_Comm comm, int peer, char *buf, size_t n) {
  if (peer < 0) return "";
  char name[32];
  snprintf(buf, n, " with %s", cpli_peer_name(ctx, comm, peer, name, sizeof name));
  return buf;
}

/* After this rank's own failure in a step (a truncated receive): pending
 * receives are cancelled, and the sends among reqs (bit i of `sends`) are
 * given until the deadline to be taken before the caller gets its buffers
 * back. A peer in the same step takes them at once; one that took a send
 * from a buffer the caller freed meanwhile would be aborted by UCX
 * (process_vm_readv: Bad address), the job with it. */
static void settle(int n, MPI_Request *reqs, unsigned sends, cpli_wait *w) {
  cpli_wait_uninterruptible(w); /* the failure's message stays */
  for (int i = 0; i < n; i++)
    if (reqs[i] != MPI_REQUEST_NULL && !(sends >> i & 1)) {
      MPI_Cancel(&reqs[i]);
      MPI_Request_free(&reqs[i]);
    }
  for (int left = 1; left;) {
    left = 0;
    for (int i = 0; i < n; i++) {
      int done = 0;
      if (reqs[i] != MPI_REQUEST_NULL &&
          MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        done = 1;
      if (reqs[i] != MPI_REQUEST_NULL && !done) left = 1;
    }
    if (left && cpli_wait_idle(w)) break;
  }
  for (int i = 0; i < n; i++)
    if (reqs[i] != MPI_REQUEST_NULL) MPI_Request_free(&reqs[i]);
}

/* cpli_waitall, with the status of request i in st[i] once it completed;
 * on a failed request, the sends (mask, see settle) are settled first. */
static int waitall_st(int n, MPI_Request *reqs, MPI_Status *st, unsigned sends, cpli_ctx *ctx,
                      MPI_Comm comm, const char *what, int peer) {
  char where[256], with[48];
  if (n > 4) return cpli_fail(CPL_ERR_INTERNAL, "cpli_waitall: %d requests, at most 4", n);
  /* No deadline: MPI_Waitall, unless an interrupt check must be polled
   * (point-to-point only: a collective is not interrupted, below). */
  const double timeout = ctx && ctx->timeout > 0 ? ctx->timeout : CPLI_WAIT_FOREVER;
  if (isinf(timeout) && (peer < 0 || !cpli_wait_interruptible())) {
    int rc = MPI_Waitall(n, reqs, st);
    if (rc == MPI_SUCCESS) return CPL_OK;
    return cpli_mpi_check(rc, "MPI_Waitall", "%s: %s%s",
                          cpli_ctx_where(ctx, comm, where, sizeof where), what,
                          peer_text(ctx, comm, peer, with, sizeof with));
  }
  cpli_wait w;
  cpli_wait_start(&w, timeout, ctx ? ctx->nap_us : 0);
  watched x = {ctx, comm, what, peer};
  cpli_wait_watch(&w, say_step, &x);
  if (peer < 0) cpli_wait_uninterruptible(&w);
  int at = 0, left = 0, idx[4];
  MPI_Status got_st[4];
  for (int i = 0; i < n; i++) left += reqs[i] != MPI_REQUEST_NULL;
  for (;;) {
    int got = 0;
    int rc = cpli_poll_some(n, reqs, &at, idx, got_st, &got);
    if (rc != MPI_SUCCESS) {
      rc = cpli_mpi_check(rc, "MPI_Request_get_status", "%s: %s%s",
                          cpli_ctx_where(ctx, comm, where, sizeof where), what,
                          peer_text(ctx, comm, peer, with, sizeof with));
      if (sends && isfinite(timeout)) settle(n, reqs, sends, &w); /* else: no hang here */
      return rc;
    }
    for (int j = 0; j < got; j++) st[idx[j]] = got_st[j];
    if ((left -= got) == 0) return CPL_OK;
    if (got) cpli_wait_moved(&w);
    else if (cpli_wait_idle(&w)) {
      /* Cancelled receives can no longer write into buffers the caller is
       * about to free; the link itself is unusable after this. MPI forbids
       * cancelling or freeing nonblocking collectives (peer < 0). */
      for (int i = 0; i < n && peer >= 0; i++)
        if (reqs[i] != MPI_REQUEST_NULL) {
          MPI_Cancel(&reqs[i]);
          MPI_Request_free(&reqs[i]);
        }
      if (w.interrupted) return CPL_ERR_INTERRUPTED;
      return cpli_fail(CPL_ERR_TIMEOUT,
                       "%s: %s%s did not complete within %g s "
                       "(peer dead, stuck, or not in this collective)",
                       cpli_ctx_where(ctx, comm, where, sizeof where), what,
                       peer_text(ctx, comm, peer, with, sizeof with), ctx->timeout);
    }
  }
}

int cpli_waitall(int n, MPI_Request *reqs, cpli_ctx *ctx, MPI_Comm comm, const char *what,
                 int peer) {
  /* Real status arrays: gcc 12 misreads MPI_STATUSES_IGNORE as a buffer. */
  MPI_Status st[4];
  return waitall_st(n, reqs, st, 0, ctx, comm, what, peer);
}

int cpli_wait_recv(MPI_Request *req, size_t want, cpli_ctx *ctx, MPI_Comm comm, int peer) {
  MPI_Status st[1];
  CPLI_TRY(waitall_st(1, req, st, 0, ctx, comm, "receive", peer));
  return cpli_recv_size(st, want, ctx, comm, peer);
}

int cpli_recv_size(const MPI_Status *st, size_t want, cpli_ctx *ctx, MPI_Comm comm, int peer) {
  MPI_Count got = 0;
  if (MPI_Get_count_c(st, MPI_BYTE, &got) == MPI_SUCCESS && got == (MPI_Count)want) return CPL_OK;
  char where[256], name[32];
  return cpli_mpi_check(MPI_ERR_TRUNCATE, "comparing the message with the block sizes",
                        "%s: receive from %s brought %lld bytes where %zu were expected "
                        "(ranks disagree on the block sizes)",
                        cpli_ctx_where(ctx, comm, where, sizeof where),
                        cpli_peer_name(ctx, comm, peer, name, sizeof name), (long long)got, want);
}

int cpli_xfer(MPI_Comm comm, const void *sbuf, size_t sbytes, int dest, void *rbuf, size_t rbytes,
              int src, cpli_ctx *ctx) {
  MPI_Request req[2];
  int n = 0, rc;
  char where[256], name[32];
  if (src != MPI_PROC_NULL) {
    rc = MPI_Irecv_c(rbuf, (MPI_Count)rbytes, MPI_BYTE, src, CPLI_TAG, comm, &req[n++]);
    if (rc != MPI_SUCCESS)
      return cpli_mpi_check(rc, "MPI_Irecv", "%s: receive from %s",
                            cpli_ctx_where(ctx, comm, where, sizeof where),
                            cpli_peer_name(ctx, comm, src, name, sizeof name));
  }
  if (dest != MPI_PROC_NULL) {
    rc = MPI_Isend_c(sbuf, (MPI_Count)sbytes, MPI_BYTE, dest, CPLI_TAG, comm, &req[n++]);
    if (rc != MPI_SUCCESS)
      return cpli_mpi_check(rc, "MPI_Isend", "%s: send to %s",
                            cpli_ctx_where(ctx, comm, where, sizeof where),
                            cpli_peer_name(ctx, comm, dest, name, sizeof name));
  }
  if (n == 0) return CPL_OK;
  MPI_Status st[2];
  CPLI_TRY(waitall_st(n, req, st, dest != MPI_PROC_NULL ? 1u << (n - 1) : 0, ctx, comm,
                      src != MPI_PROC_NULL ? "exchange" : "send",
                      src != MPI_PROC_NULL ? src : dest));
  return src != MPI_PROC_NULL ? cpli_recv_size(&st[0], rbytes, ctx, comm, src) : CPL_OK;
}

int cpli_sizes_agree(const unsigned long long *sizes, const size_t *counts, int p) {
  for (int i = 0; i < p; i++)
    if (sizes[i] != counts[i])
      return cpli_mpi_check(MPI_ERR_TRUNCATE, "comparing the block sizes",
                            "sender %d's block is %llu bytes, the receivers expect %zu (counts "
                            "that differ from the senders' but add up to the same total)",
                            i, sizes[i], counts[i]);
  return CPL_OK;
}

/* One side of a step: `bytes` bytes at base + off as plain bytes when the
 * pieces form a single run (the common case, no datatype to build), else
 * one element of an hindexed MPI_BYTE type. */
typedef struct side {
  MPI_Datatype type; /* MPI_DATATYPE_NULL: plain bytes */
  size_t off, bytes;
} side;

#define STACK_PIECES 16 /* pieces described without malloc */

static int pieces_type(int n, const size_t *len, const size_t *off, side *sd) {
  *sd = (side){MPI_DATATYPE_NULL, 0, 0};
  int m = 0, first = -1;
  size_t end = 0; /* a piece starting where the last one ended extends its run */
  for (int i = 0; i < n; i++)
    if (len[i]) {
      if (first < 0) first = i;
      sd->bytes += len[i];
      if (m == 0 || off[i] != end) m++;
      end = off[i] + len[i];
    }
  if (m <= 1) {
    if (m == 1) sd->off = off[first];
    return CPL_OK;
  }
  MPI_Count stack[2 * STACK_PIECES];
  MPI_Count *bl = m <= STACK_PIECES ? stack : malloc(sizeof *bl * 2 * (size_t)m);
  if (!bl) return cpli_fail(CPL_ERR_NOMEM, "out of memory building a %d-piece message", n);
  MPI_Count *disp = bl + m;
  for (int i = 0, j = 0; i < n; i++)
    if (len[i]) { /* zero-length pieces are legal but useless */
      if (j > 0 && (size_t)(disp[j - 1] + bl[j - 1]) == off[i]) {
        bl[j - 1] += (MPI_Count)len[i];
        continue;
      }
      bl[j] = (MPI_Count)len[i];
      disp[j++] = (MPI_Count)off[i];
    }
  int rc = MPI_Type_create_hindexed_c(m, bl, disp, MPI_BYTE, &sd->type);
  if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&sd->type);
  if (bl != stack) free(bl);
  return cpli_mpi_check(rc, "MPI_Type_create_hindexed_c", "building a message of %d pieces", n);
}

int cpli_xferv(MPI_Comm comm, const void *sbase, int ns, const size_t *slen, const size_t *soff,
               int dest, void *rbase, int nr, const size_t *rlen, const size_t *roff, int src,
               cpli_ctx *ctx) {
  side ss, rs;
  CPLI_TRY(pieces_type(dest != MPI_PROC_NULL ? ns : 0, slen, soff, &ss));
  int rc = pieces_type(src != MPI_PROC_NULL ? nr : 0, rlen, roff, &rs);
  if (rc != CPL_OK) {
    if (ss.type != MPI_DATATYPE_NULL) MPI_Type_free(&ss.type);
    return rc;
  }
  MPI_Request req[2];
  int n = 0;
  char where[256];
  /* An empty side still posts a zero-byte message so both ends of a step
   * agree on the number of messages between them. */
  if (src != MPI_PROC_NULL) {
    rc = rs.type != MPI_DATATYPE_NULL ? MPI_Irecv(rbase, 1, rs.type, src, CPLI_TAG, comm, &req[n++])
                                      : MPI_Irecv_c((char *)rbase + rs.off, (MPI_Count)rs.bytes,
                                                    MPI_BYTE, src, CPLI_TAG, comm, &req[n++]);
    if (rc != MPI_SUCCESS) goto mpi_fail;
  }
  if (dest != MPI_PROC_NULL) {
    rc = ss.type != MPI_DATATYPE_NULL
             ? MPI_Isend(sbase, 1, ss.type, dest, CPLI_TAG, comm, &req[n++])
             : MPI_Isend_c((const char *)sbase + ss.off, (MPI_Count)ss.bytes, MPI_BYTE, dest,
                           CPLI_TAG, comm, &req[n++]);
    if (rc != MPI_SUCCESS) goto mpi_fail;
  }
  MPI_Status st[2];
  rc = n ? waitall_st(n, req, st, dest != MPI_PROC_NULL ? 1u << (n - 1) : 0, ctx, comm,
                      src != MPI_PROC_NULL ? "exchange" : "send", src != MPI_PROC_NULL ? src : dest)
         : CPL_OK;
  if (rc == CPL_OK && src != MPI_PROC_NULL) rc = cpli_recv_size(&st[0], rs.bytes, ctx, comm, src);
  goto out;
mpi_fail:
  rc = cpli_mpi_check(rc, "posting a step", "%s", cpli_ctx_where(ctx, comm, where, sizeof where));
out:
  if (ss.type != MPI_DATATYPE_NULL) MPI_Type_free(&ss.type);
  if (rs.type != MPI_DATATYPE_NULL) MPI_Type_free(&rs.type);
  return rc;
}
