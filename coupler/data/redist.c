#include "data/redist.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/select.h"
#include "coll/tuning.h"
#include "core/error.h"
#include "core/wait.h"
#include "data/slab.h"

void cpli_rplan_free(cpli_rplan *pl) {
  free(pl->first);
  free(pl->parts);
  *pl = (cpli_rplan){0};
}

static int add_part(cpli_rplan *pl, int k, int rank, const hsize_t *s, const hsize_t *c) {
  if (pl->nparts == pl->cap) {
    int cap = pl->cap ? 2 * pl->cap : 16;
    cpli_rpart *v = realloc(pl->parts, (size_t)cap * sizeof *v);
    if (!v) return -1;
    pl->parts = v;
    pl->cap = cap;
  }
  cpli_rpart *p = &pl->parts[pl->nparts++];
  p->k = k;
  memcpy(p->start, s, (size_t)rank * sizeof *s);
  memcpy(p->count, c, (size_t)rank * sizeof *c);
  return 0;
}

static size_t box_bytes(int rank, const hsize_t *c, size_t esize) {
  size_t v = esize;
  for (int d = 0; d < rank; d++) v *= (size_t)c[d];
  return v;
}

size_t cpli_pieces_bytes(const cpli_boxes *pieces, size_t esize) {
  size_t t = 0;
  for (int m = 0; m < pieces->n; m++)
    t += box_bytes(pieces->rank, pieces->count + (size_t)m * pieces->rank, esize);
  return t;
}

/* The model's time of one allgather (first: block 0's bytes), by the
 * algorithm the engine will run for it. */
static double one_allgather(int p, int q, size_t first, size_t total, const cpl_coll_options *opt) {
  const cpli_tuning *t = cpli_tuning_now();
  cpl_inter_algorithm a;
  if (cpli_inter_bytes_algorithm(p, q, first, total, opt, &a) != CPL_OK) a = CPL_INTER_FC;
  return cpl_inter_cost(a, p, q, total, t->alpha, t->beta);
}

/* The model's time of the allgather delivery: the batch (desc.h) in one,
 * every other dataset in its own. */
static double allgather_cost(const cpli_desc *d, int q, const cpl_coll_options *opt) {
  double cost =
      d->nbatched ? one_allgather(d->nblocks, q, d->batch_bytes[0], d->batch_total, opt) : 0;
  for (int k = 0; k < d->nd; k++)
    if (d->d[k].total > 0 && !d->d[k].batched)
      cost += one_allgather(d->nblocks, q, d->d[k].bytes[0], d->d[k].total, opt);
  return cost;
}

