/* Unit tests of the workflow parser and validator (no MPI).
 * usage: test_wf_unit GOOD_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workflow/model.h"
#include "workflow/ytree.h"

static int failures, checks;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    checks++;                                                                                      \
    if (!(cond)) {                                                                                 \
      failures++;                                                                                  \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
    }                                                                                              \
  } while (0)

static const char *good_dir;

static cpl_workflow *load_good(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", good_dir, name);
  cpl_diag *d = NULL;
  cpl_diag_create(&d);
  cpl_workflow *wf = NULL;
  int rc = cpl_workflow_load(path, d, &wf);
  if (rc != CPL_OK) {
    fprintf(stderr, "%s: expected to load, got %s\n", path, cpl_strerror(rc));
    for (int i = 0; i < cpl_diag_count(d); i++) fprintf(stderr, "  %s\n", cpl_diag_message(d, i));
  }
  CHECK(rc == CPL_OK && wf);
  cpl_diag_destroy(d);
  return wf;
}

/* Load a buffer that must fail; return whether some message has frag. */
static int fails_with(const char *yaml, size_t len, const char *frag) {
  cpl_diag *d = NULL;
  cpl_diag_create(&d);
  cpl_workflow *wf = NULL;
  int rc = cpl_workflow_load_buffer(yaml, len, "buf.yaml", d, &wf);
  int found = 0;
  for (int i = 0; i < cpl_diag_count(d); i++)
    if (strstr(cpl_diag_message(d, i), frag)) found = 1;
  if (rc == CPL_OK || !found) {
    fprintf(stderr, "expected failure with \"%s\"; rc %d, messages:\n", frag, rc);
    for (int i = 0; i < cpl_diag_count(d); i++) fprintf(stderr, "  %s\n", cpl_diag_message(d, i));
  }
  cpl_workflow_destroy(wf);
  cpl_diag_destroy(d);
  return rc != CPL_OK && !wf && found;
}

static void test_two(void) {
  cpl_workflow *wf = load_good("two.yaml");
  if (!wf) return;
  CHECK(strcmp(cpl_workflow_name(wf), "demo") == 0);
  CHECK(cpl_workflow_component_count(wf) == 2);
  CHECK(cpl_workflow_total_procs(wf) == 6);
  CHECK(cpl_workflow_link_count(wf) == 1);
  CHECK(cpl_workflow_component_index(wf, "ana") == 1);
  CHECK(cpl_workflow_component_index(wf, "nope") == -1);
  cpl_component_info ci;
  CHECK(cpl_workflow_component(wf, 0, &ci) == CPL_OK);
  CHECK(ci.nprocs == 4 && ci.kind == CPL_KIND_COMMAND && ci.argc == 3);
  CHECK(strcmp(ci.argv[2], "10") == 0 && ci.argv[3] == NULL);
  CHECK(cpl_workflow_component(wf, 2, &ci) == CPL_ERR_ARG);
  cpl_link_info li;
  CHECK(cpl_workflow_link(wf, 0, &li) == CPL_OK);
  CHECK(strcmp(li.from_component, "sim") == 0 && strcmp(li.to_port, "in") == 0);
  CHECK(li.from_index == 0 && li.to_index == 1);
  /* defaults */
  CHECK(li.inter == CPL_INTER_AUTO && li.intra == CPL_INTRA_AUTO);
  CHECK(li.policy == CPL_POLICY_ALL && li.every == 1);
  CHECK(li.depth == CPLI_WF_DEFAULT_DEPTH);
  CHECK(li.timeout == CPLI_WF_DEFAULT_TIMEOUT);
  CHECK(wf->links[0].label && strcmp(wf->links[0].label, "sim.out->ana.in") == 0);
  cpl_workflow_destroy(wf);
}

