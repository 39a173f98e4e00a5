#include "core/index.h"

#include <stdlib.h>
#include <string.h>

#define FNV_BASIS 1469598103934665603u
#define FNV_PRIME 1099511628211u

static uint64_t fnv(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * FNV_PRIME;
  return h;
}

uint64_t cpli_fnv1a(const void *data, size_t len) { return fnv(FNV_BASIS, data, len); }

uint64_t cpli_name_hash(const char *s) { return cpli_fnv1a(s, strlen(s)); }

uint64_t cpli_name_hash2(const char *a, const char *b) { /* a, its NUL, b */
  return fnv(cpli_fnv1a(a, strlen(a) + 1), b, strlen(b));
}

static void put(cpli_index_slot *slot, size_t mask, uint64_t h, int pos) {
  size_t at = (size_t)h & mask;
  while (slot[at].pos >= 0) at = (at + 1) & mask;
  slot[at] = (cpli_index_slot){h, pos};
}

int cpli_index_add(cpli_index *ix, uint64_t h, int pos) {
  if (2 * ((size_t)ix->n + 1) > ix->nslot) { /* grow: twice the room, hashes placed again */
    size_t nslot = ix->nslot ? 2 * ix->nslot : 16;
    cpli_index_slot *slot = malloc(nslot * sizeof *slot);
    if (!slot) return -1;
    for (size_t i = 0; i < nslot; i++) slot[i].pos = -1;
    for (size_t i = 0; i < ix->nslot; i++)
      if (ix->slot[i].pos >= 0) put(slot, nslot - 1, ix->slot[i].hash, ix->slot[i].pos);
    free(ix->slot);
    ix->slot = slot;
    ix->nslot = nslot;
  }
  put(ix->slot, ix->nslot - 1, h, pos);
  ix->n++;
  return 0;
}

int cpli_index_next(const cpli_index *ix, uint64_t h, size_t *probe) {
  /* Never full, so an empty slot ends every walk. */
  while (ix->n > 0) {
    const cpli_index_slot *s = &ix->slot[((size_t)h + (*probe)++) & (ix->nslot - 1)];
    if (s->pos < 0) return -1;
    if (s->hash == h) return s->pos;
  }
  return -1;
}

void cpli_index_reset(cpli_index *ix) {
  if (ix->n == 0) return;
  for (size_t i = 0; i < ix->nslot; i++) ix->slot[i].pos = -1;
  ix->n = 0;
}

void cpli_index_free(cpli_index *ix) {
  free(ix->slot);
  *ix = (cpli_index){0};
}
