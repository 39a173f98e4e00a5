/* libFuzzer entry point for a step header received from a peer, decoded as
 * a consumer does at begin_step (input.c): the fixed header, then its
 * three lengths checked against the payload, then the description and the
 * attributes at their offsets. Any bytes: an error, never a crash, an
 * over-read or a huge allocation. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "data/data.h"
#include "data/desc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cpli_hdr h;
  if (size < sizeof h) return 0;
  memcpy(&h, data, sizeof h);
  const unsigned char *p = data + sizeof h;
  size_t len = size - sizeof h;
  const int64_t lens[3] = {h.desc_len, h.attr_len, h.msg_len};
  int64_t plen = cpli_r_lengths_sum(lens, 3, 0x7fffffff);
  if (plen < 0 || (size_t)plen != len) return 0;
  if (h.kind == CPLI_HDR_ERROR) {
    char msg[512];
    snprintf(msg, sizeof msg, "producer: %.*s", (int)h.msg_len, (const char *)p);
    return 0;
  }
  if (h.kind != CPLI_HDR_DATA) return 0;
  cpli_desc *d = NULL;
  if (h.desc_len && (cpli_desc_decode(p, (size_t)h.desc_len, "fuzz", &d) != CPL_OK ||
                     cpli_desc_finish(d, "fuzz") != CPL_OK)) {
    cpli_desc_unref(d);
    return 0;
  }
  cpli_attrs a = {0};
  cpli_attrs_decode(p + h.desc_len, (size_t)h.attr_len, "fuzz", &a);
  cpli_attrs_clear(&a);
  cpli_desc_unref(d);
  return 0;
}
