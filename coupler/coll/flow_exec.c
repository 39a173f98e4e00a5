/*
 * Executor of dataflow plans (sched/flow.h) over MPI.
 *
 * Every receive is posted at once, in plan order. Sends are issued in plan
 * order per destination, each as soon as the receives it depends on (and
 * the message the plan orders before it, if any) have completed; a send
 * to one peer may overtake an earlier send to another whose data is still
 * on its way. MPI's non-overtaking rule on one tag then pairs the i-th
 * send from X to Y with Y's i-th receive from X, as in the plans. Nothing
 * waits for a step boundary, so a late peer delays only the data that
 * really passes through it, and several messages per link are in flight
 * (on the emulated cluster an 8 MiB pair exchange as one message per
 * direction ran at half the rate when the default rendezvous was used;
 * cut into 256 KiB messages it ran at the full rate).
 *
 * A message of several pieces up to FLOW_PACK_MAX bytes is packed into (or
 * received into and unpacked from) a contiguous staging buffer: with MPICH
 * over UCX a derived datatype costs more than the copy (measured: a 16 KiB
 * two-piece exchange 0.46-0.55 ms against 0.31-0.37 ms contiguous on the
 * emulated cluster). Larger ones travel as one hindexed message.
 *
 * Waiting polls (cpli_poll_some, below) under the context's timeout
 * (core/wait.h: any message's progress restarts the deadline): a peer
 * that stops is CPL_ERR_TIMEOUT naming the first message still pending
 * (its index is reported as the step). Messages complete
 * roughly in plan order, so most polls look at a window of FLOW_WINDOW
 * requests from the first one not done, and every FLOW_FULL_POLL-th
 * MPI_Testsome sweeps all of them, so no completion outside the window
 * waits long.
 *
 * A window poll asks MPI_Request_get_status, request by request from
 * where the last poll stopped, and stops at the first one still pending:
 * MPI's progress runs once per poll, as in MPI_Testsome, but the call is
 * lighter, and with 8 ranks sharing 2 cores every poll's cost is taken
 * from the ranks that have work. Hand-written Bruck rounds on the
 * emulated cluster (p = 8, 1 KiB, median of six runs): polling
 * MPI_Request_get_status as fast as blocking in MPI_Waitall, about 243 us
 * a call, MPI_Testall 258 us, MPI_Test 270 us.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "core/wait.h"
#include "sched/plan_cache.h"

#define FLOW_TAG 7723
#define FLOW_PACK_MAX ((size_t)1 << 20)
#define FLOW_WINDOW ((size_t)64)
#define FLOW_FULL_POLL 16u

/* The executor's bookkeeping arena (see cpli_flow_run): one kept per
 * thread up to FLOW_ARENA_KEEP bytes (aligned as malloc's memory, which the
 * arrays in it need), larger ones allocated per call. */
#define FLOW_ARENA_KEEP ((size_t)16 << 10)
static _Thread_local _Alignas(max_align_t) char arena_kept[FLOW_ARENA_KEEP];
static _Thread_local int arena_busy;

static char *arena_get(size_t bytes) {
  if (bytes > FLOW_ARENA_KEEP || arena_busy) return calloc(1, bytes);
  arena_busy = 1;
  return memset(arena_kept, 0, bytes);
}

static void arena_put(char *a) {
  if (a == arena_kept) arena_busy = 0;
  else free(a);
}

static void free_type(MPI_Datatype *t) {
  if (*t != MPI_DATATYPE_NULL) MPI_Type_free(t);
}

/* Copy message m's pieces between base and the contiguous stage. */
static void pack(const cpli_flow *f, const cpli_fmsg *m, char *base, char *stage, int out) {
  size_t w = 0;
  for (int j = 0; j < m->np; j++) {
    const size_t pc = m->p0 + (size_t)j;
    if (out) memcpy(stage + w, base + f->off[pc], f->len[pc]);
    else memcpy(base + f->off[pc], stage + w, f->len[pc]);
    w += f->len[pc];
  }
}

