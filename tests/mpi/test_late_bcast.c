/*
 * A rank whose wait for rank 0's broadcast times out returns while the
 * broadcast (a nonblocking MPI collective, which MPI can neither cancel
 * nor free) is still pending. When rank 0 broadcasts later, MPI must not
 * write into the caller's buffer, which by then may be a dead stack frame
 * (the consumer's step header was one) or freed memory.
 *
 * 2 ranks. Rank 1 broadcasts into a stack buffer with a 0.3 s timeout and
 * returns; rank 0 arrives 1 s later with a pattern; rank 1 then lays a
 * zeroed array over the dead frame, lets MPI progress and looks for the
 * pattern in it.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/coll.h"

static const char pattern[24] = "late-broadcast-pattern!";

/* The broadcast, from a frame that is gone when rank 0 arrives. */
static __attribute__((noinline)) int give_up(int rank) {
  char buf[sizeof pattern];
  if (rank == 0) memcpy(buf, pattern, sizeof buf);
  else memset(buf, 0, sizeof buf);
  cpli_ctx ctx = {.timeout = rank == 0 ? 30 : 0.3, .label = "test", .step = -1};
  return cpli_intra_bcast_napping(buf, (int)sizeof buf, MPI_BYTE, MPI_COMM_WORLD, &ctx);
}

/* The same stack depth again: does the pattern land in pad? */
static __attribute__((noinline)) int scribbled(void) {
  volatile char pad[16384];
  for (size_t i = 0; i < sizeof pad; i++) pad[i] = 0;
  MPI_Barrier(MPI_COMM_WORLD);     /* rank 0 has broadcast */
  for (int i = 0; i < 1000; i++) { /* progress the abandoned broadcast */
    int flag;
    MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    nanosleep(&(struct timespec){0, 100000}, NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (size_t i = 0; i + sizeof pattern <= sizeof pad; i++) {
    size_t k = 0;
    while (k < sizeof pattern && pad[i + k] == pattern[k]) k++;
    if (k == sizeof pattern) return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, fails = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "test_late_bcast: run on 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* the first use duplicates the communicator: both ranks in time */
  char warm = 0;
  cpli_ctx ctx = {.timeout = 30, .label = "test", .step = -1};
  if (cpli_intra_bcast_napping(&warm, 1, MPI_BYTE, MPI_COMM_WORLD, &ctx) != CPL_OK) {
    fprintf(stderr, "rank %d: first broadcast failed: %s\n", rank, cpl_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) sleep(1);
  int rc = give_up(rank);
  if (rank == 1 && rc != CPL_ERR_TIMEOUT) {
    fprintf(stderr, "FAIL rank 1: expected CPL_ERR_TIMEOUT, got %d (%s)\n", rc, cpl_last_error());
    fails++;
  }
  if (rank == 1 && rc == CPL_ERR_TIMEOUT && !strstr(cpl_last_error(), "did not complete")) {
    fprintf(stderr, "FAIL rank 1: timeout message: %s\n", cpl_last_error());
    fails++;
  }
  if (rank == 0 && rc != CPL_OK) {
    fprintf(stderr, "FAIL rank 0: broadcast failed: %s\n", cpl_last_error());
    fails++;
  }
  if (scribbled() && rank == 1) {
    fprintf(stderr, "FAIL rank 1: the abandoned broadcast wrote into a dead stack frame\n");
    fails++;
  }
  MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf(fails ? "test_late_bcast: %d failure(s)\n" : "test_late_bcast: ok\n", fails);
  MPI_Finalize();
  return fails != 0;
}