int cpli_rplan_build(cpli_rplan *pl, const cpli_desc *d, int me, int q, const cpli_sel *sels,
                     int delivery, const cpl_coll_options *opt, const char *where) {
  const int p = d->nblocks;
  pl->nparts = 0;
  pl->q = q;
  free(pl->first);
  size_t *send = calloc((size_t)p, sizeof *send), *recv = calloc((size_t)q, sizeof *recv);
  int *msgs_out = calloc((size_t)p, sizeof *msgs_out),
      *msgs_in = calloc((size_t)q, sizeof *msgs_in);
  unsigned char *pair = calloc((size_t)p, 1);
  pl->first = calloc((size_t)q + 1, sizeof *pl->first);
  cpli_boxes pieces = {0};
  int rc = CPL_OK;
  if (!send || !recv || !msgs_out || !msgs_in || !pair || !pl->first)
    rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory planning delivery", where);
  size_t needed = 0;
  hsize_t is[CPL_MAX_RANK], ic[CPL_MAX_RANK];
  /* Consumer by consumer: its pieces of each dataset against every block.
   * Only this rank's parts are kept; every rank counts all of them. */
  for (int j = 0; rc == CPL_OK && j < q; j++) {
    pl->first[j] = pl->nparts;
    memset(pair, 0, (size_t)p);
    for (int k = 0; rc == CPL_OK && k < d->nd; k++) {
      const cpli_dset *s = &d->d[k];
      if (cpli_sel_pieces(sels ? &sels[j] : &(cpli_sel){0}, s->name, s->rank, s->dims, &pieces) <
          0) {
        rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory planning delivery", where);
        break;
      }
      needed += cpli_pieces_bytes(&pieces, s->esize);
      for (int m = 0; m < pieces.n; m++) {
        const hsize_t *ps = pieces.start + (size_t)m * s->rank;
        const hsize_t *pc = pieces.count + (size_t)m * s->rank;
        for (int i = 0; i < p; i++) {
          if (s->bytes[i] == 0 ||
              !cpli_box_intersect(s->rank, s->start + (size_t)i * s->rank,
                                  s->count + (size_t)i * s->rank, ps, pc, is, ic))
            continue;
          size_t b = box_bytes(s->rank, ic, s->esize);
          send[i] += b;
          recv[j] += b;
          pair[i] = 1;
          if (i == me && add_part(pl, k, s->rank, is, ic) < 0)
            rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory planning delivery", where);
        }
      }
    }
    for (int i = 0; i < p; i++) {
      msgs_out[i] += pair[i];
      msgs_in[j] += pair[i];
    }
  }
  if (rc == CPL_OK) {
    pl->first[q] = pl->nparts;
    const cpli_tuning *t = cpli_tuning_now();
    size_t big = 0;
    int most = 0;
    for (int i = 0; i < p; i++) {
      big = send[i] > big ? send[i] : big;
      most = msgs_out[i] > most ? msgs_out[i] : most;
    }
    for (int j = 0; j < q; j++) {
      big = recv[j] > big ? recv[j] : big;
      most = msgs_in[j] > most ? msgs_in[j] : most;
    }
    pl->cost_select = most * t->alpha + (double)big * t->beta;
    pl->cost_allgather = allgather_cost(d, q, opt);
    pl->bytes_needed = needed;
    int any = 0;
    for (int j = 0; sels && j < q; j++) any |= sels[j].active;
    if (delivery == CPLI_DELIVERY_ALLGATHER) pl->mode = CPLI_MODE_ALLGATHER;
    else if (delivery == CPLI_DELIVERY_SELECT) pl->mode = CPLI_MODE_SELECT;
    else /* auto: nobody selected means everyone reads everything */
      pl->mode =
          any && pl->cost_select < pl->cost_allgather ? CPLI_MODE_SELECT : CPLI_MODE_ALLGATHER;
    pl->valid = 1;
  }
  cpli_boxes_free(&pieces);
  free(send);
  free(recv);
  free(msgs_out);
  free(msgs_in);
  free(pair);
  return rc;
}

/* ------------------------------------------------------------ datatypes */

/* Messages up to this size are packed instead of described by a derived
 * datatype: MPICH 4.0's UCX device attaches a generic datatype to every
 * non-contiguous type at commit and, for about half the heap addresses,
 * never frees it (its free hook tests the handle as a negative int), 56
 * bytes lost per message; a run of many small steps then grew by 64-130
 * bytes a step on each rank. A copy costs little at these sizes (the
 * dataflow executor packs up to the same size, coll/flow_exec.c). */
#define REDIST_PACK_MAX ((size_t)1 << 20)

/* The sub-box (ss, sc) of a row-major buffer holding box (os, oc): a type
 * and the byte displacement of its first element. Trailing dimensions the
 * sub-box covers whole merge into one contiguous run. Large-count
 * constructors: a run, a count or a stride may pass 2^31 (every size is
 * within the dataset limit, far inside MPI_Count and MPI_Aint). */
