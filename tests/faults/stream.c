/*
 * A producer or consumer of a long stream, for the fault tests (the
 * fault itself comes from outside: kill, SIGSTOP, or a mode below).
 *   stream prod [quit:N|pair:N|late|hang:N|abort:N]
 *                          publish up to 400 steps of 4096 doubles per
 *                          rank, 50 ms apart; quit:N: exit(0) after N
 *                          steps, without closing or cpl_finalize;
 *                          late: wait 30 s before the first step;
 *                          pair:N: after N steps rank 0 kills itself
 *                          (SIGKILL) and rank 1 aborts the moment it
 *                          sees rank 0 dead (two deaths, one cause);
 *                          hang:N: sleep 120 s inside step N;
 *                          abort:N: rank 1 calls MPI_Abort(MPI_COMM_WORLD,
 *                          3) after N steps
 *   stream cons [stall]    take every step; stall: open the input and
 *                          never begin a step
 *   stream abort_finalized MPI_Abort(MPI_COMM_WORLD, 5) after
 *                          MPI_Finalize (no workflow: MPICH refuses it)
 *   stream abort_before_init MPI_Abort(MPI_COMM_WORLD, 6) before cpl_init
 * Any Coupler error: the message (link, rank, step), then exit 1.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coupler.h"

#define N 4096
#define STEPS 400

static void ok(int rc, const char *what) {
  if (rc == CPL_OK) return;
  fprintf(stderr, "stream: %s: %s: %s\n", what, cpl_strerror(rc), cpl_last_error());
  exit(1); /* cpl-exec stops the job: no cpl_finalize */
}

/* pair:N. Rank 0 tells rank 1 its pid, then SIGKILLs itself; rank 1
 * aborts as soon as /proc shows rank 0 dead (a zombie, or reaped). Only
 * rank 0's death is the cause, and its report must not be lost when
 * rank 1's cpl-exec stops the job first. */
static void die_in_pair(MPI_Comm comm, int r) {
  int pid = (int)getpid();
  if (r == 0) {
    MPI_Send(&pid, 1, MPI_INT, 1, 0, comm);
    kill(getpid(), SIGKILL);
  }
  MPI_Recv(&pid, 1, MPI_INT, 0, 0, comm, MPI_STATUS_IGNORE);
  char path[64], stat[256];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  for (;;) {
    FILE *f = fopen(path, "r");
    if (!f) break; /* reaped */
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *state = strrchr(stat, ')'); /* "pid (comm) S ..." */
    if (state && state[1] && (state[2] == 'Z' || state[2] == 'X')) break;
  }
  abort();
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc > 1 && !strcmp(argv[1], "abort_finalized")) {
    MPI_Finalize();
    return MPI_Abort(MPI_COMM_WORLD, 5);
  }
  if (argc > 1 && !strcmp(argv[1], "abort_before_init")) return MPI_Abort(MPI_COMM_WORLD, 6);
  const char *mode = argc > 2 ? argv[2] : "";
  cpl_context *ctx;
  ok(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx), "cpl_init");
  MPI_Comm comm;
  cpl_component_comm(ctx, &comm);
  int r, p;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  if (argc > 1 && !strcmp(argv[1], "prod")) {
    int quit = !strncmp(mode, "quit:", 5) ? atoi(mode + 5) : -1;
    int pair = !strncmp(mode, "pair:", 5) && p == 2 ? atoi(mode + 5) : -1;
    int hang = !strncmp(mode, "hang:", 5) ? atoi(mode + 5) : -1;
    int abort_at = !strncmp(mode, "abort:", 6) && r == 1 ? atoi(mode + 6) : -1;
    cpl_output *out;
    ok(cpl_output_open(ctx, "out", &out), "open");
    static double x[N];
    if (!strcmp(mode, "late")) nanosleep(&(struct timespec){30, 0}, NULL);
    hsize_t dims[1] = {(hsize_t)N * p}, start[1] = {(hsize_t)N * r}, count[1] = {N};
    for (long s = 0; s < STEPS; s++) {
      if (s == quit) exit(0);
      if (s == pair) die_in_pair(comm, r);
      if (s == abort_at) MPI_Abort(MPI_COMM_WORLD, 3);
      for (int i = 0; i < N; i++) x[i] = (double)s + i;
      ok(cpl_output_begin_step(out, -1), "begin_step");
      if (s == hang) nanosleep(&(struct timespec){120, 0}, NULL);
      ok(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, x), "put");
      ok(cpl_output_end_step(out), "end_step");
      nanosleep(&(struct timespec){0, 50000000L}, NULL);
    }
    ok(cpl_output_close(out), "close");
  } else {
    cpl_input *in;
    ok(cpl_input_open(ctx, "in", NULL, &in), "open");
    if (!strcmp(mode, "stall")) nanosleep(&(struct timespec){120, 0}, NULL);
    long step;
    int rc;
    while ((rc = cpl_input_begin_step(in, &step)) == CPL_OK) ok(cpl_input_end_step(in), "end_step");
    if (rc != CPL_END_OF_STREAM) ok(rc, "begin_step");
    ok(cpl_input_close(in), "close");
  }
  ok(cpl_finalize(ctx), "cpl_finalize");
  MPI_Finalize();
  return 0;
}
