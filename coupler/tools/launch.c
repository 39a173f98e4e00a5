/*
 * cpl-run's launchers (launch.h). One placement, two syntaxes:
 *
 *  - placement: when any component asks for hosts: or ppn:, every rank
 *    gets a host, in rank order (components in file order, as the job's
 *    MPI_COMM_WORLD ranks them). Hosts a component does not name come from
 *    a pool: the --hostfile, else (srun) the allocation's nodes.
 *  - mpiexec (hydra): MPICH 4.0's -hosts and -ppn are global options, not
 *    per executable, so the placement becomes a generated hostfile of
 *    "host:count" runs in rank order, passed with -f.
 *  - srun: one job step, `srun --mpi=pmi2 --kill-on-bad-exit=1
 *    --quit-on-interrupt -n N --multi-prog FILE`, each
 *    line "first-last env CPL_COMPONENT=c CPL_WORKFLOW=/abs ... prog args";
 *    the placement is SLURM_HOSTFILE (one host per task) with
 *    --distribution=arbitrary.
 */
#define _XOPEN_SOURCE 700 /* popen, readlink, mkdir, execvp, setenv */

#include "tools/launch.h"

#include "coll/select.h"
#include "core/error.h"
#include "core/index.h"
#include "data/desc.h"
#include "workflow/diag.h"

#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CPL_BINDIR
#define CPL_BINDIR "/usr/local/bin"
#endif
#define COMPONENT_EXE "cpl-component"
#define EXEC_EXE "cpl-exec"

static const char *const launcher_names[CPLI_LAUNCHER_COUNT] = {"mpiexec", "srun"};

int cpli_launcher_parse(const char *name) {
  for (int i = 0; i < CPLI_LAUNCHER_COUNT; i++)
    if (name && strcmp(name, launcher_names[i]) == 0) return i;
  return -1;
}

const char *cpli_launcher_name(cpli_launcher l) {
  return (unsigned)l < CPLI_LAUNCHER_COUNT ? launcher_names[l] : NULL;
}

static void oom(void) {
  fprintf(stderr, "cpl-run: out of memory\n");
  exit(2);
}

static char *xstrdup(const char *s) {
  char *p = strdup(s);
  if (!p) oom();
  return p;
}

static void fail(char *err, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, size, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------ words */

static void add(cpli_launch *l, const char *s) {
  if (l->argc + 2 > l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    char **v = realloc(l->argv, (size_t)cap * sizeof *v);
    if (!v) oom();
    l->argv = v;
    l->cap = cap;
  }
  l->argv[l->argc++] = xstrdup(s);
  l->argv[l->argc] = NULL;
}

/* A growing string, for the generated files. */
typedef struct text {
  char *s;
  size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...) CPLI_PRINTF(2, 3);
static void put(text *t, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) oom();
    if (t->s && t->n + (size_t)k < t->cap) {
      t->n += (size_t)k;
      return;
    }
    size_t cap = (t->cap ? 2 * t->cap : 1024) + (size_t)k;
    char *s = realloc(t->s, cap);
    if (!s) oom();
    t->s = s;
    t->cap = cap;
  }
}

/* Text in a "#" comment line of a generated file: a line break would end
 * the comment, so no control character goes in as is. */
