#include "data/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/trace.h"
#include "data/data.h"

static int rank_of(cpl_context *ctx) {
  int r = 0;
  MPI_Comm_rank(ctx->comm, &r);
  return r;
}

static const char *comp_name(cpl_context *ctx) { return ctx->wf->comps[ctx->comp].name; }

int cpli_report_on(cpl_context *ctx) {
  cpli_data_state *s = ctx->data;
  return s && (s->trace || s->progress);
}

/* Chrome: one complete event ("X") on this process (pid: component,
 * tid: rank). */
static void chrome_span(cpl_context *ctx, const char *name, double ts, double end,
                        const char *args) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf,
                   "{\"name\":\"%s\",\"ph\":\"X\",\"ts\":%.1f,"
                   "\"dur\":%.1f,\"pid\":%d,\"tid\":%d,\"args\":{%s}},",
                   name, ts, end > ts ? end - ts : 0, ctx->comp, rank_of(ctx), args);
  if (n > 0)
    cpli_trace_line(ctx->data->trace, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void trace_step(cpl_context *ctx, const cpli_event *e) {
  cpli_trace *t = ctx->data->trace;
  char buf[1024], args[512];
  if (cpli_trace_chrome(t)) {
    snprintf(args, sizeof args,
             "\"link\":\"%s\",\"step\":%ld,\"bytes\":%zu,"
             "\"mode\":\"%s\",\"alg\":\"%s\",\"queue\":%d,\"dropped\":%ld",
             e->link, e->step, e->bytes, e->mode, e->alg ? e->alg : "", e->queue, e->dropped);
    char name[96];
    chrome_span(ctx, e->producer ? "wait credit" : "wait data", e->t_wait, e->t_start, args);
    snprintf(name, sizeof name, "%s step %ld", e->producer ? "send" : "receive", e->step);
    chrome_span(ctx, name, e->t_start, e->t_end, args);
    if (!e->producer && e->t_done > 0) chrome_span(ctx, "compute", e->t_end, e->t_done, args);
    return;
  }
  int n =
      snprintf(buf, sizeof buf,
               "{\"ts\":%.1f,\"comp\":\"%s\",\"rank\":%d,\"link\":\"%s\","
               "\"ev\":\"%s\",\"step\":%ld,\"bytes\":%zu,\"step_bytes\":%zu,"
               "\"mode\":\"%s\",\"alg\":\"%s\",\"wait_s\":%.6f,"
               "\"transfer_s\":%.6f,\"compute_s\":%.6f,\"queue\":%d,"
               "\"dropped\":%ld}",
               e->t_wait, comp_name(ctx), rank_of(ctx), e->link, e->producer ? "sent" : "received",
               e->step, e->bytes, e->step_bytes, e->mode, e->alg ? e->alg : "",
               (e->t_start - e->t_wait) / 1e6, (e->t_end - e->t_start) / 1e6,
               e->t_done > 0 ? (e->t_done - e->t_end) / 1e6 : 0.0, e->queue, e->dropped);
  if (n > 0) cpli_trace_line(t, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static const char *human(size_t b, char buf[32]) {
  if (b < 10240) snprintf(buf, 32, "%zu B", b);
  else if (b < 10485760) snprintf(buf, 32, "%.1f KiB", (double)b / 1024);
  else snprintf(buf, 32, "%.1f MiB", (double)b / 1048576);
  return buf;
}

/* The progress line of a step, without its "(+N steps)". */
static void progress_line(cpl_context *ctx, const cpli_event *e, char *buf, size_t n) {
  char b1[32], b2[32];
  if (e->producer)
    snprintf(buf, n,
             "[%s] %s: step %ld sent, %s (%s%s%s), wait %.1f ms, transfer "
             "%.1f ms, queue %d, dropped %ld",
             comp_name(ctx), e->link, e->step, human(e->step_bytes, b1), e->mode, e->alg ? " " : "",
             e->alg ? e->alg : "", (e->t_start - e->t_wait) / 1e3, (e->t_end - e->t_start) / 1e3,
             e->queue, e->dropped);
  else
    snprintf(buf, n,
             "[%s] %s: step %ld received, %s of %s (%s%s%s), wait %.1f ms, "
             "transfer %.1f ms",
             comp_name(ctx), e->link, e->step, human(e->bytes, b1), human(e->step_bytes, b2),
             e->mode, e->alg ? " " : "", e->alg ? e->alg : "", (e->t_start - e->t_wait) / 1e3,
             (e->t_end - e->t_start) / 1e3);
}

/* The whole line in one call, so that it leaves in one write whatever
 * stdout's buffering: the launcher merges the processes' output. */
static void print_line(const char *line, long more) {
  char buf[512]; /* a pending line (400) and its count */
  if (more) snprintf(buf, sizeof buf, "%s (+%ld steps)\n", line, more);
  else snprintf(buf, sizeof buf, "%s\n", line);
  fputs(buf, stdout);
  fflush(stdout);
}

/* Progress on rank 0: at most 4 lines a second per link. A step not
 * printed is kept, so the link's last step is printed when it ends
 * (cpli_report_flush). */
static void progress(cpl_context *ctx, const cpli_event *e) {
  cpli_data_state *s = ctx->data;
  if (!s->progress || rank_of(ctx) != 0 || (e->t_done > 0)) return;
  double now = e->t_end;
  int slot = -1;
  for (int i = 0; i < s->nprog; i++)
    if (s->prog[i].link == e->link) slot = i;
  if (slot < 0 && s->nprog < s->maxprog) {
    slot = s->nprog++;
    s->prog[slot].link = e->link;
    s->prog[slot].last = 0;
    s->prog[slot].quiet = 0;
  }
  if (slot < 0) return;
  if (now - s->prog[slot].last < 250000) {
    s->prog[slot].quiet++;
    progress_line(ctx, e, s->prog[slot].pending, sizeof s->prog[slot].pending);
    return;
  }
  char line[sizeof s->prog[slot].pending];
  progress_line(ctx, e, line, sizeof line);
  print_line(line, s->prog[slot].quiet);
  s->prog[slot].last = now;
  s->prog[slot].quiet = 0;
}

void cpli_report_flush(cpl_context *ctx, const char *link) {
  cpli_data_state *s = ctx->data;
  for (int i = 0; s && i < s->nprog; i++)
    if (s->prog[i].link == link && s->prog[i].quiet) {
      print_line(s->prog[i].pending, s->prog[i].quiet - 1);
      s->prog[i].quiet = 0;
    }
}

void cpli_report_step(cpl_context *ctx, const cpli_event *e) {
  if (!cpli_report_on(ctx)) return;
  if (ctx->data->trace && (e->producer || e->t_done > 0)) trace_step(ctx, e);
  progress(ctx, e);
}

void cpli_report_drop(cpl_context *ctx, const char *link, long step, int queue) {
  cpli_data_state *s = ctx->data;
  if (!s || !s->trace) return;
  char buf[512];
  double now = cpli_trace_now_us();
  int n = cpli_trace_chrome(s->trace)
              ? snprintf(buf, sizeof buf,
                         "{\"name\":\"drop step %ld\",\"ph\":\"i\","
                         "\"s\":\"t\",\"ts\":%.1f,\"pid\":%d,\"tid\":%d,\"args\":"
                         "{\"link\":\"%s\",\"queue\":%d}},",
                         step, now, ctx->comp, rank_of(ctx), link, queue)
              : snprintf(buf, sizeof buf,
                         "{\"ts\":%.1f,\"comp\":\"%s\",\"rank\":%d,"
                         "\"link\":\"%s\",\"ev\":\"dropped\",\"step\":%ld,"
                         "\"queue\":%d}",
                         now, comp_name(ctx), rank_of(ctx), link, step, queue);
  if (n > 0) cpli_trace_line(s->trace, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}