static int sub_type(int rank, size_t esize, const hsize_t *os, const hsize_t *oc, const hsize_t *ss,
                    const hsize_t *sc, MPI_Aint *disp, MPI_Datatype *out) {
  MPI_Aint stride[CPL_MAX_RANK];
  MPI_Aint st = (MPI_Aint)esize;
  for (int d = rank - 1; d >= 0; d--) {
    stride[d] = st;
    st *= (MPI_Aint)oc[d];
  }
  *disp = 0;
  for (int d = 0; d < rank; d++) *disp += (MPI_Aint)(ss[d] - os[d]) * stride[d];
  int k = rank - 1;
  hsize_t run = sc[k];
  while (k > 0 && sc[k] == oc[k]) {
    k--;
    run *= sc[k];
  }
  MPI_Datatype elem, t, u;
  int rc = MPI_Type_contiguous_c((MPI_Count)esize, MPI_BYTE, &elem);
  if (rc == MPI_SUCCESS) rc = MPI_Type_contiguous_c((MPI_Count)run, elem, &t);
  MPI_Type_free(&elem);
  for (int d = k - 1; rc == MPI_SUCCESS && d >= 0; d--) {
    rc = MPI_Type_create_hvector_c((MPI_Count)sc[d], 1, (MPI_Count)stride[d], t, &u);
    MPI_Type_free(&t);
    t = u;
  }
  if (rc != MPI_SUCCESS) return cpli_mpi_check(rc, "MPI_Type_create_hvector", "box type");
  *out = t;
  return CPL_OK;
}

/* A message of n sub-boxes at absolute addresses, committed. */
static int msg_type(int n, MPI_Aint *addr, MPI_Datatype *types, MPI_Datatype *out) {
  int *one = calloc((size_t)(n > 0 ? n : 1), sizeof *one);
  if (!one) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  for (int i = 0; i < n; i++) one[i] = 1;
  int rc = MPI_Type_create_struct(n, one, addr, types, out);
  free(one);
  for (int i = 0; i < n; i++) MPI_Type_free(&types[i]);
  if (rc == MPI_SUCCESS) rc = MPI_Type_commit(out);
  return cpli_mpi_check(rc, "MPI_Type_create_struct", "message type");
}

/* ----------------------------------------------------------------- wait */

/* A step that failed half-way: messages already posted are withdrawn, so
 * no buffer is written after the caller frees it (the link is over). */
static void drop_posted(int n, MPI_Request *reqs) {
  for (int i = 0; i < n; i++)
    if (reqs[i] != MPI_REQUEST_NULL) {
      MPI_Cancel(&reqs[i]);
      MPI_Request_free(&reqs[i]);
    }
}

static void say_redist(const void *arg, char *buf, unsigned long n) {
  const char *const *a = arg;
  snprintf(buf, n, "%s: redistribution: waiting for %s ranks' parts", a[0], a[1]);
}

/* Poll until every request completes or `timeout` seconds pass without any
 * completing; on timeout name the peers still outstanding (the caller
 * withdraws them: cpli_posted_drop). */
static int wait_all(int n, MPI_Request *reqs, const int *peer, double timeout, const char *where,
                    const char *who) {
  int *idx = malloc((size_t)(n ? n : 1) * sizeof *idx);
  /* Real statuses: gcc 12 misreads MPI_STATUSES_IGNORE as a buffer. */
  MPI_Status *sts = malloc((size_t)(n ? n : 1) * sizeof *sts);
  if (!idx || !sts) {
    free(idx);
    free(sts);
    return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
  }
  int left = 0;
  for (int i = 0; i < n; i++) left += reqs[i] != MPI_REQUEST_NULL;
  cpli_wait w;
  cpli_wait_start(&w, timeout, 0); /* both groups are in this step */
  const char *args[2] = {where, who};
  cpli_wait_watch(&w, say_redist, args);
  int rc = CPL_OK;
  while (left > 0) {
    int done = 0;
    int mrc = MPI_Testsome(n, reqs, &done, idx, sts);
    if (mrc != MPI_SUCCESS) {
      rc = cpli_mpi_check(mrc, "MPI_Testsome", "%s", where);
      break;
    }
    if (done > 0 && done != MPI_UNDEFINED) {
      left -= done;
      cpli_wait_moved(&w);
      continue;
    }
    if (cpli_wait_idle(&w)) {
      char list[256] = "";
      size_t o = 0;
      for (int i = 0; i < n && o < sizeof list - 16; i++)
        if (reqs[i] != MPI_REQUEST_NULL)
          o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", o ? ", " : "", peer[i]);
      rc = w.interrupted ? CPL_ERR_INTERRUPTED
                         : cpli_fail(CPL_ERR_TIMEOUT,
                                     "%s: redistribution: nothing moved for "
                                     "%g s; still waiting on %s rank(s) %s (dead, stuck, or "
                                     "not in this step)",
                                     where, timeout, who, list);
      break;
    }
  }
  free(idx);
  free(sts);
  return rc;
}

