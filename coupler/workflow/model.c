/* Loading entry points, the public accessors and freeing of the model. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/index.h"
#include "workflow/model.h"
#include "workflow/ytree.h"

int cpli_wf_port_index(const cpli_component *c, const char *name) {
  for (int i = 0; i < c->nports; i++)
    if (c->ports[i].name && strcmp(c->ports[i].name, name) == 0) return i;
  return -1;
}

static size_t dtype_size(const char *t) {
  static const struct {
    const char *name;
    size_t size;
  } tab[] = {{"int8", 1},    {"int16", 2},   {"int32", 4},  {"int64", 8},
             {"uint8", 1},   {"uint16", 2},  {"uint32", 4}, {"uint64", 8},
             {"float32", 4}, {"float64", 8}, {"char", 1},   {"byte", 1}};
  for (size_t i = 0; i < sizeof tab / sizeof *tab; i++)
    if (strcmp(t, tab[i].name) == 0) return tab[i].size;
  return 0;
}

/* A dataset's bytes as declared; -1 when unknown (no type or dims, or
 * beyond any real size). */
static double declared_bytes(const cpli_dataset *d) {
  if (!d->type || d->ndims < 0) return -1;
  double n = (double)dtype_size(d->type);
  for (int k = 0; k < d->ndims; k++) n *= (double)d->dims[k];
  return n > 1e18 ? -1 : n;
}

size_t cpli_dataset_bytes(const cpli_dataset *d) {
  const double n = declared_bytes(d);
  return n < 0 ? 0 : (size_t)n;
}

size_t cpli_port_bytes(const cpli_port *p) {
  size_t total = 0;
  for (int i = 0; i < p->ndatasets; i++) {
    const double n = declared_bytes(&p->datasets[i]);
    if (n < 0) return 0; /* one unknown dataset: the step's size is unknown */
    if ((size_t)n > SIZE_MAX - total) return SIZE_MAX; /* saturate, never wrap */
    total += (size_t)n;
  }
  return total;
}

const char *cpli_link_bypass(const cpli_link *l) {
  if (l->delivery == CPLI_DELIVERY_SELECT) return "select";
  if (l->policy == CPL_POLICY_LATEST) return "scatter";
  return NULL;
}

const char *cpli_link_reads_rows(const cpli_workflow *wf, const cpli_link *l) {
  const cpli_component *c = &wf->comps[l->to_comp];
  if (l->delivery != CPLI_DELIVERY_AUTO || cpli_link_bypass(l)) return NULL;
  if (c->kind == CPL_KIND_STAGE) return "stage";
  if (c->kind == CPL_KIND_SINK && c->nprocs > 1) return "sink";
  return NULL;
}

static void free_component(cpli_component *c) {
  free(c->name);
  for (int i = 0; i < c->argc; i++) free(c->argv[i]);
  free(c->argv);
  free(c->argpos);
  free(c->file);
  free(c->workdir);
  free(c->drain);
  for (int i = 0; i < c->nenv; i++) {
    free(c->env[i].name);
    free(c->env[i].value);
  }
  free(c->env);
  for (int i = 0; i < c->nports; i++) {
    cpli_port *p = &c->ports[i];
    for (int j = 0; j < p->ndatasets; j++) {
      free(p->datasets[j].name);
      free(p->datasets[j].type);
      free(p->datasets[j].dims);
    }
    free(p->datasets);
    free(p->name);
  }
  free(c->ports);
  for (int i = 0; c->hosts && i < c->nhosts; i++) free(c->hosts[i]);
  free(c->hosts);
}

void cpli_wf_free(cpli_workflow *wf) {
  if (!wf) return;
  for (int i = 0; i < wf->ncomps; i++) free_component(&wf->comps[i]);
  free(wf->comps);
  for (int i = 0; i < wf->nlinks; i++) free(wf->links[i].label);
  free(wf->links);
  free(wf->name);
  free(wf->trace);
  free(wf->path);
  free(wf);
}

void cpl_workflow_destroy(cpl_workflow *wf) { cpli_wf_free(wf); }

/* Sets cpl_last_error() to this load's first message and its error count:
 * a caller's list may hold earlier loads' errors before index `first`
 * (`before` of them counted), which are not this load's. */
static int summarize(int status, const cpl_diag *d, int first, int before, const char *name) {
  int total = cpl_diag_total(d) - before;
  if (total == 0) return cpli_fail(status, "%s: %s", name, cpl_strerror(status));
  if (first >= cpl_diag_count(d)) /* the list was full: counted, not stored */
    return cpli_fail(status, "%s: %s (%d errors)", name, cpl_strerror(status), total);
  if (total == 1) return cpli_fail(status, "%s", cpl_diag_message(d, first));
  return cpli_fail(status, "%s (and %d more errors)", cpl_diag_message(d, first), total - 1);
}

