/* The built-in components of cpl-component (see README.md here). Each runs
 * the whole component, collective over it; on failure cpl_last_error()
 * names the file, link, step and dataset. */
#ifndef CPLI_ADAPTERS_H
#define CPLI_ADAPTERS_H

#include "coupler.h"

/* kind: sink. Write every step of every input link to `path`. */
int cpli_hdf5_sink_run(cpl_context *ctx, const char *path);

/* kind: source. Replay `path` on every linked output port. */
int cpli_hdf5_source_run(cpl_context *ctx, const char *path);

/* kind: stage. Keep the last steps of the one linked input port and serve
 * them to every linked output port's consumers, until end of stream. */
int cpli_stage_run(cpl_context *ctx);

/* Output on success, shared by sink, source and stage (report.c, README.md
 * "Output"). cpli_report_init reads CPL_VERBOSE (CPL_ERR_ENV if it is not
 * 0, 1 or 2) and starts the clock; cpli_report prints
 * "cpl-component[<component>]: <fmt...>" on stdout from rank 0 when the
 * verbosity is at least `level`: 1 for the one summary line a built-in
 * ends with (steps, bytes, file), 2 for a line per step. */
int cpli_report_init(void);
void cpli_report(int level, const char *component, int rank, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
double cpli_report_elapsed(void); /* seconds since cpli_report_init */
int cpli_report_level(void);      /* CPL_VERBOSE: 0, 1 or 2 */
const char *cpli_report_bytes(double bytes, char *buf, size_t n); /* "1.5 MiB" */

#endif
