#define _XOPEN_SOURCE 700 /* link, mkstemp */
#include "core/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct cpli_trace {
  int fd;
  int chrome;
};

const char *cpli_trace_spec(const char *yaml) {
  const char *env = getenv("CPL_TRACE");
  return env ? env : yaml;
}

static const char *file_of(const char *spec, int *chrome) {
  *chrome = strncmp(spec, "chrome:", 7) == 0;
  return *chrome ? spec + 7 : spec;
}

void cpli_trace_reset(const char *spec) {
  int chrome;
  if (spec && *spec) unlink(file_of(spec, &chrome));
}

/* Create the file holding `head` atomically: written under a temporary
 * name, then linked to the real one (which fails if another process was
 * first), so nobody appends to a file whose head is not written yet. */
static void create_with(const char *path, const char *head) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) return;
  int fd = mkstemp(tmp);
  if (fd < 0) return;
  ssize_t n = write(fd, head, strlen(head));
  close(fd);
  if (n == (ssize_t)strlen(head)) (void)link(tmp, path);
  unlink(tmp);
}

cpli_trace *cpli_trace_open(const char *spec) {
  if (!spec || !*spec) return NULL;
  int chrome;
  const char *path = file_of(spec, &chrome);
  if (access(path, F_OK) != 0) create_with(path, chrome ? "[\n" : "");
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  cpli_trace *t = fd >= 0 ? malloc(sizeof *t) : NULL;
  if (!t) {
    static int warned;
    if (!warned++)
      fprintf(stderr,
              "coupler: cannot open the trace file %s (%s): tracing "
              "is off\n",
              path, strerror(fd < 0 ? errno : ENOMEM));
    if (fd >= 0) close(fd);
    return NULL;
  }
  t->fd = fd;
  t->chrome = chrome;
  return t;
}

void cpli_trace_close(cpli_trace *t) {
  if (!t) return;
  close(t->fd);
  free(t);
}

int cpli_trace_chrome(const cpli_trace *t) { return t && t->chrome; }

void cpli_trace_line(cpli_trace *t, const char *line, size_t len) {
  if (!t) return;
  char buf[2048];
  if (len + 1 > sizeof buf) len = sizeof buf - 1;
  memcpy(buf, line, len);
  buf[len] = '\n';
  ssize_t n = write(t->fd, buf, len + 1);
  (void)n; /* a full disk loses trace lines, never the run */
}

double cpli_trace_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}
