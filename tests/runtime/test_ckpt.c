/* test_ckpt.c: checkpoint unit tests without MPI: ranks of a layout are
 * simulated in one process from a fake parameter table (TP row and column
 * splits, PP stages, a tied copy, padding, ZeRO-1 ranges). Round trip,
 * loading under other layouts, corruption, failed saves, retention. */
#define _GNU_SOURCE
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

static float val(int kind, int ti, int64_t r, int64_t c)
{
	return (float)(kind * 10000 + ti * 1000 + r * 20 + c) + 0.25f;
}

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

static void fill_rank(sim_rank *s)
{
	for (size_t i = 0; i < s->nflat; i++)
		s->master[i] = expect(s, 0, i);
	for (size_t i = s->lo; i < s->hi; i++) {
		s->m[i - s->lo] = expect(s, 1, i);
		s->v[i - s->lo] = expect(s, 2, i);
	}
}

static void free_rank(sim_rank *s)
{
	free(s->master);
	free(s->m);
	free(s->v);
}

/* 1: saves lend their buffers to the writer (llmt_ckpt_state.borrow) */
static int borrow_mode;

/* save step under (tp, pp, dp) with every rank simulated; returns rank 0's
 * wait result */
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

static void path_of(char *out, size_t n, const char *sub)
{
	snprintf(out, n, "%s/%s", root, sub);
}

static int rm_cb(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb; (void)type; (void)ftw;
	return remove(p);
}

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