/* ------------------------------------------------------------- transfer */

/* Post one message of n parts (absolute addresses) to or from `peer`. */
static int post(int sending, int n, MPI_Aint *addr, MPI_Datatype *types, int peer, int tag,
                MPI_Comm comm, MPI_Request *req, const char *where) {
  MPI_Datatype t;
  CPLI_TRY(msg_type(n, addr, types, &t));
  int mrc = sending ? MPI_Isend(MPI_BOTTOM, 1, t, peer, tag, comm, req)
                    : MPI_Irecv(MPI_BOTTOM, 1, t, peer, tag, comm, req);
  MPI_Type_free(&t); /* MPI keeps it until the message completes */
  return cpli_mpi_check(mrc, sending ? "MPI_Isend" : "MPI_Irecv",
                        "%s: %s %s "
                        "rank %d",
                        where, sending ? "to" : "from", sending ? "consumer" : "producer", peer);
}

/* Post one packed message (see REDIST_PACK_MAX) to or from `peer`. */
static int post_packed(int sending, char *pack, size_t bytes, int peer, int tag, MPI_Comm comm,
                       MPI_Request *req, const char *where) {
  int mrc = sending ? MPI_Isend_c(pack, (MPI_Count)bytes, MPI_BYTE, peer, tag, comm, req)
                    : MPI_Irecv_c(pack, (MPI_Count)bytes, MPI_BYTE, peer, tag, comm, req);
  return cpli_mpi_check(mrc, sending ? "MPI_Isend" : "MPI_Irecv", "%s: %s %s rank %d", where,
                        sending ? "to" : "from", sending ? "consumer" : "producer", peer);
}

/* ------------------------------------------------------------- posted */

int cpli_posted_test(cpli_posted *m, int *done) {
  *done = 1;
  if (m->n == 0) return CPL_OK;
  MPI_Status st[8];
  MPI_Status *sts = m->n <= 8 ? st : malloc((size_t)m->n * sizeof *sts);
  if (!sts) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  int rc = MPI_Testall(m->n, m->reqs, done, sts);
  if (sts != st) free(sts);
  return cpli_mpi_check(rc, "MPI_Testall", "messages of a step in flight");
}

int cpli_posted_wait(cpli_posted *m, double timeout, const char *where, const char *who) {
  int rc = wait_all(m->n, m->reqs, m->peer, timeout, where, who);
  cpli_posted_drop(m);
  return rc;
}

void cpli_posted_drop(cpli_posted *m) {
  /* A packed copy whose message was withdrawn is left to the process's
   * end: MPI may still read or write a cancelled message's buffer. */
  for (int i = 0; m->pack && i < m->n; i++)
    if (m->reqs[i] == MPI_REQUEST_NULL) free(m->pack[i]);
  drop_posted(m->n, m->reqs);
  free(m->reqs);
  free(m->peer);
  free(m->pack);
  *m = (cpli_posted){0};
}

