/* What the built-in components print when all goes well (README.md here,
 * "Output"): CPL_VERBOSE, set in the component's env:, is 0 (nothing), 1
 * (the default: one summary line when the component is done) or 2 (also a
 * line per step). Rank 0 of the component prints, on stdout. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters.h"
#include "core/error.h"

static int level = 1;
static double t0;

int cpli_report_init(void) {
  t0 = MPI_Wtime();
  const char *v = getenv("CPL_VERBOSE");
  if (!v || !*v) return CPL_OK;
  if (strlen(v) != 1 || v[0] < '0' || v[0] > '2')
    return cpli_fail(CPL_ERR_ENV,
                     "CPL_VERBOSE=\"%s\": expected 0 (quiet), 1 "
                     "(a summary line, the default) or 2 (also a line per step)",
                     v);
  level = v[0] - '0';
  return CPL_OK;
}

double cpli_report_elapsed(void) { return MPI_Wtime() - t0; }

int cpli_report_level(void) { return level; }

void cpli_report(int at_level, const char *component, int rank, const char *fmt, ...) {
  if (rank != 0 || level < at_level) return;
  /* One write of the whole line: three printf calls on an unbuffered
   * stdout were three writes, and another process's line could land
   * between them (seen: "cpl-component[relay]: consumer: ..."). */
  char line[8192];
  va_list ap;
  va_start(ap, fmt);
  int o = snprintf(line, sizeof line - 1, "cpl-component[%s]: ", component);
  if (o >= 0 && o < (int)sizeof line - 1) vsnprintf(line + o, sizeof line - 1 - (size_t)o, fmt, ap);
  va_end(ap);
  size_t n = strlen(line);
  line[n] = '\n';
  fwrite(line, 1, n + 1, stdout);
  fflush(stdout);
}

const char *cpli_report_bytes(double bytes, char *buf, size_t n) {
  static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
  snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
  return buf;
}
