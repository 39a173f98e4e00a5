/*
 * Public entry points of the collective engine: check arguments, turn
 * typed buffers into byte views, pick the algorithm, run it.
 *
 * Byte views: a datatype whose elements are dense (size == extent ==
 * true extent) is used in place, so contiguous data moves with no copy.
 * Any other datatype is packed (MPI_Pack) into a staging buffer on the way
 * in and unpacked on the way out; algorithms never see user datatypes.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/algorithms.h"
#include "coll/link.h"
#include "coll/select.h"
#include "core/launch.h"
#include "core/wait.h"

#define DEFAULT_TIMEOUT 60.0 /* README.md, "Timeouts" */

void cpl_coll_options_init(cpl_coll_options *opt) {
  if (!opt) return;
  opt->inter = CPL_INTER_AUTO;
  opt->intra = CPL_INTRA_AUTO;
  opt->timeout = 0;
  opt->label = NULL;
  opt->step = -1;
}

/* Every collective starts here: the CPL_* variables are read once, now. */
static int make_ctx(const cpl_coll_options *opt, cpli_ctx *ctx) {
  const cpli_tuning *env = cpli_tuning_refresh();
  if (env->file_error) return cpli_fail(CPL_ERR_ENV, "%s", env->file_error);
  double t = opt ? opt->timeout : 0;
  if (t == 0) {
    if (env->timeout_bad)
      return cpli_fail(CPL_ERR_ENV, "CPL_TIMEOUT: expected seconds (negative: none), got \"%s\"",
                       env->timeout_bad);
    t = env->timeout_set ? env->timeout : DEFAULT_TIMEOUT;
  }
  if (isnan(t)) return cpli_fail(CPL_ERR_ARG, "timeout is NaN");
  if (opt) cpli_launch_progress(opt->label, opt->step); /* for cpl-exec */
  *ctx = (cpli_ctx){.timeout = t,
                    .label = opt && opt->label ? opt->label : "",
                    .step = opt ? opt->step : -1,
                    .alg = NULL,
                    .xstep = 0,
                    .merged = MPI_COMM_NULL,
                    .nsend = 0};
  return CPL_OK;
}

int cpli_coll_env_check(void) {
  const cpli_tuning *env = cpli_tuning_refresh();
  if (env->file_error) return cpli_fail(CPL_ERR_ENV, "%s", env->file_error);
  cpl_inter_algorithm inter;
  cpl_intra_algorithm intra;
  CPLI_TRY(cpli_env_inter(&inter));
  return cpli_env_intra(&intra);
}

void cpli_ctx_inter(cpli_ctx *ctx, cpl_inter_algorithm a) {
  ctx->inter = a;
  ctx->alg = cpl_inter_algorithm_name(a);
}

/* ------------------------------------------------------------ type views */

typedef struct type_info {
  MPI_Count size; /* large-count calls: derived types may exceed 2 GiB */
  MPI_Count extent, true_lb;
  int dense; /* elements are contiguous bytes, back to back */
} type_info;

/* Is t's type map its bytes in memory order? Named types are, and
 * contiguous, dup and resized types of such. Size, extent and true extent
 * alone cannot tell: indexed {1, 0} of two ints has size = extent = true
 * extent, but sends the second int first. Other constructors count as
 * out of order (the caller packs them, which is always right). */
static int in_order(MPI_Datatype t, int depth) {
  MPI_Count ni, na, nc, nd;
  int comb;
  if (MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &comb) != MPI_SUCCESS) return 0;
  if (comb == MPI_COMBINER_NAMED) return 1;
  if ((comb != MPI_COMBINER_CONTIGUOUS && comb != MPI_COMBINER_DUP &&
       comb != MPI_COMBINER_RESIZED) ||
      depth > 16 || ni > 4 || na > 4 || nc > 4 || nd != 1)
    return 0;
  int ints[4];
  MPI_Aint addrs[4];
  MPI_Count counts[4];
  MPI_Datatype inner;
  if (MPI_Type_get_contents_c(t, ni, na, nc, nd, ints, addrs, counts, &inner) != MPI_SUCCESS)
    return 0;
  const int ok = in_order(inner, depth + 1);
  MPI_Count a, b, c, d;
  int named;
  if (MPI_Type_get_envelope_c(inner, &a, &b, &c, &d, &named) == MPI_SUCCESS &&
      named != MPI_COMBINER_NAMED)
    MPI_Type_free(&inner);
  return ok;
}

