/*
 * Root gathering (the strategy of MPICH and Open MPI; Kang et al. Sec.
 * III-A), with receiver 0 as the root: every sender sends its block
 * straight to receiver 0, which broadcasts all p blocks among the
 * receivers (Traff's round-optimal n-block broadcast, Alg. 6). One
 * dataflow plan (sched/flow.h: cpli_flow_root) on the merged
 * communicator, so receiver 0 passes on each block that has arrived
 * while the rest still comes.
 *
 * Why: p + q - 1 messages, the fewest any allgather between the groups
 * can send (fc and two-hop send p q or more), in 1 + ceil(log2 q) hops.
 * MPICH gathers to sender 0 first and sends the gathered blocks to
 * receiver 0, ceil(log2 p) + 1 hops before the broadcast. Where every
 * message costs CPU that other ranks wait for (ranks sharing cores),
 * small blocks are faster this way than on plans with fewer hops but
 * more messages.
 *
 * Cost: receiver 0's port takes all m = p k bytes, the p start-ups
 * overlapping: alpha + m beta; the broadcast of m among q in n blocks,
 * (n - 1 + ceil(log2 q))(alpha + beta m / n) (cost.c).
 *
 * Checks: receiver 0 receives each sender's block whole on its own, so a
 * block of another size than it expects is MPI_ERR_TRUNCATE there (the
 * executor checks every receive's size); the other receivers then wait
 * for a broadcast that does not come, which only CPL_TIMEOUT ends, as
 * with the other plans.
 */
#include "coll/coll.h"
#include "coll/fc_plan.h"

int cpli_inter_root(const cpli_inter_args *a) {
  return cpli_inter_run_model_plan(a, cpli_flow_root, -4, "root");
}
