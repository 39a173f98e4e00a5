/* libFuzzer entry point for the decoding of step attributes received from
 * a peer (desc.c): any bytes must give CPL_OK or an error, never a crash,
 * an over-read or a huge allocation. Attributes that decode must encode
 * and decode again to the same values, within the size limits. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "data/desc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cpli_attrs a = {0}, b = {0};
  if (cpli_attrs_decode(data, size, "fuzz", &a) == CPL_OK) {
    if (a.bytes > CPLI_ATTRS_MAX_BYTES) __builtin_trap();
    cpli_wbuf w = {0};
    if (cpli_attrs_encode(&a, &w) == CPL_OK) {
      if (cpli_attrs_decode(w.p, w.len, "fuzz", &b) != CPL_OK || b.n != a.n) __builtin_trap();
      for (int i = 0; i < a.n; i++)
        if (a.v[i].bytes != b.v[i].bytes || memcmp(a.v[i].value, b.v[i].value, a.v[i].bytes) ||
            H5Tequal(a.v[i].type, b.v[i].type) <= 0)
          __builtin_trap();
    }
    cpli_w_free(&w);
  }
  cpli_attrs_clear(&a);
  cpli_attrs_clear(&b);
  return 0;
}
