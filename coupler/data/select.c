#include "data/select.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAXR H5S_MAX_RANK

void cpli_boxes_free(cpli_boxes *b) {
  free(b->start);
  free(b->count);
  *b = (cpli_boxes){0};
}

void cpli_boxes_reset(cpli_boxes *b, int rank) {
  b->rank = rank;
  b->n = 0;
}

int cpli_boxes_add(cpli_boxes *b, const hsize_t *start, const hsize_t *count) {
  size_t r = (size_t)b->rank;
  if (((size_t)b->n + 1) * r > b->room) { /* rank may have changed: values */
    size_t room = 2 * ((size_t)b->n + 1) * (r ? r : 1);
    hsize_t *s = realloc(b->start, room * sizeof *s);
    if (!s) return -1;
    b->start = s;
    hsize_t *c = realloc(b->count, room * sizeof *c);
    if (!c) return -1;
    b->count = c;
    b->room = room;
  }
  memcpy(b->start + (size_t)b->n * r, start, r * sizeof(hsize_t));
  memcpy(b->count + (size_t)b->n * r, count, r * sizeof(hsize_t));
  b->n++;
  return 0;
}

int cpli_box_intersect(int rank, const hsize_t *s1, const hsize_t *c1, const hsize_t *s2,
                       const hsize_t *c2, hsize_t *s, hsize_t *c) {
  for (int d = 0; d < rank; d++) {
    hsize_t a = s1[d] > s2[d] ? s1[d] : s2[d];
    hsize_t e1 = s1[d] + c1[d], e2 = s2[d] + c2[d];
    hsize_t b = e1 < e2 ? e1 : e2;
    if (b <= a) return 0;
    s[d] = a;
    c[d] = b - a;
  }
  return 1;
}

/* Peel the parts of b outside p off one dimension at a time: below and
 * above p in dim 0 (full extent in the others), then the same in dim 1 of
 * what is left, ... What remains at the end is b inside p. */
int cpli_box_subtract(int rank, const hsize_t *bs, const hsize_t *bc, const hsize_t *ps,
                      const hsize_t *pc, cpli_boxes *out) {
  hsize_t is[MAXR], ic[MAXR];
  if (!cpli_box_intersect(rank, bs, bc, ps, pc, is, ic))
    return cpli_boxes_add(out, bs, bc) < 0 ? -1 : 1;
  hsize_t s[MAXR], c[MAXR];
  memcpy(s, bs, (size_t)rank * sizeof *s);
  memcpy(c, bc, (size_t)rank * sizeof *c);
  int added = 0;
  for (int d = 0; d < rank; d++) {
    hsize_t lo = s[d], hi = s[d] + c[d];
    if (is[d] > lo) {
      s[d] = lo;
      c[d] = is[d] - lo;
      if (cpli_boxes_add(out, s, c) < 0) return -1;
      added++;
    }
    if (is[d] + ic[d] < hi) {
      s[d] = is[d] + ic[d];
      c[d] = hi - s[d];
      if (cpli_boxes_add(out, s, c) < 0) return -1;
      added++;
    }
    s[d] = is[d];
    c[d] = ic[d];
  }
  return added;
}

void cpl_rows_part(hsize_t n, int part, int nparts, hsize_t *start, hsize_t *count) {
  if (!start || !count) return;
  if (nparts < 1 || part < 0 || part >= nparts) { /* no such part: no rows */
    *start = *count = 0;
    return;
  }
  /* The first n % nparts parts get one extra row; no n * part overflow. */
  const hsize_t q = n / (hsize_t)nparts, r = n % (hsize_t)nparts;
  const hsize_t k = (hsize_t)part;
  *start = q * k + (k < r ? k : r);
  *count = q + (k < r ? 1 : 0);
}

/* ---------------------------------------------------------- selections */

static void item_free(cpli_sel_item *it) {
  free(it->dataset);
  cpli_boxes_free(&it->boxes);
}

