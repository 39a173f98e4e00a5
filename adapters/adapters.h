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

#endif
