/* File names as the system resolves them: for the same-file check of the
 * HDF5 built-ins (workflow/check.c) and the directories a sink creates
 * (adapters/h5step.c). */
#ifndef CPLI_PATH_H
#define CPLI_PATH_H

#include <stddef.h>

/* Length of a ROMIO file-system prefix `path` starts with ("ufs:",
 * "lustre:", ... : MPI-IO's way to choose a driver), or 0. */
size_t cpli_path_fs_prefix(const char *path);

/* `path` (a ROMIO prefix dropped) as an absolute name, malloc'd (NULL: out
 * of memory or no working directory). A relative one is taken from
 * `workdir` (may be NULL; relative: from the working directory), else
 * from the working directory. The longest part that exists is resolved by
 * the system (symbolic links followed, "a/.." is a's parent), the rest,
 * which cannot hold a link, lexically ("x/../y" is "y", "./" and "//"
 * dropped): so two names of one file, existing or not yet, come out the
 * same, as long as no hard link is involved. */
char *cpli_path_resolve(const char *workdir, const char *path);

#endif