/* Datatype and start address of message m (one piece: plain bytes; a few
 * pieces: a staging buffer in *stage, packed here for sends). */
static int msg_args(const cpli_flow *f, const cpli_fmsg *m, char *base, void **addr, int *count,
                    MPI_Datatype *type, char **stage) {
  *type = MPI_DATATYPE_NULL;
  *stage = NULL;
  if (m->np <= 1) { /* no piece: a signal (cpli_flow_signal) */
    *addr = m->np ? base + f->off[m->p0] : base;
    *count = (int)m->bytes;
    return CPL_OK;
  }
  if (m->bytes <= FLOW_PACK_MAX) {
    if (!(*stage = malloc(m->bytes)))
      return cpli_fail(CPL_ERR_NOMEM, "dataflow: out of memory staging %zu bytes", m->bytes);
    if (m->send) pack(f, m, base, *stage, 1);
    *addr = *stage;
    *count = (int)m->bytes;
    return CPL_OK;
  }
  int *bl = malloc(sizeof *bl * (size_t)m->np);
  MPI_Aint *dp = malloc(sizeof *dp * (size_t)m->np);
  if (!bl || !dp) {
    free(bl);
    free(dp);
    return cpli_fail(CPL_ERR_NOMEM, "dataflow: out of memory for a %d-piece message", m->np);
  }
  for (int j = 0; j < m->np; j++) {
    bl[j] = (int)f->len[m->p0 + (size_t)j];
    dp[j] = (MPI_Aint)f->off[m->p0 + (size_t)j];
  }
  int rc = MPI_Type_create_hindexed(m->np, bl, dp, MPI_BYTE, type);
  if (rc == MPI_SUCCESS) rc = MPI_Type_commit(type);
  free(bl);
  free(dp);
  *addr = base;
  *count = 1;
  return cpli_mpi_check(rc, "MPI_Type_create_hindexed", "dataflow: a %d-piece message", m->np);
}

/* Result of posting message i; the error text (where it ran) is only
 * formatted on failure, never on the per-message fast path. */
static int posted(int mpi_rc, const char *call, const char *what, size_t i, int peer, MPI_Comm comm,
                  cpli_ctx *ctx) {
  if (mpi_rc == MPI_SUCCESS) return CPL_OK;
  char where[256], name[32];
  ctx->xstep = (int)i;
  return cpli_mpi_check(mpi_rc, call, "%s: %s %s", cpli_ctx_where(ctx, comm, where, sizeof where),
                        what, cpli_peer_name(ctx, comm, peer, name, sizeof name));
}

/* The watchdog's description of a plan's wait. */
static void say_plan(const void *arg, char *buf, unsigned long n) {
  const void *const *a = arg;
  char where[256];
  snprintf(buf, n, "%s: waiting for the plan's messages",
           cpli_ctx_where(a[0], *(const MPI_Comm *)a[1], where, sizeof where));
}

/* MPI_Testsome's result for req[0..n) with at most one progress call:
 * from *at on (round robin), every request found complete is collected
 * and freed, and the first one still pending ends the poll (its
 * MPI_Request_get_status drove MPICH's progress once); *at is where the
 * next poll starts. */
int cpli_poll_some(int n, MPI_Request *req, int *at, int *idx, MPI_Status *st, int *outcount) {
  *outcount = 0;
  int i = *at >= 0 && *at < n ? *at : 0;
  for (int k = 0; k < n; k++, i = i + 1 == n ? 0 : i + 1) {
    if (req[i] == MPI_REQUEST_NULL) continue;
    int done = 0;
    int rc = MPI_Request_get_status(req[i], &done, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !done) {
      *at = i + 1;
      return MPI_SUCCESS;
    }
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req[i], &st[*outcount]); /* complete: frees it */
    if (rc != MPI_SUCCESS) return rc;
    idx[(*outcount)++] = i;
  }
  *at = i;
  return MPI_SUCCESS;
}

