/*
 * Kang et al.'s optimal half-duplex inter-group allgather on a ring (pure
 * schedule maths; the MPI replay lives in coll/).
 *
 * Ring of N = p + q processes: senders 0..p-1 (sender i owns message i),
 * receivers p..N-1; rank i talks only to (i +- 1) mod N. In each step a
 * process sends at most one message and receives at most one. The schedule
 * leaves every receiver holding messages 0..p-1.
 */
#ifndef CPLI_SCHED_RING_H
#define CPLI_SCHED_RING_H

#include "sched/sched.h"

/* Compute the schedule for any p, q >= 1 into *out (free it with
 * cpli_schedule_free). Even p and q: exactly p + q/2 steps (the paper's
 * schedule). Odd sizes: derived from the even schedule of the rounded-up
 * sizes with virtual processes removed; at most cpli_ring_steps_bound(p, q)
 * steps. Returns CPL_OK, CPL_ERR_ARG (p or q < 1, out NULL),
 * CPL_ERR_UNSUPPORTED (p(p+q) above 2^27: the explicit schedule would not
 * fit), CPL_ERR_NOMEM; cpl_last_error says why. *out is empty on failure.
 * Transfers whose receiver already holds the message are never emitted. */
int cpli_ring_schedule(int p, int q, cpli_schedule *out);

/* The paper's step count p + q/2, with odd p or q first rounded up to even
 * (the size the "dummy process" of the paper would give). */
int cpli_ring_steps_even(int p, int q);

/* Upper bound on the steps of cpli_ring_schedule(p, q), for every p, q >= 1
 * (equals cpli_ring_steps_even for even p and q). For cost models. */
int cpli_ring_steps_bound(int p, int q);

/* Lower bound for any schedule in this model: the receiver farthest from
 * both ends of the sender block gets its first message after ceil(q/2)
 * steps and needs p messages, one per step: p + ceil(q/2) - 1. */
int cpli_ring_steps_lower(int p, int q);

/* For tests and tuning only: build the odd-size schedule with the virtual
 * sender at virtual rank ds (0 <= ds <= p, used only if p is odd) and the
 * virtual receiver at virtual rank dr (p' <= dr < p' + q', used only if q
 * is odd), where p', q' are p, q rounded up to even. */
int cpli_ring_schedule_dummy(int p, int q, int ds, int dr, cpli_schedule *out);

#endif
