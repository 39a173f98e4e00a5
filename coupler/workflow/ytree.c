#include "workflow/ytree.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct builder {
  const char *file;
  cpl_diag *d;
  cpli_ynode *root;
  cpli_ynode *stack[CPLI_Y_MAX_DEPTH + 1];
  int depth;
  long nodes;
  int docs;
  int fatal;            /* status that stops the parse */
  int anchors, aliases; /* reported once each: an alias bomb is one error */
} builder;

static cpli_ynode *node_new(builder *b, cpli_ykind kind, yaml_mark_t m) {
  if (++b->nodes > CPLI_Y_MAX_NODES) {
    cpli_diag_add(b->d, b->file, (int)m.line + 1, (int)m.column + 1,
                  "too many YAML nodes (limit %d)", CPLI_Y_MAX_NODES);
    b->fatal = CPL_ERR_PARSE;
    return NULL;
  }
  cpli_ynode *n = calloc(1, sizeof *n);
  if (!n) {
    b->fatal = CPL_ERR_NOMEM;
    return NULL;
  }
  n->kind = kind;
  n->line = (int)m.line + 1;
  n->col = (int)m.column + 1;
  return n;
}

void cpli_ytree_free(cpli_ynode *n) {
  if (!n) return;
  for (size_t i = 0; i < n->n; i++) cpli_ytree_free(n->items[i]);
  free(n->items);
  free(n->str);
  free(n);
}

static int push_item(cpli_ynode *parent, cpli_ynode *child) {
  if (parent->n == parent->cap) {
    size_t cap = parent->cap ? 2 * parent->cap : 4;
    cpli_ynode **v = realloc(parent->items, cap * sizeof *v);
    if (!v) return CPL_ERR_NOMEM;
    parent->items = v;
    parent->cap = cap;
  }
  parent->items[parent->n++] = child;
  return CPL_OK;
}

const cpli_ynode *cpli_ymap_get(const cpli_ynode *m, const char *key) {
  if (!m || m->kind != CPLI_Y_MAP) return NULL;
  for (size_t i = 0; i < cpli_ymap_size(m); i++) {
    const cpli_ynode *k = cpli_ymap_key(m, i);
    if (k->kind == CPLI_Y_SCALAR && strcmp(k->str, key) == 0) return cpli_ymap_val(m, i);
  }
  return NULL;
}

int cpli_y_is_null(const cpli_ynode *n) {
  return n && n->kind == CPLI_Y_SCALAR && !n->quoted && !n->bad &&
         (n->tag == CPLI_YTAG_NULL || n->len == 0 || strcmp(n->str, "~") == 0 ||
          strcmp(n->str, "null") == 0 || strcmp(n->str, "Null") == 0 ||
          strcmp(n->str, "NULL") == 0);
}

/* Attach a finished or just-opened node to the open container (or make it
 * the root). Keys of a mapping must be scalars (duplicates: close_map). */
static void attach(builder *b, cpli_ynode *n) {
  if (b->depth == 0) {
    b->root = n;
    return;
  }
  cpli_ynode *top = b->stack[b->depth - 1];
  int is_key = top->kind == CPLI_Y_MAP && top->n % 2 == 0;
  if (is_key && n->kind != CPLI_Y_SCALAR) {
    cpli_diag_add(b->d, b->file, n->line, n->col, "mapping keys must be plain strings, got a %s",
                  n->kind == CPLI_Y_MAP ? "mapping" : "list");
    b->fatal = CPL_ERR_PARSE;
  }
  if (push_item(top, n) != CPL_OK) {
    cpli_ytree_free(n);
    b->fatal = CPL_ERR_NOMEM;
  }
}

/* Text, then position: equal scalars end up adjacent, the first one first. */
static int cmp_scalar(const void *pa, const void *pb) {
  const cpli_ynode *a = *(const cpli_ynode *const *)pa, *b = *(const cpli_ynode *const *)pb;
  int c = memcmp(a->str, b->str, a->len < b->len ? a->len : b->len);
  if (c) return c;
  if (a->len != b->len) return a->len < b->len ? -1 : 1;
  if (a->line != b->line) return a->line < b->line ? -1 : 1;
  return (a->col > b->col) - (a->col < b->col);
}

