#include <coupler.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  cpl_inter_algorithm a;
  if (cpl_inter_algorithm_parse("fc", &a) != CPL_OK || a != CPL_INTER_FC) return 1;
  printf("coupler %s: %s\n", CPL_VERSION_STRING, cpl_strerror(CPL_ERR_TIMEOUT));
  return strcmp(cpl_strerror(CPL_OK), "success") != 0;
}
