/*
 * cpl-run [OPTIONS] FILE [-- LAUNCHER_ARGS...]: launch a workflow as one
 * MPMD job with MPICH's hydra mpiexec (default):
 *
 *   mpiexec [-f HOSTFILE] LAUNCHER_ARGS... -n N1 -env CPL_COMPONENT c1
 *     -env CPL_WORKFLOW /abs/FILE [-env K V]... [-wdir D] prog1 args : ...
 *
 * or with Slurm's srun (--launcher srun: one --multi-prog step); the
 * commands, placement and generated files are built in launch.c.
 * It validates FILE first (same checks as cpl-validate) and the CPL_
 * variables every process would get (the library's check), then runs the
 * launcher and passes signals on to it (run_launcher), its exit status
 * being the job's. It checks first that every program exists and is
 * executable (and, under hydra's ssh, that every host resolves), and
 * starts every process through cpl-exec, which stops the
 * job when a process ends before cpl_init (hydra would wait forever). It
 * wraps nothing in a timeout: use `timeout` around it.
 */
#define _GNU_SOURCE /* realpath, execvp, readlink */

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coll/tuning.h"
#include "coupler.h"
#include "group/context.h"
#include "tools/cli.h"
#include "tools/launch.h"
#include "workflow/model.h"

#ifndef CPL_MPIEXEC_DEFAULT
#define CPL_MPIEXEC_DEFAULT "mpiexec"
#endif

static void usage(FILE *f) {
  fprintf(f,
          "usage: cpl-run [--dry-run] [--launcher mpiexec|srun] [--hostfile F]\n"
          "               [--mpiexec PATH] FILE [-- LAUNCHER_ARGS...]\n"
          "Launch the workflow described by FILE as one MPMD MPI job.\n"
          "  -n, --dry-run      print the launch command, the files it reads\n"
          "                     (written, so the command runs as printed) and\n"
          "                     a table (component, ranks, hosts; each link's\n"
          "                     inter-group algorithm) instead of running it\n"
          "      --launcher L   mpiexec (MPICH hydra, default) or srun (Slurm);\n"
          "                     default $CPL_LAUNCHER, else mpiexec\n"
          "      --hostfile F   hosts the job may use (hydra's -f; under srun\n"
          "                     the pool for hosts:/ppn: placement)\n"
          "      --mpiexec P    mpiexec to run (default: $CPL_MPIEXEC, else\n"
          "                     %s); not with srun, which is\n"
          "                     $CPL_SRUN, else srun\n"
          "  -h, --help         show this help\n"
          "  -V, --version      show the version\n"
          "Arguments after -- go to the launcher before the programs (e.g.\n"
          "-- -l for mpiexec, -- --time=10 for srun). Relative program paths in\n"
          "the file are taken relative to the file's directory. Each process\n"
          "gets CPL_COMPONENT, CPL_WORKFLOW and CPL_FIRST_RANK (its component's\n"
          "first job rank, for cpl-exec's messages), and CPL_PROGRESS=1 unless\n"
          "it is set (rank 0 of each component prints a line per step;\n"
          "CPL_PROGRESS=0 silences it).\n"
          "srun runs one job step, srun --mpi=pmi2 --kill-on-bad-exit=1\n"
          "--quit-on-interrupt --ntasks N --multi-prog F, each line of F\n"
          "\"ranks env CPL_COMPONENT=c CPL_WORKFLOW=... prog\":\n"
          "one MPI_COMM_WORLD in any allocation (a heterogeneous step needs\n"
          "distinct nodes per component). Components' hosts: and ppn: become a\n"
          "hostfile in rank order (hydra -f; srun SLURM_HOSTFILE with\n"
          "--distribution=arbitrary). Generated files go to $TMPDIR/cpl-run-UID/,\n"
          "named by the hash of their contents. Exit status: the job's (hydra:\n"
          "the bitwise OR of every process's status, a signal counting as its\n"
          "number, so 0 only if all succeeded); before the job starts, 1 if FILE\n"
          "is invalid or cannot be placed or a CPL_ variable (of the environment\n"
          "or a component's env:) or the tuning file would fail every process,\n"
          "2 on a usage error, 127 if the launcher cannot be run. Ctrl-C or a\n"
          "kill of cpl-run reaches every process; each names the signal as one\n"
          "the job was sent. SIGHUP (the terminal closed) stops the job as a\n"
          "kill (SIGTERM) does; Ctrl-Z is refused (a job cannot be suspended).\n",
          CPL_MPIEXEC_DEFAULT);
}