void cpli_y_sort_scalars(const cpli_ynode **v, size_t n) { qsort(v, n, sizeof *v, cmp_scalar); }

int cpli_y_same_text(const cpli_ynode *a, const cpli_ynode *b) {
  return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
}

/* Report each repeated key of a mapping at the repeat, naming the first.
 * Sorting keeps it O(n log n): a mapping may hold 100,000 keys. */
static void close_map(builder *b, const cpli_ynode *m) {
  size_t n = cpli_ymap_size(m), k = 0;
  if (n < 2) return;
  const cpli_ynode **v = malloc(n * sizeof *v);
  if (!v) {
    b->fatal = CPL_ERR_NOMEM;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    const cpli_ynode *key = cpli_ymap_key(m, i);
    if (key->kind == CPLI_Y_SCALAR && !key->bad) v[k++] = key;
  }
  cpli_y_sort_scalars(v, k);
  for (size_t i = 1, first = 0; i < k; i++) {
    if (!cpli_y_same_text(v[first], v[i])) {
      first = i;
      continue;
    }
    /* Keys are arbitrary text: print a tame, bounded copy. */
    const cpli_ynode *dup = v[i];
    char shown[48];
    size_t j = 0;
    for (; j < dup->len && j + 1 < sizeof shown; j++) {
      unsigned char c = (unsigned char)dup->str[j];
      shown[j] = c >= 0x20 && c != 0x7f && c != '"' ? (char)c : '?';
    }
    shown[j] = '\0';
    cpli_diag_add(b->d, b->file, dup->line, dup->col, "duplicate key \"%s%s\" (first at %d:%d)",
                  shown, j < dup->len ? "..." : "", v[first]->line, v[first]->col);
  }
  free(v);
}

static void close_container(builder *b) {
  cpli_ynode *top = b->stack[--b->depth];
  if (top->kind == CPLI_Y_MAP) close_map(b, top);
}

static void anchor_error(builder *b, const yaml_mark_t *m, const yaml_char_t *anchor) {
  if (!anchor || b->anchors++) return;
  cpli_diag_add(b->d, b->file, (int)m->line + 1, (int)m->column + 1,
                "anchors (&%.40s) are not supported: write the value out", (const char *)anchor);
}

/* Tags of the YAML core schema are all a workflow may carry; !!str makes
 * a scalar a string (so `nprocs: !!str 4` is refused like "4"); the others
 * are kept for the schema (!!float 4 is no integer, !!null 2 is null). Any other
 * tag (!!python/object, !local, ...) would change what a value means to
 * another reader: refused. Returns 1 if the tag is fine. */
static int tag_ok(builder *b, const yaml_mark_t *m, const yaml_char_t *tag, cpli_ykind kind,
                  cpli_ytag *core_tag) {
  static const char core[] = "tag:yaml.org,2002:";
  static const char *const scalars[] = {"str", "int", "float", "bool", "null"};
  if (!tag) return 1;
  const char *t = (const char *)tag;
  const char *want = NULL;
  if (!strncmp(t, core, sizeof core - 1)) {
    const char *name = t + sizeof core - 1;
    if (kind == CPLI_Y_MAP && !strcmp(name, "map")) return 1;
    if (kind == CPLI_Y_SEQ && !strcmp(name, "seq")) return 1;
    for (size_t i = 0; kind == CPLI_Y_SCALAR && i < 5; i++)
      if (!strcmp(name, scalars[i])) {
        if (core_tag) *core_tag = (cpli_ytag)(i + 1); /* scalars[] in cpli_ytag order */
        return 1;
      }
    want = kind == CPLI_Y_MAP   ? "!!map"
           : kind == CPLI_Y_SEQ ? "!!seq"
                                : "!!str, !!int, "
                                  "!!float, !!bool "
                                  "or !!null";
    cpli_diag_add(b->d, b->file, (int)m->line + 1, (int)m->column + 1,
                  "YAML tag !!%.40s is not allowed here: a %s takes no tag "
                  "or %s",
                  name,
                  kind == CPLI_Y_MAP   ? "mapping"
                  : kind == CPLI_Y_SEQ ? "list"
                                       : "scalar",
                  want);
  } else {
    cpli_diag_add(b->d, b->file, (int)m->line + 1, (int)m->column + 1,
                  "YAML tag %.60s is not supported: a workflow file uses "
                  "only the core tags (!!str, !!int, ...)",
                  t);
  }
  return 0;
}

