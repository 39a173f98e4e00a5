/*
 * libcpl_yield.so - LD_PRELOAD shim that stops MPICH ch4:ucx from hogging the
 * CPU while it waits.
 *
 * MPICH's ch4:ucx device busy-polls ucp_worker_progress() (imported from
 * libucp.so, so the call goes through the PLT and can be interposed). On the
 * emulated cluster 8-16 ranks share 2 cores; a rank spinning on an empty
 * progress call keeps the ranks (and the kernel's TCP/tc softirq work) that
 * would make progress off the CPU, adding 100+ ms per collective.
 *
 * This shim wraps ucp_worker_progress(): after CPL_YIELD_SPIN consecutive calls
 * that report no progress (return 0) it gives the CPU away, with sched_yield()
 * or, if CPL_YIELD_SLEEP_US > 0, with a short nanosleep().
 *
 * Environment (read once, at the first call):
 *   CPL_YIELD_SPIN=n       empty polls before giving the CPU away (default 0: every time)
 *   CPL_YIELD_SLEEP_US=u   sleep u microseconds instead of sched_yield() (default 0)
 *   CPL_YIELD_DISABLE=1    pass-through only (for A/B measurements)
 *   CPL_YIELD_STATS=1      print call/yield counts to stderr at exit
 *
 * Build: see scripts/CMakeLists.txt (target cpl_yield), or
 *   cc -O2 -shared -fPIC -o libcpl_yield.so yield_shim.c -ldl
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

/* Same ABI as UCX's: unsigned ucp_worker_progress(ucp_worker_h worker). */
typedef unsigned (*cpl_progress_fn)(void *worker);
unsigned ucp_worker_progress(void *worker);

static cpl_progress_fn real_progress;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static unsigned long spin_limit;
static long sleep_ns;
static int disabled;
static int want_stats;
static atomic_ulong n_calls, n_empty, n_yields;
static _Thread_local unsigned long consecutive_empty;

static unsigned long env_ulong(const char *name, unsigned long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    return *end ? dflt : v;
}

static void cpl_yield_init(void)
{
    real_progress = (cpl_progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    if (!real_progress) {
        fprintf(stderr, "libcpl_yield: ucp_worker_progress not found (%s)\n", dlerror());
        abort();
    }
    spin_limit = env_ulong("CPL_YIELD_SPIN", 0);
    sleep_ns = (long)env_ulong("CPL_YIELD_SLEEP_US", 0) * 1000L;
    disabled = env_ulong("CPL_YIELD_DISABLE", 0) != 0;
    want_stats = env_ulong("CPL_YIELD_STATS", 0) != 0;
}

unsigned ucp_worker_progress(void *worker)
{
    pthread_once(&init_once, cpl_yield_init);
    unsigned events = real_progress(worker);
    if (want_stats)
        atomic_fetch_add_explicit(&n_calls, 1, memory_order_relaxed);
    if (events) {
        consecutive_empty = 0;
        return events;
    }
    if (want_stats)
        atomic_fetch_add_explicit(&n_empty, 1, memory_order_relaxed);
    if (disabled || ++consecutive_empty <= spin_limit)
        return events;
    consecutive_empty = 0;
    if (want_stats)
        atomic_fetch_add_explicit(&n_yields, 1, memory_order_relaxed);
    if (sleep_ns > 0) {
        struct timespec ts = {sleep_ns / 1000000000L, sleep_ns % 1000000000L};
        nanosleep(&ts, NULL);
    } else {
        sched_yield();
    }
    return events;
}

__attribute__((destructor)) static void cpl_yield_report(void)
{
    if (!want_stats || atomic_load(&n_calls) == 0)
        return;
    fprintf(stderr, "libcpl_yield[%ld]: %lu progress calls, %lu empty, %lu yields%s\n",
            (long)getpid(), atomic_load(&n_calls), atomic_load(&n_empty),
            atomic_load(&n_yields), disabled ? " (disabled)" : "");
}
