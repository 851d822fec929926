/* test_data.c: token shards (good, wrong magic, wrong version, truncated,
 * out-of-vocab token), the loader's seeded order (a permutation, the same
 * for the same seed, layout-independent global batches, resumable
 * position) and the byte tokenizer (UTF-8 check, round trip, val split). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "llmt/exitcodes.h"
#include "data/loader.h"
#include "data/shard.h"
#include "data/tokenize.h"

static char dir[256];

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void write_raw(const char *name, int32_t magic, int32_t version, int32_t count, size_t ntok)
{
	char p[512];
	int32_t hdr[256] = { magic, version, count };
	FILE *f;

	path_of(p, sizeof(p), name);
	f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(hdr, sizeof(hdr), 1, f), 1);
	for (size_t i = 0; i < ntok; i++) {
		uint16_t t = (uint16_t)(i % 251);
		assert_int_equal(fwrite(&t, 2, 1, f), 1);
	}
	fclose(f);
}

static int setup(void **st)
{
	(void)st;
	snprintf(dir, sizeof(dir), "/tmp/llmt-test-data.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[300];
	(void)st;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_shard_good(void **st)
{
	char p[512], err[512];
	llmt_shard s;
	uint32_t tok[5];
	uint16_t src[300];
	(void)st;

	for (int i = 0; i < 300; i++)
		src[i] = (uint16_t)(i % 256);
	path_of(p, sizeof(p), "good.bin");
	assert_int_equal(llmt_shard_write(p, src, 300, err, sizeof(err)), 0);
	assert_int_equal(llmt_shard_open(&s, p, err, sizeof(err)), 0);
	assert_int_equal(s.ntok, 300);
	assert_int_equal(llmt_shard_read(&s, 257, 5, tok, 256, err, sizeof(err)), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(tok[i], (257 + i) % 256);
	/* past the end, and a vocabulary smaller than the tokens */
	assert_int_equal(llmt_shard_read(&s, 298, 5, tok, 256, err, sizeof(err)), LLMT_EXIT_DATA);
	assert_int_equal(llmt_shard_read(&s, 0, 5, tok, 3, err, sizeof(err)), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "outside the vocabulary"));
	llmt_shard_close(&s);
}

static void test_shard_bad(void **st)
{
	char p[512], err[512];
	llmt_shard s;
	(void)st;

	write_raw("magic.bin", 20240521, 1, 10, 10);
	path_of(p, sizeof(p), "magic.bin");
	assert_int_equal(llmt_shard_open(&s, p, err, sizeof(err)), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "magic.bin"));
	assert_non_null(strstr(err, "bad magic"));

	write_raw("version.bin", 20240520, 3, 10, 10);
	path_of(p, sizeof(p), "version.bin");
	assert_int_equal(llmt_shard_open(&s, p, err, sizeof(err)), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "version"));

	write_raw("trunc.bin", 20240520, 1, 100, 60);
	path_of(p, sizeof(p), "trunc.bin");
	assert_int_equal(llmt_shard_open(&s, p, err, sizeof(err)), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "trunc.bin"));
	assert_non_null(strstr(err, "truncated"));

	path_of(p, sizeof(p), "short.bin");
	{
		FILE *f = fopen(p, "wb");
		assert_non_null(f);
		fputs("hello", f);
		fclose(f);
	}
	assert_int_equal(llmt_shard_open(&s, p, err, sizeof(err)), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "truncated header"));

	path_of(p, sizeof(p), "missing.bin");
	assert_int_equal(llmt_shard_open(&s, p, err, sizeof(err)), LLMT_EXIT_NOINPUT);
}

/* version 2 (uint32 tokens) beyond a 65,536-id vocabulary; version 1
 * below, with the vocabulary in header word 3; a loader for a smaller
 * model refuses the shard at open, naming both sizes */
