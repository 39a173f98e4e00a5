/* Do the programs of a workflow exist? cpl-run and cpl-validate ask before
 * anything starts, because hydra never gives up on a program it cannot
 * exec: the other processes wait in MPI_Init forever. */
#define _XOPEN_SOURCE 700 /* access */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workflow/diag.h"
#include "workflow/model.h"

/* 0 if path is an executable regular file, else an errno value. */
static int executable(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return errno;
  if (S_ISDIR(st.st_mode)) return EISDIR;
  if (!S_ISREG(st.st_mode)) return EACCES;
  return access(path, X_OK) == 0 ? 0 : errno;
}

/* The "#!" line of a script, as the kernel reads it: the interpreter is
 * the first word after "#!", up to a blank or the line's end (interp).
 * 0 if path is no such script or its interpreter is executable, else an
 * errno value: the kernel then fails the exec with ENOENT, for a file
 * that is there, which cpl-exec could only report as "No such file or
 * directory". *crlf: the line ends in "\r\n" (a file with Windows line
 * endings), which puts a carriage return into the interpreter's name or
 * its argument; an error either way. A relative interpreter depends on
 * the process's directory: not checked. */
int cpli_wf_interpreter(const char *path, char *interp, size_t size, int *crlf) {
  char head[256]; /* the kernel reads no more of it */
  *crlf = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return 0; /* execute-only: exec decides */
  size_t n = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  head[n] = '\0';
  if (n < 2 || head[0] != '#' || head[1] != '!') return 0;
  const char *p = head + 2 + strspn(head + 2, " \t");
  snprintf(interp, size, "%.*s", (int)strcspn(p, " \t\r\n"), p);
  const char *nl = memchr(head, '\n', n);
  *crlf = nl && nl[-1] == '\r';
  if (*crlf) return ENOEXEC;
  return *p == '/' ? executable(interp) : 0;
}

static const char *env_path(const cpli_component *c) {
  for (int i = 0; i < c->nenv; i++)
    if (strcmp(c->env[i].name, "PATH") == 0) return c->env[i].value;
  const char *p = getenv("PATH");
  return p ? p : "/usr/bin:/bin"; /* execvp's default */
}

int cpli_wf_program(const cpli_component *c, const char *wfdir, char *out, size_t size) {
  const char *prog = c->argv[0];
  if (strchr(prog, '/')) {
    if (prog[0] == '/') {
      snprintf(out, size, "%s", prog);
    } else {
      while (prog[0] == '.' && prog[1] == '/') prog += 2;
      snprintf(out, size, "%s%s%s", wfdir, wfdir[0] && wfdir[strlen(wfdir) - 1] == '/' ? "" : "/",
               prog);
    }
    return executable(out);
  }
  /* A bare name: the first executable PATH entry, as execvp finds it. A
   * match that is not executable is remembered (EACCES beats ENOENT). */
  const char *path = env_path(c);
  int why = ENOENT;
  snprintf(out, size, "%s", prog);
  for (const char *p = path;; p++) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char cand[4096];
    if (n == 0) snprintf(cand, sizeof cand, "%s", prog); /* "" means "." */
    else snprintf(cand, sizeof cand, "%.*s/%s", (int)n, p, prog);
    int rc = executable(cand);
    if (rc == 0) {
      snprintf(out, size, "%s", cand);
      return 0;
    }
    if (rc == EACCES) why = EACCES;
    if (!end) break;
    p = end;
  }
  return why;
}

void cpli_wf_check_programs(const cpli_workflow *wf, const char *wfdir, cpl_diag *d) {
  for (int i = 0; i < wf->ncomps; i++) {
    const cpli_component *c = &wf->comps[i];
    if (c->kind != CPL_KIND_COMMAND || c->argc < 1) continue;
    char path[4096];
    int rc = cpli_wf_program(c, wfdir, path, sizeof path);
    char interp[256];
    int crlf;
    if (rc == 0 && (rc = cpli_wf_interpreter(path, interp, sizeof interp, &crlf)) != 0) {
      if (crlf)
        cpli_diag_add(d, wf->path, c->command_pos.line, c->command_pos.col,
                      "component \"%s\": program %s: its #! line ends in a carriage return "
                      "(Windows line endings), which the kernel keeps in the line's last word "
                      "(\"sh\\r\" is no program): convert the file to Unix line endings",
                      c->name, path);
      else
        cpli_diag_add(d, wf->path, c->command_pos.line, c->command_pos.col,
                      "component \"%s\": program %s: its #! interpreter %s: %s", c->name, path,
                      interp, strerror(rc));
      continue;
    }
    if (rc == 0) continue;
    const char *prog = c->argv[0];
    if (!strchr(prog, '/'))
      cpli_diag_add(d, wf->path, c->command_pos.line, c->command_pos.col,
                    "component \"%s\": program \"%s\" %s in PATH (%s)", c->name, prog,
                    rc == EACCES ? "is not executable" : "is not found", env_path(c));
    else
      cpli_diag_add(d, wf->path, c->command_pos.line, c->command_pos.col,
                    "component \"%s\": program %s: %s%s", c->name, path, strerror(rc),
                    prog[0] == '/' ? ""
                                   : " (relative paths are taken from the "
                                     "workflow file's directory)");
  }
}

void cpli_wf_check_hydra_words(const cpli_workflow *wf, cpl_diag *d) {
  for (int i = 0; i < wf->ncomps; i++) {
    const cpli_component *c = &wf->comps[i];
    for (int a = 0; c->kind == CPL_KIND_COMMAND && a < c->argc; a++)
      if (strcmp(c->argv[a], ":") == 0)
        cpli_diag_add(d, wf->path, c->argpos[a].line, c->argpos[a].col,
                      "component \"%s\": command word %d is \":\", which hydra's mpiexec takes "
                      "for the separator between programs (the job would hang); change the "
                      "word, or use --launcher srun",
                      c->name, a);
  }
}

void cpli_wf_check_workdirs(const cpli_workflow *wf, cpl_diag *d) {
  for (int i = 0; i < wf->ncomps; i++) {
    const cpli_component *c = &wf->comps[i];
    if (!c->workdir) continue;
    struct stat st;
    int rc = stat(c->workdir, &st) != 0      ? errno
             : !S_ISDIR(st.st_mode)          ? ENOTDIR
             : access(c->workdir, X_OK) != 0 ? errno
                                             : 0;
    if (rc)
      cpli_diag_add(d, wf->path, c->workdir_pos.line, c->workdir_pos.col,
                    "component \"%s\": workdir %s: %s%s", c->name, c->workdir, strerror(rc),
                    c->workdir[0] == '/' ? ""
                                         : " (a relative workdir is taken from the directory "
                                           "cpl-run starts in)");
  }
}
