/*
 * The cost model at run time, on 2 ranks:
 *   badfile   a tuning file with a bad line: every collective fails with
 *             CPL_ERR_ENV naming file:line, on every rank, no hang;
 *   mismatch  ranks with different CPL_ALPHA: intra- and inter-group
 *             collectives fail with CPL_ERR_MISMATCH on every rank, naming
 *             the values, instead of building different plans; the first
 *             call on a communicator finds it, and every later call says
 *             it again;
 *   algs      one rank sets CPL_INTER_ALGORITHM, CPL_INTRA_ALGORITHM,
 *             CPL_FLOW, CPL_RING or CPL_INTER_ROOT_MAX differently: the first
 *             collective on a new communicator (and inter link) fails
 *             with CPL_ERR_MISMATCH on every rank naming the variable
 *             (CPL_INTER_ROOT_MAX: inter_root_max) and the values, instead of a
 *             timeout blaming a "dead" peer;
 *   badenv    a bad CPL_ALPHA, CPL_BETA, CPL_OVERHEAD, CPL_CHUNK or
 *             CPL_INTER_ROOT_MAX (abc, -5, 0, nan, a chunk below 512, a
 *             fraction of a byte): every call fails with
 *             CPL_ERR_ENV naming the variable and the value; then a
 *             1 MiB allgather at the smallest chunk, 512, runs right.
 * Checked through return codes (cpl-bench would abort, and an aborting
 * job may lose its last output).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coupler.h"

static int failures;

/* Rank 0 against rank 1, as an intercommunicator. */
static void pair_inter(int rank, MPI_Comm *local, MPI_Comm *inter) {
  MPI_Comm_split(MPI_COMM_WORLD, rank, 0, local);
  MPI_Intercomm_create(*local, 0, MPI_COMM_WORLD, 1 - rank, 9, inter);
}

static void expect(int rc, int want, const char *fragment, const char *what, int rank) {
  if (rc != want || !strstr(cpl_last_error(), fragment)) {
    fprintf(stderr, "FAIL rank %d %s: got %d (%s) \"%s\", want %d with \"%s\"\n", rank, what, rc,
            cpl_strerror(rc), cpl_last_error(), want, fragment);
    failures++;
  } else {
    printf("ok   rank %d %-24s -> %s\n", rank, what, cpl_last_error());
  }
}

static int badenv(int rank) {
  unsetenv("CPL_TUNING_FILE");
  setenv("XDG_CONFIG_HOME", "/nonexistent/coupler-test", 1);
  static const char *const cases[][2] = {{"CPL_ALPHA", "abc"},
                                         {"CPL_ALPHA", "-5"},
                                         {"CPL_ALPHA", "0"},
                                         {"CPL_ALPHA", "nan"},
                                         {"CPL_BETA", "abc"},
                                         {"CPL_BETA", "-5"},
                                         {"CPL_BETA", "0"},
                                         {"CPL_BETA", "nan"},
                                         {"CPL_OVERHEAD", "abc"},
                                         {"CPL_OVERHEAD", "-5"},
                                         {"CPL_OVERHEAD", "0"},
                                         {"CPL_OVERHEAD", "nan"},
                                         {"CPL_CHUNK", "abc"},
                                         {"CPL_CHUNK", "-5"},
                                         {"CPL_CHUNK", "0"},
                                         {"CPL_CHUNK", "nan"},
                                         {"CPL_CHUNK", "1"},
                                         {"CPL_CHUNK", "100"},
                                         {"CPL_INTER_ROOT_MAX", "abc"},
                                         {"CPL_INTER_ROOT_MAX", "-5"},
                                         {"CPL_INTER_ROOT_MAX", "100.5"}};
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = 30;
  const int n = 1 << 18; /* ints per rank: 1 MiB */
  int *buf = malloc(2 * (size_t)n * sizeof *buf);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    setenv(cases[c][0], cases[c][1], 1);
    char want[128], what[64];
    snprintf(want, sizeof want, "%s: expected", cases[c][0]);
    snprintf(what, sizeof what, "%s=%s", cases[c][0], cases[c][1]);
    for (int call = 0; call < 2; call++) { /* every call, not only the first */
      const int rc =
          cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_INT, buf, n, MPI_INT, MPI_COMM_WORLD, &opt);
      expect(rc, CPL_ERR_ENV, want, what, rank);
      char val[64];
      snprintf(val, sizeof val, "got \"%s\"", cases[c][1]);
      if (!strstr(cpl_last_error(), val)) {
        fprintf(stderr, "FAIL rank %d %s: value not named: %s\n", rank, what, cpl_last_error());
        failures++;
      }
    }
    unsetenv(cases[c][0]);
  }
  /* the smallest chunk allowed still runs a 1 MiB allgather (chunk 1
   * posted a million receives and crashed MPICH) */
  setenv("CPL_CHUNK", "512", 1);
  for (int i = 0; i < n; i++) buf[(size_t)rank * n + i] = rank * n + i;
  int rc = cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_INT, buf, n, MPI_INT, MPI_COMM_WORLD, &opt);
  int wrong = 0;
  for (int i = 0; i < 2 * n; i++) wrong += buf[i] != i;
  expect(rc, CPL_OK, "", "CPL_CHUNK=512, 1 MiB", rank);
  if (wrong) fprintf(stderr, "FAIL rank %d: %d wrong ints\n", rank, wrong), failures++;
  unsetenv("CPL_CHUNK");
  free(buf);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return all != 0;
}

