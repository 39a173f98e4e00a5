/*
 * The tuning file: the cost model's parameters measured on this machine
 * (written by `cpl-bench --calibrate`, read by the library at its first
 * tuning refresh, coll/tuning.c). Pure: no MPI.
 *
 * Format: one "key = value" per line; '#' starts a comment; blank lines
 * are allowed. Keys (each at most once):
 *   alpha     seconds: start-up of one message, as a round of a
 *             collective pays it (every rank sending at once)
 *   beta      seconds per byte
 *   overhead  seconds: what one more message of a stream costs (the gap
 *             between back-to-back messages)
 *   chunk     bytes (K or M suffix, at least CPLI_CHUNK_MIN = 512): a
 *             fixed stream cut, as CPL_CHUNK
 *   inter_root_max  bytes per block (K or M suffix, or 0): `auto` takes
 *             the inter-group `root` (the fewest messages) for blocks up
 *             to this size at p, q >= 2, as CPL_INTER_ROOT_MAX
 *   intra_root_bytes  bytes (K or M suffix, or 0): `auto` takes the
 *             intra-group `root` at p >= 3 where its member 0 sends at
 *             most this much, as CPL_INTRA_ROOT_BYTES
 *             (the calibration measures both where root wins)
 * alpha and overhead lie in 1e-9..10 s, beta in 1e-13..1e-3 s/B
 * (CPLI_SECONDS_*, CPLI_BETA_*: below); the byte counts up to 10^15.
 * Anything else (unknown key, missing '=', bad or repeated value) is an
 * error naming file:line.
 *
 * Where: $CPL_TUNING_FILE if set (it must exist), else
 * $XDG_CONFIG_HOME/coupler/tuning, else $HOME/.config/coupler/tuning (a
 * missing default file just means the built-in defaults). Every rank of a
 * job must read the same values: use one file on a shared file system, or
 * name it with CPL_TUNING_FILE on every rank.
 */
#ifndef CPLI_TUNING_FILE_H
#define CPLI_TUNING_FILE_H

#include <stddef.h>

typedef struct cpli_tuning_vals {
  double alpha, beta, overhead; /* 0: not given */
  size_t chunk;                 /* 0: not given */
  size_t inter_root_max, intra_root_bytes;
  int inter_root_max_set, intra_root_bytes_set; /* given (0 is a value) */
} cpli_tuning_vals;

/* Where the model's parameters may lie, whatever their source: outside,
 * a value is a typo or a failed measurement (CPL_ALPHA=1e300 was taken
 * as given and planned with), and is refused. Seconds (alpha, overhead):
 * 1 ns to 10 s; seconds per byte: 10 TB/s to 1 KB/s. */
#define CPLI_SECONDS_MIN 1e-9
#define CPLI_SECONDS_MAX 10.0
#define CPLI_BETA_MIN 1e-13
#define CPLI_BETA_MAX 1e-3
/* Whether d lies in the range of a time (beta = 0) or of beta (1). */
int cpli_model_value_ok(int beta, double d);
/* The range as text ("from 1e-09 to 10"), for messages (this thread's
 * buffer, one per kind). */
const char *cpli_model_range(int beta);

/* Parse a byte count with an optional K or M suffix ("32K", "1M", "4096"),
 * 1 to CPLI_BYTES_MAX. Returns 0 (and *out) or -1. */
#define CPLI_BYTES_MAX 1e15 /* messages say "10^15" */
int cpli_parse_bytes(const char *s, size_t *out);
/* The same, or "0". */
int cpli_parse_bytes0(const char *s, size_t *out);

/* Read path into *v. CPL_OK; CPL_ERR_IO (cannot open: "PATH: reason") or
 * CPL_ERR_PARSE ("PATH:LINE: what is wrong") with the message in err. */
int cpli_tuning_file_read(const char *path, cpli_tuning_vals *v, char *err, size_t errlen);

/* Write *v (the values that are set) to path, atomically (a temporary
 * file renamed over it), with `comment` lines (may be NULL) on top; the
 * directory is created if missing. CPL_OK or CPL_ERR_IO with err. */
int cpli_tuning_file_write(const char *path, const cpli_tuning_vals *v, const char *comment,
                           char *err, size_t errlen);

/* The file the library reads: *explicit_ set to 1 when it comes from
 * CPL_TUNING_FILE. NULL when no variable names one (no HOME). */
const char *cpli_tuning_file_path(char *buf, size_t n, int *explicit_);

#endif