static void open_container(builder *b, cpli_ykind kind, const yaml_event_t *ev) {
  if (b->depth >= CPLI_Y_MAX_DEPTH) {
    cpli_diag_add(b->d, b->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                  "nesting deeper than %d levels", CPLI_Y_MAX_DEPTH);
    b->fatal = CPL_ERR_PARSE;
    return;
  }
  const yaml_char_t *anchor =
      kind == CPLI_Y_MAP ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
  anchor_error(b, &ev->start_mark, anchor);
  const yaml_char_t *tag =
      kind == CPLI_Y_MAP ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
  int tag_bad = !tag_ok(b, &ev->start_mark, tag, kind, NULL);
  cpli_ynode *n = node_new(b, kind, ev->start_mark);
  if (!n) return;
  n->bad = tag_bad; /* reported: no follow-on errors */
  attach(b, n);
  if (b->fatal) return;
  b->stack[b->depth++] = n;
}

static void scalar(builder *b, const yaml_event_t *ev) {
  anchor_error(b, &ev->start_mark, ev->data.scalar.anchor);
  cpli_ynode *n = node_new(b, CPLI_Y_SCALAR, ev->start_mark);
  if (!n) return;
  n->len = ev->data.scalar.length;
  n->str = malloc(n->len + 1);
  if (!n->str) {
    free(n);
    b->fatal = CPL_ERR_NOMEM;
    return;
  }
  memcpy(n->str, ev->data.scalar.value, n->len);
  n->str[n->len] = '\0';
  n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
  if (!tag_ok(b, &ev->start_mark, ev->data.scalar.tag, CPLI_Y_SCALAR, &n->tag))
    n->bad = 1; /* reported: no follow-on errors */
  if (n->tag == CPLI_YTAG_STR) n->quoted = 1;
  attach(b, n);
}

/* An alias becomes a placeholder node marked bad, so the validator neither
 * expands it nor reports it a second time. */
static void alias(builder *b, const yaml_event_t *ev) {
  if (!b->aliases++) {
    cpli_diag_add(b->d, b->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                  "aliases (*%.40s) are not supported: write the value out",
                  (const char *)ev->data.alias.anchor);
  }
  cpli_ynode *n = node_new(b, CPLI_Y_SCALAR, ev->start_mark);
  if (!n) return;
  n->bad = 1;
  n->str = calloc(1, 1);
  if (!n->str) {
    free(n);
    b->fatal = CPL_ERR_NOMEM;
    return;
  }
  attach(b, n);
}

/* line:col of a byte offset (columns count characters, as libyaml's do,
 * which skips a leading UTF-8 byte-order mark). */
static void offset_pos(const char *buf, size_t len, size_t off, int *line, int *col) {
  *line = *col = 1;
  const size_t bom = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
  for (size_t i = bom; i < off && i < len; i++) {
    unsigned char c = (unsigned char)buf[i];
    if (c == '\n') {
      ++*line;
      *col = 1;
    } else if ((c & 0xc0) != 0x80) {
      ++*col;
    }
  }
}

/* The byte at line:col (as offset_pos counts), or NULL past the end. */
static const char *char_at(const char *buf, size_t len, int line, int col) {
  const char *p = buf, *end = buf + len;
  if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) p += 3; /* as offset_pos */
  for (int l = 1; l < line && p < end; l++) {
    p = memchr(p, '\n', (size_t)(end - p));
    if (!p) return NULL;
    p++;
  }
  for (int c = 1; p < end && *p != '\n'; p++)
    if (((unsigned char)*p & 0xc0) != 0x80 && c++ == col) return p;
  return NULL;
}

