/*
 * cpl-run [OPTIONS] FILE [-- MPIEXEC_ARGS...]: launch a workflow as one
 * MPMD job with MPICH's hydra mpiexec:
 *
 *   mpiexec MPIEXEC_ARGS... -n N1 -env CPL_COMPONENT c1 -env CPL_WORKFLOW
 *     /abs/FILE [-env K V]... [-wdir D] prog1 args : -n N2 ...
 *
 * It validates FILE first (same checks as cpl-validate), then replaces
 * itself with mpiexec, so the exit status is the job's and signals reach
 * mpiexec directly. It wraps nothing in a timeout: use `timeout` around it.
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
#include "workflow/model.h"

#ifndef CPL_MPIEXEC_DEFAULT
#define CPL_MPIEXEC_DEFAULT "mpiexec"
#endif
#ifndef CPL_BINDIR
#define CPL_BINDIR "/usr/local/bin"
#endif
#define COMPONENT_EXE "cpl-component"

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
          "CPL_COMPONENT and CPL_WORKFLOW, and CPL_PROGRESS=1 (rank 0 of each\n"
          "component prints a line per step; set CPL_PROGRESS=0 to silence it).\n"
          "Exit status: the job's; 1 if FILE\n"
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

/* dir + "/" + rel, for program paths relative to the workflow file. */
static char *join_path(const char *dir, const char *rel) {
  size_t n = strlen(dir) + strlen(rel) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, rel);
  return p;
}

/* Directory of the running cpl-run, to find cpl-component beside it (build
 * tree) before the install location. */
static void component_exe(char *out, size_t size) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      snprintf(out, size, "%s/%s", self, COMPONENT_EXE);
      if (access(out, X_OK) == 0) return;
    }
  }
  snprintf(out, size, "%s/%s", CPL_BINDIR, COMPONENT_EXE);
}

static void build(const cpli_workflow *wf, const char *abspath,
                  const char *wfdir, const char *mpiexec, int nextra,
                  char **extra, words *w) {
  char num[32], comp_exe[PATH_MAX + 32];
  component_exe(comp_exe, sizeof comp_exe);
  add(w, mpiexec);
  for (int i = 0; i < nextra; i++) add(w, extra[i]);
  if (!getenv("CPL_PROGRESS")) { /* progress lines, unless told otherwise */
    add(w, "-genv");
    add(w, "CPL_PROGRESS");
    add(w, "1");
  }
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
    if (k->kind != CPL_KIND_COMMAND) {
      /* Built-ins read their settings from the workflow file. */
      add(w, comp_exe);
      continue;
    }
    const char *prog = k->argv[0];
    if (strchr(prog, '/') && prog[0] != '/') {
      while (prog[0] == '.' && prog[1] == '/') prog += 2;
      char *p = join_path(wfdir, prog), clean[PATH_MAX];
      /* Resolved when it exists: the command shows ../ free paths. */
      add(w, p && realpath(p, clean) ? clean : p ? p : prog);
      free(p);
    } else {
      add(w, prog);
    }
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
  int info = cpli_cli_info("cpl-run", argc, argv, usage);
  if (info >= 0) return info;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      extra = argv + i + 1;
      nextra = argc - i - 1;
      break;
    } else if (!strcmp(a, "-n") || !strcmp(a, "--dry-run")) {
      dry = 1;
    } else if (!strcmp(a, "--mpiexec")) {
      if (i + 1 == argc)
        return cpli_cli_usage_error("cpl-run", usage, "option --mpiexec needs a value");
      mpiexec = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      return cpli_cli_usage_error("cpl-run", usage, "unknown option %s", a);
    } else if (!file) {
      file = a;
    } else {
      return cpli_cli_usage_error("cpl-run", usage, "one workflow file only, "
                                  "%s is a second (mpiexec arguments go after --)", a);
    }
  }
  if (!file) return cpli_cli_usage_error("cpl-run", usage, "no workflow file given");

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