static int teardown(void **state)
{
	(void)state;
	nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static char *slurp(const char *path)
{
	return ck_read_small(path, 1 << 20, NULL);
}

/* ---- tests ------------------------------------------------------------ */
static void test_cut_range(void **state)
{
	(void)state;
	llmt_param_info p = { .name = "w", .ndim = 2, .shape = { 4, 6 }, .split_dim = 1, .split_off = 3,
	                      .split_len = 3, .offset = 10, .numel = 12 };
	ck_cut *c;
	char err[256];
	int n = ck_cut_range(&p, 1, 12, 20, 0, &c, err, sizeof err);

	/* local elements [2, 10) of a 4x3 box at column 3 */
	assert_int_equal(n, 3);
	assert_true(c[0].box.r0 == 0 && c[0].box.nr == 1 && c[0].box.c0 == 5 && c[0].box.nc == 1 && c[0].at == 0);
	assert_true(c[1].box.r0 == 1 && c[1].box.nr == 2 && c[1].box.c0 == 3 && c[1].box.nc == 3 && c[1].at == 1);
	assert_true(c[2].box.r0 == 3 && c[2].box.nr == 1 && c[2].box.c0 == 3 && c[2].box.nc == 1 && c[2].at == 7);
	free(c);
	/* a range outside the entry gives nothing; a bad entry is refused */
	assert_int_equal(ck_cut_range(&p, 1, 0, 10, 0, &c, err, sizeof err), 0);
	free(c);
	p.numel = 11;
	assert_int_equal(ck_cut_range(&p, 1, 0, 30, 0, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "inconsistent"));
	/* DP shares partition the range */
	size_t lo, hi, at = 0;
	for (int r = 0; r < 3; r++) {
		ck_dp_share(10, 3, r, &lo, &hi);
		assert_int_equal(lo, at);
		at = hi;
	}
	assert_int_equal(at, 10);
}

static void test_roundtrip(void **state)
{
	(void)state;
	char dir[300], step[320], err[1024], *lat;

	path_of(dir, sizeof dir, "rt");
	assert_int_equal(save_layout(dir, 100, 2, 2, 2, 0, "t1"), 0);
	snprintf(step, sizeof step, "%s/step_00000100", dir);
	assert_int_equal(ck_validate_dir(step, 0, NULL, err, sizeof err), 0);
	snprintf(err, sizeof err, "%s/latest", dir);
	lat = slurp(err);
	assert_non_null(lat);
	assert_string_equal(lat, "step_00000100\n");
	free(lat);
	snprintf(err, sizeof err, "%s/.tmp.step_00000100.t1", dir);
	assert_int_not_equal(access(err, F_OK), 0);   /* renamed into place */
	snprintf(err, sizeof err, "%s/rank_00000.done.json", step);
	assert_int_not_equal(access(err, F_OK), 0);
	assert_int_equal(load_layout(step, 2, 2, 2, 1), 0);
	/* total bytes: every element once (3 kinds), blobs aside */
	ck_manifest m;
	uint64_t total = 0, want = 0;
	assert_int_equal(ck_manifest_load(step, 1, &m, err, sizeof err), 0);
	for (int i = 0; i < m.src.nfiles; i++)
		total += m.src.files[i].size;
	for (int i = 0; i < NT; i++)
		want += (uint64_t)(T[i].R * T[i].C) * 4 * 3;
	for (int r = 0; r < 8; r++)
		want += 24;   /* blob "position of rank N" (18 bytes) padded to 8 */
	assert_int_equal(total, want);
	assert_int_equal(m.world, 8);
	ck_manifest_free(&m);
	/* resolve: the directory gives the step */
	char out[4096];
	assert_int_equal(llmt_ckpt_resolve(dir, out, sizeof out, err, sizeof err), 0);
	assert_string_equal(out, step);
}

/* Lent buffers are written in place: the same bytes as a copied save,
 * and the checkpoint loads. */
static void test_borrow(void **state)
{
	(void)state;
	char a[300], b[300], fa[400], fb[400];

	path_of(a, sizeof a, "bw_copy");
	path_of(b, sizeof b, "bw_lent");
	assert_int_equal(save_layout(a, 5, 2, 2, 2, 0, "t8"), 0);
	borrow_mode = 1;
	int rc = save_layout(b, 5, 2, 2, 2, 0, "t9");
	borrow_mode = 0;
	assert_int_equal(rc, 0);
	for (int r = 0; r < 8; r++) {
		snprintf(fa, sizeof fa, "%s/step_00000005/rank_%05d.bin", a, r);
		snprintf(fb, sizeof fb, "%s/step_00000005/rank_%05d.bin", b, r);
		FILE *x = fopen(fa, "rb"), *y = fopen(fb, "rb");
		assert_non_null(x);
		assert_non_null(y);
		int cx, cy;
		size_t n = 0;
		do {
			cx = fgetc(x);
			cy = fgetc(y);
			n++;
		} while (cx == cy && cx != EOF);
		fclose(x);
		fclose(y);
		if (cx != cy)
			fail_msg("rank %d: the lent save differs from the copied one at byte %zu", r, n - 1);
		assert_true(n > 1);
	}
	snprintf(fb, sizeof fb, "%s/step_00000005", b);
	assert_int_equal(load_layout(fb, 2, 2, 2, 1), 0);
	assert_int_equal(load_layout(fb, 1, 1, 1, 0), 0);
}

static void test_reshard(void **state)
{
	(void)state;
	char dir[300], step[320];

	path_of(dir, sizeof dir, "rs");
	assert_int_equal(save_layout(dir, 7, 2, 2, 2, 0, "t2"), 0);
	snprintf(step, sizeof step, "%s/step_00000007", dir);
	assert_int_equal(load_layout(step, 1, 1, 1, 0), 0);
	assert_int_equal(load_layout(step, 2, 1, 3, 0), 0);
	assert_int_equal(load_layout(step, 1, 2, 1, 0), 0);
	assert_int_equal(load_layout(step, 2, 2, 1, 0), 0);
	path_of(dir, sizeof dir, "rs1");
	assert_int_equal(save_layout(dir, 8, 1, 1, 1, 0, "t3"), 0);
	snprintf(step, sizeof step, "%s/step_00000008", dir);
	assert_int_equal(load_layout(step, 2, 2, 2, 0), 0);
	assert_int_equal(load_layout(step, 1, 2, 3, 0), 0);
}

static void corrupt_case(const char *name, void (*damage)(const char *step), const char *want)
{
	char dir[300], step[320], err[1024];

	path_of(dir, sizeof dir, name);
	assert_int_equal(save_layout(dir, 3, 2, 1, 2, 0, name), 0);
	snprintf(step, sizeof step, "%s/step_00000003", dir);
	damage(step);
	assert_int_equal(ck_validate_dir(step, 0, NULL, err, sizeof err), LLMT_EXIT_DATA);
	print_message("  %s -> %s\n", name, err);
	assert_non_null(strstr(err, want));
	/* loading refuses it too, and the files are still there */
	assert_int_equal(load_layout(step, 2, 1, 2, 0), LLMT_EXIT_DATA);
	assert_int_equal(access(step, F_OK), 0);
	/* the directory resolves to nothing complete (a bad checksum is only
	 * seen by reading everything: resolve checks sizes, load checksums) */
	if (strcmp(want, "wrong checksum"))
		assert_int_equal(llmt_ckpt_resolve(dir, err, sizeof err, err, sizeof err), LLMT_EXIT_NOINPUT);
}

static void flip_byte(const char *step)
{
	char p[400];
	FILE *f;
	int c;

	snprintf(p, sizeof p, "%s/rank_00003.bin", step);
	f = fopen(p, "r+b");
	assert_non_null(f);
	fseek(f, 5, SEEK_SET);
	c = fgetc(f);
	fseek(f, 5, SEEK_SET);
	fputc(c ^ 0x10, f);
	fclose(f);
}

static void truncate_shard(const char *step)
{
	char p[400];
	snprintf(p, sizeof p, "%s/rank_00001.bin", step);
	assert_int_equal(truncate(p, 16), 0);
}

static void remove_shard(const char *step)
{
	char p[400];
	snprintf(p, sizeof p, "%s/rank_00002.bin", step);
	assert_int_equal(unlink(p), 0);
}

static void truncate_manifest(const char *step)
{
	char p[400];
	snprintf(p, sizeof p, "%s/manifest.json", step);
	assert_int_equal(truncate(p, 100), 0);
}

static void remove_manifest(const char *step)
{
	char p[400];
	snprintf(p, sizeof p, "%s/manifest.json", step);
	assert_int_equal(unlink(p), 0);
}

static void replicas_disagreed(const char *step)
{
	char p[400];
	json_error_t je;
	json_t *m;

	snprintf(p, sizeof p, "%s/manifest.json", step);
	m = json_load_file(p, 0, &je);
	assert_non_null(m);
	json_object_set_new(m, "replicas_agree", json_false());
	assert_int_equal(json_dump_file(m, p, 0), 0);
	json_decref(m);
}

static void test_corrupt(void **state)
{
	(void)state;
	corrupt_case("c_sdc", replicas_disagreed, "replicas disagreed");
	corrupt_case("c_sum", flip_byte, "wrong checksum");
	corrupt_case("c_size", truncate_shard, "wrong size");
	corrupt_case("c_missing", remove_shard, "missing shard");
	corrupt_case("c_manifest", truncate_manifest, "bad manifest");
	corrupt_case("c_nomanifest", remove_manifest, "missing manifest");
}

static void test_failed_save(void **state)
{
	(void)state;
	char dir[300], p[400], err[1024], *lat;

	path_of(dir, sizeof dir, "fail");
	assert_int_equal(save_layout(dir, 100, 1, 1, 2, 1, "f1"), 0);
	setenv("LLMT_TEST_CKPT_FAIL", "1", 1);
	assert_int_equal(save_layout(dir, 200, 1, 1, 2, 1, "f2"), LLMT_EXIT_IO);
	unsetenv("LLMT_TEST_CKPT_FAIL");
	snprintf(p, sizeof p, "%s/step_00000200", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/step_00000100", dir);
	assert_int_equal(ck_validate_dir(p, 0, NULL, err, sizeof err), 0);   /* keep=1 deleted nothing */
	snprintf(p, sizeof p, "%s/latest", dir);
	lat = slurp(p);
	assert_string_equal(lat, "step_00000100\n");
	free(lat);
}

static void test_blocked_dir(void **state)
{
	(void)state;
	char dir[300], p[400], err[1024];
	FILE *f;

	/* the temporary directory name is taken by a file: the save fails at
	 * once on every rank (nobody waits for a record that never comes) */
	path_of(dir, sizeof dir, "blocked");
	assert_int_equal(save_layout(dir, 1, 1, 1, 2, 0, "b0"), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000002.b1", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	setenv("LLM_TRAIN_CKPT_TIMEOUT", "60", 1);
	assert_int_equal(save_layout(dir, 2, 1, 1, 2, 0, "b1"), LLMT_EXIT_IO);
	unsetenv("LLM_TRAIN_CKPT_TIMEOUT");
	snprintf(p, sizeof p, "%s/step_00000002", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/step_00000001", dir);
	assert_int_equal(ck_validate_dir(p, 0, NULL, err, sizeof err), 0);
	/* the next complete save clears the leftovers of failed ones up to its
	 * step, and only those */
	snprintf(p, sizeof p, "%s/.tmp.step_00000009.zz", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000002.b1", dir);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000002.b1/rank_00000.bin", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(save_layout(dir, 3, 1, 1, 2, 0, "b2"), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000002.b1", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000002.b1.rank_00000.failed", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	snprintf(p, sizeof p, "%s/.tmp.step_00000009.zz", dir);
	assert_int_equal(access(p, F_OK), 0);
}

static void test_retention(void **state)
{
	(void)state;
	char dir[300], p[400], tok[16];
	char **paths;
	long *steps;
	int n;

	path_of(dir, sizeof dir, "keep");
	mkdir(dir, 0755);
	snprintf(p, sizeof p, "%s/step_00000000", dir);   /* incomplete: never deleted */
	mkdir(p, 0755);
	for (long s = 1; s <= 4; s++) {
		snprintf(tok, sizeof tok, "k%ld", s);
		assert_int_equal(save_layout(dir, s * 10, 1, 1, 1, 2, tok), 0);
	}
	n = ck_list(dir, 0, &paths, &steps, NULL, NULL);
	assert_int_equal(n, 2);
	assert_int_equal(steps[0], 40);
	assert_int_equal(steps[1], 30);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(steps);
	snprintf(p, sizeof p, "%s/step_00000010", dir);
	assert_int_not_equal(access(p, F_OK), 0);
	/* resolve takes the newest complete one even when `latest` lags */
	snprintf(p, sizeof p, "%s/latest", dir);
	assert_int_equal(ck_write_file_atomic(p, "step_00000030\n", 14, p, sizeof p), 0);
	char out[4096];
	assert_int_equal(llmt_ckpt_resolve(dir, out, sizeof out, p, sizeof p), 0);
	snprintf(p, sizeof p, "%s/step_00000040", dir);
	assert_string_equal(out, p);
	snprintf(p, sizeof p, "%s/step_00000000", dir);
	assert_int_equal(access(p, F_OK), 0);
	/* saving the same step again keeps the older one aside */
	assert_int_equal(save_layout(dir, 40, 1, 1, 1, 0, "k5"), 0);
	glob_t g;
	snprintf(p, sizeof p, "%s/step_00000040.superseded.*", dir);
	assert_int_equal(glob(p, 0, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, 1);
	globfree(&g);
	snprintf(p, sizeof p, "%s/step_00000040", dir);
	assert_int_equal(ck_validate_dir(p, 0, NULL, p, sizeof p), 0);
}

static void test_config_mismatch(void **state)
{
	(void)state;
	char dir[300], step[320], err[1024];
	int code;
	llmt_ckpt *c;
	sim_rank s;
	llmt_config other;

	path_of(dir, sizeof dir, "cfg");
	assert_int_equal(save_layout(dir, 1, 1, 1, 1, 0, "c1"), 0);
	snprintf(step, sizeof step, "%s/step_00000001", dir);
	c = llmt_ckpt_open(step, &code, err, sizeof err);
	assert_non_null(c);
	other = cfg;
	other.n_kv_heads = 1;
	build_rank(&s, 1, 1, 1, 0);
	s.st.config = &other;
	assert_int_equal(llmt_ckpt_load(c, &s.st, err, sizeof err), LLMT_EXIT_USAGE);
	assert_non_null(strstr(err, "n_kv_heads"));
	/* a kind the checkpoint lacks: error unless optional */
	s.st.config = &cfg;
	s.st.bufs[1].kind = "lion_m";
	assert_int_equal(llmt_ckpt_load(c, &s.st, err, sizeof err), LLMT_EXIT_DATA);
	s.st.bufs[1].optional = 1;
	assert_int_equal(llmt_ckpt_load(c, &s.st, err, sizeof err), 0);
	free_rank(&s);
	llmt_ckpt_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_range),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_reshard),
		cmocka_unit_test(test_borrow),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_failed_save),
		cmocka_unit_test(test_blocked_dir),
		cmocka_unit_test(test_retention),
		cmocka_unit_test(test_config_mismatch),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