const char *cpli_posted_peers(const cpli_posted *m, char *buf, size_t n) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < m->n && o + 16 < n; i++)
    if (m->reqs[i] != MPI_REQUEST_NULL) {
      int dup = 0; /* one peer may have several messages */
      for (int j = 0; j < i; j++) dup |= m->reqs[j] != MPI_REQUEST_NULL && m->peer[j] == m->peer[i];
      if (!dup) o += (size_t)snprintf(buf + o, n - o, "%s%d", o ? ", " : "", m->peer[i]);
    }
  return buf;
}

static int posted_alloc(cpli_posted *m, int n, const char *where) {
  *m = (cpli_posted){0};
  m->reqs = malloc((size_t)(n ? n : 1) * sizeof *m->reqs);
  m->peer = malloc((size_t)(n ? n : 1) * sizeof *m->peer);
  m->pack = calloc((size_t)(n ? n : 1), sizeof *m->pack);
  if (m->reqs && m->peer && m->pack) return CPL_OK;
  cpli_posted_drop(m);
  return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
}

/* ------------------------------------------------------------- transfer */

int cpli_redist_post(const cpli_rplan *pl, const cpli_desc *d, int me, const void *const *blocks,
                     MPI_Comm comm, int tag, const char *where, cpli_posted *m, size_t *bytes) {
  int q = pl->q;
  *bytes = 0;
  CPLI_TRY(posted_alloc(m, q, where));
  int most = 0;
  for (int j = 0; j < q; j++)
    most = pl->first[j + 1] - pl->first[j] > most ? pl->first[j + 1] - pl->first[j] : most;
  MPI_Aint *addr = malloc((size_t)(most ? most : 1) * sizeof *addr);
  MPI_Datatype *types = malloc((size_t)(most ? most : 1) * sizeof *types);
  int rc = CPL_OK;
  if (!addr || !types) rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
  /* Start at a different consumer on every producer rank, so the first
   * messages do not all converge on consumer 0. */
  int p = d->nblocks;
  for (int jj = 0; rc == CPL_OK && jj < q; jj++) {
    int j = (int)(((long)me * q / (p ? p : 1) + jj) % q);
    int n = pl->first[j + 1] - pl->first[j];
    if (n == 0) continue;
    size_t msg = 0;
    for (int x = 0; x < n; x++) {
      const cpli_rpart *pt = &pl->parts[pl->first[j] + x];
      msg += box_bytes(d->d[pt->k].rank, pt->count, d->d[pt->k].esize);
    }
    if (msg <= REDIST_PACK_MAX) {
      char *pack = m->pack[m->n] = malloc(msg ? msg : 1);
      if (!pack) {
        rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory packing %zu bytes", where, msg);
        break;
      }
      size_t o = 0;
      for (int x = 0; x < n; x++) {
        const cpli_rpart *pt = &pl->parts[pl->first[j] + x];
        const cpli_dset *s = &d->d[pt->k];
        cpli_slab_copy(s->rank, s->esize, s->start + (size_t)me * s->rank,
                       s->count + (size_t)me * s->rank, blocks[pt->k], pt->start, pt->count,
                       pack + o);
        o += box_bytes(s->rank, pt->count, s->esize);
      }
      rc = post_packed(1, pack, msg, j, tag, comm, &m->reqs[m->n], where);
      if (rc != CPL_OK) {
        free(pack);
        m->pack[m->n] = NULL;
        break;
      }
      *bytes += msg;
      m->peer[m->n++] = j;
      continue;
    }
    for (int x = 0; rc == CPL_OK && x < n; x++) {
      const cpli_rpart *pt = &pl->parts[pl->first[j] + x];
      const cpli_dset *s = &d->d[pt->k];
      MPI_Aint disp;
      rc = sub_type(s->rank, s->esize, s->start + (size_t)me * s->rank,
                    s->count + (size_t)me * s->rank, pt->start, pt->count, &disp, &types[x]);
      if (rc != CPL_OK) {
        for (int y = 0; y < x; y++) MPI_Type_free(&types[y]);
        break;
      }
      MPI_Get_address(blocks[pt->k], &addr[x]);
      addr[x] = MPI_Aint_add(addr[x], disp);
      *bytes += box_bytes(s->rank, pt->count, s->esize);
    }
    if (rc == CPL_OK) rc = post(1, n, addr, types, j, tag, comm, &m->reqs[m->n], where);
    if (rc != CPL_OK) break;
    m->peer[m->n++] = j;
  }
  free(addr);
  free(types);
  if (rc != CPL_OK) cpli_posted_drop(m);
  return rc;
}