static void put_comment(text *t, const char *s) {
  for (; *s; s++) put(t, "%c", (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

/* Characters a POSIX shell and srun's multi-prog parser take literally
 * (a shell also takes "%"; srun substitutes %t and %o). */
static int plain_word(const char *s, int shell) {
  size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789_-+=/.,:@%");
  return *s && n == strlen(s) && (shell || !strchr(s, '%'));
}

/* One word so that a POSIX shell reads it back unchanged. */
static void put_shell_word(text *t, const char *s) {
  if (plain_word(s, 1)) {
    put(t, "%s", s);
    return;
  }
  put(t, "'");
  for (; *s; s++) {
    if (*s == '\'') put(t, "'\\''");
    else put(t, "%c", *s);
  }
  put(t, "'");
}

/* ---------------------------------------------------------- programs */

/* A tool (cpl-component, cpl-exec) beside the running cpl-run (build
 * tree), else in the install bin/. */
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

void cpli_launch_exec_tool(char *out, size_t size) { tool_exe(EXEC_EXE, out, size); }

/* The words a component's processes run, all through cpl-exec (it stops
 * the job when a process ends before cpl_init, which hydra would wait on
 * forever): built-ins run cpl-component (it reads its settings from the
 * workflow file); a relative program path with "/" is relative to the
 * workflow file's directory. */
static char **component_words(const cpli_component *k, const char *wfdir, const char *comp_exe,
                              const char *exec_exe, int *nwords) {
  int n = 1 + (k->kind == CPL_KIND_COMMAND ? k->argc : 1);
  char **w = calloc((size_t)n + 1, sizeof *w);
  if (!w) oom();
  w[0] = xstrdup(exec_exe);
  if (k->kind != CPL_KIND_COMMAND) {
    w[1] = xstrdup(comp_exe);
  } else {
    const char *prog = k->argv[0];
    if (strchr(prog, '/') && prog[0] != '/') {
      while (prog[0] == '.' && prog[1] == '/') prog += 2;
      size_t len = strlen(wfdir) + strlen(prog) + 2;
      w[1] = malloc(len);
      if (!w[1]) oom();
      snprintf(w[1], len, "%s/%s", wfdir, prog);
      char clean[PATH_MAX]; /* resolved when it exists: no ../ in the command */
      if (realpath(w[1], clean)) {
        free(w[1]);
        w[1] = xstrdup(clean);
      }
    } else {
      w[1] = xstrdup(prog);
    }
    for (int a = 1; a < k->argc; a++) w[1 + a] = xstrdup(k->argv[a]);
  }
  *nwords = n;
  return w;
}

static void free_words(char **w, int n) {
  for (int i = 0; i < n; i++) free(w[i]);
  free(w);
}

/* --------------------------------------------------------- placement */

typedef struct pool {
  char **host;
  int *slots; /* hostfile's host:N, 1 otherwise */
  int n;
  const char *from; /* where the names came from, for messages */
} pool;

static void pool_add(pool *p, const char *name, int slots) {
  char **h = realloc(p->host, (size_t)(p->n + 1) * sizeof *h);
  if (!h) oom();
  p->host = h;
  int *s = realloc(p->slots, (size_t)(p->n + 1) * sizeof *s);
  if (!s) oom();
  p->slots = s;
  p->host[p->n] = xstrdup(name);
  p->slots[p->n++] = slots;
}

static void pool_free(pool *p) {
  for (int i = 0; i < p->n; i++) free(p->host[i]);
  free(p->host);
  free(p->slots);
}

/* A hydra hostfile: "host[:N]" per line, # comments, blank lines. */
static int pool_from_hostfile(pool *p, const char *path, char *err, size_t esize) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fail(err, esize, "cannot read hostfile %s: %s", path, strerror(errno));
    return -1;
  }
  char line[1024];
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *s = line + strspn(line, " \t\r\n");
    s[strcspn(s, " \t\r\n")] = '\0';
    if (!*s) continue;
    int slots = 1;
    char *colon = strchr(s, ':');
    if (colon) {
      *colon = '\0';
      char *end;
      long v = strtol(colon + 1, &end, 10);
      if (end == colon + 1 || (*end && *end != ':') || v < 1 || v > 1 << 20) {
        fail(err, esize, "%s:%d: expected host or host:N (N >= 1)", path, lineno);
        fclose(f);
        return -1;
      }
      slots = (int)v;
    }
    pool_add(p, s, slots);
  }
  fclose(f);
  if (p->n == 0) {
    fail(err, esize, "hostfile %s names no host", path);
    return -1;
  }
  p->from = path;
  return 0;
}

/* The nodes of the Slurm allocation cpl-run runs in. */
static int pool_from_slurm(pool *p, char *err, size_t esize) {
  const char *list = getenv("SLURM_JOB_NODELIST");
  if (!list || !*list) {
    fail(err, esize,
         "no hosts to place on: give --hostfile, run inside a "
         "Slurm allocation (salloc, sbatch), or name the hosts "
         "of every component");
    return -1;
  }
  if (strchr(list, '\'')) {
    fail(err, esize, "SLURM_JOB_NODELIST holds a quote: %s", list);
    return -1;
  }
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "scontrol show hostnames '%s'", list);
  FILE *f = popen(cmd, "r");
  char line[1024];
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, " \t\r\n")] = '\0';
    if (*line) pool_add(p, line, 1);
  }
  if (!f || pclose(f) != 0 || p->n == 0) {
    fail(err, esize, "cannot expand SLURM_JOB_NODELIST=%s with scontrol", list);
    return -1;
  }
  p->from = "the Slurm allocation";
  return 0;
}

static int placed(const cpli_component *c) { return c->nhosts || c->ppn; }