static int get_type(MPI_Datatype t, const char *what, type_info *ti) {
  if (t == MPI_DATATYPE_NULL) return cpli_fail(CPL_ERR_ARG, "%s is MPI_DATATYPE_NULL", what);
  MPI_Count lb, true_extent;
  int rc = MPI_Type_size_c(t, &ti->size);
  if (rc == MPI_SUCCESS) rc = MPI_Type_get_extent_c(t, &lb, &ti->extent);
  if (rc == MPI_SUCCESS) rc = MPI_Type_get_true_extent_c(t, &ti->true_lb, &true_extent);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Type_size/get_extent", "inspecting %s", what));
  ti->dense = ti->size == ti->extent && ti->extent == true_extent && in_order(t, 0);
  return CPL_OK;
}

int cpli_buffer_null(const void *buf, long long count, MPI_Datatype type) {
  MPI_Count size = 0, lb = 0, extent;
  if (buf || count <= 0 || type == MPI_DATATYPE_NULL) return 0;
  MPI_Type_size_c(type, &size);
  MPI_Type_get_true_extent_c(type, &lb, &extent);
  return size > 0 && lb == 0;
}

/* MPI_Pack and MPI_Unpack (pack: 1, unpack: 0) of count elements of type
 * at buf, also at MPI_BOTTOM (NULL), which MPICH 4.0.2's MPI_Pack refuses:
 * there the same bytes are one element of {count x type at -lb} at lb,
 * the data's own address. An MPI error code. */
static int pack_at(int pack, void *buf, MPI_Count count, MPI_Datatype type, void *packed,
                   MPI_Count size, MPI_Count *pos, MPI_Comm comm) {
  MPI_Datatype shifted = MPI_DATATYPE_NULL;
  if (!buf && count > 0) {
    MPI_Count lb, extent;
    int rc = MPI_Type_get_true_extent_c(type, &lb, &extent);
    const MPI_Count disp = -lb;
    if (rc == MPI_SUCCESS) rc = MPI_Type_create_struct_c(1, &count, &disp, &type, &shifted);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&shifted);
    if (rc != MPI_SUCCESS) return rc;
    buf = (char *)(intptr_t)lb, count = 1, type = shifted;
  }
  const int rc = pack ? MPI_Pack_c(buf, count, type, packed, size, pos, comm)
                      : MPI_Unpack_c(packed, size, pos, buf, count, type, comm);
  if (shifted != MPI_DATATYPE_NULL) MPI_Type_free(&shifted);
  return rc;
}

/* One contribution as bytes: in place if dense, else packed into *tmp. */
static int send_view(const void *buf, int count, MPI_Datatype type, MPI_Comm comm, const void **out,
                     size_t *bytes, char **tmp) {
  *out = NULL;
  *bytes = 0;
  *tmp = NULL;
  if (count == 0) return CPL_OK;
  type_info ti;
  CPLI_TRY(get_type(type, "sendtype", &ti));
  if (ti.dense) {
    *out = (const char *)buf + ti.true_lb;
    *bytes = (size_t)count * (size_t)ti.size;
    return CPL_OK;
  }
  MPI_Count psize, pos = 0;
  int rc = MPI_Pack_size_c(count, type, comm, &psize);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Pack_size", "packing the send buffer"));
  if (!(*tmp = malloc(psize ? (size_t)psize : 1)))
    return cpli_fail(CPL_ERR_NOMEM, "out of memory packing %lld bytes", (long long)psize);
  rc = pack_at(1, (void *)buf, count, type, *tmp, psize, &pos, comm);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Pack", "packing the send buffer"));
  *out = *tmp;
  *bytes = (size_t)pos;
  return CPL_OK;
}

/* Displacement of block i in elements: displs[i], or for a regular call
 * (displs NULL) i * counts[0], which may pass int range. */
static long long disp_of(const int *displs, const int *counts, int i) {
  return displs ? displs[i] : (long long)i * counts[0];
}