int cpli_redist_send(const cpli_rplan *pl, const cpli_desc *d, int me, const void *const *blocks,
                     MPI_Comm comm, int tag, double timeout, const char *where, size_t *bytes) {
  cpli_posted m;
  CPLI_TRY(cpli_redist_post(pl, d, me, blocks, comm, tag, where, &m, bytes));
  return cpli_posted_wait(&m, timeout, where, "consumer");
}

int cpli_scatter_post(const cpli_desc *d, int me, int q, const void *const *blocks, MPI_Comm comm,
                      int tag, const char *where, cpli_posted *m, size_t *bytes) {
  *bytes = 0;
  CPLI_TRY(posted_alloc(m, d->nd + 1, where));
  int to = cpli_scatter_owner(me, d->nblocks, q);
  const size_t mine = d->nbatched ? d->batch_bytes[me] : 0;
  if (mine) { /* freed with the bookkeeping once sent (cpli_posted_drop) */
    char *pack = malloc(mine), what[300];
    if (!pack) {
      cpli_posted_drop(m);
      return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory packing %zu bytes of %s", where, mine,
                       cpli_batch_str(d, what, sizeof what));
    }
    cpli_batch_pack(d, me, blocks, pack);
    int rc = MPI_Isend_c(pack, (MPI_Count)mine, MPI_BYTE, to, tag, comm, &m->reqs[0]);
    if (rc != MPI_SUCCESS) {
      free(pack);
      cpli_posted_drop(m);
      return cpli_mpi_check(rc, "MPI_Isend", "%s: %s, to consumer rank %d", where,
                            cpli_batch_str(d, what, sizeof what), to);
    }
    m->pack[0] = pack;
    m->peer[m->n++] = to;
    *bytes += mine;
  }
  for (int k = 0; k < d->nd; k++) {
    size_t b = d->d[k].bytes[me];
    if (b == 0 || d->d[k].batched) continue; /* the receiver skips it the same way */
    int rc = MPI_Isend_c(blocks[k], (MPI_Count)b, MPI_BYTE, to, tag, comm, &m->reqs[m->n]);
    if (rc != MPI_SUCCESS) {
      cpli_posted_drop(m);
      return cpli_mpi_check(rc, "MPI_Isend", "%s: dataset \"%s\" to consumer rank %d", where,
                            d->d[k].name, to);
    }
    m->peer[m->n++] = to;
    *bytes += b;
  }
  return CPL_OK;
}

/* Consumer j holds the blocks (bytes, offset: per producer rank) of its
 * producers, one contiguous run: counts[j] bytes at counts[q + j]. */
static void owner_runs(int p, int q, const size_t *bytes, const size_t *offset, size_t *counts) {
  for (int j = 0; j < q; j++) counts[j] = 0, counts[q + j] = SIZE_MAX;
  for (int i = 0; i < p; i++) {
    int j = cpli_scatter_owner(i, p, q);
    if (counts[q + j] == SIZE_MAX) counts[q + j] = offset[i];
    counts[j] += bytes[i];
  }
  for (int j = 0; j < q; j++)
    if (counts[q + j] == SIZE_MAX) counts[q + j] = 0;
}

