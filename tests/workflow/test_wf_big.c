/* Duplicate checks on large files stay fast (ctest's TIMEOUT is the bound;
 * the old pairwise checks took 25-30 s per file) and still point at the
 * second occurrence. One mapping of 90,000 keys and one hosts: list of
 * 100,000 names, each with one repeat at the end. No MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coupler.h"

static int failures;

/* A name from n: prefix and four letters (26^4 distinct). */
static void name_of(char *out, char prefix, int n) {
  out[0] = prefix;
  for (int i = 4; i >= 1; i--, n /= 26) out[i] = (char)('a' + n % 26);
  out[5] = '\0';
}

/* Items "PREFIX" + name, separated by ", ", then a repeat of item 7;
 * sets the columns (1-based, on the last line) of item 7 and the repeat. */
static char *build(const char *head, const char *item_fmt, char prefix, int n, const char *tail,
                   int *col7, int *coldup) {
  size_t cap = strlen(head) + strlen(tail) + (size_t)(n + 1) * 16;
  char *buf = malloc(cap), name[8];
  if (!buf) exit(2);
  size_t o = (size_t)snprintf(buf, cap, "%s", head);
  size_t line0 = (size_t)(strrchr(buf, '\n') - buf) + 1;
  for (int i = 0; i <= n; i++) {
    name_of(name, prefix, i < n ? i : 7);
    if (i == 7) *col7 = (int)(o - line0) + 1;
    if (i == n) *coldup = (int)(o - line0) + 1;
    o += (size_t)snprintf(buf + o, cap - o, item_fmt, name, i < n ? ", " : "");
  }
  snprintf(buf + o, cap - o, "%s", tail);
  return buf;
}

static void expect_one(const char *what, const char *yaml, const char *want) {
  cpl_diag *d = NULL;
  if (cpl_diag_create(&d) != CPL_OK) exit(2);
  cpl_workflow *wf = NULL;
  clock_t t0 = clock();
  int rc = cpl_workflow_load_buffer(yaml, strlen(yaml), "big.yaml", d, &wf);
  double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
  int ok =
      rc != CPL_OK && !wf && cpl_diag_total(d) == 1 && strcmp(cpl_diag_message(d, 0), want) == 0;
  printf("%s: %.2f s of CPU, %zu bytes: %s\n", what, s, strlen(yaml), ok ? "ok" : "FAILED");
  if (!ok) {
    failures++;
    fprintf(stderr, "  expected only: %s\n  got %d:\n", want, cpl_diag_total(d));
    for (int i = 0; i < cpl_diag_count(d); i++) fprintf(stderr, "    %s\n", cpl_diag_message(d, i));
  }
  cpl_workflow_destroy(wf);
  cpl_diag_destroy(d);
}

int main(void) {
  char want[256];
  int c7 = 0, cd = 0;
  char *keys = build("name: w\ncomponents:\n  - name: a\n    command: x\n    env: {", "%s: v%s",
                     'K', 90000, "}\n", &c7, &cd);
  snprintf(want, sizeof want, "big.yaml:5:%d: duplicate key \"Kaaah\" (first at 5:%d)", cd, c7);
  expect_one("90,000 keys", keys, want);
  free(keys);

  char *hosts = build("name: w\ncomponents:\n  - name: a\n    nprocs: 1048576\n    command: x\n"
                      "    hosts: [",
                      "%s%s", 'h', 100000, "]\n", &c7, &cd);
  snprintf(want, sizeof want, "big.yaml:6:%d: duplicate host \"haaah\" in hosts (first at 6:%d)",
           cd, c7);
  expect_one("100,000 hosts", hosts, want);
  free(hosts);
  return failures ? 1 : 0;
}
