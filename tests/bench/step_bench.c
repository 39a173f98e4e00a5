/*
 * step_bench: time per step of one link, for benchmarks of the data path
 * (scripts/bench_trace.sh: tracing on against off). Launched by cpl-run as
 * both components of a pair; the component name says the role (prod*,
 * cons*).
 *
 *   step_bench BYTES STEPS WARMUP
 *
 * Producers publish STEPS steps of one float64 dataset of BYTES in total,
 * split over their ranks; every consumer rank reads the whole array.
 * Consumer rank 0 prints "per_step_us=X" (mean over the steps after
 * WARMUP).
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
  if (argc != 4) {
    fprintf(stderr, "usage: step_bench BYTES STEPS WARMUP\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  hsize_t n = (hsize_t)(strtoull(argv[1], NULL, 10) / sizeof(double));
  long steps = strtol(argv[2], NULL, 10), warmup = strtol(argv[3], NULL, 10);
  cpl_context *ctx;
  ok(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx), "cpl_init");
  const char *name;
  MPI_Comm comm;
  int r, p;
  ok(cpl_context_component(ctx, NULL, &name), "component");
  ok(cpl_component_comm(ctx, &comm), "comm");
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  double *buf;
  if (!strncmp(name, "prod", 4)) {
    hsize_t start = n * (hsize_t)r / (hsize_t)p;
    hsize_t count = n * (hsize_t)(r + 1) / (hsize_t)p - start;
    buf = calloc(count + 1, sizeof *buf);
    cpl_output *out;
    ok(cpl_output_open(ctx, "out", &out), "open");
    for (long s = 0; s < steps; s++) {
      buf[0] = (double)s;
      ok(cpl_output_begin_step(out, -1), "begin");
      ok(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, &n, &start, &count, buf), "put");
      ok(cpl_output_end_step(out), "end");
    }
    ok(cpl_output_close(out), "close");
  } else {
    buf = malloc((n + 1) * sizeof *buf);
    cpl_input *in;
    ok(cpl_input_open(ctx, "in", NULL, &in), "open");
    double t0 = 0;
    long step, got = 0;
    while (cpl_input_begin_step(in, &step) == CPL_OK) {
      ok(cpl_input_get(in, "x", H5T_NATIVE_DOUBLE, NULL, NULL, buf), "get");
      ok(cpl_input_end_step(in), "end");
      if (++got == warmup) t0 = MPI_Wtime();
    }
    if (r == 0 && got > warmup)
      printf("per_step_us=%.1f\n", (MPI_Wtime() - t0) / (double)(got - warmup) * 1e6);
    ok(cpl_input_close(in), "close");
  }
  free(buf);
  ok(cpl_finalize(ctx), "finalize");
  MPI_Finalize();
  return 0;
}
