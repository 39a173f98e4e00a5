/*
 * cpl-exec PROGRAM [ARGS...]: how cpl-run starts every process of a
 * workflow (internal; not meant to be typed).
 *
 * Hydra cannot end a job in which one process never calls MPI_Init: a
 * program that cannot be exec'd, or that exits (even with 0) or crashes
 * before MPI_Init, leaves the others waiting in MPI_Init forever while
 * hydra_pmi_proxy spins. And a process that exits after cpl_init without
 * cpl_finalize leaves its peers waiting until their timeouts.
 *
 * cpl-exec runs the program as its child with a pipe (CPL_READY_FD) on
 * which the library says that it reached cpl_init, which link and step it
 * last moved data on, and that it reached cpl_finalize and MPI_Finalize
 * (core/launch.h).
 * If the program ends without having reached cpl_init, or without
 * cpl_finalize, or dies by a signal, or has not reached cpl_init
 * CPL_INIT_TIMEOUT seconds after its start, cpl-exec names the component,
 * rank, reason and last link and step, and ends itself by a signal, which
 * hydra (and srun --kill-on-bad-exit) sees as a failed process: it kills
 * the whole job at once.
 *
 * Otherwise it is transparent: signals it receives go to the program, its
 * exit status is the program's, and the program dies with it
 * (PR_SET_PDEATHSIG) if hydra kills it.
 */
#define _GNU_SOURCE /* pipe2, ppoll */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/cli.h"
#include "workflow/model.h"

static pid_t child = -1;
static volatile sig_atomic_t reaped;   /* child's pid may be another's now */
static volatile sig_atomic_t received; /* the last signal forwarded */

static void child_ended(int sig) { (void)sig; } /* only wakes ppoll */

static void forward(int sig) {
  received = sig;
  if (child > 0 && !reaped) kill(child, sig);
}

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};

/* Die by sig, so hydra reports (and acts on) a failed process. */
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

/* Before a fault ends the job, give the processes that failed with this
 * one the time to report too: one fault often kills several (a SIGKILLed
 * process, then a peer whose transport read from it), and the first
 * cpl-exec to die makes the launcher kill the others' cpl-exec, report
 * and all. Half a second is short against a job's end and long against
 * a SIGCHLD reaching an idle cpl-exec. */
static void stop_job(int sig) {
  nanosleep(&(struct timespec){0, 500000000L}, NULL);
  die_by(sig);
}

/* cpl_init's CPL_INIT_TIMEOUT (group.c): seconds, default 60; a value
 * cpl_init refuses is its to report, this takes the default. */
static double init_timeout(void) {
  const char *s = getenv("CPL_INIT_TIMEOUT");
  char *end = NULL;
  double v = s && *s ? strtod(s, &end) : 0;
  return s && *s && !*end && v > 0 && v <= 1e6 ? v : 60.0;
}

/* Does stderr end with a newline (or hold nothing)? Knowable only when it
 * is a regular file (srun --error=FILE): read its last byte. A pipe (what
 * hydra and srun give a process by default) or a terminal keeps no
 * record of what the program wrote to it, and cpl-exec does not relay the
 * program's stderr: a relay would lose its last words whenever the
 * launcher kills the job (SIGKILL to cpl-exec) before they passed. */