/* Receive blocks as bytes. Dense recvtype: views into recvbuf (rebased so
 * byte displacements are non-negative). Otherwise: a staging buffer that
 * recv_finish unpacks. displs NULL: the regular layout (disp_of). */
typedef struct recv_view {
  cpli_blocks blk;
  size_t *mem; /* counts and displs */
  char *stage; /* non-dense: staging buffer */
  type_info ti;
  size_t total, maxb;
  int regular;
} recv_view;

static int recv_view_make(void *recvbuf, const int *recvcounts, const int *displs,
                          MPI_Datatype type, int n, recv_view *v) {
  memset(v, 0, sizeof *v);
  if (!recvcounts) return cpli_fail(CPL_ERR_ARG, "recvcounts must not be NULL");
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    if (recvcounts[i] < 0)
      return cpli_fail(CPL_ERR_ARG, "recvcounts[%d] is negative (%d)", i, recvcounts[i]);
    total += (size_t)recvcounts[i];
  }
  if (cpli_buffer_null(recvbuf, (long long)total, type))
    return cpli_fail(CPL_ERR_ARG, "recvbuf is NULL but recvcounts add up to %zu elements", total);
  if (total > 0) CPLI_TRY(get_type(type, "recvtype", &v->ti));
  if (!(v->mem = malloc(sizeof *v->mem * 2 * (size_t)(n > 0 ? n : 1))))
    return cpli_fail(CPL_ERR_NOMEM, "out of memory for %d blocks", n);
  size_t *counts = v->mem, *bd = v->mem + n;
  v->regular = 1;
  for (int i = 0; i < n; i++) {
    counts[i] = (size_t)recvcounts[i] * (size_t)v->ti.size;
    v->total += counts[i];
    if (counts[i] > v->maxb) v->maxb = counts[i];
    if (recvcounts[i] != recvcounts[0]) v->regular = 0;
  }
  if (total == 0 || v->ti.dense) {
    long long lo = LLONG_MAX;
    for (int i = 0; i < n; i++) {
      long long off = disp_of(displs, recvcounts, i) * v->ti.extent + v->ti.true_lb;
      if (counts[i] && off < lo) lo = off;
    }
    if (lo == LLONG_MAX) lo = 0;
    for (int i = 0; i < n; i++) {
      long long off = disp_of(displs, recvcounts, i) * v->ti.extent + v->ti.true_lb;
      bd[i] = counts[i] ? (size_t)(off - lo) : 0;
    }
    v->blk = (cpli_blocks){(char *)recvbuf + lo, counts, bd};
    return CPL_OK;
  }
  size_t t = 0;
  for (int i = 0; i < n; i++) bd[i] = t, t += counts[i];
  if (!(v->stage = malloc(t ? t : 1))) {
    free(v->mem);
    v->mem = NULL;
    return cpli_fail(CPL_ERR_NOMEM, "out of memory staging %zu bytes", t);
  }
  v->blk = (cpli_blocks){v->stage, counts, bd};
  return CPL_OK;
}

/* Unpack staged blocks into the caller's buffer (skip block `skip`). */
static int recv_view_finish(recv_view *v, void *recvbuf, const int *recvcounts, const int *displs,
                            MPI_Datatype type, int n, int skip, MPI_Comm comm, int ok) {
  int rc = CPL_OK;
  if (ok && v->stage)
    for (int i = 0; i < n && rc == CPL_OK; i++) {
      if (i == skip || recvcounts[i] == 0) continue;
      MPI_Count pos = 0;
      int mrc =
          pack_at(0, (char *)recvbuf + disp_of(displs, recvcounts, i) * v->ti.extent, recvcounts[i],
                  type, v->stage + v->blk.displs[i], (MPI_Count)v->blk.counts[i], &pos, comm);
      rc = cpli_mpi_check(mrc, "MPI_Unpack", "unpacking block %d", i);
    }
  free(v->stage);
  free(v->mem);
  return rc;
}

/* --------------------------------------------------------------- inter */

