/*
 * A consumer that stops in the middle of a stream, and what its producer
 * must still do (tests/faults/CMakeLists.txt, "stalled consumers"):
 *
 *   stall prod DIR        2 links: `latest` to ana, `all` to a sink. STEPS
 *                         steps of BIG doubles per rank, 40 ms apart. While
 *                         ana is stopped (DIR/stopped exists, DIR/resumed
 *                         not yet), counts what each link got and checks:
 *                         the producer went on, the `all` link received
 *                         every step it made, the `latest` link dropped.
 *   stall ana DIR         takes steps; in its 4th begin_step its rank 1
 *                         stops (SIGSTOP from a timer's handler, after
 *                         writing DIR/stopped) for STOP_S s, then writes
 *                         DIR/resumed. Checks the steps are increasing,
 *                         that after SIGCONT at most the step in flight is
 *                         stale, and that the last is the newest.
 *   stall prod-wait       `all`, depth 1, a step every 100 ms: reports
 *   stall cons-wait       wait_s, which must include the BLOCK_S seconds
 *                         its consumer's rank 1 hangs 50 ms into its 4th
 *                         begin_step (a timer's handler), while it waits
 *                         for the step rank 0 has asked for: the producer
 *                         is then held inside that step's transfer.
 *   stall prod-slow       publishes a step every 200 ms (fault tests)
 *   stall ana-hang        1 rank: hangs 100 ms into its 4th begin_step,
 *                         while it waits for the step it asked for (a
 *                         timer's handler that never returns)
 *   stall ana-idle        opens its input and never begins a step
 * Every rank prints its peak RSS at the end. Any Coupler error: the
 * message, then exit 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "coupler.h"

#define BIG 32768 /* doubles per rank: 256 KiB, more than any eager limit */
#define STEPS 200
#define STOP_S 6
#define BLOCK_S 3.0

extern char **environ;
static int fails;

static void ok(int rc, const char *what) {
  if (rc == CPL_OK) return;
  fprintf(stderr, "stall: %s: %s: %s\n", what, cpl_strerror(rc), cpl_last_error());
  exit(1); /* cpl-exec stops the job: no cpl_finalize */
}

#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "stall: FAILED: " __VA_ARGS__);                                              \
      fprintf(stderr, "\n");                                                                       \
      fails++;                                                                                     \
    }                                                                                              \
  } while (0)

static void nap_ms(long ms) {
  nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

static int exists(const char *dir, const char *name) {
  char p[1024];
  struct stat sb;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return stat(p, &sb) == 0;
}

static void touch(const char *dir, const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (f) fclose(f);
}

static void peak_rss(const char *who, int rank) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6)) printf("stall: %s rank %d: peak RSS %s", who, rank, line + 6);
  if (f) fclose(f);
  fflush(stdout);
}

/* Link index of the port's link to component `to`. */
static int link_to(cpl_output *out, const char *to) {
  int n;
  ok(cpl_output_link_count(out, &n), "link_count");
  for (int i = 0; i < n; i++) {
    cpl_link_end le;
    ok(cpl_output_link(out, i, &le), "link");
    if (!strcmp(le.peer_component, to)) return i;
  }
  fprintf(stderr, "stall: no link to %s\n", to);
  exit(1);
}

static const char *mode_name;