/* Would a process of component c (NULL: cpl-run's own environment) fail
 * at cpl_init or its first collective because of a CPL_ variable or the
 * tuning file? Every rank would, with this message: say it here instead,
 * the library's check on the environment the process gets (cpl-run's,
 * then the component's env: entries). 0 if fine; `say` starts the lines. */
static int env_refused(const cpli_workflow *wf, const cpli_component *c, const char *say) {
  int n = 0;
  for (int i = 0; c && i < c->nenv; i++) n += !strncmp(c->env[i].name, "CPL_", 4);
  if (c && !n) return 0; /* as cpl-run's own, checked first */
  char **saved = calloc((size_t)n + 1, sizeof *saved);
  if (!saved) return fprintf(stderr, "cpl-run: out of memory\n"), 1;
  for (int i = 0, k = 0; c && i < c->nenv; i++) {
    if (strncmp(c->env[i].name, "CPL_", 4)) continue;
    const char *old = getenv(c->env[i].name);
    saved[k++] = old ? strdup(old) : NULL;
    setenv(c->env[i].name, c->env[i].value, 1);
  }
  cpli_tuning_file_forget(); /* CPL_TUNING_FILE may be one of them */
  const int rc = cpli_env_check();
  if (rc != CPL_OK && c)
    fprintf(stderr, "%s%s:%d:%d: component %s: %s\n", say, wf->path, c->pos.line, c->pos.col,
            c->name, cpl_last_error());
  else if (rc != CPL_OK) fprintf(stderr, "%s%s\n", say, cpl_last_error());
  /* Put cpl-run's environment back in reverse, for a name given twice. */
  for (int i = c ? c->nenv - 1 : -1, k = n; i >= 0; i--) {
    if (strncmp(c->env[i].name, "CPL_", 4)) continue;
    if (saved[--k]) setenv(c->env[i].name, saved[k], 1);
    else unsetenv(c->env[i].name);
    free(saved[k]);
  }
  free(saved);
  cpli_tuning_file_forget();
  return rc != CPL_OK;
}

/*
 * The launcher runs as cpl-run's child, in a process group of its own.
 * cpl-run used to become the launcher (exec), and then hydra's mpiexec
 * - died of SIGHUP (a closed terminal; kill -HUP), which it does not
 *   handle: its proxies SIGKILLed the processes, and nobody said a word;
 * - stopped alone on Ctrl-Z (SIGTSTP): its proxies and the processes,
 *   in sessions of their own, went on, busy-polling, while the peers'
 *   timeouts ran.
 * Now the launcher ignores both; cpl-run turns SIGHUP into a SIGTERM to
 * it, which stops the job as a kill does, each process reporting the
 * signal (cpl-exec); and refuses Ctrl-Z with a word: a stopped MPI job
 * cannot be resumed (the waits of every process measure wall time, and
 * fail when resumed past their timeouts), and hydra cannot stop its
 * processes. cpl-exec gives the programs both back at their defaults.
 * Every other signal cpl-run gets goes on to the launcher, once: hydra
 * takes a second SIGINT for "kill at once, without reports", and in
 * cpl-run's group it got a signal to the group (kill -INT -PGID,
 * `timeout -s INT`) twice, from the sender and from cpl-run ("Ctrl-C
 * caught... cleaning up processes", no report, exit 255). Its own group
 * keeps the terminal's and the group's signals away from it, and a copy
 * of the same signal within a second (timeout sends one to cpl-run and
 * one to its group) is not passed on again (srun runs with
 * --quit-on-interrupt, launch.c: one SIGINT ends its step). A launcher
 * outside the terminal's foreground group does not read the terminal
 * (hydra checks, and then forwards no stdin); stdin from a file or pipe
 * is unaffected.
 * If cpl-run dies, the launcher gets SIGTERM.
 */
