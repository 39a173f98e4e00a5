/*
 * Hyperslab geometry, pure: volumes, overlaps, tiling checks and the copy
 * that assembles a consumer's selection from the producers' blocks. A box
 * is (start[rank], count[rank]) in global coordinates; data of a box are
 * stored row-major and contiguous.
 */
#ifndef CPLI_DATA_SLAB_H
#define CPLI_DATA_SLAB_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

/* Elements in a box (0 if any count is 0). -1 if the product overflows
 * 64 bits (HDF5 itself does not check). */
int cpli_box_volume(int rank, const hsize_t *count, uint64_t *out);

/* Is the box inside dims (start + count <= dims, without overflow)? */
int cpli_box_inside(int rank, const hsize_t *dims, const hsize_t *start, const hsize_t *count);

/* Do two non-empty boxes share an element? */
int cpli_box_overlap(int rank, const hsize_t *s1, const hsize_t *c1, const hsize_t *s2,
                     const hsize_t *c2);

/*
 * Copy the elements of block (bstart, bcount; data at src) that lie in
 * selection (sstart, scount; data at dst), each esize bytes. Runs that are
 * contiguous in both are copied with one memcpy.
 */
void cpli_slab_copy(int rank, size_t esize, const hsize_t *bstart, const hsize_t *bcount,
                    const void *src, const hsize_t *sstart, const hsize_t *scount, void *dst);

/*
 * Do nb blocks (block b: starts[b*rank..], counts[b*rank..]) tile the
 * array dims exactly: every block inside, no two overlapping, no element
 * uncovered? Returns 1 if so; else 0 with the reason in msg, naming
 * blocks by index ("rank 2").
 */
int cpli_tiling_check(int rank, const hsize_t *dims, int nb, const hsize_t *starts,
                      const hsize_t *counts, char *msg, size_t msglen);

/* "[13, 11]": extents, into buf. */
const char *cpli_dims_str(int rank, const hsize_t *dims, char *buf, size_t n);

/* "[0:4, 8:16]" (start:end per dimension) into buf. */
const char *cpli_box_str(int rank, const hsize_t *start, const hsize_t *count, char *buf, size_t n);

#endif
