/*
 * Puts in two threads at once, one per output port, as coupler.h allows
 * (the local calls may run in several threads on different ports), the
 * program making no HDF5 call of its own before them. H5T_NATIVE_DOUBLE
 * is one: the macro calls H5open(), in the program's thread and outside
 * cpl_hdf5_lock, and the first H5open() of a process initialises HDF5,
 * which raced with the other thread's put inside the lock (HDF5-DIAG
 * "H5CX__init_package(): not a dataset transfer property list", refused
 * puts, a crash); now a port's open initialises HDF5. argv: none; the component name says the role
 * (prod*, cons*): prod puts on ports o1 and o2, each consumer checks its own.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <coupler.h>

#define NDSETS 100
#define STEPS 3

static double val(long step, int port, int k, int r) {
  return (double)(step * 100000 + port * 10000 + k * 10 + r);
}

typedef struct job {
  cpl_output *out;
  int port, r, p, bad;
  long step;
  double v[NDSETS]; /* valid until end_step */
} job;

static pthread_barrier_t together; /* both threads start their puts at once */

static void *put_all(void *arg) {
  job *j = arg;
  pthread_barrier_wait(&together);
  hsize_t dims[1] = {(hsize_t)j->p}, start[1] = {(hsize_t)j->r}, count[1] = {1};
  for (int k = 0; k < NDSETS; k++) {
    char name[16];
    snprintf(name, sizeof name, "d%d", k);
    j->v[k] = val(j->step, j->port, k, j->r);
    if (cpl_output_put(j->out, name, H5T_NATIVE_DOUBLE, 1, dims, start, count, &j->v[k]) ||
        cpl_output_attr(j->out, name, "k", H5T_NATIVE_INT, 1, &k)) {
      fprintf(stderr, "FAIL port o%d rank %d: %s\n", j->port, j->r, cpl_last_error());
      j->bad++;
      return NULL;
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  cpl_context *ctx;
  if (cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx) != CPL_OK) {
    fprintf(stderr, "FAIL cpl_init: %s\n", cpl_last_error());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char *cn;
  cpl_context_component(ctx, NULL, &cn);
  MPI_Comm comm;
  cpl_component_comm(ctx, &comm);
  int r, p, bad = 0;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  if (!strncmp(cn, "prod", 4)) {
    static job jobs[2];
    pthread_barrier_init(&together, NULL, 2);
    cpl_output *outs[2];
    for (int i = 0; i < 2; i++) {
      char port[4];
      snprintf(port, sizeof port, "o%d", i + 1);
      if (cpl_output_open(ctx, port, &outs[i]) != CPL_OK) {
        fprintf(stderr, "FAIL open %s: %s\n", port, cpl_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    }
    /* Deterministic, where the race is not: HDF5 is initialised once a
     * port is open (H5T_NATIVE_DOUBLE_g is set by the initialisation;
     * read without the macro, which would call H5open itself). */
    if (H5T_NATIVE_DOUBLE_g < 0) {
      fprintf(stderr, "FAIL HDF5 is not initialised after cpl_output_open: the puts' "
                      "H5T_NATIVE_DOUBLE would initialise it in the threads\n");
      bad++;
    }
    for (long s = 0; s < STEPS; s++) {
      pthread_t th[2];
      for (int i = 0; i < 2; i++) {
        jobs[i] = (job){.out = outs[i], .port = i + 1, .r = r, .p = p, .step = s};
        bad += cpl_output_begin_step(outs[i], s) != CPL_OK;
      }
      for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, put_all, &jobs[i]);
      for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        bad += jobs[i].bad;
      }
      for (int i = 0; i < 2; i++) bad += cpl_output_end_step(outs[i]) != CPL_OK;
    }
    for (int i = 0; i < 2; i++) bad += cpl_output_close(outs[i]) != CPL_OK;
  } else {
    const int port = cn[4] - '0'; /* cons1, cons2 */
    cpl_input *in;
    long s, n = 0;
    if (cpl_input_open(ctx, "in", NULL, &in) != CPL_OK) MPI_Abort(MPI_COMM_WORLD, 2);
    int np = 0;
    cpl_link_end le;
    cpl_input_link(in, &le);
    np = le.remote_size;
    while (cpl_input_begin_step(in, &s) == CPL_OK) {
      for (int k = 0; k < NDSETS; k++) {
        char name[16];
        double x[16];
        int kk = -1;
        snprintf(name, sizeof name, "d%d", k);
        if (cpl_input_get(in, name, H5T_NATIVE_DOUBLE, NULL, NULL, x) != CPL_OK ||
            cpl_input_attr_get(in, name, "k", H5T_NATIVE_INT, 1, &kk) != CPL_OK || kk != k) {
          fprintf(stderr, "FAIL %s step %ld %s: %s\n", cn, s, name, cpl_last_error());
          bad++;
          continue;
        }
        for (int i = 0; i < np; i++)
          if (x[i] != val(s, port, k, i)) {
            fprintf(stderr, "FAIL %s step %ld %s[%d] = %g\n", cn, s, name, i, x[i]);
            bad++;
          }
      }
      cpl_input_end_step(in);
      n++;
    }
    if (n != STEPS) {
      fprintf(stderr, "FAIL %s: %ld steps, want %d: %s\n", cn, n, STEPS, cpl_last_error());
      bad++;
    }
    cpl_input_close(in);
  }
  cpl_finalize(ctx);
  int all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int wrank;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  if (wrank == 0) printf("thread_puts: %s (%d failures)\n", all ? "FAILED" : "passed", all);
  MPI_Finalize();
  return all ? 1 : 0;
}
