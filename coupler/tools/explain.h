/* cpl-sched fc|direct-ring|two-hop|chains|root: an inter-group dataflow plan as the
 * library builds it (explain.c). */
#ifndef CPLI_TOOLS_EXPLAIN_H
#define CPLI_TOOLS_EXPLAIN_H

#include <stddef.h>

/* Print the plans of all p + q ranks of inter-group algorithm `alg` (fc,
 * direct-ring, two-hop, chains or root) with k bytes per sender: every
 * message, or with explain each stream's cut and why; with check, replay
 * them (sched/flow.h simulator) and say on stderr whether every receiver
 * ends with every block. Returns the exit status (0, or 1 on failure). */
int cpli_explain_inter(const char *alg, int p, int q, size_t k, int explain, int check, int header);

#endif
