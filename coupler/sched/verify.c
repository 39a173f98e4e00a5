/*
 * Step simulator for ring allgather schedules; see verify.h for the rules.
 *
 * held[r * p + m] is the step in which rank r obtained message m (-1 for a
 * sender's own message, INT_MAX if never). "Held at the start of step s"
 * is then held < s, so a message received in step s cannot be forwarded in
 * the same step, whatever order the transfers of the step are listed in.
 */
#include "sched/verify.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "coupler.h"

int cpli_sched_invalid(char *why, size_t whylen, const char *fmt, ...) {
  if (why && whylen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
  }
  return CPL_ERR_INTERNAL;
}

int cpli_ring_verify(int p, int q, const cpli_schedule *s, char *why, size_t whylen) {
  return cpli_ring_verify_stats(p, q, s, NULL, why, whylen);
}

int cpli_ring_verify_stats(int p, int q, const cpli_schedule *s, cpli_ring_stats *stats, char *why,
                           size_t whylen) {
  cpli_ring_stats st = {0, 0, 0, 0};
  if (why && whylen) why[0] = '\0';
  if (stats) *stats = st;
  if (p < 1 || q < 1 || p > INT_MAX / 2 - q) {
    if (why && whylen) snprintf(why, whylen, "bad sizes p=%d q=%d", p, q);
    return CPL_ERR_ARG;
  }
  if (!s || (s->n && !s->t)) {
    if (why && whylen) snprintf(why, whylen, "no schedule");
    return CPL_ERR_ARG;
  }
  const int n = p + q;
  st.nsteps = s->nsteps;
  if (s->nprocs != n)
    return cpli_sched_invalid(why, whylen, "nprocs=%d, expected p+q=%d", s->nprocs, n);
  if (s->nsteps < 0) return cpli_sched_invalid(why, whylen, "nsteps=%d < 0", s->nsteps);

  int *held = malloc(sizeof *held * (size_t)n * (size_t)p);
  int *sent = malloc(sizeof *sent * (size_t)n); /* last step with a send */
  int *recv = malloc(sizeof *recv * (size_t)n); /* last step with a recv */
  int rc = CPL_OK;
  if (!held || !sent || !recv) {
    if (why && whylen) snprintf(why, whylen, "out of memory");
    rc = CPL_ERR_NOMEM;
    goto out;
  }
  for (size_t k = 0; k < (size_t)n * (size_t)p; k++) held[k] = INT_MAX;
  for (int i = 0; i < p; i++) held[(size_t)i * p + i] = -1;
  for (int r = 0; r < n; r++) sent[r] = recv[r] = -1;

  /* Order first, so a shuffled list is reported as such and not as the
   * causality fault it would look like during the replay. */
  for (size_t k = 1; k < s->n; k++) {
    const cpli_transfer *u = &s->t[k - 1], *t = &s->t[k];
    if (u->step > t->step ||
        (u->step == t->step && (u->from > t->from || (u->from == t->from && u->to > t->to)))) {
      rc = cpli_sched_invalid(why, whylen,
                              "transfer %zu (step %d, %d->%d) is out of order after "
                              "(step %d, %d->%d)",
                              k, t->step, t->from, t->to, u->step, u->from, u->to);
      goto out;
    }
  }
  int last = -1, in_step = 0;
  for (size_t k = 0; k < s->n; k++) {
    const cpli_transfer *t = &s->t[k];
    if (t->step < 0 || t->step >= s->nsteps) {
      rc = cpli_sched_invalid(why, whylen, "transfer %zu: step %d outside 0..%d", k, t->step,
                              s->nsteps - 1);
      goto out;
    }
    if (t->from < 0 || t->from >= n || t->to < 0 || t->to >= n) {
      rc = cpli_sched_invalid(why, whylen, "step %d: rank out of range in %d->%d (N=%d)", t->step,
                              t->from, t->to, n);
      goto out;
    }
    int d = ((t->to - t->from) % n + n) % n;
    if (t->from == t->to || (d != 1 && d != n - 1)) {
      rc = cpli_sched_invalid(why, whylen, "step %d: %d->%d are not ring neighbours (N=%d)",
                              t->step, t->from, t->to, n);
      goto out;
    }
    if (t->msg < 0 || t->msg >= p) {
      rc = cpli_sched_invalid(why, whylen, "step %d: %d->%d carries message %d, not in 0..%d",
                              t->step, t->from, t->to, t->msg, p - 1);
      goto out;
    }
    if (sent[t->from] == t->step) {
      rc = cpli_sched_invalid(why, whylen, "step %d: rank %d sends twice (second: m%d to %d)",
                              t->step, t->from, t->msg, t->to);
      goto out;
    }
    if (recv[t->to] == t->step) {
      rc = cpli_sched_invalid(why, whylen, "step %d: rank %d receives twice (second: m%d from %d)",
                              t->step, t->to, t->msg, t->from);
      goto out;
    }
    sent[t->from] = recv[t->to] = t->step;
    int *hf = &held[(size_t)t->from * p + t->msg];
    if (*hf >= t->step) {
      if (*hf == INT_MAX)
        rc = cpli_sched_invalid(why, whylen,
                                "step %d: rank %d sends m%d to %d but never "
                                "had it before",
                                t->step, t->from, t->msg, t->to);
      else
        rc = cpli_sched_invalid(why, whylen,
                                "step %d: rank %d sends m%d to %d but only "
                                "receives it in step %d",
                                t->step, t->from, t->msg, t->to, *hf);
      goto out;
    }
    int *ht = &held[(size_t)t->to * p + t->msg];
    if (*ht != INT_MAX) st.redundant++;
    else *ht = t->step;
    st.transfers++;
    if (t->step != last) {
      last = t->step;
      in_step = 0;
    }
    if (++in_step > st.max_sends) st.max_sends = in_step;
  }
  if (s->nsteps != last + 1) {
    rc = cpli_sched_invalid(why, whylen, "nsteps=%d but the last step used is %d", s->nsteps, last);
    goto out;
  }
  for (int r = p; r < n; r++)
    for (int m = 0; m < p; m++)
      if (held[(size_t)r * p + m] == INT_MAX) {
        rc = cpli_sched_invalid(why, whylen, "receiver %d never gets m%d (after %d steps)", r, m,
                                s->nsteps);
        goto out;
      }
out:
  if (stats) *stats = st;
  free(held);
  free(sent);
  free(recv);
  return rc;
}
