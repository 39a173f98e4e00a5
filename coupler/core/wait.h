/*
 * The one way Coupler waits: poll, back off, give up at a deadline.
 *
 * Deadline: a wait fails once `timeout` seconds pass in which its polls
 * saw no progress. A wait on one event (or on a set that completes all at
 * once, MPI_Testall) thus fails `timeout` seconds after it began; a wait
 * on many messages (a dataflow plan) fails only when all of them stall
 * that long, so a slow but moving transfer is never cut off. timeout 0
 * means a try (two polls: see cpli_wait_slow); CPLI_WAIT_FOREVER means no
 * deadline. Callers map
 * their own conventions (an option's "<= 0: no limit") onto these.
 *
 *   cpli_wait w;
 *   cpli_wait_start(&w, timeout, CPLI_WAIT_NAP_US);
 *   while (!ready()) {
 *     if (cpli_wait_idle(&w)) return timed_out();
 *   }
 *
 * Back-off, the last argument: 0 never sleeps (collectives: MPICH
 * progresses only while polled, and the peers are in the same call);
 * otherwise the wait spins CPLI_WAIT_SPINS idle polls, then naps that
 * many microseconds between polls (a root waiting for another group, which
 * may compute for minutes, must not take a shared core from the ranks it
 * waits for). The clock is read every CPLI_WAIT_CLOCK_POLLS idle polls.
 *
 * Watchdog: a wait given a description (cpli_wait_watch) that passes half
 * its timeout without progress prints once on stderr what it waits for
 * (link, peer, step, phase), so a hang is explained while there is still
 * time to look, not only when it fails. cpli_wait_describe gives the
 * description without the watchdog (a try that waits briefly on purpose).
 *
 * Interrupts: with a check registered (cpl_set_interrupt_check), a wait
 * calls it every CPLI_WAIT_CHECK_S seconds of waiting, at a clock read
 * (waits without a deadline read the clock then too), and gives up when
 * it says so: cpli_wait_idle returns 1, w->interrupted is set, and the
 * last-error message already says what was awaited (the description) and
 * that a signal interrupted it. Callers return CPL_ERR_INTERRUPTED then,
 * not their timeout message: cpli_wait_failed gives the status.
 */
#ifndef CPLI_CORE_WAIT_H
#define CPLI_CORE_WAIT_H

#include <math.h>

#include "coupler.h"

#define CPLI_WAIT_FOREVER INFINITY

enum {
  CPLI_WAIT_NAP_US = 50,      /* the usual nap: control messages          */
  CPLI_WAIT_SPINS = 200,      /* idle polls before the first nap          */
  CPLI_WAIT_CLOCK_POLLS = 16, /* idle polls between clock reads           */
};
#define CPLI_WAIT_CHECK_S 0.05 /* seconds of waiting between interrupt checks */

typedef struct cpli_wait {
  double timeout;  /* seconds without progress; see above              */
  double deadline; /* MPI_Wtime() past which the wait has failed        */
  unsigned polls;  /* idle polls since the wait started                 */
  unsigned nap_us; /* 0: spin; else nap after CPLI_WAIT_SPINS polls     */
  int moved;       /* progress since the clock was last read            */
  /* watchdog: says what the wait is for, into buf */
  void (*say)(const void *arg, char *buf, unsigned long n);
  const void *say_arg;
  int warned;
  int watch;       /* 0: say only describes (for an interrupt)          */
  double check_at; /* MPI_Wtime() of the next interrupt check; 0: unset */
  double since;    /* the first clock read (for "after N s")            */
  int interrupted; /* the interrupt check ended the wait                */
} cpli_wait;

void cpli_wait_start(cpli_wait *w, double timeout, unsigned nap_us);

/* Describe the wait for the watchdog (arg must outlive the wait). */
static inline void cpli_wait_watch(cpli_wait *w, void (*say)(const void *, char *, unsigned long),
                                   const void *arg) {
  w->say = say;
  w->say_arg = arg;
  w->watch = 1;
}

/* The same without the watchdog: the description an interrupt reports. */
static inline void cpli_wait_describe(cpli_wait *w,
                                      void (*say)(const void *, char *, unsigned long),
                                      const void *arg) {
  w->say = say;
  w->say_arg = arg;
  w->watch = 0;
}

/* A wait the check must not end: one on a nonblocking collective, which
 * MPI can neither cancel nor free, so its buffers would be written after
 * the caller gave them up (and a retry would post a second one). It ends
 * when every rank arrives, or at its deadline, as before. */
static inline void cpli_wait_uninterruptible(cpli_wait *w) { w->check_at = INFINITY; }

/* A description that is a string (arg: const char *). */
void cpli_wait_say_text(const void *arg, char *buf, unsigned long n);

/* The status of a wait that gave up: CPL_ERR_INTERRUPTED (its message
 * written) or CPL_ERR_TIMEOUT (the caller says what timed out). */
static inline int cpli_wait_failed(const cpli_wait *w) {
  return w->interrupted ? CPL_ERR_INTERRUPTED : CPL_ERR_TIMEOUT;
}

/* Whether waits without a deadline must poll too (a check is registered):
 * a blocking MPI wait could not be interrupted. */
int cpli_wait_interruptible(void);

/* A poll made progress: the deadline restarts (at the next clock read). */
static inline void cpli_wait_moved(cpli_wait *w) { w->moved = 1; }

int cpli_wait_slow(cpli_wait *w);

/* A poll made no progress: back off; 1 once the deadline has passed.
 * Inline for the collectives' hot loops: most idle polls of a spinning
 * wait neither nap nor read the clock. */
static inline int cpli_wait_idle(cpli_wait *w) {
  if (++w->polls % CPLI_WAIT_CLOCK_POLLS != 0 && !w->nap_us && w->timeout > 0) return 0;
  return cpli_wait_slow(w);
}

/* MPICH reports a failed request (MPI_Test*, MPI_Request_get_status) to
 * MPI_COMM_WORLD's error handler, fatal by default, not to the handler of
 * the request's communicator: a receive truncated by a peer that disagrees
 * on a size would abort the job. While the engine runs, world returns
 * errors, so they come back as status codes. Calls nest, across threads
 * too: the first in saves world's handler, the last out restores it. */
void cpli_world_returns_enter(void);
void cpli_world_returns_leave(void);

#endif
