/*
 * MPI test of cpl_init: usage
 *   mpi_groups ok       WORKFLOW|- COMPONENT|-
 *   mpi_groups fail:S   WORKFLOW|- COMPONENT|- FRAGMENT
 *   mpi_groups skip     WORKFLOW|- COMPONENT|-   (never calls cpl_init)
 *   mpi_groups ok-exit  WORKFLOW|- COMPONENT|-   (ok, then exit(0) without
 *                                                 MPI_Finalize)
 * "-" means NULL (taken from CPL_WORKFLOW / CPL_COMPONENT).
 * ok: checks sizes and that every intercommunicator reaches the right peer.
 * fail:S: cpl_init must return status S (e.g. MISMATCH) on this rank with a
 * message containing FRAGMENT. Exit 0 on success. After an expected
 * TIMEOUT the job cannot finish cleanly (a collective is pending), so the
 * rank aborts the job; that test checks the output instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coupler.h"

static int rank;

#define REQUIRE(cond)                                                                              \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "rank %d: %s:%d: failed: %s\n", rank, __FILE__, __LINE__, #cond);            \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)

static const char *arg(const char *s) { return strcmp(s, "-") ? s : NULL; }

static int status_of(const char *name) {
  static const struct {
    const char *n;
    int s;
  } t[] = {{"MISMATCH", CPL_ERR_MISMATCH},
           {"CONFIG", CPL_ERR_CONFIG},
           {"PARSE", CPL_ERR_PARSE},
           {"IO", CPL_ERR_IO},
           {"ARG", CPL_ERR_ARG},
           {"TIMEOUT", CPL_ERR_TIMEOUT},
           {"ENV", CPL_ERR_ENV}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strcmp(name, t[i].n)) return t[i].s;
  return -1;
}

static void check_ok(cpl_context *ctx) {
  const cpl_workflow *wf = cpl_context_workflow(ctx);
  int me;
  const char *name;
  REQUIRE(cpl_context_component(ctx, &me, &name) == CPL_OK);
  cpl_component_info ci;
  REQUIRE(cpl_workflow_component(wf, me, &ci) == CPL_OK);
  MPI_Comm comm;
  REQUIRE(cpl_component_comm(ctx, &comm) == CPL_OK);
  int size;
  MPI_Comm_size(comm, &size);
  REQUIRE(size == ci.nprocs);

  /* Every link of the workflow that names this component is here. */
  int expected = 0;
  for (int k = 0; k < cpl_workflow_link_count(wf); k++) {
    cpl_link_info li;
    cpl_workflow_link(wf, k, &li);
    expected += li.from_index == me || li.to_index == me;
  }
  int n;
  REQUIRE(cpl_context_link_count(ctx, &n) == CPL_OK && n == expected);

  for (int i = 0; i < n; i++) {
    cpl_link_end e;
    REQUIRE(cpl_context_link(ctx, i, &e) == CPL_OK);
    int peer = cpl_workflow_component_index(wf, e.peer_component);
    cpl_component_info pi;
    cpl_workflow_component(wf, peer, &pi);
    REQUIRE(e.remote_size == pi.nprocs);
    /* Each side sends (component, link) codes; an allreduce on the
     * intercommunicator returns the sum over the remote group. */
    long mine = 1000L * (me + 1) + e.link, got = 0;
    MPI_Allreduce(&mine, &got, 1, MPI_LONG, MPI_SUM, e.intercomm);
    REQUIRE(got == (long)pi.nprocs * (1000L * (peer + 1) + e.link));
    /* The port lookup finds this link when the peer is named. */
    char who[160];
    snprintf(who, sizeof who, "%s.%s", e.peer_component, e.peer_port);
    cpl_link_end f;
    REQUIRE(cpl_port_link(ctx, e.port, who, &f) == CPL_OK && f.link == e.link);
    REQUIRE(cpl_port_link(ctx, e.port, e.peer_component, &f) == CPL_OK);
  }
  REQUIRE(cpl_port_link(ctx, "no-such-port", NULL, &(cpl_link_end){0}) == CPL_ERR_ARG);
  /* The component communicator works like a world of its own. */
  int one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
  REQUIRE(sum == ci.nprocs);
  printf("rank %d: component %s ok (%d links)\n", rank, name, n);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 4) {
    fprintf(stderr, "usage: mpi_groups ok|fail:STATUS WORKFLOW COMPONENT [FRAGMENT]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (!strcmp(argv[1], "skip")) {
    /* Stay out of cpl_init long enough for the others to time out. */
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < 20) {
    }
    MPI_Finalize();
    return 1;
  }
  cpl_context *ctx = NULL;
  int rc = cpl_init(MPI_COMM_WORLD, arg(argv[2]), arg(argv[3]), &ctx);
  int code = 0;
  if (!strcmp(argv[1], "ok") || !strcmp(argv[1], "ok-exit")) {
    if (rc != CPL_OK) {
      fprintf(stderr, "rank %d: cpl_init: %s: %s\n", rank, cpl_strerror(rc), cpl_last_error());
      code = 1;
    } else {
      check_ok(ctx);
    }
  } else if (!strncmp(argv[1], "fail:", 5) && argc >= 5) {
    int want = status_of(argv[1] + 5);
    if (rc != want || ctx || !strstr(cpl_last_error(), argv[4])) {
      fprintf(stderr, "rank %d: expected %s with \"%s\", got %s: %s\n", rank, argv[1] + 5, argv[4],
              cpl_strerror(rc), cpl_last_error());
      code = 1;
    } else {
      printf("rank %d: failed as expected: %s\n", rank, cpl_last_error());
      fflush(stdout);
      /* The abort tears the job down at once; hydra may not have
       * forwarded the line yet, and the test reads only the line. */
      if (rc == CPL_ERR_TIMEOUT) {
        for (double t0 = MPI_Wtime(); MPI_Wtime() - t0 < 0.5;) {
        }
        MPI_Abort(MPI_COMM_WORLD, 0);
      }
    }
  } else {
    fprintf(stderr, "bad mode %s\n", argv[1]);
    code = 2;
  }
  if (ctx) REQUIRE(cpl_finalize(ctx) == CPL_OK);
  if (!strcmp(argv[1], "ok-exit")) exit(code);
  MPI_Finalize();
  return code;
}
