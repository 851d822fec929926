/* test_ckpt.c: checkpoint unit tests without MPI: ranks of a layout are
 * simulated in one process from a fake parameter table (ckpt_sim.h: TP
 * row and column splits, PP stages, a tied copy, padding, ZeRO-1 ranges).
 * Range cutting, round trip, lent buffers, loading under other layouts,
 * the generation that orders checkpoints (clock skew, rollback, retention,
 * hostile values); the faults are test_ckpt_faults.c. */
#define _GNU_SOURCE
#include "ckpt_sim.h"

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

/* ---- generation: the order of checkpoints (llmt/ckptgen.h) ------------- */
/* Set key of step's manifest to the JSON text val ("" removes it). */
static void edit_manifest(const char *dir, long step, const char *key, const char *val)
{
	char p[400], err[64];
	json_error_t je;
	json_t *m;
	char *txt;

	snprintf(p, sizeof p, "%s/step_%08ld/manifest.json", dir, step);
	assert_non_null(m = json_load_file(p, 0, &je));
	if (*val)
		json_object_set_new(m, key, json_loads(val, JSON_DECODE_ANY, &je));
	else
		json_object_del(m, key);
	assert_non_null(txt = json_dumps(m, JSON_INDENT(1)));
	assert_int_equal(ck_write_file_atomic(p, txt, strlen(txt), err, sizeof err), 0);
	free(txt);
	json_decref(m);
}

static long long gen_of(const char *dir, long step)
{
	char p[400], err[1024];
	ck_manifest m;
	long long g;

	snprintf(p, sizeof p, "%s/step_%08ld", dir, step);
	assert_int_equal(ck_manifest_load(p, 1, &m, err, sizeof err), 0);
	g = m.generation;
	ck_manifest_free(&m);
	return g;
}

/* ck_list's steps of dir as "s1 s2 ..." */
static const char *order(const char *dir)
{
	static char out[256];
	char **paths;
	long *steps;
	int n = ck_list(dir, 0, &paths, &steps, NULL, NULL);
	size_t u = 0;

	out[0] = 0;
	for (int i = 0; i < n; i++) {
		u += (size_t)snprintf(out + u, sizeof out - u, "%s%ld", i ? " " : "", steps[i]);
		free(paths[i]);
	}
	free(paths);
	free(steps);
	return out;
}

/* Saves 100 and 200; 200's host clock ran a day ahead (its created_ns in
 * the future); a rollback to 100 saves 150: newest by generation, for
 * ck_list, resolve and retention, whatever the clocks said. Old manifests
 * (no generation) are 0: below any new save. */
static void test_generation(void **state)
{
	(void)state;
	char dir[300], p[400], err[1024], out[4096], newest[4096], inc[64];
	int ninc;
	long long mg;

	path_of(dir, sizeof dir, "gen");
	assert_int_equal(save_layout(dir, 100, 1, 1, 1, 0, "g1"), 0);
	assert_int_equal(save_layout(dir, 200, 1, 1, 1, 0, "g2"), 0);
	assert_int_equal(gen_of(dir, 100), 1);
	assert_int_equal(gen_of(dir, 200), 2);
	snprintf(p, sizeof p, "%lld", (long long)ck_now_ns() + 86400LL * 1000000000LL);
	edit_manifest(dir, 200, "created_ns", p);
	assert_int_equal(save_layout(dir, 150, 1, 1, 1, 0, "g3"), 0);   /* its writer lists dir: 1 + 2 */
	assert_int_equal(gen_of(dir, 150), 3);
	assert_string_equal(order(dir), "150 200 100");
	assert_int_equal(llmt_ckpt_resolve(dir, out, sizeof out, err, sizeof err), 0);
	snprintf(p, sizeof p, "%s/step_00000150", dir);
	assert_string_equal(out, p);
	assert_int_equal(llmt_ckpt_scan(dir, newest, sizeof newest, inc, sizeof inc, &ninc, &mg), 3);
	assert_int_equal(mg, 3);
	assert_string_equal(newest, p);
	/* retention keeps the newest 2 by generation: 160 and 150, not the
	 * future-dated 200 */
	assert_int_equal(save_layout(dir, 160, 1, 1, 1, 2, "g4"), 0);
	assert_int_equal(gen_of(dir, 160), 4);
	assert_string_equal(order(dir), "160 150");
	/* old manifests: no generation is 0, ordered among themselves by
	 * creation time; any new save ranks above them */
	path_of(dir, sizeof dir, "gen_old");
	assert_int_equal(save_layout(dir, 10, 1, 1, 1, 0, "o1"), 0);
	assert_int_equal(save_layout(dir, 20, 1, 1, 1, 0, "o2"), 0);
	edit_manifest(dir, 10, "generation", "");
	edit_manifest(dir, 20, "generation", "");
	edit_manifest(dir, 10, "created_ns", "2");
	edit_manifest(dir, 20, "created_ns", "1");
	assert_int_equal(gen_of(dir, 10), 0);
	assert_string_equal(order(dir), "10 20");
	edit_manifest(dir, 20, "created_ns", "3");
	assert_string_equal(order(dir), "20 10");
	snprintf(p, sizeof p, "%lld", (long long)ck_now_ns() + 86400LL * 1000000000LL);
	edit_manifest(dir, 20, "created_ns", p);
	assert_int_equal(save_layout(dir, 15, 1, 1, 1, 0, "o3"), 0);
	assert_int_equal(gen_of(dir, 15), 1);
	assert_string_equal(order(dir), "15 20 10");
}

