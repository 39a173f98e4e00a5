/* PNG pictures of a 2-D field with a viridis-like colormap (libpng). */
#ifndef GS_IMAGE_H
#define GS_IMAGE_H

/* Upscale factor so the longer side of an ny x nx field is at least
 * min_px pixels (1 for fields that are large already). */
int image_scale(int ny, int nx, int min_px);

/* Write field f (ny x nx, row-major, row 0 at the top) to a PNG file,
 * colours scaled from lo (dark blue) to hi (yellow), each cell drawn as a
 * scale x scale square. Returns 0, or -1 with a message in err. */
int image_write_png(const char *path, const float *f, int ny, int nx, double lo, double hi,
                    int scale, char *err, int errsize);

#endif
