/*
 * cpl-bench --calibrate: measure the cost model's parameters on the
 * machine the job runs on and write the tuning file the library reads
 * (coll/tuning_file.h).
 *
 * Every measurement runs on all ranks at once, so the numbers include the
 * load of a full job (on oversubscribed cores, the scheduling of the
 * other ranks). Per size, the median over repetitions on each rank or
 * pair, then the median over them:
 *  - shift: every rank sends n bytes to its right neighbour and receives
 *    n from its left, CPLI_SHIFT_ROUNDS rounds back to back; one round's
 *    time. A collective's round is such a shift (the ring's steps, Alg.
 *    7's and Bruck's rounds), so alpha is the smallest size's shift round
 *    less its bytes' beta n. A ping-pong between two idle peers is no
 *    estimate of it: on the emulated cluster (8 ranks, 2 cores) a 1-byte
 *    shift round took 44-80 us where the half round trip took 13-40 us,
 *    and the ping-pong fit's intercept ranged from 9 to 42 us from one
 *    calibration to the next;
 *  - ping-pong (ranks pair up, 0-1, 2-3, ...; an odd last rank idles):
 *    half the round trip of one message of n bytes, fitted by least
 *    squares to a + b n (weights 1/t^2: every size counts alike), for
 *    beta where the stream fit fails and for alpha where the shift gives
 *    no positive latency (the fit's intercept, else the smallest
 *    message's time: a shaper's idle credit makes large messages after a
 *    pause look faster than a stream);
 *  - streaming: B and 2B back-to-back messages of n bytes one way, then a
 *    1-byte answer; (T(2B) - T(B)) / B is one more message of a stream
 *    (start-up and answer cancel), fitted to overhead + beta n: beta is
 *    the rate a stream reaches, overhead what one more message of a
 *    stream costs (what a cut costs, sched/cut.h). Where that fit is poor
 *    (R^2 < 0.5) or not positive, beta comes from the ping-pong fit.
 * Fit quality: R^2 and the largest relative residual of each fit.
 *
 * Then, with those parameters set, the switch points of `auto`'s rule for
 * small blocks (cost.c, cpli_inter_pick_tuned, cpli_intra_pick_tuned):
 * the job's halves as p|q (N/2 | N - N/2, N >= 4) run the inter-group
 * allgather, and groups of 3 and of the whole job (N >= 3) the
 * intra-group one, with root and with the model's pick, alternating, at
 * blocks of 256 B to 16 KiB; inter_root_max is the largest block of the
 * first run of sizes root was faster at by more than ROOT_MARGIN, with
 * no size below where it was slower by as much (ties before the run do
 * not count; 0: no such run), intra_root_bytes what
 * member 0 of root's broadcast sends with that largest block
 * (cpli_intra_root_sends), the largest of the two groups' that stays
 * below what member 0 sent where either group's run ended: what member 0
 * can send grows with the group as well as the blocks. Root sends p + q - 1 messages (intra
 * 2 (p - 1)) and the others p q (p ceil(log2 p)) or more, in fewer hops:
 * which wins is the machine's (on the emulated cluster, 8 ranks on 2
 * cores, every message costs CPU the others wait for).
 */
#include "tools/calibrate.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/cost.h"
#include "coll/tuning.h"
#include "coll/tuning_file.h"
#include "coupler.h"

#define TAG 5150
#define MAXS CPLI_CALIBRATE_MAXS
/* Shift rounds per timed run: enough that the run's start (the barrier's
 * skew) is a small part of it. */
#define CPLI_SHIFT_ROUNDS 16

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Weighted least squares t = a + b x with weights 1/t^2; R^2 (of t, not
 * weighted) and the largest |residual| / t. */
typedef struct fit {
  double a, b, r2, maxrel;
} fit;