static void producer(cpl_context *ctx, int r, int p, const char *dir, int wait_mode) {
  cpl_output *out;
  ok(cpl_output_open(ctx, "out", &out), "open");
  static double x[BIG];
  hsize_t dims[1] = {(hsize_t)BIG * p}, start[1] = {(hsize_t)BIG * r}, count[1] = {BIG};
  int steps = wait_mode ? 8 : STEPS;
  int lat = dir ? link_to(out, "ana") : -1, all = dir ? link_to(out, "writer") : -1;
  /* The stop window as the producer saw it: steps, and each link's counts. */
  long s0 = -1, s1 = -1;
  cpl_output_stats a0 = {0}, a1 = {0}, l0 = {0}, l1 = {0};
  double worst = 0, worst_in = 0, total = 0;
  for (long s = 0; s < steps; s++) {
    for (int i = 0; i < BIG; i++) x[i] = (double)s;
    double t0 = MPI_Wtime();
    ok(cpl_output_begin_step(out, -1), "begin_step");
    ok(cpl_output_put(out, "x", H5T_NATIVE_DOUBLE, 1, dims, start, count, x), "put");
    ok(cpl_output_end_step(out), "end_step");
    double t = MPI_Wtime() - t0;
    total += t;
    worst = t > worst ? t : worst;
    if (dir) {
      /* Rank 0 decides when the window opens and closes, for all ranks. */
      int seen[2] = {exists(dir, "stopped"), exists(dir, "resumed")};
      MPI_Comm comm;
      cpl_component_comm(ctx, &comm);
      MPI_Bcast(seen, 2, MPI_INT, 0, comm);
      if (seen[0] && s0 < 0) {
        s0 = s;
        ok(cpl_output_stats_get(out, all, &a0), "stats");
        ok(cpl_output_stats_get(out, lat, &l0), "stats");
      }
      if (s0 >= 0 && s1 < 0) worst_in = t > worst_in ? t : worst_in;
      if (seen[1] && s1 < 0) {
        s1 = s;
        ok(cpl_output_stats_get(out, all, &a1), "stats");
        ok(cpl_output_stats_get(out, lat, &l1), "stats");
      }
    }
    nap_ms(strstr(mode_name, "slow") ? 200 : wait_mode ? 100 : 40);
  }
  cpl_output_stats port;
  ok(cpl_output_stats_get(out, -1, &port), "stats");
  cpl_output_stats fin_l = {0};
  if (lat >= 0) ok(cpl_output_stats_get(out, lat, &fin_l), "stats");
  ok(cpl_output_close(out), "close");
  if (r == 0)
    printf("stall: prod: %d steps, end_step mean %.1f ms, worst %.1f ms (%.1f ms while ana was "
           "stopped); port held at most %d steps, %zu bytes; wait_s %.3f s\n",
           steps, 1e3 * total / steps, 1e3 * worst, 1e3 * worst_in, port.queue_max, port.bytes_max,
           port.wait_s);
  if (wait_mode) {
    /* Held BLOCK_S s less the time to its next end_step (<= 100 ms). */
    CHECK(port.wait_s >= BLOCK_S - 0.5, "wait_s %.3f s after a %.1f s block", port.wait_s, BLOCK_S);
    return;
  }
  if (!dir) return;
  CHECK(port.bytes_max <= 3 * sizeof x,
        "the port held %zu bytes, more than 3 steps (latest depth 1 + all depth 2) of %zu",
        port.bytes_max, sizeof x);
  CHECK(s0 >= 0 && s1 > s0, "the stop window was seen (steps %ld..%ld)", s0, s1);
  if (s0 < 0 || s1 <= s0) return;
  long made = s1 - s0;
  if (r == 0)
    printf("stall: prod: while ana was stopped: %ld steps made; the `all` link delivered %ld, the "
           "`latest` link delivered %ld and dropped %ld\n",
           made, a1.delivered - a0.delivered, l1.delivered - l0.delivered, l1.dropped - l0.dropped);
  /* A producer held by the stopped consumer makes no step in the window;
   * this one makes one every ~40 ms, so tens of them in STOP_S s. */
  CHECK(made >= 10, "only %ld steps made while ana was stopped", made);
  /* `all`, depth 2: everything made in the window but at most 2 steps. */
  CHECK(a1.delivered - a0.delivered >= made - 2, "the `all` link got %ld of %ld steps",
        a1.delivered - a0.delivered, made);
  CHECK(l1.dropped - l0.dropped > 0, "the `latest` link dropped nothing while ana was stopped");
  CHECK(fin_l.wait_s == 0, "latest: end_step waited %.3f s for the consumer", fin_l.wait_s);
}

/* Rank 1 of ana stops inside a begin_step (a timer's signal), so most
 * likely after rank 0 has asked for the step: the producer holds a credit
 * and has posted the step when the stop comes. */
static volatile sig_atomic_t stopped;
static void stop_now(int sig) {
  (void)sig;
  stopped = 1;
  raise(SIGSTOP);
}

static void arm_stop(const char *dir) {
  char cmd[64];
  snprintf(cmd, sizeof cmd, "sleep %d.2; kill -CONT %ld", STOP_S, (long)getpid());
  char *argv[] = {"sh", "-c", cmd, NULL};
  pid_t pid;
  struct sigaction sa = {.sa_handler = stop_now, .sa_flags = SA_RESTART};
  sigaction(SIGALRM, &sa, NULL);
  touch(dir, "stopped");
  if (posix_spawnp(&pid, "sh", NULL, NULL, argv, environ) != 0) {
    fprintf(stderr, "stall: cannot start the SIGCONT helper\n");
    exit(1);
  }
  struct itimerval it = {.it_value = {0, 150000}};
  setitimer(ITIMER_REAL, &it, NULL);
}

