/*
 * libcpl_yield.so - LD_PRELOAD shim for MPICH ch4:ucx ranks oversubscribed on
 * few cores: every MPI test of the suite runs under it, and so does the
 * emulated cluster (scripts/cluster/README.md).
 *
 * 1. Yield instead of busy-polling.
 *    MPICH's ch4:ucx device busy-polls ucp_worker_progress() (imported from
 *    libucp.so, so the call goes through the PLT and can be interposed). With
 *    8-16 ranks on 2 cores a rank spinning on an empty progress call keeps the
 *    ranks (and the kernel's TCP/tc work) that would make progress off the CPU,
 *    adding 100+ ms per collective. The wrapper gives the CPU away after
 *    CPL_YIELD_SPIN consecutive calls that report no progress (return 0), with
 *    sched_yield() or, if CPL_YIELD_SLEEP_US > 0, a short nanosleep().
 *
 * 2. Do not hang in MPI_Finalize.
 *    MPICH's finalize closes every UCX endpoint with ucp_disconnect_nb() (flush
 *    mode) and progresses until all close requests complete. Over TCP a close
 *    can need the peer to progress, but a peer that finished its own closes
 *    sits in a blocking PMI call and never does: the rank spins forever. Once
 *    closing has started, the wrapper of ucp_request_is_completed() reports a
 *    close request as complete when no progress event has happened for
 *    CPL_CLOSE_IDLE_MS; MPICH then releases the request and destroys the
 *    worker, which drops the endpoint. By then MPI semantics guarantee that
 *    every message has been received, so nothing is lost.
 *
 * Environment (read once, at the first call):
 *   CPL_YIELD_SPIN=n       empty polls before giving the CPU away (default 0: every time)
 *   CPL_YIELD_SLEEP_US=u   sleep u microseconds instead of sched_yield() (default 0)
 *   CPL_YIELD_DISABLE=1    no yielding (for A/B measurements)
 *   CPL_CLOSE_IDLE_MS=m    give up a stuck endpoint close after m ms without
 *                          progress (default 300; 0 = wait forever, as MPICH does)
 *   CPL_YIELD_STATS=1      print call/yield/abandon counts to stderr at exit
 *
 * Build: see scripts/CMakeLists.txt (target cpl_yield), or
 *   cc -O2 -shared -fPIC -o libcpl_yield.so yield_shim.c -ldl -lpthread
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Same ABI as UCX 1.x (ucp.h, ucp_compat.h); handles are opaque pointers. */
unsigned ucp_worker_progress(void *worker);
void *ucp_disconnect_nb(void *ep);
int ucp_request_is_completed(void *request);

typedef unsigned (*progress_fn)(void *);
typedef void *(*disconnect_fn)(void *);
typedef int (*is_completed_fn)(void *);

static progress_fn real_progress;
static disconnect_fn real_disconnect;
static is_completed_fn real_is_completed;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static unsigned long spin_limit;
static long sleep_ns;
static int yield_disabled;
static int want_stats;
static long close_idle_ns;

static _Thread_local unsigned long consecutive_empty;
static atomic_int closing;         /* set once MPICH starts closing endpoints */
static atomic_llong last_event_ns; /* last progress event, while closing */
static atomic_ulong n_calls, n_empty, n_yields, n_closes, n_abandoned;

static unsigned long env_ulong(const char *name, unsigned long dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  return *end ? dflt : v;
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *next_symbol(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f) {
    fprintf(stderr, "libcpl_yield: %s not found (%s)\n", name, dlerror());
    abort();
  }
  return f;
}

static void cpl_shim_init(void) {
  real_progress = (progress_fn)next_symbol("ucp_worker_progress");
  real_disconnect = (disconnect_fn)next_symbol("ucp_disconnect_nb");
  real_is_completed = (is_completed_fn)next_symbol("ucp_request_is_completed");
  spin_limit = env_ulong("CPL_YIELD_SPIN", 0);
  sleep_ns = (long)env_ulong("CPL_YIELD_SLEEP_US", 0) * 1000L;
  yield_disabled = env_ulong("CPL_YIELD_DISABLE", 0) != 0;
  want_stats = env_ulong("CPL_YIELD_STATS", 0) != 0;
  close_idle_ns = (long)env_ulong("CPL_CLOSE_IDLE_MS", 300) * 1000000L;
}

#define INIT() pthread_once(&init_once, cpl_shim_init)
#define COUNT(c)                                                                                   \
  do {                                                                                             \
    if (want_stats) atomic_fetch_add_explicit(&(c), 1, memory_order_relaxed);                      \
  } while (0)

unsigned ucp_worker_progress(void *worker) {
  INIT();
  unsigned events = real_progress(worker);
  COUNT(n_calls);
  if (events) {
    consecutive_empty = 0;
    if (atomic_load_explicit(&closing, memory_order_relaxed))
      atomic_store(&last_event_ns, now_ns());
    return events;
  }
  COUNT(n_empty);
  if (yield_disabled || ++consecutive_empty <= spin_limit) return events;
  consecutive_empty = 0;
  COUNT(n_yields);
  if (sleep_ns > 0) {
    struct timespec ts = {sleep_ns / 1000000000L, sleep_ns % 1000000000L};
    nanosleep(&ts, NULL);
  } else {
    sched_yield();
  }
  return events;
}

void *ucp_disconnect_nb(void *ep) {
  INIT();
  if (!atomic_exchange(&closing, 1)) atomic_store(&last_event_ns, now_ns());
  COUNT(n_closes);
  return real_disconnect(ep);
}

int ucp_request_is_completed(void *request) {
  INIT();
  int done = real_is_completed(request);
  if (done || close_idle_ns <= 0 || !atomic_load_explicit(&closing, memory_order_relaxed))
    return done;
  if (now_ns() - atomic_load(&last_event_ns) < close_idle_ns) return 0;
  COUNT(n_abandoned);
  return 1; /* MPICH releases it; ucp_worker_destroy drops the endpoint */
}

__attribute__((destructor)) static void cpl_shim_report(void) {
  if (!want_stats || atomic_load(&n_calls) == 0) return;
  fprintf(stderr,
          "libcpl_yield[%ld]: %lu progress calls, %lu empty, %lu yields%s; "
          "%lu endpoint closes, %lu close checks abandoned\n",
          (long)getpid(), atomic_load(&n_calls), atomic_load(&n_empty), atomic_load(&n_yields),
          yield_disabled ? " (yield disabled)" : "", atomic_load(&n_closes),
          atomic_load(&n_abandoned));
}
