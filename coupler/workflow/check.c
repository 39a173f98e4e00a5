/* Checks across elements of a parsed workflow: unique names, link
 * direction and endpoints, job size. Per-key checks live in schema.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/path.h"
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
    /* A stage's output ports serve: each consumer asks for the step it
     * wants and gets that one alone, so the link has no queue and no
     * policy to apply. Settings that would be ignored are errors, not
     * silently dropped. */
    if (fc->kind == CPL_KIND_STAGE && fp->output && l->policy_pos.line)
      cpli_diag_add(d, file, l->policy_pos.line, l->policy_pos.col,
                    "link %s: policy has no effect on a link from stage \"%s\": the stage "
                    "serves each consumer the step it asks for (next, latest or a step "
                    "number); remove policy (the stage's keep and when_full decide what it "
                    "holds)",
                    l->label, fc->name);
    if (fc->kind == CPL_KIND_STAGE && fp->output && l->depth_pos.line)
      cpli_diag_add(d, file, l->depth_pos.line, l->depth_pos.col,
                    "link %s: depth has no effect on a link from stage \"%s\": the stage "
                    "sends a step only when the consumer asks, so the link has no queue; "
                    "remove depth (the stage's keep sets how many steps it holds)",
                    l->label, fc->name);
    /* delivery: select moves every step point to point (redist.c): the
     * inter-group allgather, the one thing inter chooses, never runs
     * (intra still serves the link's small collectives inside a group). */
    if (l->delivery == CPLI_DELIVERY_SELECT && l->inter_pos.line)
      cpli_diag_add(d, file, l->inter_pos.line, l->inter_pos.col,
                    "link %s: inter has no effect with delivery: select (each consumer rank "
                    "receives its boxes point to point, no inter-group allgather runs); remove "
                    "inter, or use delivery: auto",
                    l->label);
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

/* A stage takes steps from exactly one link and serves at least one, a
 * source replays to at least one: the shapes cpl-component refuses
 * (adapters/stage.c, hdf5_source.c), found before a job is started. */
static void check_builtins(const cpli_workflow *wf, const char *file, cpl_diag *d) {
  for (int c = 0; c < wf->ncomps; c++) {
    const cpli_component *k = &wf->comps[c];
    if (k->kind == CPL_KIND_SOURCE) {
      int nout = 0;
      for (int i = 0; i < wf->nlinks; i++) nout += wf->links[i].from_comp == c;
      if (nout == 0)
        cpli_diag_add(d, file, k->pos.line, k->pos.col,
                      "source \"%s\" has no linked output port: nobody to replay the file to",
                      k->name);
    }
    if (k->kind != CPL_KIND_STAGE) continue;
    int nin = 0, nout = 0;
    char list[512] = "";
    size_t o = 0;
    for (int i = 0; i < wf->nlinks; i++) {
      const cpli_link *l = &wf->links[i];
      if (l->from_comp == c) nout++;
      if (l->to_comp != c) continue;
      nin++;
      if (o < sizeof list)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", nin > 1 ? ", " : "", l->label);
    }
    if (nin != 1)
      cpli_diag_add(d, file, k->pos.line, k->pos.col,
                    "stage \"%s\" needs exactly one input link (one input port, one "
                    "producer), but has %d%s%s%s",
                    k->name, nin, nin ? " (" : "", list, nin ? ")" : "");
    if (nout == 0)
      cpli_diag_add(d, file, k->pos.line, k->pos.col,
                    "stage \"%s\" has no linked output port: nothing to serve", k->name);
  }
}

/* The HDF5 files of the built-ins: a sink's or a drain's is created
 * (truncated) when the component starts, so no other built-in may use it:
 * a source would lose its input, two writers would tear the file. Paths
 * are compared as the system resolves them from each workdir (else from
 * where cpl-validate or cpl-run runs), cpli_path_resolve: symbolic links
 * followed and "a/x/../b", "a/./b", "a//b", a ROMIO prefix ("ufs:/a")
 * seen through, in the existing part of the name, the rest (a sink's file
 * not made yet) lexically; two existing names are also one file if they
 * are hard links to it. */
typedef struct h5use {
  const cpli_component *c;
  const char *path; /* as written */
  char *full;       /* resolved, workdir applied */
  cpli_pos pos;
  int writes;
} h5use;

