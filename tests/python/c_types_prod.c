/*
 * A C producer of HDF5 types no NumPy dtype maps to exactly, which the
 * Python consumer reads as the dtype datasets() names (e2e.py c_types):
 * a 16-bit bitfield dataset "flags" {1, 2, 0xffff} (as uint16), an 8-bit
 * bitfield step attribute "mask" 0x81 (uint8), and fixed strings of
 * character set UTF-8, a dataset "names" {"caf\u00e9", "abcde"} and an
 * attribute "unit" (as S6 bytes). argv[1] (the scenario) is ignored; it
 * ends as e2e.py does, with the sum of failures over MPI_COMM_WORLD.
 */
#include <stdio.h>

#include <coupler.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  cpl_context *ctx = NULL;
  cpl_output *out = NULL;
  unsigned short flags[3] = {1, 2, 0xffff};
  unsigned char mask = 0x81;
  char names[12] = "caf\xc3\xa9\0abcde";
  hsize_t dims[1] = {3}, start[1] = {0}, two[1] = {2};
  hid_t utf8 = H5Tcopy(H5T_C_S1);
  H5Tset_size(utf8, 6);
  H5Tset_cset(utf8, H5T_CSET_UTF8);
  int rc = cpl_init(MPI_COMM_WORLD, NULL, NULL, &ctx);
  if (rc == CPL_OK) rc = cpl_output_open(ctx, "out", &out);
  if (rc == CPL_OK) rc = cpl_output_begin_step(out, -1);
  if (rc == CPL_OK) rc = cpl_output_put(out, "flags", H5T_NATIVE_B16, 1, dims, start, dims, flags);
  if (rc == CPL_OK) rc = cpl_output_attr(out, NULL, "mask", H5T_NATIVE_B8, 1, &mask);
  if (rc == CPL_OK) rc = cpl_output_put(out, "names", utf8, 1, two, start, two, names);
  if (rc == CPL_OK) rc = cpl_output_attr(out, NULL, "unit", utf8, 1, names);
  if (rc == CPL_OK) rc = cpl_output_end_step(out);
  if (rc == CPL_OK) rc = cpl_output_close(out);
  if (rc != CPL_OK) fprintf(stderr, "c_types_prod: %s\n", cpl_last_error());
  H5Tclose(utf8);
  if (ctx) cpl_finalize(ctx);
  /* e2e.py's ending: the sum of failures over MPI_COMM_WORLD */
  int failed = rc != CPL_OK, total = 0;
  MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return total != 0;
}
