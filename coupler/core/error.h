/* Internal error reporting: record a message for cpl_last_error() and return
 * the status, so failures read `return cpli_fail(CPL_ERR_ARG, "...", ...)`. */
#ifndef CPLI_ERROR_H
#define CPLI_ERROR_H

#include "coupler.h"

#if defined(__GNUC__)
#define CPLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define CPLI_COLD __attribute__((cold, noinline)) /* failure paths, kept out of line */
#else
#define CPLI_PRINTF(f, a)
#define CPLI_COLD
#endif

/* Set the thread's last-error message and return `status`. */
int cpli_fail(int status, const char *fmt, ...) CPLI_PRINTF(2, 3);

/* CPL_ERR_ARG "CALL: NAME is NULL" for the first NULL of n (name,
 * pointer) pairs after n; CPL_OK when none is. */
int cpli_check_null(const char *call, int n, ...);

/* For an MPI return code `mpi_rc` from call `what`: CPL_OK if it succeeded,
 * else CPL_ERR_MPI with the MPI error string appended to the context. */
int cpli_mpi_check(int mpi_rc, const char *what, const char *fmt, ...) CPLI_PRINTF(3, 4);

/* The MPI error class behind the thread's last failure if that was
 * CPL_ERR_MPI (cpli_mpi_check), else MPI_ERR_OTHER: the drop-in returns
 * it, as MPI would (MPI_ERR_TRUNCATE for a receive too small). */
int cpli_last_mpi_class(void);

/* The thread's last failure, message and MPI class: kept by a caller that
 * reports an earlier failure after later calls failed too. */
typedef struct cpli_error_state {
  char msg[2048];
  int mpi_class;
} cpli_error_state;
void cpli_error_save(cpli_error_state *s);
void cpli_error_restore(const cpli_error_state *s);

/* Prepend context ("link sim.out->ana.in: ") to the current message. */
void cpli_error_prefix(const char *fmt, ...) CPLI_PRINTF(1, 2);

/* Evaluate an expression returning a status; return it if not CPL_OK. */
#define CPLI_TRY(expr)                                                                             \
  do {                                                                                             \
    int cpli_rc_ = (expr);                                                                         \
    if (cpli_rc_ != CPL_OK) return cpli_rc_;                                                       \
  } while (0)

#endif
