/*
 * Two-hop inter-group allgather, p senders, q receivers, any sizes: block b
 * goes straight from its sender to min(p, q) receivers, and each other
 * receiver takes it from one of those. One dataflow plan (sched/flow.h:
 * cpli_flow_two_hop) on the merged communicator.
 *
 * Why: on a full-duplex network where a port's rate is shared fairly
 * among the streams through it (TCP), the bound p k / B is met when every
 * receiver takes exactly p streams of one block each and no port carries
 * more than p streams: then every stream runs at B / p from start to end.
 * Here every receiver takes each block on exactly one stream; a sender
 * sends its block min(p, q) times, and for q <= p (p + 1) no receiver
 * passes on more than p blocks. Every byte crosses at most two hops, so
 * the pipeline's fill is one piece, not the q - 1 of a ring or the
 * ceil(log2) rounds of a broadcast, and nothing forwarded ever waits for
 * a step: it is the shape fc's p < q broadcasts and rings only approach.
 * For p >= q it is the plain fully connected exchange (no receiver
 * forwards anything). The cost is peers: a receiver talks to p of them
 * at once.
 */
#include "coll/coll.h"
#include "coll/fc_plan.h"

int cpli_inter_two_hop(const cpli_inter_args *a) {
  return cpli_inter_run_model_plan(a, cpli_flow_two_hop, -2, "two-hop");
}
