/*
 * cpl-run's launchers: the workflow model -> the exact command (and the
 * files it reads) that starts the job as one MPI_COMM_WORLD, with MPICH's
 * hydra mpiexec or with Slurm's srun, and the placement the YAML asks for
 * (hosts:, ppn:). No MPI here; the only outside calls are reading a
 * hostfile and, under srun, `scontrol show hostnames` for the allocation.
 */
#ifndef CPLI_TOOLS_LAUNCH_H
#define CPLI_TOOLS_LAUNCH_H

#include <stdio.h>

#include "workflow/model.h"

typedef enum cpli_launcher {
  CPLI_LAUNCHER_MPIEXEC = 0, /* hydra: one MPMD line, -f hostfile      */
  CPLI_LAUNCHER_SRUN,        /* srun --mpi=pmi2 -K1 --multi-prog FILE   */
  CPLI_LAUNCHER_COUNT
} cpli_launcher;

/* "mpiexec"/"srun" -> launcher; -1 if neither. */
int cpli_launcher_parse(const char *name);
const char *cpli_launcher_name(cpli_launcher l);

typedef struct cpli_launch_opts {
  cpli_launcher launcher;
  const char *program;  /* mpiexec or srun to run                     */
  const char *hostfile; /* --hostfile: hosts the job may use; NULL    */
  char **extra;         /* arguments after --, for the launcher       */
  int nextra;
  const char *workflow;  /* absolute path of the workflow file         */
  const char *wfdir;     /* its directory (relative program paths)     */
  const char *files_dir; /* where generated files go (created if new)  */
  int progress;          /* set CPL_PROGRESS=1 for the job (cpl-run's
                            default when it is unset): in the command */
} cpli_launch_opts;

typedef struct cpli_launch_file {
  char *path, *text; /* written by cpli_launch_write_files         */
  const char *what;  /* "hostfile", "multi-prog configuration"      */
  int arg;           /* index of the word of argv naming it; -1    */
} cpli_launch_file;

typedef struct cpli_launch {
  char **argv; /* the command, NULL-terminated               */
  int argc, cap;
  char *env_name, *env_value; /* one variable set for the launcher (srun
                                 placement: SLURM_HOSTFILE); NULL if none */
  int progress;               /* and CPL_PROGRESS=1 (opts' progress)     */
  cpli_launch_file files[2];
  int nfiles;
  char **rank_host; /* host of each rank, NULL: no placement       */
  int nranks;
} cpli_launch;

/* Build the command. On failure returns -1 with the reason in err (what
 * to change: a hostfile, an allocation, a key), nothing allocated. */
int cpli_launch_build(const cpli_workflow *wf, const cpli_launch_opts *o, cpli_launch *out,
                      char *err, size_t errsize);

/* Write the generated files into files_dir (created 0700; refused unless
 * this user owns it and no one else may write there), atomically. Each
 * name is the hash of the contents: reruns reuse them, nothing piles up. */
int cpli_launch_write_files(const cpli_launch *l, char *err, size_t errsize);

/* Hosts hydra would reach with ssh (placement, or the --hostfile's slots
 * the ranks fill) that do not resolve and are no ssh alias, and, with
 * login set (a real launch, not a dry run), other hosts where ssh cannot
 * log in without a prompt: hydra waits forever when ssh fails. One error
 * each into d. */
void cpli_launch_check_hosts(const cpli_launch *l, const cpli_launch_opts *o,
                             const cpli_workflow *wf, int login, cpl_diag *d);

/* --dry-run: the command (shell-quoted, with the variables it sets
 * before it, so that it runs as cpli_launch_exec runs it), each file with its contents, and
 * the table: component, ranks, hosts, and each link's inter-group
 * algorithm for the sizes declared on its ports. */
void cpli_launch_print(const cpli_launch *l, const cpli_workflow *wf, FILE *f);

/* Set the command's variables and replace the process with it; returns
 * only on failure (errno). */
void cpli_launch_exec(const cpli_launch *l);

void cpli_launch_free(cpli_launch *l);

/* Where cpl-exec is (beside cpl-run, else the install bin/). */
void cpli_launch_exec_tool(char *out, size_t size);

#endif