void cpli_sel_clear(cpli_sel *s) {
  for (int i = 0; i < s->n; i++) item_free(&s->v[i]);
  s->n = 0;
  s->active = 0;
  cpli_index_reset(&s->names);
}

void cpli_sel_free(cpli_sel *s) {
  cpli_sel_clear(s);
  free(s->v);
  cpli_index_free(&s->names);
  *s = (cpli_sel){0};
}

static int same_name(const char *a, const char *b) {
  return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The index of the item of `dataset` (NULL: the default), or -1. No
 * dataset is named "", so the default goes under the hash of "". */
static int item_find(const cpli_sel *s, const char *dataset) {
  const uint64_t h = cpli_name_hash(dataset ? dataset : "");
  size_t probe = 0;
  for (int k; (k = cpli_index_next(&s->names, h, &probe)) >= 0;)
    if (same_name(s->v[k].dataset, dataset)) return k;
  return -1;
}

/* The item of `dataset`, emptied for reuse, or a new one; NULL: no memory. */
static cpli_sel_item *item_for(cpli_sel *s, const char *dataset) {
  const int k = item_find(s, dataset);
  if (k >= 0) {
    cpli_boxes_free(&s->v[k].boxes);
    return &s->v[k];
  }
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 4;
    cpli_sel_item *v = realloc(s->v, (size_t)cap * sizeof *v);
    if (!v) return NULL;
    s->v = v;
    s->cap = cap;
  }
  cpli_sel_item *it = &s->v[s->n];
  *it = (cpli_sel_item){0};
  if ((dataset && !(it->dataset = strdup(dataset))) ||
      cpli_index_add(&s->names, cpli_name_hash(dataset ? dataset : ""), s->n) < 0) {
    free(it->dataset);
    it->dataset = NULL;
    return NULL;
  }
  s->n++;
  return it;
}

/* Add box (s, c) to the disjoint list: only what no earlier piece covers. */
static int add_disjoint(cpli_boxes *pieces, const hsize_t *s, const hsize_t *c) {
  cpli_boxes frag = {.rank = pieces->rank}, next = {.rank = pieces->rank};
  int rc = cpli_boxes_add(&frag, s, c);
  int r = pieces->rank;
  for (int p = 0; rc == 0 && p < pieces->n && frag.n > 0; p++) {
    cpli_boxes_reset(&next, r);
    for (int f = 0; rc == 0 && f < frag.n; f++)
      if (cpli_box_subtract(r, frag.start + (size_t)f * r, frag.count + (size_t)f * r,
                            pieces->start + (size_t)p * r, pieces->count + (size_t)p * r,
                            &next) < 0)
        rc = -1;
    cpli_boxes t = frag;
    frag = next;
    next = t;
  }
  for (int f = 0; rc == 0 && f < frag.n; f++)
    if (cpli_boxes_add(pieces, frag.start + (size_t)f * r, frag.count + (size_t)f * r) < 0) rc = -1;
  cpli_boxes_free(&frag);
  cpli_boxes_free(&next);
  return rc;
}

