/* A small YAML document tree built from libyaml events, with limits.
 *
 * libyaml's own document loader expands aliases into shared nodes (and builds
 * cycles from `&a [*a]`), has no depth or size bound, and loses nothing we
 * need here; so we read events and build our own tree, rejecting anchors and
 * aliases and stopping at the first structural problem. */
#ifndef CPLI_WORKFLOW_YTREE_H
#define CPLI_WORKFLOW_YTREE_H

#include <stddef.h>

#include "workflow/diag.h"

#define CPLI_Y_MAX_BYTES (1024 * 1024) /* largest workflow file */
#define CPLI_Y_MAX_DEPTH 32            /* deepest nesting       */
#define CPLI_Y_MAX_NODES 200000        /* most nodes in a file  */

typedef enum cpli_ykind { CPLI_Y_SCALAR, CPLI_Y_SEQ, CPLI_Y_MAP } cpli_ykind;

/* A scalar's core tag (!!str, ...), in tag_ok's order; NONE: untagged. */
typedef enum cpli_ytag {
  CPLI_YTAG_NONE,
  CPLI_YTAG_STR,
  CPLI_YTAG_INT,
  CPLI_YTAG_FLOAT,
  CPLI_YTAG_BOOL,
  CPLI_YTAG_NULL
} cpli_ytag;

typedef struct cpli_ynode {
  cpli_ykind kind;
  int line, col; /* 1-based start of the node             */
  int bad;       /* an alias or a refused tag: already reported */
  /* scalar */
  char *str;  /* NUL-terminated copy                   */
  size_t len; /* may differ from strlen: "\0" escapes  */
  int quoted; /* any quoting or block style (or !!str)  */
  cpli_ytag tag;
  /* sequence: items[i]; mapping: items[2i] key, items[2i+1] value */
  struct cpli_ynode **items;
  size_t n, cap;
} cpli_ynode;

/* Parse buf into *root (NULL on failure). Errors go to d prefixed with
 * file. Returns CPL_OK, CPL_ERR_PARSE or CPL_ERR_NOMEM. Duplicate keys and
 * anchors are reported but do not stop the parse (*root is still built). */
int cpli_ytree_parse(const char *buf, size_t len, const char *file, cpl_diag *d, cpli_ynode **root);

void cpli_ytree_free(cpli_ynode *n);

/* Map helpers. */
static inline size_t cpli_ymap_size(const cpli_ynode *m) { return m->n / 2; }
static inline const cpli_ynode *cpli_ymap_key(const cpli_ynode *m, size_t i) {
  return m->items[2 * i];
}
static inline const cpli_ynode *cpli_ymap_val(const cpli_ynode *m, size_t i) {
  return m->items[2 * i + 1];
}
/* First value for key, or NULL. */
const cpli_ynode *cpli_ymap_get(const cpli_ynode *m, const char *key);

/* Sort scalars by text, then by position (duplicate checks in O(n log n):
 * equal texts end up adjacent, the first occurrence first). */
void cpli_y_sort_scalars(const cpli_ynode **v, size_t n);
int cpli_y_same_text(const cpli_ynode *a, const cpli_ynode *b);

/* A plain scalar that YAML reads as null: "", "~", "null". */
int cpli_y_is_null(const cpli_ynode *n);

#endif
