/*
 * Finding names by index (core/index.h), not by comparing every name: the
 * index walk (positions under one hash in the order added, through growth
 * and reset), a description's datasets (cpli_desc_find, also after a
 * decode and in the merge's order), and a step's attributes by (dataset,
 * name): a replaced one keeps its place, pairs whose names run together
 * ("ab" "c", "a" "bc") stay apart.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/index.h"
#include "data/data.h"
#include "data/desc.h"

static void index_walk(void) {
  cpli_index ix = {0};
  size_t probe = 0;
  CHECK(cpli_index_next(&ix, 7, &probe) == -1, "empty index found something");
  /* 1000 positions under one hash (all collide), others between them. */
  for (int i = 0; i < 2000; i++)
    CHECK(cpli_index_add(&ix, i % 2 ? 1000u + (uint64_t)i : 7, i) == 0, "add %d", i);
  probe = 0;
  int want = 0, k;
  while ((k = cpli_index_next(&ix, 7, &probe)) >= 0) {
    CHECK(k == want, "under hash 7: %d, expected %d", k, want);
    want += 2;
  }
  CHECK(want == 2000, "under hash 7: %d positions, expected 1000", want / 2);
  probe = 0;
  CHECK(cpli_index_next(&ix, 1001, &probe) == 1, "hash 1001: not position 1");
  probe = 0;
  CHECK(cpli_index_next(&ix, 8, &probe) == -1, "hash 8 was never added");
  cpli_index_reset(&ix);
  probe = 0;
  CHECK(cpli_index_next(&ix, 7, &probe) == -1, "reset index found something");
  CHECK(cpli_index_add(&ix, 7, 5) == 0, "add after reset");
  probe = 0;
  CHECK(cpli_index_next(&ix, 7, &probe) == 5, "after reset: not position 5");
  cpli_index_free(&ix);
}

static void desc_names(void) {
  const int n = CPLI_DATASETS_MAX;
  cpli_desc *d = cpli_desc_new(1);
  hsize_t dims[1] = {1};
  char name[32];
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "d%d", i);
    CHECK(cpli_desc_add(d, name, H5T_NATIVE_INT, 1, dims) == i, "add %s", name);
    d->d[i].count[0] = 1;
  }
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "d%d", i);
    CHECK(cpli_desc_find(d, name) == i, "find %s: %d", name, cpli_desc_find(d, name));
  }
  CHECK(cpli_desc_find(d, "d") == -1 && cpli_desc_find(d, "d65536") == -1, "found a stranger");
  cpli_wbuf w = {0};
  CHECK(cpli_desc_encode(d, &w) == CPL_OK, "encode: %s", cpl_last_error());
  cpli_desc *back = NULL;
  CHECK(cpli_desc_decode(w.p, w.len, "test", &back) == CPL_OK, "decode: %s", cpl_last_error());
  for (int i = 0; back && i < n; i += 997) {
    snprintf(name, sizeof name, "d%d", i);
    CHECK(cpli_desc_find(back, name) == i, "decoded: find %s", name);
  }
  cpli_desc_unref(back);
  cpli_w_free(&w);
  cpli_desc_unref(d);

  /* Merge: rank 0 puts "b" and its half of "a", rank 1 "c" and the other
   * half: datasets in order of first appearance, each found where it is. */
  const char *names[2][2] = {{"b", "a"}, {"c", "a"}};
  cpli_wbuf blob[2] = {{0}, {0}};
  for (int r = 0; r < 2; r++) {
    cpli_desc *one = cpli_desc_new(1);
    hsize_t two[1] = {2};
    cpli_desc_add(one, names[r][0], H5T_NATIVE_INT, 1, dims);
    one->d[0].count[0] = 1;
    cpli_desc_add(one, names[r][1], H5T_NATIVE_INT, 1, two);
    one->d[1].start[0] = (hsize_t)r;
    one->d[1].count[0] = 1;
    CHECK(cpli_desc_encode(one, &blob[r]) == CPL_OK, "encode rank %d", r);
    cpli_desc_unref(one);
  }
  const unsigned char *blobs[2] = {blob[0].p, blob[1].p};
  size_t lens[2] = {blob[0].len, blob[1].len};
  cpli_desc *m = NULL;
  CHECK(cpli_desc_merge(2, blobs, lens, "test", &m) == CPL_OK, "merge: %s", cpl_last_error());
  CHECK(m && m->nd == 3 && !strcmp(m->d[0].name, "b") && !strcmp(m->d[1].name, "a") &&
            !strcmp(m->d[2].name, "c"),
        "merged order");
  CHECK(m && cpli_desc_find(m, "b") == 0 && cpli_desc_find(m, "a") == 1 &&
            cpli_desc_find(m, "c") == 2,
        "merged: found elsewhere");
  cpli_desc_unref(m);
  for (int r = 0; r < 2; r++) cpli_w_free(&blob[r]);
}