static int check_comm(MPI_Comm comm, int want_inter) {
  if (comm == MPI_COMM_NULL) return cpli_fail(CPL_ERR_COMM, "communicator is MPI_COMM_NULL");
  int inter = 0;
  int rc = MPI_Comm_test_inter(comm, &inter);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Comm_test_inter", "checking the communicator"));
  if (inter != want_inter)
    return cpli_fail(CPL_ERR_COMM,
                     want_inter
                         ? "an intercommunicator is required, but an intracommunicator was given"
                         : "an intracommunicator is required, but an intercommunicator was given");
  return CPL_OK;
}

/* A caller's mistake (argument, communicator, environment) names the
 * public call it was made to; transfer failures name link and step. */
static int named(int rc, const char *call) {
  if ((rc == CPL_ERR_ARG || rc == CPL_ERR_COMM || rc == CPL_ERR_ENV) &&
      strncmp(cpl_last_error(), call, strlen(call)) != 0)
    cpli_error_prefix("%s: ", call);
  return rc;
}

/* The run column of the algorithm tables (coll/algorithms.h). */
#define RUN(e, name, autopick, restriction, cost, run) [e] = run,
static const cpli_inter_fn inter_runs[CPL_INTER_COUNT] = {CPLI_INTER_TABLE(RUN)};
static const cpli_intra_fn intra_runs[CPL_INTRA_COUNT] = {CPLI_INTRA_TABLE(RUN)};

/* AUTO is resolved before dispatch; anything else not in the table runs
 * MPI's own, as before the table. */
static cpli_inter_fn inter_fn(cpl_inter_algorithm a) {
  return a > CPL_INTER_AUTO && a < CPL_INTER_COUNT ? inter_runs[a] : cpli_inter_native;
}

cpli_intra_fn cpli_intra_fn_of(cpl_intra_algorithm a) {
  return a > CPL_INTRA_AUTO && a < CPL_INTRA_COUNT ? intra_runs[a] : cpli_intra_native;
}

/* Blocks already as bytes (the data layer's entry points): the sender's
 * own block, or the receiver's blocks; NULL: typed buffers, made views. */
typedef struct raw_blocks {
  const void *own;
  size_t own_bytes;
  cpli_blocks blk;
} raw_blocks;

/* ctx->who = "sender 3" or "receiver 0". By hand: snprintf cost a
 * thousand instructions per collective, and the data layer runs one per
 * dataset of a step. */
static void set_who(cpli_ctx *ctx, int sender, int rank) {
  char digits[12];
  int n = 0;
  unsigned r = rank < 0 ? 0u : (unsigned)rank; /* a rank in a group: never negative */
  do digits[n++] = (char)('0' + r % 10);
  while ((r /= 10) && n < (int)sizeof digits);
  const char *role = sender ? "sender " : "receiver ";
  size_t o = strlen(role);
  memcpy(ctx->who, role, o);
  while (n > 0) ctx->who[o++] = digits[--n];
  ctx->who[o] = '\0';
}

