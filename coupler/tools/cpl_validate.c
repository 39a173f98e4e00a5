/* cpl-validate FILE...: check workflow files without starting MPI.
 * Exit 0 and a summary when valid; 1 and every error as file:line:col:
 * message when not; 2 on a usage error. */
#define _XOPEN_SOURCE 700 /* realpath */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/select.h"
#include "coupler.h"
#include "data/desc.h"
#include "tools/cli.h"
#include "workflow/diag.h"
#include "workflow/model.h"

static void usage(FILE *f) {
  fprintf(f, "usage: cpl-validate [--quiet] FILE...\n"
             "Check Coupler workflow files without starting MPI: the schema, that\n"
             "every program exists and is executable, and that cpl-run's launcher\n"
             "($CPL_LAUNCHER, else mpiexec) can pass every command word.\n"
             "  -q, --quiet    print errors only, no summary\n"
             "  -h, --help     show this help\n"
             "  -V, --version  show the version\n"
             "  --             end of options (files after it may start with -)\n"
             "Exit status: 0 valid, 1 invalid, 2 usage error.\n");
}

static void print_link(const cpli_workflow *wf, const cpli_link *l) {
  const cpli_component *fc = &wf->comps[l->from_comp];
  const cpli_component *tc = &wf->comps[l->to_comp];
  const cpli_port *fp = &fc->ports[l->from_port];
  char ag[128], inter[256]; /* the allgather's algorithms; what the steps take */
  /* The environment overrides the file's algorithms, as in the run. */
  cpl_coll_options env;
  cpl_coll_options_init(&env);
  env.intra = l->intra;
  cpl_intra_algorithm ra = l->intra;
  cpli_tuning_refresh();
  if (l->inter != CPL_INTER_AUTO) {
    if (!cpli_inter_forecast(l->inter, ag, sizeof ag))
      snprintf(ag, sizeof ag, "%s", cpl_inter_algorithm_name(l->inter));
  } else {
    /* Ask the same cost model and rule the run will use (environment
     * included): the small datasets in one allgather, the others one
     * each. */
    size_t bytes = cpli_port_bytes(fp);
    int known = bytes > 0;
    char algs[CPLI_ALGS_LEN] = "";
    int rc = known ? cpli_port_algs_add(fc->nprocs, tc->nprocs, fp, algs) : CPL_OK;
    if (!known) bytes = 1 << 20;
    if (!known) rc = cpli_inter_dataset_algs_add(fc->nprocs, tc->nprocs, bytes, NULL, algs);
    if (rc == CPL_OK)
      snprintf(ag, sizeof ag, "auto -> %s (%s %zu bytes per step)", algs, known ? "for" : "if",
               bytes);
    else snprintf(ag, sizeof ag, "auto (model: %.100s)", cpl_last_error());
  }
  const char *bypass = cpli_link_bypass(l);
  if (l->delivery == CPLI_DELIVERY_SELECT)
    snprintf(inter, sizeof inter, "%s (delivery select: no allgather)", bypass);
  else if (bypass)
    snprintf(inter, sizeof inter, "%s (policy latest; steps left at close: %s)", bypass, ag);
  else if (cpli_link_reads_rows(wf, l))
    snprintf(inter, sizeof inter, "%s; or select, where cheaper (the %s's ranks read their rows)",
             ag, cpli_link_reads_rows(wf, l));
  else snprintf(inter, sizeof inter, "%s", ag);
  /* A stage answers each request itself: no queue, no policy (it printed
   * the defaults, "policy all, depth 2", which it does not apply). */
  char flow[64];
  if (fc->kind == CPL_KIND_STAGE) snprintf(flow, sizeof flow, "served on request (stage)");
  else if (l->policy == CPL_POLICY_EVERY)
    snprintf(flow, sizeof flow, "policy every:%d, depth %d", l->every, l->depth);
  else snprintf(flow, sizeof flow, "policy %s, depth %d", cpli_policy_name(l->policy), l->depth);
  char intra[64];
  if (cpli_intra_requested(&env, &ra) == CPL_OK && ra != l->intra)
    snprintf(intra, sizeof intra, "%s (CPL_INTRA_ALGORITHM)", cpl_intra_algorithm_name(ra));
  else snprintf(intra, sizeof intra, "%s", cpl_intra_algorithm_name(l->intra));
  printf("  link %-24s %d -> %d ranks, inter %s, intra %s, %s, timeout %gs\n", l->label, fc->nprocs,
         tc->nprocs, inter, intra, flow, l->timeout);
}

