/* ref_dump.h: writes the directory of the reference-check protocol
 * (read by ref_dump.py) for ref_model.c (CPU) and gpu_test.c (GPU). */
#ifndef REF_DUMP_H
#define REF_DUMP_H
#include <stddef.h>
#include <stdint.h>
#include "model/model.h"

/* dir/name <- bytes of p; on failure "prog: cannot write PATH", -1. */
int ref_dump_file(const char *prog, const char *dir, const char *name, const void *p,
                  size_t bytes);
/* params.txt (the parameter table) and params.bin (the initial weights). */
int ref_dump_params(const char *prog, llmt_model *m, const char *dir);
/* What PyTorch recomputes after step 0: tokens, targets, logits [M][V]
 * and the gradients. */
int ref_dump_step0(const char *prog, llmt_model *m, const char *dir, const int32_t *tok,
                   const int32_t *tgt, const float *logits, int M, int V);
#endif
