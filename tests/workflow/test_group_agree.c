/* Unit tests of the cpl_init agreement (pure: no MPI calls). */
#include <stdio.h>
#include <string.h>

#include "group/agree.h"

static int failures, checks;
#define CHECK(cond)                                                                                \
  do {                                                                                             \
    checks++;                                                                                      \
    if (!(cond)) {                                                                                 \
      failures++;                                                                                  \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n  last error: %s\n", __FILE__, __LINE__, #cond,    \
              cpl_last_error());                                                                   \
    }                                                                                              \
  } while (0)

static const char *yaml = "name: t\n"
                          "components:\n"
                          "  - {name: sim, nprocs: 2, command: x, outputs: [out]}\n"
                          "  - {name: ana, nprocs: 1, command: y, inputs: [in]}\n"
                          "links: [{from: sim.out, to: ana.in}]\n";

int main(void) {
  cpl_workflow *wf = NULL;
  if (cpl_workflow_load_buffer(yaml, strlen(yaml), "t.yaml", NULL, &wf)) {
    fprintf(stderr, "cannot load: %s\n", cpl_last_error());
    return 1;
  }
  uint64_t h = wf->hash;
  cpli_rank_rec ok[3] = {{CPL_OK, 1, h}, {CPL_OK, 0, h}, {CPL_OK, 0, h}};

  /* Any order of ranks is fine; leaders are the lowest ranks. */
  CHECK(cpli_group_agree(wf, 3, ok, 0, "ana") == CPL_OK);
  int leaders[2];
  cpli_group_leaders(wf, 3, ok, leaders);
  CHECK(leaders[0] == 1 && leaders[1] == 0);

  /* Pack/unpack round trip, including negative component codes. */
  cpli_rank_rec r = {CPL_ERR_CONFIG, CPLI_COMP_NONE, 0x0123456789abcdefULL}, back;
  uint32_t w[CPLI_REC_WORDS];
  cpli_rec_pack(&r, w);
  cpli_rec_unpack(w, &back);
  CHECK(back.status == r.status && back.comp == r.comp && back.hash == r.hash);

  /* Another rank failed to load: same status here, naming that rank. */
  cpli_rank_rec f[3] = {{CPL_OK, 0, h}, {CPL_ERR_IO, CPLI_COMP_NONE, 0}, {CPL_OK, 1, h}};
  CHECK(cpli_group_agree(wf, 3, f, 0, "sim") == CPL_ERR_IO);
  CHECK(strstr(cpl_last_error(), "rank(s) 1") != NULL);

  cpli_rank_rec hsh[3] = {{CPL_OK, 0, h}, {CPL_OK, 0, h + 1}, {CPL_OK, 1, h}};
  CHECK(cpli_group_agree(wf, 3, hsh, 2, "ana") == CPL_ERR_MISMATCH);
  CHECK(strstr(cpl_last_error(), "different workflow files: rank(s) 1") != NULL);

  cpli_rank_rec unk[3] = {{CPL_OK, 0, h}, {CPL_OK, 0, h}, {CPL_OK, CPLI_COMP_UNKNOWN, h}};
  CHECK(cpli_group_agree(wf, 3, unk, 2, "anna") == CPL_ERR_MISMATCH);
  CHECK(strstr(cpl_last_error(), "(this rank: \"anna\")") != NULL);
  CHECK(cpli_group_agree(wf, 3, unk, 0, "sim") == CPL_ERR_MISMATCH);
  CHECK(strstr(cpl_last_error(), "rank(s) 2 name a component") != NULL);

  cpli_rank_rec none[3] = {{CPL_OK, CPLI_COMP_NONE, h}, {CPL_OK, 0, h}, {CPL_OK, 1, h}};
  CHECK(cpli_group_agree(wf, 3, none, 1, "sim") == CPL_ERR_MISMATCH);
  CHECK(strstr(cpl_last_error(), "rank(s) 0 have no component name") != NULL);

  /* Too few ranks, and right size but wrong split. */
  CHECK(cpli_group_agree(wf, 2, ok + 1, 0, "sim") == CPL_ERR_MISMATCH);
  CHECK(strstr(cpl_last_error(), "the job has 2 processes, workflow \"t\" needs 3") != NULL);
  CHECK(strstr(cpl_last_error(), "component \"ana\" has 0 but nprocs is 1 (t.yaml:4:") != NULL);
  cpli_rank_rec split[3] = {{CPL_OK, 1, h}, {CPL_OK, 1, h}, {CPL_OK, 0, h}};
  CHECK(cpli_group_agree(wf, 3, split, 0, "ana") == CPL_ERR_MISMATCH);
  CHECK(strstr(cpl_last_error(), "do not match the components") != NULL);

  cpl_workflow_destroy(wf);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
