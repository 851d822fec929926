/* gen_cmd.c: `llm-train generate (--ckpt DIR | --hf DIR) [--tokenizer FILE]
 * --prompt TEXT [--max-new N] [--temperature T] [--top-p P] [--seed S]`:
 * one process, the whole model gathered from any layout, a KV cache,
 * greedy or seeded temperature/top-p sampling, text streamed to stdout
 * until EOS or N new tokens. */
#include "generate.h"
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "ckpt/ckpt.h"
#include "data/tok_iface.h"
#include "gen_model.h"
#include "llmt/exitcodes.h"
#include "sample.h"

static const char gen_usage[] =
	"usage: llm-train generate (--ckpt DIR | --hf DIR) [--tokenizer FILE|byte] --prompt TEXT\n"
	"         [--max-new N (64)] [--temperature T (0: greedy)] [--top-p P (1)] [--seed S (1234)]\n"
	"         [--eos ID] [--ids (print token ids)] [--no-cache (recompute every token: checks)]\n"
	"         [--no-bos (no BOS before the prompt: a model trained on tokenize output without --bos)]\n";

typedef struct gen_opts {
	const char *ckpt, *hf, *tokfile, *prompt;
	long max_new, eos;
	double temperature, top_p;
	uint64_t seed;
	int ids, no_cache, no_bos;
} gen_opts;

static int numarg(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !(*out >= lo && *out <= hi)) {
		fprintf(stderr, "llm-train: generate: %s %s: want a number in [%g, %g]\n", opt, s, lo, hi);
		return LLMT_EXIT_USAGE;
	}
	return 0;
}

static int intarg(const char *opt, const char *s, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	if (errno || end == s || *end || *out < lo || *out > hi) {
		fprintf(stderr, "llm-train: generate: %s %s: want an integer in [%ld, %ld]\n", opt, s, lo, hi);
		return LLMT_EXIT_USAGE;
	}
	return 0;
}

static int parse(int argc, char **argv, gen_opts *o)
{
	enum { G_CKPT = 1, G_HF, G_TOK, G_PROMPT, G_MAX, G_TEMP, G_TOPP, G_SEED, G_EOS, G_IDS, G_NOCACHE, G_NOBOS, G_HELP };
	static const struct option opts[] = {
		{ "ckpt", required_argument, NULL, G_CKPT }, { "hf", required_argument, NULL, G_HF },
		{ "tokenizer", required_argument, NULL, G_TOK }, { "prompt", required_argument, NULL, G_PROMPT },
		{ "max-new", required_argument, NULL, G_MAX }, { "temperature", required_argument, NULL, G_TEMP },
		{ "top-p", required_argument, NULL, G_TOPP }, { "seed", required_argument, NULL, G_SEED },
		{ "eos", required_argument, NULL, G_EOS }, { "ids", no_argument, NULL, G_IDS },
		{ "no-cache", no_argument, NULL, G_NOCACHE }, { "no-bos", no_argument, NULL, G_NOBOS },
		{ "help", no_argument, NULL, G_HELP },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c, rc = 0;

	*o = (gen_opts){ .max_new = 64, .eos = -1, .top_p = 1, .seed = 1234 };
	optind = 1;
	opterr = 0;
	while (!rc && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case G_CKPT: o->ckpt = optarg; break;
		case G_HF: o->hf = optarg; break;
		case G_TOK: o->tokfile = optarg; break;
		case G_PROMPT: o->prompt = optarg; break;
		case G_MAX: rc = intarg("--max-new", optarg, 1, 1 << 24, &o->max_new); break;
		case G_TEMP: rc = numarg("--temperature", optarg, 0, 100, &o->temperature); break;
		case G_TOPP: rc = numarg("--top-p", optarg, 1e-9, 1, &o->top_p); break;
		case G_SEED: rc = intarg("--seed", optarg, 0, LONG_MAX, &v); o->seed = (uint64_t)v; break;
		case G_EOS: rc = intarg("--eos", optarg, 0, 1 << 30, &o->eos); break;
		case G_IDS: o->ids = 1; break;
		case G_NOCACHE: o->no_cache = 1; break;
		case G_NOBOS: o->no_bos = 1; break;
		case G_HELP: fputs(gen_usage, stdout); return -1;
		default:
			fprintf(stderr, "llm-train: generate: unknown or incomplete option '%s'\n%s", argv[optind - 1],
			        gen_usage);
			return LLMT_EXIT_USAGE;
		}
	}
	if (!rc && (optind < argc || !o->prompt || !o->ckpt == !o->hf)) {
		fprintf(stderr, "llm-train: generate: %s\n%s",
		        optind < argc ? "unexpected argument" : !o->prompt ? "--prompt is required"
		                                                           : "give one of --ckpt DIR and --hf DIR",
		        gen_usage);
		rc = LLMT_EXIT_USAGE;
	}
	return rc;
}

