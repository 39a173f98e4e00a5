/*
 * cpl-bench: time Coupler's collective algorithms side by side.
 *
 * Method: for every shape and message size, each variant runs `warmup`
 * times, then `reps` rounds (more, up to MAX_REPS, if the warm-up's times
 * say they would take under `min_time`: short runs scatter most) in which
 * the variants take turns (interleaved, so drift on a noisy machine hits
 * them alike; each round starts one variant later). Each timed run comes
 * right after `prime` untimed runs of the same variant, so it meets the
 * network state its own pattern leaves (TCP windows, the shapers' queues),
 * as a repeated call does, not the one the variant before it left (the
 * cyclic order puts the same variant before it in nearly every round):
 * on the emulated cluster, at 4|4 and 1 MiB, fc right after two-hop took
 * 1.09-1.20 of the bound (median of five runs 1.17), right after
 * direct-ring 1.05-1.08, and primed 1.04-1.17 (median of six 1.10). One
 * run is timed from a barrier to the slowest rank's return (MPI_MAX of
 * the per-rank time).
 * Reported: median and minimum per variant, the ratio of the baseline's
 * median to the variant's, and with --rate the bound p*k/B (inter) or
 * (p-1)*k/B (intra). Every run's data is verified outside the timing.
 *
 * Message size k is the block of ONE process (as in Kang et al.).
 *
 * Baselines besides the library's algorithms: "mpi" is MPICH's blocking
 * MPI_Allgather (inter: on the intercommunicator, the receivers sending
 * nothing), "ring-intra" the intra-group ring allgather over all p + q
 * ranks (the baseline of Kang et al.'s ring comparison).
 *
 * A/B variants of one algorithm: NAME@step runs the lockstep execution
 * (CPL_FLOW=0) and NAME@cSIZE cuts dataflow streams at SIZE bytes
 * (CPL_CHUNK), NAME@iALG runs fc's intra-group phases with ALG
 * (CPL_INTRA_ALGORITHM), NAME@ring / NAME@alg7 force the dataflow
 * allgather (ring or Alg. 7, CPL_RING; also for the intra-group
 * circulant), e.g. --inter fc,fc@step,fc@c1M,fc@alg7. The settings reach
 * the library through its environment, set on every rank around each run.
 * Inter-group runs call cpl_inter_allgather (the blocks are regular, so
 * auto chooses by their size); NAME@v calls cpl_inter_allgatherv, whose
 * auto chooses for a nominal block (senders do not know the others').
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/algorithms.h"
#include "coll/tuning.h"
#include "coll/tuning_file.h"
#include "core/wait.h"
#include "coupler.h"
#include "tools/calibrate.h"
#include "tools/cli.h"

#define MAXV 16
#define MAX_REPS 256

/* Environment the library read before cpl-bench changed it. */
#define NENV 4
static char *saved_env[NENV];
static const char *const env_names[NENV] = {"CPL_FLOW", "CPL_CHUNK", "CPL_INTRA_ALGORITHM",
                                            "CPL_RING"};

static void save_env(void) {
  for (int i = 0; i < NENV; i++) {
    const char *v = getenv(env_names[i]);
    saved_env[i] = v ? strdup(v) : NULL;
  }
}

static void restore_env(void) {
  for (int i = 0; i < NENV; i++) {
    if (saved_env[i]) setenv(env_names[i], saved_env[i], 1);
    else unsetenv(env_names[i]);
  }
}

/* Why the last variant() call refused its name (for the usage error). */
static char variant_err[192];

/* Split "ALG@opt@opt" into ALG (alg, n bytes) and, if apply, set the
 * options' environment. Returns 0, or -1 for an unknown or bad option
 * (variant_err says which). */
static int variant(const char *name, char *alg, size_t n, int apply) {
  snprintf(alg, n, "%s", name);
  char *at = strchr(alg, '@');
  if (!at) return 0;
  *at = '\0';
  for (char *o = at + 1; o && *o;) {
    char *next = strchr(o, '@');
    if (next) *next++ = '\0';
    size_t chunk;
    cpl_intra_algorithm ia;
    if (!strcmp(o, "step")) {
      if (apply) setenv("CPL_FLOW", "0", 1);
    } else if (!strcmp(o, "flow")) {
      if (apply) setenv("CPL_FLOW", "1", 1);
    } else if (!strcmp(o, "ring") || !strcmp(o, "alg7")) {
      if (apply) setenv("CPL_RING", o[0] == 'r' ? "1" : "0", 1);
    } else if (o[0] == 'c' && o[1] >= '0' && o[1] <= '9') {
      /* the library's own rule for CPL_CHUNK (coll/tuning.h) */
      if (cpli_parse_bytes(o + 1, &chunk) || chunk < CPLI_CHUNK_MIN) {
        snprintf(variant_err, sizeof variant_err,
                 "%s: @c needs a whole number of bytes from %d to 10^15 (K or M suffix), got "
                 "\"%s\"",
                 name, CPLI_CHUNK_MIN, o + 1);
        return -1;
      }
      if (apply) setenv("CPL_CHUNK", o + 1, 1);
    } else if (o[0] == 'i' && o[1] && cpl_intra_algorithm_parse(o + 1, &ia) == CPL_OK) {
      if (apply) setenv("CPL_INTRA_ALGORITHM", o + 1, 1);
    } else if (!strcmp(o, "v")) { /* run_inter reads it */
    } else {
      snprintf(variant_err, sizeof variant_err,
               "%s: unknown option \"@%s\" (known: @step, @flow, @ring, @alg7, @cSIZE, @iALG "
               "with ALG an intra-group algorithm, @v)",
               name, o);
      return -1;
    }
    o = next;
  }
  return 0;
}

