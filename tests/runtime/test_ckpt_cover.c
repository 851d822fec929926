/* test_ckpt_cover.c: a checkpoint's pieces must tile each tensor exactly.
 * Tables of pieces (1-D flat ranges as the ZeRO shards write them, 2-D
 * column splits as TP writes them, partial rows) that tile, overlap or
 * leave a gap, checked by ck_cover_check and the message it gives (files
 * and ranges named); then a manifest on disk whose two rank files
 * overlap, refused by the validation ckpt-verify runs, although the
 * pieces' areas add up to the tensor's (it used to pass). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ckpt/ckpt_int.h"

typedef struct { int file; int64_t r0, nr, c0, nc; } pc;

/* ck_cover_check of pieces p[0..n) of one tensor rows x cols; err out */
static int cover(int64_t rows, int64_t cols, const pc *p, int n, char *err, size_t errlen)
{
	ck_file files[3] = { { .name = "rank_00000.bin" }, { .name = "rank_00001.bin" }, { .name = "rank_00002.bin" } };
	ck_tensor t = { .name = "w", .ndim = cols > 1 ? 2 : 1, .rows = rows, .cols = cols };
	char kinds[1][32] = { "master" };
	ck_piece pieces[8];
	ck_source s;

	memset(&s, 0, sizeof s);
	s.files = files;
	s.nfiles = 3;
	s.tensors = &t;
	s.ntensors = 1;
	s.kinds = kinds;
	s.nkinds = 1;
	for (int i = 0; i < n; i++)
		pieces[i] = (ck_piece){ 0, 0, p[i].file, LLMT_CKPT_F32, 0, { p[i].r0, p[i].nr, p[i].c0, p[i].nc } };
	err[0] = 0;
	return ck_cover_check(&s, pieces, n, err, errlen);
}

static void test_tiles(void **st)
{
	char err[512];
	(void)st;
	/* flat ranges of a 1-D tensor, in any order */
	pc a[] = { { 1, 4, 4, 0, 1 }, { 0, 0, 4, 0, 1 } };
	assert_int_equal(cover(8, 1, a, 2, err, sizeof err), 0);
	/* row bands, and a TP column split */
	pc b[] = { { 0, 0, 2, 0, 4 }, { 1, 2, 2, 0, 4 } };
	assert_int_equal(cover(4, 4, b, 2, err, sizeof err), 0);
	pc c[] = { { 0, 0, 4, 0, 2 }, { 1, 0, 4, 2, 2 } };
	assert_int_equal(cover(4, 4, c, 2, err, sizeof err), 0);
	/* a flat range cut from a 2-D tensor: partial row, full rows, partial
	 * row, and the rest in another file */
	pc d[] = { { 0, 0, 1, 1, 3 }, { 0, 1, 2, 0, 4 }, { 0, 3, 1, 0, 2 }, { 1, 0, 1, 0, 1 }, { 1, 3, 1, 2, 2 } };
	assert_int_equal(cover(4, 4, d, 5, err, sizeof err), 0);
	/* one piece, the whole tensor */
	pc e[] = { { 2, 0, 3, 0, 5 } };
	assert_int_equal(cover(3, 5, e, 1, err, sizeof err), 0);
	assert_string_equal(err, "");
}

static void test_overlap(void **st)
{
	char err[512];
	(void)st;
	/* areas add up (5 + 3 = 8) but [3, 5) is in both and [6, 8) in none */
	pc a[] = { { 0, 0, 5, 0, 1 }, { 1, 3, 3, 0, 1 } };
	assert_int_equal(cover(8, 1, a, 2, err, sizeof err), LLMT_EXIT_DATA);
	assert_string_equal(err, "tensor w (master): rank_00000.bin elements [0, 5) overlaps rank_00001.bin elements [3, 6)");
	/* the same range written by two ranks */
	pc b[] = { { 0, 0, 4, 0, 1 }, { 1, 0, 4, 0, 1 } };
	assert_int_equal(cover(4, 1, b, 2, err, sizeof err), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "rank_00000.bin elements [0, 4) overlaps rank_00001.bin elements [0, 4)"));
	/* 2-D: column splits that overlap in column 2 of rows 1-2 */
	pc c[] = { { 0, 0, 4, 0, 3 }, { 1, 1, 2, 2, 2 }, { 2, 0, 1, 3, 1 } };
	assert_int_equal(cover(4, 4, c, 3, err, sizeof err), LLMT_EXIT_DATA);
	assert_string_equal(err, "tensor w (master): rank_00000.bin rows [0, 4) x cols [0, 3) overlaps "
		"rank_00001.bin rows [1, 3) x cols [2, 4)");
}