static void attr_names(void) {
  cpli_attrs a = {0};
  int v = 1;
  char ds[32], name[32];
  for (int i = 0; i < 3000; i++) {
    snprintf(ds, sizeof ds, "d%d", i / 3);
    snprintf(name, sizeof name, "a%d", i % 3);
    CHECK(cpli_attrs_set(&a, ds, name, H5T_NATIVE_INT, 1, &i) == CPL_OK, "set %s %s", ds, name);
  }
  CHECK(cpli_attrs_set(&a, "ab", "c", H5T_NATIVE_INT, 1, &v) == CPL_OK, "set ab c");
  v = 2;
  CHECK(cpli_attrs_set(&a, "a", "bc", H5T_NATIVE_INT, 1, &v) == CPL_OK, "set a bc");
  CHECK(cpli_attrs_set(&a, "", "bc", H5T_NATIVE_INT, 1, &v) == CPL_OK, "set step bc");
  CHECK(a.n == 3003, "%d attributes, expected 3003", a.n);
  /* Replaced in its place, its value the new one. */
  int r = 77;
  CHECK(cpli_attrs_set(&a, "d500", "a1", H5T_NATIVE_INT, 1, &r) == CPL_OK, "replace");
  CHECK(a.n == 3003 && cpli_attrs_find(&a, "d500", "a1") == 1501, "replaced: at %d of %d",
        cpli_attrs_find(&a, "d500", "a1"), a.n);
  CHECK(*(int *)a.v[1501].value == 77, "replaced value %d", *(int *)a.v[1501].value);
  CHECK(cpli_attrs_find(&a, "ab", "c") == 3000 && cpli_attrs_find(&a, "a", "bc") == 3001 &&
            cpli_attrs_find(&a, "", "bc") == 3002,
        "pairs that run together: %d %d %d", cpli_attrs_find(&a, "ab", "c"),
        cpli_attrs_find(&a, "a", "bc"), cpli_attrs_find(&a, "", "bc"));
  CHECK(cpli_attrs_find(&a, "abc", "") == -1 && cpli_attrs_find(&a, "d1000", "a0") == -1 &&
            cpli_attrs_find(&a, "d0", "a3") == -1,
        "found a stranger");
  /* Through the wire: the same order, found the same. */
  cpli_wbuf w = {0};
  cpli_attrs back = {0};
  CHECK(cpli_attrs_encode(&a, &w) == CPL_OK, "encode: %s", cpl_last_error());
  CHECK(cpli_attrs_decode(w.p, w.len, "test", &back) == CPL_OK, "decode: %s", cpl_last_error());
  CHECK(back.n == a.n, "decoded %d of %d", back.n, a.n);
  for (int i = 0; i < back.n && i < a.n; i++)
    CHECK(cpli_attrs_find(&back, a.v[i].dataset, a.v[i].name) == i, "decoded: %s %s at %d",
          a.v[i].dataset, a.v[i].name, cpli_attrs_find(&back, a.v[i].dataset, a.v[i].name));
  cpli_w_free(&w);
  cpli_attrs_clear(&back);
  cpli_attrs_clear(&a);
  CHECK(cpli_attrs_find(&a, "d0", "a0") == -1, "cleared: found d0 a0");
}

int main(void) {
  index_walk();
  desc_names();
  attr_names();
  if (failures) fprintf(stderr, "%d failures\n", failures);
  else printf("names: ok\n");
  return failures != 0;
}
