/*
 * Producer ports, shared by output.c (puts, descriptions, end_step,
 * close) and queue.c (queues, policies, transfers).
 */
#ifndef CPLI_DATA_OUTPUT_H
#define CPLI_DATA_OUTPUT_H

#include "data/data.h"
#include "data/redist.h"

typedef struct put {
  char *name;
  hid_t type;
  int rank;
  hsize_t dims[CPL_MAX_RANK], start[CPL_MAX_RANK], count[CPL_MAX_RANK];
  const void *data;
} put;

/* A step held for delivery; shared by the queues of the port's links. */
typedef struct pstep {
  int refs;
  long step, ordinal;
  cpli_desc *desc;
  cpli_wbuf attrs;    /* root: encoded attributes                  */
  const void **block; /* per dataset of desc: this rank's block     */
  char *copy;         /* private copy of the blocks, once made      */
  size_t copy_bytes;  /* this rank's blocks, all datasets            */
  int copied;         /* held past its end_step (counted in stats)   */
  double t_queued;    /* end_step's time, for the trace (us)         */
} pstep;

/* A step posted on a `latest` link whose messages are not yet complete on
 * every producer rank (queue.c: "in flight"). The step holds its own copy
 * of the blocks, so the messages read nothing the caller may reuse. */
typedef struct oflight {
  pstep *st;           /* NULL: nothing in flight                  */
  cpli_posted msgs;    /* this rank's data messages                */
  MPI_Request hdr_req; /* root: the header (MPI_REQUEST_NULL: done) */
  unsigned char *hdr;  /* root: the header's bytes until then      */
  int mode;            /* CPLI_MODE_SCATTER or _SELECT            */
  double t_posted;     /* MPI_Wtime() when posted                  */
  double t_start_us;   /* the same, for the trace (0: no report)   */
  size_t sent;         /* this rank's bytes                        */
  long dropped0;       /* the link's drops when it was posted      */
} oflight;

typedef struct olink {
  int end; /* index into ctx->ends                      */
  const cpli_link *l;
  pstep **q; /* FIFO, at most depth (+1 while deciding)   */
  int qn;
  long desc_sent; /* version last sent on this link, -1: none  */
  cpl_output_stats st;
  long stale_logged;
  cpli_sel *sels; /* the consumer ranks' selections (q)        */
  int nsels;
  long sel_version; /* of sels: the root channel's sel_version   */
  cpli_rplan plan;  /* delivery plan for (desc, sels) versions   */
  oflight fly;      /* latest: the step in flight, if any        */
  long last_step;   /* the last step delivered, -1: none         */
  int ended;        /* by cpl_output_end_link, its consumer there */
} olink;

/* Per link in the records the producer ranks share: credits, detached,
 * want, sel_version (the root's), then the step in flight: still pending
 * on this rank (every rank's own), older than the link timeout (root's). */
#define CPLI_LREC 6

struct cpl_output {
  cpl_context *ctx;
  const cpli_component *comp;
  const cpli_port *port;
  MPI_Comm comm;
  int rank, size;
  olink *links;
  int nl;
  double timeout; /* longest of the links' timeouts           */
  int in_step, closed;
  int closing;   /* close delivers the queues: a drained link ends */
  int serving;   /* cpl_output_serve: steps sent on request  */
  int send_link; /* the link cpl_output_send sends to; -1: end_step */
  int failed;    /* status of a failure that ended the port  */
  char fail_msg[1024];
  long step, ordinal;
  put *puts;
  int nputs, capputs;
  cpli_index put_names; /* puts by name                           */
  hid_t put_type;       /* a put's atomic type (a reference; 0: none
                         * yet), shared by the next puts of an equal
                         * type instead of a copy each             */
  cpli_attrs attrs;
  cpli_wbuf local;  /* this rank's encoded blocks, last step    */
  char *batch;      /* this rank's part of the batch, packed    */
  size_t batch_cap; /* (queue.c), kept across steps: its size   */
  cpli_desc *desc;  /* merged description in force             */
  long versions;
  int held; /* steps held past their end_step           */
  size_t held_bytes;
  cpl_output_stats port_st;
};

static inline cpli_chan *cpli_out_chan(cpl_output *o, olink *ol) {
  return &o->ctx->data->chan[ol->end];
}

/* queue.c */
/* Root: take the credits and DETACHes that arrived on every link, and
 * write each link's record (CPLI_LREC values) into rec[CPLI_LREC * nl]. */
int cpli_links_poll(cpl_output *o, int64_t *rec);
/* Every rank, after the root's records were shared: adopt them, and take
 * the consumers' selections where they changed (collective). */
int cpli_links_adopt(cpl_output *o, const int64_t *rec);
/* Send step st to link ol now (it holds a credit): header, then data. */
int cpli_step_send(cpl_output *o, olink *ol, pstep *st);
/* Share the root's view of the links (collective); with wait_on >= 0 the
 * root first waits for a credit on that link (its timeout is an error),
 * with wait_on == -2 for one on any link, at most `seconds`. */
int cpli_links_sync(cpl_output *o, int wait_on, double seconds);
/* Root: answer link ol's request with MISSING and this message. */
int cpli_queue_send_missing(cpl_output *o, olink *ol, const char *why);
void cpli_step_unref(cpl_output *o, pstep *st);
/* Make the step independent of the caller's buffers (counted as held),
 * on every producer rank with one outcome (collective): a rank that cannot
 * hold its blocks fails them all, before any transfer of the step. */
int cpli_step_copy(cpl_output *o, pstep *st);
/* Policy for link li after a step was enqueued on it: drop, serve
 * credits, wait (all ranks, same decisions). */
int cpli_queue_apply(cpl_output *o, int li);
/* Wait for credits until link li holds at most `limit` steps. While
 * o->closing, every link that has nothing left gets its end of stream
 * at once (cpli_queue_end_drained). */
int cpli_queue_drain(cpl_output *o, int li, int limit);
/* End the stream of every link with nothing queued or in flight, or
 * whose step in flight its consumer took (it asks for more; all ranks,
 * same decisions): its consumer may wait for that end before it
 * reads the port's other links (one link read to its end, then the
 * next), which close drains one after another. */
int cpli_queue_end_drained(cpl_output *o);
/* The end of stream on one link (rank 0 sends it; once). */
int cpli_queue_end_link(cpl_output *o, olink *ol);
/* Latest links, before the ranks agree: test this rank's messages in
 * flight and write the last two values of each link's record. */
void cpli_flights_record(cpl_output *o, int64_t *rec);
/* After the agreement (all[r * n + off]: rank r's link records): a step
 * complete on every rank is delivered; one older than the link timeout
 * fails the port (the same decision on every rank). */
int cpli_flights_settle(cpl_output *o, const int64_t *all, int n, int off);
/* Progress the messages in flight (local, never waits). */
void cpli_flights_progress(cpl_output *o);
/* Release queued steps that will never be taken. */
void cpli_queue_drop(cpl_output *o, olink *ol);
/* Root: tell every consumer why the port failed. */
void cpli_queue_send_error(cpl_output *o, int status);

#endif