int cpli_flow_run(const cpli_flow *f, MPI_Comm comm, char *base0, const char *base1,
                  cpli_ctx *ctx) {
  if (!f->resolved)
    return cpli_fail(CPL_ERR_INTERNAL, "dataflow: plan not resolved (a bug in Coupler)");
  const size_t nm = f->nm;
  if (nm == 0) return CPL_OK;
  if (nm > (size_t)0x7fffffff)
    return cpli_fail(CPL_ERR_UNSUPPORTED, "dataflow: %zu messages in one plan", nm);
  int np;
  MPI_Comm_size(comm, &np);
  /* All bookkeeping in one zeroed allocation: a small collective should
   * not pay a dozen malloc/free pairs; up to FLOW_ARENA_KEEP bytes, the
   * thread's last arena is reused (nothing in it outlives the call). */
  const size_t sz[] = {sizeof(MPI_Request) * nm,  sizeof(MPI_Datatype) * nm,
                       sizeof(char *) * nm,       sizeof(MPI_Status) * nm,
                       sizeof(int) * nm,          sizeof(int) * nm,
                       sizeof(size_t) * nm,       sizeof(size_t) * (size_t)np,
                       sizeof(size_t) * (nm + 1), sizeof(size_t) * (f->ndep ? f->ndep : 1),
                       sizeof(size_t) * nm,       nm};
  enum { REQ, TYPE, STAGE, ST, IDX, PEND, ORD, NEXTORD, RSTART, RLIST, FILL, STATE, NARR };
  size_t at[NARR], total = 0;
  for (int i = 0; i < NARR; i++) at[i] = total, total += (sz[i] + 15) & ~(size_t)15;
  char *arena = arena_get(total);
  if (!arena) return cpli_fail(CPL_ERR_NOMEM, "dataflow: out of memory for %zu messages", nm);
  MPI_Request *req = (MPI_Request *)(arena + at[REQ]);
  MPI_Datatype *type = (MPI_Datatype *)(arena + at[TYPE]);
  char **stage = (char **)(arena + at[STAGE]);
  MPI_Status *st = (MPI_Status *)(arena + at[ST]);
  int *idx = (int *)(arena + at[IDX]);
  int *pend = (int *)(arena + at[PEND]);             /* sends: messages still awaited */
  size_t *ord = (size_t *)(arena + at[ORD]);         /* sends: ordinal per destination */
  size_t *nextord = (size_t *)(arena + at[NEXTORD]); /* per peer: next send to issue */
  size_t *rstart = (size_t *)(arena + at[RSTART]);   /* message -> dependent sends */
  size_t *rlist = (size_t *)(arena + at[RLIST]);
  size_t *fill = (size_t *)(arena + at[FILL]);
  unsigned char *state = (unsigned char *)(arena + at[STATE]); /* 0 idle, 1 active, 2 done */
  char where[256];
  int rc = CPL_OK;
  for (size_t i = 0; i < nm; i++) req[i] = MPI_REQUEST_NULL, type[i] = MPI_DATATYPE_NULL;
  for (size_t i = 0; i < nm; i++) {
    const cpli_fmsg *m = &f->m[i];
    if (m->peer < 0 || m->peer >= np || (m->np && m->buf == 1 && !base1) ||
        (m->np && m->buf == 0 && !base0)) {
      rc = cpli_fail(CPL_ERR_INTERNAL,
                     "dataflow: message %zu: peer %d of %d, buffer %d "
                     "(a bug in Coupler)",
                     i, m->peer, np, m->buf);
      goto out;
    }
    if (m->send) {
      ord[i] = nextord[m->peer]++; /* counted here, reset below */
      pend[i] = m->nd;
      for (int d = 0; d < m->nd; d++) rstart[f->dep[m->d0 + (size_t)d] + 1]++;
    }
  }
  memset(nextord, 0, sz[NEXTORD]);
  for (size_t i = 0; i < nm; i++) rstart[i + 1] += rstart[i];
  for (size_t i = 0; i < nm; i++) {
    const cpli_fmsg *m = &f->m[i];
    if (!m->send) continue;
    for (int d = 0; d < m->nd; d++) {
      const size_t r = f->dep[m->d0 + (size_t)d];
      rlist[rstart[r] + fill[r]++] = i;
    }
  }
  /* post every receive */
  for (size_t i = 0; i < nm && rc == CPL_OK; i++) {
    const cpli_fmsg *m = &f->m[i];
    if (m->send) continue;
    void *addr;
    int count;
    rc = msg_args(f, m, base0, &addr, &count, &type[i], &stage[i]);
    if (rc != CPL_OK) break;
    rc = posted(MPI_Irecv(addr, count, type[i] != MPI_DATATYPE_NULL ? type[i] : MPI_BYTE, m->peer,
                          FLOW_TAG, comm, &req[i]),
                "MPI_Irecv", "receive from", i, m->peer, comm, ctx);
    state[i] = 1;
  }
  size_t ndone = 0, first = 0, lo = 0, cursor = 0;
  unsigned polls = 0;
  int dirty = 1;
  cpli_wait w;
  cpli_wait_start(&w, ctx->timeout > 0 ? ctx->timeout : CPLI_WAIT_FOREVER, 0);
  const void *args[2] = {ctx, &comm};
  cpli_wait_watch(&w, say_plan, args);
  while (rc == CPL_OK && ndone < nm) {
    if (dirty) { /* issue every send whose data is here, in order per peer */
      dirty = 0;
      while (first < nm && (!f->m[first].send || state[first])) first++;
      for (size_t i = first; i < nm && rc == CPL_OK; i++) {
        const cpli_fmsg *m = &f->m[i];
        if (!m->send || state[i] || pend[i] > 0 || ord[i] != nextord[m->peer]) continue;
        void *addr;
        int count;
        rc = msg_args(f, m, m->buf ? (char *)base1 : base0, &addr, &count, &type[i], &stage[i]);
        if (rc != CPL_OK) break;
        rc = posted(MPI_Isend(addr, count, type[i] != MPI_DATATYPE_NULL ? type[i] : MPI_BYTE,
                              m->peer, FLOW_TAG, comm, &req[i]),
                    "MPI_Isend", "send to", i, m->peer, comm, ctx);
        state[i] = 1;
        nextord[m->peer]++;
        dirty = 1; /* the next send to this peer may be ready too */
      }
      if (rc != CPL_OK) break;
    }
    /* Messages complete roughly in plan order: test a window from the
     * first one not done, and everything every FLOW_FULL_POLL polls, so
     * polling costs O(window), not O(plan). A window poll looks at one
     * pending request, so a few idle ones say nothing of the window and
     * do not bring the sweep forward. */
    while (lo < nm && state[lo] == 2) lo++;
    const int all = nm - lo <= FLOW_WINDOW; /* the window holds what is left */
    const int sweep = !all && ++polls % FLOW_FULL_POLL == 0;
    const size_t base = all || sweep ? 0 : lo;
    int outcount = 0, mrc;
    if (sweep) { /* every request, whatever the window's cursor skips */
      mrc = MPI_Testsome((int)nm, req, &outcount, idx, st);
      if (outcount == MPI_UNDEFINED) outcount = 0;
    } else {
      const size_t span = all ? nm : FLOW_WINDOW;
      int from = cursor >= base && cursor < base + span ? (int)(cursor - base) : 0;
      mrc = cpli_poll_some((int)span, req + base, &from, idx, st, &outcount);
      cursor = base + (size_t)from;
    }
    if (mrc != MPI_SUCCESS) {
      rc = cpli_mpi_check(mrc, "polling", "%s: waiting for messages",
                          cpli_ctx_where(ctx, comm, where, sizeof where));
      break;
    }
    for (int j = 0; j < outcount; j++) {
      const size_t i = base + (size_t)idx[j];
      if (!f->m[i].send) { /* a short message would leave stale bytes */
        ctx->xstep = (int)i;
        if ((rc = cpli_recv_size(&st[j], f->m[i].bytes, ctx, comm, f->m[i].peer)) != CPL_OK) break;
      }
      state[i] = 2;
      ndone++;
      free_type(&type[i]);
      if (stage[i] && !f->m[i].send) pack(f, &f->m[i], base0, stage[i], 0);
      free(stage[i]);
      stage[i] = NULL;
      for (size_t k = rstart[i]; k < rstart[i + 1]; k++)
        if (--pend[rlist[k]] == 0) dirty = 1;
    }
    if (outcount > 0 || dirty) {
      cpli_wait_moved(&w);
    } else if (cpli_wait_idle(&w)) {
      size_t k = 0;
      while (k < nm && state[k] == 2) k++;
      const cpli_fmsg *m = &f->m[k < nm ? k : 0];
      ctx->xstep = (int)k;
      char name[32];
      rc = w.interrupted
               ? CPL_ERR_INTERRUPTED
               : cpli_fail(CPL_ERR_TIMEOUT,
                           "%s: %s %s (%zu bytes) did not complete within %g s "
                           "(peer dead, stuck, or not in this collective)",
                           cpli_ctx_where(ctx, comm, where, sizeof where),
                           m->send ? (state[k] ? "send to" : "send (waiting for its data) to")
                                   : "receive from",
                           cpli_peer_name(ctx, comm, m->peer, name, sizeof name), m->bytes,
                           ctx->timeout);
    }
  }
  if (rc != CPL_OK) { /* leave nothing pending on the caller's buffers */
    for (size_t i = 0; i < nm; i++)
      if (req[i] != MPI_REQUEST_NULL && !f->m[i].send) {
        MPI_Cancel(&req[i]);
        MPI_Request_free(&req[i]);
        stage[i] = NULL; /* MPI may still touch it: leaked, not freed */
      }
    /* Sends cannot be cancelled (MPICH over UCX ignores it), and a peer
     * that takes one from a buffer the caller freed meanwhile is aborted
     * by UCX (process_vm_readv: Bad address), the job with it. After a
     * failure of this rank's own (a size mismatch, an MPI error) the
     * peers are still in the call and take the sends already under way
     * at once: wait for them, up to the deadline. */
    if (rc != CPL_ERR_TIMEOUT && rc != CPL_ERR_INTERRUPTED && ctx->timeout > 0) {
      cpli_wait_uninterruptible(&w); /* the failure's message stays */
      for (int done = 0; !done;)
        if (MPI_Testall((int)nm, req, &done, st) != MPI_SUCCESS || (!done && cpli_wait_idle(&w)))
          break;
    }
    for (size_t i = 0; i < nm; i++)
      if (req[i] != MPI_REQUEST_NULL) {
        MPI_Request_free(&req[i]);
        stage[i] = NULL;
      }
  }
out:
  for (size_t i = 0; i < nm; i++) free_type(&type[i]);
  for (size_t i = 0; i < nm; i++) free(stage[i]);
  arena_put(arena);
  return rc;
}

