/*
 * End-to-end data-layer test: one program, launched by cpl-run as every
 * component of a small workflow (tests/data/ YAML templates). argv: scenario.
 * The component name says the role: prod* publish, cons* consume.
 *
 * Values are a function of (step, dataset, global index), so a consumer
 * checks every element it gets without knowing the decomposition, and the
 * decomposition is irregular on purpose (zero-size blocks, 2-D grids,
 * blocks changing mid-stream).
 */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/resource.h>
#include <unistd.h>

#include <coupler.h>

/* Built with AddressSanitizer (gcc or clang): its shadow memory needs far
 * more address space than the nomem scenario's limit leaves. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED_ADDRESSES 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED_ADDRESSES 1
#endif
#endif
#ifndef SANITIZED_ADDRESSES
#define SANITIZED_ADDRESSES 0
#endif

static int wrank;
static const char *comp_name = "?";
static int failures;

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL %s rank %d %s:%d: ", comp_name, wrank, __FILE__, __LINE__);            \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

#define OK(call)                                                                                   \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != CPL_OK) {                                                                           \
      fprintf(stderr, "FAIL %s rank %d %s:%d: %s -> %s: %s\n", comp_name, wrank, __FILE__,         \
              __LINE__, #call, cpl_strerror(rc_), cpl_last_error());                               \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                                \
    }                                                                                              \
  } while (0)

/* Every MPI_Type_commit the process makes, Coupler's included (this
 * definition takes the place of MPICH's; scenario select_steady). */
static long type_commits;
int MPI_Type_commit(MPI_Datatype *type) {
  type_commits++;
  return PMPI_Type_commit(type);
}

/* An interrupt check as a C program writes one (scenario interrupt). */
static volatile sig_atomic_t alarmed;
static void on_alarm(int sig) {
  (void)sig;
  alarmed = 1;
}
static int alarm_check(void *arg) {
  (void)arg;
  return alarmed;
}

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* The value of element `idx` (row-major global index) of dataset `id`. */
static double val(long step, int id, unsigned long long idx) {
  return (double)(step * 100003 + id * 7919) + (double)idx;
}

/* Split n into `parts` irregular pieces (piece i weighs i+1); `skip` >= 0
 * names a part that gets nothing. */
static void split(unsigned long long n, int parts, int i, int skip, hsize_t *start,
                  hsize_t *count) {
  unsigned long long w = 0, before = 0, mine = 0;
  for (int k = 0; k < parts; k++) {
    unsigned long long wk = k == skip ? 0 : (unsigned long long)k + 1;
    if (k < i) before += wk;
    if (k == i) mine = wk;
    w += wk;
  }
  *start = n * before / w;
  *count = n * (before + mine) / w - *start;
}

/* ----------------------------------------------------------- producer */

typedef struct dset {
  const char *name;
  int id, rank;
  hsize_t dims[3];
  hid_t type;
} dset;

/* Fill this rank's block of d (start/count) with its values in type. */
static void *fill(const dset *d, long step, const hsize_t *start, const hsize_t *count) {
  size_t n = 1;
  for (int k = 0; k < d->rank; k++) n *= count[k];
  size_t es = H5Tget_size(d->type);
  char *buf = malloc(n * es + 1);
  hsize_t idx[3] = {0};
  for (size_t e = 0; e < n; e++) {
    unsigned long long g = 0;
    for (int k = 0; k < d->rank; k++) g = g * d->dims[k] + start[k] + idx[k];
    double v = val(step, d->id, g);
    if (H5Tequal(d->type, H5T_NATIVE_DOUBLE) > 0) ((double *)buf)[e] = v;
    else if (H5Tequal(d->type, H5T_NATIVE_INT32) > 0) ((int *)buf)[e] = (int)v;
    else ((unsigned short *)buf)[e] = (unsigned short)((unsigned long long)v & 0xffff);
    for (int k = d->rank - 1; k >= 0 && ++idx[k] == count[k]; k--) idx[k] = 0;
  }
  return buf;
}

/* Blocks of rank r of p for dataset d at step. Step >= 3 changes them. */
static void blocks(const dset *d, int r, int p, long step, hsize_t *start, hsize_t *count) {
  for (int k = 0; k < d->rank; k++) {
    start[k] = 0;
    count[k] = d->dims[k];
  }
  if (d->id == 0) { /* 1-D: last rank empty (if p > 1); even after step 3 */
    if (step >= 3) split(d->dims[0], p, p - 1 - r, -1, start, count);
    else split(d->dims[0], p, r, p > 1 ? p - 1 : -1, start, count);
  } else if (d->id == 1) { /* 2-D grid pr x pc */
    int pr = 1;
    for (int k = 1; k * k <= p; k++)
      if (p % k == 0) pr = k;
    int pc = p / pr;
    split(d->dims[0], pr, r / pc, -1, &start[0], &count[0]);
    split(d->dims[1], pc, r % pc, -1, &start[1], &count[1]);
  } else if (d->id == 2) { /* 3-D: split dim 1 */
    split(d->dims[1], p, r, -1, &start[1], &count[1]);
  } else if (r != 0) { /* late dataset: all on rank 0 */
    count[0] = 0;
  }
}

static dset dsets[4];

static void init_dsets(void) {
  dsets[0] = (dset){"a1", 0, 1, {37, 0, 0}, H5T_NATIVE_INT32};
  dsets[1] = (dset){"b2", 1, 2, {13, 11, 0}, H5T_NATIVE_DOUBLE};
  dsets[2] = (dset){"c3", 2, 3, {4, 7, 5}, H5T_NATIVE_USHORT};
  dsets[3] = (dset){"late", 3, 1, {5, 0, 0}, H5T_NATIVE_DOUBLE};
}

/* One full step of the standard datasets; `late` from step 3 on. */
static int publish(cpl_output *out, long step, int r, int p) {
  OK(cpl_output_begin_step(out, -1));
  void *bufs[4] = {0};
  int nd = step >= 3 ? 4 : 3;
  for (int i = 0; i < nd; i++) {
    hsize_t start[3], count[3];
    blocks(&dsets[i], r, p, step, start, count);
    bufs[i] = fill(&dsets[i], step, start, count);
    OK(cpl_output_put(out, dsets[i].name, dsets[i].type, dsets[i].rank, dsets[i].dims, start, count,
                      bufs[i]));
  }
  /* Refused calls change nothing, and say the call, port, step and
   * dataset or attribute (built only when a call fails). */
  char want[160];
  const hsize_t one_dim = 1, zero = 0;
  snprintf(want, sizeof want, ", step %ld, dataset \"a1\": put twice in one step", step);
  CHECK(
      cpl_output_put(out, "a1", H5T_NATIVE_INT32, 1, &one_dim, &zero, &zero, NULL) == CPL_ERR_ARG &&
          !strncmp(cpl_last_error(), "cpl_output_put: port ", 21) && strstr(cpl_last_error(), want),
      "put twice: %s", cpl_last_error());
  snprintf(want, sizeof want, ", step %ld, dataset \"zz\": not a valid HDF5 datatype", step);
  CHECK(
      cpl_output_put(out, "zz", H5I_INVALID_HID, 1, &one_dim, &zero, &zero, NULL) == CPL_ERR_ARG &&
          !strncmp(cpl_last_error(), "cpl_output_put: port ", 21) && strstr(cpl_last_error(), want),
      "put of a bad type: %s", cpl_last_error());
  CHECK(cpl_output_attr(out, "a1", "bad", H5I_INVALID_HID, 1, &zero) == CPL_ERR_ARG &&
            !strncmp(cpl_last_error(), "cpl_output_attr: port ", 22) &&
            strstr(cpl_last_error(),
                   ", dataset \"a1\": attribute \"bad\": not a valid HDF5 datatype"),
        "attribute of a bad type: %s", cpl_last_error());
  double t = 0.5 * (double)step;
  OK(cpl_output_attr(out, NULL, "time", H5T_NATIVE_DOUBLE, 1, &t));
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, 6);
  OK(cpl_output_attr(out, "b2", "units", str, 1, "kelvin"));
  H5Tclose(str);
  /* Interleaved, one set again: a dataset's attributes keep the order in
   * which they were first set. */
  const int one = 1, two = 2;
  OK(cpl_output_attr(out, "a1", "y", H5T_NATIVE_INT, 1, &one));
  OK(cpl_output_attr(out, "b2", "scale", H5T_NATIVE_INT, 1, &two));
  OK(cpl_output_attr(out, "a1", "x", H5T_NATIVE_INT, 1, &one));
  OK(cpl_output_attr(out, "a1", "y", H5T_NATIVE_INT, 1, &two));
  int rc = cpl_output_end_step(out);
  for (int i = 0; i < nd; i++) free(bufs[i]);
  return rc;
}

/* ----------------------------------------------------------- consumer */

/* Check a whole dataset (stored type) and a sub-box (converted). */
static void check_step(cpl_input *in, long step) {
  int nd;
  OK(cpl_input_dataset_count(in, &nd));
  CHECK(nd == (step >= 3 ? 4 : 3), "step %ld: %d datasets", step, nd);
  for (int i = 0; i < nd; i++) {
    const dset *d = &dsets[i];
    cpl_dataset_info info;
    OK(cpl_input_inquire(in, d->name, &info));
    CHECK(info.rank == d->rank && H5Tequal(info.type, d->type) > 0, "%s: rank/type", d->name);
    size_t n = 1;
    for (int k = 0; k < d->rank; k++) {
      CHECK(info.dims[k] == d->dims[k], "%s dims", d->name);
      n *= d->dims[k];
    }
    /* Whole array, converted to double. */
    double *all = malloc(n * sizeof *all);
    OK(cpl_input_get(in, d->name, H5T_NATIVE_DOUBLE, NULL, NULL, all));
    for (size_t e = 0; e < n; e++) {
      double want = val(step, d->id, e);
      if (d->id == 2) want = (double)((unsigned long long)want & 0xffff);
      if (all[e] != want) {
        CHECK(0, "step %ld %s[%zu] = %g, want %g", step, d->name, e, all[e], want);
        break;
      }
    }
    /* A sub-box in the stored type, against the whole array. */
    hsize_t s[3], c[3];
    for (int k = 0; k < d->rank; k++) {
      s[k] = d->dims[k] / 3;
      c[k] = d->dims[k] - s[k] - d->dims[k] / 4;
    }
    size_t m = 1;
    for (int k = 0; k < d->rank; k++) m *= c[k];
    char *sub = malloc(m * H5Tget_size(d->type));
    OK(cpl_input_get(in, d->name, d->type, s, c, sub));
    hsize_t idx[3] = {0};
    for (size_t e = 0; e < m; e++) {
      unsigned long long g = 0;
      for (int k = 0; k < d->rank; k++) g = g * d->dims[k] + s[k] + idx[k];
      double got = H5Tequal(d->type, H5T_NATIVE_DOUBLE) > 0  ? ((double *)sub)[e]
                   : H5Tequal(d->type, H5T_NATIVE_INT32) > 0 ? ((int *)sub)[e]
                                                             : ((unsigned short *)sub)[e];
      if (got != all[g]) {
        CHECK(0, "step %ld %s sub-box element %zu = %g, want %g", step, d->name, e, got, all[g]);
        break;
      }
      for (int k = d->rank - 1; k >= 0 && ++idx[k] == c[k]; k--) idx[k] = 0;
    }
    free(sub);
    free(all);
  }
  /* float64 -> float32 conversion of the 2-D field. */
  float f[13 * 11];
  OK(cpl_input_get(in, "b2", H5T_NATIVE_FLOAT, NULL, NULL, f));
  /* A name the step lacks: the message lists the ones it has. */
  /* The context of a failed get or attr_get (built only then). */
  char want[160];
  const hsize_t origin[2] = {0, 0};
  snprintf(want, sizeof want, ", step %ld, dataset \"b2\": give both start and count, or neither",
           step);
  CHECK(cpl_input_get(in, "b2", H5T_NATIVE_FLOAT, origin, NULL, f) == CPL_ERR_ARG &&
            !strncmp(cpl_last_error(), "cpl_input_get: link ", 20) &&
            strstr(cpl_last_error(), want),
        "start without count: %s", cpl_last_error());
  snprintf(want, sizeof want,
           ", step %ld, attribute \"units\" of dataset \"b2\": HDF5 cannot "
           "convert",
           step);
  double d;
  CHECK(cpl_input_attr_get(in, "b2", "units", H5T_NATIVE_DOUBLE, 1, &d) == CPL_ERR_TYPE &&
            !strncmp(cpl_last_error(), "cpl_input_attr_get: link ", 25) &&
            strstr(cpl_last_error(), want),
        "string attribute as a double: %s", cpl_last_error());
  snprintf(want, sizeof want, ", step %ld, attribute \"nope\" of dataset \"b2\": not found", step);
  CHECK(cpl_input_attr_get(in, "b2", "nope", H5T_NATIVE_DOUBLE, 1, &d) == CPL_ERR_ARG &&
            strstr(cpl_last_error(), want),
        "no such attribute: %s", cpl_last_error());
  CHECK(cpl_input_get(in, "b3", H5T_NATIVE_FLOAT, NULL, NULL, f) == CPL_ERR_ARG &&
            strstr(cpl_last_error(), "no dataset \"b3\"; the step has \"") &&
            strstr(cpl_last_error(), "\"b2\""),
        "missing dataset: %s", cpl_last_error());
  CHECK(f[12] == (float)val(step, 1, 12), "float conversion");
  double t = -1;
  OK(cpl_input_attr_get(in, NULL, "time", H5T_NATIVE_DOUBLE, 1, &t));
  CHECK(t == 0.5 * (double)step, "step %ld: time attribute %g", step, t);
  int na, y = 0;
  OK(cpl_input_attr_count(in, "b2", &na));
  CHECK(na == 2, "b2 has %d attributes", na);
  OK(cpl_input_attr_count(in, NULL, &na));
  CHECK(na == 1, "the step has %d attributes", na);
  cpl_attr_info ai, a0, a1;
  OK(cpl_input_attr(in, "a1", 0, &a0));
  OK(cpl_input_attr(in, "a1", 1, &a1));
  OK(cpl_input_attr_get(in, "a1", "y", H5T_NATIVE_INT, 1, &y));
  CHECK(!strcmp(a0.name, "y") && !strcmp(a1.name, "x") && y == 2,
        "a1's attributes: \"%s\" \"%s\", y = %d (want \"y\" = 2, \"x\")", a0.name, a1.name, y);
  OK(cpl_input_attr(in, "b2", 1, &a1));
  CHECK(!strcmp(a1.name, "scale"), "b2's second attribute: \"%s\"", a1.name);
  CHECK(cpl_input_attr(in, "b2", 2, &a1) == CPL_ERR_ARG &&
            cpl_input_attr(in, "c3", 0, &a1) == CPL_ERR_ARG,
        "an attribute past the last");
  cpl_dataset_info di;
  OK(cpl_input_inquire(in, "a1", &di));
  CHECK(di.nattrs == 2, "a1: nattrs %d", di.nattrs);
  OK(cpl_input_dataset(in, 2, &di));
  CHECK(di.nattrs == 0, "%s: nattrs %d", di.name, di.nattrs);
  OK(cpl_input_attr(in, "b2", 0, &ai));
  char units[7] = {0};
  OK(cpl_input_attr_get(in, "b2", "units", ai.type, 1, units));
  CHECK(!strcmp(ai.name, "units") && !strncmp(units, "kelvin", 6), "units");
  OK(cpl_input_attr_inquire(in, NULL, "time", &ai));
  CHECK(ai.n == 1 && H5Tequal(ai.type, H5T_NATIVE_DOUBLE) > 0, "time info");
  CHECK(cpl_input_attr_get(in, NULL, "time", H5T_NATIVE_DOUBLE, 0, &t) == CPL_ERR_ARG &&
            strstr(cpl_last_error(), "has 1 elements, the buffer "
                                     "room for 0"),
        "attribute larger than the buffer: %s", cpl_last_error());
}