/* Whether variant "ALG@opt@opt" has option o. */
static int variant_has(const char *name, const char *o) {
  const size_t n = strlen(o);
  for (const char *at = strchr(name, '@'); at; at = strchr(at + 1, '@'))
    if (!strncmp(at + 1, o, n) && (at[1 + n] == '\0' || at[1 + n] == '@')) return 1;
  return 0;
}

/* A table's algorithm names, each followed by a comma (usage text). */
static void print_names(FILE *f, const char *const *names, int n) {
  for (int i = 0; i < n; i++) fprintf(f, "%s,", names[i]);
}

static void usage(FILE *f) {
  fprintf(f, "usage: mpiexec -n N cpl-bench --inter LIST | --intra LIST [options]\n"
             "       mpiexec -n N cpl-bench --calibrate [--out FILE] [--sizes LIST] [--reps N]\n"
             "Time Coupler's collective algorithms side by side: per shape and size a\n"
             "table row per variant (median and min over --reps interleaved runs, the\n"
             "slowest rank's time, in ms; ratio = baseline median / variant median).\n");
  fprintf(f, "  --inter LIST     inter-group algorithms: ");
  print_names(f, cpli_inter_names, CPL_INTER_COUNT);
  fprintf(f, "ring-intra,mpi\n"
             "                   (ring-intra: ring allgather over all p+q ranks, the\n"
             "                   baseline of the Kang ring comparison; mpi: MPICH's\n"
             "                   blocking MPI_Allgather, native: MPI_Iallgatherv;\n"
             "                   all: every algorithm of the table, then mpi)\n");
  fprintf(f, "  --intra LIST     intra-group algorithms: ");
  print_names(f, cpli_intra_names, CPL_INTRA_COUNT);
  fprintf(f,
          "mpi\n"
          "                   (all: every algorithm of the table, then mpi;\n"
          "                   NAME@step: lockstep execution, NAME@flow: dataflow\n"
          "                   plans whatever CPL_FLOW says, NAME@cSIZE: dataflow\n"
          "                   streams cut at SIZE bytes, NAME@iALG: fc's intra-group\n"
          "                   phases with ALG, NAME@ring|alg7: the dataflow\n"
          "                   allgather, NAME@v: inter through the allgatherv;\n"
          "                   e.g. fc@step, fc@alg7@c64K, circulant@c1M, auto@v)\n"
          "  --shape P:Q,...  inter shapes (default: N/2:N-N/2)\n"
          "  --procs P,...    intra group sizes (default: N)\n"
          "  --sizes LIST     bytes per process: 32K,1M or a range 32K..4M (x2 steps)\n"
          "                   (default 32K..4M; K, M, G; at most 2G - 1, and a\n"
          "                   group's blocks together too where they are placed by\n"
          "                   int displacements: --intra, ring-intra, NAME@v)\n"
          "  --one-big        --intra only: rank 0's block has the size, every other\n"
          "                   block 1 byte (an allgatherv with one huge block)\n"
          "  --reps N         measured runs per variant, at least (default 10, at\n"
          "                   most 256)\n"
          "  --min-time S     more runs, up to 256, until a point's timed rounds\n"
          "                   take S seconds by the warm-up's times (default 0.5)\n"
          "  --warmup N       untimed runs per variant (default 2)\n"
          "  --prime N        untimed runs of a variant right before each of its\n"
          "                   timed ones (default 1; 0: a run follows the variant\n"
          "                   before it in the round)\n"
          "  --baseline ALG   variant the ratios refer to (default: the last one)\n"
          "  --rate MBPS      link rate in MB/s (1e6 B/s): print the bound p*k/B\n"
          "  --csv FILE       also write every point as CSV\n"
          "  --no-verify      skip data verification\n"
          "  --calibrate      measure the cost model on this machine (N >= 2 ranks, in\n"
          "                   pairs 0-1, 2-3, ... all at once): ping-pong and streams\n"
          "                   over --sizes (default " CPLI_CALIBRATE_SIZES "),\n"
          "                   least-squares fits of alpha, beta and the per-message\n"
          "                   overhead with their quality; with N >= 4, root against\n"
          "                   the model's pick at N/2|N - N/2 for 256 B..16 KiB blocks\n"
          "                   (inter_root_max: up to where root wins); and write the tuning file\n"
          "                   the library reads ($CPL_TUNING_FILE, else\n"
          "                   $XDG_CONFIG_HOME/coupler/tuning, else\n"
          "                   ~/.config/coupler/tuning)\n"
          "  --out FILE       --calibrate: write FILE instead (- : print the values)\n"
          "  --quiet          no progress lines\n"
          "  -h, --help       show this help\n"
          "  -V, --version    show the version\n"
          "Restrictions (coupler/coll/algorithms.h):\n");
  for (int a = 1; a < CPL_INTER_COUNT; a++)
    if (*cpli_inter_algs[a].restriction)
      fprintf(f, "  inter %-10s %s\n", cpli_inter_algs[a].name, cpli_inter_algs[a].restriction);
  for (int a = 1; a < CPL_INTRA_COUNT; a++)
    if (*cpli_intra_algs[a].restriction)
      fprintf(f, "  intra %-10s %s\n", cpli_intra_algs[a].name, cpli_intra_algs[a].restriction);
  fprintf(f, "Exit status: 0 done (every run verified); 1 the --csv file cannot be\n"
             "written (nothing run); 2 usage error (also a shape that needs more\n"
             "ranks than the job has); a failed or wrong run aborts the job with a\n"
             "message (mpiexec exits non-zero).\n");
}

