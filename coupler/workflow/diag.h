/* A list of positioned diagnostics ("file:line:col: message").
 * The parser and validator collect every error instead of stopping at the
 * first, so a user fixes a workflow file in one round trip. */
#ifndef CPLI_WORKFLOW_DIAG_H
#define CPLI_WORKFLOW_DIAG_H

#include <stddef.h>

#include "core/error.h"
#include "coupler.h"

/* Errors past this many are counted, not stored: a garbage file must not
 * turn into megabytes of messages. */
#define CPLI_DIAG_MAX 100

typedef struct cpli_diag_entry {
  int line, col; /* 1-based; 0 when the error concerns the whole file */
  char *text;    /* full "file:line:col: message" */
} cpli_diag_entry;

struct cpl_diag {
  cpli_diag_entry *v;
  int n, cap;
  int dropped; /* errors beyond CPLI_DIAG_MAX */
  int oom;     /* a message was lost to an allocation failure */
};

/* Record one error at file:line:col. */
void cpli_diag_add(cpl_diag *d, const char *file, int line, int col, const char *fmt, ...)
    CPLI_PRINTF(5, 6);

#include <stdarg.h>
void cpli_diag_vadd(cpl_diag *d, const char *file, int line, int col, const char *fmt, va_list ap)
    CPLI_PRINTF(5, 0);

/* Sort messages from..n-1 by position (stable) so the output reads top to
 * bottom; those before `from` (a caller's earlier loads) stay as they are. */
void cpli_diag_sort(cpl_diag *d, int from);

/* Empty the list (keeps the allocation). */
void cpli_diag_reset(cpl_diag *d);

#endif
