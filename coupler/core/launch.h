/*
 * Talking to cpl-exec, the process cpl-run starts each program with (see
 * coupler/tools/cpl_exec.c). It passes a pipe in CPL_READY_FD; on it this
 * process says that it reached cpl_init ("I"), what it last waited in
 * ("P link L, step S"), that it reached cpl_finalize ("F") and
 * MPI_Finalize ("M"). cpl-exec stops the job when the program ends
 * without "I" or "F", names one that ends without "M" (MPICH's launcher
 * may kill the job for it), and names the last "P" when it dies, since
 * its peers are killed before they can.
 * Without CPL_READY_FD (not under cpl-run) all of this does nothing.
 */
#ifndef CPLI_CORE_LAUNCH_H
#define CPLI_CORE_LAUNCH_H

/* Take the pipe from the environment (once) and say "I". */
void cpli_launch_init(void);
/* Say "F". */
void cpli_launch_finalize(void);
/* Say "M" (MPI_Finalize started; the group layer hooks it). */
void cpli_launch_mpi_finalize(void);
/* Whether cpl-exec listens (CPL_READY_FD was given). */
int cpli_launch_listened(void);
/* "P link LABEL, step STEP": a collective of a link starts. */
void cpli_launch_progress(const char *label, long step);
/* Under cpl-run, a line on stderr naming this process (component, its
 * rank, the job rank), the MPI_Abort error code and the last link and
 * step: MPICH's banner names only the job rank, and the cpl-exec that
 * would name the process is killed with the job. */
void cpli_launch_abort(int jobrank, int code);

#endif
