/*
 * Test consumer: receives steps on one input port and checks every value,
 * type, shape and attribute against testdata.h; any difference aborts the
 * job with a message naming step, dataset and element.
 *
 *   consumer PORT SEED,NSTEPS,FIRST,STRIDE [--flat] [--delay-ms N]
 *            [--start-delay-ms N] [--select-rows] [--lossy]
 *            [--requests ITEM,ITEM,...]
 *
 * --flat: one step numbered 0 carrying the content of step FIRST (what the
 * source makes of a file without step groups).
 * --start-delay-ms: sleep before the first request (a late consumer).
 * --select-rows: each rank selects its share of rows of every dataset
 * (cpl_input_select_rows) and checks only those; it prints what it received
 * and fails if it ever held more than its share.
 * --lossy: steps may be missing (an evicting stage): each one received must
 * be a later step of the stream, and the last one the stream's last.
 * --requests: instead of reading the stream in order, ask for steps with
 * cpl_input_begin_step_at, then close the input (leaving early):
 *   N          step N, which must arrive
 *   next[=K]   CPL_STEP_NEXT (the step must be K)
 *   latest[=K] CPL_STEP_LATEST (the step must be K)
 *   latest*K   CPL_STEP_LATEST until step K arrives
 *   missing=N  step N, which must be refused (CPL_ERR_NOT_FOUND; the
 *              message is printed as "consumer: refused: ...")
 *   end        CPL_STEP_NEXT must be end of stream
 *   sleep=MS   sleep MS milliseconds before the next item (a slow reader)
 * Every step received is checked in full against its content.
 */
#include <mpi.h>
#include <stdarg.h>
#include <time.h>

#include "coupler.h"
#include "testdata.h"