/* Hosts of every rank, or NULL when no component asks for placement. */
static char **place(const cpli_workflow *wf, const cpli_launch_opts *o, char *err, size_t esize) {
  int any = 0, need_pool = 0;
  for (int c = 0; c < wf->ncomps; c++) {
    any |= placed(&wf->comps[c]);
    need_pool |= !wf->comps[c].hosts;
  }
  if (!any) return NULL;
  pool p = {0};
  if (need_pool) {
    int rc = o->hostfile ? pool_from_hostfile(&p, o->hostfile, err, esize)
             : o->launcher == CPLI_LAUNCHER_SRUN
                 ? pool_from_slurm(&p, err, esize)
                 : (fail(err, esize,
                         "no hosts to place on: a component asks for "
                         "hosts: N or ppn:, or has no hosts: while another "
                         "does; give --hostfile or name the hosts of every "
                         "component"),
                    -1);
    if (rc) {
      pool_free(&p);
      return NULL;
    }
  }
  char **rank_host = calloc((size_t)wf->total_procs + 1, sizeof *rank_host);
  if (!rank_host) oom();
  /* The pool's position: host cursor (mod p.n), of whose slots used are
   * taken. */
  int r = 0, cursor = 0, used = 0;
  for (int ci = 0; ci < wf->ncomps; ci++) {
    const cpli_component *c = &wf->comps[ci];
    if (!placed(c)) { /* as hydra fills a hostfile: slots, in order, going on
                         where the previous component stopped */
      for (int i = 0; i < c->nprocs; i++, used++) {
        if (used == p.slots[cursor % p.n]) cursor++, used = 0;
        rank_host[r++] = xstrdup(p.host[cursor % p.n]);
      }
      continue;
    }
    /* hosts: N and ppn: take whole hosts: the next one with no rank yet. */
    if (!c->hosts && used) cursor++, used = 0;
    int nh = c->nhosts ? c->nhosts : (c->nprocs + c->ppn - 1) / c->ppn;
    if (!c->hosts && nh > p.n) {
      fail(err, esize, "component %s needs %d hosts but %s has %d", c->name, nh, p.from, p.n);
      pool_free(&p);
      for (int i = 0; i < r; i++) free(rank_host[i]);
      free(rank_host);
      return NULL;
    }
    /* ppn per host, else consecutive ranks spread evenly (host sizes
     * differ by at most one, no host empty). */
    for (int i = 0; i < c->nprocs; i++) {
      int h = c->ppn ? i / c->ppn : (int)((long long)i * nh / c->nprocs);
      rank_host[r++] = xstrdup(c->hosts ? c->hosts[h] : p.host[(cursor + h) % p.n]);
    }
    if (!c->hosts) cursor += nh;
  }
  pool_free(&p);
  return rank_host;
}

/* -------------------------------------------------------- launchers */

/* A generated file; with in_argv, the next word of the command will be its
 * path (named once the contents are complete, see name_files). */
static void add_file(cpli_launch *l, char *contents, const char *what, int in_argv) {
  l->files[l->nfiles++] = (cpli_launch_file){NULL, contents, what, in_argv ? l->argc : -1};
  if (in_argv) add(l, "");
}

static void build_mpiexec(const cpli_workflow *wf, const cpli_launch_opts *o, const char *comp_exe,
                          const char *exec_exe, cpli_launch *l) {
  add(l, o->program);
  if (l->rank_host) {
    text t = {0};
    put(&t, "# hydra hostfile written by cpl-run for ");
    put_comment(&t, wf->name);
    put(&t, ": rank order\n");
    for (int r = 0; r < l->nranks;) {
      int k = r;
      while (k < l->nranks && !strcmp(l->rank_host[k], l->rank_host[r])) k++;
      put(&t, "%s:%d\n", l->rank_host[r], k - r);
      r = k;
    }
    add(l, "-f");
    add_file(l, t.s, "hostfile", 1);
  } else if (o->hostfile) {
    add(l, "-f");
    add(l, o->hostfile);
  }
  for (int i = 0; i < o->nextra; i++) add(l, o->extra[i]);
  char num[32];
  for (int c = 0, first = 0; c < wf->ncomps; first += wf->comps[c++].nprocs) {
    const cpli_component *k = &wf->comps[c];
    if (c) add(l, ":");
    snprintf(num, sizeof num, "%d", k->nprocs);
    add(l, "-n");
    add(l, num);
    add(l, "-env");
    add(l, "CPL_COMPONENT");
    add(l, k->name);
    add(l, "-env");
    add(l, "CPL_WORKFLOW");
    add(l, o->workflow);
    snprintf(num, sizeof num, "%d", first); /* cpl-exec: rank in the component */
    add(l, "-env");
    add(l, "CPL_FIRST_RANK");
    add(l, num);
    for (int e = 0; e < k->nenv; e++) {
      add(l, "-env");
      add(l, k->env[e].name);
      add(l, k->env[e].value);
    }
    if (k->workdir) {
      add(l, "-wdir");
      add(l, k->workdir);
    }
    int nw;
    char **w = component_words(k, o->wfdir, comp_exe, exec_exe, &nw);
    for (int a = 0; a < nw; a++) add(l, w[a]);
    free_words(w, nw);
  }
}

/* srun's multi-prog parser splits at blanks, honours '...' (nothing inside
 * is special, %t included) and substitutes %t/%o outside quotes; it has
 * no escape for a quote inside quotes. */
static int put_srun_word(text *t, const char *w, const char *comp, char *err, size_t esize) {
  if (strpbrk(w, "'\n\r")) {
    fail(err, esize,
         "component %s: the word \"%s\" holds a single quote or "
         "a line break, which srun's --multi-prog file cannot "
         "carry; use --launcher mpiexec or change the word",
         comp, w);
    return -1;
  }
  put(t, plain_word(w, 0) ? " %s" : " '%s'", w);
  return 0;
}