/* eos_token_id (the first of a list) of the JSON file path, or -1 */
static long hf_eos(const char *path)
{
	json_t *o, *e;
	long id = -1;

	if (!(o = json_load_file(path, 0, NULL)))
		return -1;
	e = json_object_get(o, "eos_token_id");
	if (json_is_array(e))
		e = json_array_get(e, 0);
	if (json_is_integer(e))
		id = (long)json_integer_value(e);
	json_decref(o);
	return id;
}

/* The tokenizer the model came with, when no --tokenizer was given:
 * --hf HFDIR's own, or for --ckpt DIR the one `llm-train import` kept in
 * DIR/hf_tokenizer (for a step directory, its CKPT_DIR's), as import
 * checked it (byte-level ids for a model with another vocabulary were
 * refused with "give --tokenizer", or wrong where vocab_size is 256).
 * Sets o->tokfile to it (in buf) when this build reads it, and eosf to
 * the file holding the source's eos_token_id ("" when none). */
static void pick_tokenizer(gen_opts *o, char *buf, size_t len, char *eosf, size_t elen)
{
	char dir[4200], err[512];
	const char *f = NULL;
	llmt_tokseam tok;
	struct stat sb;

	*eosf = 0;
	if (o->hf) {
		snprintf(eosf, elen, "%s/config.json", o->hf);
		f = o->tokfile ? NULL : llmt_hf_tokenizer(o->hf, buf, len);
	} else {
		size_t cut = strlen(o->ckpt);
		snprintf(dir, sizeof dir, "%s/hf_tokenizer", o->ckpt);
		if (stat(dir, &sb) != 0) {   /* a step directory: its CKPT_DIR's */
			while (cut > 1 && o->ckpt[cut - 1] == '/')
				cut--;
			while (cut > 0 && o->ckpt[cut - 1] != '/')
				cut--;
			snprintf(dir, sizeof dir, "%.*shf_tokenizer", (int)cut, cut ? o->ckpt : "./");
		}
		if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			snprintf(eosf, elen, "%s/llmt_ids.json", dir);
			f = o->tokfile ? NULL : llmt_hf_tokenizer(dir, buf, len);
		}
	}
	if (f && llmt_tokseam_open(f, &tok, err, sizeof err) == 0) {
		llmt_tokseam_close(&tok);
		o->tokfile = f;
		fprintf(stderr, "llm-train: generate: tokenizer %s (--tokenizer byte for bytes)\n", f);
	}   /* else not one this build reads: bytes, as before */
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the prompt's tokens, then up to max_new more; 0 or an exit code */
static int run(const gen_opts *o, llmt_gen *g, const llmt_tokseam *tok, int32_t *ids, int np, long eos)
{
	const llmt_config *c = llmt_gen_config(g);
	const float *lg = NULL;
	llmt_sampler sm;
	int n = np, prev = ids[np - 1];
	double t0 = now_s(), t1;
	char buf[256];

	if (llmt_sampler_init(&sm, c->vocab_size, o->temperature, o->top_p, o->seed)) {
		fprintf(stderr, "llm-train: generate: out of memory\n");
		return LLMT_EXIT_SOFTWARE;
	}
	for (int p = 0; p < np && !o->no_cache; p++)
		lg = llmt_gen_step(g, ids[p], p);
	t1 = now_s();
	while (n < np + o->max_new) {
		int next;
		if (o->no_cache && !(lg = llmt_gen_recompute(g, ids, n)))
			break;
		next = llmt_sample(&sm, lg, c->vocab_size);
		if (next == eos)
			break;
		ids[n++] = next;
		if (o->ids) {
			printf("%s%d", n - 1 > np ? " " : "", next);
		} else {
			int k = tok->decode(tok->ctx, prev, next, buf, sizeof buf);
			if (k > 0)
				fwrite(buf, 1, (size_t)k, stdout);
		}
		fflush(stdout);
		prev = next;
		if (!o->no_cache && n < np + o->max_new)
			lg = llmt_gen_step(g, next, n - 1);
	}
	llmt_sampler_free(&sm);
	if (o->no_cache && !lg) {
		fprintf(stderr, "llm-train: generate: the recompute failed\n");
		return LLMT_EXIT_SOFTWARE;
	}
	putchar('\n');
	fprintf(stderr, "llm-train: generate: %d prompt tokens in %.3f s, %d new in %.3f s (%.1f tokens/s)\n", np,
	        t1 - t0, n - np, now_s() - t1, (n - np) / (now_s() - t1 > 0 ? now_s() - t1 : 1e-9));
	return 0;
}