static int same_file(const char *a, const char *b) {
  struct stat x, y;
  if (strcmp(a, b) == 0) return 1;
  return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

static const char *use_str(const h5use *x) {
  return x->c->kind == CPL_KIND_STAGE  ? "the drain of stage"
         : x->c->kind == CPL_KIND_SINK ? "sink"
                                       : "source";
}

static void check_files(const cpli_workflow *wf, const char *file, cpl_diag *d) {
  h5use *u = calloc((size_t)(2 * wf->ncomps + 1), sizeof *u);
  int n = 0;
  for (int c = 0; u && c < wf->ncomps; c++) {
    const cpli_component *k = &wf->comps[c];
    if (k->file && (k->kind == CPL_KIND_SINK || k->kind == CPL_KIND_SOURCE))
      u[n++] = (h5use){k, k->file, NULL, k->file_pos, k->kind == CPL_KIND_SINK};
    if (k->drain && k->kind == CPL_KIND_STAGE) u[n++] = (h5use){k, k->drain, NULL, k->drain_pos, 1};
  }
  for (int i = 0; i < n; i++) u[i].full = cpli_path_resolve(u[i].c->workdir, u[i].path);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i && u[i].full; j++) {
      if (!u[j].full || (!u[i].writes && !u[j].writes) || !same_file(u[i].full, u[j].full))
        continue;
      const h5use *w = u[i].writes ? &u[i] : &u[j]; /* one that truncates it */
      const int same = strcmp(u[i].full, u[j].full) == 0;
      cpli_diag_add(d, file, u[i].pos.line, u[i].pos.col,
                    "%s \"%s\" uses the HDF5 file \"%s\" that %s \"%s\" (%d:%d) uses too "
                    "(as \"%s\"; %s%s%s%s%s): %s \"%s\" creates it anew when it starts, so %s; "
                    "give each its own file",
                    use_str(&u[i]), u[i].c->name, u[i].path, use_str(&u[j]), u[j].c->name,
                    u[j].pos.line, u[j].pos.col, u[j].path, same ? "both are " : "", u[i].full,
                    same ? "" : " and ", same ? "" : u[j].full,
                    same ? "" : " are hard links to one file", use_str(w), w->c->name,
                    u[i].writes && u[j].writes ? "both would write it at once"
                                               : "the source's input would be lost");
      break;
    }
  for (int i = 0; i < n; i++) free(u[i].full);
  free(u);
}

/* ------------------------------------------- datasets across a link */

static int cmp_by_input(const void *a, const void *b) {
  const cpli_link *x = *(const cpli_link *const *)a, *y = *(const cpli_link *const *)b;
  const int k[4][2] = {{x->to_comp, y->to_comp},
                       {x->to_port, y->to_port},
                       {x->from_comp, y->from_comp},
                       {x->from_port, y->from_port}};
  for (int i = 0; i < 4; i++)
    if (k[i][0] != k[i][1]) return k[i][0] < k[i][1] ? -1 : 1;
  return (x > y) - (x < y); /* file order */
}

static int cmp_ds_name(const void *a, const void *b) {
  return strcmp((*(const cpli_dataset *const *)a)->name, (*(const cpli_dataset *const *)b)->name);
}

static const char *dims_str(const cpli_dataset *ds, char *buf, size_t size) {
  size_t o = (size_t)snprintf(buf, size, "[");
  for (int k = 0; k < ds->ndims && o < size; k++)
    o += (size_t)snprintf(buf + o, size - o, "%s%lld", k ? ", " : "", ds->dims[k]);
  if (o < size) snprintf(buf + o, size - o, "]");
  return buf;
}

/* A link the checks above found sound, between ports with names. */
static int sound(const cpli_workflow *wf, const cpli_link *l) {
  if (l->from_comp < 0 || l->to_comp < 0 || l->from_comp == l->to_comp) return 0;
  const cpli_port *fp = &wf->comps[l->from_comp].ports[l->from_port];
  const cpli_port *tp = &wf->comps[l->to_comp].ports[l->to_port];
  return fp->output && !tp->output && fp->name && tp->name;
}

/* One input port and the links into it (links[0..n), duplicates adjacent).
 * The run checks each step against the consumer's declarations (data/desc.c
 * cpli_desc_check_port): a dataset the producer declares must be declared
 * here, with the same dims and a type it converts to; and a dataset
 * declared here that no linked producer declares never arrives. */
