/* test_guards.c: the numerical guards, LLM_TRAIN_FAULT parsing, the SDC
 * verdict and checksum, and the metrics and heartbeat line formats. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "resilience/faults.h"
#include "resilience/heartbeat.h"
#include "train/metrics.h"
#include "train/sdc.h"
#include "train/train.h"

static void test_guard(void **st)
{
	(void)st;
	assert_false(llmt_guard_bad(4.0, 1.0, 0, 0, 3.0));          /* first step: no history */
	assert_true(llmt_guard_bad(NAN, 1.0, 4.0, 5, 3.0));
	assert_true(llmt_guard_bad(4.0, INFINITY, 4.0, 5, 3.0));
	assert_true(llmt_guard_bad(-INFINITY, 1.0, 4.0, 0, 3.0));
	assert_false(llmt_guard_bad(11.9, 1.0, 4.0, 5, 3.0));
	assert_true(llmt_guard_bad(12.1, 1.0, 4.0, 5, 3.0));        /* spike: > 3 x mean */
	assert_true(llmt_guard_bad(4000, 1.0, 4.0, 1, 3.0));
	assert_false(llmt_guard_bad(4000, 1.0, 4.0, 1, 0));         /* spike check off */
}

static void test_faults(void **st)
{
	llmt_faults f;
	char err[256];
	(void)st;

	assert_int_equal(llmt_faults_parse(&f, NULL, 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(llmt_faults_parse(&f, "nan@5:1,bitflip@3", 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(f.n, 2);
	assert_true(llmt_fault_at(&f, LLMT_FAULT_NAN, 5, 1));
	assert_false(llmt_fault_at(&f, LLMT_FAULT_NAN, 5, 0));
	assert_false(llmt_fault_at(&f, LLMT_FAULT_NAN, 4, 1));
	assert_true(llmt_fault_at(&f, LLMT_FAULT_BITFLIP, 3, 0));   /* no rank: every rank */
	assert_true(llmt_fault_at(&f, LLMT_FAULT_BITFLIP, 3, 7));
	/* only the first attempt, unless the kind ends in ! */
	assert_int_equal(llmt_faults_parse(&f, "crash@2,exit75!@4:0", 1, NULL, err, sizeof(err)), 0);
	assert_int_equal(f.n, 1);
	assert_false(llmt_fault_at(&f, LLMT_FAULT_CRASH, 2, 0));
	assert_true(llmt_fault_at(&f, LLMT_FAULT_EXIT75, 4, 0));
	assert_int_equal(llmt_faults_parse(&f, "spike@1,hang@9", 0, NULL, err, sizeof(err)), 0);
	assert_true(llmt_fault_at(&f, LLMT_FAULT_SPIKE, 1, 3));
	assert_true(llmt_fault_at(&f, LLMT_FAULT_HANG, 9, 3));
	assert_int_equal(llmt_faults_parse(&f, "melt@3", 0, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "melt"));
	assert_int_equal(llmt_faults_parse(&f, "nan", 0, NULL, err, sizeof(err)), -1);
	assert_int_equal(llmt_faults_parse(&f, "nan@x", 0, NULL, err, sizeof(err)), -1);
	assert_int_equal(llmt_faults_parse(&f, "nan@3:", 0, NULL, err, sizeof(err)), -1);
	/* /node: only in ranks on that node, with ! on every attempt there */
	assert_int_equal(llmt_faults_parse(&f, "stall!@7/n2,crash@3:1/n1,nan@2", 1, "n2", err, sizeof(err)), 0);
	assert_int_equal(f.n, 1);
	assert_true(llmt_fault_at(&f, LLMT_FAULT_STALL, 7, 0));
	assert_true(llmt_fault_at(&f, LLMT_FAULT_STALL, 7, 5));
	assert_int_equal(llmt_faults_parse(&f, "stall!@7/n2,crash@3:1/n1", 0, "n1", err, sizeof(err)), 0);
	assert_int_equal(f.n, 1);
	assert_true(llmt_fault_at(&f, LLMT_FAULT_CRASH, 3, 1));
	assert_false(llmt_fault_at(&f, LLMT_FAULT_STALL, 7, 1));
	assert_int_equal(llmt_faults_parse(&f, "stall!@7/n2", 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(llmt_faults_parse(&f, "stall!@7/n20", 0, "n2", err, sizeof(err)), 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(llmt_faults_parse(&f, "stall@7/", 0, "n2", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bad node"));
	assert_int_equal(llmt_faults_parse(&f, "melt@7/n2", 0, "n2", err, sizeof(err)), -1);
}

/* the bad-node kinds (wrongmath, slow, slowlink): active from their step
 * on, or at any step when asked with step < 0 (the self-test) */
static void test_faults_node(void **st)
{
	llmt_faults f;
	char err[256];
	struct timespec a, b;
	double slept, wall;

	(void)st;
	assert_int_equal(llmt_faults_parse(&f, "slow@5:1,wrongmath!@3/n2,slowlink@9", 1, "n2", err, sizeof(err)), 0);
	assert_int_equal(f.n, 1);                                    /* slow and slowlink: first attempt only */
	assert_true(llmt_fault_from(&f, LLMT_FAULT_WRONGMATH, 3, 0));
	assert_true(llmt_fault_from(&f, LLMT_FAULT_WRONGMATH, 30, 4));
	assert_false(llmt_fault_from(&f, LLMT_FAULT_WRONGMATH, 2, 0));
	assert_true(llmt_fault_from(&f, LLMT_FAULT_WRONGMATH, -1, 0));
	assert_false(llmt_fault_from(&f, LLMT_FAULT_SLOW, -1, 1));
	assert_int_equal(llmt_faults_parse(&f, "slow@5:1,slowlink@9", 0, NULL, err, sizeof(err)), 0);
	assert_false(llmt_fault_from(&f, LLMT_FAULT_SLOW, 4, 1));
	assert_true(llmt_fault_from(&f, LLMT_FAULT_SLOW, 5, 1));
	assert_true(llmt_fault_from(&f, LLMT_FAULT_SLOW, 6, 1));
	assert_false(llmt_fault_from(&f, LLMT_FAULT_SLOW, 6, 0));
	assert_false(llmt_fault_at(&f, LLMT_FAULT_SLOW, 6, 1));      /* at: that step only */
	assert_true(llmt_fault_from(&f, LLMT_FAULT_SLOWLINK, -1, 3));
	/* the factor and the delay: defaults, values, bad values named */
	assert_true(f.slow_factor == 3 && f.delay_ms == 20);
	assert_int_equal(llmt_faults_params(&f, "2.5", "", err, sizeof(err)), 0);
	assert_true(f.slow_factor == 2.5 && f.delay_ms == 20);
	assert_int_equal(llmt_faults_params(&f, NULL, "5", err, sizeof(err)), 0);
	assert_true(f.slow_factor == 2.5 && f.delay_ms == 5);
	assert_int_equal(llmt_faults_params(&f, "0.5", NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "LLM_TRAIN_FAULT_SLOW=0.5"));
	assert_int_equal(llmt_faults_params(&f, NULL, "x", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "LLM_TRAIN_FAULT_DELAY_MS=x"));
	/* slow sleeps (factor - 1) x the compute time, only when active */
	assert_true(llmt_faults_slow_sleep(&f, 4, 1, 0.04) == 0);
	assert_true(llmt_faults_slow_sleep(&f, 5, 0, 0.04) == 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	slept = llmt_faults_slow_sleep(&f, 5, 1, 0.04);
	clock_gettime(CLOCK_MONOTONIC, &b);
	wall = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
	assert_true(fabs(slept - 0.06) < 1e-12);
	assert_true(wall >= 0.06);
	assert_int_equal(llmt_faults_parse(&f, "slowlink@x", 0, NULL, err, sizeof(err)), -1);
}

static void test_sdc(void **st)
{
	int sus[8];
	const uint64_t same[3] = { 5, 5, 5 }, two[2] = { 5, 6 }, maj[4] = { 5, 5, 9, 5 },
		       split[4] = { 1, 1, 2, 2 };
	(void)st;

	assert_int_equal(llmt_sdc_suspects(same, 3, sus), 0);
	assert_int_equal(llmt_sdc_suspects(two, 2, sus), 2);        /* dp=2: both */
	assert_int_equal(sus[0], 0);
	assert_int_equal(sus[1], 1);
	assert_int_equal(llmt_sdc_suspects(maj, 4, sus), 1);        /* majority names one */
	assert_int_equal(sus[0], 2);
	assert_int_equal(llmt_sdc_suspects(split, 4, sus), 4);      /* no majority: all */
}

static void test_checksum(void **st)
{
	float x[257];
	uint64_t h;
	(void)st;

	for (int i = 0; i < 257; i++)
		x[i] = (float)i * 0.37f;
	h = llmt_checksum_f32(x, 257);
	assert_true(h == llmt_checksum_f32(x, 257));
	for (int i = 0; i < 257; i += 16)
		for (int b = 0; b < 32; b += 5) {
			uint32_t w;
			memcpy(&w, &x[i], 4);
			w ^= 1u << b;
			memcpy(&x[i], &w, 4);
			assert_true(llmt_checksum_f32(x, 257) != h);
			w ^= 1u << b;
			memcpy(&x[i], &w, 4);
		}
	assert_true(llmt_checksum_f32(x, 256) != h);
}

static void test_metrics_line(void **st)
{
	llmt_metrics m = { 12, 3.25, NAN, 1e-4, 1234.5, 0.42, 0.5, 0.01, 0.002, 1 };
	char buf[1024];
	json_error_t je;
	json_t *o;
	(void)st;

	assert_true(llmt_metrics_format(buf, sizeof(buf), &m) > 0);
	assert_int_equal(buf[strlen(buf) - 1], '\n');
	assert_non_null(strstr(buf, "{\"step\":12,\"loss\":3.25,\"grad_norm\":null,"));
	o = json_loads(buf, 0, &je);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "step")), 12);
	assert_true(json_is_true(json_object_get(o, "skipped")));
	assert_float_equal(json_real_value(json_object_get(o, "tokens_per_s")), 1234.5, 1e-9);
	assert_true(json_is_null(json_object_get(o, "grad_norm")));
	for (const char *const *k = (const char *const[]){ "lr", "mfu", "step_time_s", "comm_time_s", "ckpt_time_s", NULL }; *k; k++)
		assert_non_null(json_object_get(o, *k));
	json_decref(o);
}

static void test_heartbeat(void **st)
{
	char buf[160], dir[] = "/tmp/llmt-hb.XXXXXX", path[256], line[160];
	long step;
	long long ns;
	char phase[16];
	double last;
	FILE *f;
	(void)st;

	llmt_hb_format(buf, sizeof(buf), 7, 1700000000123456789LL, LLMT_HB_SAVE, 1.5);
	assert_string_equal(buf, "7 1700000000123456789 save 1.500000\n");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(llmt_hb_start(dir, 3, 0.05), 0);
	llmt_hb_set(42, LLMT_HB_TRAIN, 0.25);
	snprintf(path, sizeof(path), "%s/rank_00003", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_int_equal(sscanf(line, "%ld %lld %15s %lf", &step, &ns, phase, &last), 4);
	assert_int_equal(step, 42);
	assert_string_equal(phase, "train");
	assert_true(ns > 1600000000000000000LL);
	llmt_hb_stop(LLMT_HB_DONE);
	f = fopen(path, "r");
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_non_null(strstr(line, " done "));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guard),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_faults_node),
		cmocka_unit_test(test_sdc),
		cmocka_unit_test(test_checksum),
		cmocka_unit_test(test_metrics_line),
		cmocka_unit_test(test_heartbeat),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