static void test_full(void) {
  cpl_workflow *wf = load_good("full.yaml");
  if (!wf) return;
  CHECK(wf->ncomps == 5 && wf->nlinks == 4 && wf->total_procs == 9);
  const cpli_component *sim = &wf->comps[0];
  CHECK(sim->argc == 5 && strcmp(sim->argv[4], "two words") == 0);
  CHECK(sim->workdir && strcmp(sim->workdir, "/tmp") == 0);
  CHECK(sim->nenv == 2 && strcmp(sim->env[0].name, "OMP_NUM_THREADS") == 0 &&
        strcmp(sim->env[0].value, "2") == 0);
  CHECK(sim->nports == 2 && sim->ports[0].output && sim->ports[0].ndatasets == 3);
  const cpli_dataset *t = &sim->ports[0].datasets[0];
  CHECK(strcmp(t->name, "temperature") == 0 && strcmp(t->type, "float64") == 0);
  CHECK(t->ndims == 2 && t->dims[0] == 64 && t->dims[1] == 64);
  CHECK(sim->ports[0].datasets[2].type == NULL && sim->ports[0].datasets[2].ndims == -1);
  const cpli_component *ana = &wf->comps[1];
  CHECK(ana->argc == 5 && strcmp(ana->argv[3], "a b") == 0 && strcmp(ana->argv[4], "c\"d") == 0);
  CHECK(sim->nhosts == 2 && strcmp(sim->hosts[1], "node2.example.org") == 0 && sim->ppn == 2);
  CHECK(ana->nhosts == 2 && !ana->hosts && !ana->ppn); /* a count */
  CHECK(wf->comps[2].nprocs == 1);                     /* default */
  CHECK(wf->comps[3].kind == CPL_KIND_SINK && strcmp(wf->comps[3].file, "out.h5") == 0);
  CHECK(wf->comps[4].kind == CPL_KIND_SOURCE);
  const cpli_link *l = wf->links;
  CHECK(l[0].inter == CPL_INTER_RING && l[0].intra == CPL_INTRA_CIRCULANT);
  CHECK(l[0].depth == 4 && fabs(l[0].timeout - 30.5) < 1e-12);
  CHECK(l[1].policy == CPL_POLICY_LATEST);
  CHECK(l[2].policy == CPL_POLICY_EVERY && l[2].every == 10);
  CHECK(l[3].inter == CPL_INTER_FC && l[3].intra == CPL_INTRA_BRUCK);
  /* fan-out: sim.fields feeds two links; fan-in: store.all has two. */
  CHECK(l[0].from_comp == l[1].from_comp && l[0].from_port == l[1].from_port);
  CHECK(l[2].to_comp == l[3].to_comp && l[2].to_port == l[3].to_port);
  CHECK(wf->comps[0].pos.line == 5 && wf->comps[0].pos.col == 5);
  cpl_workflow_destroy(wf);
}

/* Stage keys (defaults and every key) and link delivery. */
static void test_stage(void) {
  cpl_workflow *wf = load_good("stage.yaml");
  if (!wf) return;
  const cpli_component *relay = &wf->comps[1], *store = &wf->comps[2];
  CHECK(relay->kind == CPL_KIND_STAGE && relay->keep == CPLI_WF_DEFAULT_KEEP);
  CHECK(relay->when_full == CPLI_FULL_BLOCK && relay->drain == NULL);
  CHECK(store->keep == 8 && store->when_full == CPLI_FULL_EVICT);
  CHECK(store->drain && strcmp(store->drain, "out/all.h5") == 0);
  CHECK(wf->comps[0].keep == CPLI_WF_DEFAULT_KEEP && !wf->comps[0].drain);
  CHECK(wf->links[0].delivery == CPLI_DELIVERY_AUTO);
  CHECK(wf->links[1].delivery == CPLI_DELIVERY_SELECT);
  CHECK(wf->links[2].delivery == CPLI_DELIVERY_ALLGATHER);
  CHECK(strcmp(cpli_when_full_name(CPLI_FULL_EVICT), "evict") == 0);
  CHECK(cpli_when_full_name(CPLI_FULL_COUNT) == NULL);
  cpl_workflow_destroy(wf);
}