static int g_rank;
static long g_step = -1;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "consumer rank %d: step %ld: ", g_rank, g_step);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  nanosleep(&(struct timespec){0, 300000000L}, NULL); /* let hydra forward it */
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void check(int rc, const char *what) {
  if (rc == CPL_OK) return;
  fprintf(stderr, "consumer rank %d: step %ld: %s: %s\n", g_rank, g_step, what, cpl_last_error());
  nanosleep(&(struct timespec){0, 300000000L}, NULL);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static int same(td_kind k, const void *a, const void *b) {
  if (k != TD_PAIR) return memcmp(a, b, td_size(k)) == 0;
  td_pair x, y; /* member by member: padding bytes are not data */
  memcpy(&x, a, sizeof x);
  memcpy(&y, b, sizeof y);
  return x.id == y.id && x.v == y.v;
}

/* The attribute `name` of dataset (NULL: step) equals the expected one. */
static void check_attr(cpl_input *in, const char *ds, const td_attr *want) {
  int n = 0, found = 0;
  check(cpl_input_attr_count(in, ds, &n), "attr_count");
  for (int i = 0; i < n; i++) {
    cpl_attr_info ai;
    check(cpl_input_attr(in, ds, i, &ai), "attr");
    if (strcmp(ai.name, want->name)) continue;
    found = 1;
    if (ai.n != want->n) fail("attribute %s: %zu elements, want %zu", want->name, ai.n, want->n);
  }
  if (!found) fail("attribute %s missing (%d others)", want->name, n);
  unsigned char got[64] = {0};
  check(cpl_input_attr_get(in, ds, want->name, want->type, want->n, got), want->name);
  size_t bytes = H5Tget_size(want->type) * want->n;
  if (memcmp(got, want->buf, bytes)) fail("attribute %s differs (%zu bytes)", want->name, bytes);
}

/* --select-rows: this rank's part of dim 0 (as the data layer splits). */
static int g_part = 0, g_nparts = 1, g_select = 0;
static size_t g_share; /* bytes of this rank's rows of every dataset */

static void rows_part(hsize_t n, hsize_t *start, hsize_t *count) {
  const hsize_t q = n / (hsize_t)g_nparts, r = n % (hsize_t)g_nparts;
  const hsize_t k = (hsize_t)g_part;
  *start = q * k + (k < r ? k : r);
  *count = q + (k < r ? 1 : 0);
}

static void check_dataset(cpl_input *in, const td_dataset *d, long content, int seed) {
  cpl_dataset_info info;
  check(cpl_input_inquire(in, d->name, &info), d->name);
  hid_t t = td_type(d->kind);
  if (info.rank != d->rank) fail("%s: rank %d, want %d", d->name, info.rank, d->rank);
  for (int k = 0; k < d->rank; k++)
    if (info.dims[k] != d->dims[k])
      fail("%s: dim %d is %llu, want %llu", d->name, k, (unsigned long long)info.dims[k],
           (unsigned long long)d->dims[k]);
  if (H5Tequal(info.type, t) <= 0) fail("%s: not the producer's type", d->name);
  if (info.nattrs != TD_NDATTRS)
    fail("%s: %d attributes, want %d", d->name, info.nattrs, TD_NDATTRS);
  hsize_t n = 1, start[3] = {0, 0, 0}, count[3];
  memcpy(count, d->dims, sizeof count);
  if (g_select) rows_part(d->dims[0], &start[0], &count[0]);
  for (int k = 0; k < d->rank; k++) n *= count[k];
  const size_t es = td_size(d->kind);
  unsigned char *got = calloc(n + 1, es), *want = calloc(n + 1, es);
  if (n) check(cpl_input_get(in, d->name, t, start, count, got), d->name);
  td_fill(d, start, count, content, seed, want);
  for (hsize_t e = 0; e < n; e++)
    if (!same(d->kind, got + e * es, want + e * es))
      fail("%s: element %llu of %llu differs", d->name, (unsigned long long)e,
           (unsigned long long)n);
  free(got);
  free(want);
  H5Tclose(t);
  for (int a = 0; a < TD_NDATTRS; a++) {
    td_attr at;
    td_dataset_attr(d, a, content, seed, &at);
    check_attr(in, d->name, &at);
    H5Tclose(at.type);
  }
}

/* Check the step begin_step just opened: its content is step `step`'s. */
static void check_step(cpl_input *in, long step, int seed) {
  g_step = step;
  int nds = 0, nsa = 0;
  check(cpl_input_dataset_count(in, &nds), "dataset_count");
  if (nds != TD_NDS) fail("%d datasets, want %d", nds, TD_NDS);
  for (int k = 0; k < TD_NDS; k++) check_dataset(in, &td_datasets[k], step, seed);
  check(cpl_input_attr_count(in, NULL, &nsa), "attr_count");
  if (nsa != TD_NSATTRS) fail("%d step attributes, want %d", nsa, TD_NSATTRS);
  for (int a = 0; a < TD_NSATTRS; a++) {
    td_attr at;
    td_step_attr(a, step, seed, &at);
    check_attr(in, NULL, &at);
    H5Tclose(at.type);
  }
}

static int in_stream(const td_stream *st, long step) {
  return step >= st->first && (step - st->first) % st->stride == 0 &&
         (step - st->first) / st->stride < st->nsteps;
}

static void sleep_ms(int ms) {
  if (ms > 0) nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

/* --requests: one item after the other (see the top of the file). */
static int run_requests(cpl_input *in, const td_stream *st, char *items, int crank) {
  int got = 0;
  for (char *it = strtok(items, ","); it; it = strtok(NULL, ",")) {
    long want = CPL_STEP_NEXT, expect = -1, step = -1;
    int until = 0, missing = 0, end = 0;
    if (!strncmp(it, "next", 4)) {
      if (it[4] == '=') expect = atol(it + 5);
    } else if (!strncmp(it, "latest", 6)) {
      want = CPL_STEP_LATEST;
      if (it[6] == '=' || it[6] == '*') expect = atol(it + 7);
      until = it[6] == '*';
    } else if (!strncmp(it, "missing=", 8)) {
      want = atol(it + 8);
      missing = 1;
    } else if (!strcmp(it, "end")) {
      end = 1;
    } else if (!strncmp(it, "sleep=", 6)) {
      sleep_ms(atoi(it + 6));
      continue;
    } else {
      want = expect = atol(it);
    }
    for (;;) {
      int rc = cpl_input_begin_step_at(in, want, &step);
      if (missing || end) {
        int ok = missing ? rc == CPL_ERR_NOT_FOUND : rc == CPL_END_OF_STREAM;
        if (!ok)
          fail("request %s: got %s (step %ld), want %s", it, cpl_strerror(rc), step,
               missing ? "not found" : "end of stream");
        if (missing && crank == 0) printf("consumer: refused: %s\n", cpl_last_error());
        break;
      }
      check(rc, it);
      if (!in_stream(st, step)) fail("request %s: step %ld is not in the stream", it, step);
      check_step(in, step, st->seed);
      check(cpl_input_end_step(in), "end_step");
      got++;
      if (crank == 0) printf("consumer: request %s: step %ld verified\n", it, step);
      if (until && step != expect) continue;
      if (expect >= 0 && step != expect) fail("request %s: step %ld, want %ld", it, step, expect);
      break;
    }
  }
  return got;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  td_stream st;
  int flat = 0, delay_ms = 0, start_delay_ms = 0, lossy = 0;
  char *requests = NULL;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--flat")) flat = 1;
    else if (!strcmp(argv[i], "--delay-ms") && i + 1 < argc) delay_ms = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--start-delay-ms") && i + 1 < argc) start_delay_ms = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--select-rows")) g_select = 1;
    else if (!strcmp(argv[i], "--lossy")) lossy = 1;
    else if (!strcmp(argv[i], "--requests") && i + 1 < argc) requests = argv[++i];
    else argc = 0;
  }
  if (argc < 3 || td_parse_stream(argv[2], &st)) {
    fprintf(stderr, "usage: consumer PORT SEED,NSTEPS,FIRST,STRIDE [--flat] [--delay-ms N]\n"
                    "       [--start-delay-ms N] [--select-rows] [--lossy] [--requests ITEMS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  cpl_context *ctx;
  check(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx), "cpl_init");
  const double t0 = MPI_Wtime();
  int crank;
  MPI_Comm comm;
  cpl_component_comm(ctx, &comm);
  MPI_Comm_rank(comm, &crank);
  cpl_input *in;
  check(cpl_input_open(ctx, argv[1], NULL, &in), "cpl_input_open");
  if (g_select) {
    MPI_Comm_size(comm, &g_nparts);
    g_part = crank;
    check(cpl_input_select_rows(in, NULL, g_part, g_nparts), "select_rows");
    for (int k = 0; k < TD_NDS; k++) {
      const td_dataset *d = &td_datasets[k];
      hsize_t s0, c0, n = 1;
      rows_part(d->dims[0], &s0, &c0);
      n = c0;
      for (int j = 1; j < d->rank; j++) n *= d->dims[j];
      g_share += (size_t)n * td_size(d->kind);
    }
  }
  sleep_ms(start_delay_ms);
  int got = 0;
  long last = -1;
  if (requests) {
    got = run_requests(in, &st, requests, crank);
  } else {
    for (;;) {
      long step;
      int rc = cpl_input_begin_step(in, &step);
      if (rc == CPL_END_OF_STREAM) break;
      check(rc, "begin_step");
      g_step = step;
      const long want = flat ? 0 : st.first + got * st.stride;
      const long content = flat ? st.first : want;
      if (got >= st.nsteps) fail("one step too many (want %d)", st.nsteps);
      if (lossy) {
        if (!in_stream(&st, step) || step <= last)
          fail("step %ld is not a later step of the stream (last %ld)", step, last);
        check_step(in, step, st.seed);
      } else {
        if (step != want) fail("step number %ld, want %ld", step, want);
        check_step(in, content, st.seed);
      }
      check(cpl_input_end_step(in), "end_step");
      got++;
      last = step;
      sleep_ms(delay_ms);
    }
    const long final = st.first + (st.nsteps - 1) * st.stride;
    if (lossy && last != final) fail("last step %ld, want %ld", last, final);
    if (!lossy && got != st.nsteps) fail("received %d steps, want %d", got, st.nsteps);
  }
  if (g_select) {
    cpl_input_stats ss;
    check(cpl_input_stats_get(in, &ss), "stats");
    printf("consumer rank %d: %ld steps, received %zu bytes, held at most %zu "
           "(its rows: %zu per step)\n",
           crank, ss.steps, ss.bytes, ss.bytes_max, g_share);
    if (ss.bytes_max > g_share)
      fail("held %zu bytes of step data at once, its rows are %zu", ss.bytes_max, g_share);
  }
  check(cpl_input_close(in), "cpl_input_close");
  if (crank == 0)
    printf("consumer: verified %d steps%s after %.2f s\n", got, lossy ? " (lossy)" : "",
           MPI_Wtime() - t0);
  check(cpl_finalize(ctx), "cpl_finalize");
  MPI_Finalize();
  return 0;
}
