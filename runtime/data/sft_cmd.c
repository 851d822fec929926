/* sft_cmd.c: `llm-train tokenize-sft`: JSON Lines of conversations
 * (jansson) rendered by a chat template (sft_template.c), packed into
 * sequences of --seq tokens, written as token shards with loss masks
 * beside them (mask.h, doc/contracts.md). Everything is read and checked
 * before the first file is written. */
#include "sft.h"
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "llmt/exitcodes.h"
#include "mask.h"
#include "shard.h"

#define CMD "llm-train tokenize-sft"
#define MAXMSG 256

typedef struct {        /* the packed output */
	uint32_t *tok;
	uint8_t *flag;
	size_t n, cap, rows;
	long samples, cut, trained;
} pack;

static int grow(pack *p, size_t more)
{
	if (p->n + more <= p->cap)
		return 0;
	size_t cap = (p->n + more) * 2;
	uint32_t *t = realloc(p->tok, cap * sizeof(uint32_t));
	if (t)
		p->tok = t;
	uint8_t *f = t ? realloc(p->flag, cap) : NULL;
	if (!f)
		return LLMT_EXIT_SOFTWARE;
	p->flag = f;
	p->cap = cap;
	return 0;
}

/* pad the open row to T tokens: one pad sample of untrained tokens */
static int pad_row(pack *p, int T, uint32_t pad)
{
	size_t used = p->n - p->rows * (size_t)T;

	if (!used)
		return 0;
	if (grow(p, (size_t)T - used))
		return LLMT_EXIT_SOFTWARE;
	for (size_t i = used; i < (size_t)T; i++) {
		p->tok[p->n] = pad;
		p->flag[p->n++] = i == used ? LLMT_MASK_START : 0;
	}
	p->rows++;
	return 0;
}

/* one sample into the rows: cut to T tokens; a new row when it does not fit */
static int add_sample(pack *p, const llmt_sft_sample *s, int T, uint32_t pad)
{
	size_t n = s->ids.n, used = p->n - p->rows * (size_t)T;

	if (!n)
		return 0;
	if (n > (size_t)T) {
		n = (size_t)T;
		p->cut++;
	}
	if (used + n > (size_t)T && pad_row(p, T, pad))
		return LLMT_EXIT_SOFTWARE;
	if (grow(p, n))
		return LLMT_EXIT_SOFTWARE;
	for (size_t i = 0; i < n; i++) {
		p->tok[p->n] = s->ids.v[i];
		p->flag[p->n] = (uint8_t)(s->flags[i] | (i ? 0 : LLMT_MASK_START));
		p->trained += i && (s->flags[i] & LLMT_MASK_TRAIN);
		p->n++;
	}
	if (p->n - p->rows * (size_t)T == (size_t)T)
		p->rows++;
	p->samples++;
	return 0;
}

static int str_field(json_t *o, const char *k, const char **v, size_t *len, const char *where,
	char *err, size_t errlen)
{
	json_t *x = json_object_get(o, k);

	if (!x) {
		snprintf(err, errlen, "%s: missing field \"%s\"", where, k);
		return LLMT_EXIT_DATA;
	}
	if (!json_is_string(x)) {
		snprintf(err, errlen, "%s: field \"%s\" is not a string", where, k);
		return LLMT_EXIT_DATA;
	}
	*v = json_string_value(x);
	*len = json_string_length(x);
	return 0;
}

/* the messages of one JSON object (prompt/response or messages) */
static int messages(json_t *o, const char *at, llmt_sft_msg *m, int *n, char *err, size_t errlen)
{
	json_t *ms = json_object_get(o, "messages"), *x;
	char where[4400];
	size_t i;
	int rc;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "%s: not a JSON object", at);
		return LLMT_EXIT_DATA;
	}
	if (!ms) {
		if ((rc = str_field(o, "prompt", &m[0].content, &m[0].len, at, err, errlen)) ||
			(rc = str_field(o, "response", &m[1].content, &m[1].len, at, err, errlen)))
			return rc;
		m[0].role = "user";
		m[1].role = "assistant";
		*n = 2;
		return 0;
	}
	if (!json_is_array(ms) || !json_array_size(ms) || json_array_size(ms) > MAXMSG) {
		snprintf(err, errlen, "%s: \"messages\" is not an array of 1 to %d messages", at, MAXMSG);
		return LLMT_EXIT_DATA;
	}
	json_array_foreach(ms, i, x) {
		snprintf(where, sizeof(where), "%s: message %zu", at, i + 1);
		if (!json_is_object(x)) {
			snprintf(err, errlen, "%s: not a JSON object", where);
			return LLMT_EXIT_DATA;
		}
		size_t rl;
		if ((rc = str_field(x, "role", &m[i].role, &rl, where, err, errlen)) ||
			(rc = str_field(x, "content", &m[i].content, &m[i].len, where, err, errlen)))
			return rc;
		if (llmt_sft_role_ok(m[i].role)) {
			snprintf(err, errlen, "%s: unknown role \"%s\" (want system, user or assistant)", where,
				m[i].role);
			return LLMT_EXIT_DATA;
		}
	}
	*n = (int)json_array_size(ms);
	return 0;
}