static int build_srun(const cpli_workflow *wf, const cpli_launch_opts *o, const char *comp_exe,
                      const char *exec_exe, cpli_launch *l, char *err, size_t esize) {
  if (o->hostfile && !l->rank_host) {
    fail(err, esize,
         "--hostfile is for placement under srun (hosts:, ppn:); "
         "no component asks for any: leave it out, or give srun "
         "its nodes after -- (e.g. -- --nodelist=a,b)");
    return -1;
  }
  text t = {0};
  put(&t, "# srun --multi-prog configuration written by cpl-run for ");
  put_comment(&t, wf->name);
  put(&t, "\n");
  int r = 0, rc = 0;
  for (int c = 0; c < wf->ncomps && !rc; c++) {
    const cpli_component *k = &wf->comps[c];
    char first[16];
    snprintf(first, sizeof first, "%d", r); /* cpl-exec: rank in the component */
    if (k->nprocs == 1) put(&t, "%d env", r);
    else put(&t, "%d-%d env", r, r + k->nprocs - 1);
    r += k->nprocs;
    if (k->workdir) {
      put(&t, " -C");
      rc |= put_srun_word(&t, k->workdir, k->name, err, esize);
    }
    const char *vars[3][2] = {
        {"CPL_COMPONENT", k->name}, {"CPL_WORKFLOW", o->workflow}, {"CPL_FIRST_RANK", first}};
    for (int e = 0; e < 3 + k->nenv && !rc; e++) {
      const char *name = e < 3 ? vars[e][0] : k->env[e - 3].name;
      const char *value = e < 3 ? vars[e][1] : k->env[e - 3].value;
      size_t n = strlen(name) + strlen(value) + 2;
      char *s = malloc(n);
      if (!s) oom();
      snprintf(s, n, "%s=%s", name, value);
      rc |= put_srun_word(&t, s, k->name, err, esize);
      free(s);
    }
    int nw;
    char **w = component_words(k, o->wfdir, comp_exe, exec_exe, &nw);
    /* env takes any word with "=" before the program as a variable. */
    if (!rc && strchr(w[1], '=')) {
      fail(err, esize,
           "component %s: the program %s has \"=\" in its "
           "path, which env (in the multi-prog line) would take "
           "for a variable; use --launcher mpiexec or rename it",
           k->name, w[1]);
      rc = -1;
    }
    for (int a = 0; a < nw && !rc; a++) rc |= put_srun_word(&t, w[a], k->name, err, esize);
    free_words(w, nw);
    put(&t, "\n");
  }
  if (rc) {
    free(t.s);
    return -1;
  }

  add(l, o->program);
  /* MPICH's simple PMI client (Debian's libmpich12, built for hydra)
   * wires up through Slurm's pmi2 plugin; with --mpi=none every rank is a
   * singleton. --mpi=... after -- replaces it. */
  int has_mpi = 0, has_kill = 0, has_quit = 0;
  for (int i = 0; i < o->nextra; i++) {
    has_mpi |=
        !strcmp(o->extra[i], "--mpi") || !strncmp(o->extra[i], "--mpi=", 6); /* not --mpibind */
    has_kill |= !strncmp(o->extra[i], "--kill-on-bad-exit", 18) || !strncmp(o->extra[i], "-K", 2);
    has_quit |= !strcmp(o->extra[i], "--quit-on-interrupt") || !strcmp(o->extra[i], "-q");
  }
  if (!has_mpi) add(l, "--mpi=pmi2");
  /* cpl-exec stops the job by dying of a signal; hydra then kills every
   * process, srun only under this (Slurm's default KillOnBadExit=0 left the
   * others in MPI_Init forever, or waiting until their timeouts). */
  if (!has_kill) add(l, "--kill-on-bad-exit=1");
  /* Ctrl-C stops the job, as under hydra: srun's first SIGINT only
   * printed the step's status, and the job ran on. */
  if (!has_quit) add(l, "--quit-on-interrupt");
  char num[32];
  snprintf(num, sizeof num, "%d", wf->total_procs);
  add(l, "--ntasks");
  add(l, num);
  if (l->rank_host) {
    text h = {0};
    for (int i = 0; i < l->nranks; i++) put(&h, "%s\n", l->rank_host[i]);
    add_file(l, h.s, "hostfile", 0);
    l->env_name = xstrdup("SLURM_HOSTFILE");
    add(l, "--distribution=arbitrary");
  }
  for (int i = 0; i < o->nextra; i++) add(l, o->extra[i]);
  add(l, "--multi-prog");
  add_file(l, t.s, "multi-prog configuration", 1);
  return 0;
}

/* Name each file by the hash of its contents, under dir, and put the
 * names where the command and the environment expect them. */
