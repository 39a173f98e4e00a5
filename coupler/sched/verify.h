/*
 * Step simulator for inter-group allgather schedules on a ring (pure).
 *
 * Replays a schedule and checks what the Kang et al. ring model requires; the
 * papers' pseudocode is not trusted without it (see ERRATA.md).
 */
#ifndef CPLI_SCHED_VERIFY_H
#define CPLI_SCHED_VERIFY_H

#include <stddef.h>

#include "sched/sched.h"

/* What the simulator saw besides validity. Redundant receipts (a process
 * receives a message it already holds) waste a step slot but are legal. */
typedef struct cpli_ring_stats {
  int nsteps;       /* steps of the schedule                        */
  size_t transfers; /* transfers replayed                           */
  size_t redundant; /* receipts of a message already held           */
  int max_sends;    /* most transfers in one step (ring parallelism) */
} cpli_ring_stats;

/* Verify schedule `s` for p senders (ranks 0..p-1, sender i holds message i)
 * and q receivers (ranks p..p+q-1) on a ring of N = p + q processes.
 * Checks: nprocs == N; transfers sorted by (step, from, to); steps in
 * 0..nsteps-1 and nsteps == 1 + last step used; ranks in 0..N-1; from and to
 * are ring neighbours (mod N); message in 0..p-1; at most one send and one
 * receive per process per step; the sender holds the message at the start
 * of the step (its own, or received in an earlier step); at the end every
 * receiver holds every message.
 * Returns 0 if valid. Otherwise returns nonzero (CPL_ERR_INTERNAL for an
 * invalid schedule, CPL_ERR_ARG / CPL_ERR_NOMEM for bad calls) and writes the
 * first fault found, naming step, ranks and message, into why (if non-NULL).
 * The verifier does not touch the thread's last-error message. */
int cpli_ring_verify(int p, int q, const cpli_schedule *s, char *why, size_t whylen);

/* As cpli_ring_verify; also fills *stats (if non-NULL), even on failure as
 * far as the replay got. */
int cpli_ring_verify_stats(int p, int q, const cpli_schedule *s, cpli_ring_stats *stats, char *why,
                           size_t whylen);

#endif