static int algs(int rank) {
  unsetenv("CPL_TUNING_FILE");
  setenv("XDG_CONFIG_HOME", "/nonexistent/coupler-test", 1);
  /* {variable, rank 0's value ("": unset), rank 1's value, expected text} */
  static const char *const cases[][4] = {
      {"CPL_INTER_ALGORITHM", "", "ring", "values include auto and ring"},
      {"CPL_INTER_ALGORITHM", "fc", "native", "values include fc and native"},
      {"CPL_INTRA_ALGORITHM", "bruck", "", "values include auto and bruck"},
      {"CPL_INTRA_ALGORITHM", "ring", "circulant", "values include circulant and ring"},
      {"CPL_FLOW", "0", "", "values include 0 (lockstep) and not 0"},
      {"CPL_RING", "", "1", "values include unset (the model's choice) and 1"},
      {"CPL_RING", "0", "1", "values include 0 and 1"}};
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = 30; /* a hang would be the bug */
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const char *mine = cases[c][1 + rank];
    if (*mine) setenv(cases[c][0], mine, 1);
    else unsetenv(cases[c][0]);
    char want[160], what[96];
    snprintf(want, sizeof want, "ranks set %s differently (%s", cases[c][0], cases[c][3]);
    snprintf(what, sizeof what, "intra %s %s|%s", cases[c][0], cases[c][1], cases[c][2]);
    MPI_Comm dup; /* the agreement runs at a communicator's first use */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int buf[4] = {rank, rank, 0, 0};
    int rc = cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_INT, buf, 2, MPI_INT, dup, &opt);
    expect(rc, CPL_ERR_MISMATCH, want, what, rank);
    MPI_Comm_free(&dup);
    /* and an inter-group link's first use */
    MPI_Comm local, inter;
    pair_inter(rank, &local, &inter);
    int counts[1] = {4}, displs[1] = {0};
    rc = cpl_inter_allgatherv(buf, rank == 0 ? 4 : 0, MPI_INT, buf, counts, displs, MPI_INT,
                              rank == 0 ? CPL_SENDER : CPL_RECEIVER, inter, &opt);
    snprintf(what, sizeof what, "inter %s %s|%s", cases[c][0], cases[c][1], cases[c][2]);
    expect(rc, CPL_ERR_MISMATCH, want, what, rank);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    unsetenv(cases[c][0]);
  }
  /* the small-block switch point decides the algorithm like the model */
  setenv("CPL_INTER_ROOT_MAX", rank == 0 ? "0" : "1K", 1);
  MPI_Comm d2;
  MPI_Comm_dup(MPI_COMM_WORLD, &d2);
  int b2[4] = {rank, rank, 0, 0};
  expect(cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_INT, b2, 2, MPI_INT, d2, &opt), CPL_ERR_MISMATCH,
         "ranks use different cost models (inter_root_max from 0 to 1024",
         "CPL_INTER_ROOT_MAX 0|1K", rank);
  MPI_Comm_free(&d2);
  unsetenv("CPL_INTER_ROOT_MAX");
  /* the same settings on both ranks still run */
  setenv("CPL_INTRA_ALGORITHM", "bruck", 1);
  setenv("CPL_RING", "0", 1);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  int buf[4] = {-1, -1, -1, -1};
  buf[2 * rank] = buf[2 * rank + 1] = rank; /* in place: own block at 2 rank */
  int rc = cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_INT, buf, 2, MPI_INT, dup, &opt);
  expect(rc, CPL_OK, "", "equal settings", rank);
  if (buf[0] != 0 || buf[1] != 0 || buf[2] != 1 || buf[3] != 1)
    fprintf(stderr, "FAIL rank %d: equal settings: wrong data\n", rank), failures++;
  MPI_Comm_free(&dup);
  unsetenv("CPL_INTRA_ALGORITHM"), unsetenv("CPL_RING");
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return all != 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int bad = argc > 1 && !strcmp(argv[1], "badfile");
  if (size != 2 || argc < 2 ||
      (!bad && strcmp(argv[1], "mismatch") && strcmp(argv[1], "badenv") &&
       strcmp(argv[1], "algs"))) {
    if (rank == 0)
      fprintf(stderr, "usage: mpiexec -n 2 %s badfile|mismatch|badenv|algs\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (!strcmp(argv[1], "algs")) {
    const int rc = algs(rank);
    MPI_Finalize();
    return rc;
  }
  if (!strcmp(argv[1], "badenv")) {
    const int rc = badenv(rank);
    MPI_Finalize();
    return rc;
  }
  char path[256];
  snprintf(path, sizeof path, "/tmp/cpl-tuning-agree.%d", rank == 0 ? (int)getpid() : 0);
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (bad) {
    if (rank == 0) {
      FILE *f = fopen(path, "w");
      if (!f) MPI_Abort(MPI_COMM_WORLD, 1);
      fputs("alpha = 1e-5\nbeta = fast\n", f);
      fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    setenv("CPL_TUNING_FILE", path, 1); /* read at the first collective */
  } else {
    unsetenv("CPL_TUNING_FILE");
    setenv("XDG_CONFIG_HOME", "/nonexistent/coupler-test", 1);
    setenv("CPL_ALPHA", rank == 0 ? "1e-5" : "2e-5", 1);
  }
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.timeout = 30; /* a hang would be the bug */
  int buf[4] = {rank, rank, 0, 0};
  char want[300];
  if (bad) snprintf(want, sizeof want, "tuning file %s:2: beta", path);
  else snprintf(want, sizeof want, "ranks use different cost models (alpha from 1e-05 to 2e-05");
  int rc = cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_INT, buf, 2, MPI_INT, MPI_COMM_WORLD, &opt);
  expect(rc, bad ? CPL_ERR_ENV : CPL_ERR_MISMATCH, want, "intra allgather", rank);
  /* and every later call: each rank would plan with its own model */
  rc = cpl_intra_allgather(MPI_IN_PLACE, 0, MPI_INT, buf, 2, MPI_INT, MPI_COMM_WORLD, &opt);
  expect(rc, bad ? CPL_ERR_ENV : CPL_ERR_MISMATCH, want, "intra allgather again", rank);
  MPI_Comm local, inter;
  pair_inter(rank, &local, &inter);
  int counts[1] = {4}, displs[1] = {0};
  rc = cpl_inter_allgatherv(buf, rank == 0 ? 4 : 0, MPI_INT, buf, counts, displs, MPI_INT,
                            rank == 0 ? CPL_SENDER : CPL_RECEIVER, inter, &opt);
  expect(rc, bad ? CPL_ERR_ENV : CPL_ERR_MISMATCH, want, "inter allgatherv", rank);
  rc = cpl_inter_allgatherv(buf, rank == 0 ? 4 : 0, MPI_INT, buf, counts, displs, MPI_INT,
                            rank == 0 ? CPL_SENDER : CPL_RECEIVER, inter, &opt);
  expect(rc, bad ? CPL_ERR_ENV : CPL_ERR_MISMATCH, want, "inter allgatherv again", rank);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
  MPI_Barrier(MPI_COMM_WORLD);
  if (bad && rank == 0) remove(path);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all != 0;
}