static void name_files(cpli_launch *l, const char *dir) {
  for (int i = 0; i < l->nfiles; i++) {
    cpli_launch_file *f = &l->files[i];
    uint64_t h = cpli_fnv1a(f->text, strlen(f->text));
    const char *kind = strcmp(f->what, "hostfile") ? "multiprog" : "hosts";
    size_t n = strlen(dir) + 64;
    f->path = malloc(n);
    if (!f->path) oom();
    snprintf(f->path, n, "%s/%s-%016llx.conf", dir, kind, (unsigned long long)h);
    if (f->arg >= 0) {
      free(l->argv[f->arg]);
      l->argv[f->arg] = xstrdup(f->path);
    }
  }
  if (l->env_name) l->env_value = xstrdup(l->files[0].path);
}

/* Is the launcher argument arg the option opt? Hydra takes -opt and
 * --opt, either also as -opt=value; srun takes --long[=value] and
 * -s[value]. */
static int launcher_opt(cpli_launcher l, const char *arg, const char *opt) {
  if (l == CPLI_LAUNCHER_MPIEXEC) {
    if (arg[0] != '-') return 0;
    arg += arg[1] == '-' ? 2 : 1;
    opt += strspn(opt, "-");
    size_t n = strlen(opt);
    return !strncmp(arg, opt, n) && (arg[n] == '\0' || arg[n] == '=');
  }
  size_t n = strlen(opt);
  if (strncmp(arg, opt, n)) return 0;
  return opt[1] != '-' || arg[n] == '\0' || arg[n] == '=';
}

/* With placement (or --hostfile for hydra) cpl-run decides where ranks
 * go; a launcher option after -- that does too would conflict (hydra
 * refuses a second host list) or silently undo it (srun). */
static int placement_conflict(const cpli_launch_opts *o, int placing, char *err, size_t esize) {
  static const char *const hydra[] = {"-f",   "-hostfile", "-machinefile", "-hosts", "-host",
                                      "-ppn", NULL};
  static const char *const srun[] = {
      "-w", "--nodelist", "-m", "--distribution", "--ntasks-per-node", "-F", "--nodefile", NULL};
  /* A rank count: each component's nprocs sets them (hydra then fails
   * with "duplicate setting: n", srun runs a count the multi-prog file
   * does not cover). */
  static const char *const hydra_n[] = {"-n", "-np", NULL}, *const srun_n[] = {"-n", "--ntasks",
                                                                               NULL};
  const char *const *counts = o->launcher == CPLI_LAUNCHER_SRUN ? srun_n : hydra_n;
  for (int i = 0; i < o->nextra; i++)
    for (int k = 0; counts[k]; k++)
      if (launcher_opt(o->launcher, o->extra[i], counts[k])) {
        fail(err, esize,
             "%s after -- would set the number of processes too; the components' nprocs "
             "decide it: leave it out",
             o->extra[i]);
        return -1;
      }
  int hydra_hosts = o->launcher == CPLI_LAUNCHER_MPIEXEC && o->hostfile;
  if (!placing && !hydra_hosts) return 0;
  const char *const *opts = o->launcher == CPLI_LAUNCHER_SRUN ? srun : hydra;
  for (int i = 0; i < o->nextra; i++) {
    for (int k = 0; opts[k]; k++) {
      if (launcher_opt(o->launcher, o->extra[i], opts[k])) {
        fail(err, esize,
             "%s after -- would place ranks too; %s decides "
             "where they run: leave it out",
             o->extra[i], placing ? "the workflow's hosts:/ppn:" : "--hostfile");
        return -1;
      }
    }
  }
  return 0;
}

int cpli_launch_build(const cpli_workflow *wf, const cpli_launch_opts *o, cpli_launch *out,
                      char *err, size_t errsize) {
  *out = (cpli_launch){.progress = o->progress};
  char comp_exe[PATH_MAX + 32], exec_exe[PATH_MAX + 32];
  tool_exe(COMPONENT_EXE, comp_exe, sizeof comp_exe);
  tool_exe(EXEC_EXE, exec_exe, sizeof exec_exe);
  err[0] = '\0';
  out->rank_host = place(wf, o, err, errsize);
  if (!out->rank_host && err[0]) return -1;
  out->nranks = wf->total_procs;
  if (placement_conflict(o, out->rank_host != NULL, err, errsize)) {
    cpli_launch_free(out);
    return -1;
  }
  if (o->launcher == CPLI_LAUNCHER_SRUN) {
    if (build_srun(wf, o, comp_exe, exec_exe, out, err, errsize)) {
      cpli_launch_free(out);
      return -1;
    }
  } else {
    build_mpiexec(wf, o, comp_exe, exec_exe, out);
  }
  name_files(out, o->files_dir);
  return 0;
}

