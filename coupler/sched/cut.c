/*
 * Stream cuts; see cut.h.
 */
#include "sched/cut.h"

#include <math.h>

#include "sched/flow.h"

const char *cpli_cut_why_text(int why) {
  switch (why) {
  case CPLI_CUT_FIXED: return "fixed cut (CPL_CHUNK or the tuning file's chunk)";
  case CPLI_CUT_LAST: return "not forwarded: whole";
  case CPLI_CUT_BUSY: return "forwarded by a rank with as much of its own to send: whole";
  case CPLI_CUT_PORT:
    return "forwarded, but the receiver's port takes p blocks in all: forwarding after the last "
           "byte costs nothing: whole";
  case CPLI_CUT_PIPE: return "forwarded along a pipeline: m* pieces";
  case CPLI_CUT_BCAST: return "broadcast block (n from the pipeline)";
  default: return "whole";
  }
}

static double gap(const cpli_cut_model *c) { return c->overhead > 0 ? c->overhead : c->alpha; }

double cpli_cut_time(const cpli_cut_model *c, size_t bytes, int depth, long long m) {
  if (m < 1) m = 1;
  if (depth < 1) depth = 1;
  const double L = (double)bytes;
  return (depth - 1) * c->alpha + (double)m * gap(c) + (double)(m + depth - 1) * c->beta * L / m;
}

long long cpli_cut_pieces(const cpli_cut_model *c, size_t bytes, int depth) {
  if (bytes == 0) return 1;
  const long long lo = (long long)((bytes - 1) / CPLI_FLOW_MAX_MSG + 1);
  long long hi = (long long)(bytes / (c->min_piece ? c->min_piece : CPLI_CUT_MIN_PIECE));
  if (hi < lo) hi = lo;
  if (depth <= 1) return lo;
  const double o = gap(c);
  const double m = o > 0 && c->beta > 0 ? sqrt(c->beta * (double)bytes * (depth - 1) / o) : 1;
  long long mi = m >= (double)hi ? hi : (long long)llround(m);
  if (mi < lo) mi = lo;
  if (mi > hi) mi = hi;
  /* the rounding can miss the integer optimum by one */
  if (mi + 1 <= hi && cpli_cut_time(c, bytes, depth, mi + 1) < cpli_cut_time(c, bytes, depth, mi))
    mi++;
  else if (mi - 1 >= lo &&
           cpli_cut_time(c, bytes, depth, mi - 1) < cpli_cut_time(c, bytes, depth, mi))
    mi--;
  return mi;
}

size_t cpli_cut_chunk(size_t bytes, long long m) {
  if (m <= 1 || bytes == 0) return 0;
  return (bytes - 1) / (size_t)m + 1;
}
