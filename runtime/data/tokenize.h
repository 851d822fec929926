/* tokenize.h: the byte-level tokenizer (vocab 256: token = byte) and the
 * `llm-train tokenize IN.txt OUTDIR [--val-fraction F] [--shard-tokens N]`
 * command that turns UTF-8 text into llm.c shards: OUTDIR/train_NNNNNN.bin
 * and OUTDIR/val/val_NNNNNN.bin (a subdirectory, so --data OUTDIR reads
 * only the training shards). */
#ifndef LLMT_TOKENIZE_H
#define LLMT_TOKENIZE_H
#include <stddef.h>
#include <stdint.h>

#define LLMT_BYTE_VOCAB 256

/* Offset of the first byte that is not valid UTF-8, or n when all is. */
size_t llmt_utf8_check(const unsigned char *s, size_t n);
void llmt_bytes_to_tokens(const unsigned char *s, size_t n, uint16_t *tok);
/* Returns 0, or -1 when a token is not a byte. */
int llmt_tokens_to_bytes(const uint16_t *tok, size_t n, unsigned char *s);
/* Where the validation part of n bytes starts: at the start of a line,
 * so that about val_fraction of the text goes to validation. */
size_t llmt_val_split(const unsigned char *s, size_t n, double val_fraction);

/* The subcommand; argv[0] is "tokenize". Returns an exit code. */
int llmt_tokenize_main(int argc, char **argv);

#endif
