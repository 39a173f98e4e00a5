/*
 * libcoupler_mpi: MPI_Allgather and MPI_Allgatherv through Coupler's
 * collective engine, for unmodified MPI programs (link it before the MPI
 * library, or LD_PRELOAD it). Everything else reaches MPI through PMPI.
 *
 * Intercommunicators. MPI's inter-group allgather is full duplex: each
 * group receives the other's blocks. The engine is half duplex, so a call
 * runs two directions one after the other: first the group that comes
 * first in MPI_Intercomm_merge(private dup, high = 0) sends, then the other.
 * That order is computed once per communicator and cached in an attribute
 * whose delete callback frees it with the user's communicator; the engine
 * keeps its own private duplicates (coll/link.c) the same way, so no byte
 * of ours travels on the application's communicator. For MPI_Allgather a
 * direction that carries nothing is skipped, since both sides know it
 * (recvcount 0 on one side implies a zero-size sendcount on the other);
 * for MPI_Allgatherv the senders cannot know, so every direction runs and
 * the engine leaves receive buffers of all-zero counts untouched.
 *
 * Intracommunicators. The circulant algorithm runs when the alpha-beta
 * model prices it strictly below MPICH's native algorithm for this call
 * (all ranks see the same counts, so all decide alike); otherwise the call
 * goes straight to PMPI. CPL_INTRA_ALGORITHM forces a choice.
 *
 * Errors. Argument errors are detected before any communication and raised
 * with the MPI class MPI would use; engine failures are mapped to MPI
 * classes. Both go through MPI_Comm_call_errhandler on the user's
 * communicator, so MPI_ERRORS_ARE_FATAL aborts and MPI_ERRORS_RETURN
 * returns the code. Engine failures also print cpl_last_error() to stderr
 * (it says which link, rank and step failed, which no MPI code can).
 *
 * The engine never calls blocking MPI_Allgather(v) (it uses the
 * nonblocking forms), so these wrappers cannot recurse.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "coll/link.h"
#include "coll/select.h"
#include "core/wait.h"
#include "coupler.h"

/* Exported so tests and users can check that interposition happened. */
int cpl_mpi_interposed_calls(void);

static atomic_int cpli_mpi_calls;
static int cpli_mpi_order_key = MPI_KEYVAL_INVALID;

int cpl_mpi_interposed_calls(void) { return atomic_load(&cpli_mpi_calls); }

static int cpli_mpi_env_on(const char *var) {
  const char *v = getenv(var);
  return v && *v && strcmp(v, "0") != 0;
}

/* ------------------------------------------------------------- errors */

static int cpli_mpi_class_of(int cpl_rc) {
  switch (cpl_rc) {
  case CPL_ERR_ARG: return MPI_ERR_ARG;
  case CPL_ERR_COMM: return MPI_ERR_COMM;
  case CPL_ERR_NOMEM: return MPI_ERR_NO_MEM;
  case CPL_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
  case CPL_ERR_TYPE: return MPI_ERR_TYPE;
  case CPL_ERR_INTERNAL: return MPI_ERR_INTERN;
  case CPL_ERR_MPI: return cpli_last_mpi_class(); /* MPI_ERR_TRUNCATE, ... */
  default: return MPI_ERR_OTHER;
  }
}

/* Raise an MPI error code on comm; the handler decides abort or return. */
static int cpli_mpi_raise(MPI_Comm comm, int code, const char *fn, const char *why) {
  if (cpli_mpi_env_on("CPL_MPI_VERBOSE")) fprintf(stderr, "coupler_mpi: %s: %s\n", fn, why);
  MPI_Comm_call_errhandler(comm, code);
  return code;
}

static int cpli_mpi_engine_error(MPI_Comm comm, int cpl_rc, const char *fn) {
  const int code = cpli_mpi_class_of(cpl_rc);
  /* Always printed: the MPI code alone cannot say where it failed. */
  fprintf(stderr, "coupler_mpi: %s failed: %s: %s\n", fn, cpl_strerror(cpl_rc), cpl_last_error());
  MPI_Comm_call_errhandler(comm, code);
  return code;
}

/* MPI_Allgather waits as long as it takes; only an explicit CPL_TIMEOUT
 * gives the drop-in a deadline (seconds; <= 0: none). */
static double cpli_mpi_timeout(void) {
  const cpli_tuning *t = cpli_tuning_now();
  return t->timeout_set ? t->timeout : -1;
}

/* ------------------------------------------------------ group ordering */

static int cpli_mpi_order_delete(MPI_Comm comm, int keyval, void *attr, void *extra) {
  (void)comm;
  (void)keyval;
  (void)extra;
  free(attr);
  return MPI_SUCCESS;
}