/* Consume until end of stream; returns the steps seen. */
static int consume(cpl_input *in, long *seen, int max, int sleep_each, int check) {
  int n = 0;
  long step;
  int rc;
  while ((rc = cpl_input_begin_step(in, &step)) == CPL_OK) {
    if (n < max) seen[n] = step;
    n++;
    if (check) check_step(in, step);
    if (sleep_each) sleep_ms(sleep_each);
    OK(cpl_input_end_step(in));
  }
  CHECK(rc == CPL_END_OF_STREAM, "begin_step: %s: %s", cpl_strerror(rc), cpl_last_error());
  CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "end of stream is sticky");
  return n;
}

static void stats(cpl_output *out, int link, cpl_output_stats *st) {
  OK(cpl_output_stats_get(out, link, st));
  if (wrank == 0)
    printf("%s link %d: steps %ld delivered %ld dropped %ld skipped %ld "
           "undelivered %ld queue_max %d bytes_max %zu wait %.3f s\n",
           comp_name, link, st->steps, st->delivered, st->dropped, st->skipped, st->undelivered,
           st->queue_max, st->bytes_max, st->wait_s);
}

static int has(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* ---------------------------------------------------------- scenarios */

/* One step of a 1-D uint8 dataset of n elements that cannot be sent:
 * producer rank big_rank puts n - 8 of them (never read), the other 8.
 * Both sides must fail with want_rc, the producer saying prod_want, the
 * consumer the producer's message, naming link, rank and step. */
static void refused_step(cpl_context *ctx, int r, int producer, hsize_t n, int big_rank,
                         int want_rc, const char *prod_want, const char *cons_want) {
  int rc;
  if (producer) {
    cpl_output *out;
    OK(cpl_output_open(ctx, "out", &out));
    static unsigned char x[8];
    const hsize_t big_start = big_rank == 0 ? 0 : 8;
    hsize_t dims[1] = {n},
            start[1] = {r == big_rank   ? big_start
                        : big_rank == 0 ? n - 8
                                        : 0},
            count[1] = {r == big_rank ? n - 8 : 8};
    OK(cpl_output_begin_step(out, -1));
    OK(cpl_output_put(out, "x", H5T_NATIVE_UINT8, 1, dims, start, count, x));
    rc = cpl_output_end_step(out);
    const char *m = cpl_last_error();
    CHECK(rc == want_rc && has(m, "port prod.out, step 0") && has(m, prod_want), "producer: %s: %s",
          cpl_strerror(rc), m);
    if (r == 0) printf("producer: %s\n", m);
    OK(cpl_output_close(out));
  } else {
    cpl_input *in;
    OK(cpl_input_open(ctx, "in", NULL, &in));
    long step;
    rc = cpl_input_begin_step(in, &step);
    const char *m = cpl_last_error();
    CHECK(rc == want_rc && has(m, "link prod.out->cons.in, receiver ") &&
              has(m, "producer: port prod.out, step 0") && has(m, cons_want),
          "consumer: %s: %s", cpl_strerror(rc), m);
    if (r == 0) printf("consumer: %s\n", m);
    OK(cpl_input_close(in));
  }
}

/* Flow-control runs publish this many bytes per rank per step. */
#define FLOW_STEPS 12
#define FLOW_N 4096

/* Step s of the flow scenarios: one dataset "x", FLOW_N doubles a rank. */
static void flow_step(cpl_output *out, long s, int r, int p) {
  static double blk[FLOW_N];
  hsize_t dims[1] = {(hsize_t)FLOW_N * p}, start[1] = {(hsize_t)FLOW_N * r}, count[1] = {FLOW_N};
  for (int i = 0; i < FLOW_N; i++) blk[i] = val(s, 9, start[0] + i);
  OK(cpl_output_begin_step(out, s));
  OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, blk));
  OK(cpl_output_end_step(out));
}

/* A consumer whose first step must fail with status and a message holding
 * fragment (the producer's failure, passed on). */
static void first_step_fails(cpl_context *ctx, int status, const char *fragment) {
  cpl_input *in;
  OK(cpl_input_open(ctx, "in", NULL, &in));
  long step;
  int rc = cpl_input_begin_step(in, &step);
  CHECK(rc == status && has(cpl_last_error(), fragment), "consumer: %s: %s", cpl_strerror(rc),
        cpl_last_error());
  OK(cpl_input_close(in));
}

/* A serving port of two links, until both consumers have asked for the
 * next step (requests returns at once while one link has a request: pace
 * it). */
static void await_both_requests(cpl_output *out) {
  long want[2] = {CPL_REQ_NONE, CPL_REQ_NONE};
  for (int k = 0; k < 1000 && (want[0] == CPL_REQ_NONE || want[1] == CPL_REQ_NONE); k++) {
    if (k) sleep_ms(10);
    OK(cpl_output_requests(out, 0.05, want));
  }
  CHECK(want[0] == CPL_STEP_NEXT && want[1] == CPL_STEP_NEXT, "requests %ld %ld", want[0], want[1]);
}

static void flow_publish(cpl_output *out, int r, int p, int sleep_each) {
  for (long s = 0; s < FLOW_STEPS; s++) {
    flow_step(out, s, r, p);
    if (sleep_each) sleep_ms(sleep_each);
  }
}

static void flow_check(cpl_input *in, long step) {
  cpl_dataset_info info;
  OK(cpl_input_inquire(in, "x", &info));
  double *x = malloc(info.bytes);
  OK(cpl_input_get(in, "x", H5T_NATIVE_DOUBLE, NULL, NULL, x));
  for (hsize_t i = 0; i < info.dims[0]; i++)
    if (x[i] != val(step, 9, i)) {
      CHECK(0, "flow step %ld x[%llu] wrong", step, (unsigned long long)i);
      break;
    }
  free(x);
}

/* Datasets whose allgathers auto may run by different algorithms (the
 * algs scenario): d0, d1, ... of the sizes its arguments give in float64
 * per producer rank (check_algs.py declares the same); without, `small`
 * 8 and `big` 131072 (64 B and 1 MiB). */
#define ALGS_STEPS 3
#define ALGS_MAX 8
static int algs_n = 2;
static char algs_name[ALGS_MAX][16] = {"small", "big"};
static size_t algs_per_rank[ALGS_MAX] = {8, 131072};

static void algs_args(int argc, char **argv) {
  if (argc <= 2) return;
  algs_n = argc - 2 < ALGS_MAX ? argc - 2 : ALGS_MAX;
  for (int k = 0; k < algs_n; k++) {
    snprintf(algs_name[k], sizeof algs_name[k], "d%d", k);
    algs_per_rank[k] = strtoul(argv[2 + k], NULL, 10);
  }
}

static void algs_publish(cpl_output *out, int r, int p) {
  for (long s = 0; s < ALGS_STEPS; s++) {
    double *blk[ALGS_MAX];
    OK(cpl_output_begin_step(out, -1));
    for (int k = 0; k < algs_n; k++) {
      size_t n = algs_per_rank[k];
      hsize_t dims[1] = {(hsize_t)n * p}, start[1] = {(hsize_t)n * r}, count[1] = {n};
      blk[k] = malloc(n * sizeof *blk[k]);
      for (size_t i = 0; i < n; i++) blk[k][i] = val(s, 10 + k, start[0] + i);
      OK(cpl_output_put(out, algs_name[k], H5T_NATIVE_DOUBLE, 1, dims, start, count, blk[k]));
    }
    OK(cpl_output_end_step(out));
    for (int k = 0; k < algs_n; k++) free(blk[k]);
  }
}

static void algs_check(cpl_input *in, long step) {
  for (int k = 0; k < algs_n; k++) {
    cpl_dataset_info info;
    OK(cpl_input_inquire(in, algs_name[k], &info));
    double *x = malloc(info.bytes);
    OK(cpl_input_get(in, algs_name[k], H5T_NATIVE_DOUBLE, NULL, NULL, x));
    for (hsize_t i = 0; i < info.dims[0]; i++)
      if (x[i] != val(step, 10 + k, i)) {
        CHECK(0, "%s step %ld [%llu] wrong", algs_name[k], step, (unsigned long long)i);
        break;
      }
    free(x);
  }
}

static int flow_consume(cpl_input *in, long *seen, int sleep_each) {
  int n = 0;
  long step;
  int rc;
  while ((rc = cpl_input_begin_step(in, &step)) == CPL_OK) {
    seen[n++] = step;
    flow_check(in, step);
    sleep_ms(sleep_each);
    OK(cpl_input_end_step(in));
  }
  CHECK(rc == CPL_END_OF_STREAM, "flow: %s", cpl_last_error());
  return n;
}

/* ------------------------------------------------------------- batch */

/* Scenario batch: BATCH_N small datasets a step (1..7 elements, double or
 * int32, some ranks' blocks empty, an attribute on every tenth) and one
 * large one, over 64 KiB. The small ones move in one transfer per step
 * (data/desc.h, "the batch"), so the receives this process posts for a
 * step stay few; with a transfer each they were thousands. */
#define BATCH_N 400
#define BATCH_STEPS 4
#define BATCH_BIG 12000 /* doubles */
#define BATCH_RECVS 60  /* most receives a consumer rank posts for a step */

/* Receives this process posted (the engine's and the data layer's). */
static long recvs_posted;
int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
              MPI_Request *req) {
  recvs_posted++;
  return PMPI_Irecv(buf, count, t, src, tag, comm, req);
}
int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
                MPI_Request *req) {
  recvs_posted++;
  return PMPI_Irecv_c(buf, count, t, src, tag, comm, req);
}

