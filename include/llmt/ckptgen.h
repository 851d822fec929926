/* ckptgen.h: a checkpoint's generation, the order of checkpoints (newest
 * first) for the runtime's lister and retention, the wrapper's pick and
 * llm-train-ckpt-torch (wrapper/python/llm_train.py keeps a copy of
 * LLMT_CKPT_GEN_MAX, checked by tests/wrapper/py_contract.py).
 *
 * Each save's manifest (llm_train.py: its marker) says "generation": 1 +
 * the largest generation in CKPT_DIR when it was saved. Newest is the
 * largest generation, then (equal generations) the later creation time
 * (llm-train) or the larger step (llm_train.py); a manifest without the
 * field (written before it existed, or by torch.distributed.checkpoint)
 * is generation 0, older than any new save. Unlike created_ns, it does
 * not depend on the clock of the host that wrote it.
 *
 * A valid generation is a JSON integer in [0, LLMT_CKPT_GEN_MAX] (2^53 -
 * 1: exact in every JSON reader, doubles included). Anything else there
 * (negative, larger, a string, a float, true/false, null) makes the
 * checkpoint invalid ("bad manifest: generation V: ..."), as a bad step
 * does; the next save past LLMT_CKPT_GEN_MAX stays at it (never wraps):
 * equal generations, ordered by creation time. */
#ifndef LLMT_CKPTGEN_H
#define LLMT_CKPTGEN_H
#include <jansson.h>

#define LLMT_CKPT_GEN_MAX 9007199254740991LL

/* The generation x holds (NULL: absent, 0) into *g: 0, or -1 when x is
 * not a valid one. */
static inline int llmt_ckpt_gen_parse(const json_t *x, long long *g)
{
	*g = 0;
	if (!x)
		return 0;
	if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > LLMT_CKPT_GEN_MAX)
		return -1;
	*g = (long long)json_integer_value(x);
	return 0;
}

/* The generation of a save after one of generation max. */
static inline long long llmt_ckpt_gen_next(long long max)
{
	return max < 0 ? 1 : max < LLMT_CKPT_GEN_MAX ? max + 1 : LLMT_CKPT_GEN_MAX;
}

#endif