/* *first = 1 if the local group sends first. Collective on first use per
 * intercommunicator. The merge runs on the engine's private duplicate. */
static int cpli_mpi_first(MPI_Comm comm, const char *fn, int *first) {
  int rc;
  if (cpli_mpi_order_key == MPI_KEYVAL_INVALID) {
    rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, cpli_mpi_order_delete, &cpli_mpi_order_key,
                                NULL);
    if (rc != MPI_SUCCESS) return cpli_mpi_check(rc, "MPI_Comm_create_keyval", "order cache");
  }
  void *attr;
  int found = 0;
  rc = MPI_Comm_get_attr(comm, cpli_mpi_order_key, &attr, &found);
  if (rc != MPI_SUCCESS) return cpli_mpi_check(rc, "MPI_Comm_get_attr", "order cache");
  if (found) {
    *first = *(int *)attr;
    return CPL_OK;
  }
  cpli_link *link;
  cpli_ctx ctx = {.timeout = cpli_mpi_timeout(), .label = fn, .step = -1};
  CPLI_TRY(cpli_link_get(comm, &ctx, &link));
  MPI_Comm merged;
  rc = MPI_Intercomm_merge(link->inter, 0, &merged);
  if (rc != MPI_SUCCESS) return cpli_mpi_check(rc, "MPI_Intercomm_merge", "ordering the groups");
  /* With equal `high` MPI orders the groups arbitrarily but identically on
   * every process: compare where each group's rank 0 landed. */
  MPI_Group lg, rg, mg;
  MPI_Comm_group(link->inter, &lg);
  MPI_Comm_remote_group(link->inter, &rg);
  MPI_Comm_group(merged, &mg);
  int zero = 0, lpos = -1, rpos = -1;
  MPI_Group_translate_ranks(lg, 1, &zero, mg, &lpos);
  MPI_Group_translate_ranks(rg, 1, &zero, mg, &rpos);
  MPI_Group_free(&lg);
  MPI_Group_free(&rg);
  MPI_Group_free(&mg);
  MPI_Comm_free(&merged);
  int *flag = malloc(sizeof *flag);
  if (!flag) return cpli_fail(CPL_ERR_NOMEM, "out of memory caching the group order");
  *flag = lpos < rpos;
  rc = MPI_Comm_set_attr(comm, cpli_mpi_order_key, flag);
  if (rc != MPI_SUCCESS) {
    free(flag);
    return cpli_mpi_check(rc, "MPI_Comm_set_attr", "caching the group order");
  }
  *first = *flag;
  return CPL_OK;
}

/* ---------------------------------------------------------------- inter */

/* One call's arguments; v: MPI_Allgatherv (recvcounts, displs). */
typedef struct cpli_mpi_call {
  const char *fn;
  int v;
  const void *sendbuf;
  int sendcount;
  MPI_Datatype sendtype;
  void *recvbuf;
  int recvcount;
  const int *recvcounts, *displs;
  MPI_Datatype recvtype;
  MPI_Comm comm;
} cpli_mpi_call;

/* A private duplicate of MPI_COMM_SELF that returns errors: the type
 * check below asks MPI on it, so the check itself raises nothing. */
static pthread_once_t cpli_mpi_self_once = PTHREAD_ONCE_INIT;
static MPI_Comm cpli_mpi_self = MPI_COMM_NULL;

static void cpli_mpi_self_make(void) {
  if (PMPI_Comm_dup(MPI_COMM_SELF, &cpli_mpi_self) == MPI_SUCCESS)
    PMPI_Comm_set_errhandler(cpli_mpi_self, MPI_ERRORS_RETURN);
}

/* Not MPI_DATATYPE_NULL, and committed: MPI refuses an uncommitted type
 * (MPI_ERR_TYPE), but the engine moves a contiguous one without asking
 * MPI. Named types are always committed; MPI_Pack_size checks the rest. */
static int cpli_mpi_type_ok(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return 0;
  int ni, na, nd, comb;
  if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS || comb == MPI_COMBINER_NAMED)
    return 1;
  pthread_once(&cpli_mpi_self_once, cpli_mpi_self_make);
  MPI_Count size;
  return cpli_mpi_self == MPI_COMM_NULL ||
         PMPI_Pack_size_c(1, t, cpli_mpi_self, &size) == MPI_SUCCESS;
}