/* Small dataset i: its size, type, and the rank (of p) whose block is
 * empty (p: none). */
static void batch_dset(int i, int p, char *name, hsize_t *n, hid_t *type, int *skip) {
  snprintf(name, 16, "d%03d", i);
  *n = 1 + (hsize_t)(i % 7);
  *type = i % 2 ? H5T_NATIVE_INT32 : H5T_NATIVE_DOUBLE;
  *skip = i % (p + 1);
}

static void batch_publish(cpl_output *out, int r, int p) {
  static double blk[BATCH_N][8];
  static double big[BATCH_BIG];
  for (long s = 0; s < BATCH_STEPS; s++) {
    OK(cpl_output_begin_step(out, s));
    for (int i = 0; i < BATCH_N; i++) {
      char name[16];
      hsize_t n, start, count;
      hid_t type;
      int skip;
      batch_dset(i, p, name, &n, &type, &skip);
      split(n, p, r, skip, &start, &count);
      for (hsize_t e = 0; e < count; e++) {
        double v = val(s, 100 + i, start + e);
        if (type == H5T_NATIVE_INT32) ((int *)blk[i])[e] = (int)v;
        else blk[i][e] = v;
      }
      OK(cpl_output_put(out, name, type, 1, &n, &start, &count, blk[i]));
      if (i % 10 == 0) OK(cpl_output_attr(out, name, "i", H5T_NATIVE_INT, 1, &i));
    }
    hsize_t n = BATCH_BIG, start, count;
    split(n, p, r, -1, &start, &count);
    for (hsize_t e = 0; e < count; e++) big[e] = val(s, 99, start + e);
    OK(cpl_output_put(out, "big", H5T_NATIVE_DOUBLE, 1, &n, &start, &count, big));
    OK(cpl_output_end_step(out));
  }
}

static void batch_check(cpl_input *in, long step, int p) {
  for (int i = 0; i < BATCH_N; i++) {
    char name[16];
    hsize_t n;
    hid_t type;
    int skip;
    batch_dset(i, p, name, &n, &type, &skip);
    double x[8];
    float f = 0;
    const hsize_t one = 1;
    OK(cpl_input_get(in, name, H5T_NATIVE_DOUBLE, NULL, NULL, x));
    for (hsize_t e = 0; e < n; e++)
      CHECK(x[e] == val(step, 100 + i, e), "batch step %ld %s[%llu] = %g, want %g", step, name,
            (unsigned long long)e, x[e], val(step, 100 + i, e));
    const hsize_t last = n - 1; /* a box, converted to another type */
    OK(cpl_input_get(in, name, H5T_NATIVE_FLOAT, &last, &one, &f));
    CHECK(f == (float)val(step, 100 + i, last), "batch step %ld %s[%llu] as float", step, name,
          (unsigned long long)last);
    int a = -1;
    if (i % 10 == 0) OK(cpl_input_attr_get(in, name, "i", H5T_NATIVE_INT, 1, &a));
    CHECK(i % 10 || a == i, "batch step %ld %s: attribute i = %d", step, name, a);
  }
  static double big[BATCH_BIG];
  OK(cpl_input_get(in, "big", H5T_NATIVE_DOUBLE, NULL, NULL, big));
  for (int e = 0; e < BATCH_BIG; e++)
    if (big[e] != val(step, 99, (unsigned long long)e)) {
      CHECK(0, "batch step %ld big[%d] wrong", step, e);
      break;
    }
}

/* ------------------------------------------------- selective delivery */

/* What consumer rank r of q declares before step `step` (steps 0..5):
 *  0: its share of rows of every dataset (the default);
 *  1: b2 two overlapping boxes, a1 a box past the end, c3 an empty box
 *     list; late (from step 3) unselected, so not received;
 *  2: as 0 on even ranks; the last rank selects nothing at all;
 *  3: cleared: every dataset whole again;
 *  4: rank 0 its rows of b2 only, the others whole (no selection). */
typedef struct decl {
  int active;
  int rows;  /* the default: rows r of q                 */
  int nb[4]; /* boxes per dataset, -1: no item            */
  hsize_t s[4][2][3], c[4][2][3];
} decl;

static decl declare(cpl_input *in, int r, int q, long step) {
  decl d = {0};
  for (int i = 0; i < 4; i++) d.nb[i] = -1;
  if (step == 0 || (step == 2 && r != q - 1)) {
    d.active = d.rows = 1;
    OK(cpl_input_select_clear(in));
    OK(cpl_input_select_rows(in, NULL, r, q));
  } else if (step == 1) {
    OK(cpl_input_select_clear(in));
    d.active = 1;
    d.nb[1] = 2;
    hsize_t b2s[2][2] = {{(hsize_t)r, 2}, {(hsize_t)r + 3, 0}};
    hsize_t b2c[2][2] = {{6, 6}, {6, 4}};
    memcpy(d.s[1][0], b2s[0], sizeof b2s[0]);
    memcpy(d.s[1][1], b2s[1], sizeof b2s[1]);
    memcpy(d.c[1][0], b2c[0], sizeof b2c[0]);
    memcpy(d.c[1][1], b2c[1], sizeof b2c[1]);
    OK(cpl_input_select(in, "b2", 2, 2, &b2s[0][0], &b2c[0][0]));
    d.nb[0] = 1;
    d.s[0][0][0] = 30 - (hsize_t)r;
    d.c[0][0][0] = 100; /* past the end: clipped */
    OK(cpl_input_select(in, "a1", 1, 1, d.s[0][0], d.c[0][0]));
    d.nb[2] = 0;
    OK(cpl_input_select(in, "c3", 3, 0, NULL, NULL));
  } else if (step == 2) { /* the last rank: nothing at all */
    OK(cpl_input_select_clear(in));
    d.active = 1;
    OK(cpl_input_select(in, NULL, 1, 0, NULL, NULL));
  } else if (step == 3) {
    OK(cpl_input_select_clear(in));
  } else if (step == 4 && r == 0) {
    OK(cpl_input_select_clear(in));
    d.active = 1;
    d.nb[1] = 1;
    hsize_t s[2] = {0, 0}, c[2] = {13, 11};
    memcpy(d.s[1][0], s, sizeof s);
    memcpy(d.c[1][0], c, sizeof c);
    d.c[1][0][0] = 13 / (hsize_t)q + (13 % (hsize_t)q > 0);
    OK(cpl_input_select(in, "b2", 2, 1, d.s[1][0], d.c[1][0]));
  } else if (step == 4) {
    OK(cpl_input_select_clear(in));
  }
  return d;
}

/* The boxes decl gives dataset i (dims), clipped; returns how many. */
static int decl_boxes(const decl *d, int i, int r, int q, hsize_t s[][3], hsize_t c[][3]) {
  const dset *ds = &dsets[i];
  if (!d->active) {
    for (int k = 0; k < ds->rank; k++) {
      s[0][k] = 0;
      c[0][k] = ds->dims[k];
    }
    return 1;
  }
  int n = 0;
  if (d->nb[i] >= 0) {
    for (int b = 0; b < d->nb[i]; b++) {
      int empty = 0;
      for (int k = 0; k < ds->rank; k++) {
        hsize_t lo = d->s[i][b][k], hi = lo + d->c[i][b][k];
        if (hi > ds->dims[k]) hi = ds->dims[k];
        empty |= hi <= lo;
        s[n][k] = lo;
        c[n][k] = hi > lo ? hi - lo : 0;
      }
      n += !empty;
    }
    return n;
  }
  if (d->rows) {
    for (int k = 0; k < ds->rank; k++) {
      s[0][k] = 0;
      c[0][k] = ds->dims[k];
    }
    hsize_t per = ds->dims[0] / (hsize_t)q, extra = ds->dims[0] % (hsize_t)q;
    s[0][0] = per * (hsize_t)r + ((hsize_t)r < extra ? (hsize_t)r : extra);
    c[0][0] = per + ((hsize_t)r < extra);
    return c[0][0] > 0;
  }
  return 0;
}

static double expect(const dset *ds, long step, unsigned long long g) {
  double v = val(step, ds->id, g);
  return ds->id == 2 ? (double)((unsigned long long)v & 0xffff) : v;
}

/* Every declared box holds the right values; what is outside is refused;
 * with delivery select, exactly the union of the boxes arrived. */