int cpli_launch_write_files(const cpli_launch *l, char *err, size_t esize) {
  for (int i = 0; i < l->nfiles; i++) {
    const cpli_launch_file *f = &l->files[i];
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", f->path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    /* Shared /tmp: the directory must be ours and no one else's to write,
     * or another user could swap the files between writing and launch. */
    struct stat st;
    if ((mkdir(dir, 0700) && errno != EEXIST) || lstat(dir, &st) != 0) {
      fail(err, esize, "cannot create %s: %s", dir, strerror(errno));
      return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022)) {
      fail(err, esize,
           "%s is not a directory of this user that only it can "
           "write; remove it or set TMPDIR",
           dir);
      return -1;
    }
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", f->path, (long)getpid());
    FILE *fp = fopen(tmp, "w");
    size_t n = strlen(f->text);
    if (!fp || fwrite(f->text, 1, n, fp) != n || fclose(fp) != 0 || rename(tmp, f->path) != 0) {
      fail(err, esize, "cannot write %s: %s", f->path, strerror(errno));
      unlink(tmp);
      return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------------ hosts */

/* Hydra starts its proxy on every host but this one with ssh, unless a
 * launcher is chosen after -- or in hydra's own variables, or hydra finds
 * itself in a batch job whose launcher it takes (Slurm's srun, LSF's
 * blaunch, SGE's qrsh, LoadLeveler), where hosts are that system's names. */
static int hydra_ssh(const cpli_launch_opts *o) {
  static const char *const opts[] = {"-launcher",       "-launcher-exec", "-bootstrap",
                                     "-bootstrap-exec", "-rmk",           NULL};
  static const char *const vars[] = {"HYDRA_LAUNCHER",  "HYDRA_LAUNCHER_EXEC",
                                     "HYDRA_BOOTSTRAP", "HYDRA_BOOTSTRAP_EXEC",
                                     "SLURM_JOB_ID",    "SLURM_JOBID",
                                     "LSB_JOBID",       "PE_HOSTFILE",
                                     "LOADL_STEP_ID",   NULL};
  for (int i = 0; i < o->nextra; i++)
    for (int k = 0; opts[k]; k++)
      if (launcher_opt(CPLI_LAUNCHER_MPIEXEC, o->extra[i], opts[k])) return 0;
  for (int k = 0; vars[k]; k++)
    if (getenv(vars[k]) && *getenv(vars[k])) return 0;
  return 1;
}

/* 0 if ssh can find host: the name resolves, or ssh's configuration maps
 * it to one that does (an alias) or reaches it through a proxy; else
 * getaddrinfo's reason. */
static const char *ssh_cannot_find(const char *host) {
  struct addrinfo *ai = NULL;
  int rc = getaddrinfo(host, NULL, NULL, &ai);
  if (rc == 0) {
    freeaddrinfo(ai);
    return NULL;
  }
  const char *why = gai_strerror(rc);
  text cmd = {0};
  put(&cmd, "ssh -G ");
  put_shell_word(&cmd, host);
  put(&cmd, " 2>/dev/null");
  FILE *f = popen(cmd.s, "r");
  free(cmd.s);
  char line[1024], name[1024] = "";
  int proxy = 0;
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!strncmp(line, "hostname ", 9)) snprintf(name, sizeof name, "%s", line + 9);
    if ((!strncmp(line, "proxycommand ", 13) || !strncmp(line, "proxyjump ", 10)) &&
        !strstr(line, " none"))
      proxy = 1;
  }
  if (f) pclose(f);
  if (proxy) return NULL;
  if (name[0] && strcasecmp(name, host) && getaddrinfo(name, NULL, NULL, &ai) == 0) {
    freeaddrinfo(ai);
    return NULL;
  }
  return why;
}

/* Whether hydra starts host's processes itself, without ssh: the host is
 * this one by name, or by an address of one of its interfaces. */
static int host_is_here(const char *host) {
  char me[256] = "";
  gethostname(me, sizeof me - 1);
  size_t n = strcspn(me, ".");
  if (!strcasecmp(host, me) || (strlen(host) == n && !strncasecmp(host, me, n))) return 1;
  struct addrinfo *ai = NULL, hints = {.ai_family = AF_UNSPEC};
  if (getaddrinfo(host, NULL, &hints, &ai) != 0) return 0;
  struct ifaddrs *ifs = NULL;
  int here = 0;
  if (getifaddrs(&ifs) == 0)
    for (const struct addrinfo *a = ai; a && !here; a = a->ai_next)
      for (const struct ifaddrs *i = ifs; i && !here; i = i->ifa_next) {
        const struct sockaddr *s = i->ifa_addr;
        if (!s || s->sa_family != a->ai_family) continue;
        if (s->sa_family == AF_INET)
          here =
              !memcmp(&((const struct sockaddr_in *)s)->sin_addr,
                      &((const struct sockaddr_in *)a->ai_addr)->sin_addr, sizeof(struct in_addr));
        else if (s->sa_family == AF_INET6)
          here = !memcmp(&((const struct sockaddr_in6 *)s)->sin6_addr,
                         &((const struct sockaddr_in6 *)a->ai_addr)->sin6_addr,
                         sizeof(struct in6_addr));
      }
  if (ifs) freeifaddrs(ifs);
  freeaddrinfo(ai);
  return here;
}

/* A remote host to try ssh on: where it was placed, and what ssh said. */
typedef struct login_try {
  const char *host;
  int comp, rank;
  FILE *out;
  char said[256];
} login_try;

