/*
 * Byte buffers for the data layer's messages (descriptions, attributes,
 * step headers). Native byte order: Coupler assumes a homogeneous machine
 * (coll/coll.h); HDF5 types travel encoded by H5Tencode, which carries its
 * own byte order. A reader never runs past its end: a short or corrupt
 * message sets `bad` and yields zeros.
 */
#ifndef CPLI_DATA_WIRE_H
#define CPLI_DATA_WIRE_H

#include <stddef.h>
#include <stdint.h>

typedef struct cpli_wbuf {
  unsigned char *p;
  size_t len, cap;
  int oom; /* an allocation failed; the buffer is incomplete */
} cpli_wbuf;

void cpli_w_free(cpli_wbuf *w);
void cpli_w_bytes(cpli_wbuf *w, const void *data, size_t n);
void cpli_w_u32(cpli_wbuf *w, uint32_t v);
void cpli_w_u64(cpli_wbuf *w, uint64_t v);
/* Length, bytes and a terminating NUL, so readers can point into it. */
void cpli_w_str(cpli_wbuf *w, const char *s);

typedef struct cpli_rbuf {
  const unsigned char *p;
  size_t len, pos;
  int bad;
} cpli_rbuf;

cpli_rbuf cpli_r_init(const void *p, size_t len);
/* Pointer to the next n bytes, or NULL (and bad set) if fewer remain. */
const void *cpli_r_bytes(cpli_rbuf *r, size_t n);
uint32_t cpli_r_u32(cpli_rbuf *r);
uint64_t cpli_r_u64(cpli_rbuf *r);
/* Points into the buffer; "" (and bad set) if malformed. */
const char *cpli_r_str(cpli_rbuf *r);

/* The sum of n lengths received from a peer, or -1 if one is negative or
 * the sum exceeds max (checked without overflow). */
int64_t cpli_r_lengths_sum(const int64_t *lens, int n, int64_t max);

#endif