static void block(int sig) {
  (void)sig;
  nanosleep(&(struct timespec){(time_t)BLOCK_S, 0}, NULL);
}

static void hang(int sig) {
  (void)sig;
  for (;;) sleep(60); /* until the job is ended */
}

static void consumer(cpl_context *ctx, int r, const char *dir, int wait_mode) {
  cpl_input *in;
  ok(cpl_input_open(ctx, "in", NULL, &in), "open");
  if (!strcmp(mode_name, "ana-idle")) nap_ms(120000);
  long step, seen[STEPS + 1], n = 0, at = -1;
  int rc;
  static double y[2 * BIG];
  for (;;) {
    if (wait_mode && r == 1 && n == 3) {
      struct sigaction sa = {.sa_handler = block};
      sigaction(SIGALRM, &sa, NULL);
      setitimer(ITIMER_REAL, &(struct itimerval){.it_value = {0, 50000}}, NULL);
    }
    if (dir && r == 1 && n == 3) arm_stop(dir);
    if (!strcmp(mode_name, "ana-hang") && n == 3) {
      struct sigaction sa = {.sa_handler = hang};
      sigaction(SIGALRM, &sa, NULL);
      setitimer(ITIMER_REAL, &(struct itimerval){.it_value = {0, 100000}}, NULL);
    }
    if ((rc = cpl_input_begin_step(in, &step)) != CPL_OK) break;
    if (stopped && at < 0) {
      at = n; /* seen[at]: the step taken across the stop */
      touch(dir, "resumed");
    }
    cpl_dataset_info info;
    ok(cpl_input_inquire(in, "x", &info), "inquire");
    if (info.dims[0] <= 2 * BIG) {
      ok(cpl_input_get(in, "x", H5T_NATIVE_DOUBLE, NULL, NULL, y), "get");
      CHECK(y[0] == (double)step && y[info.dims[0] - 1] == (double)step, "step %ld: wrong data",
            step);
    }
    ok(cpl_input_end_step(in), "end_step");
    if (n <= STEPS) seen[n] = step;
    n++;
  }
  if (rc != CPL_END_OF_STREAM) ok(rc, "begin_step");
  ok(cpl_input_close(in), "close");
  if (!dir) return;
  for (long k = 1; k < n && k <= STEPS; k++)
    CHECK(seen[k] > seen[k - 1], "steps out of order: %ld after %ld", seen[k], seen[k - 1]);
  MPI_Comm comm;
  cpl_component_comm(ctx, &comm);
  MPI_Bcast(&at, 1, MPI_LONG, 1, comm);
  if (r == 0) {
    printf("stall: ana: %ld steps received:", n);
    for (long k = 0; k < n && k <= STEPS; k++) printf(" %ld", seen[k]);
    printf("\n");
  }
  CHECK(at >= 1 && n > at + 1, "ana: %ld steps, stopped in step #%ld", n, at);
  if (at < 1 || n <= at + 1) return;
  if (r == 0)
    printf("stall: ana: across the stop: step %ld, then %ld (%s)\n", seen[at], seen[at + 1],
           seen[at] <= seen[at - 1] + 3 ? "the first was in flight: posted before the stop"
                                        : "nothing was in flight: stopped before asking");
  /* Newest after SIGCONT: at most the one step in flight is stale. */
  CHECK(seen[at + 1] > seen[at - 1] + 10,
        "after SIGCONT: steps %ld, %ld followed %ld (the steps made meanwhile should have been "
        "dropped)",
        seen[at], seen[at + 1], seen[at - 1]);
  CHECK(seen[n - 1] == STEPS - 1, "the last step is %ld, not the newest %d", seen[n - 1],
        STEPS - 1);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *mode = argc > 1 ? argv[1] : "";
  const char *dir = argc > 2 ? argv[2] : NULL;
  cpl_context *ctx;
  ok(cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx), "cpl_init");
  MPI_Comm comm;
  cpl_component_comm(ctx, &comm);
  int r, p;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  int wait_mode = strstr(mode, "-wait") != NULL;
  mode_name = mode;
  if (!strncmp(mode, "prod", 4)) producer(ctx, r, p, dir, wait_mode);
  else consumer(ctx, r, dir, wait_mode);
  peak_rss(mode, r);
  ok(cpl_finalize(ctx), "cpl_finalize");
  MPI_Finalize();
  if (fails) fprintf(stderr, "stall: %s rank %d: %d check(s) failed\n", mode, r, fails);
  return fails ? 1 : 0;
}
