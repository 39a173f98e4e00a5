/* Checks across elements of a parsed workflow: unique names, link
 * direction and endpoints, job size. Per-key checks live in schema.c. */
#include <stdio.h>
#include <string.h>

#include "workflow/diag.h"
#include "workflow/model.h"

static void dup_names(const char *file, cpl_diag *d, const char *what, const char *owner, int n,
                      const char *(*name_of)(void *, int), cpli_pos (*pos_of)(void *, int),
                      void *arg) {
  for (int i = 0; i < n; i++) {
    const char *a = name_of(arg, i);
    if (!a) continue;
    for (int j = 0; j < i; j++) {
      const char *b = name_of(arg, j);
      if (b && strcmp(a, b) == 0) {
        cpli_pos pi = pos_of(arg, i), pj = pos_of(arg, j);
        cpli_diag_add(d, file, pi.line, pi.col, "duplicate %s name \"%s\"%s%s (first at %d:%d)",
                      what, a, owner ? " in " : "", owner ? owner : "", pj.line, pj.col);
        break;
      }
    }
  }
}

static const char *comp_name(void *a, int i) { return ((cpli_workflow *)a)->comps[i].name; }
static cpli_pos comp_pos(void *a, int i) { return ((cpli_workflow *)a)->comps[i].pos; }
static const char *port_name(void *a, int i) { return ((cpli_component *)a)->ports[i].name; }
static cpli_pos port_pos(void *a, int i) { return ((cpli_component *)a)->ports[i].pos; }
static const char *ds_name(void *a, int i) { return ((cpli_port *)a)->datasets[i].name; }
static cpli_pos ds_pos(void *a, int i) { return ((cpli_port *)a)->datasets[i].pos; }

static void check_links(cpli_workflow *wf, const char *file, cpl_diag *d) {
  for (int i = 0; i < wf->nlinks; i++) {
    cpli_link *l = &wf->links[i];
    if (l->from_comp < 0 || l->to_comp < 0) continue; /* already reported */
    const cpli_component *fc = &wf->comps[l->from_comp];
    const cpli_component *tc = &wf->comps[l->to_comp];
    const cpli_port *fp = &fc->ports[l->from_port];
    const cpli_port *tp = &tc->ports[l->to_port];
    int line = l->pos.line, col = l->pos.col;
    if (l->from_comp == l->to_comp && l->from_port == l->to_port) {
      cpli_diag_add(d, file, line, col, "link from port %s.%s to itself", fc->name, fp->name);
      continue;
    }
    if (l->from_comp == l->to_comp) {
      cpli_diag_add(d, file, line, col,
                    "link %s joins component \"%s\" to itself: a link joins "
                    "two different components",
                    l->label, fc->name);
      continue;
    }
    if (!fp->output)
      cpli_diag_add(d, file, line, col,
                    "link %s: from %s.%s is an input port (from: must name "
                    "an output)",
                    l->label, fc->name, fp->name);
    if (tp->output)
      cpli_diag_add(d, file, line, col,
                    "link %s: to %s.%s is an output port (to: must name an "
                    "input)",
                    l->label, tc->name, tp->name);
    for (int j = 0; j < i; j++) {
      const cpli_link *o = &wf->links[j];
      if (o->from_comp == l->from_comp && o->from_port == l->from_port &&
          o->to_comp == l->to_comp && o->to_port == l->to_port) {
        cpli_diag_add(d, file, line, col, "duplicate link %s (first at %d:%d)", l->label,
                      o->pos.line, o->pos.col);
        break;
      }
    }
  }
}

void cpli_wf_check(cpli_workflow *wf, const char *file, cpl_diag *d) {
  dup_names(file, d, "component", NULL, wf->ncomps, comp_name, comp_pos, wf);
  long long total = 0;
  for (int i = 0; i < wf->ncomps; i++) {
    cpli_component *c = &wf->comps[i];
    char owner[CPLI_WF_MAX_NAME + 16];
    snprintf(owner, sizeof owner, "component \"%s\"", c->name ? c->name : "");
    dup_names(file, d, "port", owner, c->nports, port_name, port_pos, c);
    for (int p = 0; p < c->nports; p++) {
      snprintf(owner, sizeof owner, "port \"%s\"", c->ports[p].name ? c->ports[p].name : "");
      dup_names(file, d, "dataset", owner, c->ports[p].ndatasets, ds_name, ds_pos, &c->ports[p]);
    }
    /* Report where the sum crosses the limit, once. */
    if (total <= CPLI_WF_MAX_TOTAL && total + c->nprocs > CPLI_WF_MAX_TOTAL)
      cpli_diag_add(d, file, c->nprocs_pos.line, c->nprocs_pos.col,
                    "the components up to here need %lld processes; a "
                    "workflow may have at most %d",
                    total + c->nprocs, CPLI_WF_MAX_TOTAL);
    total += c->nprocs;
  }
  if (total <= CPLI_WF_MAX_TOTAL) wf->total_procs = (int)total;
  check_links(wf, file, d);
}
