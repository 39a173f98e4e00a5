#define _POSIX_C_SOURCE 200809L /* unsetenv */

#include "core/launch.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int launch_fd = -1;
static char last_label[128];
static long last_step = -2;

/* Whole short lines or nothing: the pipe never blocks this process. */
static void say(const char *line, size_t n) {
  if (launch_fd < 0) return;
  if (write(launch_fd, line, n) < 0) { /* cpl-exec gone or pipe full */
  }
}

/* The pipe cpl-exec gave this process (CPL_READY_FD), or -1. */
static int ready_fd(void) {
  const char *s = getenv("CPL_READY_FD");
  if (!s || !*s) return -1;
  char *end = NULL;
  long fd = strtol(s, &end, 10);
  struct stat st;
  return !*end && fd > 2 && fd < 65536 && fstat((int)fd, &st) == 0 && S_ISFIFO(st.st_mode) ? (int)fd
                                                                                           : -1;
}

void cpli_launch_init(void) {
  if (getenv("CPL_READY_FD")) {
    const int fd = ready_fd();
    if (fd >= 0) {
      launch_fd = fd;
      fcntl(launch_fd, F_SETFD, FD_CLOEXEC); /* not for programs it starts */
      fcntl(launch_fd, F_SETFL, O_NONBLOCK);
    }
    unsetenv("CPL_READY_FD");
  }
  say("I\n", 2);
}

void cpli_launch_finalize(void) { say("F\n", 2); }

void cpli_launch_mpi_finalize(void) { say("M\n", 2); }

int cpli_launch_listened(void) { return launch_fd >= 0; }

void cpli_launch_abort(int jobrank, int code) {
  const char *comp = getenv("CPL_COMPONENT"), *first = getenv("CPL_FIRST_RANK");
  /* Before cpl_init the pipe is not taken yet, but cpl-run started it. */
  const int before_init = launch_fd < 0 && ready_fd() >= 0;
  if ((launch_fd < 0 && !before_init) || !comp) return;
  char rank[48] = "", where[200] = "";
  if (first && *first) snprintf(rank, sizeof rank, "rank %ld ", jobrank - atol(first));
  if (before_init) snprintf(where, sizeof where, " before cpl_init");
  else if (last_label[0])
    snprintf(where, sizeof where, " after link %s, step %ld", last_label, last_step);
  /* one fprintf, one write: stderr is unbuffered */
  fprintf(stderr,
          "coupler: component \"%.100s\", %s(job rank %d, pid %ld) called MPI_Abort with error "
          "code %d%s; MPICH stops the job\n",
          comp, rank, jobrank, (long)getpid(), code, where);
  /* hydra kills its proxies on the abort, and a line they have not
   * forwarded yet is lost (MPICH's own banner too: 1 run in 6 under
   * load): give them a moment */
  nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
}

void cpli_launch_progress(const char *label, long step) {
  /* Links only ("a.out->b.in"): a port's agreement among its own ranks
   * moves no data on a link. */
  if (launch_fd < 0 || !label || !strstr(label, "->") || step < 0) return;
  /* Once per link and step: the data layer runs several per step. */
  if (step == last_step && !strncmp(label, last_label, sizeof last_label - 1)) return;
  last_step = step;
  snprintf(last_label, sizeof last_label, "%s", label);
  char line[200];
  int n = snprintf(line, sizeof line, "P link %.120s, step %ld\n", label, step);
  if (n > 0 && (size_t)n < sizeof line) say(line, (size_t)n);
}
