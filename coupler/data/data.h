/*
 * The data layer's internal state and its control channel.
 *
 * Data move on the link's private data communicator (cpli_end .data, not
 * the intercomm a program is given) with the inter-group allgatherv;
 * everything else is a small message between the two groups'
 * rank 0 ("roots") on the link's private control communicator (cpli_end
 * .ctl), then a broadcast inside the group:
 *
 *   consumer root -> producer root   CREDIT  "I am waiting for a step"
 *                                    DETACH  "I take no more steps" (last)
 *   producer root -> consumer root   HEADER  DATA (step, description when
 *                                    changed, attributes), EOS or ERROR
 *                                    BYE     headers sent in all (finalize)
 *
 * A DATA header answers one credit and is followed by the step's
 * transfers (the allgather of the batch of its small datasets, desc.h,
 * then one per larger dataset; or the redistribution), so both groups
 * are in them together: the producer never pushes data at a consumer that
 * is computing. EOS and ERROR need no
 * credit. At cpl_finalize each side drains what the other sent (the
 * producer up to DETACH, the consumer up to the BYE count), so no message
 * is left unmatched when the communicators are freed.
 */
#ifndef CPLI_DATA_DATA_H
#define CPLI_DATA_DATA_H

#include <limits.h>
#include <stdint.h>

#include "data/desc.h"
#include "group/context.h"

enum {
  CPLI_TAG_CREDIT = 1,
  CPLI_TAG_HEADER = 2,
  CPLI_TAG_BYE = 3,
  CPLI_TAG_DATA = 4 /* selective delivery, any rank to any rank */
};
enum { CPLI_MSG_CREDIT = 1, CPLI_MSG_DETACH = 2 };
enum {
  CPLI_HDR_DATA = 1,
  CPLI_HDR_EOS = 2,
  CPLI_HDR_ERROR = 3,
  CPLI_HDR_MISSING = 4 /* the requested step is not held */
};

/* Fixed part of a header; desc, attrs and message bytes follow it.
 * `status`: ERROR's cpl_status. `mode`: CPLI_MODE_* of a DATA step.
 * `root_rc` and `credit_out` are set by the consumer root before it
 * broadcasts the header: its own failure to take it, and whether its
 * credit is still unanswered (after a timeout). */
typedef struct cpli_hdr {
  int64_t kind, status, step, mode;
  int64_t desc_len, attr_len, msg_len;
  int64_t root_rc, credit_out; /* consumer side only, see above */
} cpli_hdr;

/* Fixed part of a credit; the consumers' selections follow it when they
 * changed (sel_len bytes: per consumer rank a u64 length and its
 * cpli_sel encoding). `want`: CPL_STEP_NEXT, CPL_STEP_LATEST or a step. */
typedef struct cpli_credit {
  int64_t kind, want, sel_len;
} cpli_credit;

/* One link end's channel state; counters are kept on the root. */
typedef struct cpli_chan {
  /* producer side */
  long credits;       /* credits received and not yet answered          */
  long want;          /* what the pending credit asks for              */
  int detached;       /* DETACH received                                */
  unsigned char *sel; /* root: the consumers' selections, last received */
  size_t sel_len;
  long sel_version; /* counts selections received (0: none)           */
  int eos_sent;
  long headers_sent;
  int output_open; /* the port of this end has an open cpl_output    */
  /* consumer side */
  int credit_out; /* a credit not yet answered (begin_step timed out) */
  int detach_sent;
  long headers_recv;
  cpli_credit msg; /* DETACH send buffer                             */
  MPI_Request detach_req;
  int input_open;
} cpli_chan;

struct cpli_trace;

/* Progress lines' rate limit, per link (report.c). */
typedef struct cpli_prog {
  const char *link;
  double last;
  long quiet;        /* steps not printed since the last line        */
  char pending[400]; /* the last of them, printed when the link ends */
} cpli_prog;

typedef struct cpli_data_state {
  cpli_chan *chan;          /* one per context end                            */
  struct cpli_trace *trace; /* report.h: NULL when not tracing         */
  int progress;             /* CPL_PROGRESS=1: progress lines on rank 0       */
  cpli_prog *prog;          /* one per end of this context                    */
  int nprog, maxprog;
  cpl_output **outs; /* open ports, closed by cpl_finalize             */
  int nouts, capouts;
  cpl_input **ins;
  int nins, capins;
} cpli_data_state;

int cpli_data_get(cpl_context *ctx, cpli_data_state **out);
int cpli_data_track(cpl_context *ctx, cpl_output *o, cpl_input *in);
void cpli_data_untrack(cpl_context *ctx, cpl_output *o, cpl_input *in);

/* The collective options of one step on a link: the link's algorithms,
 * timeout and label. Both ends build them here, so they agree. */
void cpli_link_options(const cpli_link *l, long step, cpl_coll_options *opt);
/* How long a rank waits for the other ranks of its own component when one
 * of them may be in a link's wait of up to `wait` seconds: longer, so that
 * the rank waiting on the link reports first (naming link, sender, step). */
static inline double cpli_peer_timeout(double wait) { return 2 * wait + 10; }

/* Called by cpl_finalize: close open ports, drain every channel. */
int cpli_data_finalize(cpl_context *ctx);

/* A consumer that had no step within `seconds` after asking for `want`:
 * CPL_ERR_TIMEOUT, saying what this side knows (what it asked whom) and
 * only that. begin_step's words; the HDF5 sink, which polls its links
 * with try_step, uses them when a link's own timeout has passed. */
int cpli_input_no_step(const cpl_input *in, double seconds, long want);

/* --------------------------------------------- channel (roots only) */

/* Producer root: take every CREDIT/DETACH that has arrived. */
int cpli_chan_poll(cpl_context *ctx, int end);
/* Producer root: wait until a credit or DETACH arrives, up to timeout;
 * with `other`, also return (CPL_OK) as soon as other(arg) says so, which
 * restarts nothing: it is polled between the channel's polls. */
int cpli_chan_wait_credit(cpl_context *ctx, int end, double timeout, int (*other)(void *),
                          void *arg);
/* Producer root: send a header with up to three payload parts. */
int cpli_chan_send_header(cpl_context *ctx, int end, const cpli_hdr *h, const void *desc,
                          const void *attrs, const void *msg, double timeout);
/* Producer root: post a header (no message part) without waiting; *req
 * and the message *buf (malloc'd) stay the caller's until it completes. */
int cpli_chan_post_header(cpl_context *ctx, int end, const cpli_hdr *h, const void *desc,
                          const void *attrs, MPI_Request *req, unsigned char **buf);
/* Consumer root: send CREDIT (asking for `want`, with the selections when
 * sel_len > 0) or DETACH. */
int cpli_chan_send_credit(cpl_context *ctx, int end, int64_t kind, long want, const void *sel,
                          size_t sel_len, double timeout);
/* Consumer root: receive the next header (malloc'd into *buf); `after`,
 * the consumer's last step (or CPLI_NO_STEP), and `want`, what it asked
 * for (CPL_STEP_NEXT, CPL_STEP_LATEST or a step number), name the wait. A timeout
 * is CPL_ERR_TIMEOUT without a message: the caller says. */
#define CPLI_NO_STEP LONG_MIN
int cpli_chan_recv_header(cpl_context *ctx, int end, double timeout, long after, long want,
                          unsigned char **buf, size_t *len);

/* Poll an MPI request until done or timeout; *done says which. `what`
 * describes the wait; an interrupt (core/wait.h) is CPL_ERR_INTERRUPTED. */
int cpli_poll_request(MPI_Request *req, double timeout, const char *what, int *done);

#endif