static void summary(const cpli_workflow *wf) {
  printf("%s: workflow \"%s\" is valid: %d components, %d ranks, %d links\n", wf->path, wf->name,
         wf->ncomps, wf->total_procs, wf->nlinks);
  for (int i = 0; i < wf->ncomps; i++) {
    const cpli_component *c = &wf->comps[i];
    printf("  component %-16s %6d ranks  ", c->name, c->nprocs);
    if (c->kind == CPL_KIND_COMMAND) {
      for (int k = 0; k < c->argc; k++) {
        /* Quote words a reader would otherwise split. */
        int plain = c->argv[k][0] && !strpbrk(c->argv[k], " \t\n'\"\\");
        printf(plain ? "%s%s" : "%s'%s'", k ? " " : "", c->argv[k]);
      }
    } else {
      printf("built-in %s%s%s", cpli_kind_name(c->kind), c->file ? " " : "",
             c->file ? c->file : "");
      if (c->kind == CPL_KIND_STAGE)
        printf(", keep %d, when_full %s%s%s", c->keep, cpli_when_full_name(c->when_full),
               c->drain ? ", drain " : "", c->drain ? c->drain : "");
    }
    printf("\n");
  }
  for (int i = 0; i < wf->nlinks; i++) print_link(wf, &wf->links[i]);
}

/* Programs that do not exist or cannot be executed, and words the launcher
 * cannot pass, are errors: cpl-run refuses to start them (either would
 * hang the MPI job). */
static int check_programs(cpl_workflow *wf) {
  char dir[PATH_MAX];
  if (!realpath(wf->path, dir)) snprintf(dir, sizeof dir, "%s", wf->path);
  char *slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
  else snprintf(dir, sizeof dir, ".");
  cpl_diag *d = NULL;
  if (cpl_diag_create(&d) != CPL_OK) return CPL_ERR_NOMEM;
  cpli_wf_check_programs(wf, dir, d);
  const char *launcher = getenv("CPL_LAUNCHER"); /* cpl-run's default too */
  if (!launcher || !*launcher || !strcmp(launcher, "mpiexec")) cpli_wf_check_hydra_words(wf, d);
  cpli_diag_sort(d, 0);
  int n = cpl_diag_count(d);
  for (int k = 0; k < n; k++) fprintf(stderr, "%s\n", cpl_diag_message(d, k));
  if (n) fprintf(stderr, "%s: %d error%s\n", wf->path, n, n == 1 ? "" : "s");
  cpl_diag_destroy(d);
  return n ? CPL_ERR_CONFIG : CPL_OK;
}

int main(int argc, char **argv) {
  int quiet = 0, nfiles = 0, bad = 0;
  int info = cpli_cli_info("cpl-validate", argc, argv, usage);
  if (info >= 0) return info;
  for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      quiet = 1;
      continue;
    }
    if (a[0] == '-' && a[1])
      return cpli_cli_usage_error("cpl-validate", usage, "unknown option %s", a);
  }
  int files_only = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!files_only && !strcmp(a, "--")) {
      files_only = 1;
      continue;
    }
    if (!files_only && a[0] == '-' && a[1]) continue;
    nfiles++;
    cpl_diag *d = NULL;
    if (cpl_diag_create(&d) != CPL_OK) {
      fprintf(stderr, "cpl-validate: out of memory\n");
      return 2;
    }
    cpl_workflow *wf = NULL;
    int rc = cpl_workflow_load(a, d, &wf);
    if (rc == CPL_OK) rc = check_programs(wf);
    if (rc == CPL_OK) {
      if (!quiet) summary(wf);
    } else if (wf) {
      bad++; /* loaded, but a program is missing: reported above */
    } else {
      bad++;
      int n = cpl_diag_count(d), total = cpl_diag_total(d);
      for (int k = 0; k < n; k++) fprintf(stderr, "%s\n", cpl_diag_message(d, k));
      if (n == 0) fprintf(stderr, "%s\n", cpl_last_error());
      if (total > n) fprintf(stderr, "%s: %d more errors not shown\n", a, total - n);
      fprintf(stderr, "%s: %d error%s\n", a, total ? total : 1, total == 1 ? "" : "s");
    }
    cpl_workflow_destroy(wf);
    cpl_diag_destroy(d);
  }
  if (nfiles == 0) return cpli_cli_usage_error("cpl-validate", usage, "no workflow file given");
  return bad ? 1 : 0;
}
