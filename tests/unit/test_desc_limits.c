/*
 * The data layer's size checks (issue 18), without MPI transfers: blocks
 * and datasets over 2 GiB are accepted with exact byte counts and offsets;
 * the 64 TiB limit, dims whose size overflows 64 bits and element counts
 * times element size past the limit are refused with a clear message,
 * also when the description arrives from a peer (decode, then finish);
 * the redistribution plans a part of more than 2^31 elements as a
 * selective delivery (no fallback to the allgather any more).
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "data/data.h"
#include "data/desc.h"
#include "data/redist.h"

/* A 1-D description of p blocks of the given element counts. */
static cpli_desc *desc_1d(hid_t type, int p, const hsize_t *n) {
  cpli_desc *d = cpli_desc_new(p);
  hsize_t dims[1] = {0};
  for (int b = 0; b < p; b++) dims[0] += n[b];
  int k = cpli_desc_add(d, "x", type, 1, dims);
  hsize_t at = 0;
  for (int b = 0; b < p; b++) {
    d->d[k].start[b] = at;
    d->d[k].count[b] = n[b];
    at += n[b];
  }
  return d;
}

/* finish, directly and after a round trip through the wire form. */
static int finish_both(cpli_desc *d, char *msg, size_t len) {
  int rc = cpli_desc_finish(d, "test");
  snprintf(msg, len, "%s", rc == CPL_OK ? "" : cpl_last_error());
  cpli_wbuf w = {0};
  cpli_desc *back = NULL;
  int rc2 = cpli_desc_encode(d, &w);
  if (rc2 == CPL_OK) rc2 = cpli_desc_decode(w.p, w.len, "peer", &back);
  if (rc2 == CPL_OK) rc2 = cpli_desc_finish(back, "peer");
  CHECK(rc2 == rc, "from a peer: %d, here %d (%s)", rc2, rc, cpl_last_error());
  if (back) cpli_desc_unref(back);
  cpli_w_free(&w);
  return rc;
}

int main(void) {
  char msg[1024];
  const hsize_t two31 = (hsize_t)1 << 31;

  /* One block just over 2 GiB of bytes, then a small one. */
  hsize_t n1[2] = {two31 + 17, 4099};
  cpli_desc *d = desc_1d(H5T_NATIVE_UINT8, 2, n1);
  CHECK(finish_both(d, msg, sizeof msg) == CPL_OK, "2 GiB + 17 bytes refused: %s", msg);
  CHECK(d->d[0].bytes[0] == two31 + 17 && d->d[0].offset[1] == two31 + 17 &&
            d->d[0].total == two31 + 17 + 4099,
        "bytes %zu, offset %zu, total %zu", d->d[0].bytes[0], d->d[0].offset[1], d->d[0].total);

  /* The redistribution: consumer 0 selects everything, one part of 2^31 + 17
   * elements from block 0; planned as the redistribution when forced. */
  cpli_sel sels[2] = {{0}};
  hsize_t s0[1] = {0}, c0[1] = {two31 + 100}, s1[1] = {two31 + 100}, c1[1] = {1};
  CHECK(cpli_sel_set_boxes(&sels[0], "x", 1, 1, s0, c0) == CPL_OK, "select: %s", cpl_last_error());
  CHECK(cpli_sel_set_boxes(&sels[1], "x", 1, 1, s1, c1) == CPL_OK, "select: %s", cpl_last_error());
  cpl_coll_options opt;
  cpl_coll_options_init(&opt);
  cpli_rplan pl = {0};
  CHECK(cpli_rplan_build(&pl, d, 0, 2, sels, CPLI_DELIVERY_SELECT, &opt, "test") == CPL_OK,
        "plan: %s", cpl_last_error());
  CHECK(pl.mode == CPLI_MODE_SELECT, "a part over 2^31 elements planned as mode %d", pl.mode);
  CHECK(pl.nparts == 1 && pl.parts[0].count[0] == two31 + 17, "%d parts, the first of %llu",
        pl.nparts, pl.nparts ? (unsigned long long)pl.parts[0].count[0] : 0ULL);
  CHECK(pl.bytes_needed == two31 + 101, "bytes needed %zu", pl.bytes_needed);
  cpli_rplan_free(&pl);
  cpli_sel_free(&sels[0]);
  cpli_sel_free(&sels[1]);
  cpli_desc_unref(d);

  /* Exactly the limit (2^43 doubles), and one element more. */
  hsize_t n2[1] = {(hsize_t)1 << 43};
  d = desc_1d(H5T_NATIVE_DOUBLE, 1, n2);
  CHECK(finish_both(d, msg, sizeof msg) == CPL_OK, "64 TiB refused: %s", msg);
  cpli_desc_unref(d);
  hsize_t n3[2] = {((hsize_t)1 << 43) - 1, 2};
  d = desc_1d(H5T_NATIVE_DOUBLE, 2, n3);
  CHECK(finish_both(d, msg, sizeof msg) == CPL_ERR_UNSUPPORTED, "64 TiB + 8 bytes accepted");
  CHECK(strstr(msg, "dataset \"x\" is more than the 70368744177664 bytes (64 TiB)") != NULL,
        "message: %s", msg);
  cpli_desc_unref(d);

  /* A block whose element count times 8 bytes wraps 64 bits. */
  hsize_t n4[1] = {((hsize_t)1 << 61) + 1};
  d = desc_1d(H5T_NATIVE_DOUBLE, 1, n4);
  CHECK(finish_both(d, msg, sizeof msg) == CPL_ERR_UNSUPPORTED, "2^61 doubles accepted");
  CHECK(strstr(msg, "the block of rank 0, [2305843009213693953] elements of 8 bytes") != NULL,
        "message: %s", msg);
  cpli_desc_unref(d);

  /* 2-D dims whose element count does not fit 64 bits. */
  d = cpli_desc_new(1);
  hsize_t dims[2] = {(hsize_t)1 << 40, (hsize_t)1 << 40};
  int k = cpli_desc_add(d, "y", H5T_NATIVE_UINT8, 2, dims);
  memcpy(d->d[k].count, dims, sizeof dims);
  CHECK(finish_both(d, msg, sizeof msg) != CPL_OK, "2^80 elements accepted");
  CHECK(strstr(msg, "dataset \"y\"") != NULL, "message: %s", msg);
  cpli_desc_unref(d);

  if (failures) fprintf(stderr, "%d failures\n", failures);
  else printf("desc limits: ok\n");
  return failures != 0;
}
