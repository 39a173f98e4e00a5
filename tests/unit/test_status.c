/* cpl_strerror: every status has its own description, and the three kinds
 * of "does not fit" each have a word that says which. */
#include <string.h>

#include "check.h"
#include "coupler.h"

int main(void) {
  for (int a = 0; a < CPL_STATUS_COUNT; a++) {
    const char *da = cpl_strerror(a);
    CHECK(da && da[0] && strcmp(da, "unknown status code"), "status %d: no description", a);
    for (int b = 0; b < a; b++)
      CHECK(!da || strcmp(da, cpl_strerror(b)), "statuses %d and %d: both \"%s\"", b, a, da);
  }
  CHECK(strstr(cpl_strerror(CPL_ERR_MISMATCH), "disagree"), "%s", cpl_strerror(CPL_ERR_MISMATCH));
  CHECK(strstr(cpl_strerror(CPL_ERR_TYPE), "datatype"), "%s", cpl_strerror(CPL_ERR_TYPE));
  CHECK(strstr(cpl_strerror(CPL_ERR_SHAPE), "dims"), "%s", cpl_strerror(CPL_ERR_SHAPE));
  CHECK(!strcmp(cpl_strerror(CPL_STATUS_COUNT), "unknown status code") &&
            !strcmp(cpl_strerror(-1), "unknown status code"),
        "out of range");
  return failures != 0;
}
