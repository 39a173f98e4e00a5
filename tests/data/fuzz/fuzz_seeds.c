/* Writes the seed corpora of the data-layer fuzz harnesses (descriptions,
 * attributes, step headers) into DIR/{desc,attrs,header}/: valid messages
 * with the kinds of types that travel (native numbers, string, compound,
 * array, enum, nested). Run once; the output is committed. Every message
 * must decode again (ctest runs it: the checks on received types must
 * accept every type that can travel); exit 1 if one does not. */
#include <stdio.h>
#include <string.h>

#include "data/data.h"
#include "data/desc.h"

static int bad;

static void must_decode(const char *what, const char *name, int rc) {
  if (rc == CPL_OK) return;
  fprintf(stderr, "fuzz_seeds: the %s of type %s does not decode: %s\n", what, name,
          cpl_last_error());
  bad = 1;
}

static void put(const char *dir, const char *sub, const char *name, const void *a, size_t na,
                const void *b, size_t nb) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    return;
  }
  fwrite(a, 1, na, f);
  if (nb) fwrite(b, 1, nb, f);
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  const char *dir = argv[1];
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, 7);
  hid_t cmp = H5Tcreate(H5T_COMPOUND, 16);
  H5Tinsert(cmp, "x", 0, H5T_NATIVE_DOUBLE);
  H5Tinsert(cmp, "n", 8, H5T_NATIVE_INT32);
  H5Tinsert(cmp, "c", 12, H5T_NATIVE_UINT8);
  hsize_t ad[2] = {2, 3};
  hid_t arr = H5Tarray_create2(H5T_NATIVE_FLOAT, 2, ad);
  hid_t en = H5Tenum_create(H5T_NATIVE_INT16);
  short v0 = 0, v1 = 7;
  H5Tenum_insert(en, "off", &v0);
  H5Tenum_insert(en, "on", &v1);
  hid_t nest = H5Tcreate(H5T_COMPOUND, 16 + 24);
  H5Tinsert(nest, "inner", 0, cmp);
  H5Tinsert(nest, "grid", 16, arr);
  hid_t types[] = {H5T_NATIVE_DOUBLE,
                   H5T_NATIVE_INT8,
                   H5T_NATIVE_UINT64,
                   H5T_STD_I32BE,
                   str,
                   cmp,
                   arr,
                   en,
                   nest};
  const char *names[] = {"f64", "i8", "u64", "i32be", "str", "compound", "array", "enum", "nested"};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    /* one producer rank's description: one block of a 2-D dataset */
    cpli_desc *d = cpli_desc_new(1);
    hsize_t dims[2] = {4, 3}, start[2] = {0, 0}, count[2] = {4, 3};
    int k = cpli_desc_add(d, names[i], types[i], 2, dims);
    memcpy(d->d[k].start, start, sizeof start);
    memcpy(d->d[k].count, count, sizeof count);
    cpli_wbuf w = {0};
    cpli_desc_encode(d, &w);
    put(dir, "desc", names[i], w.p, w.len, NULL, 0);
    cpli_desc *back = NULL;
    must_decode("description", names[i], cpli_desc_decode(w.p, w.len, "seed", &back));
    cpli_desc_unref(back);
    /* attributes of that type, one step and one dataset attribute */
    cpli_attrs a = {0};
    unsigned char val[3 * 64] = {1, 2, 3, 4, 5, 6, 7, 8};
    cpli_attrs_set(&a, "", "time", types[i], 1, val);
    cpli_attrs_set(&a, names[i], "units", types[i], 3, val);
    cpli_wbuf wa = {0};
    cpli_attrs_encode(&a, &wa);
    put(dir, "attrs", names[i], wa.p, wa.len, NULL, 0);
    cpli_attrs ab = {0};
    must_decode("attributes", names[i], cpli_attrs_decode(wa.p, wa.len, "seed", &ab));
    cpli_attrs_clear(&ab);
    /* a DATA header carrying both */
    cpli_hdr h = {.kind = CPLI_HDR_DATA,
                  .step = (int64_t)i,
                  .desc_len = (int64_t)w.len,
                  .attr_len = (int64_t)wa.len};
    cpli_wbuf whole = {0};
    cpli_w_bytes(&whole, w.p, w.len);
    cpli_w_bytes(&whole, wa.p, wa.len);
    put(dir, "header", names[i], &h, sizeof h, whole.p, whole.len);
    cpli_w_free(&w);
    cpli_w_free(&wa);
    cpli_w_free(&whole);
    cpli_attrs_clear(&a);
    cpli_desc_unref(d);
  }
  /* a 3-block description (as merged) and the EOS and ERROR headers */
  {
    cpli_desc *d = cpli_desc_new(3);
    hsize_t dims[1] = {10};
    int k = cpli_desc_add(d, "T", H5T_NATIVE_DOUBLE, 1, dims);
    hsize_t st[3] = {0, 4, 7}, ct[3] = {4, 3, 3};
    memcpy(d->d[k].start, st, sizeof st);
    memcpy(d->d[k].count, ct, sizeof ct);
    cpli_wbuf w = {0};
    cpli_desc_encode(d, &w);
    put(dir, "desc", "three_blocks", w.p, w.len, NULL, 0);
    cpli_w_free(&w);
    cpli_desc_unref(d);
  }
  cpli_hdr eos = {.kind = CPLI_HDR_EOS, .step = 3};
  put(dir, "header", "eos", &eos, sizeof eos, NULL, 0);
  const char msg[] = "dataset \"T\": blocks overlap";
  cpli_hdr err = {
      .kind = CPLI_HDR_ERROR, .status = CPL_ERR_MISMATCH, .msg_len = (int64_t)strlen(msg)};
  put(dir, "header", "error", &err, sizeof err, msg, strlen(msg));
  return bad;
}
