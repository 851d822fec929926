/* ckpt_sim.h: the harness of the checkpoint unit tests (test_ckpt.c,
 * test_ckpt_faults.c): a fake parameter table, the ranks of a layout
 * simulated in one process, saving and loading a layout, setup/teardown.
 * Include after #define _GNU_SOURCE. */
#ifndef TESTS_RUNTIME_CKPT_SIM_H
#define TESTS_RUNTIME_CKPT_SIM_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/ckpt/ckpt.h"
#include "runtime/ckpt/ckpt_int.h"

typedef struct { const char *name; int ndim; int64_t R, C; int split, stage; } fake_t;
static const fake_t T[] = {
	{ "model.embed_tokens.weight", 2, 10, 8, -1, 0 },
	{ "model.layers.0.self_attn.q_proj.weight", 2, 8, 8, 0, 0 },
	{ "model.layers.0.self_attn.o_proj.weight", 2, 8, 6, 1, 0 },
	{ "model.layers.0.input_layernorm.weight", 1, 8, 1, -1, 0 },
	{ "model.layers.1.self_attn.q_proj.weight", 2, 6, 8, 0, 1 },
	{ "model.layers.1.self_attn.o_proj.weight", 2, 8, 6, 1, 1 },
	{ "model.norm.weight", 1, 8, 1, -1, 1 },
};
#define NT ((int)(sizeof T / sizeof T[0]))
#define PAD 3

typedef struct {
	int tp, pp, dp;
	int rank, tp_rank, pp_rank, dp_rank;
	llmt_param_info tab[NT + 1];
	int tix[NT + 1];             /* index into T of each entry */
	int n;
	size_t nflat, lo, hi;
	float *master, *m, *v;
	char blob[32];
	llmt_ckpt_state st;
} sim_rank;

static llmt_config cfg;
static char root[256];

__attribute__((unused))
static float val(int kind, int ti, int64_t r, int64_t c)
{
	return (float)(kind * 10000 + ti * 1000 + r * 20 + c) + 0.25f;
}

__attribute__((unused))
static void build_rank(sim_rank *s, int tp, int pp, int dp, int rank)
{
	size_t off = 0;

	memset(s, 0, sizeof *s);
	s->tp = tp;
	s->pp = pp;
	s->dp = dp;
	s->rank = rank;
	s->tp_rank = rank % tp;
	s->dp_rank = (rank / tp) % dp;
	s->pp_rank = rank / (tp * dp);
	for (int i = 0; i <= NT; i++) {
		int ti = i == NT ? 0 : i;   /* i == NT: tied copy of the embedding */
		const fake_t *f = &T[ti];
		llmt_param_info *p = &s->tab[s->n];
		if (i == NT ? !(pp > 1 && s->pp_rank == pp - 1) : !(pp == 1 || f->stage == s->pp_rank))
			continue;
		snprintf(p->name, sizeof p->name, "%s", f->name);
		p->ndim = f->ndim;
		p->shape[0] = f->R;
		p->shape[1] = f->ndim == 2 ? f->C : 0;
		p->split_dim = f->split;
		p->split_len = f->split == 0 ? f->R / tp : f->split == 1 ? f->C / tp : 0;
		p->split_off = p->split_len * s->tp_rank;
		p->numel = (size_t)(f->split == 0 ? p->split_len * f->C : f->split == 1 ? f->R * p->split_len : f->R * f->C);
		p->offset = off;
		p->tied_copy = i == NT;
		off += p->numel + PAD;
		s->tix[s->n++] = ti;
	}
	s->nflat = off;
	s->lo = s->nflat / dp * (size_t)s->dp_rank;
	s->hi = s->dp_rank == dp - 1 ? s->nflat : s->lo + s->nflat / dp;
	s->master = calloc(s->nflat, 4);
	s->m = calloc(s->hi - s->lo + 1, 4);
	s->v = calloc(s->hi - s->lo + 1, 4);
	snprintf(s->blob, sizeof s->blob, "position of rank %d", rank);
	llmt_ckpt_state *st = &s->st;
	st->rank = rank;
	st->world = tp * pp * dp;
	st->tp = tp;
	st->pp = pp;
	st->dp = dp;
	st->tp_rank = s->tp_rank;
	st->pp_rank = s->pp_rank;
	st->dp_rank = s->dp_rank;
	st->config = &cfg;
	st->params = s->tab;
	st->nparams = s->n;
	st->nflat = s->nflat;
	st->bufs[0] = (llmt_ckpt_buf){ "master", LLMT_CKPT_F32, s->master, 0, s->nflat, 1, 0 };
	st->bufs[1] = (llmt_ckpt_buf){ "adam_m", LLMT_CKPT_F32, s->m, s->lo, s->hi, 0, 0 };
	st->bufs[2] = (llmt_ckpt_buf){ "adam_v", LLMT_CKPT_F32, s->v, s->lo, s->hi, 0, 0 };
	st->nbufs = 3;
	st->blobs[0] = (llmt_ckpt_blob){ "data", s->blob, strlen(s->blob) };
	st->nblobs = 1;
	st->train_json = "{\"tokens_seen\":12345,\"bad_steps\":0}";
}

/* expected value of flat element i of buffer kind k (0 master, 1 m, 2 v) */
__attribute__((unused))
static float expect(const sim_rank *s, int k, size_t i)
{
	for (int e = 0; e < s->n; e++) {
		const llmt_param_info *p = &s->tab[e];
		if (i >= p->offset && i < p->offset + p->numel) {
			int64_t R, C;
			ck_box b;
			ck_param_box(p, &R, &C, &b);
			size_t l = i - p->offset;
			return val(k, s->tix[e], b.r0 + (int64_t)l / b.nc, b.c0 + (int64_t)l % b.nc);
		}
	}
	return 0;   /* padding */
}

