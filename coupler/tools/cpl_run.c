/*
 * cpl-run [OPTIONS] FILE [-- MPIEXEC_ARGS...]: launch a workflow as one
 * MPMD job with MPICH's hydra mpiexec:
 *
 *   mpiexec MPIEXEC_ARGS... -n N1 -env CPL_COMPONENT c1 -env CPL_WORKFLOW
 *     /abs/FILE [-env K V]... [-wdir D] prog1 args : -n N2 ...
 *
 * It validates FILE first (same checks as cpl-validate, including that
 * every program exists and is executable), then replaces itself with
 * mpiexec, so the exit status is the job's and signals reach mpiexec
 * directly. Every process starts through cpl-exec, which stops the job
 * when a process ends before cpl_init (hydra would wait forever). It
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
#include "workflow/model.h"

#ifndef CPL_MPIEXEC_DEFAULT
#define CPL_MPIEXEC_DEFAULT "mpiexec"
#endif
#ifndef CPL_BINDIR
#define CPL_BINDIR "/usr/local/bin"
#endif
#define COMPONENT_EXE "cpl-component"
#define EXEC_EXE "cpl-exec"

static void usage(FILE *f) {
  fprintf(f,
          "usage: cpl-run [--dry-run] [--mpiexec PATH] FILE [-- MPIEXEC_ARGS...]\n"
          "Launch the workflow described by FILE as one MPMD MPI job.\n"
          "  -n, --dry-run    print the mpiexec command instead of running it\n"
          "      --mpiexec P  the launcher to use (default: $CPL_MPIEXEC, else\n"
          "                   %s)\n"
          "  -h, --help       show this help\n"
          "  -V, --version    show the version\n"
          "Arguments after -- go to mpiexec before the first component\n"
          "(e.g. -- -hosts a,b -ppn 4). Relative program paths in the file are\n"
          "taken relative to the file's directory. Each process gets\n"
          "CPL_COMPONENT and CPL_WORKFLOW. Exit status: the job's; 1 if FILE\n"
          "is invalid; 2 on a usage error; 127 if mpiexec cannot be run.\n",
          CPL_MPIEXEC_DEFAULT);
}

/* Growing argv for the mpiexec command. */
typedef struct words {
  char **v;
  int n, cap;
} words;

static void add(words *w, const char *s) {
  if (w->n + 2 > w->cap) {
    int cap = w->cap ? 2 * w->cap : 64;
    char **v = realloc(w->v, (size_t)cap * sizeof *v);
    if (!v) {
      fprintf(stderr, "cpl-run: out of memory\n");
      exit(2);
    }
    w->v = v;
    w->cap = cap;
  }
  size_t n = strlen(s) + 1;
  char *copy = malloc(n);
  if (!copy) {
    fprintf(stderr, "cpl-run: out of memory\n");
    exit(2);
  }
  memcpy(copy, s, n);
  w->v[w->n++] = copy;
  w->v[w->n] = NULL;
}

static void words_free(words *w) {
  for (int i = 0; i < w->n; i++) free(w->v[i]);
  free(w->v);
  *w = (words){0};
}

/* Directory of the running cpl-run, to find a tool (cpl-component,
 * cpl-exec) beside it (build tree) before the install location. */
static void tool_exe(const char *tool, char *out, size_t size) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      snprintf(out, size, "%s/%s", self, tool);
      if (access(out, X_OK) == 0) return;
    }
  }
  snprintf(out, size, "%s/%s", CPL_BINDIR, tool);
}

static void build(const cpli_workflow *wf, const char *abspath,
                  const char *wfdir, const char *mpiexec, int nextra,
                  char **extra, words *w) {
  char num[32], comp_exe[PATH_MAX + 32], exec_exe[PATH_MAX + 32];
  tool_exe(COMPONENT_EXE, comp_exe, sizeof comp_exe);
  tool_exe(EXEC_EXE, exec_exe, sizeof exec_exe);
  add(w, mpiexec);
  for (int i = 0; i < nextra; i++) add(w, extra[i]);
  for (int c = 0; c < wf->ncomps; c++) {
    const cpli_component *k = &wf->comps[c];
    if (c) add(w, ":");
    snprintf(num, sizeof num, "%d", k->nprocs);
    add(w, "-n");
    add(w, num);
    add(w, "-env");
    add(w, "CPL_COMPONENT");
    add(w, k->name);
    add(w, "-env");
    add(w, "CPL_WORKFLOW");
    add(w, abspath);
    for (int e = 0; e < k->nenv; e++) {
      add(w, "-env");
      add(w, k->env[e].name);
      add(w, k->env[e].value);
    }
    if (k->workdir) {
      add(w, "-wdir");
      add(w, k->workdir);
    }
    add(w, exec_exe);
    if (k->kind != CPL_KIND_COMMAND) {
      /* Built-ins read their settings from the workflow file. */
      add(w, comp_exe);
      continue;
    }
    char prog[PATH_MAX + 32];
    cpli_wf_program(k, wfdir, prog, sizeof prog);
    add(w, strchr(k->argv[0], '/') ? prog : k->argv[0]);
    for (int a = 1; a < k->argc; a++) add(w, k->argv[a]);
  }
}

