/*
 * Plan cache (sched/plan_cache.h): a plan is found only under exactly the
 * key it was stored with (any parameter, count or displacement differing
 * misses, including keys past the inline size), the least recently used
 * slot goes first, a stored plan survives until evicted, and without a
 * cache nothing is kept.
 */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "coupler.h"
#include "sched/plan_cache.h"

/* A one-message plan whose size tags it. */
static void plan(cpli_flow *f, size_t tag) {
  cpli_flow_init(f);
  size_t off = 0;
  cpli_flow_have(f, 0, 0, tag);
  cpli_flow_stream(f, 1, 1, 0, 1, &off, &tag, 0);
  char why[128];
  cpli_flow_resolve(f, why, sizeof why);
}

static size_t tag_of(const cpli_flow *f) { return f && f->nm ? f->m[0].bytes : 0; }

static void key(cpli_plan_key *k, double a, int n, size_t shift) {
  size_t *c = malloc(sizeof *c * (size_t)n), *d = malloc(sizeof *d * (size_t)n);
  for (int i = 0; i < n; i++) c[i] = 10 + (size_t)i, d[i] = 100 * (size_t)i + shift;
  const double param[] = {a, 32768};
  CHECK(cpli_plan_key_make(k, param, 2, n, c, d) == CPL_OK, "key n=%d", n);
  free(c), free(d);
}

int main(void) {
  cpli_plan_cache c;
  cpli_plan_cache_init(&c);
  cpli_plan_key k[6];
  const int n[6] = {3, 3, 3, 200, 200, 4}; /* 200 blocks: a heap key */
  key(&k[0], 7, n[0], 0);
  key(&k[1], 1, n[1], 0); /* other parameter   */
  key(&k[2], 7, n[2], 1); /* other displs      */
  key(&k[3], 7, n[3], 0);
  key(&k[4], 7, n[4], 5); /* heap, differs late */
  key(&k[5], 7, n[5], 0); /* other length      */
  for (int i = 0; i < 6; i++) CHECK(!cpli_plan_cache_find(&c, &k[i]), "empty cache hit %d", i);

  for (int i = 0; i < CPLI_PLAN_SLOTS; i++) {
    cpli_flow f;
    plan(&f, 1 + (size_t)i);
    const cpli_flow *s = cpli_plan_cache_put(&c, &k[i], &f);
    CHECK(s != &f && tag_of(s) == 1 + (size_t)i && f.nm == 0, "put %d moves the plan", i);
  }
  for (int i = 0; i < CPLI_PLAN_SLOTS; i++)
    CHECK(tag_of(cpli_plan_cache_find(&c, &k[i])) == 1 + (size_t)i, "hit %d", i);
  CHECK(!cpli_plan_cache_find(&c, &k[4]) && !cpli_plan_cache_find(&c, &k[5]), "misses");

  /* k[0] was used last of all but k[1..3]; touch 0, 2, 3: 1 is oldest. */
  cpli_plan_cache_find(&c, &k[0]);
  cpli_plan_cache_find(&c, &k[2]);
  cpli_plan_cache_find(&c, &k[3]);
  cpli_flow f;
  plan(&f, 50);
  cpli_plan_cache_put(&c, &k[4], &f);
  CHECK(!cpli_plan_cache_find(&c, &k[1]), "least recently used evicted");
  CHECK(tag_of(cpli_plan_cache_find(&c, &k[4])) == 50, "new plan found");
  CHECK(tag_of(cpli_plan_cache_find(&c, &k[0])) == 1 &&
            tag_of(cpli_plan_cache_find(&c, &k[3])) == 4,
        "others kept");

  /* no cache: the caller keeps its plan */
  plan(&f, 9);
  CHECK(cpli_plan_cache_put(NULL, &k[0], &f) == &f && f.nm == 1, "no cache keeps the plan");
  CHECK(!cpli_plan_cache_find(NULL, &k[0]), "no cache finds nothing");
  cpli_flow_free(&f);

  cpli_plan_cache_clear(&c);
  CHECK(!cpli_plan_cache_find(&c, &k[0]), "cleared");
  for (int i = 0; i < 6; i++) cpli_plan_key_free(&k[i]);
  printf("plan cache: %d failures\n", failures);
  return failures ? 1 : 0;
}
