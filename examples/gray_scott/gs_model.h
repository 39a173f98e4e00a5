/*
 * Gray-Scott reaction-diffusion, the numerics only (no MPI, no Coupler), so
 * the simulation and the test's serial reference run the very same code.
 *
 *   du/dt = Du lap(u) - u v^2 + F (1 - u)
 *   dv/dt = Dv lap(v) + u v^2 - (F + k) v
 *
 * Explicit Euler with the 5-point Laplacian on a periodic ny x nx grid
 * (spacing 1). Stable while 4 dt max(Du, Dv) <= 1.
 */
#ifndef GS_MODEL_H
#define GS_MODEL_H

#include <stdint.h>

typedef struct gs_params {
  double F, k;   /* feed and kill rates                       */
  double Du, Dv; /* diffusion coefficients                    */
  double dt;     /* time step                                 */
  uint64_t seed; /* noise seed                                */
} gs_params;

/* Defaults: Du 0.16, Dv 0.08, dt 1 and the well-known "mitosis" setting
 * F 0.0367, k 0.0649: spots that divide and spread from the seed. */
void gs_params_default(gs_params *p);

/* Index of cell (i, j) of a block of bnx interior columns stored with one
 * halo cell on every side: row-major (bny + 2) x (bnx + 2). */
static inline long gs_at(int bnx, int i, int j) { return (long)i * (bnx + 2) + j; }

/* Fill the interior of a block: rows y0..y0+bny-1, columns x0..x0+bnx-1 of
 * the global ny x nx grid. u = 1, v = 0, except a square in the centre
 * (u = 0.5, v = 0.25); plus small noise everywhere. The noise depends on
 * the global cell only, so any decomposition starts from the same state. */
void gs_init(const gs_params *p, int ny, int nx, int y0, int x0, int bny, int bnx, double *u,
             double *v);

/* One Euler step of the interior of a block whose halos are filled:
 * (u, v) -> (un, vn). The halos of un and vn are not touched. */
void gs_step(const gs_params *p, int bny, int bnx, const double *u, const double *v, double *un,
             double *vn);

/* Periodic halos of a block that is the whole grid (serial runs). */
void gs_fill_periodic(int ny, int nx, double *f);

#endif