static void check_selected(cpl_input *in, const decl *d, int r, int q, long step, int forced,
                           size_t *bytes_before) {
  int nd;
  OK(cpl_input_dataset_count(in, &nd));
  size_t want_bytes = 0;
  for (int i = 0; i < nd; i++) {
    const dset *ds = &dsets[i];
    hsize_t s[4][3], c[4][3];
    int nb = decl_boxes(d, i, r, q, s, c);
    size_t total = 1;
    for (int k = 0; k < ds->rank; k++) total *= ds->dims[k];
    unsigned char *mark = calloc(total, 1);
    for (int b = 0; b < nb; b++) {
      size_t n = 1;
      for (int k = 0; k < ds->rank; k++) n *= c[b][k];
      double *v = malloc((n ? n : 1) * sizeof *v);
      OK(cpl_input_get(in, ds->name, H5T_NATIVE_DOUBLE, s[b], c[b], v));
      hsize_t idx[3] = {0};
      for (size_t e = 0; e < n; e++) {
        unsigned long long g = 0;
        for (int k = 0; k < ds->rank; k++) g = g * ds->dims[k] + s[b][k] + idx[k];
        mark[g] = 1;
        if (v[e] != expect(ds, step, g)) {
          CHECK(0, "step %ld %s box %d element %zu = %g, want %g", step, ds->name, b, e, v[e],
                expect(ds, step, g));
          break;
        }
        for (int k = ds->rank - 1; k >= 0 && ++idx[k] == c[b][k]; k--) idx[k] = 0;
      }
      free(v);
    }
    size_t covered = 0, outside = total;
    for (size_t g = 0; g < total; g++) {
      covered += mark[g];
      if (!mark[g] && outside == total) outside = g;
    }
    want_bytes += covered * H5Tget_size(ds->type);
    if (d->active && outside < total) { /* one element nobody selected */
      hsize_t os[3], oc[3];
      unsigned long long g = outside;
      for (int k = ds->rank - 1; k >= 0; k--) {
        os[k] = g % ds->dims[k];
        g /= ds->dims[k];
        oc[k] = 1;
      }
      double v;
      int rc = cpl_input_get(in, ds->name, H5T_NATIVE_DOUBLE, os, oc, &v);
      CHECK(rc == CPL_ERR_ARG && has(cpl_last_error(), "not inside the boxes this rank selected"),
            "step %ld %s: get outside the selection: %s: %s", step, ds->name, cpl_strerror(rc),
            cpl_last_error());
    }
    free(mark);
  }
  cpl_input_stats st;
  OK(cpl_input_stats_get(in, &st));
  size_t got = st.bytes - *bytes_before;
  *bytes_before = st.bytes;
  if (forced)
    CHECK(got == want_bytes, "step %ld: received %zu bytes, selected %zu", step, got, want_bytes);
  if (wrank >= 0 && step == 1)
    printf("%s rank %d step %ld: received %zu bytes, selected %zu, held %zu\n", comp_name, r, step,
           got, want_bytes, st.bytes_held);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  if (argc < 2) {
    fprintf(stderr, "usage: data_e2e SCENARIO\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char *sc = argv[1];
  init_dsets();
  cpl_context *ctx;
  OK(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx));
  const char *cn;
  OK(cpl_context_component(ctx, NULL, &cn));
  static char name_copy[80]; /* the context's copy dies with cpl_finalize */
  snprintf(name_copy, sizeof name_copy, "%s", cn);
  comp_name = name_copy;
  MPI_Comm comm;
  OK(cpl_component_comm(ctx, &comm));
  int r, p;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  int producer = !strncmp(comp_name, "prod", 4);
  cpl_output *out = NULL;
  cpl_input *in = NULL;
  long seen[64];

  if (!strcmp(sc, "shapes")) {
    /* Every consumer of every input port checks every step. */
    /* The workflow is the one CPL_WORKFLOW named (cpl_init's NULL path). */
    const char *wpath = cpl_workflow_path(cpl_context_workflow(ctx)), *env = getenv("CPL_WORKFLOW");
    CHECK(wpath && env && !strcmp(wpath, env), "workflow path %s, CPL_WORKFLOW %s",
          wpath ? wpath : "(null)", env ? env : "(null)");
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      /* The port's links are the context's links from "out", in order. */
      int nl, np = 0;
      OK(cpl_context_link_count(ctx, &nl));
      OK(cpl_output_link_count(out, &np));
      CHECK(np == nl, "output port has %d links, the context %d", np, nl);
      for (int i = 0; i < np && i < nl; i++) {
        cpl_link_end a, b;
        OK(cpl_output_link(out, i, &a));
        OK(cpl_context_link(ctx, i, &b));
        CHECK(a.link == b.link && a.role == CPL_SENDER && !strcmp(a.port, "out") &&
                  !strcmp(a.peer_component, b.peer_component),
              "output link %d: link %d (context %d), role %d, port %s", i, a.link, b.link, a.role,
              a.port);
      }
      cpl_link_end none;
      CHECK(cpl_output_link(out, np, &none) == CPL_ERR_ARG, "link past the end accepted");
      for (long s = 0; s < 5; s++) OK(publish(out, s, r, p));
      OK(cpl_output_close(out));
    } else {
      int nl;
      OK(cpl_context_link_count(ctx, &nl));
      if (nl == 1) {
        OK(cpl_input_open(ctx, "in", NULL, &in));
        cpl_link_end a, b;
        OK(cpl_input_link(in, &a));
        OK(cpl_port_link(ctx, "in", NULL, &b));
        CHECK(a.link == b.link && a.role == CPL_RECEIVER && !strcmp(a.port, "in") &&
                  a.remote_size == b.remote_size && !strcmp(a.peer_component, b.peer_component),
              "input link %d (port's %d), role %d", a.link, b.link, a.role);
        int n = consume(in, seen, 64, 0, 1);
        CHECK(n == 5, "%d steps", n);
        for (int k = 0; k < n && k < 5; k++) CHECK(seen[k] == k, "step order");
        OK(cpl_input_close(in));
      } else { /* fan-in: take steps from whichever link has one */
        cpl_input *ins[4];
        int got[4] = {0}, done = 0, polls = 0;
        for (int i = 0; i < nl; i++) {
          cpl_link_end le;
          OK(cpl_context_link(ctx, i, &le));
          char peer[200];
          snprintf(peer, sizeof peer, "%s.%s", le.peer_component, le.peer_port);
          OK(cpl_input_open(ctx, le.port, peer, &ins[i]));
        }
        while (done < nl) {
          for (int i = 0; i < nl; i++) {
            if (!ins[i]) continue;
            long step;
            int rc = cpl_input_try_step(ins[i], 0.002, &step);
            polls++;
            if (rc == CPL_ERR_TIMEOUT) continue;
            if (rc == CPL_END_OF_STREAM) {
              CHECK(got[i] == 5, "link %d: %d steps", i, got[i]);
              OK(cpl_input_close(ins[i]));
              ins[i] = NULL;
              done++;
              continue;
            }
            OK(rc);
            CHECK(step == got[i], "link %d: step %ld, want %d", i, step, got[i]);
            got[i]++;
            check_step(ins[i], step);
            OK(cpl_input_end_step(ins[i]));
          }
        }
        CHECK(polls >= 2 * 5 + nl, "polls %d", polls);
      }
    }
  } else if (!strcmp(sc, "all") || !strcmp(sc, "latest") || !strcmp(sc, "every")) {
    /* A slow consumer (policy from the YAML): what arrives, what is
     * dropped, and how much the producer held. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      /* latest never waits: paced, so a consumer slow to start under load
       * still asks before the stream is over */
      flow_publish(out, r, p, !strcmp(sc, "latest") ? 20 : 0);
      cpl_output_stats st;
      stats(out, 0, &st);
      size_t step_bytes = FLOW_N * sizeof(double);
      /* latest: depth queued, plus the step in flight */
      int depth = !strcmp(sc, "latest") ? 1 + 1 : 2;
      CHECK(st.steps == FLOW_STEPS, "steps");
      CHECK(st.queue_max <= depth, "queue_max %d > %d", st.queue_max, depth);
      CHECK(st.bytes_max <= (size_t)depth * step_bytes, "bytes_max %zu > %d x %zu", st.bytes_max,
            depth, step_bytes);
      OK(cpl_output_close(out));
      cpl_output_stats fin;
      (void)fin;
      if (!strcmp(sc, "all")) {
        CHECK(st.dropped == 0 && st.skipped == 0, "all: nothing dropped");
        CHECK(st.wait_s > 0.05, "all: the producer waited (%.3f s)", st.wait_s);
      } else if (!strcmp(sc, "latest")) {
        CHECK(st.dropped > 0, "latest: some steps dropped");
        CHECK(st.wait_s == 0, "latest: the producer never waits");
      } else {
        CHECK(st.skipped == FLOW_STEPS - (FLOW_STEPS + 2) / 3, "every:3 skipped %ld", st.skipped);
      }
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      int n = flow_consume(in, seen, 60);
      if (!strcmp(sc, "all")) {
        CHECK(n == FLOW_STEPS, "all: %d of %d steps", n, FLOW_STEPS);
        for (int k = 0; k < n; k++) CHECK(seen[k] == k, "all: order");
      } else if (!strcmp(sc, "latest")) {
        CHECK(n < FLOW_STEPS && n >= 2, "latest: %d steps", n);
        for (int k = 1; k < n; k++) CHECK(seen[k] > seen[k - 1], "latest: order");
        CHECK(seen[n - 1] == FLOW_STEPS - 1, "latest: the last step arrives");
      } else {
        CHECK(n == (FLOW_STEPS + 2) / 3, "every:3: %d steps", n);
        for (int k = 0; k < n; k++) CHECK(seen[k] == 3 * k, "every:3 step %ld", seen[k]);
      }
      if (wrank == 0 || r == 0) printf("%s: %d steps received\n", comp_name, n);
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "algs")) {
    /* Datasets of the sizes asked (algs_args): the progress lines and
     * trace (check_algs.py) name what the engine ran. */
    algs_args(argc, argv);
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      algs_publish(out, r, p);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      int n = 0, rc;
      while ((rc = cpl_input_begin_step(in, &step)) == CPL_OK) {
        CHECK(step == n, "algs: step %ld, want %d", step, n);
        algs_check(in, step);
        OK(cpl_input_end_step(in));
        n++;
      }
      CHECK(rc == CPL_END_OF_STREAM, "algs: %s", cpl_strerror(rc));
      CHECK(n == ALGS_STEPS, "algs: %d of %d steps", n, ALGS_STEPS);
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "batch")) {
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      batch_publish(out, r, p);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      cpl_link_end le;
      OK(cpl_input_link(in, &le));
      long step;
      int n = 0, rc;
      for (;;) {
        long before = recvs_posted;
        if ((rc = cpl_input_begin_step(in, &step)) != CPL_OK) break;
        long posted = recvs_posted - before;
        CHECK(posted <= BATCH_RECVS, "batch step %ld: %ld receives posted for %d datasets", step,
              posted, BATCH_N + 1);
        if (r == 0 && n == 0) printf("batch: %ld receives posted for step %ld\n", posted, step);
        batch_check(in, step, le.remote_size);
        OK(cpl_input_end_step(in));
        n++;
      }
      CHECK(rc == CPL_END_OF_STREAM, "batch: %s", cpl_last_error());
      CHECK(n >= 1, "batch: no step");
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "latest_newest")) {
    /* Policy latest, depth 2: the consumer takes step 0, then asks again
     * while the producer, having made steps 1..9, pauses. The answer, at
     * step 10, is step 10: the newest, not the oldest queued (9). */
    if (producer) {
      sleep_ms(500); /* the consumer's first request is waiting */
      OK(cpl_output_open(ctx, "out", &out));
      for (long s = 0; s < 10; s++) flow_step(out, s, r, p), sleep_ms(20);
      sleep_ms(1500);
      flow_step(out, 10, r, p);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      OK(cpl_input_begin_step(in, &step));
      OK(cpl_input_end_step(in));
      sleep_ms(1000);
      int n = flow_consume(in, seen, 0);
      CHECK(n == 1 && seen[0] == 10, "latest: after the pause %d steps, the first %ld (want 10)", n,
            n ? seen[0] : -1L);
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "turns")) {
    /* One component reads two links of one port in turn, in1 then in2.
     * Step 0 waits for the producer's next call (nobody asked yet); the
     * request on in2 then arrives while the producer sends step 0 on in1,
     * and close, waiting for a request on in1, must serve in2 meanwhile:
     * before, both sides waited for each other until the timeout (3 s). */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      flow_step(out, 0, r, p);
      sleep_ms(1000);
      flow_step(out, 1, r, p);
      OK(cpl_output_close(out));
    } else {
      cpl_input *in2;
      OK(cpl_input_open(ctx, "in1", NULL, &in));
      OK(cpl_input_open(ctx, "in2", NULL, &in2));
      sleep_ms(500);
      long step;
      for (long k = 0; k < 2; k++) {
        OK(cpl_input_begin_step(in, &step));
        CHECK(step == k, "in1: step %ld, want %ld", step, k);
        OK(cpl_input_end_step(in));
        OK(cpl_input_begin_step(in2, &step));
        CHECK(step == k, "in2: step %ld, want %ld", step, k);
        flow_check(in2, step);
        OK(cpl_input_end_step(in2));
      }
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "in1: no end of stream");
      CHECK(cpl_input_begin_step(in2, &step) == CPL_END_OF_STREAM, "in2: no end of stream");
      OK(cpl_input_close(in));
      OK(cpl_input_close(in2));
    }
  } else if (!strcmp(sc, "leave_pending")) {
    /* The consumer's try_step times out, and it closes 2 s later: close
     * must take the answer to that request, or the producer, sending the
     * step by then, waits for the consumer until its link timeout (3 s). */
    if (producer) {
      sleep_ms(1000);
      OK(cpl_output_open(ctx, "out", &out));
      for (long s = 0; s < 3; s++) flow_step(out, s, r, p);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      CHECK(cpl_input_try_step(in, 0.1, &step) == CPL_ERR_TIMEOUT, "try_step: %s",
            cpl_last_error());
      sleep_ms(2000);
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "detach")) {
    /* The consumer leaves after 3 steps; the producer must not hang. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      flow_publish(out, r, p, 20);
      cpl_output_stats st;
      stats(out, 0, &st);
      CHECK(st.delivered >= 3 && st.delivered <= 5, "delivered %ld", st.delivered);
      CHECK(st.delivered + st.undelivered + 2 >= FLOW_STEPS,
            "every step "
            "accounted for: %ld + %ld",
            st.delivered, st.undelivered);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      for (int k = 0; k < 3; k++) {
        OK(cpl_input_begin_step(in, &step));
        flow_check(in, step);
        OK(cpl_input_end_step(in));
      }
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "interrupt")) {
    /* Producer late by 5 s, link timeout 30 s, a signal 1 s into the
     * consumers' wait that their interrupt check reports: begin_step
     * fails with CPL_ERR_INTERRUPTED on every rank, rank 0 naming link,
     * rank and step; as after a timeout, the request stays out, and the
     * next begin_step gets step 0: no step lost or sent twice. */
    if (producer) {
      sleep_ms(5000);
      OK(cpl_output_open(ctx, "out", &out));
      flow_publish(out, r, p, 0);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      signal(SIGALRM, on_alarm);
      cpl_set_interrupt_check(alarm_check, NULL);
      alarm(1);
      long step = -1;
      int rc = cpl_input_begin_step(in, &step);
      const char *m = cpl_last_error();
      CHECK(rc == CPL_ERR_INTERRUPTED, "begin_step: %s: %s", cpl_strerror(rc), m);
      if (r == 0)
        CHECK(has(m, "link prod.out->cons.in, consumer rank 0, step after -1: waiting for the "
                     "producer's next step") &&
                  has(m, "interrupted by a signal after"),
              "message: %s", m);
      else
        CHECK(has(m, "link prod.out->cons.in, receiver 1: rank 0 of this component was "
                     "interrupted by a signal"),
              "message: %s", m);
      printf("consumer rank %d interrupted as expected: %s\n", r, m);
      cpl_set_interrupt_check(NULL, NULL);
      rc = cpl_input_begin_step(in, &step);
      CHECK(rc == CPL_OK && step == 0, "after the interrupt: step %ld: %s", step, cpl_strerror(rc));
      if (rc == CPL_OK) {
        flow_check(in, step);
        OK(cpl_input_end_step(in));
        int n = flow_consume(in, seen, 0);
        CHECK(n == FLOW_STEPS - 1, "after the interrupt: %d more steps", n);
      }
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "timeout_consumer")) {
    /* Producer late by 3 s, link timeout 1 s: the consumer's wait times
     * out with a message naming link, rank and step; a retry succeeds. */
    if (producer) {
      sleep_ms(3000);
      OK(cpl_output_open(ctx, "out", &out));
      flow_publish(out, r, p, 0);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      int rc, timeouts = 0;
      while ((rc = cpl_input_begin_step(in, &step)) == CPL_ERR_TIMEOUT) {
        const char *m = cpl_last_error();
        if (r == 0 && timeouts == 0) {
          CHECK(has(m, "link prod.out->cons.in") && has(m, "receiver 0") &&
                    has(m, "step after -1") && has(m, "within 1 s"),
                "message: %s", m);
          printf("consumer timed out as expected: %s\n", m);
        }
        timeouts++;
      }
      CHECK(rc == CPL_OK && step == 0 && timeouts >= 1, "after %d timeouts: %s", timeouts,
            cpl_strerror(rc));
      flow_check(in, step);
      OK(cpl_input_end_step(in));
      int n = flow_consume(in, seen, 0);
      CHECK(n == FLOW_STEPS - 1, "after the retries: %d more steps", n);
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "timeout_producer")) {
    /* Consumer late by 3 s, policy all, depth 1, timeout 1 s: end_step
     * gives up; the consumer then gets the producer's error. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      static double x[8];
      hsize_t dims[1] = {8 * (hsize_t)p}, start[1] = {8 * (hsize_t)r}, count[1] = {8};
      int rc = CPL_OK;
      long s;
      for (s = 0; s < 4 && rc == CPL_OK; s++) {
        OK(cpl_output_begin_step(out, -1));
        OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, x));
        rc = cpl_output_end_step(out);
      }
      const char *m = cpl_last_error();
      CHECK(rc == CPL_ERR_TIMEOUT && s == 2,
            "expected a timeout at step 1, got "
            "%s at step %ld",
            cpl_strerror(rc), s - 1);
      if (r == 0)
        CHECK(has(m, "link prod.out->cons.in, sender 0, step 0") &&
                  has(m, "took no step within 1 s") && has(m, "policy all, depth 1"),
              "message: %s", m);
      if (r == 0) printf("producer timed out as expected: %s\n", m);
      CHECK(cpl_output_end_step(out) == CPL_ERR_TIMEOUT, "the port stays failed");
      OK(cpl_output_close(out));
    } else {
      sleep_ms(3000);
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      int rc = cpl_input_begin_step(in, &step);
      const char *m = cpl_last_error();
      CHECK(rc == CPL_ERR_TIMEOUT && has(m, "producer: link prod.out->cons.in"), "consumer: %s: %s",
            cpl_strerror(rc), m);
      if (r == 0) printf("consumer got the producer's failure: %s\n", m);
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "overlap") || !strcmp(sc, "declared")) {
    /* Overlapping blocks, or dims the consumer's port does not declare:
     * an error on both sides before any data move. */
    int rc;
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      double x[10] = {0};
      hsize_t dims[1] = {10}, start[1] = {0}, count[1] = {10};
      if (!strcmp(sc, "overlap")) { /* ranks 0 and 1 both claim [4:6] */
        start[0] = r == 0 ? 0 : 4;
        count[0] = r == 0 ? 6 : 6;
      } else {
        count[0] = r == 0 ? 10 : 0;
      }
      OK(cpl_output_begin_step(out, -1));
      OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, x));
      rc = cpl_output_end_step(out);
      const char *m = cpl_last_error();
      CHECK(rc == CPL_ERR_SHAPE, "producer: expected dims or blocks that do not fit, got %s",
            cpl_strerror(rc));
      if (!strcmp(sc, "overlap"))
        CHECK(has(m, "port prod.out, step 0: dataset \"x\"") &&
                  has(m, "rank 0, [0:6], and rank 1, [4:10], overlap"),
              "message: %s", m);
      else CHECK(has(m, "has dims [10] but port cons.in declares [12]"), "message: %s", m);
      if (r == 0) printf("producer: %s\n", m);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      rc = cpl_input_begin_step(in, &step);
      const char *m = cpl_last_error();
      CHECK(rc == CPL_ERR_SHAPE && has(m, "producer: port prod.out, step 0"), "consumer: %s: %s",
            cpl_strerror(rc), m);
      if (r == 0) printf("consumer: %s\n", m);
      CHECK(cpl_input_begin_step(in, &step) == CPL_ERR_SHAPE, "sticky");
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "step_mismatch")) {
    /* Producer ranks that begin different step numbers (rank 1 skips one):
     * an error on both sides at end_step, naming both numbers, before
     * anything moves. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      double x[4] = {0};
      hsize_t dims[1] = {4 * (hsize_t)p}, start[1] = {4 * (hsize_t)r}, count[1] = {4};
      OK(cpl_output_begin_step(out, r == 1 ? 1 : 0));
      OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, x));
      int rc = cpl_output_end_step(out);
      const char *m = cpl_last_error();
      CHECK(rc == CPL_ERR_MISMATCH && has(m, "rank 0 step 0, rank 1 step 1"), "producer: %s: %s",
            cpl_strerror(rc), m);
      cpl_output_close(out);
    } else {
      first_step_fails(ctx, CPL_ERR_MISMATCH, "began different steps");
    }
  } else if (!strcmp(sc, "huge")) {
    /* A step over the data layer's size limit (64 TiB; the blocks are
     * never read): refused alike on every producer rank before anything
     * moves, and the consumer gets the producer's reason at once, from the
     * step's header, not by waiting out the link timeout (120 s here, more
     * than the test's). */
    const char *want = "dataset \"x\": the block of rank 0, [140737488355320] elements of 1 "
                       "bytes, is more than the 70368744177664 bytes (64 TiB)";
    refused_step(ctx, r, producer, (hsize_t)1 << 47, 0, CPL_ERR_UNSUPPORTED, want, want);
  } else if (!strcmp(sc, "nomem")) {
    /* A step producer rank 1 cannot copy (policy latest copies every step
     * it posts): a 32 TiB block, within the size limit, under an address
     * space limit of 1 TiB so the allocation fails on any machine (the
     * block is never read). Every producer rank fails before anything
     * moves, and the consumer gets the reason at once, naming the rank. */
    const char *want = "producer rank 1 could not hold its 35184372088832 bytes of the step";
    if (producer && !SANITIZED_ADDRESSES) {
      struct rlimit lim;
      getrlimit(RLIMIT_AS, &lim);
      if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > ((rlim_t)1 << 40)) {
        lim.rlim_cur = (rlim_t)1 << 40;
        setrlimit(RLIMIT_AS, &lim);
      }
    }
    refused_step(ctx, r, producer, ((hsize_t)1 << 45) + 8, 1, CPL_ERR_NOMEM,
                 r == 0 ? want : "out of memory queueing 35184372088832 bytes", want);
  } else if (!strcmp(sc, "select") || !strcmp(sc, "select_forced")) {
    /* Consumer ranks read only what they declare, changing every step. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      for (long s = 0; s < 5; s++) OK(publish(out, s, r, p));
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      size_t before = 0;
      long step;
      for (long s = 0; s < 5; s++) {
        decl d = declare(in, r, p, s);
        OK(cpl_input_begin_step(in, &step));
        CHECK(step == s, "step %ld, want %ld", step, s);
        check_selected(in, &d, r, p, step, !strcmp(sc, "select_forced"), &before);
        OK(cpl_input_end_step(in));
      }
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "EOS");
      cpl_input_stats st;
      OK(cpl_input_stats_get(in, &st));
      if (!strcmp(sc, "select_forced"))
        CHECK(st.selective == 5, "%ld of 5 steps redistributed", st.selective);
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "select_words")) {
    /* What a get outside the selection says: a default (dataset NULL) of
     * 2-D boxes selects nothing of the 1-D a1, and the message says that
     * default is why (it said "0 pieces; select it before begin_step");
     * a selection changed during the step applies from the next; a get
     * past the array names its box. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      for (long s = 0; s < 2; s++) OK(publish(out, s, r, p));
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      const hsize_t bs[2] = {(hsize_t)r, 1}, bc[2] = {2, 3};
      OK(cpl_input_select(in, NULL, 2, 1, bs, bc));
      long step;
      OK(cpl_input_begin_step(in, &step));
      double v, box[6];
      OK(cpl_input_get(in, "b2", H5T_NATIVE_DOUBLE, bs, bc, box));
      for (int e = 0; e < 6; e++)
        CHECK(box[e] == expect(&dsets[1], step, (bs[0] + e / 3) * 11 + bs[1] + e % 3),
              "b2 box element %d: %g", e, box[e]);
      const hsize_t s1 = 0, c1 = 1;
      CHECK(cpl_input_get(in, "a1", H5T_NATIVE_DOUBLE, &s1, &c1, &v) == CPL_ERR_ARG &&
                has(cpl_last_error(),
                    "dataset \"a1\": this rank has no selection of its own for it and its "
                    "default selection (dataset NULL) has boxes of 2 dimensions, but the "
                    "dataset has 1, so it receives nothing of it (select it by name, ndims 1)"),
            "get of a dataset the default's boxes do not fit: %s", cpl_last_error());
      /* Cleared during the step: whole arrays from the next one; a get of
       * one now blamed a try_step that timed out, which never happened. */
      OK(cpl_input_select_clear(in));
      static double whole[13 * 11];
      CHECK(cpl_input_get(in, "b2", H5T_NATIVE_DOUBLE, NULL, NULL, whole) == CPL_ERR_ARG &&
                has(cpl_last_error(), "this rank changed its selection after asking for this "
                                      "step (during the step, or while a try_step") &&
                !has(cpl_last_error(), "a selection made while a request was still out"),
            "get after a selection changed during the step: %s", cpl_last_error());
      OK(cpl_input_end_step(in));
      OK(cpl_input_begin_step(in, &step));
      check_step(in, step); /* whole again */
      /* A get past the array is refused as a box, not as a "selection"
       * (cpl_input_select clips its boxes; a get does not). */
      const hsize_t ps[2] = {12, 0}, pc[2] = {2, 11};
      CHECK(cpl_input_get(in, "b2", H5T_NATIVE_DOUBLE, ps, pc, whole) == CPL_ERR_ARG &&
                has(cpl_last_error(), "dataset \"b2\": box [12:14, 0:11] lies outside the "
                                      "array [13, 11]"),
            "get past the array: %s", cpl_last_error());
      OK(cpl_input_end_step(in));
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "EOS");
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "select_steady")) {
    /* Many small redistributed steps: no MPI datatype committed per step
     * (MPICH 4.0 over UCX loses memory with each: about 64 bytes a
     * message, without end), every value checked. The consumer declares
     * its rows again before every odd step, as a loop would: its
     * selections go to the producer once (each step, before). */
    enum { STEPS = 40, WARM = 10 };
    long warm = 0;
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      for (long s = 0; s < STEPS; s++) {
        if (s == WARM) warm = type_commits;
        OK(publish(out, s, r, p));
      }
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      OK(cpl_input_select_rows(in, NULL, r, p));
      decl d = {.active = 1, .rows = 1, .nb = {-1, -1, -1, -1}};
      size_t before = 0;
      long step;
      for (long s = 0; s < STEPS; s++) {
        if (s == WARM) warm = type_commits;
        if (s % 2) {
          OK(cpl_input_select_clear(in));
          OK(cpl_input_select_rows(in, NULL, r, p));
        }
        OK(cpl_input_begin_step(in, &step));
        CHECK(step == s, "step %ld, want %ld", step, s);
        check_selected(in, &d, r, p, step, 1, &before);
        OK(cpl_input_end_step(in));
      }
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "EOS");
      cpl_input_stats st;
      OK(cpl_input_stats_get(in, &st));
      CHECK(st.selective == STEPS, "%ld of %d steps redistributed", st.selective, STEPS);
      CHECK(st.selections == 1, "selections sent %ld times, not once", st.selections);
      OK(cpl_input_close(in));
    }
    CHECK(type_commits == warm, "%ld MPI datatypes committed in steps %d..%d (%ld before)",
          type_commits - warm, WARM, STEPS - 1, warm);
  } else if (!strcmp(sc, "requests")) {
    /* A consumer that starts late and asks for particular steps of a
     * producer with a deep queue (depth 8, policy all). */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      flow_publish(out, r, p, 0);
      cpl_output_stats st;
      stats(out, 0, &st);
      CHECK(st.skipped >= 5, "passed-over steps counted as skipped: %ld", st.skipped);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      sleep_ms(500); /* the producer fills its queue meanwhile */
      long step;
      OK(cpl_input_begin_step_at(in, 5, &step));
      CHECK(step == 5, "asked for 5, got %ld", step);
      flow_check(in, step);
      OK(cpl_input_end_step(in));
      int rc = cpl_input_begin_step_at(in, 3, &step);
      CHECK(rc == CPL_ERR_NOT_FOUND && has(cpl_last_error(), "step 3 is not held"),
            "asked for a passed step: %s: %s", cpl_strerror(rc), cpl_last_error());
      if (r == 0) printf("consumer: %s\n", cpl_last_error());
      OK(cpl_input_begin_step_at(in, CPL_STEP_LATEST, &step));
      CHECK(step > 5, "latest %ld", step);
      flow_check(in, step);
      OK(cpl_input_end_step(in));
      long latest = step;
      rc = cpl_input_begin_step(in, &step);
      if (latest < FLOW_STEPS - 1) {
        CHECK(rc == CPL_OK && step == latest + 1, "next after %ld: %ld", latest, step);
        flow_check(in, step);
        OK(cpl_input_end_step(in));
      }
      rc = cpl_input_begin_step_at(in, 1000, &step);
      CHECK(rc == CPL_END_OF_STREAM, "a step never made ends with the stream: %s",
            cpl_strerror(rc));
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "serve")) {
    /* A producer that keeps steps 0..4 and answers requests itself. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      OK(cpl_output_serve(out));
      long none;
      CHECK(cpl_output_requests(out, -1, &none) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_output_requests: port prod.out: wait -1 s is not"),
            "negative wait: %s", cpl_last_error());
      CHECK(cpl_output_requests(out, 0.1, NULL) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_output_requests: port prod.out: want is NULL"),
            "want NULL: %s", cpl_last_error());
      static double blk[FLOW_N];
      hsize_t dims[1] = {(hsize_t)FLOW_N * p}, start[1] = {(hsize_t)FLOW_N * r},
              count[1] = {FLOW_N};
      long cursor = -1, want;
      int served = 0, refused = 0;
      for (int rounds = 0; rounds < 2000; rounds++) {
        OK(cpl_output_requests(out, 0.05, &want));
        if (want == CPL_REQ_GONE) break;
        if (want == CPL_REQ_NONE) continue;
        long s = want == CPL_STEP_NEXT ? cursor + 1 : want == CPL_STEP_LATEST ? 4 : want;
        if (s > 4 && want == CPL_STEP_NEXT) {
          OK(cpl_output_end_link(out, 0));
          break;
        }
        if (s > 4) {
          OK(cpl_output_refuse(out, 0, "step not kept (keeping 0..4)"));
          refused++;
          continue;
        }
        for (int i = 0; i < FLOW_N; i++) blk[i] = val(s, 9, start[0] + i);
        if (want >= 0 && !served) { /* another step than the one asked for: refused */
          OK(cpl_output_begin_step(out, s + 1));
          OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, blk));
          CHECK(cpl_output_send(out, 0) == CPL_ERR_ARG &&
                    has(cpl_last_error(), "link prod.out->cons.in asked for step 2, the open "
                                          "step is 3 (answer it with step 2 or"),
                "step 3 for a request for step 2: %s", cpl_last_error());
        }
        OK(cpl_output_begin_step(out, s));
        OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, blk));
        OK(cpl_output_send(out, 0));
        cursor = s;
        served++;
      }
      CHECK(served == 4 && refused == 1, "served %d refused %d", served, refused);
      CHECK(cpl_output_end_step(out) == CPL_ERR_STATE, "end_step on a serving port");
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long got[4], step;
      const long ask[4] = {2, CPL_STEP_NEXT, 0, CPL_STEP_LATEST};
      for (int i = 0; i < 4; i++) {
        OK(cpl_input_begin_step_at(in, ask[i], &step));
        got[i] = step;
        flow_check(in, step);
        OK(cpl_input_end_step(in));
      }
      CHECK(got[0] == 2 && got[1] == 3 && got[2] == 0 && got[3] == 4, "served %ld %ld %ld %ld",
            got[0], got[1], got[2], got[3]);
      int rc = cpl_input_begin_step_at(in, 9, &step);
      CHECK(rc == CPL_ERR_NOT_FOUND && has(cpl_last_error(), "keeping 0..4"), "refused: %s",
            cpl_last_error());
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "end of link");
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "types")) {
    /* Puts and attributes of many types in one step, each type arriving
     * as put: a user type changed between two puts (int32, then int64),
     * and two compound types equal to H5Tequal whose members were
     * inserted in another order (the producer shares a put's copy of an
     * equal type, and encodes an equal type once). Element e of every
     * dataset holds e + 1 (as its type); every producer rank puts its
     * element. */
    typedef struct {
      int32_t a;
      double b;
    } ab;
    hid_t ab_t = H5Tcreate(H5T_COMPOUND, sizeof(ab)), ba_t = H5Tcreate(H5T_COMPOUND, sizeof(ab));
    H5Tinsert(ab_t, "a", HOFFSET(ab, a), H5T_NATIVE_INT32);
    H5Tinsert(ab_t, "b", HOFFSET(ab, b), H5T_NATIVE_DOUBLE);
    H5Tinsert(ba_t, "b", HOFFSET(ab, b), H5T_NATIVE_DOUBLE);
    H5Tinsert(ba_t, "a", HOFFSET(ab, a), H5T_NATIVE_INT32);
    const hsize_t dims = (hsize_t)(producer ? p : 0), one = 1;
    if (producer) {
      const hsize_t start = (hsize_t)r;
      const int32_t v4 = r + 1;
      const int64_t v8 = r + 1;
      const ab vab = {r + 1, r + 1};
      hid_t u = H5Tcopy(H5T_NATIVE_INT32);
      OK(cpl_output_open(ctx, "out", &out));
      OK(cpl_output_begin_step(out, -1));
      OK(cpl_output_put(out, "i4", u, 1, &dims, &start, &one, &v4));
      OK(cpl_output_put(out, "i4b", H5T_NATIVE_INT32, 1, &dims, &start, &one, &v4));
      H5Tset_size(u, 8); /* the same id, now an int64 */
      OK(cpl_output_put(out, "i8", u, 1, &dims, &start, &one, &v8));
      OK(cpl_output_put(out, "ab", ab_t, 1, &dims, &start, &one, &vab));
      OK(cpl_output_put(out, "ba", ba_t, 1, &dims, &start, &one, &vab));
      if (r == 0) {
        OK(cpl_output_attr(out, NULL, "ab", ab_t, 1, &vab));
        OK(cpl_output_attr(out, NULL, "ba", ba_t, 1, &vab));
        OK(cpl_output_attr(out, NULL, "i4", H5T_NATIVE_INT32, 1, &v4));
        OK(cpl_output_attr(out, NULL, "i8", u, 1, &v8));
      }
      OK(cpl_output_end_step(out));
      OK(cpl_output_close(out));
      H5Tclose(u);
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      OK(cpl_input_begin_step(in, &step));
      static const struct {
        const char *name;
        size_t size;
        const char *first; /* compound: the first member's name */
      } want[] = {
          {"i4", 4, NULL}, {"i4b", 4, NULL}, {"i8", 8, NULL}, {"ab", 16, "a"}, {"ba", 16, "b"}};
      for (int i = 0; i < 5; i++) {
        cpl_dataset_info di;
        cpl_attr_info ai;
        OK(cpl_input_inquire(in, want[i].name, &di));
        const int attr = i != 1;
        if (attr) OK(cpl_input_attr_inquire(in, NULL, want[i].name, &ai));
        for (int k = 0; k < 1 + attr; k++) {
          hid_t t = k ? ai.type : di.type;
          char *m0 = want[i].first ? H5Tget_member_name(t, 0) : NULL;
          CHECK(H5Tget_size(t) == want[i].size && (!m0 || !strcmp(m0, want[i].first)),
                "%s %s: %zu bytes (want %zu), first member %s (want %s)",
                k ? "attribute" : "dataset", want[i].name, H5Tget_size(t), want[i].size,
                m0 ? m0 : "-", want[i].first ? want[i].first : "-");
          H5free_memory(m0);
        }
        ab got[8];
        if (i < 3) {
          int64_t g[8];
          OK(cpl_input_get(in, want[i].name, H5T_NATIVE_INT64, NULL, NULL, g));
          for (hsize_t e = 0; e < di.dims[0] && e < 8; e++) got[e] = (ab){(int32_t)g[e], 0};
        } else {
          OK(cpl_input_get(in, want[i].name, ab_t, NULL, NULL, got));
        }
        for (hsize_t e = 0; e < di.dims[0] && e < 8; e++)
          CHECK(got[e].a == (int32_t)e + 1 && (i < 3 || got[e].b == (double)e + 1),
                "%s[%llu] = %d %g", want[i].name, (unsigned long long)e, got[e].a, got[e].b);
      }
      /* A member the stored type lacks keeps the caller's value, as with
       * H5Dread (it came back 0), in a get and an attribute. */
      typedef struct {
        int32_t a;
        double b;
        int32_t c;
      } abc;
      hid_t abc_t = H5Tcreate(H5T_COMPOUND, sizeof(abc));
      H5Tinsert(abc_t, "a", HOFFSET(abc, a), H5T_NATIVE_INT32);
      H5Tinsert(abc_t, "b", HOFFSET(abc, b), H5T_NATIVE_DOUBLE);
      H5Tinsert(abc_t, "c", HOFFSET(abc, c), H5T_NATIVE_INT32);
      abc g3[8], a3;
      for (int e = 0; e < 8; e++) g3[e] = (abc){0, 0, -7};
      a3 = (abc){0, 0, -9};
      cpl_dataset_info dba;
      OK(cpl_input_inquire(in, "ba", &dba));
      OK(cpl_input_get(in, "ba", abc_t, NULL, NULL, g3));
      OK(cpl_input_attr_get(in, NULL, "ab", abc_t, 1, &a3));
      for (int e = 0; e < (int)dba.dims[0] && e < 8; e++)
        CHECK(g3[e].a == e + 1 && g3[e].b == e + 1 && g3[e].c == -7, "ba[%d] as a, b, c: %d %g %d",
              e, g3[e].a, g3[e].b, g3[e].c);
      CHECK(a3.a == 1 && a3.b == 1 && a3.c == -9, "attribute ab as a, b, c: %d %g %d", a3.a, a3.b,
            a3.c);
      H5Tclose(abc_t);
      OK(cpl_input_end_step(in));
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "end of stream");
      OK(cpl_input_close(in));
    }
    H5Tclose(ab_t);
    H5Tclose(ba_t);
  } else if (!strcmp(sc, "prompt")) {
    /* A request that arrives while the producer computes (outside MPI) is
     * served by the producer's next end_step: producer root tells consumer
     * root (world rank p) that it starts computing, the consumer asks
     * (try_step), and the producer ends its step 1 s later. Before, one
     * MPI_Improbe missed the credit, and step 0 waited for close. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      if (r == 0) MPI_Send(NULL, 0, MPI_BYTE, p, 77, MPI_COMM_WORLD);
      sleep_ms(1000); /* long for a loaded machine: the credit must be there */
      flow_step(out, 0, r, p);
      cpl_output_stats st;
      OK(cpl_output_stats_get(out, 0, &st));
      CHECK(st.delivered == 1 && st.bytes_max == 0,
            "step 0 not sent at its end_step, with the request there: delivered %ld, %zu bytes "
            "copied",
            st.delivered, st.bytes_max);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      if (r == 0)
        MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CHECK(cpl_input_try_step(in, 0.1, &step) == CPL_ERR_TIMEOUT, "a step before any was made");
      /* Rank 0's message says it was the wait try_step was given, not to
       * raise the link's timeout (30 s here), which it did not wait for. */
      CHECK(r != 0 || (has(cpl_last_error(), "no step from the producer within 0.1 s") &&
                       has(cpl_last_error(), "not a failure: the request stays out") &&
                       !has(cpl_last_error(), "raise the link's timeout")),
            "try_step timeout: %s", cpl_last_error());
      OK(cpl_input_begin_step(in, &step));
      flow_check(in, step);
      OK(cpl_input_end_step(in));
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "end of stream");
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "try_now")) {
    /* cpl_input_try_step(in, 0) with the step's header already at the
     * consumer: it takes the step. The consumer asks (its first try times
     * out), tells the producer, then stays out of MPI while the producer
     * answers. Before, the one MPI_Improbe of a zero wait missed the
     * header: MPICH matches what it had taken in, then reads the network. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      if (r == 0)
        MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Barrier(comm);
      flow_step(out, 0, r, p);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      CHECK(cpl_input_try_step(in, 0.1, &step) == CPL_ERR_TIMEOUT, "a step before any was made");
      /* Rank 0's message says it was the wait try_step was given, not to
       * raise the link's timeout (30 s here), which it did not wait for. */
      CHECK(r != 0 || (has(cpl_last_error(), "no step from the producer within 0.1 s") &&
                       has(cpl_last_error(), "not a failure: the request stays out") &&
                       !has(cpl_last_error(), "raise the link's timeout")),
            "try_step timeout: %s", cpl_last_error());
      if (r == 0) MPI_Send(NULL, 0, MPI_BYTE, 0, 79, MPI_COMM_WORLD);
      sleep_ms(1000); /* long for a loaded machine: the header must be there */
      int rc = cpl_input_try_step(in, 0, &step);
      CHECK(rc == CPL_OK && step == 0, "try_step(in, 0) with step 0's header there: %s",
            rc == CPL_OK ? "another step" : cpl_last_error());
      if (rc != CPL_OK) OK(cpl_input_begin_step(in, &step));
      flow_check(in, step);
      OK(cpl_input_end_step(in));
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "end of stream");
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "end_link")) {
    /* cpl_output_end_link on a link whose consumer has asked: the end of
     * stream answers it, and later steps are not for that link (they were
     * sent to a consumer that had the end of stream, and the producer
     * waited in the transfer until the link timeout). */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      if (r == 0)
        MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Barrier(comm);
      OK(cpl_output_end_link(out, 0));
      for (long s = 0; s < 3; s++) flow_step(out, s, r, p);
      cpl_output_stats st;
      OK(cpl_output_stats_get(out, 0, &st));
      CHECK(st.delivered == 0 && st.undelivered == 3, "delivered %ld, undelivered %ld",
            st.delivered, st.undelivered);
      /* the consumer keeps its input open until now: no DETACH helps */
      if (r == 0) MPI_Send(NULL, 0, MPI_BYTE, p, 79, MPI_COMM_WORLD);
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      CHECK(cpl_input_try_step(in, 0.1, &step) == CPL_ERR_TIMEOUT, "a step before any was made");
      /* Rank 0's message says it was the wait try_step was given, not to
       * raise the link's timeout (30 s here), which it did not wait for. */
      CHECK(r != 0 || (has(cpl_last_error(), "no step from the producer within 0.1 s") &&
                       has(cpl_last_error(), "not a failure: the request stays out") &&
                       !has(cpl_last_error(), "raise the link's timeout")),
            "try_step timeout: %s", cpl_last_error());
      if (r == 0) MPI_Send(NULL, 0, MPI_BYTE, 0, 78, MPI_COMM_WORLD);
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "end of the link: %s",
            cpl_last_error());
      if (r == 0)
        MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Barrier(comm);
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "consumer_env")) {
    /* The engine refuses the consumer's environment (the producer's is
     * fine): the consumer's error names link, rank and step, not only the
     * dataset; the producer's transfer times out (not checked). */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      static double blk[8];
      hsize_t dims[1] = {8 * (hsize_t)p}, start[1] = {8 * (hsize_t)r}, count[1] = {8};
      OK(cpl_output_begin_step(out, 0));
      OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, blk));
      cpl_output_end_step(out); /* the transfer times out, here or in close */
      cpl_output_close(out);
    } else {
      setenv("CPL_INTER_ALGORITHM", "bogus", 1);
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      int rc = cpl_input_begin_step(in, &step);
      char want[80];
      snprintf(want, sizeof want,
               "link prod.out->cons.in, receiver %d, step 0: dataset \"x\": ", r);
      CHECK(rc == CPL_ERR_ENV && has(cpl_last_error(), want) &&
                has(cpl_last_error(), "CPL_INTER_ALGORITHM: unknown inter-group algorithm"),
            "consumer: %s: %s", cpl_strerror(rc), cpl_last_error());
      unsetenv("CPL_INTER_ALGORITHM");
      cpl_input_close(in);
    }
  } else if (!strcmp(sc, "rank_leaves")) {
    /* Consumer rank 1 closes its input after step 0 while rank 0 asks
     * for the next: rank 0's wait says the ranks did not all ask. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      flow_step(out, 0, r, p); /* one step: close has nothing to wait for */
      OK(cpl_output_close(out));
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      OK(cpl_input_begin_step(in, &step));
      flow_check(in, step);
      OK(cpl_input_end_step(in));
      if (r == 0) {
        int rc = cpl_input_begin_step(in, &step);
        CHECK(rc == CPL_ERR_TIMEOUT &&
                  has(cpl_last_error(), "link prod.out->cons.in, receiver 0, step after 0: not "
                                        "every rank of \"cons\" asked for a step (its 2 ranks"),
              "rank 1 gone: %s: %s", cpl_strerror(rc), cpl_last_error());
      }
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "rank_skips_end")) {
    /* Producer rank 1 closes in the middle of step 1 instead of ending it:
     * rank 0's end_step times out saying that the component's ranks did
     * not all reach the end of the step, and the consumer gets that. */
    if (producer) {
      sleep_ms(300); /* the consumer asks first: step 0 goes at its end_step (else rank
                      * 1 would wait in close to deliver it, for the peer timeout) */
      OK(cpl_output_open(ctx, "out", &out));
      flow_step(out, 0, r, p);
      static double blk[FLOW_N];
      hsize_t dims[1] = {(hsize_t)FLOW_N * p}, start[1] = {(hsize_t)FLOW_N * r},
              count[1] = {FLOW_N};
      OK(cpl_output_begin_step(out, 1));
      OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, blk));
      if (r == 1) { /* (a step 0 still queued for a slow consumer fails after it) */
        int rc = cpl_output_close(out);
        CHECK(rc == CPL_ERR_STATE && has(cpl_last_error(), "port prod.out: step 1 was never ended"),
              "close in a step: %s", cpl_last_error());
      } else {
        int rc = cpl_output_end_step(out);
        const char *m = cpl_last_error();
        CHECK(rc == CPL_ERR_TIMEOUT &&
                  has(m, "port prod.out, step 1: not every rank of \"prod\" reached the end of "
                         "the step (its 2 ranks call begin_step and end_step alike"),
              "end_step alone: %s: %s", cpl_strerror(rc), m);
        printf("producer: %s\n", m);
        cpl_output_close(out);
      }
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      int rc, tries = 0;
      /* Step 0 may arrive, or fail with the port; our own wait of 1 s may
       * pass first while the producer waits as long (ask again). */
      while (tries++ < 20 && ((rc = cpl_input_begin_step(in, &step)) == CPL_OK ||
                              (rc == CPL_ERR_TIMEOUT && !has(cpl_last_error(), "producer:")))) {
        if (rc != CPL_OK) continue;
        CHECK(step == 0, "step %ld, want 0", step);
        flow_check(in, step);
        OK(cpl_input_end_step(in));
      }
      CHECK(rc == CPL_ERR_TIMEOUT && has(cpl_last_error(), "producer: port prod.out, step 1: not "
                                                           "every rank of \"prod\" reached"),
            "consumer: %s: %s", cpl_strerror(rc), cpl_last_error());
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "misuse")) {
    /* Calls a component writer gets wrong: each one's message names the
     * call, the port or link and what is wrong (not another call's words,
     * nor HDF5's own diagnostics), and the stream goes on. */
    if (producer) {
      cpl_link_end le;
      CHECK(cpl_context_link(ctx, 0, NULL) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_context_link: out is NULL"),
            "context link into NULL: %s", cpl_last_error());
      CHECK(cpl_context_link(ctx, 1, &le) == CPL_ERR_ARG &&
                has(cpl_last_error(), "component \"prod\" has no link 1 (it has 1)"),
            "context link 1: %s", cpl_last_error());
      CHECK(cpl_output_open(ctx, "out", NULL) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_output_open: out is NULL"),
            "open into NULL: %s", cpl_last_error());
      OK(cpl_output_open(ctx, "out", &out));
      int nlinks;
      CHECK(cpl_output_link_count(NULL, &nlinks) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_output_link_count: out is NULL"),
            "link count of NULL: %s", cpl_last_error());
      cpl_output_stats st;
      CHECK(cpl_output_stats_get(out, 0, NULL) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_output_stats_get: st is NULL"),
            "stats into NULL: %s", cpl_last_error());
      CHECK(cpl_output_stats_get(out, 3, &st) == CPL_ERR_ARG &&
                has(cpl_last_error(), "port prod.out has no link 3 (links 0..0, or -1 for all)"),
            "stats of link 3: %s", cpl_last_error());
      CHECK(cpl_output_link(out, 0, NULL) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_output_link: le is NULL"),
            "link into NULL: %s", cpl_last_error());
      CHECK(
          cpl_output_end_link(out, 3) == CPL_ERR_ARG &&
              has(cpl_last_error(), "cpl_output_end_link: port prod.out has no link 3 (it has 1)"),
          "end of link 3: %s", cpl_last_error());
      double x[6] = {1, 2, 3, 4, 5, 6};
      hsize_t dims[2] = {2 * (hsize_t)p, 3}, start[2] = {2 * (hsize_t)r, 0}, count[2] = {2, 3};
      const long steps[2] = {0, LONG_MAX};
      for (int k = 0; k < 2; k++) {
        OK(cpl_output_begin_step(out, steps[k]));
        OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 2, dims, start, count, x));
        CHECK(cpl_output_attr(out, "x", "", H5T_NATIVE_INT, 1, x) == CPL_ERR_ARG &&
                  has(cpl_last_error(), "cpl_output_attr: port prod.out, step ") &&
                  has(cpl_last_error(), "bad attribute name \"\""),
              "empty attribute name: %s", cpl_last_error());
        CHECK(cpl_output_attr(out, NULL, "t", H5T_NATIVE_INT, 1, NULL) == CPL_ERR_ARG &&
                  has(cpl_last_error(), "attribute \"t\": value is NULL for 1 elements"),
              "NULL attribute value: %s", cpl_last_error());
        static char big[70000];
        CHECK(cpl_output_attr(out, "x", "big", H5T_NATIVE_CHAR, sizeof big, big) == CPL_ERR_ARG &&
                  has(cpl_last_error(), "cpl_output_attr: port prod.out, step ") &&
                  has(cpl_last_error(), ", dataset \"x\": attribute \"big\": 70000 elements of 1 "
                                        "bytes exceed the 65536-byte limit"),
              "attribute over 64 KiB: %s", cpl_last_error());
        /* A type that cannot travel is said with the step and dataset,
         * as the other refusals are (it named only port and attribute). */
        hid_t vls = H5Tcopy(H5T_C_S1);
        H5Tset_size(vls, H5T_VARIABLE);
        CHECK(cpl_output_attr(out, "x", "v", vls, 1, x) == CPL_ERR_UNSUPPORTED &&
                  has(cpl_last_error(), "cpl_output_attr: port prod.out, step ") &&
                  has(cpl_last_error(), ", dataset \"x\": attribute \"v\": variable-length"),
              "attribute of a variable-length type: %s", cpl_last_error());
        H5Tclose(vls);
        CHECK(cpl_output_attr(out, NULL, "bad", (hid_t)-1, 1, x) == CPL_ERR_ARG &&
                  has(cpl_last_error(), "cpl_output_attr: port prod.out, step ") &&
                  has(cpl_last_error(), ": attribute \"bad\": not a valid HDF5 datatype"),
              "attribute of type -1: %s", cpl_last_error());
        OK(cpl_output_attr(out, NULL, "t", H5T_NATIVE_DOUBLE, 1, x));
        OK(cpl_output_attr(out, NULL, "none", H5T_NATIVE_INT, 0, NULL));
        OK(cpl_output_end_step(out));
      }
      /* No step after the last step number: consumers see steps >= 0. */
      CHECK(cpl_output_begin_step(out, -1) == CPL_ERR_ARG &&
                has(cpl_last_error(), "is the last step number there is"),
            "a step after LONG_MAX: %s", cpl_last_error());
      OK(cpl_output_close(out));
      /* Its consumers had the end of stream: no second life (the steps of
       * a reopened port were lost, and counted as delivered). */
      CHECK(cpl_output_open(ctx, "out", &out) == CPL_ERR_STATE &&
                has(cpl_last_error(), "cpl_output_open: port prod.out is closed: its consumers "
                                      "had the end of stream"),
            "reopened a closed port: %s", cpl_last_error());
    } else {
      CHECK(cpl_input_open(ctx, "nope", NULL, &in) == CPL_ERR_ARG &&
                has(cpl_last_error(),
                    "cpl_input_open: component \"cons\" has no input port \"nope\""),
            "open of a port that is not there: %s", cpl_last_error());
      CHECK(cpl_input_open(ctx, "in", "bogus", &in) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_input_open: port cons.in has no link to bogus"),
            "open with a peer that is not there: %s", cpl_last_error());
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      double all[64];
      CHECK(cpl_input_select_rows(in, "a/b", 0, 1) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_input_select_rows: link prod.out->cons.in: bad dataset "
                                      "name \"a/b\" (1-255 printable bytes"),
            "select a bad name: %s", cpl_last_error());
      /* Ranks that ask for different steps: refused on each, nothing asked
       * (rank 1 took rank 0's step as step 0 before). */
      int rc = cpl_input_begin_step_at(in, r == 0 ? CPL_STEP_NEXT : 0, &step);
      CHECK(rc == CPL_ERR_MISMATCH &&
                has(cpl_last_error(), "link prod.out->cons.in: the consumer ranks asked for "
                                      "different steps: rank 0 for the next step, rank 1 for "
                                      "step 0"),
            "ranks asking for different steps: %s: %s", cpl_strerror(rc), cpl_last_error());
      OK(cpl_input_begin_step(in, &step));
      CHECK(step == 0, "step %ld, want 0", step);
      CHECK(cpl_input_dataset(in, 0, NULL) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_input_dataset: info is NULL"),
            "dataset info into NULL: %s", cpl_last_error());
      CHECK(cpl_input_attr(in, NULL, 0, NULL) == CPL_ERR_ARG &&
                has(cpl_last_error(), "cpl_input_attr: info is NULL"),
            "attribute info into NULL: %s", cpl_last_error());
      CHECK(cpl_input_get(in, "x", (hid_t)-1, NULL, NULL, all) == CPL_ERR_ARG &&
                has(cpl_last_error(), "dataset \"x\": memtype is not a datatype"),
            "get into memtype -1: %s", cpl_last_error());
      OK(cpl_input_get(in, "x", H5T_NATIVE_DOUBLE, NULL, NULL, all));
      /* A box of no elements checks the memtype as a full one does: a get
       * that reads nothing in one step (an empty array, an empty share)
       * fails as it will when it reads something (it returned CPL_OK). */
      hsize_t e0[2] = {0, 0}, e1[2] = {0, 3};
      CHECK(cpl_input_get(in, "x", (hid_t)-1, e0, e1, NULL) == CPL_ERR_ARG &&
                has(cpl_last_error(), "dataset \"x\": memtype is not a datatype"),
            "empty get into memtype -1: %s", cpl_last_error());
      CHECK(cpl_input_get(in, "x", H5T_C_S1, e0, e1, NULL) == CPL_ERR_TYPE &&
                has(cpl_last_error(), "HDF5 cannot convert float64 to string"),
            "empty get into a string: %s", cpl_last_error());
      OK(cpl_input_get(in, "x", H5T_NATIVE_FLOAT, e0, e1, NULL));
      /* An attribute of no elements reads into no buffer, as it was set
       * from none (UBSan: memcpy from NULL before). */
      OK(cpl_input_attr_get(in, NULL, "none", H5T_NATIVE_INT, 0, NULL));
      OK(cpl_input_attr_get(in, NULL, "none", H5T_NATIVE_LLONG, 0, NULL));
      OK(cpl_input_end_step(in));
      /* Boxes of one dimension select nothing of a 2-D dataset: get says so. */
      hsize_t s0[1] = {0}, c0[1] = {2};
      OK(cpl_input_select(in, "x", 1, 1, s0, c0));
      OK(cpl_input_begin_step(in, &step));
      CHECK(step == LONG_MAX, "step %ld, want LONG_MAX", step);
      hsize_t s2[2] = {0, 0}, c2[2] = {1, 3};
      CHECK(cpl_input_get(in, "x", H5T_NATIVE_DOUBLE, s2, c2, all) == CPL_ERR_ARG &&
                has(cpl_last_error(), "this rank selected boxes of 1 dimension for it, but the "
                                      "dataset has 2"),
            "get with boxes of another rank: %s", cpl_last_error());
      OK(cpl_input_end_step(in));
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "end of stream");
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "serve_split")) {
    /* A serving port whose ranks send one step to different links (rank r
     * to link r): refused on every producer rank, before anything moves,
     * and both consumers get the reason. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      OK(cpl_output_serve(out));
      await_both_requests(out);
      static double blk[FLOW_N];
      hsize_t dims[1] = {(hsize_t)FLOW_N * p}, start[1] = {(hsize_t)FLOW_N * r},
              count[1] = {FLOW_N};
      OK(cpl_output_begin_step(out, 0));
      OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, blk));
      int rc = cpl_output_send(out, r);
      CHECK(rc == CPL_ERR_MISMATCH &&
                has(cpl_last_error(), "port prod.out, step 0: the component's ranks sent the step "
                                      "to different links: rank 0 to link 0, rank 1 to link 1"),
            "send to different links: %s: %s", cpl_strerror(rc), cpl_last_error());
      cpl_output_close(out);
    } else {
      first_step_fails(ctx, CPL_ERR_MISMATCH,
                       "producer: port prod.out, step 0: the component's ranks sent the step to "
                       "different links");
    }
  } else if (!strcmp(sc, "close_open_step")) {
    /* Close with step 1 open while step 0 waits in the queue for a
     * consumer that asks too late: the open step is the error, the
     * failed delivery is said after it (it replaced it before). */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      flow_step(out, 0, r, p);
      OK(cpl_output_begin_step(out, 1));
      int rc = cpl_output_close(out);
      const char *m = cpl_last_error();
      CHECK(rc == CPL_ERR_STATE &&
                has(m, "cpl_output_close: port prod.out: step 1 was never ended; it is not sent; "
                       "then, delivering the steps queued before it: ") &&
                has(m, "within 1 s"),
            "close in a step: %s: %s", cpl_strerror(rc), m);
    } else {
      sleep_ms(2500); /* past the producer's wait for a request */
      OK(cpl_input_open(ctx, "in", NULL, &in));
      cpl_input_close(in);
    }
  } else if (!strcmp(sc, "close_late_consumer")) {
    /* Close fails delivering step 0 to a consumer that asks too late: the
     * consumer gets that failure when it asks, not a timeout of its own
     * that cannot tell what the producer does. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      flow_step(out, 0, r, p);
      int rc = cpl_output_close(out);
      CHECK(rc == CPL_ERR_TIMEOUT && has(cpl_last_error(), "within 1 s"), "close: %s: %s",
            cpl_strerror(rc), cpl_last_error());
    } else {
      sleep_ms(2500); /* past the producer's wait for a request */
      first_step_fails(ctx, CPL_ERR_TIMEOUT,
                       "producer: link prod.out->cons.in, sender 0, step 0: the consumer took no "
                       "step within 1 s");
    }
  } else if (!strcmp(sc, "close_in_step")) {
    /* The producer closes (as cpl_finalize would) inside step 1, after
     * step 0 went out: the consumer gets the producer's error after step
     * 0. It got the end of stream, and took 1 step for the whole stream. */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      flow_step(out, 0, r, p);
      OK(cpl_output_begin_step(out, 1));
      int rc = cpl_output_close(out);
      CHECK(rc == CPL_ERR_STATE && has(cpl_last_error(), "port prod.out: step 1 was never ended"),
            "close in a step: %s: %s", cpl_strerror(rc), cpl_last_error());
    } else {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      OK(cpl_input_begin_step(in, &step));
      CHECK(step == 0, "step %ld, want 0", step);
      flow_check(in, step);
      OK(cpl_input_end_step(in));
      int rc = cpl_input_begin_step(in, &step);
      CHECK(rc == CPL_ERR_STATE && has(cpl_last_error(), "producer: cpl_output_close: port "
                                                         "prod.out: step 1 was never ended"),
            "consumer after step 0: %s: %s", cpl_strerror(rc), cpl_last_error());
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "refuse_split") || !strcmp(sc, "end_link_split")) {
    /* A serving port whose ranks refuse, or end, different links (rank r
     * names link r): refused on every producer rank, and both consumers
     * get the reason instead of waiting for an answer. */
    int refuse = !strcmp(sc, "refuse_split");
    const char *call = refuse ? "cpl_output_refuse" : "cpl_output_end_link";
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      OK(cpl_output_serve(out));
      await_both_requests(out);
      int rc = refuse ? cpl_output_refuse(out, r, "not kept") : cpl_output_end_link(out, r);
      char expect[160];
      snprintf(expect, sizeof expect,
               "%s: port prod.out: the component's ranks named different links: rank 0 link 0, "
               "rank 1 link 1",
               call);
      CHECK(rc == CPL_ERR_MISMATCH && has(cpl_last_error(), expect), "%s: %s: %s", call,
            cpl_strerror(rc), cpl_last_error());
      cpl_output_close(out);
    } else {
      first_step_fails(ctx, CPL_ERR_MISMATCH, "named different links");
    }
  } else if (!strcmp(sc, "read_in1_first") || !strcmp(sc, "read_in2_first") ||
             !strcmp(sc, "read_latest_first")) {
    /* One producer port, two links into one consumer, which reads one
     * of them to its end before it opens the other (as many steps as
     * the links' depth holds: more would wait for the unread link). The
     * producer's close delivered the links in turn and ended them all at
     * the end: the first link's end never came, both sides timed out. */
    enum { STEPS = 2 };
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      for (long s = 0; s < STEPS; s++) OK(publish(out, s, r, p));
      OK(cpl_output_close(out));
    } else {
      const char *order[2] = {"in1", "in2"};
      if (sc[6] == '2' || sc[5] == 'l') order[0] = "in2", order[1] = "in1";
      for (int k = 0; k < 2; k++) {
        /* read_latest_first: in2, under latest, may skip to the newest */
        const int latest = sc[5] == 'l' && k == 0;
        OK(cpl_input_open(ctx, order[k], NULL, &in));
        long step, n = 0, last = -1;
        int rc;
        while ((rc = cpl_input_begin_step(in, &step)) == CPL_OK) {
          CHECK(latest ? step > last : step == n, "%s: step %ld after %ld", order[k], step, last);
          n++, last = step;
          OK(cpl_input_end_step(in));
        }
        CHECK(rc == CPL_END_OF_STREAM && (latest ? last == STEPS - 1 : n == STEPS),
              "%s: %ld steps, the last %ld, then %s: %s", order[k], n, last, cpl_strerror(rc),
              rc == CPL_END_OF_STREAM ? "" : cpl_last_error());
        OK(cpl_input_close(in));
      }
    }
  } else if (!strcmp(sc, "own_coll")) {
    /* A component that runs its own inter-group allgather on the link's
     * intercommunicator (cpl_port_link) between steps, with blocks of the
     * step's size. A step moves when its request comes, which the two
     * sides see at different points of their programs: here the consumer
     * asks late, so the producer's own call of step s + 1 is sent before
     * the data of step s. Both took the same engine duplicate, and the
     * consumer read the producer's own values as the step's data, every
     * call returning CPL_OK. */
    cpl_link_end le;
    OK(cpl_port_link(ctx, producer ? "out" : "in", NULL, &le));
    if (producer) OK(cpl_output_open(ctx, "out", &out));
    else OK(cpl_input_open(ctx, "in", NULL, &in));
    for (long s = 0; s < 4; s++) {
      double own = val(s, 5, (unsigned long long)r), got[8];
      if (producer) {
        double x = val(s, 0, (unsigned long long)r);
        hsize_t dims[1] = {(hsize_t)p}, start[1] = {(hsize_t)r}, count[1] = {1};
        OK(cpl_output_begin_step(out, s));
        OK(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, &x));
        OK(cpl_output_end_step(out));
        OK(cpl_inter_allgather(&own, 1, MPI_DOUBLE, NULL, 0, MPI_DOUBLE, CPL_SENDER, le.intercomm,
                               NULL));
      } else {
        OK(cpl_inter_allgather(NULL, 0, MPI_DOUBLE, got, 1, MPI_DOUBLE, CPL_RECEIVER, le.intercomm,
                               NULL));
        for (int i = 0; i < le.remote_size; i++)
          CHECK(got[i] == val(s, 5, (unsigned long long)i), "own allgather %ld: [%d] = %g", s, i,
                got[i]);
        sleep_ms(150); /* asks after the producer's next own call */
        long step;
        OK(cpl_input_begin_step(in, &step));
        OK(cpl_input_get(in, "x", H5T_NATIVE_DOUBLE, NULL, NULL, got));
        for (int i = 0; i < le.remote_size; i++)
          CHECK(got[i] == val(step, 0, (unsigned long long)i), "step %ld: x[%d] = %g, want %g",
                step, i, got[i], val(step, 0, (unsigned long long)i));
        OK(cpl_input_end_step(in));
      }
    }
    if (producer) OK(cpl_output_close(out));
    else {
      long step;
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "end of stream");
      OK(cpl_input_close(in));
    }
  } else if (!strcmp(sc, "never_opened")) {
    /* A consumer that never opens its input: the producer's close ends
     * at the consumer's cpl_finalize and says its steps were not taken
     * (CMakeLists.txt checks the line). */
    if (producer) {
      OK(cpl_output_open(ctx, "out", &out));
      for (long s = 0; s < 2; s++) OK(publish(out, s, r, p));
      OK(cpl_output_close(out));
    }
  } else if (!strcmp(sc, "unopened")) {
    /* A producer that never opens its port: consumers see end of stream
     * at cpl_finalize, not a timeout. */
    if (!producer) {
      OK(cpl_input_open(ctx, "in", NULL, &in));
      long step;
      CHECK(cpl_input_begin_step(in, &step) == CPL_END_OF_STREAM, "EOS");
    }
  } else {
    fprintf(stderr, "unknown scenario %s\n", sc);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  OK(cpl_finalize(ctx));
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (wrank == 0) printf("%s: %s (%d failures)\n", sc, all ? "FAILED" : "passed", all);
  MPI_Finalize();
  return all ? 1 : 0;
}
