/* libFuzzer entry point for the workflow parser and validator: any input
 * must give CPL_OK or an error with messages, never a crash, hang or leak.
 * Built as a fuzzer with -DCPL_FUZZ=ON (clang); fuzz_replay.c runs the same
 * entry point over the corpora in every build. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "coupler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cpl_diag *d = NULL;
  if (cpl_diag_create(&d) != CPL_OK) return 0;
  cpl_workflow *wf = NULL;
  int rc = cpl_workflow_load_buffer((const char *)data, size, "fuzz.yaml", d, &wf);
  if (rc == CPL_OK) {
    /* A model that loads must be fully consistent: walk all of it. */
    int total = 0;
    for (int i = 0; i < cpl_workflow_component_count(wf); i++) {
      cpl_component_info ci;
      if (cpl_workflow_component(wf, i, &ci) != CPL_OK) __builtin_trap();
      if (ci.nprocs < 1 || !ci.name) __builtin_trap();
      for (int a = 0; a < ci.argc; a++)
        if (!ci.argv[a]) __builtin_trap();
      total += ci.nprocs;
    }
    if (total != cpl_workflow_total_procs(wf)) __builtin_trap();
    for (int i = 0; i < cpl_workflow_link_count(wf); i++) {
      cpl_link_info li;
      if (cpl_workflow_link(wf, i, &li) != CPL_OK) __builtin_trap();
      if (li.from_index == li.to_index || !li.from_port || !li.to_port) __builtin_trap();
    }
  } else {
    /* A failure always says why, with the file name first. */
    if (cpl_diag_count(d) == 0 && rc != CPL_ERR_NOMEM) __builtin_trap();
    for (int i = 0; i < cpl_diag_count(d); i++)
      if (strncmp(cpl_diag_message(d, i), "fuzz.yaml:", 10) != 0) __builtin_trap();
  }
  cpl_workflow_destroy(wf);
  cpl_diag_destroy(d);
  return 0;
}
