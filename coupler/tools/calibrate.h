/* cpl-bench --calibrate (calibrate.c): measure alpha, beta and the
 * per-message overhead, write the tuning file. */
#ifndef CPLI_TOOLS_CALIBRATE_H
#define CPLI_TOOLS_CALIBRATE_H

#define CPLI_CALIBRATE_MAXS 32
#define CPLI_CALIBRATE_SIZES "1,1K,4K,16K,64K,256K,1M,4M"

/* Collective over MPI_COMM_WORLD (2 ranks or more). out: the file to
 * write ("-": print its values instead; NULL: the path the library reads,
 * coll/tuning_file.h); sizes: 2..CPLI_CALIBRATE_MAXS message sizes; reps:
 * runs per size. Rank 0 prints the measurements and the fits. Returns the
 * exit status (0; 1 failed; 2 usage), the same on every rank. */
int cpli_calibrate(const char *out, const long *sizes, int nsizes, int reps, int quiet);

#endif