static int stderr_at_line_start(void) {
  struct stat st;
  if (fstat(STDERR_FILENO, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  if (st.st_size == 0) return 1;
  int fd = open("/proc/self/fd/2", O_RDONLY | O_CLOEXEC);
  char c = 0;
  const int got = fd >= 0 && pread(fd, &c, 1, st.st_size - 1) == 1;
  if (fd >= 0) close(fd);
  return got && c == '\n';
}

/* A report: on a line of its own, as the program may have left a partial
 * line ("abc" without a newline) on the stderr it shares with cpl-exec;
 * where that cannot be known, after a newline (an empty line at worst).
 * One write: output of other processes sharing the file cannot cut in. */
static __attribute__((format(printf, 1, 2))) void report(const char *fmt, ...) {
  char buf[2048];
  int n = stderr_at_line_start() ? 0 : 1;
  buf[0] = '\n';
  va_list ap;
  va_start(ap, fmt);
  const int len = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  va_end(ap);
  if (len < 0) return;
  n += len < (int)sizeof buf - n ? len : (int)sizeof buf - n - 1;
  if (write(STDERR_FILENO, buf, (size_t)n) < 0) return;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *env_or(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return v && *v ? v : dflt;
}

/* What the program said on the pipe. */
typedef struct said {
  int init, finalize, mpi_finalize;
  char progress[200]; /* last "link L, step S" */
  char line[256];     /* line being read */
  size_t n;
} said;

/* Read what is there: the bytes read, 0 at end of file, -1 when nothing
 * could be read (EINTR; EAGAIN once the pipe is non-blocking). */
static ssize_t listen_to(int fd, said *s) {
  char buf[512];
  ssize_t got = read(fd, buf, sizeof buf);
  for (ssize_t i = 0; i < got; i++) {
    if (buf[i] != '\n') {
      if (s->n + 1 < sizeof s->line) s->line[s->n++] = buf[i];
      continue;
    }
    s->line[s->n] = '\0';
    if (s->line[0] == 'I') s->init = 1;
    else if (s->line[0] == 'F') s->finalize = 1;
    else if (s->line[0] == 'M') s->mpi_finalize = 1;
    else if (s->line[0] == 'P' && s->n > 2)
      snprintf(s->progress, sizeof s->progress, "%s", s->line + 2);
    s->n = 0;
  }
  return got;
}

static void usage(FILE *f) {
  fprintf(f, "usage: cpl-exec PROGRAM [ARGS...]\n"
             "Run PROGRAM as one process of a workflow: how cpl-run starts every\n"
             "process (not meant to be typed). It stops the job when the program\n"
             "ends before cpl_init or without cpl_finalize, dies by a signal, or has\n"
             "not reached cpl_init CPL_INIT_TIMEOUT seconds (default 60) after its\n"
             "start, naming component, rank and the last link and step; otherwise\n"
             "its exit status is the program's.\n"
             "  -h, --help      show this help\n"
             "  -V, --version   show the version\n");
}

int main(int argc, char **argv) {
  /* Options only in front: every word after PROGRAM is the program's. */
  int info = cpli_cli_info("cpl-exec", argc < 2 ? argc : 2, argv, usage);
  if (info >= 0) return info;
  if (argc < 2) return cpli_cli_usage_error("cpl-exec", usage, "no program given");
  if (argv[1][0] == '-')
    return cpli_cli_usage_error("cpl-exec", usage, "unknown option %s", argv[1]);
  const char *comp = env_or("CPL_COMPONENT", "?");
  /* Messages name the rank inside the component, as the library's do:
   * the job rank minus the component's first (CPL_FIRST_RANK, from
   * cpl-run); without it, the job rank, said to be one. */
  const char *job = env_or("PMI_RANK", env_or("SLURM_PROCID", "?"));
  const char *first = getenv("CPL_FIRST_RANK");
  char rank[96], jobrank[64] = "";
  char *e1, *e2;
  long j = strtol(job, &e1, 10), f = first ? strtol(first, &e2, 10) : -1;
  if (*job && !*e1 && first && *first && !*e2 && f >= 0 && j >= f) {
    snprintf(rank, sizeof rank, "rank %ld", j - f);
    snprintf(jobrank, sizeof jobrank, "job rank %ld, ", j);
  } else {
    snprintf(rank, sizeof rank, "job rank %s", job);
  }
  int ready[2], failed[2];
  if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(failed, O_CLOEXEC) != 0) {
    report("cpl-run: component \"%s\", %s: pipe: %s\n", comp, rank, strerror(errno));
    die_by(SIGTERM);
  }
  /* SIGCHLD is blocked but while cpl-exec waits in ppoll, so the
   * program's end wakes it at once, not at the next poll timeout: a
   * report lost to a peer's faster stop is what that delay cost. */
  sigset_t chld, inherited, waiting;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &inherited);
  waiting = inherited;
  sigdelset(&waiting, SIGCHLD);
  struct sigaction on_chld = {.sa_handler = child_ended, .sa_flags = SA_NOCLDSTOP};
  sigemptyset(&on_chld.sa_mask);
  sigaction(SIGCHLD, &on_chld, NULL);
  pid_t parent = getpid();
  child = fork();
  if (child < 0) {
    report("cpl-run: component \"%s\", %s: fork: %s\n", comp, rank, strerror(errno));
    die_by(SIGTERM);
  }
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &inherited, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127); /* cpl-exec died already */
    int fd = dup(ready[1]);              /* without O_CLOEXEC: the program inherits it */
    char num[16];
    snprintf(num, sizeof num, "%d", fd);
    if (fd < 0 || setenv("CPL_READY_FD", num, 1) != 0) _exit(127);
    /* cpl-run has the launcher ignore these (cpl_run.c, run_launcher);
     * the program gets them at their defaults. */
    signal(SIGHUP, SIG_DFL);
    signal(SIGTSTP, SIG_DFL);
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
  if (got == (ssize_t)sizeof exec_errno) {
    /* ENOENT for a file that is there: its #! line names what is missing
     * (cpl-run checked that on its own host, not on this one). */
    char why[320] = "", interp[256];
    int crlf;
    if (exec_errno == ENOENT && strchr(argv[1], '/') && access(argv[1], F_OK) == 0 &&
        cpli_wf_interpreter(argv[1], interp, sizeof interp, &crlf) != 0)
      snprintf(why, sizeof why,
               crlf ? " (its #! line ends in a carriage return: Windows line endings)"
                    : " (its #! interpreter %s is missing)",
               interp);
    report("cpl-run: component \"%s\", %s (%spid %d): cannot execute "
           "%s: %s%s; stopping the job\n",
           comp, rank, jobrank, (int)child, argv[1], strerror(exec_errno), why);
    waitpid(child, NULL, 0);
    reaped = 1;
    stop_job(SIGTERM);
  }
  /* Listen until the program ends. Descendants may hold the pipe open, so
   * the end is the child's exit, not end of file. */
  said s = {0};
  int status = 0, open_fd = 1;
  /* A process that never reaches cpl_init (hangs, or never calls MPI_Init)
   * holds the others in MPI_Init, where no timeout of theirs runs: this
   * is the bound on it, the one cpl_init keeps for the others. */
  double limit = init_timeout(), start = now();
  for (;;) {
    pid_t w = waitpid(child, &status, WNOHANG);
    if (w == child) {
      reaped = 1;
      break;
    }
    if (w < 0 && errno != EINTR) {
      report("cpl-run: component \"%s\", %s: waitpid: %s\n", comp, rank, strerror(errno));
      die_by(SIGTERM);
    }
    struct pollfd pf = {.fd = open_fd ? ready[0] : -1, .events = POLLIN};
    int n = ppoll(&pf, 1, &(struct timespec){0, 100000000L}, &waiting);
    if (n > 0 && (pf.revents & (POLLIN | POLLHUP)) && listen_to(ready[0], &s) == 0) open_fd = 0;
    /* after reading: an "I" just said counts */
    if (!s.init && now() - start > limit) {
      report("cpl-run: component \"%s\", %s (%s%s, pid %d) has not reached cpl_init "
             "within %g s of its start (CPL_INIT_TIMEOUT): it is stuck before it, or "
             "waits in MPI_Init for a process that is; stopping the job\n",
             comp, rank, jobrank, argv[1], (int)child, limit);
      kill(child, SIGKILL);
      waitpid(child, NULL, 0);
      reaped = 1;
      stop_job(SIGTERM);
    }
  }
  /* What is left, without waiting for a descendant that still holds the
   * pipe (a program started in the background before cpl_init): it may
   * never close it. */
  fcntl(ready[0], F_SETFL, O_NONBLOCK);
  while (open_fd && listen_to(ready[0], &s) > 0) {
  }
  char where[260] = "";
  if (s.progress[0]) snprintf(where, sizeof where, " after %s", s.progress);
  /* A signal sent to the job (Ctrl-C or kill of cpl-run, which the
   * launcher passes to every process, or srun ending the step after
   * another process failed) is no fault of this component's. srun signals
   * every process of the step, the program sometimes first: a signal
   * cpl-exec forwards gets a moment to reach cpl-exec too (it was
   * reported as the component's own "killed by signal 2" fault). */
  for (size_t i = 0; WIFSIGNALED(status) && i < sizeof forwarded / sizeof *forwarded; i++)
    for (int k = 0; forwarded[i] == WTERMSIG(status) && received != forwarded[i] && k < 20; k++)
      nanosleep(&(struct timespec){0, 10000000L}, NULL);
  int sent = WIFSIGNALED(status) && WTERMSIG(status) == received;
  if (sent) {
    report("cpl-run: component \"%s\", %s (%spid %d) ended by signal %d (%s), "
           "which the job was sent (Ctrl-C, kill, or the launcher stopping it)%s%s%s\n",
           comp, rank, jobrank, (int)child, WTERMSIG(status), strsignal(WTERMSIG(status)),
           !s.init      ? ", before it called cpl_init"
           : s.finalize ? ", in or after cpl_finalize"
                        : "",
           where[0] ? "," : "", where);
    die_by(WTERMSIG(status));
  }
  if (!s.init) {
    if (WIFSIGNALED(status))
      report("cpl-run: component \"%s\", %s (%s%s, pid %d) was "
             "killed by signal %d (%s) before it called cpl_init; "
             "stopping the job\n",
             comp, rank, jobrank, argv[1], (int)child, WTERMSIG(status),
             strsignal(WTERMSIG(status)));
    else
      report("cpl-run: component \"%s\", %s (%s%s, pid %d) "
             "exited with status %d without calling cpl_init (every "
             "process of a workflow must); stopping the job\n",
             comp, rank, jobrank, argv[1], (int)child, WEXITSTATUS(status));
    stop_job(SIGTERM);
  }
  if (WIFSIGNALED(status)) {
    report("cpl-run: component \"%s\", %s (%spid %d) was killed "
           "by signal %d (%s)%s%s; stopping the job\n",
           comp, rank, jobrank, (int)child, WTERMSIG(status), strsignal(WTERMSIG(status)), where,
           s.finalize ? ", in or after cpl_finalize" : "");
    stop_job(WTERMSIG(status));
  }
  if (!s.finalize) {
    report("cpl-run: component \"%s\", %s (%spid %d) exited "
           "with status %d without calling cpl_finalize%s; stopping the "
           "job (its peers would wait for it)\n",
           comp, rank, jobrank, (int)child, WEXITSTATUS(status), where);
    stop_job(SIGTERM);
  }
  /* A failure after cpl_finalize is the program's to explain, but the job
   * fails with it, and nothing else would say which process it was. An
   * exit without MPI_Finalize, even with 0, makes hydra kill the others
   * at random ("BAD TERMINATION", "Killed (signal 9)"). */
  if (WEXITSTATUS(status) != 0 || !s.mpi_finalize)
    report("cpl-run: component \"%s\", %s (%spid %d) exited with status %d in or after "
           "cpl_finalize%s%s%s\n",
           comp, rank, jobrank, (int)child, WEXITSTATUS(status),
           s.mpi_finalize ? "" : ", without calling MPI_Finalize", where[0] ? "," : "", where);
  return WEXITSTATUS(status);
}