static fit lsq(const double *x, const double *t, int n) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < n; i++) {
    const double w = 1 / (t[i] * t[i]);
    sw += w, sx += w * x[i], sy += w * t[i], sxx += w * x[i] * x[i], sxy += w * x[i] * t[i];
  }
  fit f = {0};
  const double d = sw * sxx - sx * sx;
  if (n < 2 || d == 0) return f;
  f.b = (sw * sxy - sx * sy) / d;
  f.a = (sy - f.b * sx) / sw;
  double mean = 0, ss = 0, sr = 0;
  for (int i = 0; i < n; i++) mean += t[i] / n;
  for (int i = 0; i < n; i++) {
    const double r = t[i] - (f.a + f.b * x[i]);
    ss += (t[i] - mean) * (t[i] - mean), sr += r * r;
    if (fabs(r) / t[i] > f.maxrel) f.maxrel = fabs(r) / t[i];
  }
  f.r2 = ss > 0 ? 1 - sr / ss : 1;
  return f;
}

/* One measurement on this rank's pair: median seconds over reps. stream
 * 0: half a round trip of n bytes; else `stream` messages one way then a
 * 1-byte answer, whole time. */
static double measure(MPI_Comm comm, int me, int peer, long n, int stream, int reps, char *buf,
                      MPI_Request *req, MPI_Status *st) {
  double *t = malloc(sizeof *t * (size_t)reps);
  if (!t) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int r = -2; r < reps; r++) { /* two warm-ups */
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    if (!stream) {
      if (me < peer) {
        MPI_Send(buf, (int)n, MPI_BYTE, peer, TAG, comm);
        MPI_Recv(buf, (int)n, MPI_BYTE, peer, TAG, comm, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, (int)n, MPI_BYTE, peer, TAG, comm, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)n, MPI_BYTE, peer, TAG, comm);
      }
    } else if (me < peer) {
      for (int i = 0; i < stream; i++)
        MPI_Isend(buf + (size_t)i * (size_t)n, (int)n, MPI_BYTE, peer, TAG, comm, &req[i]);
      MPI_Waitall(stream, req, st);
      MPI_Recv(buf, 1, MPI_BYTE, peer, TAG, comm, MPI_STATUS_IGNORE);
    } else {
      for (int i = 0; i < stream; i++)
        MPI_Irecv(buf + (size_t)i * (size_t)n, (int)n, MPI_BYTE, peer, TAG, comm, &req[i]);
      MPI_Waitall(stream, req, st);
      MPI_Send(buf, 1, MPI_BYTE, peer, TAG, comm);
    }
    const double dt = MPI_Wtime() - t0;
    if (r >= 0) t[r] = stream ? dt : dt / 2;
  }
  const double m = median(t, reps);
  free(t);
  return m;
}

/* One round of a shift on comm, n bytes each way: median seconds over
 * reps runs of CPLI_SHIFT_ROUNDS rounds. */
static double measure_shift(MPI_Comm comm, long n, int reps, char *buf) {
  int me, size;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  const int right = (me + 1) % size, left = (me + size - 1) % size;
  double *t = malloc(sizeof *t * (size_t)reps);
  if (!t) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int r = -2; r < reps; r++) { /* two warm-ups */
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < CPLI_SHIFT_ROUNDS; i++)
      MPI_Sendrecv(buf, (int)n, MPI_BYTE, right, TAG + 1, buf + n, (int)n, MPI_BYTE, left, TAG + 1,
                   comm, MPI_STATUS_IGNORE);
    if (r >= 0) t[r] = (MPI_Wtime() - t0) / CPLI_SHIFT_ROUNDS;
  }
  const double m = median(t, reps);
  free(t);
  return m;
}

/* Root must beat the model's pick by this much at a size to be taken. */
#define ROOT_MARGIN 0.03
static const long root_sizes[] = {256, 512, 1024, 2048, 4096, 8192, 16384};
#define NROOT ((int)(sizeof root_sizes / sizeof *root_sizes))

/* The communicators one direction's allgather runs on: inter-group, the
 * job's halves (p = N/2 senders first); intra-group, the first p ranks
 * (the others only time nothing alongside). */
