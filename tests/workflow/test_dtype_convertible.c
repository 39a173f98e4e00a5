/* The workflow layer's cpli_dtype_convertible (no HDF5) answers what the
 * data layer's HDF5 check (cpli_type_convertible) does at run time, for
 * every pair of declarable types: cpl-validate's link check relies on it. */
#include <stdio.h>

#include "data/desc.h"
#include "workflow/model.h"

int main(void) {
  int bad = 0;
  for (int a = 0; a < CPLI_DT_COUNT; a++)
    for (int b = 0; b < CPLI_DT_COUNT; b++) {
      const char *ta = cpli_dtype_names[a], *tb = cpli_dtype_names[b];
      cpl_hdf5_lock();
      int h5 = cpli_type_convertible(cpli_yaml_type(ta), cpli_yaml_type(tb));
      cpl_hdf5_unlock();
      if (!h5 != !cpli_dtype_convertible(ta, tb)) {
        fprintf(stderr, "%s -> %s: HDF5 says %d, workflow says %d\n", ta, tb, h5,
                cpli_dtype_convertible(ta, tb));
        bad++;
      }
    }
  printf("%d type pairs, %d disagree\n", CPLI_DT_COUNT * CPLI_DT_COUNT, bad);
  return bad ? 1 : 0;
}