/* Bytes per process, with a K, M or G suffix: a whole number of bytes up
 * to INT_MAX, as every block moves as an int count of MPI_BYTE (a
 * larger one wrapped to a negative count). -1 if not. */
static long parse_size(const char *s) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v >= 0)) return -1;
  switch (*end) {
  case 'k':
  case 'K':
    v *= 1024;
    end++;
    break;
  case 'm':
  case 'M':
    v *= 1024 * 1024;
    end++;
    break;
  case 'g':
  case 'G':
    v *= 1024.0 * 1024 * 1024;
    end++;
    break;
  }
  if (*end == 'B' || *end == 'b') end++;
  return *end || v > INT_MAX || v != floor(v) ? -1 : (long)v;
}

/* All of s a whole number in [lo, hi] (atoi took "1e3" for 1, "10x" for
 * 10, and wrapped past INT_MAX). */
static int int_arg(const char *s, long lo, long hi, int *out) {
  char *end;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) return 0;
  *out = (int)v;
  return 1;
}

/* All of s a finite number (atof took "abc" for 0 and "5x" for 5). */
static int num_arg(const char *s, double *out) {
  char *end;
  errno = 0;
  *out = strtod(s, &end);
  return end != s && !*end && !errno && isfinite(*out);
}

/* "32K..4M" (powers of two apart) or "1K,3K,1M". */
static int parse_sizes(const char *s, long *out, int max) {
  const char *dots = strstr(s, "..");
  if (dots) {
    char lo[64];
    snprintf(lo, sizeof lo, "%.*s", (int)(dots - s), s);
    long a = parse_size(lo), b = parse_size(dots + 2), n = 0;
    if (a < 0 || b < a) return -1;
    for (long v = a; v <= b && n < max; v = v ? v * 2 : 1) out[n++] = v;
    return (int)n;
  }
  int n = 0;
  char *copy = strdup(s);
  for (char *tok = strtok(copy, ","); tok && n < max; tok = strtok(NULL, ",")) {
    if ((out[n] = parse_size(tok)) < 0) return free(copy), -1;
    n++;
  }
  free(copy);
  return n;
}

static int split_list(const char *s, char out[][32], int max) {
  int n = 0;
  char *copy = strdup(s);
  for (char *tok = strtok(copy, ","); tok && n < max; tok = strtok(NULL, ","))
    snprintf(out[n++], 32, "%s", tok);
  free(copy);
  return n;
}

