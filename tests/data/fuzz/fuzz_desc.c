/* libFuzzer entry point for the decoding of dataset descriptions received
 * from a peer (desc.c): any bytes must give CPL_OK or an error, never a
 * crash, an over-read, a hang or a huge allocation. A description that
 * decodes is then used as the consumer uses it: finished (block sizes,
 * tiling), its types copied, printed and looked up for conversion, and
 * merged as the producer group merges its ranks' descriptions. */
#include <stddef.h>
#include <stdint.h>

#include "data/desc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cpli_desc *d = NULL;
  if (cpli_desc_decode(data, size, "fuzz", &d) == CPL_OK) {
    if (cpli_desc_finish(d, "fuzz") == CPL_OK) {
      for (int i = 0; i < d->nd; i++) {
        char buf[64];
        cpli_type_str(d->d[i].type, buf, sizeof buf);
        hid_t t = H5Tcopy(d->d[i].type);
        if (t < 0) __builtin_trap(); /* a decoded type must be usable */
        cpli_type_convertible(t, H5T_NATIVE_DOUBLE);
        H5Tclose(t);
        if (d->d[i].total > CPLI_DATASET_MAX_BYTES) __builtin_trap(); /* the limit holds */
      }
    }
    cpli_desc_unref(d);
  }
  /* The producer side: every rank's one-block description, merged. */
  const unsigned char *blobs[2] = {data, data};
  size_t lens[2] = {size, size};
  if (cpli_desc_merge(2, blobs, lens, "fuzz", &d) == CPL_OK) cpli_desc_unref(d);
  return 0;
}
