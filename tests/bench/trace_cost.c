/*
 * trace_cost: what one trace record costs the rank that writes it: N calls
 * of the data layer's report path (format, clock, one write) on a context
 * of one component, to a trace file on the given path. Prints the best of
 * 5 rounds in microseconds per record:
 *
 *   trace_cost FILE [N]      (FILE as CPL_TRACE: path or chrome:path)
 *
 * Every rank of a link writes one record per step, so this is the trace's
 * cost per step; scripts/bench_trace.sh sets it against a step's time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/trace.h"
#include "data/data.h"
#include "data/report.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc < 2) {
    fprintf(stderr, "usage: trace_cost FILE [N]\n");
    return 2;
  }
  long n = argc > 2 ? strtol(argv[2], NULL, 10) : 100000;
  cpli_component comp = {.name = "bench"};
  cpli_workflow wf = {.comps = &comp, .ncomps = 1};
  cpli_trace_reset(argv[1]);
  cpli_data_state ds = {.trace = cpli_trace_open(argv[1])};
  if (!ds.trace) return 1;
  cpl_context ctx = {.wf = &wf, .comm = MPI_COMM_WORLD, .comp = 0, .data = &ds};
  cpli_event e = {.link = "bench.out->sink.in",
                  .producer = 1,
                  .bytes = 1048576,
                  .step_bytes = 2097152,
                  .mode = "allgather",
                  .alg = "fc"};
  double best = 1e30;
  for (int round = 0; round < 5; round++) {
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) {
      e.step = i;
      e.t_wait = cpli_trace_now_us();
      e.t_start = e.t_wait + 10;
      e.t_end = e.t_start + 100;
      cpli_report_step(&ctx, &e);
    }
    double us = (MPI_Wtime() - t0) / (double)n * 1e6;
    best = us < best ? us : best;
  }
  printf("trace_us_per_record=%.3f\n", best);
  cpli_trace_close(ds.trace);
  MPI_Finalize();
  return 0;
}