/* Print one word so a POSIX shell reads it back unchanged. */
static void print_quoted(const char *s) {
  if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789_-+=/.,:@%") == strlen(s)) {
    fputs(s, stdout);
    return;
  }
  putchar('\'');
  for (; *s; s++) {
    if (*s == '\'') fputs("'\\''", stdout);
    else putchar(*s);
  }
  putchar('\'');
}

int main(int argc, char **argv) {
  int dry = 0;
  const char *file = NULL;
  const char *mpiexec = getenv("CPL_MPIEXEC");
  if (!mpiexec || !*mpiexec) mpiexec = CPL_MPIEXEC_DEFAULT;
  int nextra = 0;
  char **extra = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      extra = argv + i + 1;
      nextra = argc - i - 1;
      break;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
      printf("cpl-run (Coupler) %s\n", CPL_VERSION_STRING);
      return 0;
    } else if (!strcmp(a, "-n") || !strcmp(a, "--dry-run")) {
      dry = 1;
    } else if (!strcmp(a, "--mpiexec") && i + 1 < argc) {
      mpiexec = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "cpl-run: unknown option %s\n", a);
      usage(stderr);
      return 2;
    } else if (!file) {
      file = a;
    } else {
      fprintf(stderr, "cpl-run: one workflow file only (extra mpiexec "
                      "arguments go after --)\n");
      return 2;
    }
  }
  if (!file) {
    usage(stderr);
    return 2;
  }

  cpl_diag *d = NULL;
  if (cpl_diag_create(&d) != CPL_OK) return 2;
  cpl_workflow *wf = NULL;
  if (cpl_workflow_load(file, d, &wf) != CPL_OK) {
    for (int i = 0; i < cpl_diag_count(d); i++)
      fprintf(stderr, "%s\n", cpl_diag_message(d, i));
    if (cpl_diag_count(d) == 0) fprintf(stderr, "%s\n", cpl_last_error());
    fprintf(stderr, "cpl-run: %s is not a valid workflow; nothing started\n",
            file);
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

  /* Hydra never ends a job whose program cannot be exec'd: check first. */
  if (cpl_diag_create(&d) != CPL_OK) return 2;
  cpli_wf_check_programs(wf, wfdir, d);
  for (int i = 0; i < cpl_diag_count(d); i++)
    fprintf(stderr, "%s%s\n", dry ? "warning: " : "", cpl_diag_message(d, i));
  if (cpl_diag_count(d) && !dry) {
    fprintf(stderr, "cpl-run: %s: a program cannot be run; nothing started\n",
            file);
    cpl_diag_destroy(d);
    cpl_workflow_destroy(wf);
    return 1;
  }
  cpl_diag_destroy(d);
  char exec_exe[PATH_MAX + 32];
  tool_exe(EXEC_EXE, exec_exe, sizeof exec_exe);
  if (!dry && access(exec_exe, X_OK) != 0) {
    fprintf(stderr, "cpl-run: %s: %s (install Coupler's tools together)\n",
            exec_exe, strerror(errno));
    cpl_workflow_destroy(wf);
    return 127;
  }

  words w = {0};
  build(wf, abspath, wfdir, mpiexec, nextra, extra, &w);
  cpl_workflow_destroy(wf);

  if (dry) {
    for (int i = 0; i < w.n; i++) {
      if (i) putchar(' ');
      print_quoted(w.v[i]);
    }
    putchar('\n');
    words_free(&w);
    return 0;
  }
  fflush(NULL);
  execvp(w.v[0], w.v);
  fprintf(stderr, "cpl-run: cannot run %s: %s\n", w.v[0], strerror(errno));
  words_free(&w);
  return 127;
}