int cpli_sel_set_boxes(cpli_sel *s, const char *dataset, int ndims, int nboxes,
                       const hsize_t *start, const hsize_t *count) {
  if (ndims < 1 || ndims > MAXR)
    return cpli_fail(CPL_ERR_ARG, "ndims %d is not in 1..%d", ndims, MAXR);
  if (nboxes < 0 || (nboxes > 0 && (!start || !count)))
    return cpli_fail(CPL_ERR_ARG, "bad box list (%d boxes%s)", nboxes,
                     nboxes > 0 ? ", start or count NULL" : "");
  for (int b = 0; b < nboxes; b++)
    for (int d = 0; d < ndims; d++) {
      size_t i = (size_t)b * (size_t)ndims + (size_t)d;
      if (count[i] > (hsize_t)-1 - start[i])
        return cpli_fail(CPL_ERR_ARG,
                         "box %d: start + count overflows in "
                         "dimension %d",
                         b, d);
    }
  cpli_boxes pieces = {.rank = ndims};
  int rc = 0;
  for (int b = 0; rc == 0 && b < nboxes; b++) {
    const hsize_t *bs = start + (size_t)b * ndims, *bc = count + (size_t)b * ndims;
    uint64_t v = 1;
    for (int d = 0; d < ndims; d++) v = bc[d] ? v : 0;
    if (v == 0) continue; /* an empty box reads nothing */
    rc = add_disjoint(&pieces, bs, bc);
    if (rc == 0 && pieces.n > CPLI_SEL_MAX_PIECES) {
      /* Say how many, not that they overlap: disjoint boxes count alike. */
      const int n = pieces.n;
      cpli_boxes_free(&pieces);
      char first[48] = "";
      if (b + 1 < nboxes) snprintf(first, sizeof first, "the first %d of ", b + 1);
      return cpli_fail(CPL_ERR_ARG,
                       "%s%d boxes make %d disjoint pieces, more than the %d a selection may "
                       "have (overlapping boxes are cut into disjoint pieces)",
                       first, nboxes, n, CPLI_SEL_MAX_PIECES);
    }
  }
  cpli_sel_item *it = rc == 0 ? item_for(s, dataset) : NULL;
  if (!it) {
    cpli_boxes_free(&pieces);
    return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  }
  it->kind = CPLI_SEL_BOXES;
  it->boxes = pieces;
  s->active = 1;
  return CPL_OK;
}

int cpli_sel_set_rows(cpli_sel *s, const char *dataset, int part, int nparts) {
  if (nparts < 1 || part < 0 || part >= nparts)
    return cpli_fail(CPL_ERR_ARG,
                     "part %d of %d parts: need 0 <= part < "
                     "nparts",
                     part, nparts);
  cpli_sel_item *it = item_for(s, dataset);
  if (!it) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  it->kind = CPLI_SEL_ROWS;
  it->part = part;
  it->nparts = nparts;
  s->active = 1;
  return CPL_OK;
}

int cpli_sel_copy(const cpli_sel *src, cpli_sel *dst) {
  cpli_sel_clear(dst);
  dst->active = src->active;
  for (int i = 0; i < src->n; i++) {
    const cpli_sel_item *a = &src->v[i];
    cpli_sel_item *b = item_for(dst, a->dataset);
    if (!b) return cpli_fail(CPL_ERR_NOMEM, "out of memory");
    b->kind = a->kind;
    b->part = a->part;
    b->nparts = a->nparts;
    b->boxes.rank = a->boxes.rank;
    for (int k = 0; k < a->boxes.n; k++)
      if (cpli_boxes_add(&b->boxes, a->boxes.start + (size_t)k * a->boxes.rank,
                         a->boxes.count + (size_t)k * a->boxes.rank) < 0)
        return cpli_fail(CPL_ERR_NOMEM, "out of memory");
  }
  return CPL_OK;
}

int cpli_sel_pieces(const cpli_sel *s, const char *name, int rank, const hsize_t *dims,
                    cpli_boxes *out) {
  cpli_boxes_reset(out, rank);
  hsize_t zero[MAXR] = {0}, cs[MAXR], cc[MAXR];
  for (int d = 0; d < rank; d++)
    if (dims[d] == 0) return 0; /* an empty array has no pieces */
  if (!s->active) return cpli_boxes_add(out, zero, dims);
  int k = item_find(s, name);
  if (k < 0) k = item_find(s, NULL); /* the default */
  if (k < 0) return 0;
  const cpli_sel_item *it = &s->v[k];
  if (it->kind == CPLI_SEL_ROWS) {
    memcpy(cs, zero, (size_t)rank * sizeof *cs);
    memcpy(cc, dims, (size_t)rank * sizeof *cc);
    cpl_rows_part(dims[0], it->part, it->nparts, &cs[0], &cc[0]);
    return cc[0] ? cpli_boxes_add(out, cs, cc) : 0;
  }
  if (it->boxes.rank != rank) return 0; /* boxes of another rank read nothing */
  for (int k = 0; k < it->boxes.n; k++)
    if (cpli_box_intersect(rank, it->boxes.start + (size_t)k * rank,
                           it->boxes.count + (size_t)k * rank, zero, dims, cs, cc) &&
        cpli_boxes_add(out, cs, cc) < 0)
      return -1;
  return 0;
}