static void test_shard_v2(void **st)
{
	char p[600], d[512], err[512];
	uint32_t src[300], tok[6];
	llmt_shard s;
	llmt_loader ld;
	struct stat sb;
	(void)st;

	for (int i = 0; i < 300; i++)
		src[i] = 128255u - (uint32_t)i * 7;
	snprintf(d, sizeof(d), "%s/v2", dir);
	assert_int_equal(mkdir(d, 0755), 0);
	snprintf(p, sizeof(p), "%s/a.bin", d);
	assert_int_equal(llmt_shard_write_ids(p, src, 300, 128256, err, sizeof(err)), 0);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_size, 1024 + 4 * 300);
	assert_int_equal(llmt_shard_open(&s, p, err, sizeof(err)), 0);
	assert_int_equal(s.version, 2);
	assert_int_equal(s.vocab, 128256);
	assert_int_equal(llmt_shard_read(&s, 290, 6, tok, 128256, err, sizeof(err)), 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(tok[i], src[290 + i]);
	assert_true(tok[0] > 65535);
	assert_int_equal(llmt_shard_read(&s, 0, 6, tok, 65536, err, sizeof(err)), LLMT_EXIT_DATA);
	llmt_shard_close(&s);
	assert_int_equal(llmt_loader_open(&ld, d, 8, 32000, 1, err, sizeof(err)), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "128256"));
	assert_non_null(strstr(err, "32000"));
	assert_int_equal(llmt_loader_open(&ld, d, 8, 128256, 1, err, sizeof(err)), 0);
	llmt_loader_close(&ld);

	for (int i = 0; i < 300; i++)
		src[i] = 65535 - (uint32_t)i;
	snprintf(p, sizeof(p), "%s/v1.bin", dir);
	assert_int_equal(llmt_shard_write_ids(p, src, 300, 65536, err, sizeof(err)), 0);
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_size, 1024 + 2 * 300);
	assert_int_equal(llmt_shard_open(&s, p, err, sizeof(err)), 0);
	assert_int_equal(s.version, 1);
	assert_int_equal(s.vocab, 65536);
	assert_int_equal(llmt_shard_read(&s, 0, 6, tok, 65536, err, sizeof(err)), 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(tok[i], 65535 - i);
	llmt_shard_close(&s);
}

static void test_permute(void **st)
{
	(void)st;
	for (uint64_t n = 1; n < 300; n += 37) {
		char *seen = calloc(n, 1);
		assert_non_null(seen);
		for (uint64_t i = 0; i < n; i++) {
			uint64_t v = llmt_permute(i, n, 42);
			assert_true(v < n);
			assert_int_equal(seen[v], 0);
			seen[v] = 1;
		}
		free(seen);
	}
	/* the key changes the order */
	int same = 0;
	for (uint64_t i = 0; i < 1000; i++)
		same += llmt_permute(i, 1000, 1) == llmt_permute(i, 1000, 2);
	assert_true(same < 50);
}

