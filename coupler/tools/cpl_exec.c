/*
 * cpl-exec PROGRAM [ARGS...]: how cpl-run starts every process of a
 * workflow (internal; not meant to be typed).
 *
 * Hydra cannot end a job in which one process never calls MPI_Init: a
 * program that cannot be exec'd, or that exits (even with 0) or crashes
 * before MPI_Init, leaves the others waiting in MPI_Init forever while
 * hydra_pmi_proxy spins. cpl-exec runs the program as its child and hands
 * it a pipe (CPL_READY_FD) on which cpl_init writes one byte on entry. If
 * the program ends without having reached cpl_init, cpl-exec names the
 * component, rank and reason, and ends itself by SIGTERM, which hydra
 * sees as a failed process: it kills the whole job at once.
 *
 * Otherwise it is transparent: signals it receives go to the program, its
 * exit status is the program's (a death by signal is re-raised), and the
 * program dies with it (PR_SET_PDEATHSIG) if hydra kills it.
 */
#define _GNU_SOURCE /* pipe2 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t child = -1;

static void forward(int sig) {
  if (child > 0) kill(child, sig);
}

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT,
                                SIGUSR1, SIGUSR2, SIGCONT};

/* Die as the program died, so hydra reports (and acts on) the same. */
static void die_by(int sig) {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core); /* the program's core is what counts */
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  raise(sig);
  _exit(128 + sig);
}

static const char *env_or(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return v && *v ? v : dflt;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cpl-exec PROGRAM [ARGS...] (started by cpl-run)\n");
    return 2;
  }
  const char *comp = env_or("CPL_COMPONENT", "?");
  const char *rank = env_or("PMI_RANK", "?");
  int ready[2], failed[2];
  if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(failed, O_CLOEXEC) != 0) {
    fprintf(stderr, "cpl-run: component \"%s\", rank %s: pipe: %s\n", comp,
            rank, strerror(errno));
    die_by(SIGTERM);
  }
  pid_t parent = getpid();
  child = fork();
  if (child < 0) {
    fprintf(stderr, "cpl-run: component \"%s\", rank %s: fork: %s\n", comp,
            rank, strerror(errno));
    die_by(SIGTERM);
  }
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127); /* cpl-exec died already */
    int fd = dup(ready[1]); /* without O_CLOEXEC: the program inherits it */
    char num[16];
    snprintf(num, sizeof num, "%d", fd);
    if (fd < 0 || setenv("CPL_READY_FD", num, 1) != 0) _exit(127);
    execvp(argv[1], argv + 1);
    int e = errno;
    if (write(failed[1], &e, sizeof e) < 0) _exit(127);
    _exit(127);
  }
  close(ready[1]);
  close(failed[1]);
  struct sigaction sa = {.sa_handler = forward};
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
    sigaction(forwarded[i], &sa, NULL);

  int exec_errno = 0;
  ssize_t got;
  do got = read(failed[0], &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  int status = 0;
  pid_t w;
  do w = waitpid(child, &status, 0);
  while (w < 0 && errno == EINTR);
  if (got == (ssize_t)sizeof exec_errno) {
    fprintf(stderr, "cpl-run: component \"%s\", rank %s: cannot execute "
            "%s: %s; stopping the job\n", comp, rank, argv[1],
            strerror(exec_errno));
    die_by(SIGTERM);
  }
  /* One byte in the pipe: the program reached cpl_init. Descendants may
   * hold the write end open, so do not wait for end of file. */
  fcntl(ready[0], F_SETFL, O_NONBLOCK);
  char byte;
  int reached = read(ready[0], &byte, 1) == 1;
  if (w < 0) {
    fprintf(stderr, "cpl-run: component \"%s\", rank %s: waitpid: %s\n",
            comp, rank, strerror(errno));
    die_by(SIGTERM);
  }
  if (!reached) {
    if (WIFSIGNALED(status))
      fprintf(stderr, "cpl-run: component \"%s\", rank %s (%s, pid %d) was "
              "killed by signal %d (%s) before it called cpl_init; "
              "stopping the job\n", comp, rank, argv[1], (int)child,
              WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
      fprintf(stderr, "cpl-run: component \"%s\", rank %s (%s, pid %d) "
              "exited with status %d without calling cpl_init (every "
              "process of a workflow must); stopping the job\n", comp,
              rank, argv[1], (int)child, WEXITSTATUS(status));
    die_by(SIGTERM);
  }
  if (WIFSIGNALED(status)) die_by(WTERMSIG(status));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