/* every line of the input into the pack */
static int read_input(const char *in, llmt_tok *t, const char *tmpl, int T, pack *p)
{
	FILE *f = fopen(in, "r");
	char *line = NULL, at[4200], err[8400], rerr[4096];
	size_t cap = 0;
	ssize_t len;
	long no = 0;
	int rc = 0, pad = llmt_tok_pad(t) >= 0 ? llmt_tok_pad(t) : llmt_tok_eos(t);
	llmt_sft_sample s = { 0 };
	llmt_sft_msg m[MAXMSG];

	if (!f) {
		fprintf(stderr, CMD ": %s: %s\n", in, strerror(errno));
		return errno == ENOENT ? LLMT_EXIT_NOINPUT : LLMT_EXIT_DATA;
	}
	while (!rc && (len = getline(&line, &cap, f)) >= 0) {
		json_error_t je;
		json_t *o;
		int n = 0;
		no++;
		if (strspn(line, " \t\r\n") == (size_t)len)
			continue; /* blank line */
		snprintf(at, sizeof(at), "%s:%ld", in, no);
		if (!(o = json_loadb(line, (size_t)len, JSON_REJECT_DUPLICATES, &je))) {
			snprintf(err, sizeof(err), "%s:%d: %s", at, je.column, je.text);
			rc = LLMT_EXIT_DATA;
			break;
		}
		rc = messages(o, at, m, &n, err, sizeof(err));
		if (!rc && (rc = llmt_sft_render(t, tmpl, m, n, &s, rerr, sizeof(rerr))))
			snprintf(err, sizeof(err), "%s: %s", at, rerr);
		if (!rc && (rc = add_sample(p, &s, T, (uint32_t)pad)))
			snprintf(err, sizeof(err), "out of memory");
		json_decref(o);
	}
	if (!rc && !p->samples) {
		snprintf(err, sizeof(err), "%s: no samples", in);
		rc = LLMT_EXIT_DATA;
	}
	/* the last row, and one pad token past it: the window of the last
	 * sequence (T+1 tokens) ends on a sample start, so it trains nothing */
	if (!rc && (pad_row(p, T, (uint32_t)pad) || grow(p, 1))) {
		snprintf(err, sizeof(err), "out of memory");
		rc = LLMT_EXIT_SOFTWARE;
	}
	if (!rc) {
		p->tok[p->n] = (uint32_t)pad;
		p->flag[p->n++] = LLMT_MASK_START;
	} else {
		fprintf(stderr, CMD ": %s\n", err);
	}
	free(line);
	llmt_sft_sample_free(&s);
	fclose(f);
	return rc;
}

/* OUTDIR: made when missing; refused when it holds shards already */
static int out_dir(const char *dir)
{
	DIR *d;
	struct dirent *e;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, CMD ": %s: %s\n", dir, strerror(errno));
		return LLMT_EXIT_IO;
	}
	if (!(d = opendir(dir))) {
		fprintf(stderr, CMD ": %s: %s\n", dir, strerror(errno));
		return LLMT_EXIT_IO;
	}
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if ((n > 4 && !strcmp(e->d_name + n - 4, ".bin")) || (n > 5 && !strcmp(e->d_name + n - 5, ".mask"))) {
			fprintf(stderr, CMD ": %s holds token shards already (%s): not overwritten\n", dir, e->d_name);
			closedir(d);
			return LLMT_EXIT_USAGE;
		}
	}
	closedir(d);
	return 0;
}

