/*
 * step_bench: the C side of the step benchmarks: the Python overhead
 * benchmark (coupler/python/bench/bench_overhead.py runs it against
 * steps.py, which does the same in Python) and scripts/bench_trace.sh.
 * Launched by cpl-run as every component of a two-component workflow;
 * the component name says the role (prod*, cons*). CALLS 0: no `solo`
 * port is needed.
 *
 *   step_bench BYTES STEPS WARMUP CALLS
 *
 * Producers publish STEPS steps of one float64 dataset of BYTES in total,
 * split evenly over their ranks; every consumer rank reads the whole array
 * into the same buffer each step. Consumer rank 0 prints the time per
 * step after WARMUP steps: "steps: per_step_us=X".
 * The fixed cost of the calls, apart from any transfer: producer rank 0
 * first times CALLS steps (begin, put, end) on port `solo`, which has no
 * link, and prints "solo_step_us=X"; consumer rank 0 times CALLS gets of
 * the first step and prints "get_us=X".
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

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc != 5) {
    fprintf(stderr, "usage: step_bench BYTES STEPS WARMUP CALLS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  hsize_t n = (hsize_t)(strtoull(argv[1], NULL, 10) / sizeof(double));
  long steps = strtol(argv[2], NULL, 10), warmup = strtol(argv[3], NULL, 10);
  long calls = strtol(argv[4], NULL, 10);
  cpl_context *ctx;
  ok(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx), "cpl_init");
  const char *name;
  MPI_Comm comm;
  int r, p;
  ok(cpl_context_component(ctx, NULL, &name), "component");
  ok(cpl_component_comm(ctx, &comm), "comm");
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  if (!strncmp(name, "prod", 4)) {
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
  ok(cpl_finalize(ctx), "cpl_finalize");
  MPI_Finalize();
  return 0;
}