int cpli_sel_boxes_rank(const cpli_sel *s, const char *name, int *dflt) {
  int k = item_find(s, name);
  *dflt = k < 0;
  if (k < 0) k = item_find(s, NULL);
  if (k < 0 || s->v[k].kind != CPLI_SEL_BOXES) return 0;
  /* A default of no boxes reads nothing of any dataset, whatever its ndims. */
  return *dflt && s->v[k].boxes.n == 0 ? 0 : s->v[k].boxes.rank;
}

/* ---------------------------------------------------------------- wire */

void cpli_sel_encode(const cpli_sel *s, cpli_wbuf *w) {
  cpli_w_u32(w, (uint32_t)s->active);
  cpli_w_u32(w, (uint32_t)s->n);
  for (int i = 0; i < s->n; i++) {
    const cpli_sel_item *it = &s->v[i];
    cpli_w_u32(w, it->dataset != NULL);
    cpli_w_str(w, it->dataset ? it->dataset : "");
    cpli_w_u32(w, (uint32_t)it->kind);
    if (it->kind == CPLI_SEL_ROWS) {
      cpli_w_u32(w, (uint32_t)it->part);
      cpli_w_u32(w, (uint32_t)it->nparts);
      continue;
    }
    cpli_w_u32(w, (uint32_t)it->boxes.rank);
    cpli_w_u32(w, (uint32_t)it->boxes.n);
    size_t n = (size_t)it->boxes.n * (size_t)it->boxes.rank;
    for (size_t k = 0; k < n; k++) {
      cpli_w_u64(w, it->boxes.start[k]);
      cpli_w_u64(w, it->boxes.count[k]);
    }
  }
}

void cpli_sel_decode(cpli_rbuf *r, cpli_sel *out) {
  cpli_sel_clear(out);
  uint32_t active = cpli_r_u32(r), n = cpli_r_u32(r);
  if (active > 1 || n > 65536) r->bad = 1;
  for (uint32_t i = 0; !r->bad && i < n; i++) {
    uint32_t named = cpli_r_u32(r);
    const char *name = cpli_r_str(r);
    uint32_t kind = cpli_r_u32(r);
    if (r->bad || named > 1) break;
    if (kind == CPLI_SEL_ROWS) {
      uint32_t part = cpli_r_u32(r), nparts = cpli_r_u32(r);
      if (r->bad || nparts < 1 || nparts > INT32_MAX || part >= nparts ||
          cpli_sel_set_rows(out, named ? name : NULL, (int)part, (int)nparts))
        r->bad = 1;
      continue;
    }
    uint32_t rank = cpli_r_u32(r), nb = cpli_r_u32(r);
    if (kind != CPLI_SEL_BOXES || rank < 1 || rank > MAXR || nb > CPLI_SEL_MAX_PIECES ||
        (size_t)nb * rank * 16 > r->len - r->pos) {
      r->bad = 1;
      break;
    }
    cpli_sel_item *it = item_for(out, named ? name : NULL);
    if (!it) {
      r->bad = 1;
      break;
    }
    it->kind = CPLI_SEL_BOXES;
    it->boxes.rank = (int)rank;
    hsize_t s[MAXR], c[MAXR];
    for (uint32_t b = 0; !r->bad && b < nb; b++) {
      for (uint32_t d = 0; d < rank; d++) {
        s[d] = cpli_r_u64(r);
        c[d] = cpli_r_u64(r);
        if (c[d] > (hsize_t)-1 - s[d]) r->bad = 1;
      }
      if (!r->bad && cpli_boxes_add(&it->boxes, s, c) < 0) r->bad = 1;
    }
  }
  out->active = !r->bad && active;
}
