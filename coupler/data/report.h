/*
 * What the data layer tells about its links while it runs: trace records
 * (core/trace.h: CPL_TRACE or the workflow's `trace:`) and progress lines
 * (CPL_PROGRESS=1, which cpl-run sets unless it is already set: rank 0 of
 * each component prints a short line per step on stdout, at most four a
 * second per link, counting the steps in between, and a link's last step
 * when it ends).
 */
#ifndef CPLI_DATA_REPORT_H
#define CPLI_DATA_REPORT_H

#include <stddef.h>

#include "group/context.h"

/* One step of one link as one rank saw it. Times are wall-clock
 * microseconds (cpli_trace_now_us); unused ones are 0. */
typedef struct cpli_event {
  const char *link; /* label "a.out->b.in"                          */
  int producer;     /* 1: sent, 0: received                         */
  long step;
  size_t bytes;                  /* this rank's bytes                            */
  size_t step_bytes;             /* the step's global bytes                      */
  const char *mode;              /* "allgather" or "select"                      */
  const char *alg;               /* what its allgathers ran (cpli_inter_algs_add) */
  double t_wait, t_start, t_end; /* waiting (credit / data) from t_wait */
  double t_done;                 /* consumer: end_step (compute from t_end)      */
  int queue;                     /* producer: steps still queued on the link     */
  long dropped;                  /* producer: dropped so far on the link         */
} cpli_event;

/* Is anything listening (trace open or progress on)? */
int cpli_report_on(cpl_context *ctx);
void cpli_report_step(cpl_context *ctx, const cpli_event *e);
/* The link ended (end of stream, or its port closed): print its last step
 * if the rate limit held its line back, so the progress ends there. */
void cpli_report_flush(cpl_context *ctx, const char *link);
void cpli_report_drop(cpl_context *ctx, const char *link, long step, int queue);

#endif