static void test_limits(void) {
  /* Over the size limit: a valid file padded with a comment. */
  size_t n = CPLI_Y_MAX_BYTES + 10;
  char *big = malloc(n);
  const char *head = "name: w\ncomponents: [{name: a, command: x}]\n#";
  memset(big, 'x', n);
  memcpy(big, head, strlen(head));
  CHECK(fails_with(big, n, "a workflow file may have at most 1048576"));
  free(big);
  /* A NUL in the middle of an otherwise valid buffer. */
  const char nul[] = "name: w\ncomponents: [{name: a, command: x}]\n\0\n";
  CHECK(fails_with(nul, sizeof nul - 1, "3:1: NUL byte in file"));
  /* Nesting at the bound is not a depth error, one more level is. */
  char deep[256] = "x: ";
  for (int i = 0; i < CPLI_Y_MAX_DEPTH; i++) strcat(deep, "[");
  for (int i = 0; i < CPLI_Y_MAX_DEPTH; i++) strcat(deep, "]");
  CHECK(fails_with(deep, strlen(deep), "nesting deeper"));
  char ok[256] = "x: ";
  for (int i = 0; i < CPLI_Y_MAX_DEPTH - 1; i++) strcat(ok, "[");
  for (int i = 0; i < CPLI_Y_MAX_DEPTH - 1; i++) strcat(ok, "]");
  CHECK(fails_with(ok, strlen(ok), "unknown key \"x\""));
  /* Many errors: stored up to the cap, all counted, sorted by line. */
  size_t cap = 200000, o = 0;
  char *many = malloc(cap);
  o += (size_t)snprintf(many + o, cap - o, "name: w\ncomponents:\n");
  for (int i = 0; i < 150; i++)
    o += (size_t)snprintf(many + o, cap - o, "  - {name: c%d, nprocs: 0, command: x}\n", i);
  cpl_diag *d = NULL;
  cpl_diag_create(&d);
  cpl_workflow *wf = NULL;
  CHECK(cpl_workflow_load_buffer(many, o, "m.yaml", d, &wf) == CPL_ERR_CONFIG);
  CHECK(cpl_diag_count(d) == CPLI_DIAG_MAX && cpl_diag_total(d) == 150);
  CHECK(strncmp(cpl_diag_message(d, 0), "m.yaml:3:", 9) == 0);
  CHECK(strncmp(cpl_diag_message(d, 1), "m.yaml:4:", 9) == 0);
  CHECK(strstr(cpl_last_error(), "m.yaml:3:") != NULL);
  cpl_diag_destroy(d);
  free(many);
}

static void test_api_edges(void) {
  cpl_workflow *wf = (cpl_workflow *)1;
  CHECK(cpl_workflow_load("/nonexistent/wf.yaml", NULL, &wf) == CPL_ERR_IO);
  CHECK(wf == NULL);
  CHECK(strstr(cpl_last_error(), "/nonexistent/wf.yaml") != NULL);
  /* No diag list: still fails, last error has the first message. */
  const char *bad = "name: w\ncomponents:\n  - {name: a, nprocs: two, command: x}\n";
  CHECK(cpl_workflow_load_buffer(bad, strlen(bad), "b.yaml", NULL, &wf) == CPL_ERR_CONFIG);
  CHECK(strstr(cpl_last_error(), "b.yaml:3:23: nprocs must be a positive integer, got \"two\"") !=
        NULL);
  const char *syn = "name: [\n";
  CHECK(cpl_workflow_load_buffer(syn, strlen(syn), "s.yaml", NULL, &wf) == CPL_ERR_PARSE);
  CHECK(cpl_workflow_load_buffer(NULL, 0, "e.yaml", NULL, &wf) == CPL_ERR_CONFIG);
  CHECK(cpl_workflow_load_buffer("x", 1, "e.yaml", NULL, NULL) == CPL_ERR_ARG);
  /* Default name is the file stem; links may be omitted. */
  const char *lone = "components: [{name: a, command: x}]\n";
  CHECK(cpl_workflow_load_buffer(lone, strlen(lone), "dir/lone.yaml", NULL, &wf) == CPL_OK);
  CHECK(wf && strcmp(cpl_workflow_name(wf), "lone") == 0 && cpl_workflow_link_count(wf) == 0);
  /* A NULL argument is named as such, not as a missing index (component
   * 0 exists: "no component 0" was the answer for a NULL out). */
  cpl_component_info ci;
  cpl_link_info li;
  CHECK(cpl_workflow_component(wf, 0, NULL) == CPL_ERR_ARG &&
        strstr(cpl_last_error(), "cpl_workflow_component: out is NULL"));
  CHECK(cpl_workflow_component(NULL, 0, &ci) == CPL_ERR_ARG &&
        strstr(cpl_last_error(), "cpl_workflow_component: wf is NULL"));
  CHECK(cpl_workflow_component(wf, 1, &ci) == CPL_ERR_ARG &&
        strstr(cpl_last_error(), "no component 1 (it has 1)"));
  CHECK(cpl_workflow_link(wf, 0, NULL) == CPL_ERR_ARG &&
        strstr(cpl_last_error(), "cpl_workflow_link: out is NULL"));
  CHECK(cpl_workflow_link(wf, 0, &li) == CPL_ERR_ARG &&
        strstr(cpl_last_error(), "no link 0 (it has 0)"));
  cpl_workflow_destroy(wf);
  /* A buffer without a file name is "workflow"; a stem that is no name is refused. */
  CHECK(cpl_workflow_load_buffer(lone, strlen(lone), NULL, NULL, &wf) == CPL_OK);
  CHECK(wf && strcmp(cpl_workflow_name(wf), "workflow") == 0);
  cpl_workflow_destroy(wf);
  CHECK(cpl_workflow_load_buffer(lone, strlen(lone), "d/my wf.yaml", NULL, &wf) == CPL_ERR_CONFIG);
  CHECK(strstr(cpl_last_error(), "file name \"my wf\" is not a valid name") != NULL);
  /* Quoted strings are fine where strings are expected. */
  const char *q = "name: \"w\"\ncomponents: [{name: 'a', command: \"x y\"}]\n";
  CHECK(cpl_workflow_load_buffer(q, strlen(q), "q.yaml", NULL, &wf) == CPL_OK);
  cpl_workflow_destroy(wf);
  const char *dup = "name: w\ncomponents: [{name: a, command: x}]\nname: v\n";
  CHECK(fails_with(dup, strlen(dup), "3:1: duplicate key \"name\" (first at 1:1)"));
  /* One list for several loads: each load's errors are appended after the
   * earlier ones, and the last error is this load's first one and its
   * count (it was the list's first message, another file's, and the
   * earlier messages were sorted in among this load's). */
  cpl_diag *d = NULL;
  cpl_diag_create(&d);
  const char *two = "name: w\ncomponents:\n  - {name: a, nprocs: 0, command: x}\n"
                    "  - {name: b, nprocs: 0, command: x}\n";
  CHECK(cpl_workflow_load_buffer(two, strlen(two), "first.yaml", d, &wf) == CPL_ERR_CONFIG);
  CHECK(strstr(cpl_last_error(), "first.yaml:3:") &&
        strstr(cpl_last_error(), "(and 1 more errors)"));
  CHECK(cpl_workflow_load_buffer(bad, strlen(bad), "b.yaml", d, &wf) == CPL_ERR_CONFIG);
  CHECK(strncmp(cpl_last_error(), "b.yaml:3:23: nprocs must be", 27) == 0);
  CHECK(!strstr(cpl_last_error(), "more errors"));
  CHECK(cpl_diag_total(d) == 3 && strncmp(cpl_diag_message(d, 0), "first.yaml:3:", 13) == 0 &&
        strncmp(cpl_diag_message(d, 1), "first.yaml:4:", 13) == 0 &&
        strncmp(cpl_diag_message(d, 2), "b.yaml:3:", 9) == 0);
  cpl_diag_destroy(d);
}

