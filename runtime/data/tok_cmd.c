/* tok_cmd.c: `llm-train tokenizer-train` (a SentencePiece BPE or unigram
 * model trained on a text, written atomically: a temporary file renamed)
 * and the sharding of text encoded by a model's own tokenizer. */
#include "tok_cmd.h"
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "llmt/exitcodes.h"
#include "shard.h"
#include "spm.h"

#define CMD "llm-train tokenizer-train"

static int push_id(llmt_ids *ids, int id)
{
	if (ids->n == ids->cap) {
		uint32_t *v = realloc(ids->v, sizeof(uint32_t) * (ids->cap = ids->cap * 2 + 1024));
		if (!v)
			return LLMT_EXIT_SOFTWARE;
		ids->v = v;
	}
	ids->v[ids->n++] = (uint32_t)id;
	return 0;
}

int llmt_tok_write_shards(llmt_tok *t, const char *dir, const char *prefix, const char *text,
	size_t n, size_t per, int bos, int eos, size_t *ntok, int *count)
{
	llmt_ids ids = { 0 };
	char path[4096], err[4400];
	int rc = 0;

	*count = 0;
	*ntok = 0;
	if (bos)
		rc = push_id(&ids, llmt_tok_bos(t));
	if (!rc)
		rc = llmt_tok_encode(t, text, n, &ids, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "out of memory");
	if (!rc && eos && (rc = push_id(&ids, llmt_tok_eos(t))))
		snprintf(err, sizeof(err), "out of memory");
	if (rc) {
		fprintf(stderr, "llm-train tokenize: %s: %s\n", llmt_tok_path(t), err);
		free(ids.v);
		return rc;
	}
	for (size_t at = 0; at < ids.n; at += per) {
		size_t m = ids.n - at < per ? ids.n - at : per;
		snprintf(path, sizeof(path), "%s/%s_%06d.bin", dir, prefix, *count);
		rc = llmt_shard_write_ids(path, ids.v + at, m, (uint32_t)llmt_tok_vocab(t), err, sizeof(err));
		if (rc) {
			fprintf(stderr, "llm-train tokenize: %s\n", err);
			break;
		}
		(*count)++;
	}
	*ntok = ids.n;
	free(ids.v);
	return rc;
}

static int write_model(const char *out, const char *model, size_t len)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	f = fopen(tmp, "wb");
	if (!f) {
		fprintf(stderr, CMD ": %s: %s\n", tmp, strerror(errno));
		return LLMT_EXIT_IO;
	}
	if (fwrite(model, 1, len, f) != len || fflush(f) || fsync(fileno(f))) {
		fprintf(stderr, CMD ": %s: write failed: %s\n", tmp, strerror(errno));
		fclose(f);
		unlink(tmp);
		return LLMT_EXIT_IO;
	}
	if (fclose(f) || rename(tmp, out)) {
		fprintf(stderr, CMD ": %s: %s\n", out, strerror(errno));
		unlink(tmp);
		return LLMT_EXIT_IO;
	}
	return 0;
}

/* SentencePiece's own reasons, told as the option they are about */
static int train_failed(const char *err, long vocab, const char *type)
{
	const char *p;

	if ((p = strstr(err, "Vocabulary size too high")) || (p = strstr(err, "Vocabulary size is smaller"))) {
		fprintf(stderr, CMD ": --vocab %ld: %s (for this text, --type %s)\n", vocab, p, type);
		return LLMT_EXIT_USAGE;
	}
	fprintf(stderr, CMD ": SentencePiece could not train: %s\n", err);
	return LLMT_EXIT_DATA;
}

int llmt_tokenizer_train_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vocab", required_argument, NULL, 'v' },
		{ "type", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *usage = "usage: " CMD " IN.txt OUT.model --vocab N [--type bpe|unigram]";
	const char *type = "bpe";
	long vocab = 0;
	char *model = NULL, err[4096], *end;
	size_t len = 0;
	struct stat st;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			errno = 0;
			vocab = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || vocab < 8 || vocab > 1 << 24) {
				fprintf(stderr, CMD ": --vocab %s: want an integer in [8, %d]\n", optarg, 1 << 24);
				return LLMT_EXIT_USAGE;
			}
			break;
		case 't':
			if (strcmp(optarg, "bpe") && strcmp(optarg, "unigram")) {
				fprintf(stderr, CMD ": --type %s: want bpe or unigram\n", optarg);
				return LLMT_EXIT_USAGE;
			}
			type = optarg;
			break;
		case 'h':
			puts(usage);
			return 0;
		default:
			fprintf(stderr, "%s\n", usage);
			return LLMT_EXIT_USAGE;
		}
	}
	if (argc - optind != 2 || !vocab) {
		fprintf(stderr, "%s%s\n", usage, argc - optind == 2 ? " (--vocab is required)" : "");
		return LLMT_EXIT_USAGE;
	}
	if (stat(argv[optind], &st) || !S_ISREG(st.st_mode) || !st.st_size) {
		fprintf(stderr, CMD ": %s: %s\n", argv[optind], errno == ENOENT ? strerror(errno) : "not a non-empty file");
		return errno == ENOENT ? LLMT_EXIT_NOINPUT : LLMT_EXIT_DATA;
	}
	if (llmt_spm_train(argv[optind], (int)vocab, type, &model, &len, err, sizeof(err)))
		return train_failed(err, vocab, type);
	rc = write_model(argv[optind + 1], model, len);
	if (!rc)
		printf(CMD ": %s: %s model of %ld pieces written to %s\n", argv[optind], type, vocab, argv[optind + 1]);
	free(model);
	return rc;
}
