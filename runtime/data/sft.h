/* sft.h: instruction data for fine-tuning: a conversation (prompt and
 * response, or messages with roles) rendered by a chat template into
 * token ids with a flag per id (mask.h: LLMT_MASK_TRAIN on the response
 * tokens only), and the `llm-train tokenize-sft` command that packs them. */
#ifndef LLMT_SFT_H
#define LLMT_SFT_H
#include <stddef.h>
#include <stdint.h>
#include "tokenizer.h"

typedef struct {
	const char *role;     /* "system", "user" or "assistant" */
	const char *content;
	size_t len;
} llmt_sft_msg;

/* One rendered sample: ids and their flags (parallel, n each). */
typedef struct {
	llmt_ids ids;
	uint8_t *flags;
	size_t fcap;
} llmt_sft_sample;

/* 1 when name is a template (plain, llama2, chatml). */
int llmt_sft_template_known(const char *name);
/* 0 when the tokenizer has the tokens the template needs; else
 * LLMT_EXIT_USAGE with err naming the missing token. */
int llmt_sft_template_check(const llmt_tok *t, const char *name, char *err, size_t errlen);
/* 0 when role is one of system, user, assistant. */
int llmt_sft_role_ok(const char *role);
/* Render n messages into s (reset first). 0, or an exit code with err. */
int llmt_sft_render(llmt_tok *t, const char *name, const llmt_sft_msg *m, int n,
	llmt_sft_sample *s, char *err, size_t errlen);
void llmt_sft_sample_free(llmt_sft_sample *s);

/* `llm-train tokenize-sft IN.jsonl OUTDIR --tokenizer FILE --template NAME
 * [--seq N] [--shard-tokens N]`; argv[0] is "tokenize-sft". */
int llmt_tokenize_sft_main(int argc, char **argv);

#endif
