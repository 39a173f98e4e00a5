/*
 * Test producer: publishes the known content of testdata.h on one output
 * port, irregularly decomposed (each dataset split along its `split`
 * dimension with weights r+1, so some ranks own nothing).
 *
 *   producer PORT SEED,NSTEPS,FIRST,STRIDE [--abort-after N] [--gap MS]
 *
 * --abort-after N: after ending N steps, wait 2 s and abort the job (a
 * crash, for the sink's flush-per-step guarantee).
 * --gap MS: sleep MS milliseconds before each step (a producer's pace).
 */
#include <mpi.h>
#include <time.h>

#include "coupler.h"
#include "testdata.h"

static void check(int rc, const char *what, int rank) {
  if (rc == CPL_OK) return;
  fprintf(stderr, "producer rank %d: %s: %s\n", rank, what, cpl_last_error());
  nanosleep(&(struct timespec){0, 300000000L}, NULL); /* let hydra forward it */
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  td_stream st;
  int abort_after = -1, gap_ms = 0, bad = argc < 3 || argc % 2 == 0;
  for (int i = 3; !bad && i + 1 < argc; i += 2)
    if (!strcmp(argv[i], "--abort-after")) abort_after = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--gap")) gap_ms = atoi(argv[i + 1]);
    else bad = 1;
  if (bad || td_parse_stream(argv[2], &st)) {
    fprintf(stderr, "usage: producer PORT SEED,NSTEPS,FIRST,STRIDE [--abort-after N] [--gap MS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  cpl_context *ctx;
  int wrank = 0, rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  check(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx), "cpl_init", wrank);
  const double t0 = MPI_Wtime();
  MPI_Comm comm;
  cpl_component_comm(ctx, &comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  cpl_output *out;
  check(cpl_output_open(ctx, argv[1], &out), "cpl_output_open", rank);
  for (int i = 0; i < st.nsteps; i++) {
    const long step = st.first + i * st.stride;
    void *bufs[TD_NDS];
    nanosleep(&(struct timespec){gap_ms / 1000, gap_ms % 1000 * 1000000L}, NULL);
    check(cpl_output_begin_step(out, step), "begin_step", rank);
    for (int k = 0; k < TD_NDS; k++) {
      const td_dataset *d = &td_datasets[k];
      hsize_t start[3] = {0, 0, 0}, count[3];
      memcpy(count, d->dims, sizeof count);
      td_split(d->dims[d->split], rank, size, &start[d->split], &count[d->split]);
      hsize_t n = 1;
      for (int j = 0; j < d->rank; j++) n *= count[j];
      bufs[k] = malloc(n * td_size(d->kind) + 1);
      td_fill(d, start, count, step, st.seed, bufs[k]);
      hid_t t = td_type(d->kind);
      check(cpl_output_put(out, d->name, t, d->rank, d->dims, start, count, bufs[k]), d->name,
            rank);
      for (int a = 0; a < TD_NDATTRS; a++) {
        td_attr at;
        td_dataset_attr(d, a, step, st.seed, &at);
        check(cpl_output_attr(out, d->name, at.name, at.type, at.n, at.buf), at.name, rank);
        H5Tclose(at.type);
      }
      H5Tclose(t);
    }
    for (int a = 0; a < TD_NSATTRS; a++) {
      td_attr at;
      td_step_attr(a, step, st.seed, &at);
      check(cpl_output_attr(out, NULL, at.name, at.type, at.n, at.buf), at.name, rank);
      H5Tclose(at.type);
    }
    check(cpl_output_end_step(out), "end_step", rank);
    for (int k = 0; k < TD_NDS; k++) free(bufs[k]);
    if (i + 1 == abort_after) {
      nanosleep(&(struct timespec){2, 0}, NULL); /* the sink writes meanwhile */
      fprintf(stderr, "producer: aborting after %d steps, as asked\n", abort_after);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  check(cpl_output_close(out), "cpl_output_close", rank);
  /* When the producer is free again: with a stage in between, long before
   * a slow consumer is done. */
  if (rank == 0) printf("producer: %d steps delivered after %.2f s\n", st.nsteps, MPI_Wtime() - t0);
  check(cpl_finalize(ctx), "cpl_finalize", rank);
  MPI_Finalize();
  return 0;
}