static int inter_engine(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        cpl_role role, MPI_Comm intercomm, const cpl_coll_options *opt,
                        size_t block, int regular, const raw_blocks *raw,
                        cpl_inter_algorithm *ran) {
  cpli_ctx ctx;
  CPLI_TRY(make_ctx(opt, &ctx));
  CPLI_TRY(check_comm(intercomm, 1));
  if (role != CPL_SENDER && role != CPL_RECEIVER)
    return cpli_fail(CPL_ERR_ARG, "role must be CPL_SENDER or CPL_RECEIVER, got %d", (int)role);
  const int sender = role == CPL_SENDER;
  if (sender && sendcount < 0)
    return cpli_fail(CPL_ERR_ARG, "sendcount is negative (%d)", sendcount);
  if (sender && cpli_buffer_null(sendbuf, sendcount, sendtype))
    return cpli_fail(CPL_ERR_ARG, "sendbuf is NULL with sendcount %d", sendcount);
  cpli_link *link;
  CPLI_TRY(cpli_link_get(intercomm, &ctx, &link));
  const int p = sender ? link->lsize : link->rsize, q = sender ? link->rsize : link->lsize;
  cpl_intra_algorithm intra;
  CPLI_TRY(cpli_intra_requested(opt, &intra));
  cpl_inter_algorithm alg = CPL_INTER_AUTO, asked;
  CPLI_TRY(cpli_inter_requested(opt, &asked));

  cpli_inter_args a = {.link = link,
                       .sender = sender,
                       .p = p,
                       .q = q,
                       .regular = regular,
                       .intra = intra,
                       .by_auto = asked == CPL_INTER_AUTO,
                       .ctx = &ctx};
  set_who(&ctx, sender, link->lrank);
  char *tmp = NULL;
  recv_view v = {0};
  if (raw) {
    a.own = raw->own;
    a.own_bytes = raw->own_bytes;
    a.blk = raw->blk;
  } else if (sender) {
    CPLI_TRY(send_view(sendbuf, sendcount, sendtype, intercomm, &a.own, &a.own_bytes, &tmp));
  } else {
    CPLI_TRY(recv_view_make(recvbuf, recvcounts, displs, recvtype, p, &v));
    a.blk = v.blk;
  }
  /* Both groups must choose alike, from what both know: a regular call's
   * block, and with one sender its block whatever the call (the sender's
   * own, the receivers' only count); otherwise a nominal block. */
  if (!regular && p == 1) block = sender ? a.own_bytes : a.blk.counts[0];
  int rc = cpli_inter_choose(p, q, block, regular, opt, &alg);
  cpli_ctx_inter(&ctx, alg);
  if (rc == CPL_OK) rc = inter_fn(alg)(&a);
  if (rc == CPL_OK && ran) *ran = ctx.inter; /* after any switch (native's to fc) */
  if (rc != CPL_OK) {
    char where[256];
    cpli_ctx_where(&ctx, link->inter, where, sizeof where);
    if (!strstr(cpl_last_error(), ctx.who)) cpli_error_prefix("%s: ", where);
  }
  if (!sender && !raw) {
    int frc =
        recv_view_finish(&v, recvbuf, recvcounts, displs, recvtype, p, -1, intercomm, rc == CPL_OK);
    if (rc == CPL_OK) rc = frc;
  }
  free(tmp);
  return rc;
}

/* Every collective runs with world returning errors (core/wait.h), so a
 * peer's disagreement comes back as a status, not an abort. */
static int inter_run(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                     cpl_role role, MPI_Comm intercomm, const cpl_coll_options *opt, size_t block,
                     int regular, const raw_blocks *raw, cpl_inter_algorithm *ran) {
  cpli_world_returns_enter();
  const int rc = inter_engine(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                              role, intercomm, opt, block, regular, raw, ran);
  if (rc != CPL_OK && rc != CPL_ERR_ARG) cpli_comm_taint(intercomm, 1);
  cpli_world_returns_leave();
  return rc;
}

int cpl_inter_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                         cpl_role role, MPI_Comm intercomm, const cpl_coll_options *opt) {
  if (role == CPL_RECEIVER && !displs)
    return cpli_fail(CPL_ERR_ARG, "cpl_inter_allgatherv: displs must not be NULL");
  return named(inter_run(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, role,
                         intercomm, opt, 0, 0, NULL, NULL),
               "cpl_inter_allgatherv");
}

int cpli_inter_allgatherv_bytes(const void *own, size_t own_bytes, void *recvbuf,
                                const size_t counts[], const size_t displs[], cpl_role role,
                                MPI_Comm intercomm, const cpl_coll_options *opt,
                                cpl_inter_algorithm *ran) {
  if (role == CPL_SENDER && own_bytes > 0 && !own)
    return cpli_fail(CPL_ERR_ARG, "own block is NULL with %zu bytes", own_bytes);
  if (role == CPL_RECEIVER && (!counts || !displs))
    return cpli_fail(CPL_ERR_ARG, "counts and displs must not be NULL");
  raw_blocks raw = {own, own_bytes, {recvbuf, counts, displs}};
  return inter_run(NULL, 0, MPI_BYTE, NULL, NULL, NULL, MPI_BYTE, role, intercomm, opt, 0, 0, &raw,
                   ran);
}

