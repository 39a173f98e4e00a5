/*
 * An index of names: finds the position of a name in the caller's array
 * without comparing it with every name there. A step may carry 65536
 * datasets, each with attributes, and a linear search per lookup made a
 * step cost quadratic time (most of it in strcmp). Used for the datasets of
 * a description, a port's puts, the attributes of a step and a consumer's
 * selections.
 *
 * The index holds hashes and positions only; the caller keeps the names
 * and compares the few candidates of a hash itself:
 *
 *   size_t probe = 0;
 *   for (int k; (k = cpli_index_next(&ix, h, &probe)) >= 0;)
 *     if (!strcmp(v[k].name, name)) return k;
 *
 * Open addressing with linear probing, at most half full.
 */
#ifndef CPLI_INDEX_H
#define CPLI_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct cpli_index_slot {
  uint64_t hash;
  int pos; /* -1: empty */
} cpli_index_slot;

typedef struct cpli_index {
  cpli_index_slot *slot;
  size_t nslot; /* 0, or a power of 2 */
  int n;
} cpli_index;

/* FNV-1a of len bytes (also the workflow file's hash); of a name; and of
 * a pair (a dataset's attribute). */
uint64_t cpli_fnv1a(const void *data, size_t len);
uint64_t cpli_name_hash(const char *s);
uint64_t cpli_name_hash2(const char *a, const char *b);

/* Add position pos under hash h. 0, or -1 when out of memory (the index
 * is unchanged then). */
int cpli_index_add(cpli_index *ix, uint64_t h, int pos);
/* The positions added under hash h, one per call, then -1. *probe starts
 * at 0. */
int cpli_index_next(const cpli_index *ix, uint64_t h, size_t *probe);
/* Empty it, keeping its room (for an index refilled every step). */
void cpli_index_reset(cpli_index *ix);
void cpli_index_free(cpli_index *ix);

#endif
