/* tokenize.c: byte-level tokenization of UTF-8 text into token shards
 * (the default: no vocabulary file), or with --tokenizer a model's own
 * tokenizer (tokenizer.h; its shards are written by tok_cmd.c). */
#include "tokenize.h"
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>
#include "llmt/exitcodes.h"
#include "shard.h"
#include "tok_cmd.h"

size_t llmt_utf8_check(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i];
		size_t len;
		unsigned min;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			len = 2, min = 0x80, cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			len = 3, min = 0x800, cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			len = 4, min = 0x10000, cp = c & 0x07;
		} else {
			return i;
		}
		if (i + len > n)
			return i;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += len;
	}
	return n;
}

void llmt_bytes_to_tokens(const unsigned char *s, size_t n, uint16_t *tok)
{
	for (size_t i = 0; i < n; i++)
		tok[i] = s[i];
}

int llmt_tokens_to_bytes(const uint16_t *tok, size_t n, unsigned char *s)
{
	for (size_t i = 0; i < n; i++) {
		if (tok[i] >= LLMT_BYTE_VOCAB)
			return -1;
		s[i] = (unsigned char)tok[i];
	}
	return 0;
}

size_t llmt_val_split(const unsigned char *s, size_t n, double val_fraction)
{
	size_t at;

	if (val_fraction <= 0)
		return n;
	at = (size_t)((double)n * (1.0 - val_fraction));
	while (at > 0 && at < n && s[at - 1] != '\n')
		at--;
	return at;
}

static int write_shards(const char *dir, const char *prefix, const unsigned char *s, size_t n,
	size_t per, uint16_t *buf, int *count)
{
	char path[4096], err[4400];

	*count = 0;
	for (size_t at = 0; at < n; at += per) {
		size_t m = n - at < per ? n - at : per;
		int rc;
		llmt_bytes_to_tokens(s + at, m, buf);
		snprintf(path, sizeof(path), "%s/%s_%06d.bin", dir, prefix, *count);
		rc = llmt_shard_write(path, buf, m, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "llm-train tokenize: %s\n", err);
			return rc;
		}
		(*count)++;
	}
	return 0;
}

static int has_shards(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		found = len > 4 && !strcmp(e->d_name + len - 4, ".bin");
	}
	closedir(d);
	return found;
}

/* 0755 (less by the umask), never group- or world-writable: the shards of
 * a directory are all read, in name order, so whoever may add a file
 * there chooses training data. Readable, unlike checkpoint dirs (0700):
 * a tokenized corpus is commonly shared by a team; a private umask keeps
 * it private. */
static int make_dir(const char *dir)
{
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "llm-train tokenize: %s: %s\n", dir, strerror(errno));
		return LLMT_EXIT_IO;
	}
	return 0;
}

static int open_tokenizer(llmt_tok **tok, const char *file, int bos, int eos, long long block)
{
	char err[4400];
	int rc = llmt_tok_open(tok, file, err, sizeof(err));

	if (rc) {
		fprintf(stderr, "llm-train tokenize: --tokenizer %s\n", err);
		return rc;
	}
	if ((bos && llmt_tok_bos(*tok) < 0) || (eos && llmt_tok_eos(*tok) < 0)) {
		fprintf(stderr, "llm-train tokenize: --%s: tokenizer %s has no %s token\n", bos && llmt_tok_bos(*tok) < 0 ? "bos" : "eos",
			file, bos && llmt_tok_bos(*tok) < 0 ? "BOS" : "EOS");
		llmt_tok_close(*tok);
		*tok = NULL;
		return LLMT_EXIT_USAGE;
	}
	if (block >= 0)
		llmt_tok_set_block(*tok, (size_t)block);
	return 0;
}

typedef struct {
	double valf;
	long long per, block;
	const char *tokfile;
	int bos, eos;
} tok_opts;

/* 0, an exit code, or -1 after --help */
static int parse_opts(int argc, char **argv, tok_opts *o)
{
	static const struct option opts[] = {
		{ "val-fraction", required_argument, NULL, 'v' },
		{ "shard-tokens", required_argument, NULL, 's' },
		{ "tokenizer", required_argument, NULL, 't' },
		{ "block-bytes", required_argument, NULL, 'b' },
		{ "bos", no_argument, NULL, 'B' },
		{ "eos", no_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *usage = "usage: llm-train tokenize IN.txt OUTDIR [--val-fraction F] [--shard-tokens N]\n"
		"         [--tokenizer FILE [--bos] [--eos] [--block-bytes N]]";
	int c;

	*o = (tok_opts){ 0.0, 100000000, -1, NULL, 0, 0 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'v':
			o->valf = strtod(optarg, &end);
			if (*end || end == optarg || !(o->valf >= 0 && o->valf < 1)) {
				fprintf(stderr, "llm-train tokenize: --val-fraction %s: want a number in [0, 1)\n", optarg);
				return LLMT_EXIT_USAGE;
			}
			break;
		case 's':
			o->per = strtoll(optarg, &end, 10);
			if (*end || end == optarg || o->per < 1 || o->per > INT32_MAX) {
				fprintf(stderr, "llm-train tokenize: --shard-tokens %s: want 1..%d\n", optarg, INT32_MAX);
				return LLMT_EXIT_USAGE;
			}
			break;
		case 'b':
			o->block = strtoll(optarg, &end, 10);
			if (*end || end == optarg || o->block < 0) {
				fprintf(stderr, "llm-train tokenize: --block-bytes %s: want a byte count (0: one block)\n", optarg);
				return LLMT_EXIT_USAGE;
			}
			break;
		case 't': o->tokfile = optarg; break;
		case 'B': o->bos = 1; break;
		case 'E': o->eos = 1; break;
		case 'h':
			puts(usage);
			return -1;
		default:
			fprintf(stderr, "%s\n", usage);
			return LLMT_EXIT_USAGE;
		}
	}
	if ((o->bos || o->eos || o->block >= 0) && !o->tokfile) {
		fprintf(stderr, "llm-train tokenize: --bos, --eos and --block-bytes need --tokenizer\n");
		return LLMT_EXIT_USAGE;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "%s\n", usage);
		return LLMT_EXIT_USAGE;
	}
	return 0;
}

