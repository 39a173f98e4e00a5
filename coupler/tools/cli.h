/* Command-line conventions shared by every Coupler tool (cpl-run,
 * cpl-exec, cpl-validate, cpl-component, cpl-bench, cpl-sched, cpl-model), checked
 * by tests/tools:
 *   -h, --help      usage on stdout, exit 0
 *   -V, --version   "NAME (Coupler) VERSION" on stdout, exit 0
 *   a bad option    "NAME: <what is wrong with it>" then the usage on
 *                   stderr, exit 2
 * Header-only, so tools that link only the pure objects can use it. */
#ifndef CPLI_TOOLS_CLI_H
#define CPLI_TOOLS_CLI_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "coupler.h"

#define CPLI_CLI_USAGE_ERROR 2

/* -h/--help or -V/--version among argv[1..] (up to a "--"): print, return
 * 0 (the exit status); otherwise -1. */
static inline int cpli_cli_info(const char *name, int argc, char **argv, void (*usage)(FILE *)) {
  for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
      printf("%s (Coupler) %s\n", name, CPL_VERSION_STRING);
      return 0;
    }
  }
  return -1;
}

/* "NAME: <message>" and the usage on stderr; returns the exit status 2. */
static inline int cpli_cli_usage_error(const char *name, void (*usage)(FILE *), const char *fmt,
                                       ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  if (usage) usage(stderr);
  return CPLI_CLI_USAGE_ERROR;
}

#endif