/* a loader over two shards of known content in its own directory */
static void make_corpus(const char *sub, size_t n1, size_t n2)
{
	char d[512], p[600], err[512];
	uint16_t *tok = malloc(2 * (n1 + n2));

	assert_non_null(tok);
	for (size_t i = 0; i < n1 + n2; i++)
		tok[i] = (uint16_t)((i * 7) % 256);
	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	assert_int_equal(mkdir(d, 0777), 0);
	snprintf(p, sizeof(p), "%s/b.bin", d);
	assert_int_equal(llmt_shard_write(p, tok + n1, n2, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/a.bin", d);
	assert_int_equal(llmt_shard_write(p, tok, n1, err, sizeof(err)), 0);
	free(tok);
}

static void test_loader_order(void **st)
{
	char d[512], err[512];
	llmt_loader a, b, c;
	int T = 8;
	int32_t in1[16], tg1[16], in2[16], tg2[16];
	(void)st;

	make_corpus("c1", 1000, 501);
	snprintf(d, sizeof(d), "%s/c1", dir);
	assert_int_equal(llmt_loader_open(&a, d, T, 256, 7, err, sizeof(err)), 0);
	assert_int_equal(llmt_loader_open(&b, d, T, 256, 7, err, sizeof(err)), 0);
	assert_int_equal(llmt_loader_open(&c, d, T, 256, 8, err, sizeof(err)), 0);
	/* samples: (1000-1)/8 = 124 in a.bin (sorted first), (501-1)/8 = 62 in b.bin */
	assert_int_equal(a.nshards, 2);
	assert_int_equal(a.nsamples, 124 + 62);
	/* every epoch visits every sample once */
	{
		char *seen = calloc(a.nsamples, 1);
		for (uint64_t p = a.nsamples; p < 2 * a.nsamples; p++)
			seen[llmt_loader_sample_at(&a, p)]++;
		for (uint64_t i = 0; i < a.nsamples; i++)
			assert_int_equal(seen[i], 1);
		free(seen);
	}
	/* epochs are shuffled differently; seeds differ */
	{
		int same_epoch = 0, same_seed = 0;
		for (uint64_t p = 0; p < a.nsamples; p++) {
			same_epoch += llmt_loader_sample_at(&a, p) == llmt_loader_sample_at(&a, p + a.nsamples);
			same_seed += llmt_loader_sample_at(&a, p) == llmt_loader_sample_at(&c, p);
		}
		assert_true(same_epoch < 20);
		assert_true(same_seed < 20);
	}
	/* targets are inputs shifted by one token of the same sample */
	assert_int_equal(llmt_loader_micro(&a, 0, 2, 1, 0, 0, 2, in1, tg1, err, sizeof(err)), 0);
	for (int i = 0; i < T - 1; i++)
		assert_int_equal(tg1[i], in1[i + 1]);
	assert_int_equal((in1[1] - in1[0] + 256) % 256, 7);
	/* the same seed, the same data; a global batch of 4 read as dp=1 B=4
	 * equals dp=2 B=2 (rank 0 then 1) and dp=1 B=2 A=2 */
	{
		int32_t g1[32], g2[32], t1[32], t2[32];
		assert_int_equal(llmt_loader_micro(&a, 40, 4, 1, 0, 0, 4, g1, t1, err, sizeof(err)), 0);
		assert_int_equal(llmt_loader_micro(&b, 40, 4, 2, 0, 0, 2, g2, t2, err, sizeof(err)), 0);
		assert_int_equal(llmt_loader_micro(&b, 40, 4, 2, 1, 0, 2, g2 + 16, t2 + 16, err, sizeof(err)), 0);
		assert_memory_equal(g1, g2, sizeof(g1));
		assert_memory_equal(t1, t2, sizeof(t1));
		assert_int_equal(llmt_loader_micro(&b, 40, 4, 1, 0, 1, 2, g2, t2, err, sizeof(err)), 0);
		assert_memory_equal(g1 + 16, g2, 16 * sizeof(int32_t));
	}
	/* resume: a new loader reading at a saved position sees the same data */
	a.pos = 1234;
	assert_int_equal(llmt_loader_micro(&a, a.pos, 2, 1, 0, 0, 2, in1, tg1, err, sizeof(err)), 0);
	llmt_loader_close(&b);
	assert_int_equal(llmt_loader_open(&b, d, T, 256, 7, err, sizeof(err)), 0);
	assert_int_equal(llmt_loader_micro(&b, 1234, 2, 1, 0, 0, 2, in2, tg2, err, sizeof(err)), 0);
	assert_memory_equal(in1, in2, sizeof(in1));
	assert_memory_equal(tg1, tg2, sizeof(tg1));
	llmt_loader_close(&a);
	llmt_loader_close(&b);
	llmt_loader_close(&c);
}

static void test_loader_bad(void **st)
{
	char d[512], p[600], err[512];
	llmt_loader a;
	(void)st;

	snprintf(d, sizeof(d), "%s/none", dir);
	assert_int_equal(llmt_loader_open(&a, d, 8, 256, 1, err, sizeof(err)), LLMT_EXIT_NOINPUT);
	assert_int_equal(mkdir(d, 0777), 0);
	assert_int_equal(llmt_loader_open(&a, d, 8, 256, 1, err, sizeof(err)), LLMT_EXIT_NOINPUT);
	assert_non_null(strstr(err, "no token shards"));
	/* one good and one truncated shard: the bad one is named */
	make_corpus("c2", 100, 100);
	snprintf(d, sizeof(d), "%s/c2", dir);
	snprintf(p, sizeof(p), "%s/b.bin", d);
	assert_int_equal(truncate(p, 1024 + 50), 0);
	assert_int_equal(llmt_loader_open(&a, d, 8, 256, 1, err, sizeof(err)), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "b.bin"));
	/* too short for one sample */
	make_corpus("c3", 5, 4);
	snprintf(d, sizeof(d), "%s/c3", dir);
	assert_int_equal(llmt_loader_open(&a, d, 8, 256, 1, err, sizeof(err)), LLMT_EXIT_DATA);
	assert_non_null(strstr(err, "no shard holds a sample"));
}

static void test_tokenizer(void **st)
{
	const char *text = "In the beginning God created the heaven and the earth.\n"
			   "Ünïcödé — ok ✓ 𝄞\nlast line\n";
	size_t n = strlen(text);
	uint16_t *tok = malloc(2 * n);
	unsigned char *back = malloc(n);
	const unsigned char bad1[] = { 'a', 0xc3 }, bad2[] = { 'a', 0xc0, 0x80, 'b' },
			    bad3[] = { 0xed, 0xa0, 0x80 }, bad4[] = { 'x', 0xff };
	(void)st;

	assert_int_equal(llmt_utf8_check((const unsigned char *)text, n), n);
	llmt_bytes_to_tokens((const unsigned char *)text, n, tok);
	assert_int_equal(llmt_tokens_to_bytes(tok, n, back), 0);
	assert_memory_equal(text, back, n);
	tok[3] = 300;
	assert_int_equal(llmt_tokens_to_bytes(tok, n, back), -1);
	assert_int_equal(llmt_utf8_check(bad1, 2), 1);   /* cut sequence */
	assert_int_equal(llmt_utf8_check(bad2, 4), 1);   /* overlong */
	assert_int_equal(llmt_utf8_check(bad3, 3), 0);   /* surrogate */
	assert_int_equal(llmt_utf8_check(bad4, 2), 1);
	/* the validation part starts at a line start near the fraction */
	{
		size_t s = llmt_val_split((const unsigned char *)text, n, 0.3);
		assert_true(s > 0 && s < n);
		assert_int_equal(text[s - 1], '\n');
		assert_int_equal(llmt_val_split((const unsigned char *)text, n, 0), n);
	}
	free(tok);
	free(back);
}

static void test_tokenize_cmd(void **st)
{
	char in[512], out[512], p[600], err[512];
	char *argv[6];
	llmt_shard s;
	FILE *f;
	(void)st;

	path_of(in, sizeof(in), "in.txt");
	path_of(out, sizeof(out), "tok");
	f = fopen(in, "w");
	assert_non_null(f);
	for (int i = 0; i < 100; i++)
		fprintf(f, "line %d of the text\n", i);
	fclose(f);
	argv[0] = "tokenize", argv[1] = in, argv[2] = out, argv[3] = "--val-fraction", argv[4] = "0.1";
	argv[5] = NULL;
	assert_int_equal(llmt_tokenize_main(5, argv), 0);
	snprintf(p, sizeof(p), "%s/train_000000.bin", out);
	assert_int_equal(llmt_shard_open(&s, p, err, sizeof(err)), 0);
	{
		uint64_t ntrain = s.ntok;
		uint32_t t[4];
		assert_int_equal(llmt_shard_read(&s, 0, 4, t, 256, err, sizeof(err)), 0);
		assert_int_equal(t[0], 'l');
		assert_int_equal(t[3], 'e');
		llmt_shard_close(&s);
		snprintf(p, sizeof(p), "%s/val/val_000000.bin", out);
		assert_int_equal(llmt_shard_open(&s, p, err, sizeof(err)), 0);
		assert_int_equal(ntrain + s.ntok, 1990); /* 10 lines of 19 bytes + 90 of 20 */
		llmt_shard_close(&s);
	}
	/* a second run into the same directory is refused, not mixed */
	argv[0] = "tokenize", argv[1] = in, argv[2] = out, argv[3] = "--val-fraction", argv[4] = "0.1";
	assert_int_equal(llmt_tokenize_main(5, argv), LLMT_EXIT_USAGE);
	/* not UTF-8 */
	f = fopen(in, "w");
	fputs("ok\xff\n", f);
	fclose(f);
	path_of(out, sizeof(out), "tok2");
	/* getopt permutes argv: build it again for every call */
	argv[0] = "tokenize", argv[1] = in, argv[2] = out, argv[3] = NULL;
	assert_int_equal(llmt_tokenize_main(3, argv), LLMT_EXIT_DATA);
	argv[0] = "tokenize", argv[1] = in, argv[2] = out, argv[3] = "--val-fraction", argv[4] = "1.5";
	assert_int_equal(llmt_tokenize_main(5, argv), LLMT_EXIT_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shard_good),
		cmocka_unit_test(test_shard_bad),
		cmocka_unit_test(test_shard_v2),
		cmocka_unit_test(test_permute),
		cmocka_unit_test(test_loader_order),
		cmocka_unit_test(test_loader_bad),
		cmocka_unit_test(test_tokenizer),
		cmocka_unit_test(test_tokenize_cmd),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