static void test_gap(void **st)
{
	char err[512];
	(void)st;
	pc a[] = { { 0, 0, 3, 0, 1 }, { 1, 4, 4, 0, 1 } };
	assert_int_equal(cover(8, 1, a, 2, err, sizeof err), LLMT_EXIT_DATA);
	assert_string_equal(err, "tensor w (master): elements [3, 4) in no file "
		"(a gap after rank_00000.bin elements [0, 3) and before rank_00001.bin elements [4, 8))");
	/* at the start, at the end */
	pc b[] = { { 1, 2, 6, 0, 1 } };
	assert_int_equal(cover(8, 1, b, 1, err, sizeof err), LLMT_EXIT_DATA);
	assert_string_equal(err, "tensor w (master): elements [0, 2) in no file (a gap before rank_00001.bin elements [2, 8))");
	pc c[] = { { 0, 0, 6, 0, 1 } };
	assert_int_equal(cover(8, 1, c, 1, err, sizeof err), LLMT_EXIT_DATA);
	assert_string_equal(err, "tensor w (master): elements [6, 8) in no file (a gap after rank_00000.bin elements [0, 6))");
	/* 2-D: a missing column band */
	pc d[] = { { 0, 0, 4, 0, 2 }, { 1, 0, 4, 3, 1 } };
	assert_int_equal(cover(4, 4, d, 2, err, sizeof err), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "rows [0, 4) x cols [2, 3) in no file"));
	/* a missing row band between two */
	pc e[] = { { 0, 0, 1, 0, 4 }, { 1, 3, 1, 0, 4 } };
	assert_int_equal(cover(4, 4, e, 2, err, sizeof err), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "elements [4, 12) in no file"));
}

/* on disk: ckpt-verify's validation refuses overlapping rank files */
static void test_manifest(void **st)
{
	char dir[] = "/tmp/llmt-cover.XXXXXX", path[256], err[1024];
	static const char man[] =
		"{\"format\":\"llmt-ckpt\",\"version\":1,\"step\":3,\"created_ns\":1,"
		"\"layout\":{\"tp\":1,\"pp\":1,\"dp\":2,\"world\":2},"
		"\"model\":{\"vocab_size\":8,\"d_model\":4,\"n_layers\":1,\"n_heads\":2,\"n_kv_heads\":2,\"d_ff\":8,\"max_seq\":16},"
		"\"training\":{\"step\":3},\"replicas_agree\":true,\"kinds\":[{\"name\":\"master\",\"dtype\":\"f32\"}],"
		"\"tensors\":[{\"name\":\"b.norm\",\"shape\":[8]}],"
		"\"files\":[{\"name\":\"rank_00000.bin\",\"size\":20,\"xxh3\":\"0000000000000000\"},"
		"{\"name\":\"rank_00001.bin\",\"size\":12,\"xxh3\":\"0000000000000000\"}],"
		"\"pieces\":[[0,0,0,0,0,5,0,1],[0,0,1,0,3,3,0,1]],\"blobs\":[]}";
	char zeros[20] = { 0 };
	FILE *f;
	(void)st;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs(man, f);
	fclose(f);
	snprintf(path, sizeof path, "%s/rank_00000.bin", dir);
	assert_non_null(f = fopen(path, "w"));
	fwrite(zeros, 1, 20, f);
	fclose(f);
	snprintf(path, sizeof path, "%s/rank_00001.bin", dir);
	assert_non_null(f = fopen(path, "w"));
	fwrite(zeros, 1, 12, f);
	fclose(f);
	assert_int_equal(ck_validate_dir(dir, 1, NULL, err, sizeof err), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "manifest.json: bad manifest: tensor b.norm (master): "
		"rank_00000.bin elements [0, 5) overlaps rank_00001.bin elements [3, 6)"));
	unlink(path);
	snprintf(path, sizeof path, "%s/rank_00000.bin", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tiles),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_gap),
		cmocka_unit_test(test_manifest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