static volatile sig_atomic_t launcher_pid;

static void tell(const char *s) {
  if (write(STDERR_FILENO, s, strlen(s)) < 0) return;
}

static double passed_at[NSIG]; /* when each signal last went on, 0 never */

static void pass_on(int sig, siginfo_t *si, void *uc) {
  (void)si;
  (void)uc;
  if (sig == SIGHUP) {
    tell("cpl-run: SIGHUP (the terminal closed, or a kill): stopping the job (SIGTERM)\n");
    kill(launcher_pid, SIGTERM);
  } else if (sig == SIGTSTP) {
    tell("cpl-run: Ctrl-Z ignored: an MPI job cannot be suspended (the launcher would stop "
         "alone, its processes running on; waits resumed past their timeouts fail); Ctrl-C "
         "stops it\n");
  } else {
    struct timespec ts; /* clock_gettime is async-signal-safe */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (passed_at[sig] > 0 && now - passed_at[sig] < 1.0) return; /* a copy of the same */
    passed_at[sig] = now;
    kill(launcher_pid, sig);
  }
}

static int run_launcher(cpli_launch *l) {
  const pid_t parent = getpid();
  /* Blocked until the handlers know the launcher's pid. */
  static const int passed[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,
                               SIGUSR1, SIGUSR2, SIGALRM, SIGTSTP};
  sigset_t all, old;
  sigemptyset(&all);
  for (size_t i = 0; i < sizeof passed / sizeof *passed; i++) sigaddset(&all, passed[i]);
  sigprocmask(SIG_BLOCK, &all, &old);
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0); /* see above: signals reach it through cpl-run only */
    signal(SIGHUP, SIG_IGN);
    signal(SIGTSTP, SIG_IGN);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127); /* cpl-run died already */
    sigprocmask(SIG_SETMASK, &old, NULL);
    cpli_launch_exec(l);
    fprintf(stderr, "cpl-run: cannot run %s: %s\n", l->argv[0], strerror(errno));
    _exit(127);
  }
  if (pid < 0) {
    fprintf(stderr, "cpl-run: cannot start %s: fork: %s\n", l->argv[0], strerror(errno));
    return 127;
  }
  setpgid(pid, pid); /* as the child does, whichever runs first */
  launcher_pid = pid;
  struct sigaction sa = {.sa_sigaction = pass_on, .sa_flags = SA_SIGINFO | SA_RESTART};
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof passed / sizeof *passed; i++) sigaction(passed[i], &sa, NULL);
  sigprocmask(SIG_SETMASK, &old, NULL);
  int status;
  for (;;) {
    if (waitpid(pid, &status, WUNTRACED) < 0) {
      if (errno == EINTR) continue;
      fprintf(stderr, "cpl-run: waitpid: %s\n", strerror(errno));
      return 127;
    }
    if (!WIFSTOPPED(status)) break;
    /* The launcher stopped (reading the terminal from the background,
     * SIGSTOP): so does cpl-run, for the shell to see; fg continues both. */
    kill(getpid(), SIGSTOP);
    kill(pid, SIGCONT);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  /* Die of the launcher's signal, as the exec'd launcher did. */
  const int sig = WTERMSIG(status);
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, NULL);
  raise(sig);
  return 128 + sig;
}