/* MPI's local argument checks, so bad calls fail before communicating. */
static int cpli_mpi_inter_check(const cpli_mpi_call *c, int rsize, int *code, const char **why) {
  const int v = c->v;
  if (c->sendbuf == MPI_IN_PLACE)
    return *code = MPI_ERR_ARG, *why = "MPI_IN_PLACE is not allowed on an intercommunicator", 0;
  if (c->sendcount < 0) return *code = MPI_ERR_COUNT, *why = "sendcount is negative", 0;
  /* MPI_DATATYPE_NULL is refused even with count 0, as MPICH does. */
  if (!cpli_mpi_type_ok(c->sendtype))
    return *code = MPI_ERR_TYPE, *why = "sendtype is MPI_DATATYPE_NULL or not committed", 0;
  if (cpli_buffer_null(c->sendbuf, c->sendcount, c->sendtype))
    return *code = MPI_ERR_BUFFER, *why = "sendbuf is NULL with a nonzero sendcount", 0;
  long long total = 0;
  if (v) {
    if (!c->recvcounts || !c->displs)
      return *code = MPI_ERR_ARG, *why = "recvcounts or displs is NULL", 0;
    for (int i = 0; i < rsize; i++) {
      if (c->recvcounts[i] < 0) return *code = MPI_ERR_COUNT, *why = "a recvcount is negative", 0;
      total += c->recvcounts[i];
    }
  } else {
    if (c->recvcount < 0) return *code = MPI_ERR_COUNT, *why = "recvcount is negative", 0;
    total = c->recvcount;
  }
  if (!cpli_mpi_type_ok(c->recvtype))
    return *code = MPI_ERR_TYPE, *why = "recvtype is MPI_DATATYPE_NULL or not committed", 0;
  if (cpli_buffer_null(c->recvbuf, total, c->recvtype))
    return *code = MPI_ERR_BUFFER, *why = "recvbuf is NULL with nonzero recvcounts", 0;
  return 1;
}

static size_t cpli_mpi_bytes(int count, MPI_Datatype t) {
  if (count <= 0) return 0;
  MPI_Count sz = 0; /* large-count: a derived type may pass 2 GiB */
  MPI_Type_size_c(t, &sz);
  return (size_t)count * (size_t)(sz > 0 ? sz : 0);
}

/* The engine's part of an inter call: both directions, in the order both
 * groups derive; a Coupler status. */
static int cpli_mpi_inter_run(const cpli_mpi_call *c, int lsize, int rsize, int lrank) {
  int first = 0;
  CPLI_TRY(cpli_mpi_first(c->comm, c->fn, &first));
  const int regular = !c->v;
  const size_t sbytes = cpli_mpi_bytes(c->sendcount, c->sendtype);
  /* One remote sender: its block decides even an allgatherv's choice. */
  size_t rblock = 0;
  if (regular) rblock = cpli_mpi_bytes(c->recvcount, c->recvtype);
  else if (rsize == 1) rblock = cpli_mpi_bytes(c->recvcounts[0], c->recvtype);
  /* Same byte figure the engine uses to choose, so both groups agree and
   * the verbose line names what actually ran. */
  cpl_inter_algorithm out_alg = CPL_INTER_AUTO, in_alg = CPL_INTER_AUTO;
  const int do_out = !regular || sbytes > 0, do_in = !regular || rblock > 0;
  int rc = cpli_inter_choose(lsize, rsize, sbytes, regular, NULL, &out_alg);
  if (rc == CPL_OK) rc = cpli_inter_choose(rsize, lsize, rblock, regular, NULL, &in_alg);
  if (rc != CPL_OK) return rc;

  if (cpli_mpi_env_on("CPL_MPI_VERBOSE"))
    fprintf(stderr, "coupler_mpi: %s inter %d|%d send:%s recv:%s (rank %d)\n", c->fn, lsize, rsize,
            do_out ? cpl_inter_algorithm_name(out_alg) : "skip",
            do_in ? cpl_inter_algorithm_name(in_alg) : "skip", lrank);

  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = cpli_mpi_timeout();
  opt.label = c->fn;
  /* opt.inter stays auto: the engine derives the same choice, and only a
   * choice of auto may leave native for fc past int counts (inter_native.c).
   * A failed first phase still runs the second, unless it timed out (or
   * was interrupted: cpl_set_interrupt_check): a
   * receiver that found a count mismatch must still send its own blocks,
   * or the other group would wait for them forever (MPICH returns on both
   * sides). The first error is the one reported, with its own message and
   * MPI class (a second phase's timeout overwrote them: the receiver of a
   * count mismatch then returned MPI_ERR_OTHER, saying it timed out). */
  cpli_error_state first_error;
  for (int phase = 0; phase < 2 && rc != CPL_ERR_TIMEOUT && rc != CPL_ERR_INTERRUPTED; phase++) {
    const int sending = (phase == 0) == (first != 0);
    int prc = CPL_OK;
    if (sending && do_out) {
      prc = regular ? cpl_inter_allgather(c->sendbuf, c->sendcount, c->sendtype, NULL, 0,
                                          MPI_DATATYPE_NULL, CPL_SENDER, c->comm, &opt)
                    : cpl_inter_allgatherv(c->sendbuf, c->sendcount, c->sendtype, NULL, NULL, NULL,
                                           MPI_DATATYPE_NULL, CPL_SENDER, c->comm, &opt);
    } else if (!sending && do_in) {
      prc = regular ? cpl_inter_allgather(NULL, 0, MPI_DATATYPE_NULL, c->recvbuf, c->recvcount,
                                          c->recvtype, CPL_RECEIVER, c->comm, &opt)
                    : cpl_inter_allgatherv(NULL, 0, MPI_DATATYPE_NULL, c->recvbuf, c->recvcounts,
                                           c->displs, c->recvtype, CPL_RECEIVER, c->comm, &opt);
    }
    if (rc == CPL_OK && prc != CPL_OK) cpli_error_save(&first_error);
    else if (prc != CPL_OK) cpli_error_restore(&first_error);
    if (rc == CPL_OK) rc = prc;
  }
  return rc;
}

