#include "gs_model.h"

void gs_params_default(gs_params *p) {
  p->F = 0.0367;
  p->k = 0.0649;
  p->Du = 0.16;
  p->Dv = 0.08;
  p->dt = 1.0;
  p->seed = 42;
}

/* splitmix64: a stateless hash, so the noise of a cell does not depend on
 * the order in which ranks visit cells. */
static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform in [-0.5, 0.5) for global cell (y, x) and stream s. */
static double noise(uint64_t seed, int s, int y, int x) {
  uint64_t h = mix(mix(mix(seed) ^ (uint64_t)s) ^ ((uint64_t)y << 32 | (uint32_t)x));
  return (double)(h >> 11) * 0x1.0p-53 - 0.5;
}

void gs_init(const gs_params *p, int ny, int nx, int y0, int x0, int bny, int bnx, double *u,
             double *v) {
  int side = (ny < nx ? ny : nx) / 8;
  if (side < 4) side = 4;
  int cy = ny / 2 - side / 2, cx = nx / 2 - side / 2;
  for (int i = 0; i < bny; i++) {
    int y = y0 + i;
    for (int j = 0; j < bnx; j++) {
      int x = x0 + j;
      int in = y >= cy && y < cy + side && x >= cx && x < cx + side;
      long c = gs_at(bnx, i + 1, j + 1);
      u[c] = (in ? 0.5 : 1.0) + 0.02 * noise(p->seed, 0, y, x);
      v[c] = (in ? 0.25 : 0.0) + 0.02 * noise(p->seed, 1, y, x);
      if (v[c] < 0) v[c] = 0;
    }
  }
}

void gs_step(const gs_params *p, int bny, int bnx, const double *u, const double *v, double *un,
             double *vn) {
  const double F = p->F, fk = p->F + p->k, Du = p->Du, Dv = p->Dv, dt = p->dt;
  const long w = bnx + 2;
  for (int i = 1; i <= bny; i++) {
    for (int j = 1; j <= bnx; j++) {
      long c = gs_at(bnx, i, j);
      double uc = u[c], vc = v[c];
      double lu = u[c - w] + u[c + w] + u[c - 1] + u[c + 1] - 4.0 * uc;
      double lv = v[c - w] + v[c + w] + v[c - 1] + v[c + 1] - 4.0 * vc;
      double uvv = uc * vc * vc;
      un[c] = uc + dt * (Du * lu - uvv + F * (1.0 - uc));
      vn[c] = vc + dt * (Dv * lv + uvv - fk * vc);
    }
  }
}

void gs_fill_periodic(int ny, int nx, double *f) {
  for (int j = 1; j <= nx; j++) {
    f[gs_at(nx, 0, j)] = f[gs_at(nx, ny, j)];
    f[gs_at(nx, ny + 1, j)] = f[gs_at(nx, 1, j)];
  }
  for (int i = 0; i <= ny + 1; i++) {
    f[gs_at(nx, i, 0)] = f[gs_at(nx, i, nx)];
    f[gs_at(nx, i, nx + 1)] = f[gs_at(nx, i, 1)];
  }
}