/* Log in to each host as hydra does (ssh -x), with no prompt (hydra's ssh
 * could not answer one) and a bounded wait, at most 64 at a time; said is
 * ssh's last line for a host where it failed, else empty. */
static void try_logins(login_try *t, int n) {
  for (int b = 0; b < n; b += 64) {
    int e = b + 64 < n ? b + 64 : n;
    for (int i = b; i < e; i++) {
      text cmd = {0};
      put(&cmd, "ssh -x -o BatchMode=yes -o ConnectTimeout=10 ");
      put_shell_word(&cmd, t[i].host);
      put(&cmd, " true </dev/null 2>&1");
      t[i].out = popen(cmd.s, "r");
      free(cmd.s);
      if (!t[i].out) snprintf(t[i].said, sizeof t[i].said, "cannot run ssh: %s", strerror(errno));
    }
    for (int i = b; i < e; i++) {
      if (!t[i].out) continue;
      char line[256], last[256] = "";
      while (fgets(line, sizeof line, t[i].out))
        if (line[strspn(line, " \t\r\n")]) snprintf(last, sizeof last, "%s", line);
      int st = pclose(t[i].out);
      last[strcspn(last, "\r\n")] = '\0';
      if (st != 0)
        snprintf(t[i].said, sizeof t[i].said, "%s",
                 last[0] ? last : "ssh failed without a message");
    }
  }
}

void cpli_launch_check_hosts(const cpli_launch *l, const cpli_launch_opts *o,
                             const cpli_workflow *wf, int login, cpl_diag *d) {
  if (o->launcher != CPLI_LAUNCHER_MPIEXEC || !hydra_ssh(o)) return;
  char **host = l->rank_host;
  pool p = {0};
  if (!host && o->hostfile) { /* the ranks fill its slots, as hydra does */
    char err[512];
    if (pool_from_hostfile(&p, o->hostfile, err, sizeof err)) {
      cpli_diag_add(d, o->hostfile, 0, 0, "%s", err);
      pool_free(&p);
      return;
    }
    host = calloc((size_t)l->nranks, sizeof *host);
    if (!host) oom();
    for (int r = 0, cursor = 0, used = 0; r < l->nranks; r++, used++) {
      if (used == p.slots[cursor % p.n]) cursor++, used = 0;
      host[r] = p.host[cursor % p.n];
    }
  }
  /* Each host once (the ranks of each found by index: jobs have up to
   * millions of ranks), and no more than a few reports. */
  cpli_index seen = {0};
  int bad = 0, ntry = 0, cap_try = 0;
  login_try *tries = NULL;
  for (int r = 0, c = 0, first = 0; host && r < l->nranks && bad < 10; r++) {
    while (r >= first + wf->comps[c].nprocs) first += wf->comps[c++].nprocs;
    if (r && !strcmp(host[r], host[r - 1])) continue;
    const uint64_t h = cpli_name_hash(host[r]);
    size_t probe = 0;
    int dup = 0;
    for (int k; !dup && (k = cpli_index_next(&seen, h, &probe)) >= 0;)
      dup = !strcmp(host[k], host[r]);
    if (dup) continue;
    if (cpli_index_add(&seen, h, r) < 0) oom();
    const char *why = ssh_cannot_find(host[r]);
    bad += why != NULL;
    if (why)
      cpli_diag_add(d, l->rank_host ? wf->path : o->hostfile,
                    l->rank_host ? wf->comps[c].pos.line : 0,
                    l->rank_host ? wf->comps[c].pos.col : 0,
                    "component \"%s\", rank %d: host \"%s\" does not resolve (%s) and is no "
                    "ssh alias: hydra would wait forever for the processes it cannot start "
                    "there (a launcher given after --, e.g. -launcher-exec, skips this check)",
                    wf->comps[c].name, r - first, host[r], why);
    else if (login && !host_is_here(host[r])) {
      if (ntry == cap_try &&
          !(tries = realloc(tries, sizeof *tries * (size_t)(cap_try = 2 * cap_try + 8))))
        oom();
      tries[ntry++] = (login_try){.host = host[r], .comp = c, .rank = r - first};
    }
  }
  try_logins(tries, ntry);
  for (int i = 0; i < ntry && bad < 10; i++) {
    if (!tries[i].said[0]) continue;
    bad++;
    cpli_diag_add(d, l->rank_host ? wf->path : o->hostfile,
                  l->rank_host ? wf->comps[tries[i].comp].pos.line : 0,
                  l->rank_host ? wf->comps[tries[i].comp].pos.col : 0,
                  "component \"%s\", rank %d: host \"%s\": ssh cannot log in there without a "
                  "prompt (ssh -o BatchMode=yes: %s): hydra would wait forever for the processes "
                  "it cannot start there (a launcher given after --, e.g. -launcher-exec, skips "
                  "this check)",
                  wf->comps[tries[i].comp].name, tries[i].rank, tries[i].host, tries[i].said);
  }
  free(tries);
  cpli_index_free(&seen);
  if (host != l->rank_host) free(host);
  pool_free(&p);
}

