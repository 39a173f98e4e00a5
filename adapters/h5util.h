/* HDF5 helpers of the built-in sink and source. */
#ifndef CPLI_H5UTIL_H
#define CPLI_H5UTIL_H

#include "coupler.h"

/* Record a CPL_ERR_HDF5 failure: the formatted context (what was being
 * done to which file/object), then the innermost message of the HDF5 error
 * stack, which is cleared. Returns CPL_ERR_HDF5. */
int cpli_h5_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Open `path` read-only (create = 0) or create it, truncating (create =
 * 1), collectively on `comm` with MPI-IO, and make the collective transfer
 * list for its dataset reads and writes. On failure (CPL_ERR_HDF5, via
 * cpli_h5_fail) what was not made is < 0; what was made is the caller's
 * to close, as on success. */
int cpli_h5_file(const char *path, MPI_Comm comm, int create, hid_t *file, hid_t *dxpl);

/* Write attribute `name` of n elements of `type` on object `obj`. One
 * element is stored with a scalar dataspace, none with a null one, else a
 * 1-D one of n. */
int cpli_h5_write_attr(hid_t obj, const char *name, hid_t type, size_t n, const void *buf);

/* The root attribute (int64) of the files the sink and a stage's drain
 * write: -1 while they write (cpli_h5_mark(file, -1) after creating it),
 * the number of steps written once every input's stream ended (last,
 * before the close), so a file a failure cut short tells itself from a
 * finished one. Collective, as every metadata write. */
#define CPLI_SINK_MARK "coupler_steps"
int cpli_h5_mark(hid_t file, long long steps);

/* "name" with the working directory when relative, for messages. */
void cpli_h5_describe_path(const char *path, char *out, size_t size);

#endif