int cpl_workflow_load_buffer(const char *data, size_t len, const char *name, cpl_diag *diag,
                             cpl_workflow **out) {
  if (!out) return cpli_fail(CPL_ERR_ARG, "cpl_workflow_load_buffer: out is NULL");
  *out = NULL;
  if (!data && len) return cpli_fail(CPL_ERR_ARG, "cpl_workflow_load_buffer: data is NULL");
  if (!name) name = CPLI_WF_NO_FILE;
  /* Without a caller's list we still need one to know whether we failed. */
  cpl_diag local = {0};
  cpl_diag *d = diag ? diag : &local;
  int before = cpl_diag_total(d), first = cpl_diag_count(d);
  cpli_ynode *root = NULL;
  int rc = cpli_ytree_parse(data ? data : "", len, name, d, &root);
  cpli_workflow *wf = NULL;
  if (rc == CPL_OK) rc = cpli_wf_from_tree(root, name, d, &wf);
  cpli_ytree_free(root);
  /* Duplicate keys or anchors are reported by the tree and leave it usable:
   * they still fail the load. */
  if (rc == CPL_OK && cpl_diag_total(d) > before) {
    cpli_wf_free(wf);
    wf = NULL;
    rc = CPL_ERR_CONFIG;
  }
  if (rc == CPL_OK && !(wf->path = malloc(strlen(name) + 1))) {
    cpli_wf_free(wf);
    wf = NULL;
    rc = CPL_ERR_NOMEM;
  }
  if (rc == CPL_OK) {
    strcpy(wf->path, name);
    wf->hash = cpli_fnv1a(data, len);
    *out = wf;
    cpli_diag_reset(&local);
    free(local.v);
    return CPL_OK;
  }
  cpli_diag_sort(d, first);
  rc = summarize(rc, d, first, before, name);
  cpli_diag_reset(&local);
  free(local.v);
  return rc;
}

int cpl_workflow_load(const char *path, cpl_diag *diag, cpl_workflow **out) {
  if (!out) return cpli_fail(CPL_ERR_ARG, "cpl_workflow_load: out is NULL");
  *out = NULL;
  if (!path) return cpli_fail(CPL_ERR_ARG, "cpl_workflow_load: path is NULL");
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (diag) cpli_diag_add(diag, path, 0, 0, "cannot open: %s", strerror(errno));
    return cpli_fail(CPL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  /* Read at most one byte past the limit: enough to know it is too big
   * without reading a huge file (or a FIFO) to its end. */
  size_t cap = CPLI_Y_MAX_BYTES + 1;
  char *buf = malloc(cap);
  if (!buf) {
    fclose(f);
    return cpli_fail(CPL_ERR_NOMEM, "%s: out of memory", path);
  }
  errno = 0;
  size_t len = fread(buf, 1, cap, f);
  int ioerr = ferror(f) ? (errno ? errno : EIO) : 0; /* a directory: EISDIR */
  fclose(f);
  if (ioerr) {
    free(buf);
    if (diag) cpli_diag_add(diag, path, 0, 0, "cannot read: %s", strerror(ioerr));
    return cpli_fail(CPL_ERR_IO, "%s: cannot read: %s", path, strerror(ioerr));
  }
  int rc = cpl_workflow_load_buffer(buf, len, path, diag, out);
  free(buf);
  return rc;
}

/* ------------------------------------------------------------ accessors */

const char *cpl_workflow_name(const cpl_workflow *wf) { return wf ? wf->name : NULL; }
const char *cpl_workflow_path(const cpl_workflow *wf) { return wf ? wf->path : NULL; }
int cpl_workflow_component_count(const cpl_workflow *wf) { return wf ? wf->ncomps : 0; }
int cpl_workflow_link_count(const cpl_workflow *wf) { return wf ? wf->nlinks : 0; }
int cpl_workflow_total_procs(const cpl_workflow *wf) { return wf ? wf->total_procs : 0; }

int cpl_workflow_component_index(const cpl_workflow *wf, const char *name) {
  if (!wf || !name) return -1;
  for (int i = 0; i < wf->ncomps; i++)
    if (wf->comps[i].name && strcmp(wf->comps[i].name, name) == 0) return i;
  return -1;
}

int cpl_workflow_component(const cpl_workflow *wf, int index, cpl_component_info *out) {
  if (!wf || !out)
    return cpli_fail(CPL_ERR_ARG, "cpl_workflow_component: %s is NULL", wf ? "out" : "wf");
  if (index < 0 || index >= wf->ncomps)
    return cpli_fail(CPL_ERR_ARG, "cpl_workflow_component: no component %d (it has %d)", index,
                     wf->ncomps);
  const cpli_component *c = &wf->comps[index];
  *out = (cpl_component_info){
      .name = c->name,
      .nprocs = c->nprocs,
      .kind = c->kind,
      .argc = c->argc,
      .argv = (const char *const *)c->argv,
      .file = c->file,
      .line = c->pos.line,
  };
  return CPL_OK;
}

int cpl_workflow_link(const cpl_workflow *wf, int index, cpl_link_info *out) {
  if (!wf || !out)
    return cpli_fail(CPL_ERR_ARG, "cpl_workflow_link: %s is NULL", wf ? "out" : "wf");
  if (index < 0 || index >= wf->nlinks)
    return cpli_fail(CPL_ERR_ARG, "cpl_workflow_link: no link %d (it has %d)", index, wf->nlinks);
  const cpli_link *l = &wf->links[index];
  const cpli_component *fc = &wf->comps[l->from_comp];
  const cpli_component *tc = &wf->comps[l->to_comp];
  *out = (cpl_link_info){
      .from_component = fc->name,
      .from_port = fc->ports[l->from_port].name,
      .to_component = tc->name,
      .to_port = tc->ports[l->to_port].name,
      .from_index = l->from_comp,
      .to_index = l->to_comp,
      .inter = l->inter,
      .intra = l->intra,
      .policy = l->policy,
      .every = l->every,
      .depth = l->depth,
      .timeout = l->timeout,
      .line = l->pos.line,
  };
  return CPL_OK;
}
