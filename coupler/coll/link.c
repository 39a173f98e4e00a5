#include "coll/link.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int link_keyval = MPI_KEYVAL_INVALID;
static int intra_keyval = MPI_KEYVAL_INVALID;

typedef struct intra_cache {
  MPI_Comm priv;
  int tainted; /* cpli_comm_taint */
  cpli_plan_cache plans;
  int agreed;      /* cpli_tuning_agree's status at first use   */
  char *disagreed; /* and its message, repeated by every call   */
} intra_cache;

/* A communicator whose ranks disagreed on the cost model at first use
 * fails every later call too: each rank would plan alike with itself
 * only, and the calls would hang or abort instead. */
static int keep_agreement(int rc, int *agreed, char **msg) {
  *agreed = rc;
  if (rc != CPL_OK) *msg = strdup(cpl_last_error());
  return rc;
}

static int agreement(int agreed, const char *msg) {
  return agreed == CPL_OK ? CPL_OK : cpli_fail(agreed, "%s", msg ? msg : "cost models differ");
}

static void free_comm(MPI_Comm *c) {
  if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

static void dir_free(cpli_dir *d, int keep_comms) {
  if (!keep_comms) {
    free_comm(&d->merged);
    free_comm(&d->local);
    free_comm(&d->fc_group);
    free_comm(&d->fc_bcast);
  }
  free(d->ring_send_to);
  free(d->ring_send_msg);
  free(d->ring_recv_from);
  free(d->ring_recv_msg);
  free(d->ring_recv_dup);
  cpli_plan_cache_clear(&d->plans);
  free(d->disagreed);
  memset(d, 0, sizeof *d);
}

static int link_delete(MPI_Comm comm, int keyval, void *attr, void *extra) {
  (void)comm;
  (void)keyval;
  (void)extra;
  cpli_link *l = attr;
  dir_free(&l->dir[0], l->tainted);
  dir_free(&l->dir[1], l->tainted);
  if (!l->tainted) free_comm(&l->inter);
  free(l);
  return MPI_SUCCESS;
}

static int intra_delete(MPI_Comm comm, int keyval, void *attr, void *extra) {
  (void)comm;
  (void)keyval;
  (void)extra;
  intra_cache *c = attr;
  if (!c->tainted) free_comm(&c->priv);
  cpli_plan_cache_clear(&c->plans);
  free(c->disagreed);
  free(c);
  return MPI_SUCCESS;
}

/* Both cache keys, made once per process (pthread_once: two threads'
 * first calls must not make two keys, each missing the other's cache). */
static pthread_once_t keyvals_once = PTHREAD_ONCE_INIT;
static int keyvals_rc = MPI_SUCCESS;

static void keyvals_make(void) {
  keyvals_rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, link_delete, &link_keyval, NULL);
  if (keyvals_rc == MPI_SUCCESS)
    keyvals_rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, intra_delete, &intra_keyval, NULL);
}

static int keyvals_ready(void) {
  pthread_once(&keyvals_once, keyvals_make);
  return cpli_mpi_check(keyvals_rc, "MPI_Comm_create_keyval", "the communicator caches");
}

int cpli_link_get(MPI_Comm user_inter, cpli_ctx *ctx, cpli_link **out) {
  int rc;
  CPLI_TRY(keyvals_ready());
  void *attr;
  int found = 0;
  rc = MPI_Comm_get_attr(user_inter, link_keyval, &attr, &found);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Comm_get_attr", "link cache"));
  if (found) {
    *out = attr;
    return CPL_OK;
  }
  cpli_link *l = calloc(1, sizeof *l);
  if (!l) return cpli_fail(CPL_ERR_NOMEM, "out of memory creating a link cache");
  l->inter = MPI_COMM_NULL;
  for (int i = 0; i < 2; i++) {
    l->dir[i].merged = l->dir[i].local = MPI_COMM_NULL;
    l->dir[i].fc_group = l->dir[i].fc_bcast = MPI_COMM_NULL;
    cpli_plan_cache_init(&l->dir[i].plans);
  }
  /* The first collective on this intercommunicator: a peer group that
   * never calls it must not hang us, so the dup waits with the deadline. */
  MPI_Request req;
  rc = MPI_Comm_idup(user_inter, &l->inter, &req);
  if (rc != MPI_SUCCESS) {
    free(l);
    return cpli_mpi_check(rc, "MPI_Comm_idup", "duplicating the intercommunicator");
  }
  rc = cpli_waitall(1, &req, ctx, user_inter, "duplicating the intercommunicator (first use)", -1);
  if (rc != CPL_OK) return rc; /* l stays: the pending dup still writes it */
  /* Errors inside the engine become cpl_status codes; the caller decides
   * (the drop-in calls the user's error handler on the user's comm). */
  MPI_Comm_set_errhandler(l->inter, MPI_ERRORS_RETURN);
  MPI_Comm_rank(l->inter, &l->lrank);
  MPI_Comm_size(l->inter, &l->lsize);
  MPI_Comm_remote_size(l->inter, &l->rsize);
  rc = MPI_Comm_set_attr(user_inter, link_keyval, l);
  if (rc != MPI_SUCCESS) {
    link_delete(user_inter, link_keyval, l, NULL);
    return cpli_mpi_check(rc, "MPI_Comm_set_attr", "caching the link");
  }
  *out = l;
  return CPL_OK;
}

/* The call runs on d: its messages name peers by role. */
static void name_peers(cpli_ctx *ctx, const cpli_dir *d) {
  if (!ctx) return;
  ctx->merged = d->merged;
  ctx->nsend = d->p;
}