int cpli_flow_run_cached(cpli_plan_cache *cache, const cpli_plan_key *key, cpli_flow_build_fn build,
                         const void *arg, cpli_plan_what what, MPI_Comm comm, char *base0,
                         const char *base1, cpli_ctx *ctx) {
  const cpli_flow *plan = key ? cpli_plan_cache_find(cache, key) : NULL;
  if (plan) return cpli_flow_run(plan, comm, base0, base1, ctx);
  cpli_flow f;
  cpli_flow_init(&f);
  int rc = build(&f, arg);
  char why[256];
  if (rc == CPL_OK && cpli_flow_resolve(&f, why, sizeof why) != CPL_OK) {
    char shape[32];
    if (what.q < 0) snprintf(shape, sizeof shape, "%d", what.p);
    else snprintf(shape, sizeof shape, "%d|%d", what.p, what.q);
    rc = cpli_fail(CPL_ERR_INTERNAL, "%s, rank %d of %s: invalid plan: %s (a bug in Coupler)",
                   what.alg, what.rank, shape, why);
  }
  if (rc == CPL_OK) plan = key ? cpli_plan_cache_put(cache, key, &f) : &f;
  if (rc == CPL_OK) rc = cpli_flow_run(plan, comm, base0, base1, ctx);
  cpli_flow_free(&f);
  return rc;
}