int llmt_generate_main(int argc, char **argv)
{
	gen_opts o;
	llmt_config cfg;
	llmt_param_info *tab = NULL;
	float *flat = NULL;
	size_t nflat, np = 0;
	int32_t *pids = NULL, *ids = NULL;
	llmt_tokseam tok = { 0 };
	llmt_gen *g = NULL;
	char err[4096];
	int ntab = 0, rc;
	long eos;

	if ((rc = parse(argc, argv, &o)) != 0)
		return rc < 0 ? 0 : rc;
	char hftok[4300], snap[4200], eosf[4300];
	if (o.hf && (rc = llmt_hf_resolve(o.hf, snap, sizeof snap, err, sizeof err)) != 0) {
		fprintf(stderr, "llm-train: generate: %s\n", err);
		return rc;
	}
	if (o.hf)
		o.hf = snap;
	pick_tokenizer(&o, hftok, sizeof hftok, eosf, sizeof eosf);
	rc = o.hf ? llmt_hf_load(o.hf, o.tokfile, &cfg, &tab, &ntab, &nflat, &flat, err, sizeof err)
	          : llmt_ckpt_gather(o.ckpt, &cfg, &tab, &ntab, &nflat, &flat, err, sizeof err);
	if (!rc && o.eos >= cfg.vocab_size) {   /* an id no step can sample: never stops */
		snprintf(err, sizeof err, "--eos %ld: not a token id of the model (vocab_size %d)", o.eos, cfg.vocab_size);
		rc = LLMT_EXIT_USAGE;
	}
	if (!rc)
		rc = llmt_tokseam_open(o.tokfile, &tok, err, sizeof err);
	if (!rc && (tok.vocab > cfg.vocab_size || (!o.tokfile && tok.vocab != cfg.vocab_size))) {
		snprintf(err, sizeof err, "tokenizer %s has %d tokens, %s the model's vocab_size %d%s",
		         o.tokfile ? o.tokfile : "byte", tok.vocab, tok.vocab > cfg.vocab_size ? "more than" : "not",
		         cfg.vocab_size, o.tokfile ? "" : " (give --tokenizer)");
		rc = LLMT_EXIT_USAGE;
	}
	if (!rc)
		rc = tok.encode(tok.ctx, o.prompt, strlen(o.prompt), &pids, &np, err, sizeof err);
	eos = o.eos >= 0 ? o.eos : tok.eos >= 0 ? tok.eos : *eosf ? hf_eos(eosf) : -1;
	if (!rc) {
		int bos = !o.no_bos && tok.bos >= 0 && (np == 0 || pids[0] != tok.bos);
		long total = (long)np + bos + o.max_new;
		if (np + (size_t)bos == 0 || total > cfg.max_seq) {
			snprintf(err, sizeof err, np + (size_t)bos == 0 ? "--prompt is empty (no tokens)"
			         : "--max-new %ld: the prompt's %zu tokens + %ld exceed the model's %d positions",
			         o.max_new, np + (size_t)bos, o.max_new, cfg.max_seq);
			rc = LLMT_EXIT_USAGE;
		} else if (!(ids = malloc((size_t)total * sizeof *ids))) {
			snprintf(err, sizeof err, "out of memory");
			rc = LLMT_EXIT_SOFTWARE;
		} else {
			ids[0] = tok.bos;
			memcpy(ids + bos, pids, np * sizeof *ids);
			np += (size_t)bos;
			if (!(g = llmt_gen_new(&cfg, tab, ntab, flat, (int)total, err, sizeof err)))
				rc = LLMT_EXIT_SOFTWARE;
			flat = NULL;   /* the model owns it now (freed on failure too) */
		}
	}
	for (size_t i = 0; i < np && !rc; i++)
		if (ids[i] < 0 || ids[i] >= cfg.vocab_size) {
			snprintf(err, sizeof err, "token %d of the prompt is outside the vocabulary", ids[i]);
			rc = LLMT_EXIT_DATA;
		}
	if (rc)
		fprintf(stderr, "llm-train: generate: %s\n", err);
	else
		rc = run(&o, g, &tok, ids, (int)np, eos);
	llmt_gen_free(g);
	if (tok.encode)
		llmt_tokseam_close(&tok);
	free(flat);
	free(tab);
	free(pids);
	free(ids);
	return rc;
}