typedef struct small_run {
  int intra, p, q, sender, member;
  MPI_Comm local, comm; /* comm: the intercommunicator, or the group's */
  char *sbuf, *rbuf;
} small_run;

/* One timed allgather of k bytes per block with algorithm alg: the
 * slowest rank's seconds (on every rank). Aborts on failure: nothing can
 * be measured on a job that fails its collectives. */
static double time_small(const small_run *x, long k, int alg) {
  cpl_coll_options o;
  cpl_coll_options_init(&o);
  int rc = CPL_OK;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  if (x->member && x->intra) {
    o.intra = (cpl_intra_algorithm)alg;
    rc = cpl_intra_allgather(x->sbuf, (int)k, MPI_BYTE, x->rbuf, (int)k, MPI_BYTE, x->comm, &o);
  } else if (x->member) {
    o.inter = (cpl_inter_algorithm)alg;
    rc = cpl_inter_allgather(x->sbuf, (int)k, MPI_BYTE, x->rbuf, (int)k, MPI_BYTE,
                             x->sender ? CPL_SENDER : CPL_RECEIVER, x->comm, &o);
  }
  double dt = MPI_Wtime() - t0, slowest;
  if (rc != CPL_OK) {
    fprintf(stderr, "cpl-bench --calibrate: %s %s at %ld bytes: %s\n", x->intra ? "intra" : "inter",
            x->intra ? cpl_intra_algorithm_name((cpl_intra_algorithm)alg)
                     : cpl_inter_algorithm_name((cpl_inter_algorithm)alg),
            k, cpl_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* Sets CPL_ALPHA, CPL_BETA, CPL_OVERHEAD to v's values (restore = 0) or
 * back to what they were (restore = 1), and unsets CPL_INTER_ALGORITHM
 * and CPL_INTRA_ALGORITHM meanwhile (they would override the algorithms
 * compared). */
static void model_env(const cpli_tuning_vals *v, int restore) {
  static const char *const names[] = {"CPL_ALPHA", "CPL_BETA", "CPL_OVERHEAD",
                                      "CPL_INTER_ALGORITHM", "CPL_INTRA_ALGORITHM"};
  enum { NV = sizeof names / sizeof *names };
  static char *saved[NV];
  for (int i = 0; i < NV; i++) {
    if (restore) {
      if (saved[i]) setenv(names[i], saved[i], 1);
      else unsetenv(names[i]);
      free(saved[i]);
      saved[i] = NULL;
      continue;
    }
    const char *e = getenv(names[i]);
    saved[i] = e ? strdup(e) : NULL;
    const double x = i == 0 ? v->alpha : i == 1 ? v->beta : i == 2 ? v->overhead : 0;
    char num[32];
    snprintf(num, sizeof num, "%.6g", x);
    if (x > 0) setenv(names[i], num, 1);
    else unsetenv(names[i]);
  }
}

/* The switch point of auto's small-block rule for one direction (see the
 * top), on every rank: inter-group at N/2|N - N/2, intra-group in a group
 * of g; -1 when the job is too small (inter: 4 ranks, intra: g). *lost is
 * the first block root did not win at (0: none). Rank 0 prints the
 * table. */
static long measure_root_max(const cpli_tuning_vals *v, int intra, int g, int reps, int quiet,
                             long *lost) {
  *lost = 0;
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < (intra ? g : 4) || (intra && g < 3)) return -1;
  small_run x = {.intra = intra, .p = intra ? g : n / 2, .q = intra ? g : n - n / 2};
  x.sender = intra || me < x.p;
  x.member = !intra || me < g;
  if (intra) {
    MPI_Comm_split(MPI_COMM_WORLD, x.member ? 0 : MPI_UNDEFINED, me, &x.comm);
  } else {
    MPI_Comm_split(MPI_COMM_WORLD, x.sender, me, &x.local);
    MPI_Intercomm_create(x.local, 0, MPI_COMM_WORLD, x.sender ? x.p : 0, TAG + 2, &x.comm);
  }
  model_env(v, 0);
  const long kmax = root_sizes[NROOT - 1];
  x.sbuf = malloc((size_t)kmax), x.rbuf = malloc((size_t)kmax * (size_t)x.p);
  double *tr = malloc(sizeof *tr * (size_t)reps), *tm = malloc(sizeof *tm * (size_t)reps);
  if (!x.sbuf || !x.rbuf || !tr || !tm) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(x.sbuf, 3, (size_t)kmax);
  long root_max = 0;
  if (me == 0) {
    if (intra)
      printf("small blocks, intra-group, p = %d: root (2 (p - 1) messages) and the model's pick",
             g);
    else
      printf("small blocks, inter-group, %d|%d: root (p + q - 1 messages) and the model's pick",
             x.p, x.q);
    printf(" (medians of %d, slowest rank, ms)\n%10s %10s %12s %10s %7s\n", reps, "bytes", "root",
           "model's", "ms", "ratio");
  }
  for (int i = 0; i < NROOT; i++) {
    const long k = root_sizes[i];
    const size_t m = (size_t)(x.p * k);
    const int pick = intra ? (int)cpli_intra_pick_ab(g, m, (size_t)k, 1, v->alpha, v->beta)
                           : (int)cpli_inter_pick_ab(x.p, x.q, m, v->alpha, v->beta);
    const int root = intra ? (int)CPL_INTRA_ROOT : (int)CPL_INTER_ROOT;
    for (int r = -2; r < reps; r++) { /* two warm-ups; alternating */
      const double a = time_small(&x, k, root), b = time_small(&x, k, pick);
      if (r >= 0) tr[r] = a, tm[r] = b;
    }
    const double mr = median(tr, reps), mm = median(tm, reps);
    /* Ties before root's first win do not count (at 256 B a 2% win had
     * set the bound to 0, where 512 B and 1 KiB won by 9-11%); the run of
     * wins ends at the first block root does not win, or at a loss. */
    const int win = (mr < (1 - ROOT_MARGIN) * mm), loss = (mr > (1 + ROOT_MARGIN) * mm);
    if (!*lost && (loss || (!win && root_max > 0))) *lost = k;
    if (win && !*lost) root_max = k;
    if (me == 0)
      printf("%10ld %10.3f %12s %10.3f %7.2f\n", k, mr * 1e3,
             intra ? cpl_intra_algorithm_name((cpl_intra_algorithm)pick)
                   : cpl_inter_algorithm_name((cpl_inter_algorithm)pick),
             mm * 1e3, mm / mr);
    if (me == 0 && !quiet)
      fprintf(stderr, "[small blocks, %s] %ld bytes done\n", intra ? "intra" : "inter", k);
  }
  model_env(v, 1);
  free(x.sbuf), free(x.rbuf), free(tr), free(tm);
  if (x.comm != MPI_COMM_NULL) MPI_Comm_free(&x.comm);
  if (!intra) MPI_Comm_free(&x.local);
  return root_max;
}

/* Median over the ranks that took part (rank 0's result). */
static double over_ranks(double v, int took_part, MPI_Comm world) {
  int n, me;
  MPI_Comm_size(world, &n);
  MPI_Comm_rank(world, &me);
  double *all = me == 0 ? malloc(sizeof *all * (size_t)n) : NULL;
  double x = took_part ? v : -1;
  MPI_Gather(&x, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, world);
  double m = 0;
  if (me == 0) {
    int k = 0;
    for (int i = 0; i < n; i++)
      if (all[i] >= 0) all[k++] = all[i];
    m = k ? median(all, k) : 0;
    free(all);
  }
  return m;
}

int cpli_calibrate(const char *out, const long *sizes, int nsizes, int reps, int quiet) {
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (nsizes < 2 || nsizes > CPLI_CALIBRATE_MAXS) {
    if (me == 0)
      fprintf(stderr, "cpl-bench --calibrate: give 2 to %d sizes (got %d)\n", CPLI_CALIBRATE_MAXS,
              nsizes);
    return 2;
  }
  if (n < 2) {
    fprintf(stderr, "cpl-bench --calibrate: needs at least 2 ranks (mpiexec -n 2 or more)\n");
    return 2;
  }
  char pathbuf[4096];
  int explicit_ = 0;
  const char *path = out ? out : cpli_tuning_file_path(pathbuf, sizeof pathbuf, &explicit_);
  if (!path) {
    if (me == 0)
      fprintf(stderr, "cpl-bench --calibrate: no place for the tuning file: set --out, "
                      "CPL_TUNING_FILE, XDG_CONFIG_HOME or HOME\n");
    return 2;
  }
  const int peer = me ^ 1, inpair = peer < n;
  /* streams: B and 2B messages, B from 4 to 32, 2B at most 16 MiB where
   * it can */
  int bs[MAXS], maxb = 1;
  size_t bufsize = 1;
  for (int i = 0; i < nsizes; i++) {
    long b = sizes[i] ? (8L << 20) / sizes[i] : 32;
    bs[i] = (int)(b > 32 ? 32 : b < 4 ? 4 : b);
    maxb = 2 * bs[i] > maxb ? 2 * bs[i] : maxb;
    if ((size_t)(2 * bs[i]) * (size_t)sizes[i] > bufsize)
      bufsize = (size_t)(2 * bs[i]) * (size_t)sizes[i];
  }
  char *buf = malloc(bufsize + 64);
  MPI_Request *req = malloc(sizeof *req * (size_t)maxb);
  MPI_Status *sts = malloc(sizeof *sts * (size_t)maxb);
  if (!buf || !req || !sts) {
    fprintf(stderr, "cpl-bench --calibrate: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(buf, 7, bufsize + 64);
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, inpair ? me / 2 : MPI_UNDEFINED, me, &pair);
  const int pme = me & 1, ppeer = pme ^ 1;
  double x[MAXS], pp[MAXS], st[MAXS], per[MAXS], sh[MAXS];
  for (int i = 0; i < nsizes; i++) { /* connections, buffers, caches */
    measure_shift(MPI_COMM_WORLD, sizes[i], 1, buf);
    if (inpair) measure(pair, pme, ppeer, sizes[i], 0, 1, buf, req, sts);
  }
  for (int i = 0; i < nsizes; i++) {
    const long s = sizes[i];
    double a = 0, c = 0, c2 = 0;
    if (inpair) {
      a = measure(pair, pme, ppeer, s, 0, reps, buf, req, sts);
      c = measure(pair, pme, ppeer, s, bs[i], reps, buf, req, sts);
      c2 = measure(pair, pme, ppeer, s, 2 * bs[i], reps, buf, req, sts);
    }
    const double shift = measure_shift(MPI_COMM_WORLD, s, reps, buf);
    x[i] = (double)s;
    sh[i] = over_ranks(shift, 1, MPI_COMM_WORLD);
    pp[i] = over_ranks(a, inpair, MPI_COMM_WORLD);
    st[i] = over_ranks(c2, inpair, MPI_COMM_WORLD);
    per[i] = over_ranks((c2 - c) / bs[i], inpair, MPI_COMM_WORLD);
    if (me == 0 && !quiet) fprintf(stderr, "[%d/%d] %ld bytes done\n", i + 1, nsizes, s);
  }
  if (pair != MPI_COMM_NULL) MPI_Comm_free(&pair);
  int rc = 0;
  cpli_tuning_vals v = {0};
  fit fp = {0}, fs = {0};
  if (me == 0) {
    int smallest = 0;
    for (int i = 1; i < nsizes; i++)
      if (x[i] < x[smallest]) smallest = i;
    const double t1 = pp[smallest];
    fp = lsq(x, pp, nsizes);
    for (int i = 0; i < nsizes; i++) per[i] = fmax(per[i], 1e-9); /* noise below 0 */
    fs = lsq(x, per, nsizes);
    const int stream_ok = fs.b > 0 && fs.r2 >= 0.5;
    v.beta = stream_ok ? fs.b : fp.b;
    int largest = 0;
    for (int i = 1; i < nsizes; i++)
      if (x[i] > x[largest]) largest = i;
    const int crude = !(v.beta > 0) && x[largest] > 0; /* noise swamped both fits */
    if (crude) v.beta = pp[largest] / x[largest];
    const double shift_alpha = sh[smallest] - (v.beta > 0 ? v.beta * x[smallest] : 0);
    v.alpha = shift_alpha > 0 ? shift_alpha : fp.a > 0 ? fp.a : t1;
    v.overhead = stream_ok && fs.a > 0 ? fs.a : 0; /* else the library uses alpha */
    printf("# cpl-bench --calibrate: %d ranks, %d pair%s measuring at once, %d runs per size "
           "(medians)\n",
           n, n / 2, n / 2 == 1 ? "" : "s", reps);
    printf("%10s %10s %14s %8s %14s %14s\n", "bytes", "shift_us", "pingpong_us", "stream",
           "stream_us", "per_msg_us");
    for (int i = 0; i < nsizes; i++)
      printf("%10.0f %10.3f %14.3f %8d %14.3f %14.3f\n", x[i], sh[i] * 1e6, pp[i] * 1e6, 2 * bs[i],
             st[i] * 1e6, per[i] * 1e6);
    printf("(shift: one round of all ranks sending to the right and receiving from the left;\n"
           " pingpong: half a round trip; stream: that many messages one way and an answer;\n"
           " per_msg: one more message of a stream, from streams of that many and half as many)\n");
    printf("alpha: %s\n", shift_alpha > 0 ? "the smallest size's shift round, less its bytes"
                          : fp.a > 0 ? "the shift gave no positive latency: the ping-pong fit's"
                                       " intercept"
                                     : "the shift gave no positive latency: the smallest "
                                       "message's ping-pong");
    printf("ping-pong fit: %.4g s + %.4g s/B (R^2 %.4f, largest residual %.1f%%)\n", fp.a, fp.b,
           fp.r2, 100 * fp.maxrel);
    printf("stream fit: overhead %.4g s per message + %.4g s/B = %.2f MB/s (R^2 %.4f, largest "
           "residual %.1f%%)%s\n",
           fs.a, fs.b, fs.b > 0 ? 1e-6 / fs.b : 0, fs.r2, 100 * fs.maxrel,
           !stream_ok ? "; poor or not positive: beta from the ping-pong, overhead left out (the "
                        "library uses alpha)"
           : fs.a > 0 ? ""
                      : "; overhead not positive: left out (the library uses alpha)");
    if (crude)
      printf("no fit gave a positive beta (a noisy machine?): beta = the largest message's "
             "time / its size, an upper bound; measure again with more --reps\n");
    if (!(v.beta > 0)) {
      fprintf(stderr, "cpl-bench --calibrate: no positive beta could be fitted; nothing written\n");
      rc = 1;
    } else if (!cpli_model_value_ok(0, v.alpha) || !cpli_model_value_ok(1, v.beta)) {
      /* the library would refuse the file (tuning_file.h) */
      fprintf(stderr,
              "cpl-bench --calibrate: alpha %g s or beta %g s/B lies outside what the library "
              "takes (alpha %s, beta %s); nothing written\n",
              v.alpha, v.beta, cpli_model_range(0), cpli_model_range(1));
      rc = 1;
    }
    if (v.overhead > 0 && !cpli_model_value_ok(0, v.overhead)) {
      printf("overhead %g s lies outside %s s: left out (the library uses alpha)\n", v.overhead,
             cpli_model_range(0));
      v.overhead = 0;
    }
    fflush(stdout);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  double model[3] = {v.alpha, v.beta, v.overhead};
  MPI_Bcast(model, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  v.alpha = model[0], v.beta = model[1], v.overhead = model[2];
  /* intra: in a group of 3 and the whole job. Each group's bound on what
   * member 0 sends lies between its last won and first lost block's; the
   * bound kept is the largest won one below every group's first loss. */
  long lost[3] = {0};
  const long inter_max = rc == 0 ? measure_root_max(&v, 0, 0, 4 * reps + 1, quiet, &lost[0]) : -1;
  const long intra3 = rc == 0 ? measure_root_max(&v, 1, 3, 4 * reps + 1, quiet, &lost[1]) : -1;
  const long intran =
      rc == 0 && n > 3 ? measure_root_max(&v, 1, n, 4 * reps + 1, quiet, &lost[2]) : -1;
  if (me == 0 && rc == 0) {
    const int gs[2] = {3, n};
    const long won[2] = {intra3, intran};
    size_t first_loss = SIZE_MAX, bound = 0;
    for (int i = 0; i < 2; i++)
      if (won[i] >= 0 && lost[1 + i] > 0) {
        const size_t l = cpli_intra_root_sends(gs[i], (size_t)lost[1 + i]);
        if (l < first_loss) first_loss = l;
      }
    for (int i = 0; i < 2; i++) {
      const size_t w = won[i] > 0 ? cpli_intra_root_sends(gs[i], (size_t)won[i]) : 0;
      if (w < first_loss && w > bound) bound = w;
    }
    const long got[2] = {inter_max, intra3};
    for (int d = 0; d < 2; d++) {
      const char *name = d ? "intra_root_bytes" : "inter_root_max";
      if (got[d] >= 0) {
        const size_t val = d ? bound : (size_t)got[d];
        *(d ? &v.intra_root_bytes : &v.inter_root_max) = val;
        *(d ? &v.intra_root_bytes_set : &v.inter_root_max_set) = 1;
        printf("%s: %zu (%s)\n", name, val,
               !val ? "root was not faster at any block before it was slower"
               : d  ? "what member 0 sends with the largest block of root's first run of "
                      "wins, below where either group's run ended"
                    : "the largest block of root's first run of wins, none lost below");
      } else {
        printf("%s: not measured (fewer than %d ranks; the library's default applies)\n", name,
               d ? 3 : 4);
      }
    }
    char host[256] = "?", when[64] = "?", comment[1024], err[600];
    gethostname(host, sizeof host - 1);
    const time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    snprintf(comment, sizeof comment,
             "Coupler tuning file, written by cpl-bench --calibrate (%s)\n"
             "on %s at %s: %d ranks, %d runs per size, %ld..%ld bytes\n"
             "ping-pong fit R^2 %.4f (largest residual %.1f%%), stream fit R^2 %.4f (%.1f%%)\n"
             "CPL_ALPHA, CPL_BETA, CPL_OVERHEAD, CPL_CHUNK, CPL_INTER_ROOT_MAX and\n"
             "CPL_INTRA_ROOT_BYTES override these values",
             CPL_VERSION_STRING, host, when, n, reps, sizes[0], sizes[nsizes - 1], fp.r2,
             100 * fp.maxrel, fs.r2, 100 * fs.maxrel);
    if (strcmp(path, "-") == 0) {
      printf("alpha = %.6g\nbeta = %.6g\n", v.alpha, v.beta);
      if (v.overhead > 0) printf("overhead = %.6g\n", v.overhead);
      if (v.inter_root_max_set) printf("inter_root_max = %zu\n", v.inter_root_max);
      if (v.intra_root_bytes_set) printf("intra_root_bytes = %zu\n", v.intra_root_bytes);
    } else if (cpli_tuning_file_write(path, &v, comment, err, sizeof err) != CPL_OK) {
      fprintf(stderr, "cpl-bench --calibrate: %s\n", err);
      rc = 1;
    } else {
      printf("wrote %s: alpha = %.4g s, beta = %.4g s/B (%.2f MB/s), overhead = %s, "
             "inter_root_max = %s, intra_root_bytes = %s\n",
             path, v.alpha, v.beta, 1e-6 / v.beta, v.overhead > 0 ? "measured" : "alpha",
             v.inter_root_max_set ? "measured" : "not measured",
             v.intra_root_bytes_set ? "measured" : "not measured");
    }
    fflush(stdout);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(buf);
  free(req);
  free(sts);
  return rc;
}
