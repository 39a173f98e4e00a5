/*
 * step_bench: the C side of the step benchmarks: the Python overhead
 * benchmark (coupler/python/bench/bench_overhead.py runs it against
 * steps.py, which does the same in Python) and scripts/bench_trace.sh.
 * Launched by cpl-run as every component of a two-component workflow;
 * the component name says the role (prod*, cons*). CALLS 0: no `solo`
 * port is needed.
 *
 *   step_bench BYTES STEPS WARMUP CALLS
 *   step_bench --datasets N STEPS WARMUP
 *
 * Producers publish STEPS steps of one float64 dataset of BYTES in total,
 * split evenly over their ranks; every consumer rank reads the whole array
 * into the same buffer each step. Consumer rank 0 prints the time per
 * step after WARMUP steps: "steps: per_step_us=X".
 * The fixed cost of the calls, apart from any transfer: producer rank 0
 * first times CALLS steps (begin, put, end) on port `solo`, which has no
 * link, and prints "solo_step_us=X"; consumer rank 0 times CALLS gets of
 * the first step and prints "get_us=X".
 *
 * --datasets: many small datasets per step, for the cost per name.
 * Producers publish STEPS steps of N datasets "d000000".. of 8 float64,
 * split over their ranks, each with an int32 attribute "k" = its index, and
 * a step attribute "t". A consumer rank walks the datasets by index, gets
 * each by name, counts its attributes, reads "k" by name and checks it.
 * After WARMUP steps, producer rank 0 prints "steps: put_step_us=X" (the
 * pipeline's pace: end_step waits for the consumer's credits) and consumer
 * rank 0 "steps: per_step_us=X". With no step_bench consumer (a stage and
 * an HDF5 sink downstream) the producer's line is the one to read.
 */