static void check_input(const cpli_workflow *wf, const char *file, cpl_diag *d,
                        const cpli_link *const *links, int n) {
  const cpli_component *tc = &wf->comps[links[0]->to_comp];
  const cpli_port *tp = &tc->ports[links[0]->to_port];
  if (tp->ndatasets == 0) return; /* nothing declared: nothing to compare */
  const cpli_dataset **idx = malloc((size_t)tp->ndatasets * sizeof *idx);
  char *sent = calloc((size_t)tp->ndatasets, 1);
  if (!idx || !sent) {
    free(idx);
    free(sent);
    return; /* a check we cannot afford; the run still makes it */
  }
  int m = 0, all_declared = 1;
  for (int i = 0; i < tp->ndatasets; i++)
    if (tp->datasets[i].name) idx[m++] = &tp->datasets[i];
  qsort(idx, (size_t)m, sizeof *idx, cmp_ds_name); /* 1024 names x 4096 links */
  char b1[160], b2[160];
  for (int i = 0; i < n; i++) {
    const cpli_link *l = links[i];
    if (i && links[i - 1]->from_comp == l->from_comp && links[i - 1]->from_port == l->from_port)
      continue; /* the same link twice: reported above */
    const cpli_component *fc = &wf->comps[l->from_comp];
    const cpli_port *fp = &fc->ports[l->from_port];
    if (fp->ndatasets == 0) {
      all_declared = 0;
      continue;
    }
    for (int j = 0; j < fp->ndatasets; j++) {
      const cpli_dataset *pd = &fp->datasets[j], *key = pd;
      if (!pd->name) continue;
      const cpli_dataset **hit = bsearch(&key, idx, (size_t)m, sizeof *idx, cmp_ds_name);
      if (!hit) {
        cpli_diag_add(d, file, tp->pos.line, tp->pos.col,
                      "link %s: dataset \"%s\", declared by %s.%s (line %d), is not among the "
                      "datasets %s.%s declares: the run would refuse it",
                      l->label, pd->name, fc->name, fp->name, pd->pos.line, tc->name, tp->name);
        continue;
      }
      const cpli_dataset *td = *hit;
      sent[td - tp->datasets] = 1;
      int same = 1; /* dims declared on one end only: the run checks them */
      if (pd->ndims >= 0 && td->ndims >= 0) {
        same = pd->ndims == td->ndims;
        for (int k = 0; same && k < pd->ndims; k++) same = pd->dims[k] == td->dims[k];
      }
      if (!same)
        cpli_diag_add(d, file, td->pos.line, td->pos.col,
                      "link %s: dataset \"%s\" has dims %s here but %s at %s.%s (line %d)",
                      l->label, td->name, dims_str(td, b1, sizeof b1), dims_str(pd, b2, sizeof b2),
                      fc->name, fp->name, pd->pos.line);
      if (pd->type && td->type && !cpli_dtype_convertible(pd->type, td->type))
        cpli_diag_add(d, file, td->pos.line, td->pos.col,
                      "link %s: dataset \"%s\" is %s here but %s at %s.%s (line %d), which "
                      "cannot be converted",
                      l->label, td->name, td->type, pd->type, fc->name, fp->name, pd->pos.line);
    }
  }
  for (int i = 0; all_declared && i < tp->ndatasets; i++)
    if (!sent[i] && tp->datasets[i].name)
      cpli_diag_add(d, file, tp->datasets[i].pos.line, tp->datasets[i].pos.col,
                    "dataset \"%s\" of %s.%s is declared by no output port linked to it: it "
                    "would never arrive",
                    tp->datasets[i].name, tc->name, tp->name);
  free(idx);
  free(sent);
}

/* Group the sound links by input port (sorted: O(L log L)). */
static void check_datasets(const cpli_workflow *wf, const char *file, cpl_diag *d) {
  const cpli_link **v = malloc((size_t)(wf->nlinks ? wf->nlinks : 1) * sizeof *v);
  if (!v) return;
  int n = 0;
  for (int i = 0; i < wf->nlinks; i++)
    if (sound(wf, &wf->links[i])) v[n++] = &wf->links[i];
  qsort(v, (size_t)n, sizeof *v, cmp_by_input);
  for (int i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && v[j]->to_comp == v[i]->to_comp && v[j]->to_port == v[i]->to_port;) j++;
    check_input(wf, file, d, v + i, j - i);
  }
  free(v);
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
  check_builtins(wf, file, d);
  check_files(wf, file, d);
  check_datasets(wf, file, d);
}
