/* The wait primitive (wait.h). */
#include <time.h>

#include <mpi.h>

#include "core/wait.h"

enum {
  CLOCK_POLLS = 16, /* idle polls between clock reads                    */
  NAP_AFTER = 200,  /* CPLI_WAIT_NAP: idle polls before the first nap    */
};

void cpli_wait_start(cpli_wait *w, double timeout, int style) {
  *w = (cpli_wait){.timeout = timeout, .style = style};
  if (timeout > 0 && isfinite(timeout)) w->deadline = MPI_Wtime() + timeout;
}

int cpli_wait_idle(cpli_wait *w) {
  w->polls++;
  if (w->style == CPLI_WAIT_NAP && w->polls >= NAP_AFTER) {
    const struct timespec nap = {0, 50000};
    nanosleep(&nap, NULL);
  }
  if (!(w->timeout > 0)) return 1; /* a try: one poll */
  if (isinf(w->timeout) || w->polls % CLOCK_POLLS != 0) return 0;
  const double now = MPI_Wtime();
  if (w->moved) {
    w->deadline = now + w->timeout;
    w->moved = 0;
    return 0;
  }
  return now > w->deadline;
}
