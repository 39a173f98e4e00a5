/*
 * Chains inter-group allgather, p senders, q receivers, any sizes: the
 * receivers form min(p, q) chains, and in each of p rounds every sender
 * streams its block to the head of another chain, which passes it down.
 * One dataflow plan (sched/flow.h: cpli_flow_chains) on the merged
 * communicator.
 *
 * Why: where TCP flows share a port, several flows into one node lose
 * rate (their fair shares do not line up, and the shaper's queue
 * overflows sooner); every other plan for p < q keeps several peers per
 * receiver busy at once (fc's broadcasts, two-hop's holders) or runs one
 * pipeline q hops deep (direct-ring). Here each node has one peer per
 * direction at any time, every receiver's port takes each block once,
 * and the pipeline is only ceil(q / p) hops deep: the senders take turns
 * at the chains instead of the blocks taking turns along one ring. At
 * p = q the chains are single receivers that never send, where fc's
 * receivers allgather (sending while they receive) and two-hop's relay
 * or take p streams at once.
 */
#include "coll/coll.h"
#include "coll/fc_plan.h"

int cpli_inter_chains(const cpli_inter_args *a) {
  return cpli_inter_run_model_plan(a, cpli_flow_chains, -3, "chains");
}
