/* gen_model.h: one process's whole Llama-family model for generation:
 * fp32 weights (the tp = pp = 1 table), a KV cache, one token at a time
 * (llmt_gen_step), and the same model recomputed without a cache through
 * the training model (llmt_gen_recompute) to check the cache against. */
#ifndef LLMT_GEN_MODEL_H
#define LLMT_GEN_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "model/model.h"

typedef struct llmt_gen llmt_gen;

/* A model over weights flat (taken over: freed by llmt_gen_free) laid out
 * by table tab (llmt_model_table of c at tp = pp = 1), caching up to
 * max_t positions (<= c->max_seq). NULL with err on failure. */
llmt_gen *llmt_gen_new(const llmt_config *c, const llmt_param_info *tab, int ntab, float *flat, int max_t,
                       char *err, size_t errlen);
void llmt_gen_free(llmt_gen *g);
const llmt_config *llmt_gen_config(const llmt_gen *g);

/* Feed token tok at position pos (0, 1, 2, ... in order: the cache holds
 * positions < pos); returns the logits (vocab_size floats) of the next
 * token, valid until the next call. */
const float *llmt_gen_step(llmt_gen *g, int32_t tok, int pos);

/* No cache: the logits after tokens[0..n) from a full forward of the
 * training model (model/model.c, fp32) over all n tokens. NULL when it
 * cannot be built (message on stderr). */
const float *llmt_gen_recompute(llmt_gen *g, const int32_t *tokens, int n);

#endif
