/*
 * cpl-run [OPTIONS] FILE [-- LAUNCHER_ARGS...]: launch a workflow as one
 * MPMD job with MPICH's hydra mpiexec (default):
 *
 *   mpiexec [-f HOSTFILE] LAUNCHER_ARGS... -n N1 -env CPL_COMPONENT c1
 *     -env CPL_WORKFLOW /abs/FILE [-env K V]... [-wdir D] prog1 args : ...
 *
 * or with Slurm's srun (--launcher srun: one --multi-prog step); the
 * commands, placement and generated files are built in launch.c.
 * It validates FILE first (same checks as cpl-validate), then replaces
 * itself with the launcher, so the exit status is the job's and signals
 * reach it directly. It checks first that every program exists and is
 * executable (and, under hydra's ssh, that every host resolves), and
 * starts every process through cpl-exec, which stops the
 * job when a process ends before cpl_init (hydra would wait forever). It
 * wraps nothing in a timeout: use `timeout` around it.
 */
#define _XOPEN_SOURCE 700 /* realpath, execvp, readlink */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coupler.h"
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
          "gets CPL_COMPONENT and CPL_WORKFLOW, and CPL_PROGRESS=1 unless it is\n"
          "set (rank 0 of each component prints a line per step; CPL_PROGRESS=0\n"
          "silences it).\n"
          "srun runs one job step, srun --mpi=pmi2 --kill-on-bad-exit=1 --ntasks N\n"
          "--multi-prog F, each line of F \"ranks env CPL_COMPONENT=c\n"
          "CPL_WORKFLOW=... prog\":\n"
          "one MPI_COMM_WORLD in any allocation (a heterogeneous step needs\n"
          "distinct nodes per component). Components' hosts: and ppn: become a\n"
          "hostfile in rank order (hydra -f; srun SLURM_HOSTFILE with\n"
          "--distribution=arbitrary). Generated files go to $TMPDIR/cpl-run-UID/,\n"
          "named by the hash of their contents. Exit status: the job's (hydra:\n"
          "the bitwise OR of every process's status, a signal counting as its\n"
          "number, so 0 only if all succeeded); before the job starts, 1 if FILE\n"
          "is invalid or cannot be placed, 2 on a usage error, 127 if the\n"
          "launcher cannot be run. Ctrl-C or a kill of cpl-run reaches every\n"
          "process; each names the signal as one the job was sent.\n",
          CPL_MPIEXEC_DEFAULT);
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
                         .files_dir = files_dir};
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
  /* Both launchers pass the environment on to every process. */
  if (!getenv("CPL_PROGRESS")) setenv("CPL_PROGRESS", "1", 1);
  cpli_launch_exec(&l);
  fprintf(stderr, "cpl-run: cannot run %s: %s\n", l.argv[0], strerror(errno));
  cpli_launch_free(&l);
  return 127;
}
