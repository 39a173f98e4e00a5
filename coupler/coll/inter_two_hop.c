/*
 * Two-hop inter-group allgather, p senders, q receivers, any sizes: block b
 * goes straight from its sender to r receivers, its holders, and each
 * other receiver takes it from one of those as it arrives. One dataflow
 * plan (sched/flow.h: cpli_flow_two_hop) on the merged communicator.
 *
 * Why: on a full-duplex network where a port's rate is shared fairly
 * among the streams through it (TCP), the bound p k / B is met when every
 * receiver takes exactly p streams of one block each and no port carries
 * more than p streams: then every stream runs at B / p from start to end.
 * Here every receiver takes each block on exactly one stream, and every
 * byte crosses at most two hops, so the pipeline's fill is one piece, not
 * the q - 1 of a ring or the ceil(log2) rounds of a broadcast, and
 * nothing forwarded ever waits for a step.
 *
 * r (cpli_two_hop_holders): for p > q every receiver is a holder, the
 * plain fully connected exchange, with room on the senders' ports. For
 * p <= q, r = p - 1 keeps that room, so that only the receivers' ports
 * are full (where both ends of a stream are full, the fair shares at the
 * two ends do not line up: 4|4 at 1 MiB took 1.18 of the bound with
 * r = p, 1.07 with r = p - 1, on the emulated cluster); a long block
 * goes to p holders, since that loss is a start-up while a relay costs
 * throughout (4|4 at 16 MiB: 1.03 against 1.12; but 8|8 at 16 nodes
 * with blocks of 85-350 ms took 1.09-1.13, so the model charges p
 * holders whatever the length, and auto takes chains at p = q for large
 * blocks). The cost is peers: a
 * receiver talks to up to p senders and p holders at once. Where p
 * streams into one port overflow its queue (TCP incast: p > q at 16
 * nodes), a receiver lets only a few senders in at once
 * (cpli_two_hop_admits).
 */
#include "coll/coll.h"
#include "coll/fc_plan.h"

int cpli_inter_two_hop(const cpli_inter_args *a) {
  return cpli_inter_run_model_plan(a, cpli_flow_two_hop, -2, "two-hop");
}