static int inter_regular(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         int recvcount, MPI_Datatype recvtype, cpl_role role, MPI_Comm intercomm,
                         const cpl_coll_options *opt) {
  CPLI_TRY(check_comm(intercomm, 1));
  int p;
  if (role == CPL_SENDER) MPI_Comm_size(intercomm, &p);
  else MPI_Comm_remote_size(intercomm, &p);
  size_t block = 0;
  int rc = CPL_OK;
  int *counts = NULL;
  if (role == CPL_RECEIVER) {
    if (recvcount < 0) return cpli_fail(CPL_ERR_ARG, "recvcount is negative (%d)", recvcount);
    type_info ti = {0};
    if (recvcount > 0) CPLI_TRY(get_type(recvtype, "recvtype", &ti));
    block = (size_t)recvcount * (size_t)ti.size;
    if (!(counts = malloc(sizeof *counts * (size_t)(p ? p : 1))))
      return cpli_fail(CPL_ERR_NOMEM, "out of memory for %d counts", p);
    for (int i = 0; i < p; i++) counts[i] = recvcount;
  } else if (role == CPL_SENDER && sendcount > 0) {
    type_info ti;
    CPLI_TRY(get_type(sendtype, "sendtype", &ti));
    block = (size_t)sendcount * (size_t)ti.size;
  }
  if (rc == CPL_OK)
    rc = inter_run(sendbuf, sendcount, sendtype, recvbuf, counts, NULL, recvtype, role, intercomm,
                   opt, block, 1, NULL, NULL);
  free(counts);
  return rc;
}

int cpl_inter_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, cpl_role role, MPI_Comm intercomm,
                        const cpl_coll_options *opt) {
  return named(inter_regular(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, role,
                             intercomm, opt),
               "cpl_inter_allgather");
}

/* --------------------------------------------------------------- intra */

/* Pick the algorithm (auto: by shape; native only within int counts) and
 * run it on the byte blocks. */
static int intra_dispatch(MPI_Comm priv, cpli_plan_cache *plans, cpli_ctx *ctx, cpli_blocks blk,
                          int p, size_t total, size_t maxb, int regular,
                          const cpl_coll_options *opt) {
  cpl_intra_algorithm alg = CPL_INTRA_AUTO;
  CPLI_TRY(cpli_intra_requested(opt, &alg));
  if (alg == CPL_INTRA_AUTO) {
    alg = cpli_intra_pick(p, total, maxb, regular);
    size_t sum; /* the same counts on every rank: all switch alike */
    if (alg == CPL_INTRA_NATIVE && (cpli_native_total(&blk, p, &sum), sum > CPLI_NATIVE_MAX))
      alg = CPL_INTRA_CIRCULANT;
  }
  ctx->alg = cpl_intra_algorithm_name(alg);
  cpli_intra_args a = {priv, blk, ctx, plans};
  return cpli_intra_fn_of(alg)(&a);
}

/* The intra-group allgatherv; displs NULL: the regular layout. */
static int intra_engine(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, const cpl_coll_options *opt) {
  cpli_ctx ctx;
  CPLI_TRY(make_ctx(opt, &ctx));
  CPLI_TRY(check_comm(comm, 0));
  MPI_Comm priv;
  cpli_plan_cache *plans;
  CPLI_TRY(cpli_intra_comm_get(comm, &ctx, &priv, &plans));
  int p, r;
  MPI_Comm_size(priv, &p);
  MPI_Comm_rank(priv, &r);
  const int in_place = sendbuf == MPI_IN_PLACE;
  if (!in_place && sendcount < 0)
    return cpli_fail(CPL_ERR_ARG, "sendcount is negative (%d)", sendcount);
  if (!in_place && cpli_buffer_null(sendbuf, sendcount, sendtype))
    return cpli_fail(CPL_ERR_ARG, "sendbuf is NULL with sendcount %d", sendcount);
  recv_view v;
  CPLI_TRY(recv_view_make(recvbuf, recvcounts, displs, recvtype, p, &v));
  int rc = CPL_OK;
  char *own_place = v.blk.base + v.blk.displs[r];
  if (in_place && v.stage && recvcounts[r] > 0) {
    /* stage our own block from the caller's buffer */
    MPI_Count pos = 0;
    rc = cpli_mpi_check(pack_at(1, (char *)recvbuf + disp_of(displs, recvcounts, r) * v.ti.extent,
                                recvcounts[r], recvtype, own_place, (MPI_Count)v.blk.counts[r],
                                &pos, comm),
                        "MPI_Pack", "staging the own block");
  } else if (!in_place) {
    const void *own;
    size_t own_bytes;
    char *tmp;
    rc = send_view(sendbuf, sendcount, sendtype, comm, &own, &own_bytes, &tmp);
    if (rc == CPL_OK && own_bytes != v.blk.counts[r])
      rc = cpli_fail(CPL_ERR_ARG, "rank %d sends %zu bytes but recvcounts[%d] announces %zu", r,
                     own_bytes, r, v.blk.counts[r]);
    if (rc == CPL_OK && own_bytes) memmove(own_place, own, own_bytes);
    free(tmp);
  }
  if (rc == CPL_OK)
    rc = intra_dispatch(priv, plans, &ctx, v.blk, p, v.total, v.maxb, v.regular, opt);
  int frc = recv_view_finish(&v, recvbuf, recvcounts, displs, recvtype, p, in_place ? r : -1, comm,
                             rc == CPL_OK);
  return rc != CPL_OK ? rc : frc;
}