__attribute__((unused))
static void fill_rank(sim_rank *s)
{
	for (size_t i = 0; i < s->nflat; i++)
		s->master[i] = expect(s, 0, i);
	for (size_t i = s->lo; i < s->hi; i++) {
		s->m[i - s->lo] = expect(s, 1, i);
		s->v[i - s->lo] = expect(s, 2, i);
	}
}

__attribute__((unused))
static void free_rank(sim_rank *s)
{
	free(s->master);
	free(s->m);
	free(s->v);
}

/* 1: saves lend their buffers to the writer (llmt_ckpt_state.borrow) */
static int borrow_mode;
static const char *sim_verified;   /* llmt_ckpt_writer_verified of each writer (NULL: none) */
static void (*sim_after_open)(const char *stepdir);   /* load_layout: between open and load */
static long long sim_gen = -1;     /* llmt_ckpt_writer_generation of each writer (-1: none) */

/* save step under (tp, pp, dp) with every rank simulated; returns rank 0's
 * wait result */
__attribute__((unused))
static int save_layout(const char *dir, long step, int tp, int pp, int dp, int keep, const char *token)
{
	int world = tp * pp * dp, rc0 = 0;
	sim_rank *s = calloc((size_t)world, sizeof *s);
	llmt_ckpt_writer **w = calloc((size_t)world, sizeof *w);
	char err[1024];

	setenv("LLMT_TEST_CKPT_TOKEN", token, 1);
	for (int r = 0; r < world; r++) {
		build_rank(&s[r], tp, pp, dp, r);
		fill_rank(&s[r]);
		w[r] = llmt_ckpt_writer_new(dir, keep, err, sizeof err);
		assert_non_null(w[r]);
		if (sim_verified)
			llmt_ckpt_writer_verified(w[r], sim_verified);
		if (sim_gen >= 0)
			llmt_ckpt_writer_generation(w[r], sim_gen);
		s[r].st.borrow = borrow_mode;
		assert_int_equal(llmt_ckpt_save(w[r], step, &s[r].st, err, sizeof err), 0);
		/* the snapshot is taken: scribbling on the buffers changes nothing
		 * (lent buffers stay untouched until the save is done) */
		if (!borrow_mode)
			memset(s[r].master, 0xff, s[r].nflat * 4);
	}
	for (int r = world - 1; r >= 0; r--) {
		int rc = llmt_ckpt_wait(w[r], err, sizeof err);
		if (r == 0)
			rc0 = rc;
		llmt_ckpt_writer_free(w[r]);
		free_rank(&s[r]);
	}
	free(s);
	free(w);
	return rc0;
}

/* load stepdir under (tp, pp, dp) and check every element and blob. As
 * with a communicator, the ranks' outcomes are combined: a rank that read
 * a damaged file verified by another rank fails with it. */
__attribute__((unused))
static int load_layout(const char *stepdir, int tp, int pp, int dp, int check_blobs)
{
	int world = tp * pp * dp, code = 0, worst = 0;
	char err[1024];
	sim_rank *s = calloc((size_t)world, sizeof *s);

	for (int r = 0; r < world; r++) {
		llmt_ckpt *c = llmt_ckpt_open(stepdir, &code, err, sizeof err);
		int rc;
		build_rank(&s[r], tp, pp, dp, r);
		if (!c) {
			print_message("open: %s\n", err);
			worst = code;
			continue;
		}
		if (sim_after_open)
			sim_after_open(stepdir);
		rc = llmt_ckpt_load(c, &s[r].st, err, sizeof err);
		if (rc) {
			print_message("load: %s\n", err);
			worst = rc;
		}
		if (!rc && check_blobs) {
			void *b;
			size_t len;
			char want[32];
			snprintf(want, sizeof want, "position of rank %d", r);
			assert_int_equal(llmt_ckpt_blob_get(c, "data", r, &b, &len, err, sizeof err), 0);
			assert_int_equal(len, strlen(want));
			assert_memory_equal(b, want, len);
			free(b);
			assert_string_equal(llmt_ckpt_train_json(c), "{\"tokens_seen\":12345,\"bad_steps\":0}");
		}
		llmt_ckpt_close(c);
	}
	for (int r = 0; r < world; r++) {
		for (size_t i = 0; i < s[r].nflat && !worst; i++)
			assert_true(s[r].master[i] == expect(&s[r], 0, i));
		for (size_t i = s[r].lo; i < s[r].hi && !worst; i++) {
			assert_true(s[r].m[i - s[r].lo] == expect(&s[r], 1, i));
			assert_true(s[r].v[i - s[r].lo] == expect(&s[r], 2, i));
		}
		free_rank(&s[r]);
	}
	free(s);
	return worst;
}

__attribute__((unused))
static void path_of(char *out, size_t n, const char *sub)
{
	snprintf(out, n, "%s/%s", root, sub);
}

__attribute__((unused))
static int rm_cb(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb; (void)type; (void)ftw;
	return remove(p);
}

__attribute__((unused))
static int setup(void **state)
{
	(void)state;
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof root, "%s/test_ckpt.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(root));
	llmt_config_defaults(&cfg);
	cfg.vocab_size = 10;
	cfg.d_model = 8;
	cfg.n_layers = 2;
	cfg.n_heads = 2;
	cfg.n_kv_heads = 2;
	cfg.d_ff = 6;
	cfg.max_seq = 16;
	return 0;
}

__attribute__((unused))
static int teardown(void **state)
{
	(void)state;
	nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

__attribute__((unused))
static char *slurp(const char *path)
{
	return ck_read_small(path, 1 << 20, NULL);
}

#endif