static void syntax_error(builder *b, const yaml_parser_t *p, const char *buf, size_t len) {
  if (p->error == YAML_MEMORY_ERROR) {
    b->fatal = CPL_ERR_NOMEM;
    return;
  }
  const char *problem = p->problem ? p->problem : "malformed input";
  int line = (int)p->problem_mark.line + 1;
  int col = (int)p->problem_mark.column + 1;
  if (p->error == YAML_READER_ERROR) {
    /* Encoding errors carry a byte offset, not a mark: point at the byte. */
    offset_pos(buf, len, p->problem_offset, &line, &col);
    int v = p->problem_value;
    cpli_diag_add(b->d, b->file, line, col,
                  "%s (byte 0x%02x): a workflow "
                  "file must be UTF-8 text without control characters",
                  problem, v >= 0 && v < 256 ? v : 0);
  } else {
    /* libyaml says "found character that cannot start any token" at a
     * tab, without naming it. */
    const char *at = char_at(buf, len, line, col);
    const char *tab = at && *at == '\t' && !strstr(problem, "tab")
                          ? " (a tab: YAML indents with spaces only)"
                          : "";
    if (p->context)
      cpli_diag_add(b->d, b->file, line, col, "YAML syntax error: %s (%s at %d:%d)%s", problem,
                    p->context, (int)p->context_mark.line + 1, (int)p->context_mark.column + 1,
                    tab);
    else cpli_diag_add(b->d, b->file, line, col, "YAML syntax error: %s%s", problem, tab);
  }
  b->fatal = CPL_ERR_PARSE;
}

/* Checks libyaml would report less clearly, or not at all. */
static int precheck(const char *buf, size_t len, builder *b) {
  if (len > CPLI_Y_MAX_BYTES) {
    cpli_diag_add(b->d, b->file, 0, 0, "file is %zu bytes; a workflow file may have at most %d",
                  len, CPLI_Y_MAX_BYTES);
    return CPL_ERR_PARSE;
  }
  /* UTF-16 (Windows' "Unicode", PowerShell's > redirect) is text with NUL
   * bytes in it: name the encoding rather than the first NUL. */
  const unsigned char *u = (const unsigned char *)buf;
  if (len >= 2 && ((u[0] == 0xff && u[1] == 0xfe) || (u[0] == 0xfe && u[1] == 0xff))) {
    cpli_diag_add(b->d, b->file, 1, 1,
                  "the file is UTF-16 (it starts with the byte-order mark %02X %02X): a "
                  "workflow file must be UTF-8 (convert it, e.g. iconv -f UTF-16 -t UTF-8)",
                  u[0], u[1]);
    return CPL_ERR_PARSE;
  }
  const char *nul = memchr(buf, '\0', len);
  if (nul) {
    int line, col; /* in characters, as every other position */
    offset_pos(buf, len, (size_t)(nul - buf), &line, &col);
    cpli_diag_add(b->d, b->file, line, col, "NUL byte in file: a workflow file must be text");
    return CPL_ERR_PARSE;
  }
  return CPL_OK;
}

int cpli_ytree_parse(const char *buf, size_t len, const char *file, cpl_diag *d,
                     cpli_ynode **root) {
  builder b = {.file = file, .d = d};
  *root = NULL;
  int rc = precheck(buf, len, &b);
  if (rc != CPL_OK) return rc;

  yaml_parser_t p;
  if (!yaml_parser_initialize(&p)) return CPL_ERR_NOMEM;
  yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
  int done = 0;
  while (!done && !b.fatal) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&p, &ev)) {
      syntax_error(&b, &p, buf, len);
      break;
    }
    switch (ev.type) {
    case YAML_DOCUMENT_START_EVENT:
      if (++b.docs > 1) {
        cpli_diag_add(d, file, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                      "a second YAML document: a workflow file holds one");
        b.fatal = CPL_ERR_PARSE;
      }
      break;
    case YAML_MAPPING_START_EVENT: open_container(&b, CPLI_Y_MAP, &ev); break;
    case YAML_SEQUENCE_START_EVENT: open_container(&b, CPLI_Y_SEQ, &ev); break;
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
      if (b.depth > 0) close_container(&b);
      break;
    case YAML_SCALAR_EVENT: scalar(&b, &ev); break;
    case YAML_ALIAS_EVENT: alias(&b, &ev); break;
    case YAML_STREAM_END_EVENT: done = 1; break;
    default: break;
    }
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&p);
  while (b.depth > 0) close_container(&b); /* after an error: duplicates so far */
  if (b.fatal) {
    cpli_ytree_free(b.root);
    return b.fatal;
  }
  *root = b.root;
  return CPL_OK;
}
