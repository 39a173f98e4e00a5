#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MSG_MAX 2048

static _Thread_local char last_msg[MSG_MAX];
static _Thread_local int last_mpi_class = MPI_ERR_OTHER;

static const char *const descriptions[CPL_STATUS_COUNT] = {
    [CPL_OK] = "success",
    [CPL_ERR_ARG] = "invalid argument",
    [CPL_ERR_COMM] = "wrong kind of communicator",
    [CPL_ERR_MPI] = "MPI call failed",
    [CPL_ERR_NOMEM] = "out of memory",
    [CPL_ERR_ENV] = "bad environment variable",
    [CPL_ERR_PARSE] = "workflow file is not valid YAML",
    [CPL_ERR_CONFIG] = "invalid workflow description",
    [CPL_ERR_MISMATCH] = "processes, components or the workflow file disagree",
    [CPL_ERR_TIMEOUT] = "timed out",
    [CPL_ERR_IO] = "I/O error",
    [CPL_ERR_HDF5] = "HDF5 call failed",
    [CPL_ERR_STATE] = "call out of order",
    [CPL_ERR_UNSUPPORTED] = "not supported",
    [CPL_ERR_NOT_FOUND] = "step not held by the producer",
    [CPL_ERR_TYPE] = "datatypes do not match",
    [CPL_ERR_SHAPE] = "dims or blocks do not fit the array",
    [CPL_ERR_INTERNAL] = "internal error (a bug in Coupler)",
    [CPL_END_OF_STREAM] = "end of stream",
    [CPL_ERR_INTERRUPTED] = "interrupted by a signal",
};

const char *cpl_strerror(int status) {
  if (status < 0 || status >= CPL_STATUS_COUNT) return "unknown status code";
  return descriptions[status];
}

const char *cpl_last_error(void) { return last_msg; }

int cpli_last_mpi_class(void) { return last_mpi_class; }

void cpli_error_save(cpli_error_state *s) {
  _Static_assert(sizeof s->msg == MSG_MAX, "cpli_error_state holds a whole message");
  memcpy(s->msg, last_msg, MSG_MAX);
  s->mpi_class = last_mpi_class;
}

void cpli_error_restore(const cpli_error_state *s) {
  memcpy(last_msg, s->msg, MSG_MAX);
  last_mpi_class = s->mpi_class;
}

int cpli_fail(int status, const char *fmt, ...) {
  last_mpi_class = MPI_ERR_OTHER;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_msg, sizeof last_msg, fmt, ap);
  va_end(ap);
  return status;
}

int cpli_check_null(const char *call, int n, ...) {
  va_list ap;
  va_start(ap, n);
  const char *null = NULL;
  for (int i = 0; i < n && !null; i++) {
    const char *name = va_arg(ap, const char *);
    if (!va_arg(ap, const void *)) null = name;
  }
  va_end(ap);
  return null ? cpli_fail(CPL_ERR_ARG, "%s: %s is NULL", call, null) : CPL_OK;
}

/* The failure path of cpli_mpi_check, out of line: the check runs on every
 * MPI call of every collective, and the buffers below made each call pay
 * a kilobyte-sized frame. */
CPLI_COLD static int mpi_failed(int mpi_rc, const char *what, const char *fmt, va_list ap) {
  char ctx[MSG_MAX / 2] = "";
  if (fmt) vsnprintf(ctx, sizeof ctx, fmt, ap);
  char mpimsg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(mpi_rc, mpimsg, &len) != MPI_SUCCESS)
    snprintf(mpimsg, sizeof mpimsg, "MPI error code %d", mpi_rc);
  const int rc = cpli_fail(CPL_ERR_MPI, "%s%s%s failed: %s", ctx, ctx[0] ? ": " : "", what, mpimsg);
  if (MPI_Error_class(mpi_rc, &last_mpi_class) != MPI_SUCCESS) last_mpi_class = MPI_ERR_OTHER;
  return rc;
}

int cpli_mpi_check(int mpi_rc, const char *what, const char *fmt, ...) {
  if (mpi_rc == MPI_SUCCESS) return CPL_OK;
  va_list ap;
  va_start(ap, fmt);
  const int rc = mpi_failed(mpi_rc, what, fmt, ap);
  va_end(ap);
  return rc;
}

void cpli_error_prefix(const char *fmt, ...) {
  char old[MSG_MAX];
  memcpy(old, last_msg, sizeof old);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(last_msg, sizeof last_msg, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if (n > MSG_MAX - 1) n = MSG_MAX - 1;
  const size_t len = strnlen(old, (size_t)(MSG_MAX - 1 - n));
  memcpy(last_msg + n, old, len);
  last_msg[(size_t)n + len] = '\0';
}
