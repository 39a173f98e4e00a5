#include "workflow/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpl_diag_create(cpl_diag **out) {
  if (!out) return cpli_fail(CPL_ERR_ARG, "cpl_diag_create: out is NULL");
  *out = calloc(1, sizeof **out);
  if (!*out) return cpli_fail(CPL_ERR_NOMEM, "cpl_diag_create: out of memory");
  return CPL_OK;
}

void cpli_diag_reset(cpl_diag *d) {
  if (!d) return;
  for (int i = 0; i < d->n; i++) free(d->v[i].text);
  d->n = 0;
  d->dropped = 0;
  d->oom = 0;
}

void cpl_diag_destroy(cpl_diag *d) {
  if (!d) return;
  cpli_diag_reset(d);
  free(d->v);
  free(d);
}

int cpl_diag_count(const cpl_diag *d) { return d ? d->n : 0; }

int cpl_diag_total(const cpl_diag *d) { return d ? d->n + d->dropped + d->oom : 0; }

const char *cpl_diag_message(const cpl_diag *d, int i) {
  if (!d || i < 0 || i >= d->n) return "";
  return d->v[i].text;
}

void cpli_diag_add(cpl_diag *d, const char *file, int line, int col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cpli_diag_vadd(d, file, line, col, fmt, ap);
  va_end(ap);
}

void cpli_diag_vadd(cpl_diag *d, const char *file, int line, int col, const char *fmt, va_list ap) {
  if (!d) return;
  if (d->n >= CPLI_DIAG_MAX) {
    d->dropped++;
    return;
  }
  if (d->n == d->cap) {
    int cap = d->cap ? 2 * d->cap : 16;
    cpli_diag_entry *v = realloc(d->v, (size_t)cap * sizeof *v);
    if (!v) {
      d->oom++;
      return;
    }
    d->v = v;
    d->cap = cap;
  }
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  char head[512];
  if (line > 0) snprintf(head, sizeof head, "%s:%d:%d: ", file, line, col);
  else snprintf(head, sizeof head, "%s: ", file);
  size_t n = strlen(head) + strlen(msg) + 1;
  char *text = malloc(n);
  if (!text) {
    d->oom++;
    return;
  }
  snprintf(text, n, "%s%s", head, msg);
  d->v[d->n++] = (cpli_diag_entry){line, col, text};
}

/* Insertion sort: lists are short (<= CPLI_DIAG_MAX) and it is stable. */
void cpli_diag_sort(cpl_diag *d, int from) {
  if (!d) return;
  for (int i = from + 1; i < d->n; i++) {
    cpli_diag_entry e = d->v[i];
    int j = i;
    while (j > from &&
           (d->v[j - 1].line > e.line || (d->v[j - 1].line == e.line && d->v[j - 1].col > e.col))) {
      d->v[j] = d->v[j - 1];
      j--;
    }
    d->v[j] = e;
  }
}
