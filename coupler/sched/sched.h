/*
 * Generic communication schedules (pure: no MPI calls).
 *
 * A schedule is a list of point-to-point transfers grouped into synchronous
 * steps. Algorithms that are schedule-driven (Kang ring, Traff circulant)
 * compute one of these once per (sizes) and the collective engine replays
 * it; unit tests verify it exhaustively without running MPI.
 */
#ifndef CPLI_SCHED_H
#define CPLI_SCHED_H

#include <stddef.h>
#include <stdlib.h>

/* In step `step`, process `from` sends message (block) `msg` to `to`. */
typedef struct cpli_transfer {
  int step, from, to, msg;
} cpli_transfer;

/* Transfers are sorted by step, then by from, then by to.
 * nsteps = 1 + the last step used (0 if n == 0). */
typedef struct cpli_schedule {
  int nprocs, nsteps;
  size_t n;
  cpli_transfer *t;
} cpli_schedule;

/* Release the transfer array and reset *s to empty; NULL is a no-op.
 * Inline so that every schedule module can use it without owning it. */
static inline void cpli_schedule_free(cpli_schedule *s) {
  if (!s) return;
  free(s->t);
  s->t = NULL;
  s->n = 0;
  s->nsteps = 0;
}

/* A verifier's verdict "invalid": writes the reason (printf-style) to
 * why[whylen] when given, and returns CPL_ERR_INTERNAL. */
int cpli_sched_invalid(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