/* `all` in a variant list: every row of the direction's table, then mpi. */
static int expand_all(char names[][32], int n, int inter) {
  for (int v = 0; v < n; v++) {
    if (strcmp(names[v], "all")) continue;
    const char *const *rows = inter ? cpli_inter_names : cpli_intra_names;
    const int nrows = inter ? CPL_INTER_COUNT : CPL_INTRA_COUNT;
    char rest[MAXV][32];
    const int nrest = n - v - 1;
    memcpy(rest, names + v + 1, sizeof *rest * (size_t)nrest);
    n = v;
    for (int a = 1; a < nrows && n < MAXV; a++) snprintf(names[n++], 32, "%s", rows[a]);
    if (n < MAXV) snprintf(names[n++], 32, "mpi");
    for (int i = 0; i < nrest && n < MAXV; i++) memcpy(names[n++], rest[i], sizeof *rest);
    v = n - nrest - 1;
  }
  return n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static unsigned char pattern(int owner, long i, int run) {
  return (unsigned char)(owner * 131 + i * 7 + run * 17);
}

typedef struct bench {
  int inter_mode;
  int nv;
  char names[MAXV][32];
  long sizes[64];
  int nsizes;
  int reps, warmup, prime, verify, quiet, baseline;
  double min_time; /* s of timed rounds per point, at least (reps permitting) */
  int one_big;     /* --one-big: intra blocks of 1 byte but rank 0's */
  double rate;     /* bytes/s, 0 = unknown */
  FILE *csv;
  int wrank;
} bench;

/* One timed run of variant v; returns seconds (max over `all`) or < 0. */
static double run_inter(const bench *b, int v, int sender, MPI_Comm inter, MPI_Comm all, int p,
                        int lrank, long k, unsigned char *sbuf, unsigned char *rbuf, int *counts,
                        int *displs, int run) {
  const char *name = b->names[v];
  char alg[32];
  if (variant(name, alg, sizeof alg, 1)) return -1;
  const int ring_intra = strcmp(alg, "ring-intra") == 0, mpi = strcmp(alg, "mpi") == 0;
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  if (!ring_intra && !mpi && cpl_inter_algorithm_parse(alg, &opt.inter) != CPL_OK) return -1;
  if (sender)
    for (long i = 0; i < k; i++) sbuf[i] = pattern(lrank, i, run);
  MPI_Barrier(all);
  double t0 = MPI_Wtime();
  int rc;
  if (ring_intra) {
    /* all p+q ranks allgather; receivers contribute nothing */
    int n, r;
    MPI_Comm_size(all, &n);
    MPI_Comm_rank(all, &r);
    opt.intra = CPL_INTRA_RING;
    for (int i = 0; i < n; i++)
      counts[p + i] = i < p ? (int)k : 0, displs[p + i] = i < p ? (int)(i * k) : 0;
    if (sender) memcpy(rbuf + (size_t)r * k, sbuf, (size_t)k);
    rc = cpl_intra_allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, rbuf, counts + p, displs + p, MPI_BYTE,
                              all, &opt);
  } else if (mpi) {
    /* MPICH's own blocking MPI_Allgather on the intercommunicator; the
     * receivers' group contributes zero bytes */
    rc = MPI_Allgather(sbuf, sender ? (int)k : 0, MPI_BYTE, rbuf, sender ? 0 : (int)k, MPI_BYTE,
                       inter) == MPI_SUCCESS
             ? CPL_OK
             : CPL_ERR_MPI;
  } else if (variant_has(name, "v")) {
    rc = cpl_inter_allgatherv(sbuf, sender ? (int)k : 0, MPI_BYTE, rbuf, counts, displs, MPI_BYTE,
                              sender ? CPL_SENDER : CPL_RECEIVER, inter, &opt);
  } else {
    rc = cpl_inter_allgather(sbuf, sender ? (int)k : 0, MPI_BYTE, rbuf, sender ? 0 : (int)k,
                             MPI_BYTE, sender ? CPL_SENDER : CPL_RECEIVER, inter, &opt);
  }
  double t = MPI_Wtime() - t0, tmax;
  restore_env();
  if (rc != CPL_OK) {
    fprintf(stderr, "cpl-bench: %s: %s: %s\n", name, cpl_strerror(rc), cpl_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, all);
  if (b->verify && !sender) {
    for (int s = 0; s < p; s++)
      for (long i = 0; i < k; i++)
        if (rbuf[(size_t)s * k + i] != pattern(s, i, run)) {
          fprintf(stderr, "cpl-bench: %s: wrong byte %ld of block %d\n", name, i, s);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
  }
  return tmax;
}

static double run_intra(const bench *b, int v, MPI_Comm comm, int n, int r, long k,
                        unsigned char *rbuf, int run) {
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  char alg[32];
  if (variant(b->names[v], alg, sizeof alg, 1)) return -1;
  const int mpi = strcmp(alg, "mpi") == 0;
  if (!mpi && cpl_intra_algorithm_parse(alg, &opt.intra) != CPL_OK) return -1;
  /* Block s: cd[s] bytes at cd[n + s]; k each, or with --one-big k for
   * rank 0 and 1 for the others (an allgatherv). */
  int *cd = malloc(sizeof *cd * 2 * (size_t)n);
  if (!cd) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int s = 0; s < n; s++) {
    cd[s] = b->one_big ? (s ? 1 : (int)k) : (int)k;
    cd[n + s] = b->one_big ? (s ? (int)k + s - 1 : 0) : (int)(s * k);
  }
  for (long i = 0; i < cd[r]; i++) rbuf[(size_t)cd[n + r] + i] = pattern(r, i, run);
  MPI_Barrier(comm);
  double t0 = MPI_Wtime();
  int rc;
  if (mpi)
    rc = (b->one_big
              ? MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, cd, cd + n, MPI_BYTE, comm)
              : MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, (int)k, MPI_BYTE, comm)) ==
                 MPI_SUCCESS
             ? CPL_OK
             : CPL_ERR_MPI;
  else
    rc = b->one_big
             ? cpl_intra_allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, rbuf, cd, cd + n, MPI_BYTE, comm,
                                    &opt)
             : cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_BYTE, rbuf, (int)k, MPI_BYTE, comm, &opt);
  double t = MPI_Wtime() - t0, tmax;
  restore_env();
  if (rc != CPL_OK) {
    fprintf(stderr, "cpl-bench: %s: %s: %s\n", b->names[v], cpl_strerror(rc), cpl_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, comm);
  if (b->verify)
    for (int s = 0; s < n; s++)
      for (long i = 0; i < cd[s]; i++)
        if (rbuf[(size_t)cd[n + s] + i] != pattern(s, i, run)) {
          fprintf(stderr, "cpl-bench: %s: wrong byte %ld of block %d\n", b->names[v], i, s);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
  free(cd);
  return tmax;
}

/* A barrier on MPI_COMM_WORLD in which ranks left out of the shape just
 * measured (idle) sleep between polls: MPICH's busy-polling barrier would
 * take CPU time from the measured ranks on an oversubscribed machine (5
 * ranks polling on 2 cores next to a 3-rank allgather). */
static void wait_for_all(int idle) {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  if (!idle) {
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    return;
  }
  cpli_wait w; /* 0.5 ms naps; no deadline: shapes may take long */
  cpli_wait_start(&w, CPLI_WAIT_FOREVER, 500);
  for (int done = 0; MPI_Test(&req, &done, MPI_STATUS_IGNORE), !done;) cpli_wait_idle(&w);
}

static const char *human(long bytes, char *buf) {
  if (bytes >= 1048576 && bytes % 1048576 == 0) sprintf(buf, "%ld MiB", bytes / 1048576);
  else if (bytes >= 1024 && bytes % 1024 == 0) sprintf(buf, "%ld KiB", bytes / 1024);
  else sprintf(buf, "%ld B", bytes);
  return buf;
}

/* Time all variants at one size on one shape; rank `leader` prints. */
static void point(const bench *b, const char *shape, int p, int q, long k, int leader,
                  double (*run)(const bench *, int, int, void *), void *ctx, int index, int total) {
  double t[MAXV][MAX_REPS];
  double round = 0; /* one round's time, from the last warm-up runs */
  for (int v = 0; v < b->nv; v++) {
    double last = 0;
    for (int w = 0; w < b->warmup; w++) last = run(b, v, -1 - w, ctx);
    round += (1 + b->prime) * last;
  }
  /* Short runs scatter most (README.md, "Measuring": at 1-16 KiB a ratio
   * moved by a median 6% between 11 rounds and 201, 3% with 0.5 s of
   * rounds): as many rounds as fill min_time. Every rank has the same
   * times (MPI_MAX), so all run as many. */
  int reps = b->reps;
  if (round > 0 && b->min_time > round * reps) reps = (int)ceil(b->min_time / round);
  if (reps > MAX_REPS) reps = MAX_REPS;
  /* Round r starts at variant r mod nv; what ran before a timed run is
   * the variant itself (see the top of this file). */
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < b->nv; i++) {
      const int v = (r + i) % b->nv;
      for (int w = 0; w < b->prime; w++) run(b, v, -1 - w, ctx);
      t[v][r] = run(b, v, r, ctx);
    }
  if (!leader) return;
  double med[MAXV], mn[MAXV];
  for (int v = 0; v < b->nv; v++) {
    qsort(t[v], (size_t)reps, sizeof(double), cmp_double);
    med[v] = reps % 2 ? t[v][reps / 2] : (t[v][reps / 2 - 1] + t[v][reps / 2]) / 2;
    mn[v] = t[v][0];
  }
  const double bound = b->rate > 0 ? (double)(b->inter_mode ? p : p - 1) * k / b->rate : 0;
  char hs[32];
  for (int v = 0; v < b->nv; v++) {
    const double ratio = med[b->baseline] / med[v];
    printf("%-7s %9s  %-15s %10.3f %10.3f  %6.2fx", shape, human(k, hs), b->names[v], med[v] * 1e3,
           mn[v] * 1e3, ratio);
    if (bound > 0) printf(" %10.3f %7.2f", bound * 1e3, med[v] / bound);
    printf(" %5d\n", reps);
    if (b->csv)
      fprintf(b->csv, "%s,%d,%d,%s,%s,%ld,%.9f,%.9f,%.4f,%.9f,%d\n", shape, p, q,
              b->inter_mode ? "inter" : "intra", b->names[v], k, med[v], mn[v], ratio, bound, reps);
  }
  fflush(stdout);
  if (!b->quiet) fprintf(stderr, "[%d/%d] %s %s done\n", index, total, shape, hs);
  (void)q;
}

