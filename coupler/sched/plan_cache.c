#include "sched/plan_cache.h"

#include <stdlib.h>
#include <string.h>

#include "coupler.h"

void cpli_plan_cache_init(cpli_plan_cache *c) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < CPLI_PLAN_SLOTS; i++) cpli_flow_init(&c->slot[i].flow);
}

static void slot_clear(cpli_plan_slot *s) {
  free(s->key);
  cpli_flow_free(&s->flow);
  s->key = NULL;
  s->keylen = 0;
  s->used = 0;
}

void cpli_plan_cache_clear(cpli_plan_cache *c) {
  if (!c) return;
  for (int i = 0; i < CPLI_PLAN_SLOTS; i++) slot_clear(&c->slot[i]);
  c->clock = 0;
}

int cpli_plan_key_make(cpli_plan_key *k, const double *param, int nparam, int n,
                       const size_t *counts, const size_t *displs) {
  const size_t np = sizeof *param * (size_t)nparam;
  const size_t na = sizeof(size_t) * (size_t)n;
  k->len = sizeof n + np + (counts ? na : 0) + (displs ? na : 0);
  k->bytes = k->inline_bytes;
  if (k->len > sizeof k->inline_bytes && !(k->bytes = malloc(k->len))) {
    k->bytes = k->inline_bytes;
    k->len = 0;
    return CPL_ERR_NOMEM;
  }
  unsigned char *w = k->bytes;
  memcpy(w, &n, sizeof n), w += sizeof n;
  if (np) memcpy(w, param, np), w += np;
  if (counts && na) memcpy(w, counts, na), w += na;
  if (displs && na) memcpy(w, displs, na);
  return CPL_OK;
}

void cpli_plan_key_free(cpli_plan_key *k) {
  if (k->bytes != k->inline_bytes) free(k->bytes);
  k->bytes = k->inline_bytes;
  k->len = 0;
}

const cpli_flow *cpli_plan_cache_find(cpli_plan_cache *c, const cpli_plan_key *k) {
  if (!c || k->len == 0) return NULL;
  for (int i = 0; i < CPLI_PLAN_SLOTS; i++) {
    cpli_plan_slot *s = &c->slot[i];
    if (s->key && s->keylen == k->len && memcmp(s->key, k->bytes, k->len) == 0) {
      s->used = ++c->clock;
      return &s->flow;
    }
  }
  return NULL;
}

const cpli_flow *cpli_plan_cache_put(cpli_plan_cache *c, const cpli_plan_key *k, cpli_flow *f) {
  if (!c || k->len == 0) return f;
  unsigned char *key = malloc(k->len);
  if (!key) return f;
  memcpy(key, k->bytes, k->len);
  cpli_plan_slot *s = &c->slot[0];
  for (int i = 1; i < CPLI_PLAN_SLOTS; i++)
    if (c->slot[i].used < s->used) s = &c->slot[i];
  slot_clear(s);
  s->key = key;
  s->keylen = k->len;
  s->flow = *f;
  s->used = ++c->clock;
  cpli_flow_init(f);
  return &s->flow;
}
