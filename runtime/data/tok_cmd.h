/* tok_cmd.h: the commands around a model's own tokenizer:
 * `llm-train tokenizer-train IN.txt OUT.model --vocab N [--type bpe|unigram]`
 * and the shard writing of `llm-train tokenize ... --tokenizer FILE`. */
#ifndef LLMT_TOK_CMD_H
#define LLMT_TOK_CMD_H
#include <stddef.h>
#include "tokenizer.h"

/* The subcommand; argv[0] is "tokenizer-train". Returns an exit code. */
int llmt_tokenizer_train_main(int argc, char **argv);

/* Encode text (with BOS before / EOS after when asked) and write it as
 * DIR/PREFIX_NNNNNN.bin shards of at most `per` tokens; *ntok, *count
 * say what was written. Returns 0 or an exit code, with a message on
 * stderr. */
int llmt_tok_write_shards(llmt_tok *t, const char *dir, const char *prefix, const char *text,
	size_t n, size_t per, int bos, int eos, size_t *ntok, int *count);

#endif