typedef struct inter_ctx {
  int sender, p, lrank;
  long k;
  MPI_Comm inter, all;
  unsigned char *sbuf, *rbuf;
  int *counts, *displs;
} inter_ctx;

static double inter_thunk(const bench *b, int v, int run, void *c) {
  inter_ctx *x = c;
  return run_inter(b, v, x->sender, x->inter, x->all, x->p, x->lrank, x->k, x->sbuf, x->rbuf,
                   x->counts, x->displs, run);
}

typedef struct intra_ctx {
  MPI_Comm comm;
  int n, r;
  long k;
  unsigned char *rbuf;
} intra_ctx;

static double intra_thunk(const bench *b, int v, int run, void *c) {
  intra_ctx *x = c;
  return run_intra(b, v, x->comm, x->n, x->r, x->k, x->rbuf, run);
}

/* Rank 0 of a launched job, or a process started alone: the one that
 * reports usage errors found before MPI_Init (hydra sets PMI_RANK). */
static int first_process(void) {
  const char *r = getenv("PMI_RANK");
  if (!r) r = getenv("OMPI_COMM_WORLD_RANK");
  return !r || !strcmp(r, "0");
}

int main(int argc, char **argv) {
  int info = cpli_cli_info("cpl-bench", argc, argv, usage);
  if (info >= 0) return info;
  if (argc == 1) {
    if (first_process())
      cpli_cli_usage_error("cpl-bench", usage, "say what to measure (--inter or --intra)");
    return CPLI_CLI_USAGE_ERROR;
  }
  MPI_Init(&argc, &argv);
  save_env();
  int wrank, wsize;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  bench b = {.reps = 10,
             .min_time = 0.5,
             .warmup = 2,
             .prime = 1,
             .verify = 1,
             .baseline = -1,
             .wrank = wrank};
  char shapes[32][32], procs[32][32];
  int nshapes = 0, nprocs = 0;
  const char *csvpath = NULL, *baseline = NULL, *out = NULL;
  int calibrate = 0, sizes_given = 0;
  b.nsizes = parse_sizes("32K..4M", b.sizes, 64);
  int bad = 0;
  for (int i = 1; i < argc && !bad; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    static const char *const valued[] = {
        "--inter", "--intra",    "--shape", "--procs", "--sizes", "--reps",    "--warmup",
        "--prime", "--baseline", "--rate",  "--csv",   "--out",   "--min-time"};
    int takes = 1, known = 0;
    const char *want = "";
    for (size_t j = 0; j < sizeof valued / sizeof *valued; j++) known |= !strcmp(a, valued[j]);
    if (!strcmp(a, "--no-verify")) b.verify = 0, takes = 0;
    else if (!strcmp(a, "--quiet")) b.quiet = 1, takes = 0;
    else if (!strcmp(a, "--one-big")) b.one_big = 1, takes = 0;
    else if (!strcmp(a, "--calibrate")) calibrate = 1, takes = 0;
    else if (!known) bad = 3;
    else if (!val) bad = 2;
    else if (!strcmp(a, "--inter") || !strcmp(a, "--intra")) {
      b.inter_mode = !strcmp(a, "--inter");
      b.nv = expand_all(b.names, split_list(val, b.names, MAXV), b.inter_mode);
      bad = b.nv == 0 ? 4 : 0; /* "" must not mean the default inter run */
    } else if (!strcmp(a, "--shape")) nshapes = split_list(val, shapes, 32);
    else if (!strcmp(a, "--procs")) nprocs = split_list(val, procs, 32);
    else if (!strcmp(a, "--sizes")) {
      bad = (b.nsizes = parse_sizes(val, b.sizes, 64)) <= 0, sizes_given = 1;
      want = "whole numbers of bytes with K, M or G, at most 2147483647 (2G - 1) each, "
             "as LIST or LO..HI";
    } else if (!strcmp(a, "--out")) out = val;
    else if (!strcmp(a, "--reps"))
      bad = !int_arg(val, 1, 1000000, &b.reps), want = "a whole number from 1 to 1000000";
    else if (!strcmp(a, "--min-time"))
      bad = !num_arg(val, &b.min_time) || b.min_time < 0, want = "seconds, 0 or more";
    else if (!strcmp(a, "--warmup"))
      bad = !int_arg(val, 0, 1000000, &b.warmup), want = "a whole number from 0 to 1000000";
    else if (!strcmp(a, "--prime"))
      bad = !int_arg(val, 0, 1000000, &b.prime), want = "a whole number from 0 to 1000000";
    else if (!strcmp(a, "--baseline")) baseline = val;
    else if (!strcmp(a, "--rate"))
      bad = !num_arg(val, &b.rate) || (b.rate *= 1e6) <= 0, want = "MB/s, more than 0";
    else if (!strcmp(a, "--csv")) csvpath = val;
    if (bad && wrank == 0)
      fprintf(stderr,
              bad == 3   ? "cpl-bench: unknown option %s\n"
              : bad == 2 ? "cpl-bench: option %s needs a value\n"
              : bad == 4 ? "cpl-bench: %s needs at least one algorithm, got \"%s\"\n"
                         : "cpl-bench: bad value for %s: %s (%s)\n",
              a, val, want);
    i += takes;
  }
  /* A point's runs are stored in t[MAXV][MAX_REPS]: more were cut without a word. */
  if (!bad && !calibrate && b.reps > MAX_REPS)
    bad = 1, wrank == 0 && fprintf(stderr, "cpl-bench: --reps %d: at most %d runs per point\n",
                                   b.reps, MAX_REPS);
  if (!bad && calibrate) {
    if (!sizes_given) b.nsizes = parse_sizes(CPLI_CALIBRATE_SIZES, b.sizes, 64);
    const int rc = cpli_calibrate(out, b.sizes, b.nsizes, b.reps, b.quiet);
    MPI_Finalize();
    return rc;
  }
  if (!bad && b.nv == 0) b.inter_mode = 1, b.nv = split_list("fc,root,native", b.names, MAXV);
  for (int v = 0; v < b.nv && !bad; v++) {
    cpl_inter_algorithm ia;
    cpl_intra_algorithm xa;
    char alg[32];
    if (variant(b.names[v], alg, sizeof alg, 0)) {
      bad = 1, wrank == 0 && fprintf(stderr, "cpl-bench: %s\n", variant_err);
      break;
    }
    const int ok =
        !strcmp(alg, "mpi") ||
        (b.inter_mode ? !strcmp(alg, "ring-intra") || cpl_inter_algorithm_parse(alg, &ia) == CPL_OK
                      : cpl_intra_algorithm_parse(alg, &xa) == CPL_OK);
    /* The library's message lists its own algorithms; the benchmark's
     * baselines are valid here too. */
    if (!ok)
      bad = 1, wrank == 0 && fprintf(stderr, "cpl-bench: %s; cpl-bench also takes %s\n",
                                     cpl_last_error(), b.inter_mode ? "ring-intra and mpi" : "mpi");
    if (baseline && !strcmp(baseline, b.names[v])) b.baseline = v;
  }
  if (!bad && b.one_big && b.inter_mode)
    bad = 1, wrank == 0 && fprintf(stderr, "cpl-bench: --one-big is for --intra\n");
  if (!bad && baseline && b.baseline < 0)
    bad = 1,
    wrank == 0 && fprintf(stderr, "cpl-bench: baseline %s is not among the variants\n", baseline);
  if (b.inter_mode && nshapes == 0)
    snprintf(shapes[nshapes++], 32, "%d:%d", wsize / 2, wsize - wsize / 2);
  if (!b.inter_mode && nprocs == 0) snprintf(procs[nprocs++], 32, "%d", wsize);
  long maxk = 0;
  for (int s = 0; s < b.nsizes; s++) maxk = b.sizes[s] > maxk ? b.sizes[s] : maxk;
  /* Where blocks are placed by int displacements (every intra run; inter
   * ring-intra and @v), all of them must fit an int. */
  int displs = !b.inter_mode;
  for (int v = 0; v < b.nv; v++)
    displs |= !strncmp(b.names[v], "ring-intra", 10) || variant_has(b.names[v], "v");
  /* Every shape must be well formed and fit the job: refused here, before
   * any table line (sscanf took "1:1:5" for 1:1). */
  for (int si = 0; si < (b.inter_mode ? nshapes : nprocs) && !bad; si++) {
    int p, q = 0;
    char extra, why[160] = "";
    const char *s = b.inter_mode ? shapes[si] : procs[si];
    if (b.inter_mode ? sscanf(s, "%d:%d%c", &p, &q, &extra) != 2
                     : sscanf(s, "%d%c", &p, &extra) != 1)
      snprintf(why, sizeof why, "is not %s",
               b.inter_mode ? "P:Q, whole numbers" : "a whole number");
    else if (p < 1 || (b.inter_mode && q < 1) || p + q > wsize)
      snprintf(
          why, sizeof why, "does not fit this job of %d rank%s (%s)", wsize, wsize == 1 ? "" : "s",
          b.inter_mode ? "P:Q with P, Q >= 1 and P + Q ranks at most" : "1 to the job's ranks");
    else if (displs && (b.one_big ? maxk + p - 1 : (long)p * maxk) > INT_MAX)
      snprintf(why, sizeof why,
               "at %ld bytes per process gathers %ld bytes, more than an int displacement "
               "reaches (2147483647)",
               maxk, b.one_big ? maxk + p - 1 : (long)p * maxk);
    bad = why[0] != '\0';
    if (bad && wrank == 0)
      fprintf(stderr, "cpl-bench: %s %s %s\n", b.inter_mode ? "shape" : "group size", s, why);
  }
  if (bad) {
    if (wrank == 0) usage(stderr);
    MPI_Finalize();
    return CPLI_CLI_USAGE_ERROR;
  }
  if (b.baseline < 0) b.baseline = b.nv - 1;
  /* A CSV that cannot be written stops every rank before the first run:
   * the run went on for minutes and exited 0 without the file. */
  int csv_ok = 1;
  if (wrank == 0 && csvpath && !(b.csv = fopen(csvpath, "w"))) {
    fprintf(stderr, "cpl-bench: cannot write %s: %s\n", csvpath, strerror(errno));
    csv_ok = 0;
  }
  MPI_Bcast(&csv_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!csv_ok) {
    MPI_Finalize();
    return 1;
  }
  if (b.csv)
    fprintf(b.csv,
            "shape,p,q,kind,algorithm,bytes,median_s,min_s,ratio_to_baseline,bound_s,runs\n");
  const int npoints = (b.inter_mode ? nshapes : nprocs) * b.nsizes;
  if (wrank == 0) {
    printf("# cpl-bench %s: %d ranks, at least %d runs per variant (interleaved; more to fill "
           "%g s), %d warm-up,\n# %d untimed run%s before each; times in ms, median and min of the "
           "slowest rank; ratio = median(%s) / median(variant)\n",
           CPL_VERSION_STRING, wsize, b.reps, b.min_time, b.warmup, b.prime,
           b.prime == 1 ? "" : "s", b.names[b.baseline]);
    printf("%-7s %9s  %-15s %10s %10s  %7s%s  runs\n", "shape", "size", "algorithm", "median",
           "min", "ratio", b.rate > 0 ? "   bound   med/bnd" : "");
  }
  for (int si = 0; si < (b.inter_mode ? nshapes : nprocs); si++) {
    int p, q = 0; /* checked above */
    if (b.inter_mode) sscanf(shapes[si], "%d:%d", &p, &q);
    else sscanf(procs[si], "%d", &p);
    char shape[32];
    if (b.inter_mode) snprintf(shape, sizeof shape, "%d|%d", p, q);
    else snprintf(shape, sizeof shape, "%d", p);
    const int n = p + q;
    const int color = wrank < (b.inter_mode ? n : p) ? 0 : MPI_UNDEFINED;
    MPI_Comm all;
    MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &all);
    if (color == 0) {
      unsigned char *rbuf = malloc((size_t)maxk * (size_t)n + 1);
      unsigned char *sbuf = malloc((size_t)maxk + 1);
      int *cd = malloc(sizeof(int) * 2 * (size_t)(2 * n));
      if (!rbuf || !sbuf || !cd) {
        fprintf(stderr, "cpl-bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      if (b.inter_mode) {
        const int sender = wrank < p;
        MPI_Comm local, inter;
        MPI_Comm_split(all, sender, wrank, &local);
        MPI_Intercomm_create(local, 0, all, sender ? p : 0, 4242, &inter);
        int lrank;
        MPI_Comm_rank(local, &lrank);
        for (int s = 0; s < b.nsizes; s++) {
          const long k = b.sizes[s];
          for (int i = 0; i < p; i++) cd[i] = (int)k, cd[2 * n + i] = (int)(i * k);
          inter_ctx x = {sender, p, lrank, k, inter, all, sbuf, rbuf, cd, cd + 2 * n};
          point(&b, shape, p, q, k, wrank == 0, inter_thunk, &x, si * b.nsizes + s + 1, npoints);
        }
        MPI_Comm_free(&inter);
        MPI_Comm_free(&local);
      } else {
        int r;
        MPI_Comm_rank(all, &r);
        for (int s = 0; s < b.nsizes; s++) {
          intra_ctx x = {all, p, r, b.sizes[s], rbuf};
          point(&b, shape, p, 0, b.sizes[s], r == 0, intra_thunk, &x, si * b.nsizes + s + 1,
                npoints);
        }
      }
      free(rbuf);
      free(sbuf);
      free(cd);
      MPI_Comm_free(&all);
    }
    wait_for_all(color != 0);
  }
  if (b.csv) fclose(b.csv);
  MPI_Finalize();
  return 0;
}