/* ------------------------------------------------------------- print */

/* "a, a, b" -> "a x2, b" style summary of one component's hosts. */
static void put_hosts(text *t, char **rank_host, int r0, int n) {
  for (int r = r0; r < r0 + n;) {
    int k = r;
    while (k < r0 + n && !strcmp(rank_host[k], rank_host[r])) k++;
    put(t, "%s%s:%d", r > r0 ? "," : "", rank_host[r], k - r);
    r = k;
  }
}

void cpli_launch_print(const cpli_launch *l, const cpli_workflow *wf, FILE *f) {
  text t = {0};
  if (l->progress) put(&t, "CPL_PROGRESS=1 ");
  if (l->env_name) {
    put(&t, "%s=", l->env_name);
    put_shell_word(&t, l->env_value);
    put(&t, " ");
  }
  for (int i = 0; i < l->argc; i++) {
    if (i) put(&t, " ");
    put_shell_word(&t, l->argv[i]);
  }
  put(&t, "\n");
  for (int i = 0; i < l->nfiles; i++)
    put(&t, "--- %s %s\n%s", l->files[i].what, l->files[i].path, l->files[i].text);
  if (l->nfiles) put(&t, "---\n");
  put(&t, "%-16s %-13s %s\n", "component", "ranks", "hosts");
  int r = 0;
  for (int c = 0; c < wf->ncomps; c++) {
    const cpli_component *k = &wf->comps[c];
    char ranks[32];
    if (k->nprocs == 1) snprintf(ranks, sizeof ranks, "%d", r);
    else snprintf(ranks, sizeof ranks, "%d-%d", r, r + k->nprocs - 1);
    put(&t, "%-16s %-13s ", k->name, ranks);
    if (l->rank_host) put_hosts(&t, l->rank_host, r, k->nprocs);
    else put(&t, "(the launcher's choice)");
    put(&t, "\n");
    r += k->nprocs;
  }
  if (wf->nlinks) put(&t, "%-32s %-9s %s\n", "link", "ranks", "inter-group algorithm");
  for (int i = 0; i < wf->nlinks; i++) {
    const cpli_link *k = &wf->links[i];
    const cpli_component *fc = &wf->comps[k->from_comp];
    const cpli_component *tc = &wf->comps[k->to_comp];
    char ranks[32];
    snprintf(ranks, sizeof ranks, "%d->%d", fc->nprocs, tc->nprocs);
    put(&t, "%-32s %-9s ", k->label, ranks);
    const cpli_port *fp = &fc->ports[k->from_port];
    size_t bytes = cpli_port_bytes(fp);
    char algs[CPLI_ALGS_LEN] = ""; /* what the run's allgathers will run */
    int rc = CPL_OK;
    if (k->inter == CPL_INTER_AUTO && bytes)
      rc = cpli_port_algs_add(fc->nprocs, tc->nprocs, fp, algs);
    /* Say what the progress line will: steps that skip the allgather. */
    const char *bypass = cpli_link_bypass(k);
    if (k->delivery == CPLI_DELIVERY_SELECT) {
      put(&t, "%s (delivery select: no allgather)\n", bypass);
      continue;
    }
    if (bypass) put(&t, "%s (policy latest; steps left at close: ", bypass);
    char said[256]; /* the environment overrides the file, as in the run */
    if (k->inter != CPL_INTER_AUTO && cpli_inter_forecast(k->inter, said, sizeof said))
      put(&t, "%s", said);
    else if (k->inter != CPL_INTER_AUTO)
      put(&t, "%s (set in the file)", cpl_inter_algorithm_name(k->inter));
    else if (bytes == 0) put(&t, "auto (sizes not declared)");
    else if (rc == CPL_OK) put(&t, "auto -> %s for %zu bytes per step", algs, bytes);
    else put(&t, "auto (model: %s)", cpl_last_error());
    const char *rows = cpli_link_reads_rows(wf, k);
    if (rows) put(&t, "; or select, where cheaper (the %s's ranks read their rows)", rows);
    put(&t, bypass ? ")\n" : "\n");
  }
  fputs(t.s, f);
  free(t.s);
}

void cpli_launch_exec(const cpli_launch *l) {
  if (l->progress && setenv("CPL_PROGRESS", "1", 1) != 0) return;
  if (l->env_name && setenv(l->env_name, l->env_value, 1) != 0) return;
  fflush(NULL);
  execvp(l->argv[0], l->argv);
}

void cpli_launch_free(cpli_launch *l) {
  for (int i = 0; i < l->argc; i++) free(l->argv[i]);
  free(l->argv);
  for (int i = 0; i < l->nfiles; i++) {
    free(l->files[i].path);
    free(l->files[i].text);
  }
  for (int i = 0; l->rank_host && i < l->nranks; i++) free(l->rank_host[i]);
  free(l->rank_host);
  free(l->env_name);
  free(l->env_value);
  *l = (cpli_launch){0};
}