static int cpli_mpi_inter(const cpli_mpi_call *c) {
  int lsize, rsize, lrank;
  MPI_Comm_size(c->comm, &lsize);
  MPI_Comm_remote_size(c->comm, &rsize);
  MPI_Comm_rank(c->comm, &lrank);
  int code;
  const char *why;
  if (!cpli_mpi_inter_check(c, rsize, &code, &why))
    return cpli_mpi_raise(c->comm, code, c->fn, why);

  /* World returns errors here too (core/wait.h): the setup of first use
   * (cpli_mpi_first) waits on requests outside the collectives. */
  cpli_world_returns_enter();
  const int rc = cpli_mpi_inter_run(c, lsize, rsize, lrank);
  cpli_world_returns_leave();
  if (rc != CPL_OK) return cpli_mpi_engine_error(c->comm, rc, c->fn);
  return MPI_SUCCESS;
}

/* ---------------------------------------------------------------- intra */

/* The engine's algorithm for this intra call, or CPL_INTRA_NATIVE for
 * "straight to PMPI". counts are in elements of recvtype. */
static int cpli_mpi_intra_choice(int p, const int *counts, int regular_count, MPI_Datatype recvtype,
                                 cpl_intra_algorithm *out) {
  *out = CPL_INTRA_NATIVE;
  if (p <= 1 || recvtype == MPI_DATATYPE_NULL) return CPL_OK;
  MPI_Count sz = 0;
  if (MPI_Type_size_c(recvtype, &sz) != MPI_SUCCESS || sz <= 0) return CPL_OK;
  size_t total = 0, maxb = 0;
  int regular = 1;
  for (int i = 0; i < p; i++) {
    const int n = counts ? counts[i] : regular_count;
    if (n < 0) return CPL_OK; /* let MPI report it */
    const size_t b = (size_t)n * (size_t)sz;
    total += b;
    if (b > maxb) maxb = b;
    if (counts && n != counts[0]) regular = 0;
  }
  if (total == 0) return CPL_OK;
  cpl_intra_algorithm a;
  CPLI_TRY(cpli_intra_requested(NULL, &a));
  if (a != CPL_INTRA_AUTO) {
    *out = a;
    return CPL_OK;
  }
  double alpha, beta;
  cpli_model_params(&alpha, &beta);
  const double circ = cpli_intra_cost_v(CPL_INTRA_CIRCULANT, p, total, maxb, regular, alpha, beta);
  const double nat = cpli_intra_cost_v(CPL_INTRA_NATIVE, p, total, maxb, regular, alpha, beta);
  /* Strictly cheaper only: on a tie PMPI saves the staging and the dup.
   * Past int counts MPICH's own allgather is not usable (CPLI_NATIVE_MAX);
   * every rank sees the same counts, so all choose alike. */
  if (circ < nat || total > CPLI_NATIVE_MAX) *out = CPL_INTRA_CIRCULANT;
  return CPL_OK;
}

