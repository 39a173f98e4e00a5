/* The workflow layer's cpli_dtype_convertible (no HDF5) answers what the
 * data layer's HDF5 check (cpli_type_convertible) does at run time, for
 * every pair of declarable types: cpl-validate's link check relies on it. */
#include <stdio.h>
#include <string.h>

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
  /* A step that contradicts a declared type names the declaration as the
   * file writes it, and what it means where that differs: "char" is an
   * int8, which a string is not (it said only "declares int8"). */
  cpl_hdf5_lock();
  hid_t str = H5Tcopy(H5T_C_S1);
  cpli_desc *d = cpli_desc_new(1);
  hsize_t dims[1] = {3};
  cpli_desc_add(d, "s", str, 1, dims);
  cpl_hdf5_unlock();
  const char *words[2] = {"char", "int16"},
             *want[2] = {"declares char (int8) (line 7)", "declares int16 (line 7)"};
  for (int i = 0; i < 2; i++) {
    cpli_dataset ds = {.name = "s", .type = (char *)words[i], .ndims = -1, .pos = {7, 3}};
    cpli_port port = {.name = "out", .output = 1, .datasets = &ds, .ndatasets = 1};
    cpli_component comp = {.name = "prod"};
    int rc = cpli_desc_check_port(d, &comp, &port, 1, "here");
    if (rc != CPL_ERR_TYPE || !strstr(cpl_last_error(), want[i])) {
      fprintf(stderr, "a string on a port declaring %s: %s: %s\n", words[i], cpl_strerror(rc),
              cpl_last_error());
      bad++;
    }
  }
  cpl_hdf5_lock();
  cpli_desc_unref(d);
  H5Tclose(str);
  cpl_hdf5_unlock();
  printf("%d type pairs, %d disagree\n", CPLI_DT_COUNT * CPLI_DT_COUNT, bad);
  return bad ? 1 : 0;
}
