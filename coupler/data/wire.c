#include "data/wire.h"

#include <stdlib.h>
#include <string.h>

void cpli_w_free(cpli_wbuf *w) {
  free(w->p);
  *w = (cpli_wbuf){0};
}

void cpli_w_bytes(cpli_wbuf *w, const void *data, size_t n) {
  if (w->oom || n == 0) return;
  if (n > SIZE_MAX / 2 - w->len) {
    w->oom = 1;
    return;
  }
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n) cap *= 2;
    unsigned char *p = realloc(w->p, cap);
    if (!p) {
      w->oom = 1;
      return;
    }
    w->p = p;
    w->cap = cap;
  }
  memcpy(w->p + w->len, data, n);
  w->len += n;
}

void cpli_w_u32(cpli_wbuf *w, uint32_t v) { cpli_w_bytes(w, &v, sizeof v); }
void cpli_w_u64(cpli_wbuf *w, uint64_t v) { cpli_w_bytes(w, &v, sizeof v); }

void cpli_w_str(cpli_wbuf *w, const char *s) {
  size_t n = strlen(s);
  cpli_w_u32(w, (uint32_t)n);
  cpli_w_bytes(w, s, n + 1);
}

cpli_rbuf cpli_r_init(const void *p, size_t len) { return (cpli_rbuf){.p = p, .len = len}; }

const void *cpli_r_bytes(cpli_rbuf *r, size_t n) {
  if (r->bad || n > r->len - r->pos) {
    r->bad = 1;
    return NULL;
  }
  const void *at = r->p + r->pos;
  r->pos += n;
  return at;
}

uint32_t cpli_r_u32(cpli_rbuf *r) {
  uint32_t v = 0;
  const void *at = cpli_r_bytes(r, sizeof v);
  if (at) memcpy(&v, at, sizeof v);
  return v;
}

uint64_t cpli_r_u64(cpli_rbuf *r) {
  uint64_t v = 0;
  const void *at = cpli_r_bytes(r, sizeof v);
  if (at) memcpy(&v, at, sizeof v);
  return v;
}

const char *cpli_r_str(cpli_rbuf *r) {
  uint32_t n = cpli_r_u32(r);
  const char *s = cpli_r_bytes(r, (size_t)n + 1);
  if (!s || s[n] != '\0' || memchr(s, '\0', n)) {
    r->bad = 1;
    return "";
  }
  return s;
}

int64_t cpli_r_lengths_sum(const int64_t *lens, int n, int64_t max) {
  int64_t sum = 0;
  for (int i = 0; i < n; i++) {
    if (lens[i] < 0 || lens[i] > max || sum > max - lens[i]) return -1;
    sum += lens[i];
  }
  return sum;
}
