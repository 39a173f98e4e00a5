/*
 * Test consumer: receives steps on one input port and checks every value,
 * type, shape and attribute against testdata.h; any difference aborts the
 * job with a message naming step, dataset and element.
 *
 *   consumer PORT SEED,NSTEPS,FIRST,STRIDE [--flat] [--delay-ms N]
 *
 * --flat: one step numbered 0 carrying the content of step FIRST (what the
 * source makes of a file without step groups).
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
  fprintf(stderr, "consumer rank %d: step %ld: %s: %s\n", g_rank, g_step,
          what, cpl_last_error());
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
  if (memcmp(got, want->buf, bytes))
    fail("attribute %s differs (%zu bytes)", want->name, bytes);
}

static void check_dataset(cpl_input *in, const td_dataset *d, long content,
                          int seed) {
  cpl_dataset_info info;
  check(cpl_input_inquire(in, d->name, &info), d->name);
  hid_t t = td_type(d->kind);
  if (info.rank != d->rank) fail("%s: rank %d, want %d", d->name, info.rank, d->rank);
  for (int k = 0; k < d->rank; k++)
    if (info.dims[k] != d->dims[k])
      fail("%s: dim %d is %llu, want %llu", d->name, k,
           (unsigned long long)info.dims[k], (unsigned long long)d->dims[k]);
  if (H5Tequal(info.type, t) <= 0) fail("%s: not the producer's type", d->name);
  if (info.nattrs != TD_NDATTRS) fail("%s: %d attributes, want %d", d->name, info.nattrs, TD_NDATTRS);
  hsize_t n = 1, zero[3] = {0, 0, 0};
  for (int k = 0; k < d->rank; k++) n *= d->dims[k];
  const size_t es = td_size(d->kind);
  unsigned char *got = calloc(n + 1, es), *want = calloc(n + 1, es);
  if (n) check(cpl_input_get(in, d->name, t, NULL, NULL, got), d->name);
  td_fill(d, zero, d->dims, content, seed, want);
  for (hsize_t e = 0; e < n; e++)
    if (!same(d->kind, got + e * es, want + e * es))
      fail("%s: element %llu of %llu differs", d->name,
           (unsigned long long)e, (unsigned long long)n);
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

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  td_stream st;
  int flat = 0, delay_ms = 0;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--flat")) flat = 1;
    else if (!strcmp(argv[i], "--delay-ms") && i + 1 < argc) delay_ms = atoi(argv[++i]);
    else argc = 0;
  }
  if (argc < 3 || td_parse_stream(argv[2], &st)) {
    fprintf(stderr, "usage: consumer PORT SEED,NSTEPS,FIRST,STRIDE [--flat] [--delay-ms N]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  cpl_context *ctx;
  check(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx), "cpl_init");
  const double t0 = MPI_Wtime();
  cpl_input *in;
  check(cpl_input_open(ctx, argv[1], NULL, &in), "cpl_input_open");
  int got = 0;
  for (;;) {
    long step;
    int rc = cpl_input_begin_step(in, &step);
    if (rc == CPL_END_OF_STREAM) break;
    check(rc, "begin_step");
    g_step = step;
    const long want = flat ? 0 : st.first + got * st.stride;
    const long content = flat ? st.first : want;
    if (got >= st.nsteps) fail("one step too many (want %d)", st.nsteps);
    if (step != want) fail("step number %ld, want %ld", step, want);
    int nds = 0, nsa = 0;
    check(cpl_input_dataset_count(in, &nds), "dataset_count");
    if (nds != TD_NDS) fail("%d datasets, want %d", nds, TD_NDS);
    for (int k = 0; k < TD_NDS; k++) check_dataset(in, &td_datasets[k], content, st.seed);
    check(cpl_input_attr_count(in, NULL, &nsa), "attr_count");
    if (nsa != TD_NSATTRS) fail("%d step attributes, want %d", nsa, TD_NSATTRS);
    for (int a = 0; a < TD_NSATTRS; a++) {
      td_attr at;
      td_step_attr(a, content, st.seed, &at);
      check_attr(in, NULL, &at);
      H5Tclose(at.type);
    }
    check(cpl_input_end_step(in), "end_step");
    got++;
    if (delay_ms) nanosleep(&(struct timespec){delay_ms / 1000, (delay_ms % 1000) * 1000000L}, NULL);
  }
  if (got != st.nsteps) fail("received %d steps, want %d", got, st.nsteps);
  check(cpl_input_close(in), "cpl_input_close");
  int crank;
  MPI_Comm comm;
  cpl_component_comm(ctx, &comm);
  MPI_Comm_rank(comm, &crank);
  if (crank == 0)
    printf("consumer: verified %d steps after %.2f s\n", got, MPI_Wtime() - t0);
  check(cpl_finalize(ctx), "cpl_finalize");
  MPI_Finalize();
  return 0;
}