/* The writer carries the largest generation it was given (the start-up
 * listing's) and its own saves' on, without listing CKPT_DIR again: a
 * seed of 41 gives 42 and 43 though the directory's largest is 1. */
static void test_generation_carried(void **state)
{
	(void)state;
	char dir[300], err[1024];
	sim_rank s;
	llmt_ckpt_writer *w;

	path_of(dir, sizeof dir, "gen_carry");
	assert_int_equal(save_layout(dir, 1, 1, 1, 1, 0, "c1"), 0);
	build_rank(&s, 1, 1, 1, 0);
	fill_rank(&s);
	assert_non_null(w = llmt_ckpt_writer_new(dir, 0, err, sizeof err));
	llmt_ckpt_writer_generation(w, 41);
	setenv("LLMT_TEST_CKPT_TOKEN", "c2", 1);
	assert_int_equal(llmt_ckpt_save(w, 2, &s.st, err, sizeof err), 0);
	assert_int_equal(llmt_ckpt_wait(w, err, sizeof err), 0);
	setenv("LLMT_TEST_CKPT_TOKEN", "c3", 1);
	assert_int_equal(llmt_ckpt_save(w, 3, &s.st, err, sizeof err), 0);
	assert_int_equal(llmt_ckpt_wait(w, err, sizeof err), 0);
	llmt_ckpt_writer_free(w);
	free_rank(&s);
	assert_int_equal(gen_of(dir, 2), 42);
	assert_int_equal(gen_of(dir, 3), 43);
	assert_string_equal(order(dir), "3 2 1");
}

/* A generation that is not an integer in 0..2^53-1 makes the manifest
 * bad, one line naming it; such a checkpoint counts for no save's
 * generation (INT64_MAX does not overflow the next), and one at the
 * largest valid generation gives the next save the same (no wrap). */
static void test_generation_hostile(void **state)
{
	(void)state;
	static const char *bad[] = { "-1", "9223372036854775807", "9007199254740992", "\"7\"", "3.0", "true", "null" };
	char dir[300], p[400], err[1024], want[256];

	path_of(dir, sizeof dir, "gen_bad");
	assert_int_equal(save_layout(dir, 1, 1, 1, 1, 0, "h1"), 0);
	assert_int_equal(save_layout(dir, 2, 1, 1, 1, 0, "h2"), 0);
	snprintf(p, sizeof p, "%s/step_00000002", dir);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		edit_manifest(dir, 2, "generation", bad[i]);
		assert_int_equal(ck_validate_dir(p, 1, NULL, err, sizeof err), LLMT_EXIT_DATA);
		snprintf(want, sizeof want, "manifest.json: bad manifest: generation %s: not an integer in 0..9007199254740991",
		         bad[i]);
		if (!strstr(err, want))
			fail_msg("generation %s: %s", bad[i], err);
	}
	edit_manifest(dir, 2, "generation", "9223372036854775807");
	assert_int_equal(save_layout(dir, 3, 1, 1, 1, 0, "h3"), 0);
	assert_int_equal(gen_of(dir, 3), 2);   /* 1 + step 1's: step 2 is not a valid checkpoint */
	assert_string_equal(order(dir), "3 1");
	edit_manifest(dir, 2, "generation", "9007199254740991");
	assert_string_equal(order(dir), "2 3 1");
	assert_int_equal(save_layout(dir, 4, 1, 1, 1, 0, "h4"), 0);
	assert_int_equal(gen_of(dir, 4), LLMT_CKPT_GEN_MAX);
	assert_int_equal(llmt_ckpt_gen_next(LLMT_CKPT_GEN_MAX), LLMT_CKPT_GEN_MAX);
	assert_string_equal(order(dir), "4 2 3 1");   /* equal generations: the later creation first */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_range),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_reshard),
		cmocka_unit_test(test_borrow),
		cmocka_unit_test(test_generation),
		cmocka_unit_test(test_generation_carried),
		cmocka_unit_test(test_generation_hostile),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