int llmt_tokenize_main(int argc, char **argv)
{
	tok_opts o;
	llmt_tok *tok = NULL;
	const char *in, *out;
	char valdir[4096];
	unsigned char *text = NULL;
	uint16_t *buf;
	struct stat st;
	size_t n, bad, split;
	int fd, rc, ntrain = 0, nval = 0;

	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	in = argv[optind];
	out = argv[optind + 1];
	if (o.tokfile && (rc = open_tokenizer(&tok, o.tokfile, o.bos, o.eos, o.block)))
		return rc;
	fd = open(in, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "llm-train tokenize: %s: %s\n", in, strerror(errno));
		if (fd >= 0)
			close(fd);
		return errno == ENOENT ? LLMT_EXIT_NOINPUT : LLMT_EXIT_IO;
	}
	n = (size_t)st.st_size;
	if (n == 0) {
		fprintf(stderr, "llm-train tokenize: %s: empty file\n", in);
		close(fd);
		return LLMT_EXIT_DATA;
	}
	text = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (text == MAP_FAILED) {
		fprintf(stderr, "llm-train tokenize: %s: mmap: %s\n", in, strerror(errno));
		return LLMT_EXIT_IO;
	}
	bad = llmt_utf8_check(text, n);
	if (bad != n) {
		fprintf(stderr, "llm-train tokenize: %s: not UTF-8 text: byte 0x%02x at offset %zu\n",
			in, text[bad], bad);
		munmap(text, n);
		return LLMT_EXIT_DATA;
	}
	snprintf(valdir, sizeof(valdir), "%s/val", out);
	if (has_shards(out) || has_shards(valdir)) {
		fprintf(stderr, "llm-train tokenize: %s already holds token shards; choose an empty directory\n", out);
		munmap(text, n);
		return LLMT_EXIT_USAGE;
	}
	split = llmt_val_split(text, n, o.valf);
	if (split == 0) {
		fprintf(stderr, "llm-train tokenize: %s: no training text left before the validation part (--val-fraction %g)\n",
			in, o.valf);
		munmap(text, n);
		return LLMT_EXIT_DATA;
	}
	if (tok) {
		size_t ntr = 0, nv = 0;
		rc = make_dir(out);
		if (!rc)
			rc = llmt_tok_write_shards(tok, out, "train", (const char *)text, split, (size_t)o.per, o.bos, o.eos, &ntr, &ntrain);
		if (!rc && split < n && !(rc = make_dir(valdir)))
			rc = llmt_tok_write_shards(tok, valdir, "val", (const char *)text + split, n - split, (size_t)o.per,
				o.bos, o.eos, &nv, &nval);
		if (!rc)
			printf("llm-train tokenize: %s: %zu train tokens in %d shard(s), %zu val tokens in %d shard(s) under %s"
				" (%s %s, vocabulary %d, shard version %d)\n", in, ntr, ntrain, nv, nval, out, llmt_tok_kind(tok),
				llmt_tok_path(tok), llmt_tok_vocab(tok),
				llmt_tok_vocab(tok) > LLMT_SHARD_U16_VOCAB ? LLMT_SHARD_VERSION_U32 : LLMT_SHARD_VERSION);
		llmt_tok_close(tok);
		munmap(text, n);
		return rc;
	}
	buf = malloc(sizeof(uint16_t) * (size_t)(o.per < (long long)n ? o.per : (long long)n));
	rc = buf ? make_dir(out) : LLMT_EXIT_SOFTWARE;
	if (!rc)
		rc = write_shards(out, "train", text, split, (size_t)o.per, buf, &ntrain);
	if (!rc && split < n && !(rc = make_dir(valdir)))
		rc = write_shards(valdir, "val", text + split, n - split, (size_t)o.per, buf, &nval);
	if (!rc)
		printf("llm-train tokenize: %s: %zu train tokens in %d shard(s), %zu val tokens in %d shard(s) under %s\n",
			in, split, ntrain, n - split, nval, out);
	free(buf);
	munmap(text, n);
	return rc;
}