static int intra_run(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                     MPI_Comm comm, const cpl_coll_options *opt) {
  cpli_world_returns_enter();
  const int rc =
      intra_engine(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, opt);
  if (rc != CPL_OK && rc != CPL_ERR_ARG) cpli_comm_taint(comm, 0);
  cpli_world_returns_leave();
  return rc;
}

int cpl_intra_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                         MPI_Comm comm, const cpl_coll_options *opt) {
  if (!displs) return cpli_fail(CPL_ERR_ARG, "cpl_intra_allgatherv: displs must not be NULL");
  return named(
      intra_run(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, opt),
      "cpl_intra_allgatherv");
}

static int intra_bytes_engine(void *buf, const size_t counts[], const size_t displs[],
                              MPI_Comm comm, const cpl_coll_options *opt) {
  cpli_ctx ctx;
  CPLI_TRY(make_ctx(opt, &ctx));
  CPLI_TRY(check_comm(comm, 0));
  if (!counts || !displs) return cpli_fail(CPL_ERR_ARG, "counts and displs must not be NULL");
  MPI_Comm priv;
  cpli_plan_cache *plans;
  CPLI_TRY(cpli_intra_comm_get(comm, &ctx, &priv, &plans));
  int p;
  MPI_Comm_size(priv, &p);
  size_t total = 0, maxb = 0;
  int regular = 1;
  for (int i = 0; i < p; i++) {
    total += counts[i];
    maxb = counts[i] > maxb ? counts[i] : maxb;
    regular &= counts[i] == counts[0];
  }
  if (total > 0 && !buf) return cpli_fail(CPL_ERR_ARG, "buffer is NULL with %zu bytes", total);
  return intra_dispatch(priv, plans, &ctx, (cpli_blocks){buf, counts, displs}, p, total, maxb,
                        regular, opt);
}

int cpli_intra_allgatherv_bytes(void *buf, const size_t counts[], const size_t displs[],
                                MPI_Comm comm, const cpl_coll_options *opt) {
  cpli_world_returns_enter();
  const int rc = intra_bytes_engine(buf, counts, displs, comm, opt);
  if (rc != CPL_OK && rc != CPL_ERR_ARG) cpli_comm_taint(comm, 0);
  cpli_world_returns_leave();
  return rc;
}

static int intra_regular(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         const cpl_coll_options *opt) {
  CPLI_TRY(check_comm(comm, 0));
  if (recvcount < 0) return cpli_fail(CPL_ERR_ARG, "recvcount is negative (%d)", recvcount);
  int p;
  MPI_Comm_size(comm, &p);
  int *c = malloc(sizeof *c * (size_t)p);
  if (!c) return cpli_fail(CPL_ERR_NOMEM, "out of memory for %d counts", p);
  for (int i = 0; i < p; i++) c[i] = recvcount;
  int rc = intra_run(sendbuf, sendcount, sendtype, recvbuf, c, NULL, recvtype, comm, opt);
  free(c);
  return rc;
}

int cpl_intra_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        const cpl_coll_options *opt) {
  return named(intra_regular(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, opt),
               "cpl_intra_allgather");
}