/* Declarations on both ends of a link that agree load: a type that
 * converts, dims on one end only, a fan-in port whose datasets come from
 * two producers, a producer that declares nothing. */
static void test_link_datasets(void) {
  const char *y = "name: w\ncomponents:\n"
                  "  - {name: p, command: x, outputs: [{name: o, datasets: "
                  "[{name: U, type: float64, dims: [4, 4]}, {name: V, dims: [2]}]}]}\n"
                  "  - {name: q, command: x, outputs: [{name: o, datasets: [W]}]}\n"
                  "  - {name: r, command: x, outputs: [o]}\n"
                  "  - {name: c, command: x, inputs: [{name: i, datasets: "
                  "[{name: U, type: int32, dims: [4, 4]}, {name: V, type: uint8}, W]}, "
                  "{name: j, datasets: [Z]}]}\n"
                  "links:\n  - {from: p.o, to: c.i}\n  - {from: q.o, to: c.i}\n"
                  "  - {from: r.o, to: c.j}\n";
  cpl_diag *d = NULL;
  cpl_diag_create(&d);
  cpl_workflow *wf = NULL;
  CHECK(cpl_workflow_load_buffer(y, strlen(y), "l.yaml", d, &wf) == CPL_OK && wf);
  for (int i = 0; i < cpl_diag_count(d); i++) fprintf(stderr, "  %s\n", cpl_diag_message(d, i));
  cpl_workflow_destroy(wf);
  cpl_diag_destroy(d);
  CHECK(cpli_dtype_convertible("float64", "int8") && cpli_dtype_convertible("char", "uint64"));
  CHECK(!cpli_dtype_convertible("float64", "float128"));
}

static void test_edit_distance(void) {
  CHECK(cpli_edit_distance("nproc", "nprocs", 2) == 1);
  CHECK(cpli_edit_distance("form", "from", 2) == 1);
  CHECK(cpli_edit_distance("rign", "ring", 2) == 1);
  CHECK(cpli_edit_distance("abc", "xyz", 2) == 3);
  CHECK(cpli_edit_distance("NPROCS", "nprocs", 2) == 0);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_wf_unit GOOD_DIR\n");
    return 2;
  }
  good_dir = argv[1];
  test_two();
  test_full();
  test_stage();
  test_limits();
  test_api_edges();
  test_edit_distance();
  test_link_datasets();
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
