/*
 * The unit tests' one check: count a failure and say where, go on (so one
 * run shows every broken case). The first 50 are printed, the rest only
 * counted. Each test returns `failures != 0`.
 */
#ifndef CPL_TESTS_UNIT_CHECK_H
#define CPL_TESTS_UNIT_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond) && failures++ < 50) {                                                              \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                         \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

#endif
