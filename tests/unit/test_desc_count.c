/*
 * The limit of 65536 datasets per step (CPLI_DATASETS_MAX): cpli_desc_add
 * says "full" apart from "out of memory", and the merge of several
 * ranks' descriptions names the limit when their union passes it, though
 * each rank is within it (it said "out of memory"). Shared names count
 * once. Without MPI: the merge gets the ranks' encoded blobs directly.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "data/data.h"
#include "data/desc.h"

/* One rank's one-block description of n datasets "<prefix><i>" of one
 * element, which the rank holds if `cover`. */
static void blob(const char *prefix, int n, int cover, cpli_wbuf *w) {
  cpli_desc *d = cpli_desc_new(1);
  hsize_t dims[1] = {1};
  char name[32];
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "%s%d", prefix, i);
    CHECK(cpli_desc_add(d, name, H5T_NATIVE_INT, 1, dims) == i, "add %s", name);
    d->d[i].count[0] = cover != 0;
  }
  CHECK(cpli_desc_encode(d, w) == CPL_OK, "encode: %s", cpl_last_error());
  cpli_desc_unref(d);
}

/* Merge two ranks' blobs as an output port's agreement does. */
static int merge2(cpli_wbuf *a, cpli_wbuf *b, int *nd) {
  const unsigned char *blobs[2] = {a->p, b->p};
  size_t lens[2] = {a->len, b->len};
  cpli_desc *m = NULL;
  int rc = cpli_desc_merge(2, blobs, lens, "port prod.out, step 3", &m);
  *nd = m ? m->nd : -1;
  if (m) cpli_desc_unref(m);
  return rc;
}

int main(void) {
  /* One description: the 65537th add is refused as full. */
  cpli_desc *d = cpli_desc_new(1);
  hsize_t dims[1] = {1};
  char name[32];
  int k = 0;
  for (int i = 0; i <= CPLI_DATASETS_MAX && k >= 0; i++) {
    snprintf(name, sizeof name, "%d", i);
    k = cpli_desc_add(d, name, H5T_NATIVE_INT, 1, dims);
  }
  CHECK(k == CPLI_DESC_FULL && d->nd == CPLI_DATASETS_MAX, "add past the limit: %d, %d held", k,
        d->nd);
  cpli_desc_unref(d);

  /* Two ranks of 32769 distinct names: 65538 in the step. */
  cpli_wbuf a = {0}, b = {0};
  blob("a", CPLI_DATASETS_MAX / 2 + 1, 1, &a);
  blob("b", CPLI_DATASETS_MAX / 2 + 1, 1, &b);
  int nd;
  int rc = merge2(&a, &b, &nd);
  CHECK(rc == CPL_ERR_UNSUPPORTED, "union of 65538 datasets: status %d (%s)", rc, cpl_last_error());
  CHECK(strstr(cpl_last_error(), "port prod.out, step 3: a step carries at most 65536 datasets"),
        "message: %s", cpl_last_error());

  /* The same names on both ranks (rank 0 holds every element): 32769
   * datasets, fine. */
  cpli_wbuf a2 = {0};
  blob("a", CPLI_DATASETS_MAX / 2 + 1, 0, &a2);
  rc = merge2(&a, &a2, &nd);
  CHECK(rc == CPL_OK && nd == CPLI_DATASETS_MAX / 2 + 1, "shared names: status %d, %d datasets", rc,
        nd);
  cpli_w_free(&a);
  cpli_w_free(&a2);
  cpli_w_free(&b);

  if (failures) fprintf(stderr, "%d failures\n", failures);
  else printf("desc count: ok\n");
  return failures != 0;
}
