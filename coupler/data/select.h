/*
 * Selections for selective delivery, pure: what one consumer rank reads of
 * each dataset, as disjoint boxes, and its wire form.
 *
 * A rank's selection is either inactive (it reads every dataset whole) or a
 * list of items, each naming a dataset (or none: the default for datasets
 * without an item of their own) and giving boxes or a share of rows.
 * Declared boxes are made disjoint when declared (a later box minus the
 * earlier ones), so overlapping boxes never move an element twice, and are
 * clipped to the dataset's dims when a step resolves them. Producer and
 * consumer resolve the same encoded selection with the same code, so both
 * ends of a redistribution see the same pieces in the same order.
 */
#ifndef CPLI_DATA_SELECT_H
#define CPLI_DATA_SELECT_H

#include <hdf5.h>

#include "core/index.h"
#include "coupler.h"

#include "data/wire.h"

#define CPLI_SEL_MAX_PIECES 4096 /* disjoint pieces of one item */

/* A growable list of boxes of one rank (dimension count). */
typedef struct cpli_boxes {
  int rank, n;
  size_t room;            /* values allocated in start and count each */
  hsize_t *start, *count; /* n x rank each */
} cpli_boxes;

void cpli_boxes_free(cpli_boxes *b);
void cpli_boxes_reset(cpli_boxes *b, int rank);
/* Append a box; -1 when out of memory. */
int cpli_boxes_add(cpli_boxes *b, const hsize_t *start, const hsize_t *count);

/* The intersection of two boxes into (s, c); 1 if it is not empty. */
int cpli_box_intersect(int rank, const hsize_t *s1, const hsize_t *c1, const hsize_t *s2,
                       const hsize_t *c2, hsize_t *s, hsize_t *c);

/* Box (bs, bc) minus box (ps, pc) as at most 2 x rank disjoint boxes,
 * appended to out. Returns the number appended, -1 out of memory. */
int cpli_box_subtract(int rank, const hsize_t *bs, const hsize_t *bc, const hsize_t *ps,
                      const hsize_t *pc, cpli_boxes *out);

/* Row shares: cpl_rows_part (coupler.h). */

enum { CPLI_SEL_BOXES = 1, CPLI_SEL_ROWS = 2 };

typedef struct cpli_sel_item {
  char *dataset; /* NULL: the default                              */
  int kind;
  cpli_boxes boxes; /* BOXES: disjoint, in declaration order          */
  int part, nparts; /* ROWS                                           */
} cpli_sel_item;

typedef struct cpli_sel {
  int active; /* 0: every dataset whole                         */
  int n, cap;
  cpli_sel_item *v;
  cpli_index names; /* v by dataset (the default under "")     */
} cpli_sel;

void cpli_sel_free(cpli_sel *s);
/* Back to inactive. */
void cpli_sel_clear(cpli_sel *s);
int cpli_sel_copy(const cpli_sel *src, cpli_sel *dst);

/* Set (replace) the item of `dataset` (NULL: the default). Boxes: nboxes x
 * ndims starts and counts; returns a cpl_status with the message set. */
int cpli_sel_set_boxes(cpli_sel *s, const char *dataset, int ndims, int nboxes,
                       const hsize_t *start, const hsize_t *count);
int cpli_sel_set_rows(cpli_sel *s, const char *dataset, int part, int nparts);

/* The disjoint, clipped, non-empty pieces of dataset (name, rank, dims) the
 * selection reads, into out (reset first): the whole array when inactive;
 * nothing when no item applies. -1 when out of memory. */
int cpli_sel_pieces(const cpli_sel *s, const char *name, int rank, const hsize_t *dims,
                    cpli_boxes *out);

/* The dimensions of the boxes that apply to dataset `name`: its own
 * item's, else (*dflt set) the default's; 0 for rows, no item, or a
 * default of no boxes. Boxes of other dimensions than the dataset's
 * select nothing of it. */
int cpli_sel_boxes_rank(const cpli_sel *s, const char *name, int *dflt);

void cpli_sel_encode(const cpli_sel *s, cpli_wbuf *w);
/* Decode one selection; a malformed one sets r->bad. */
void cpli_sel_decode(cpli_rbuf *r, cpli_sel *out);

#endif
