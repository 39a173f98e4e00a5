/* Placeholders while selective delivery and serving land (same session). */
#include "core/error.h"
#include "data/data.h"

#define TODO(f) return cpli_fail(CPL_ERR_UNSUPPORTED, f ": not implemented yet")
int cpl_input_begin_step_at(cpl_input *in, long want, long *step) {
  (void)in; (void)want; (void)step; TODO("cpl_input_begin_step_at");
}
int cpl_input_select(cpl_input *in, const char *dataset, int ndims, int nboxes,
                     const hsize_t start[], const hsize_t count[]) {
  (void)in; (void)dataset; (void)ndims; (void)nboxes; (void)start; (void)count;
  TODO("cpl_input_select");
}
int cpl_input_select_rows(cpl_input *in, const char *dataset, int part, int nparts) {
  (void)in; (void)dataset; (void)part; (void)nparts; TODO("cpl_input_select_rows");
}
int cpl_input_select_clear(cpl_input *in) { (void)in; TODO("cpl_input_select_clear"); }
int cpl_input_stats_get(const cpl_input *in, cpl_input_stats *st) {
  (void)in; (void)st; TODO("cpl_input_stats_get");
}
int cpl_output_serve(cpl_output *out) { (void)out; TODO("cpl_output_serve"); }
int cpl_output_requests(cpl_output *out, double seconds, long want[]) {
  (void)out; (void)seconds; (void)want; TODO("cpl_output_requests");
}
int cpl_output_send(cpl_output *out, int link) { (void)out; (void)link; TODO("cpl_output_send"); }
int cpl_output_refuse(cpl_output *out, int link, const char *why) {
  (void)out; (void)link; (void)why; TODO("cpl_output_refuse");
}
int cpl_output_end_link(cpl_output *out, int link) { (void)out; (void)link; TODO("cpl_output_end_link"); }