int cpli_scatter_recv(const cpli_desc *d, const cpl_coll_options *opt, MPI_Comm group,
                      char *const *buf, char *batch, MPI_Comm comm, int tag, const char *where,
                      size_t *bytes) {
  int me, q, p = d->nblocks;
  MPI_Comm_rank(group, &me);
  MPI_Comm_size(group, &q);
  *bytes = 0;
  /* This rank's producers: a contiguous range [lo, hi). */
  int lo = 0;
  while (lo < p && cpli_scatter_owner(lo, p, q) < me) lo++;
  int hi = lo;
  while (hi < p && cpli_scatter_owner(hi, p, q) == me) hi++;
  cpli_posted m;
  CPLI_TRY(posted_alloc(&m, (d->nd + 1) * (hi - lo), where));
  int rc = CPL_OK;
  char what[300];
  for (int i = lo; d->nbatched && rc == CPL_OK && i < hi; i++) { /* first, as sent */
    if (d->batch_bytes[i] == 0) continue;
    rc = cpli_mpi_check(MPI_Irecv_c(batch + d->batch_offset[i], (MPI_Count)d->batch_bytes[i],
                                    MPI_BYTE, i, tag, comm, &m.reqs[m.n]),
                        "MPI_Irecv", "%s: %s, from producer rank %d", where,
                        cpli_batch_str(d, what, sizeof what), i);
    if (rc == CPL_OK) m.peer[m.n++] = i;
  }
  for (int k = 0; rc == CPL_OK && k < d->nd; k++)
    for (int i = lo; rc == CPL_OK && i < hi; i++) {
      const cpli_dset *s = &d->d[k];
      if (s->bytes[i] == 0 || s->batched) continue;
      rc = cpli_mpi_check(MPI_Irecv_c(buf[k] + s->offset[i], (MPI_Count)s->bytes[i], MPI_BYTE, i,
                                      tag, comm, &m.reqs[m.n]),
                          "MPI_Irecv", "%s: dataset \"%s\" from producer rank %d", where, s->name,
                          i);
      if (rc == CPL_OK) m.peer[m.n++] = i;
    }
  if (rc == CPL_OK) rc = cpli_posted_wait(&m, opt->timeout, where, "producer");
  else cpli_posted_drop(&m);
  size_t *counts = malloc(2 * (size_t)q * sizeof *counts);
  if (rc == CPL_OK && !counts) rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
  if (rc == CPL_OK && d->nbatched) {
    owner_runs(p, q, d->batch_bytes, d->batch_offset, counts);
    rc = cpli_intra_allgatherv_bytes(batch, counts, counts + q, group, opt);
    if (rc == CPL_OK) cpli_batch_unpack(d, batch, buf);
    else
      cpli_error_prefix("%s: %s, sharing them in the group: ", where,
                        cpli_batch_str(d, what, sizeof what));
    *bytes += d->batch_total;
  }
  for (int k = 0; rc == CPL_OK && k < d->nd; k++) {
    const cpli_dset *s = &d->d[k];
    if (s->total == 0 || s->batched) continue;
    owner_runs(p, q, s->bytes, s->offset, counts);
    rc = cpli_intra_allgatherv_bytes(buf[k], counts, counts + q, group, opt);
    if (rc != CPL_OK)
      cpli_error_prefix("%s: dataset \"%s\", sharing it in the group: ", where, s->name);
    *bytes += s->total;
  }
  free(counts);
  return rc;
}

/* The parts of producer rank i's message to this rank: each dataset's
 * pieces (buf[k]) in order, cut to i's block. Returns their bytes; with
 * `pack` (the message received packed) also copies them into place. */
static size_t unpack_parts(const cpli_desc *d, const cpli_boxes *pieces, char *const *buf, int i,
                           const char *pack) {
  hsize_t is[CPL_MAX_RANK], ic[CPL_MAX_RANK];
  size_t o = 0;
  for (int k = 0; k < d->nd; k++) {
    const cpli_dset *s = &d->d[k];
    if (s->bytes[i] == 0) continue;
    const hsize_t *bs = s->start + (size_t)i * s->rank;
    const hsize_t *bc = s->count + (size_t)i * s->rank;
    size_t off = 0;
    for (int m = 0; m < pieces[k].n; m++) {
      const hsize_t *ps = pieces[k].start + (size_t)m * s->rank;
      const hsize_t *pc = pieces[k].count + (size_t)m * s->rank;
      if (cpli_box_intersect(s->rank, bs, bc, ps, pc, is, ic)) {
        if (pack) cpli_slab_copy(s->rank, s->esize, is, ic, pack + o, ps, pc, buf[k] + off);
        o += box_bytes(s->rank, ic, s->esize);
      }
      off += box_bytes(s->rank, pc, s->esize);
    }
  }
  return o;
}

