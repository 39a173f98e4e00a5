/* The wait primitive (wait.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <mpi.h>

#include "core/error.h"
#include "core/wait.h"

/* The interrupt check (coupler.h), read by every wait. */
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static cpl_interrupt_check check_fn;
static void *check_arg;
static atomic_int check_on; /* check_fn != NULL, read without the lock */

void cpl_set_interrupt_check(cpl_interrupt_check check, void *arg) {
  pthread_mutex_lock(&check_lock);
  check_fn = check;
  check_arg = arg;
  atomic_store(&check_on, check != NULL);
  pthread_mutex_unlock(&check_lock);
}

int cpli_wait_interruptible(void) { return atomic_load_explicit(&check_on, memory_order_relaxed); }

void cpli_wait_say_text(const void *arg, char *buf, unsigned long n) {
  snprintf(buf, n, "%s", (const char *)arg);
}

/* At a clock read: is it time to ask the check, and does it say stop?
 * (Every CPLI_WAIT_CHECK_S seconds: a language's check may take a lock.) */
static int interrupted(cpli_wait *w, double now) {
  if (!cpli_wait_interruptible()) return 0;
  if (w->check_at == 0) {
    w->since = now;
    w->check_at = now + CPLI_WAIT_CHECK_S;
    return 0;
  }
  if (now < w->check_at) return 0;
  w->check_at = now + CPLI_WAIT_CHECK_S;
  pthread_mutex_lock(&check_lock);
  cpl_interrupt_check fn = check_fn;
  void *arg = check_arg;
  pthread_mutex_unlock(&check_lock);
  if (!fn || !fn(arg)) return 0;
  char what[512] = "a wait";
  if (w->say) w->say(w->say_arg, what, sizeof what);
  cpli_fail(CPL_ERR_INTERRUPTED, "%s: interrupted by a signal after %.3g s of waiting", what,
            now - w->since);
  w->interrupted = 1;
  return 1;
}

void cpli_wait_start(cpli_wait *w, double timeout, unsigned nap_us) {
  *w = (cpli_wait){.timeout = timeout, .nap_us = nap_us};
  if (timeout > 0 && isfinite(timeout)) w->deadline = MPI_Wtime() + timeout;
}

/* The rest of cpli_wait_idle, after it counted the poll. */
int cpli_wait_slow(cpli_wait *w) {
  if (w->nap_us && w->polls >= CPLI_WAIT_SPINS) {
    const struct timespec nap = {0, 1000 * (long)w->nap_us};
    nanosleep(&nap, NULL);
  }
  /* A try looks twice: MPICH's probes and tests match what its progress
   * had taken in, then read the network, so a message already there is
   * seen by the second look only. */
  if (!(w->timeout > 0)) return w->polls >= 2;
  if (w->polls % CPLI_WAIT_CLOCK_POLLS != 0) return 0;
  if (isinf(w->timeout) && !cpli_wait_interruptible()) return 0;
  const double now = MPI_Wtime();
  if (interrupted(w, now)) return 1;
  if (isinf(w->timeout)) return 0;
  if (w->moved) {
    w->deadline = now + w->timeout;
    w->moved = 0;
    w->warned = 0;
    return 0;
  }
  if (w->say && w->watch && !w->warned && now > w->deadline - w->timeout / 2) {
    char what[512];
    w->warned = 1;
    w->say(w->say_arg, what, sizeof what);
    fprintf(stderr,
            "coupler: still waiting after %.3g s (half the %g s "
            "timeout): %s\n",
            w->timeout / 2, w->timeout, what);
  }
  return now > w->deadline;
}

static pthread_mutex_t world_lock = PTHREAD_MUTEX_INITIALIZER;
static int world_depth, world_saved_ok;
static MPI_Errhandler world_saved;

void cpli_world_returns_enter(void) {
  pthread_mutex_lock(&world_lock);
  if (world_depth++ == 0) {
    world_saved_ok = PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_saved) == MPI_SUCCESS;
    if (world_saved_ok) PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  pthread_mutex_unlock(&world_lock);
}

void cpli_world_returns_leave(void) {
  pthread_mutex_lock(&world_lock);
  if (--world_depth == 0 && world_saved_ok) {
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, world_saved);
    PMPI_Errhandler_free(&world_saved);
  }
  pthread_mutex_unlock(&world_lock);
}
