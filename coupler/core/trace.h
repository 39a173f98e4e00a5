/*
 * The job's trace file: CPL_TRACE, else the workflow's `trace:`. Every
 * process appends whole lines to one file (O_APPEND, one write() per
 * line, so lines never interleave). "FILE" is JSON Lines, one record per
 * line; "chrome:FILE" is the Chrome trace-event format (a JSON array whose
 * closing bracket may be missing, as Perfetto and chrome://tracing allow).
 */
#ifndef CPLI_TRACE_H
#define CPLI_TRACE_H

#include <stddef.h>

typedef struct cpli_trace cpli_trace;

/* The spec in force: CPL_TRACE if set (empty: off), else yaml (may be
 * NULL). */
const char *cpli_trace_spec(const char *yaml);

/* At cpl_init, on one process of the job before any can write: remove the
 * previous run's file. */
void cpli_trace_reset(const char *spec);

/* Open for appending (creating it, with the array's opening bracket for
 * chrome); NULL when spec is NULL or empty. A file that cannot be opened
 * is reported once on stderr and tracing stays off. */
cpli_trace *cpli_trace_open(const char *spec);
void cpli_trace_close(cpli_trace *t);
int cpli_trace_chrome(const cpli_trace *t);

/* Append one line (a newline is added). */
void cpli_trace_line(cpli_trace *t, const char *line, size_t len);

/* Wall-clock microseconds (comparable across processes and hosts with
 * synchronised clocks). */
double cpli_trace_now_us(void);

#endif