int cpli_link_dir(cpli_link *l, int sender, cpli_ctx *ctx, cpli_dir **out) {
  cpli_dir *d = &l->dir[sender ? 1 : 0];
  *out = d;
  if (d->ready) {
    name_peers(ctx, d);
    return agreement(d->agreed, d->disagreed);
  }
  d->p = sender ? l->lsize : l->rsize;
  d->q = sender ? l->rsize : l->lsize;
  /* MPI_Intercomm_merge blocks without a deadline: meet the other group
   * first with a barrier that has one. */
  MPI_Request req;
  int rc = MPI_Ibarrier(l->inter, &req);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Ibarrier", "meeting the other group (first use)"));
  CPLI_TRY(cpli_waitall(1, &req, ctx, l->inter, "meeting the other group (first use)", -1));
  /* high = 0 on the senders puts them first in the merged communicator. */
  rc = MPI_Intercomm_merge(l->inter, sender ? 0 : 1, &d->merged);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Intercomm_merge", "building the merged communicator"));
  MPI_Comm_set_errhandler(d->merged, MPI_ERRORS_RETURN); /* not inherited */
  int mrank;
  MPI_Comm_rank(d->merged, &mrank);
  rc = MPI_Comm_split(d->merged, sender ? 0 : 1, mrank, &d->local);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Comm_split", "building the local group communicator"));
  MPI_Comm_set_errhandler(d->local, MPI_ERRORS_RETURN);
  d->ready = 1;
  name_peers(ctx, d);
  return keep_agreement(
      cpli_tuning_agree(d->merged, "inter-group link", sender ? CPL_SENDER : CPL_RECEIVER),
      &d->agreed, &d->disagreed);
}

int cpli_sender_counts(cpli_dir *d, size_t own_bytes, int regular, size_t *counts, cpli_ctx *ctx) {
  if (regular) {
    for (int i = 0; i < d->p; i++) counts[i] = own_bytes;
    return CPL_OK;
  }
  unsigned long long *all = malloc(sizeof *all * (size_t)d->p);
  if (!all) return cpli_fail(CPL_ERR_NOMEM, "out of memory gathering %d counts", d->p);
  int r;
  MPI_Comm_rank(d->local, &r);
  all[r] = own_bytes; /* in place: no send buffer on this stack */
  MPI_Request req;
  int rc = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_UNSIGNED_LONG_LONG,
                          d->local, &req);
  if (rc != MPI_SUCCESS) rc = cpli_mpi_check(rc, "MPI_Iallgather", "gathering block sizes");
  else if ((rc = cpli_waitall(1, &req, ctx, d->local, "allgather of block sizes", -1)))
    return rc; /* all stays: the pending allgather may still write it */
  if (rc == CPL_OK)
    for (int i = 0; i < d->p; i++) counts[i] = (size_t)all[i];
  free(all);
  return rc;
}

/* Duplicate user_comm into the new cache entry c and attach it; frees c
 * on failure. The first collective on the communicator: a rank that never
 * calls it (failed before, or dead) must not hang us, so the dup waits
 * with the deadline; after it every rank is here, and agrees. */
static int dup_and_attach(MPI_Comm user_comm, intra_cache *c, cpli_ctx *ctx) {
  MPI_Request req;
  int rc = MPI_Comm_idup(user_comm, &c->priv, &req);
  if (rc != MPI_SUCCESS) {
    free(c);
    return cpli_mpi_check(rc, "MPI_Comm_idup", "duplicating the communicator");
  }
  rc = cpli_waitall(1, &req, ctx, user_comm, "duplicating the communicator (first use)", -1);
  if (rc != CPL_OK) return rc; /* c stays: the pending dup still writes it */
  MPI_Comm_set_errhandler(c->priv, MPI_ERRORS_RETURN);
  rc = MPI_Comm_set_attr(user_comm, intra_keyval, c);
  if (rc != MPI_SUCCESS) {
    intra_delete(user_comm, intra_keyval, c, NULL);
    return cpli_mpi_check(rc, "MPI_Comm_set_attr", "caching the communicator");
  }
  return keep_agreement(cpli_tuning_agree(c->priv, "communicator", -1), &c->agreed, &c->disagreed);
}

int cpli_intra_comm_get(MPI_Comm user_comm, cpli_ctx *ctx, MPI_Comm *priv,
                        cpli_plan_cache **plans) {
  int rc;
  CPLI_TRY(keyvals_ready());
  void *attr;
  int found = 0;
  rc = MPI_Comm_get_attr(user_comm, intra_keyval, &attr, &found);
  CPLI_TRY(cpli_mpi_check(rc, "MPI_Comm_get_attr", "communicator cache"));
  intra_cache *c = attr;
  if (!found) {
    if (!(c = calloc(1, sizeof *c)))
      return cpli_fail(CPL_ERR_NOMEM, "out of memory caching a communicator");
    c->priv = MPI_COMM_NULL;
    cpli_plan_cache_init(&c->plans);
    CPLI_TRY(dup_and_attach(user_comm, c, ctx));
  } else {
    CPLI_TRY(agreement(c->agreed, c->disagreed));
  }
  *priv = c->priv;
  if (plans) *plans = &c->plans;
  return CPL_OK;
}

void cpli_comm_taint(MPI_Comm user_comm, int inter) {
  void *attr;
  int found = 0;
  const int key = inter ? link_keyval : intra_keyval;
  if (key == MPI_KEYVAL_INVALID || user_comm == MPI_COMM_NULL ||
      MPI_Comm_get_attr(user_comm, key, &attr, &found) != MPI_SUCCESS || !found)
    return;
  if (inter) ((cpli_link *)attr)->tainted = 1;
  else ((intra_cache *)attr)->tainted = 1;
}
