/* test_ckpt.c: checkpoint unit tests without MPI: ranks of a layout are
 * simulated in one process from a fake parameter table (ckpt_sim.h: TP
 * row and column splits, PP stages, a tied copy, padding, ZeRO-1 ranges).
 * Range cutting, round trip, lent buffers, loading under other layouts;
 * the faults are test_ckpt_faults.c. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_range),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_reshard),
		cmocka_unit_test(test_borrow),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
