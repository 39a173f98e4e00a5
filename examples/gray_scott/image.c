#include "image.h"

#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Control points of a perceptually uniform dark-blue -> green -> yellow map
 * (close to matplotlib's viridis); colours in between are interpolated
 * linearly, which is smooth enough at this spacing. */
static const unsigned char ctrl[][3] = {
    {68, 1, 84},    {72, 40, 120},  {62, 74, 137},  {49, 104, 142}, {38, 130, 142},
    {31, 158, 137}, {53, 183, 121}, {110, 206, 88}, {181, 222, 43}, {253, 231, 37}};
enum { NCTRL = sizeof ctrl / sizeof ctrl[0] };

static void colour(double s, unsigned char rgb[3]) {
  if (!(s > 0)) s = 0; /* also catches NaN */
  if (s > 1) s = 1;
  double x = s * (NCTRL - 1);
  int i = (int)x;
  if (i >= NCTRL - 1) i = NCTRL - 2;
  double w = x - i;
  for (int c = 0; c < 3; c++)
    rgb[c] = (unsigned char)(ctrl[i][c] + w * (ctrl[i + 1][c] - ctrl[i][c]) + 0.5);
}

int image_scale(int ny, int nx, int min_px) {
  int longer = ny > nx ? ny : nx;
  if (longer <= 0 || longer >= min_px) return 1;
  return (min_px + longer - 1) / longer;
}

int image_write_png(const char *path, const float *f, int ny, int nx, double lo, double hi,
                    int scale, char *err, int errsize) {
  int w = nx * scale, h = ny * scale;
  unsigned char *rgb = malloc((size_t)w * h * 3);
  if (!rgb) {
    snprintf(err, errsize, "out of memory for a %d x %d image", w, h);
    return -1;
  }
  double span = hi > lo ? hi - lo : 1.0; /* a flat field is all dark */
  for (int y = 0; y < ny; y++) {
    unsigned char *row = rgb + (size_t)y * scale * w * 3;
    for (int x = 0; x < nx; x++) {
      unsigned char c[3];
      colour((f[(size_t)y * nx + x] - lo) / span, c);
      for (int k = 0; k < scale; k++) memcpy(row + ((size_t)x * scale + k) * 3, c, 3);
    }
    for (int k = 1; k < scale; k++) /* repeat the row for the upscale */
      memcpy(row + (size_t)k * w * 3, row, (size_t)w * 3);
  }
  /* libpng's simplified API: no setjmp error handling needed. */
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = (png_uint_32)w;
  img.height = (png_uint_32)h;
  img.format = PNG_FORMAT_RGB;
  int ok = png_image_write_to_file(&img, path, 0, rgb, 0, NULL);
  if (!ok) snprintf(err, errsize, "%s: %s", path, img.message);
  png_image_free(&img);
  free(rgb);
  return ok ? 0 : -1;
}