int main(int argc, char **argv) {
  int dry = 0;
  const char *file = NULL;
  const char *mpiexec = getenv("CPL_MPIEXEC");
  if (!mpiexec || !*mpiexec) mpiexec = CPL_MPIEXEC_DEFAULT;
  const char *launcher = getenv("CPL_LAUNCHER");
  if (!launcher || !*launcher) launcher = "mpiexec";
  const char *hostfile = NULL, *mpiexec_opt = NULL;
  int nextra = 0;
  char **extra = NULL;
  int info = cpli_cli_info("cpl-run", argc, argv, usage);
  if (info >= 0) return info;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **value = !strcmp(a, "--mpiexec")    ? &mpiexec_opt
                         : !strcmp(a, "--launcher") ? &launcher
                         : !strcmp(a, "--hostfile") ? &hostfile
                                                    : NULL;
    if (!strcmp(a, "--")) {
      extra = argv + i + 1;
      nextra = argc - i - 1;
      break;
    } else if (!strcmp(a, "-n") || !strcmp(a, "--dry-run")) {
      dry = 1;
    } else if (value) {
      if (i + 1 == argc)
        return cpli_cli_usage_error("cpl-run", usage, "option %s needs a value", a);
      *value = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      return cpli_cli_usage_error("cpl-run", usage, "unknown option %s", a);
    } else if (!file) {
      file = a;
    } else {
      return cpli_cli_usage_error("cpl-run", usage,
                                  "one workflow file only, "
                                  "%s is a second (launcher arguments go after --)",
                                  a);
    }
  }
  if (!file) return cpli_cli_usage_error("cpl-run", usage, "no workflow file given");
  if (mpiexec_opt) mpiexec = mpiexec_opt;
  int kind = cpli_launcher_parse(launcher);
  if (kind < 0) {
    fprintf(stderr,
            "cpl-run: unknown launcher \"%s\" (from %s; one of: "
            "mpiexec, srun)\n",
            launcher,
            getenv("CPL_LAUNCHER") && launcher == getenv("CPL_LAUNCHER") ? "CPL_LAUNCHER"
                                                                         : "--launcher");
    return 2;
  }
  /* Ignored, it would run a different srun than the one asked for. */
  if (kind == CPLI_LAUNCHER_SRUN && mpiexec_opt)
    return cpli_cli_usage_error("cpl-run", usage,
                                "--mpiexec %s is for --launcher mpiexec; srun is $CPL_SRUN, "
                                "else srun from PATH",
                                mpiexec_opt);

  cpl_diag *d = NULL;
  if (cpl_diag_create(&d) != CPL_OK) return 2;
  cpl_workflow *wf = NULL;
  if (cpl_workflow_load(file, d, &wf) != CPL_OK) {
    const int shown = cpl_diag_count(d), total = cpl_diag_total(d);
    for (int i = 0; i < shown; i++) fprintf(stderr, "%s\n", cpl_diag_message(d, i));
    if (shown == 0) fprintf(stderr, "%s\n", cpl_last_error());
    /* as cpl-validate: the list stops at 100, which must not look like all */
    if (total > shown) fprintf(stderr, "%s: %d more errors not shown\n", file, total - shown);
    fprintf(stderr, "cpl-run: %s is not a valid workflow (%d error%s); nothing started\n", file,
            total ? total : 1, total > 1 ? "s" : "");
    cpl_diag_destroy(d);
    return 1;
  }
  cpl_diag_destroy(d);
  /* A job every rank of which would fail at once is not started (a dry
   * run warns, as of a program it cannot run). */
  const char *say = dry ? "warning: " : "cpl-run: ";
  int refused = env_refused(wf, NULL, say);
  for (int i = 0; i < wf->ncomps && !refused; i++) refused = env_refused(wf, &wf->comps[i], say);
  if (refused && !dry) {
    fprintf(stderr,
            "cpl-run: %s: every process would fail with this environment (the library's "
            "check); nothing started\n",
            file);
    cpl_workflow_destroy(wf);
    return 1;
  }

  char abspath[PATH_MAX];
  if (!realpath(file, abspath)) {
    fprintf(stderr, "cpl-run: %s: %s\n", file, strerror(errno));
    return 1;
  }
  char wfdir[PATH_MAX];
  snprintf(wfdir, sizeof wfdir, "%s", abspath);
  char *slash = strrchr(wfdir, '/');
  if (slash) *(slash == wfdir ? slash + 1 : slash) = '\0';

  const char *srun = getenv("CPL_SRUN");
  const char *tmp = getenv("TMPDIR");
  char files_dir[PATH_MAX];
  snprintf(files_dir, sizeof files_dir, "%s/cpl-run-%ld", tmp && *tmp ? tmp : "/tmp",
           (long)getuid());
  cpli_launch_opts lo = {.launcher = (cpli_launcher)kind,
                         .program =
                             kind == CPLI_LAUNCHER_SRUN ? (srun && *srun ? srun : "srun") : mpiexec,
                         .hostfile = hostfile,
                         .extra = extra,
                         .nextra = nextra,
                         .workflow = abspath,
                         .wfdir = wfdir,
                         .files_dir = files_dir,
                         /* Both launchers pass the environment on to every
                          * process; set in the command, which a dry run prints. */
                         .progress = !getenv("CPL_PROGRESS")};
  if (kind == CPLI_LAUNCHER_MPIEXEC) { /* words hydra would split the job at */
    if (cpl_diag_create(&d) != CPL_OK) return 2;
    cpli_wf_check_hydra_words(wf, d);
    int n = cpl_diag_count(d);
    for (int i = 0; i < n; i++) fprintf(stderr, "%s\n", cpl_diag_message(d, i));
    cpl_diag_destroy(d);
    if (n) {
      fprintf(stderr, "cpl-run: %s: a command word cannot be passed by mpiexec; nothing started\n",
              file);
      cpl_workflow_destroy(wf);
      return 1;
    }
  }
  cpli_launch l;
  char err[1024];
  if (cpli_launch_build(wf, &lo, &l, err, sizeof err) != 0) {
    fprintf(stderr, "cpl-run: %s: %s; nothing started\n", file, err);
    cpl_workflow_destroy(wf);
    return 1;
  }
  /* Hydra never ends a job whose program cannot be exec'd: check first. */
  if (cpl_diag_create(&d) != CPL_OK) return 2;
  cpli_wf_check_programs(wf, wfdir, d);
  /* Hydra fails with internal errors on a missing -wdir; check it where
   * this host is where the processes run. */
  if (kind == CPLI_LAUNCHER_MPIEXEC && !hostfile && !l.rank_host) cpli_wf_check_workdirs(wf, d);
  cpli_launch_check_hosts(&l, &lo, wf, !dry, d);
  for (int i = 0; i < cpl_diag_count(d); i++)
    fprintf(stderr, "%s%s\n", dry ? "warning: " : "", cpl_diag_message(d, i));
  if (cpl_diag_count(d) && !dry) {
    fprintf(stderr,
            "cpl-run: %s: a program cannot be run, a workdir entered or a host "
            "reached; nothing started\n",
            file);
    cpl_diag_destroy(d);
    cpli_launch_free(&l);
    cpl_workflow_destroy(wf);
    return 1;
  }
  cpl_diag_destroy(d);
  char exec_exe[PATH_MAX + 32];
  cpli_launch_exec_tool(exec_exe, sizeof exec_exe);
  if (!dry && access(exec_exe, X_OK) != 0) {
    fprintf(stderr, "cpl-run: %s: %s (install Coupler's tools together)\n", exec_exe,
            strerror(errno));
    cpli_launch_free(&l);
    cpl_workflow_destroy(wf);
    return 127;
  }

  /* Written for a dry run too: the command it prints runs as it is. */
  if (cpli_launch_write_files(&l, err, sizeof err) != 0) {
    fprintf(stderr, "cpl-run: %s; nothing started\n", err);
    cpli_launch_free(&l);
    cpl_workflow_destroy(wf);
    return 1;
  }
  if (dry) {
    cpli_launch_print(&l, wf, stdout);
    cpli_launch_free(&l);
    cpl_workflow_destroy(wf);
    return 0;
  }
  cpl_workflow_destroy(wf);
  const int rc = run_launcher(&l);
  cpli_launch_free(&l);
  return rc;
}
