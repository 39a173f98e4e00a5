/*
 * The collective engine's CPL_* environment variables, as one snapshot.
 *
 * Every collective reads them (its timeout, the model's alpha and beta, the
 * stream cut, ...), and cpl-bench and the tests change them between calls,
 * so they are read per call. getenv() per variable plus strtod() cost a
 * fifth of a small warm allgather (2 ranks, 1 KiB: 0.3 of 1.5 us), and a
 * call reads a dozen of them. So every public entry point calls
 * cpli_tuning_refresh() once: one pass over the environment, comparing
 * each value with the one parsed last (per thread) and parsing again only
 * when one changed. Everything below reads that snapshot with
 * cpli_tuning_now(), which costs nothing.
 */
#ifndef CPLI_TUNING_H
#define CPLI_TUNING_H

#include <stddef.h>

typedef struct cpli_tuning {
  double alpha, beta; /* CPL_ALPHA, CPL_BETA: the cost model (s, s/byte)    */
  size_t chunk;       /* CPL_CHUNK: dataflow stream cut (bytes)             */
  int flow;           /* CPL_FLOW: 0 selects lockstep execution             */
  int ring;           /* CPL_RING: 0, 1, or -1 (the model's)                */
  /* CPL_INTER_ALGORITHM, CPL_INTRA_ALGORITHM: the text ("" when unset);
   * select.c parses and reports it. */
  const char *inter, *intra;
  /* CPL_TIMEOUT (seconds, negative: none): timeout_set when given, and
   * the text in timeout_bad when it is not a finite number. */
  double timeout;
  int timeout_set;
  const char *timeout_bad;
} cpli_tuning;

/* Defaults: 5 us latency, 10 GB/s links, 32 KiB stream cut. */
#define CPLI_DEFAULT_ALPHA 5e-6
#define CPLI_DEFAULT_BETA 1e-10
#define CPLI_DEFAULT_CHUNK ((size_t)32 * 1024)

/* Read the environment again (at the start of every public call). */
const cpli_tuning *cpli_tuning_refresh(void);

/* The values read by the last refresh on this thread (the first call
 * refreshes); valid until the next refresh. */
const cpli_tuning *cpli_tuning_now(void);

/* Shorthands on the snapshot. Model parameters: CPL_ALPHA (s) and
 * CPL_BETA (s/byte), else defaults for a typical cluster (above). */
void cpli_model_params(double *alpha, double *beta);
/* Dataflow plans (coll/flow_exec.c): the size of the messages streams are
 * cut into (CPL_CHUNK bytes, optional K or M suffix; default
 * CPLI_DEFAULT_CHUNK), and whether plans are used at all (CPL_FLOW=0 runs
 * the lockstep implementations instead, for A/B comparisons). Every rank
 * must see the same values. */
size_t cpli_flow_chunk(void);
int cpli_flow_enabled(void);

#endif