static int cpli_mpi_intra(const cpli_mpi_call *c) {
  int p, r;
  MPI_Comm_size(c->comm, &p);
  MPI_Comm_rank(c->comm, &r);
  const int regular = !c->v;
  cpl_intra_algorithm a = CPL_INTRA_NATIVE;
  int rc = CPL_OK;
  /* Bad arguments and int-overflowing displacements go to PMPI, which
   * reports them with MPI's class (MPI_ERR_TYPE, MPI_ERR_BUFFER; the
   * engine's would be MPI_ERR_ARG or none) or handles them exactly as MPI
   * does. A negative recvcount makes the choice below PMPI. */
  const int sends = c->sendbuf != MPI_IN_PLACE;
  int usable = !(regular && c->recvcount > 0 && (long long)(p - 1) * c->recvcount > INT_MAX) &&
               !(!regular && (!c->recvcounts || !c->displs)) &&
               !(sends && (c->sendcount < 0 || !cpli_mpi_type_ok(c->sendtype) ||
                           cpli_buffer_null(c->sendbuf, c->sendcount, c->sendtype))) &&
               cpli_mpi_type_ok(c->recvtype) &&
               !cpli_buffer_null(c->recvbuf, regular ? c->recvcount : 1, c->recvtype);
  /* A contribution longer than its own block: MPI_ERR_TRUNCATE from MPI
   * (the engine's would be MPI_ERR_ARG). */
  if (usable && sends &&
      cpli_mpi_bytes(c->sendcount, c->sendtype) >
          cpli_mpi_bytes(regular ? c->recvcount : c->recvcounts[r], c->recvtype))
    usable = 0;
  if (usable) rc = cpli_mpi_intra_choice(p, c->recvcounts, c->recvcount, c->recvtype, &a);
  if (rc != CPL_OK) return cpli_mpi_engine_error(c->comm, rc, c->fn);
  if (cpli_mpi_env_on("CPL_MPI_VERBOSE"))
    fprintf(stderr, "coupler_mpi: %s intra %d %s (rank %d)\n", c->fn, p,
            a == CPL_INTRA_NATIVE ? "pmpi" : cpl_intra_algorithm_name(a), r);
  if (a == CPL_INTRA_NATIVE)
    return regular ? PMPI_Allgather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                                    c->recvtype, c->comm)
                   : PMPI_Allgatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                     c->recvcounts, c->displs, c->recvtype, c->comm);
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.intra = a;
  opt.timeout = cpli_mpi_timeout();
  opt.label = c->fn;
  rc = regular ? cpl_intra_allgather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                     c->recvcount, c->recvtype, c->comm, &opt)
               : cpl_intra_allgatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                      c->recvcounts, c->displs, c->recvtype, c->comm, &opt);
  if (rc != CPL_OK) return cpli_mpi_engine_error(c->comm, rc, c->fn);
  return MPI_SUCCESS;
}

/* ------------------------------------------------------------- dispatch */

/* 1 inter, 0 intra, -1: MPI's own call, which reports the error in the
 * program's call's name: MPI not initialized or already finalized, a null
 * or invalid communicator. MPI raises an invalid handle's error on world,
 * whose fatal handler would abort in the probe, naming
 * MPI_Comm_test_inter: world returns errors for the probe. */
static int cpli_mpi_kind(MPI_Comm comm) {
  int up = 0, down = 1, inter = 0;
  PMPI_Initialized(&up);
  PMPI_Finalized(&down);
  if (!up || down || comm == MPI_COMM_NULL) return -1;
  cpli_world_returns_enter();
  const int rc = PMPI_Comm_test_inter(comm, &inter);
  cpli_world_returns_leave();
  return rc == MPI_SUCCESS ? inter != 0 : -1;
}

static int cpli_mpi_dispatch(const cpli_mpi_call *c) {
  atomic_fetch_add(&cpli_mpi_calls, 1);
  cpli_tuning_refresh();
  /* CPL_MPI_DISABLE: every call is MPI's own. */
  const int inter = cpli_mpi_env_on("CPL_MPI_DISABLE") ? -1 : cpli_mpi_kind(c->comm);
  if (inter == 1) return cpli_mpi_inter(c);
  if (inter == 0) return cpli_mpi_intra(c);
  return c->v ? PMPI_Allgatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcounts,
                                c->displs, c->recvtype, c->comm)
              : PMPI_Allgather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                               c->recvtype, c->comm);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const cpli_mpi_call c = {"MPI_Allgather", 0,    sendbuf, sendcount, sendtype, recvbuf,
                           recvcount,       NULL, NULL,    recvtype,  comm};
  return cpli_mpi_dispatch(&c);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  const cpli_mpi_call c = {"MPI_Allgatherv", 1,      sendbuf,  sendcount, sendtype, recvbuf, 0,
                           recvcounts,       displs, recvtype, comm};
  return cpli_mpi_dispatch(&c);
}