#include <coupler.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ok(int rc, const char *what) {
  if (rc == CPL_OK) return;
  fprintf(stderr, "step_bench: %s: %s\n", what, cpl_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

#define DS_ELEMS 8 /* float64 per dataset in --datasets */

static void many_producer(cpl_context *ctx, int r, int p, long nds, long steps, long warmup) {
  const hsize_t dims = DS_ELEMS, start = DS_ELEMS * (hsize_t)r / (hsize_t)p;
  const hsize_t count = DS_ELEMS * (hsize_t)(r + 1) / (hsize_t)p - start;
  double block[DS_ELEMS];
  for (hsize_t i = 0; i < count; i++) block[i] = (double)(start + i);
  char name[32];
  cpl_output *out;
  double t0 = MPI_Wtime();
  ok(cpl_output_open(ctx, "out", &out), "open");
  for (long s = 0; s < steps; s++) {
    if (s == warmup) t0 = MPI_Wtime();
    ok(cpl_output_begin_step(out, -1), "begin_step");
    for (long d = 0; d < nds; d++) {
      const int k = (int)d;
      snprintf(name, sizeof name, "d%06ld", d);
      ok(cpl_output_put(out, name, H5T_NATIVE_DOUBLE, 1, &dims, &start, &count, block), "put");
      if (r == 0) ok(cpl_output_attr(out, name, "k", H5T_NATIVE_INT32, 1, &k), "attr");
    }
    const double t = (double)s;
    if (r == 0) ok(cpl_output_attr(out, NULL, "t", H5T_NATIVE_DOUBLE, 1, &t), "step attr");
    ok(cpl_output_end_step(out), "end_step");
  }
  if (r == 0)
    printf("steps: put_step_us=%.3f\n", 1e6 * (MPI_Wtime() - t0) / (double)(steps - warmup));
  ok(cpl_output_close(out), "close");
}

static void many_consumer(cpl_context *ctx, int r, long warmup) {
  cpl_input *in;
  long step, seen = 0;
  double t0 = MPI_Wtime(), buf[DS_ELEMS];
  int rc;
  ok(cpl_input_open(ctx, "in", NULL, &in), "open");
  while ((rc = cpl_input_begin_step(in, &step)) == CPL_OK) {
    int nds, na, k;
    ok(cpl_input_dataset_count(in, &nds), "dataset_count");
    for (int i = 0; i < nds; i++) {
      cpl_dataset_info info;
      ok(cpl_input_dataset(in, i, &info), "dataset");
      ok(cpl_input_get(in, info.name, H5T_NATIVE_DOUBLE, NULL, NULL, buf), "get");
      ok(cpl_input_attr_count(in, info.name, &na), "attr_count");
      ok(cpl_input_attr_get(in, info.name, "k", H5T_NATIVE_INT, 1, &k), "attr_get");
      if (na != 1 || k != i || buf[DS_ELEMS - 1] != DS_ELEMS - 1)
        ok(CPL_ERR_INTERNAL, "wrong data");
    }
    ok(cpl_input_end_step(in), "end_step");
    if (++seen == warmup) t0 = MPI_Wtime();
  }
  double t = MPI_Wtime() - t0;
  if (rc != CPL_END_OF_STREAM) ok(rc, "begin_step");
  if (r == 0) printf("steps: per_step_us=%.3f\n", 1e6 * t / (double)(seen - warmup));
  ok(cpl_input_close(in), "close");
}

/* One dataset of n doubles split over the producers (scripts/bench_trace.sh);
 * calls > 0 also times put/end_step on an unlinked port and get. */
static void one_dataset(cpl_context *ctx, int producer, int r, int p, hsize_t n, long steps,
                        long warmup, long calls) {
  if (producer) {
    hsize_t start = n * (hsize_t)r / (hsize_t)p;
    hsize_t count = n * (hsize_t)(r + 1) / (hsize_t)p - start;
    double *block = malloc((count + 1) * sizeof *block);
    for (hsize_t i = 0; i < count; i++) block[i] = (double)(start + i);
    cpl_output *out;
    if (calls > 0) { /* port `solo` has no link: nothing moves */
      ok(cpl_output_open(ctx, "solo", &out), "open solo");
      double t0 = MPI_Wtime();
      for (long s = 0; s < calls; s++) {
        ok(cpl_output_begin_step(out, -1), "begin_step");
        ok(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, &n, &start, &count, block), "put");
        ok(cpl_output_end_step(out), "end_step");
      }
      if (r == 0) printf("steps: solo_step_us=%.3f\n", 1e6 * (MPI_Wtime() - t0) / (double)calls);
      ok(cpl_output_close(out), "close solo");
    }
    ok(cpl_output_open(ctx, "out", &out), "open");
    for (long s = 0; s < steps; s++) {
      ok(cpl_output_begin_step(out, -1), "begin_step");
      ok(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, &n, &start, &count, block), "put");
      ok(cpl_output_end_step(out), "end_step");
    }
    ok(cpl_output_close(out), "close");
    free(block);
  } else {
    double *all = malloc((n + 1) * sizeof *all), t0 = 0;
    cpl_input *in;
    long step, seen = 0;
    int rc;
    ok(cpl_input_open(ctx, "in", NULL, &in), "open");
    while ((rc = cpl_input_begin_step(in, &step)) == CPL_OK) {
      if (seen == 0 && r == 0 && calls > 0) {
        double c0 = MPI_Wtime();
        for (long c = 0; c < calls; c++)
          ok(cpl_input_get(in, "x", H5T_NATIVE_DOUBLE, NULL, NULL, all), "get");
        printf("steps: get_us=%.3f\n", 1e6 * (MPI_Wtime() - c0) / (double)calls);
      }
      ok(cpl_input_get(in, "x", H5T_NATIVE_DOUBLE, NULL, NULL, all), "get");
      ok(cpl_input_end_step(in), "end_step");
      if (++seen == warmup) t0 = MPI_Wtime();
    }
    double t = MPI_Wtime() - t0;
    if (rc != CPL_END_OF_STREAM) ok(rc, "begin_step");
    if (all[n - 1] != (double)(n - 1)) ok(CPL_ERR_INTERNAL, "wrong data");
    if (r == 0) printf("steps: per_step_us=%.3f\n", 1e6 * t / (double)(seen - warmup));
    ok(cpl_input_close(in), "close");
    free(all);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int many = argc == 5 && !strcmp(argv[1], "--datasets");
  if (argc != 5) {
    fprintf(stderr, "usage: step_bench BYTES STEPS WARMUP CALLS\n"
                    "       step_bench --datasets N STEPS WARMUP\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long nds = 0, steps, warmup, calls = 0;
  hsize_t n = 0;
  if (many) {
    nds = strtol(argv[2], NULL, 10), steps = strtol(argv[3], NULL, 10);
    warmup = strtol(argv[4], NULL, 10);
    if (nds < 1 || warmup < 0 || steps <= warmup) {
      fprintf(stderr, "step_bench --datasets: want N >= 1 and STEPS > WARMUP >= 0\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  } else {
    n = (hsize_t)(strtoull(argv[1], NULL, 10) / sizeof(double));
    steps = strtol(argv[2], NULL, 10), warmup = strtol(argv[3], NULL, 10);
    calls = strtol(argv[4], NULL, 10);
    /* STEPS <= WARMUP printed a negative time per step (the clock was never
     * started), and n 0 read before the buffer. */
    if (n < 1 || warmup < 0 || steps <= warmup || calls < 0) {
      fprintf(stderr,
              "step_bench: want BYTES >= 8, STEPS > WARMUP >= 0 and CALLS >= 0, got %s %s "
              "%s %s\n",
              argv[1], argv[2], argv[3], argv[4]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  cpl_context *ctx;
  ok(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx), "cpl_init");
  const char *name;
  MPI_Comm comm;
  int r, p;
  ok(cpl_context_component(ctx, NULL, &name), "component");
  ok(cpl_component_comm(ctx, &comm), "comm");
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  const int producer = !strncmp(name, "prod", 4);
  if (!many) one_dataset(ctx, producer, r, p, n, steps, warmup, calls);
  else if (producer) many_producer(ctx, r, p, nds, steps, warmup);
  else many_consumer(ctx, r, warmup);
  ok(cpl_finalize(ctx), "cpl_finalize");
  MPI_Finalize();
  return 0;
}
