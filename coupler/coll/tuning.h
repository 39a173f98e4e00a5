/*
 * The collective engine's CPL_* environment variables, as one snapshot.
 *
 * Every collective reads them (its timeout, the model's alpha and beta, the
 * stream cut, ...), and cpl-bench and the tests change them between calls,
 * so they are read per call. getenv() per variable plus strtod() cost a
 * fifth of a small warm allgather (2 ranks, 1 KiB: 0.3 of 1.5 us), and a
 * call reads a dozen of them. So every public entry point calls
 * cpli_tuning_refresh() once: one pass over the environment's entry
 * addresses, which setenv, putenv and unsetenv change (and a look at the
 * entries the variables came from, for a putenv'd string changed in
 * place); only then the CPL_ entries are read, each value compared with
 * the one parsed last (per thread), and parsed again only when one
 * changed. Everything below reads that snapshot with cpli_tuning_now(),
 * which costs nothing.
 *
 * Model parameters come, per value, from the environment (CPL_ALPHA,
 * CPL_BETA, CPL_OVERHEAD, CPL_CHUNK), else from the tuning file
 * (coll/tuning_file.h: `cpl-bench --calibrate` writes it; read once per
 * process, at the first refresh), else from the defaults below.
 */
#ifndef CPLI_TUNING_H
#define CPLI_TUNING_H

#include <stddef.h>

typedef struct cpli_tuning {
  double alpha, beta;      /* CPL_ALPHA, CPL_BETA: the cost model (s, s/byte)    */
  double overhead;         /* CPL_OVERHEAD: s per further message of a stream
                            * (what a cut costs); default: alpha               */
  size_t chunk;            /* CPL_CHUNK: a fixed dataflow stream cut (bytes);
                            * 0: the plan's cut model chooses per stream     */
  size_t inter_root_max;   /* CPL_INTER_ROOT_MAX: bytes per block up to which
                            * `auto` takes root between groups; default 0 */
  size_t intra_root_bytes; /* CPL_INTRA_ROOT_BYTES: inside a group, while its
                            * member 0 sends at most this much (cost.c)  */
  /* Where each came from: "CPL_ALPHA" (...), "file" or "default". */
  const char *alpha_from, *beta_from, *overhead_from, *chunk_from, *inter_root_max_from,
      *intra_root_bytes_from;
  /* The tuning file read (NULL: none) and, if it is broken, what is wrong
   * with it ("PATH:LINE: ..."), else what is wrong with a set CPL_ALPHA,
   * CPL_BETA, CPL_OVERHEAD or CPL_CHUNK ("CPL_BETA: expected ..., got
   * \"0\""); api.c refuses every call (CPL_ERR_ENV) while it is set. */
  const char *file, *file_error;
  int flow; /* CPL_FLOW: 0 selects lockstep execution             */
  int ring; /* CPL_RING: 0, 1, or -1 (the model's)                */
  /* CPL_INTER_ALGORITHM, CPL_INTRA_ALGORITHM: the text ("" when unset);
   * select.c parses and reports it. */
  const char *inter, *intra;
  /* CPL_TIMEOUT (seconds, negative: none): timeout_set when given, and
   * the text in timeout_bad when it is not a finite number. */
  double timeout;
  int timeout_set;
  const char *timeout_bad;
  /* Changes whenever the snapshot is parsed again (per thread): what is
   * derived from it alone may be kept while the version stays. */
  unsigned version;
} cpli_tuning;

/* The smallest fixed stream cut CPL_CHUNK or the tuning file's chunk may
 * ask for. Every message of a plan is a posted MPI request (all receives
 * at once, coll/flow_exec.c): chunk = 1 made a 1 MiB allgather post a
 * million receives and crash MPICH (request pool exhausted). Below a few
 * hundred bytes a message costs far more than it carries (the cut model's
 * own floor is 8 KiB, sched/cut.h); 512 still allows the tests' 1000-byte
 * cuts. sched/flow.c also bounds the messages per stream whatever the
 * chunk (CPLI_FLOW_MAX_STREAM_MSGS), for huge streams. */
#define CPLI_CHUNK_MIN 512

/* Defaults: 5 us latency, 10 GB/s links. */
#define CPLI_DEFAULT_ALPHA 5e-6
#define CPLI_DEFAULT_BETA 1e-10

/* Read the environment again (at the start of every public call). */
const cpli_tuning *cpli_tuning_refresh(void);

/* The values read by the last refresh on this thread (the first call
 * refreshes); valid until the next refresh. */
const cpli_tuning *cpli_tuning_now(void);

/* Shorthands on the snapshot. Model parameters: CPL_ALPHA (s) and
 * CPL_BETA (s/byte), else defaults for a typical cluster (above). */
void cpli_model_params(double *alpha, double *beta);
/* Dataflow plans (coll/flow_exec.c): a fixed size of the messages streams
 * are cut into (CPL_CHUNK bytes, optional K or M suffix, or the tuning
 * file's chunk; 0 when neither: each plan's cut model chooses, see
 * sched/cut.h), and whether plans are used at all (CPL_FLOW=0 runs the
 * lockstep implementations instead, for A/B comparisons). Every rank
 * must see the same values. */
size_t cpli_flow_chunk(void);
int cpli_flow_enabled(void);

/* Tests only: forget the tuning file read, so the next refresh reads
 * CPL_TUNING_FILE (or the default path) again. Not thread-safe. */
void cpli_tuning_file_forget(void);

#endif
