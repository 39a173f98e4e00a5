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

/* File access list for parallel HDF5 (MPI-IO) on `comm`; < 0 on failure. */
hid_t cpli_h5_fapl(MPI_Comm comm);

/* Transfer list for collective dataset reads and writes; < 0 on failure. */
hid_t cpli_h5_dxpl(void);

/* Write attribute `name` of n elements of `type` on object `obj`. One
 * element is stored with a scalar dataspace, else a 1-D one of n. */
int cpli_h5_write_attr(hid_t obj, const char *name, hid_t type, size_t n,
                       const void *buf);

/* "name" with the working directory when relative, for messages. */
void cpli_h5_describe_path(const char *path, char *out, size_t size);

#endif