static int bcast_engine(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                        const cpl_coll_options *opt) {
  cpli_ctx ctx;
  CPLI_TRY(make_ctx(opt, &ctx));
  CPLI_TRY(check_comm(comm, 0));
  MPI_Comm priv;
  CPLI_TRY(cpli_intra_comm_get(comm, &ctx, &priv, NULL));
  int p, r;
  MPI_Comm_size(priv, &p);
  MPI_Comm_rank(priv, &r);
  if (root < 0 || root >= p)
    return cpli_fail(CPL_ERR_ARG, "root %d is not a rank of a %d-process communicator", root, p);
  if (count < 0) return cpli_fail(CPL_ERR_ARG, "count is negative (%d)", count);
  if (count == 0) return CPL_OK;
  if (cpli_buffer_null(buf, count, type)) /* NULL is MPI_BOTTOM to absolute addresses */
    return cpli_fail(CPL_ERR_ARG, "buffer is NULL with count %d", count);
  type_info ti;
  CPLI_TRY(get_type(type, "datatype", &ti));
  ctx.alg = "circulant-bcast";
  const size_t bytes = (size_t)count * (size_t)ti.size;
  if (ti.dense) return cpli_bcast_circulant(priv, (char *)buf + ti.true_lb, bytes, root, 0, &ctx);
  char *stage = malloc(bytes);
  if (!stage) return cpli_fail(CPL_ERR_NOMEM, "out of memory staging %zu bytes", bytes);
  MPI_Count pos = 0;
  int rc = CPL_OK;
  if (r == root)
    rc = cpli_mpi_check(pack_at(1, buf, count, type, stage, (MPI_Count)bytes, &pos, comm),
                        "MPI_Pack", "staging the broadcast");
  if (rc == CPL_OK) rc = cpli_bcast_circulant(priv, stage, bytes, root, 0, &ctx);
  if (rc == CPL_OK && r != root)
    rc = cpli_mpi_check(pack_at(0, buf, count, type, stage, (MPI_Count)bytes, &pos, comm),
                        "MPI_Unpack", "unpacking the broadcast");
  free(stage);
  return rc;
}

int cpl_intra_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                    const cpl_coll_options *opt) {
  cpli_world_returns_enter();
  const int rc = bcast_engine(buf, count, type, root, comm, opt);
  if (rc != CPL_OK && rc != CPL_ERR_ARG) cpli_comm_taint(comm, 0);
  cpli_world_returns_leave();
  return named(rc, "cpl_intra_bcast");
}

int cpli_intra_bcast_napping(void *buf, int count, MPI_Datatype type, MPI_Comm comm,
                             cpli_ctx *ctx) {
  MPI_Comm priv;
  CPLI_TRY(cpli_intra_comm_get(comm, ctx, &priv, NULL));
  int size;
  CPLI_TRY(cpli_mpi_check(MPI_Type_size(type, &size), "MPI_Type_size", "%s: broadcast from rank 0",
                          ctx->label));
  const size_t bytes = (size_t)count * (size_t)size;
  if (bytes > INT_MAX)
    return cpli_fail(CPL_ERR_UNSUPPORTED, "%s: a %zu-byte broadcast from rank 0", ctx->label,
                     bytes);
  /* MPI owns the buffer until every rank arrives, which may be after this
   * rank gave up: the broadcast goes through a heap copy, left to MPI (never
   * freed) if the wait fails, so a late rank 0 writes into no caller's
   * frame or freed memory. (Contiguous types only: bytes and integers.) */
  char *stage = malloc(bytes ? bytes : 1);
  if (!stage) return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory for a broadcast", ctx->label);
  memcpy(stage, buf, bytes);
  MPI_Request req;
  int rc = MPI_Ibcast(stage, (int)bytes, MPI_BYTE, 0, priv, &req);
  if (rc != MPI_SUCCESS) {
    free(stage);
    return cpli_mpi_check(rc, "MPI_Ibcast", "%s: broadcast from rank 0", ctx->label);
  }
  ctx->nap_us = CPLI_WAIT_NAP_US;
  rc = cpli_waitall(1, &req, ctx, priv, "broadcast from rank 0", -1);
  if (rc != CPL_OK) return rc; /* stage stays MPI's: see above */
  memcpy(buf, stage, bytes);
  free(stage);
  return CPL_OK;
}