/* shards of whole sequences, each with its mask and one closing token */
static int write_out(const char *dir, const pack *p, int T, size_t per_rows, uint32_t vocab, int *count)
{
	char path[4200], mpath[4300], err[8600];
	int rc = 0;

	*count = 0;
	for (size_t r = 0; !rc && r < p->rows; r += per_rows, (*count)++) {
		size_t nr = p->rows - r < per_rows ? p->rows - r : per_rows;
		size_t off = r * (size_t)T, n = nr * (size_t)T + 1;
		snprintf(path, sizeof(path), "%s/train_%06d.bin", dir, *count);
		llmt_mask_path(path, mpath, sizeof(mpath));
		/* the closing token opens a sample (the next row's first, or the pad) */
		rc = llmt_mask_write(mpath, p->flag + off, n, T, err, sizeof(err));
		if (!rc)
			rc = llmt_shard_write_ids(path, p->tok + off, n, vocab, err, sizeof(err));
		if (rc)
			fprintf(stderr, CMD ": %s\n", err);
	}
	return rc;
}

#define SFT_USAGE "usage: " CMD " IN.jsonl OUTDIR --tokenizer FILE --template plain|llama2|chatml [--seq N] [--shard-tokens N]\n"

/* the options into the pointers: 0, an exit code, or -1 after --help */
static int parse(int argc, char **argv, const char **tokf, const char **tmpl, long *T, long *per)
{
	static const struct option opts[] = {
		{ "tokenizer", required_argument, NULL, 'k' }, { "template", required_argument, NULL, 'm' },
		{ "seq", required_argument, NULL, 's' }, { "shard-tokens", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		long *v = c == 's' ? T : per;
		if (c == 'k') {
			*tokf = optarg;
		} else if (c == 'm') {
			*tmpl = optarg;
		} else if (c == 's' || c == 'n') {
			errno = 0;
			*v = strtol(optarg, &end, 10);
			if (errno || *end || *v < 2 || *v > (c == 's' ? 4096 : 1L << 30)) {
				fprintf(stderr, CMD ": --%s %s: want an integer in [2, %ld]\n",
					c == 's' ? "seq" : "shard-tokens", optarg, c == 's' ? 4096L : 1L << 30);
				return LLMT_EXIT_USAGE;
			}
		} else {
			if (c == 'h')
				printf(SFT_USAGE);
			return c == 'h' ? -1 : LLMT_EXIT_USAGE;
		}
	}
	if (argc - optind != 2 || !*tokf || !*tmpl) {
		fprintf(stderr, SFT_USAGE);
		return LLMT_EXIT_USAGE;
	}
	if (!llmt_sft_template_known(*tmpl)) {
		fprintf(stderr, CMD ": --template %s: unknown (want plain, llama2 or chatml)\n", *tmpl);
		return LLMT_EXIT_USAGE;
	}
	return 0;
}

int llmt_tokenize_sft_main(int argc, char **argv)
{
	const char *tokf = NULL, *tmpl = NULL;
	long T = 1024, per = 1L << 24;
	llmt_tok *t = NULL;
	pack p = { 0 };
	char err[4400];
	int rc = parse(argc, argv, &tokf, &tmpl, &T, &per), count = 0;

	if (rc)
		return rc < 0 ? 0 : rc;
	if ((rc = llmt_tok_open(&t, tokf, err, sizeof(err))) ||
		(rc = llmt_sft_template_check(t, tmpl, err, sizeof(err)))) {
		fprintf(stderr, CMD ": %s\n", err);
		llmt_tok_close(t);
		return rc;
	}
	rc = read_input(argv[optind], t, tmpl, (int)T, &p);
	if (!rc && !(rc = out_dir(argv[optind + 1])))
		rc = write_out(argv[optind + 1], &p, (int)T, per / T > 0 ? (size_t)(per / T) : 1,
			(uint32_t)llmt_tok_vocab(t), &count);
	if (!rc)
		printf("%s: %ld samples (%ld longer than --seq %ld, cut to it), %zu sequences of %ld tokens, "
			"%ld tokens trained on, %d shard%s in %s\n", argv[optind], p.samples, p.cut, T, p.rows, T,
			p.trained, count, count == 1 ? "" : "s", argv[optind + 1]);
	free(p.tok);
	free(p.flag);
	llmt_tok_close(t);
	return rc;
}
