/*
 * Misuse of the collective engine returns an error code and a message that
 * says what is wrong; nothing aborts, nothing hangs.
 * Run with 2 ranks: one sender, one receiver.
 *
 * The last cases are timeouts: the sender skips a call, and the receiver
 * must get CPL_ERR_TIMEOUT naming link, rank and step within its deadline;
 * a rank skips the first call on a communicator, and the other must get
 * CPL_ERR_TIMEOUT, not wait in the communicator's setup (nor in fc's, on a
 * link already in use); both groups passing CPL_SENDER is an error on both.
 * With an interrupt
 * check registered (cpl_set_interrupt_check) the timeout is unchanged, and
 * a signal the check reports ends the wait at once: CPL_ERR_INTERRUPTED,
 * naming link, rank and step.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coupler.h"

static int failures;

/* An interrupt check as a C program would write one: the handler sets a
 * flag, the check returns it. */
static volatile sig_atomic_t alarmed;
static int checks;
static void on_alarm(int sig) {
  (void)sig;
  alarmed = 1;
}
static int interrupt_check(void *arg) {
  (void)arg;
  checks++;
  return alarmed;
}

static void expect(int rc, int want, const char *fragment, const char *what) {
  if (rc != want || !strstr(cpl_last_error(), fragment)) {
    fprintf(stderr, "FAIL %s: got %d (%s) \"%s\", want %d with \"%s\"\n", what, rc,
            cpl_strerror(rc), cpl_last_error(), want, fragment);
    failures++;
  } else {
    printf("ok   %-40s -> %s\n", what, cpl_last_error());
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int wrank, wsize;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  if (wsize != 2) {
    if (wrank == 0) fprintf(stderr, "run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, wrank, 0, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - wrank, 9, &inter);
  const cpl_role role = wrank == 0 ? CPL_SENDER : CPL_RECEIVER;
  int buf[4] = {1, 2, 3, 4}, counts[1] = {4}, displs[1] = {0}, neg[1] = {-1};

  /* Local argument checks: fail before any communication. */
  if (role == CPL_SENDER) {
    expect(cpl_inter_allgather(NULL, 4, MPI_INT, NULL, 0, MPI_INT, role, inter, NULL), CPL_ERR_ARG,
           "cpl_inter_allgather: sendbuf is NULL", "NULL send buffer, count 4");
    expect(cpl_inter_allgather(buf, -1, MPI_INT, NULL, 0, MPI_INT, role, inter, NULL), CPL_ERR_ARG,
           "negative", "negative sendcount");
  } else {
    expect(cpl_inter_allgatherv(NULL, 0, MPI_INT, NULL, counts, displs, MPI_INT, role, inter, NULL),
           CPL_ERR_ARG, "cpl_inter_allgatherv: recvbuf is NULL", "NULL receive buffer, count 4");
    expect(cpl_inter_allgatherv(NULL, 0, MPI_INT, buf, neg, displs, MPI_INT, role, inter, NULL),
           CPL_ERR_ARG, "cpl_inter_allgatherv: recvcounts[0] is negative", "negative recvcounts");
    expect(cpl_inter_allgatherv(NULL, 0, MPI_INT, buf, NULL, displs, MPI_INT, role, inter, NULL),
           CPL_ERR_ARG, "must not be NULL", "NULL recvcounts");
    expect(cpl_inter_allgather(NULL, 0, MPI_INT, buf, 4, MPI_DATATYPE_NULL, role, inter, NULL),
           CPL_ERR_ARG, "cpl_inter_allgather: recvtype is MPI_DATATYPE_NULL", "null datatype");
  }
  expect(cpl_inter_allgather(buf, 1, MPI_INT, buf, 1, MPI_INT, role, MPI_COMM_WORLD, NULL),
         CPL_ERR_COMM, "cpl_inter_allgather: an intercommunicator is required",
         "intracommunicator for inter call");
  expect(cpl_inter_allgather(buf, 1, MPI_INT, buf, 1, MPI_INT, role, MPI_COMM_NULL, NULL),
         CPL_ERR_COMM, "cpl_inter_allgather: communicator is MPI_COMM_NULL", "MPI_COMM_NULL");
  expect(cpl_intra_allgather(buf, 1, MPI_INT, buf, 1, MPI_INT, inter, NULL), CPL_ERR_COMM,
         "cpl_intra_allgather: an intracommunicator is required",
         "intercommunicator for intra call");
  expect(cpl_inter_allgather(buf, 1, MPI_INT, buf, 1, MPI_INT, (cpl_role)7, inter, NULL),
         CPL_ERR_ARG, "cpl_inter_allgather: role must be", "invalid role");
  expect(cpl_intra_bcast(buf, 1, MPI_INT, 5, local, NULL), CPL_ERR_ARG, "cpl_intra_bcast: root 5",
         "bcast root out of range");
  cpl_inter_algorithm ia;
  expect(cpl_inter_algorithm_parse("fastest", &ia), CPL_ERR_ARG, "fc|ring|root|native",
         "unknown algorithm name");
  setenv("CPL_INTER_ALGORITHM", "bogus", 1);
  expect(cpl_inter_allgather(buf, 1, MPI_INT, buf, 1, MPI_INT, role, inter, NULL), CPL_ERR_ENV,
         "CPL_INTER_ALGORITHM", "unknown CPL_INTER_ALGORITHM");
  unsetenv("CPL_INTER_ALGORITHM");
  setenv("CPL_INTRA_ALGORITHM", "quick", 1);
  expect(cpl_intra_allgather(buf, 1, MPI_INT, buf + 2, 1, MPI_INT, local, NULL), CPL_ERR_ENV,
         "CPL_INTRA_ALGORITHM", "unknown CPL_INTRA_ALGORITHM");
  unsetenv("CPL_INTRA_ALGORITHM");
  setenv("CPL_TIMEOUT", "soon", 1);
  expect(cpl_intra_allgather(buf, 1, MPI_INT, buf + 2, 1, MPI_INT, local, NULL), CPL_ERR_ENV,
         "cpl_intra_allgather: CPL_TIMEOUT", "unparsable CPL_TIMEOUT");
  unsetenv("CPL_TIMEOUT");
  if (cpl_strerror(-3) == NULL || strcmp(cpl_strerror(CPL_OK), "success") != 0) failures++;

  /* A good call first (creates the link on both sides), then the sender
   * skips one: the receiver times out with a message naming the link. */
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  opt.inter = CPL_INTER_FC;
  opt.label = "sim.out->ana.in";
  opt.step = 42;
  opt.timeout = 0.5;
  int rc = cpl_inter_allgather(buf, 4, MPI_INT, buf, 4, MPI_INT, role, inter, &opt);
  if (rc != CPL_OK) {
    fprintf(stderr, "FAIL good call: %s\n", cpl_last_error());
    failures++;
  }
  if (role == CPL_RECEIVER) {
    cpl_set_interrupt_check(interrupt_check, NULL); /* says no: a plain timeout */
    double t0 = MPI_Wtime();
    rc = cpl_inter_allgather(NULL, 0, MPI_INT, buf, 4, MPI_INT, role, inter, &opt);
    expect(rc, CPL_ERR_TIMEOUT, "link sim.out->ana.in, receiver 0, step 42", "peer never sends");
    /* the peer by its role, not by its rank in the merged communicator */
    expect(rc, CPL_ERR_TIMEOUT, "receive from sender 0 ", "peer never sends (names it)");
    if (MPI_Wtime() - t0 > 5) {
      fprintf(stderr, "FAIL timeout took %.1f s for a 0.5 s deadline\n", MPI_Wtime() - t0);
      failures++;
    }
    /* asked every 50 ms or so of the 0.5 s, not at every poll */
    if (checks < 1 || checks > 100) {
      fprintf(stderr, "FAIL the interrupt check ran %d times in a 0.5 s wait\n", checks);
      failures++;
    }
    /* A signal 1 s into a wait of up to 60 s ends it then. */
    signal(SIGALRM, on_alarm);
    alarm(1);
    opt.timeout = 60;
    t0 = MPI_Wtime();
    rc = cpl_inter_allgather(NULL, 0, MPI_INT, buf, 4, MPI_INT, role, inter, &opt);
    expect(rc, CPL_ERR_INTERRUPTED, "link sim.out->ana.in, receiver 0, step 42",
           "a signal during a wait (link, rank, step)");
    expect(rc, CPL_ERR_INTERRUPTED, "interrupted by a signal after", "a signal during a wait");
    if (MPI_Wtime() - t0 > 10) {
      fprintf(stderr, "FAIL the interrupt took %.1f s (signal at 1 s)\n", MPI_Wtime() - t0);
      failures++;
    }
    if (strcmp(cpl_strerror(CPL_ERR_INTERRUPTED), "interrupted by a signal")) failures++;
    cpl_set_interrupt_check(NULL, NULL);
    opt.timeout = 0.5;
  }
  /* Ranks that disagree on a block's size: the receive truncated by it is
   * an error code on the rank that sees it (MPICH reports it to world's
   * handler, fatal unless the engine makes world return errors). */
  MPI_Comm pair;
  MPI_Comm_dup(MPI_COMM_WORLD, &pair);
  int tcounts[2] = {4, 4}, tdispls[2] = {0, 4}, tbuf[8];
  if (wrank == 1) tcounts[0] = 1, tdispls[1] = 1; /* rank 0 sends 4 */
  cpl_coll_options topt;
  cpl_coll_options_init(&topt);
  topt.timeout = 5;
  rc = cpl_intra_allgatherv(buf, 4, MPI_INT, tbuf, tcounts, tdispls, MPI_INT, pair, &topt);
  if (wrank == 1) expect(rc, CPL_ERR_MPI, "truncated", "a peer sends more than announced");
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&pair);

  /* fc's first call on a link already in use builds its communicators:
   * the receiver refuses the call (a bad count), and the sender must time
   * out in that set-up, not wait in MPI_Comm_split forever. */
  MPI_Comm used;
  MPI_Comm_dup(inter, &used);
  cpl_coll_options fopt;
  cpl_coll_options_init(&fopt);
  fopt.inter = CPL_INTER_CHAINS;
  fopt.timeout = 1;
  rc = cpl_inter_allgather(buf, 1, MPI_INT, buf + 2, 1, MPI_INT, role, used, &fopt);
  if (rc != CPL_OK) {
    fprintf(stderr, "FAIL chains call before fc's first: %s\n", cpl_last_error());
    failures++;
  }
  fopt.inter = CPL_INTER_FC;
  if (role == CPL_SENDER) {
    double t0 = MPI_Wtime();
    rc = cpl_inter_allgather(buf, 1, MPI_INT, NULL, 0, MPI_INT, role, used, &fopt);
    expect(rc, CPL_ERR_TIMEOUT, "fc: meeting the other group (first use)",
           "receiver refuses fc's first call");
    if (MPI_Wtime() - t0 > 5) {
      fprintf(stderr, "FAIL fc's set-up took %.1f s for a 1 s deadline\n", MPI_Wtime() - t0);
      failures++;
    }
  } else {
    expect(cpl_inter_allgather(NULL, 0, MPI_INT, buf, -1, MPI_INT, role, used, &fopt), CPL_ERR_ARG,
           "recvcount is negative", "negative recvcount for fc");
  }
  MPI_Barrier(MPI_COMM_WORLD);

  /* Both groups pass the same role: every rank fails at once, naming the
   * mistake (each sent to the other, and both returned success). */
  MPI_Comm same;
  MPI_Comm_dup(inter, &same);
  cpl_coll_options_init(&fopt);
  fopt.timeout = 5;
  expect(cpl_inter_allgather(buf, 2, MPI_INT, NULL, 0, MPI_INT, CPL_SENDER, same, &fopt),
         CPL_ERR_MISMATCH, "both groups called as senders", "both groups send");
  MPI_Barrier(MPI_COMM_WORLD);

  /* The first call on a communicator: one rank fails before it (a bad
   * variable, say), and the other times out in the dup of first use
   * instead of hanging there; the late rank's own dup then completes the
   * pending one. */
  MPI_Comm fresh;
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  if (wrank == 0) {
    cpl_coll_options quick;
    cpl_coll_options_init(&quick);
    quick.timeout = 1;
    double t0 = MPI_Wtime();
    rc = cpl_intra_allgather(buf, 1, MPI_INT, buf + 2, 1, MPI_INT, fresh, &quick);
    expect(rc, CPL_ERR_TIMEOUT, "duplicating the communicator (first use)",
           "peer fails before the first call");
    if (MPI_Wtime() - t0 > 5) {
      fprintf(stderr, "FAIL first use took %.1f s for a 1 s deadline\n", MPI_Wtime() - t0);
      failures++;
    }
  } else {
    const struct timespec two = {2, 0};
    nanosleep(&two, NULL);
    MPI_Comm late; /* nonblocking, as the engine's: the two kinds never match */
    MPI_Request req;
    MPI_Comm_idup(fresh, &late, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Comm_free(&late);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&fresh);
  int total;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (wrank == 0) printf("%s: %d failures\n", total ? "FAILED" : "PASSED", total);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
  MPI_Finalize();
  return total ? 1 : 0;
}