int cpli_redist_recv(const cpli_desc *d, const cpli_boxes *pieces, char *const *buf, MPI_Comm comm,
                     int tag, double timeout, const char *where, size_t *bytes) {
  int p = d->nblocks, most = 0;
  *bytes = 0;
  for (int k = 0; k < d->nd; k++) most += pieces[k].n;
  cpli_posted m;
  CPLI_TRY(posted_alloc(&m, p, where));
  MPI_Aint *addr = malloc((size_t)(most ? most : 1) * sizeof *addr);
  MPI_Datatype *types = malloc((size_t)(most ? most : 1) * sizeof *types);
  int rc = CPL_OK;
  if (!addr || !types) rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", where);
  hsize_t is[CPL_MAX_RANK], ic[CPL_MAX_RANK];
  for (int i = 0; rc == CPL_OK && i < p; i++) {
    size_t msg = unpack_parts(d, pieces, buf, i, NULL);
    if (msg > 0 && msg <= REDIST_PACK_MAX) {
      if (!(m.pack[m.n] = malloc(msg))) {
        rc = cpli_fail(CPL_ERR_NOMEM, "%s: out of memory for %zu packed bytes", where, msg);
        break;
      }
      rc = post_packed(0, m.pack[m.n], msg, i, tag, comm, &m.reqs[m.n], where);
      if (rc != CPL_OK) {
        free(m.pack[m.n]);
        m.pack[m.n] = NULL;
        break;
      }
      *bytes += msg;
      m.peer[m.n++] = i;
      continue;
    }
    int n = 0;
    for (int k = 0; rc == CPL_OK && k < d->nd; k++) {
      const cpli_dset *s = &d->d[k];
      if (s->bytes[i] == 0) continue;
      const hsize_t *bs = s->start + (size_t)i * s->rank;
      const hsize_t *bc = s->count + (size_t)i * s->rank;
      size_t off = 0;
      for (int m = 0; rc == CPL_OK && m < pieces[k].n; m++) {
        const hsize_t *ps = pieces[k].start + (size_t)m * s->rank;
        const hsize_t *pc = pieces[k].count + (size_t)m * s->rank;
        if (cpli_box_intersect(s->rank, bs, bc, ps, pc, is, ic)) {
          MPI_Aint disp;
          rc = sub_type(s->rank, s->esize, ps, pc, is, ic, &disp, &types[n]);
          if (rc == CPL_OK) {
            MPI_Get_address(buf[k] + off, &addr[n]);
            addr[n] = MPI_Aint_add(addr[n], disp);
            *bytes += box_bytes(s->rank, ic, s->esize);
            n++;
          }
        }
        off += box_bytes(s->rank, pc, s->esize);
      }
    }
    if (rc != CPL_OK) {
      for (int y = 0; y < n; y++) MPI_Type_free(&types[y]);
      break;
    }
    if (n == 0) continue;
    rc = post(0, n, addr, types, i, tag, comm, &m.reqs[m.n], where);
    if (rc != CPL_OK) break;
    m.peer[m.n++] = i;
  }
  free(addr);
  free(types);
  if (rc == CPL_OK) rc = wait_all(m.n, m.reqs, m.peer, timeout, where, "producer");
  for (int x = 0; rc == CPL_OK && x < m.n; x++)
    if (m.pack[x]) unpack_parts(d, pieces, buf, m.peer[x], m.pack[x]);
  cpli_posted_drop(&m);
  return rc;
}
