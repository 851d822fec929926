/* test_hbnode.c: the node heartbeat channel's pure logic: slots written
 * and read back through the node file's text by the wrapper's parser, a
 * slot whose writer stopped mid-write left out (its last record kept), a
 * rank that stopped writing found by the wrapper's hang check with its
 * node while the node's other ranks flush, the flush claim, and two
 * ranks of one node sharing one segment and one file (hbchannel.c). */
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
#include "resilience/hbchannel.h"
#include "resilience/hbnode.h"
#include "resilience/heartbeat.h"
#include "wrapper/hbfile.h"
#include "wrapper/hbread.h"

#define S 1000000000LL

static struct llmt_hbn_seg *seg(void)
{
	struct llmt_hbn_seg *g = calloc(1, sizeof(*g));

	assert_non_null(g);
	g->magic = LLMT_HBN_MAGIC;
	return g;
}

static void put(struct llmt_hbn_seg *g, int slot, int rank, long step, long long t, const char *host,
	const char *timing)
{
	char text[LLMT_HBN_TEXT];
	int n = llmt_hb_format_host(text, sizeof(text), step, t, LLMT_HB_TRAIN, 0.5, host);

	snprintf(text + n, sizeof(text) - (size_t)n, "%s", timing ? timing : "");
	llmt_hbn_slot_write(g, slot, rank, t, text);
}

static char *compose(struct llmt_hbn_seg *g, long long now)
{
	static char buf[LLMT_HBN_SLOTS * (LLMT_HBN_TEXT + 16) + 128];

	assert_true(llmt_hbn_compose(g, "gpu3", now, buf, sizeof(buf)) > 0);
	return buf;
}

static void test_compose(void **st)
{
	struct llmt_hbn_seg *g = seg();
	struct wr_hb out[16];
	(void)st;

	put(g, 0, 8, 41, 1700000000LL * S, "gpu3", NULL);
	put(g, 1, 9, 42, 1700000001LL * S, "gpu3",
		"timing 2 1700000000000000000 1 0.5 0.1 0 0 0 0.2 0 0.5 0.2 0.05 0 0 0 0.1 0\n");
	put(g, 3, 11, 40, 1700000002LL * S, "gpu3", NULL);
	put(g, 0, 8, 43, 1700000003LL * S, "gpu3", NULL);   /* rewritten: the newest counts */
	char *t = compose(g, 1700000004LL * S);
	assert_true(strncmp(t, "node gpu3 1700000004000000000\nr8 43 ", 36) == 0);
	memset(out, 0, sizeof(out));
	assert_int_equal(wr_hb_node_text(t, out, 16), 3);
	assert_true(out[8].valid && out[8].step == 43 && out[8].phase == PH_TRAIN);
	assert_string_equal(out[8].host, "gpu3");
	assert_false(out[8].t.valid);
	assert_true(out[9].valid && out[9].step == 42 && out[9].t.valid && out[9].t.steps == 2);
	assert_true(out[9].t.total[WR_T_TP] == 0.1);
	assert_true(out[11].valid && out[11].time == 1700000002.0);
	assert_false(out[10].valid);
	/* ranks past n are left out; other text is not a node file */
	memset(out, 0, sizeof(out));
	assert_int_equal(wr_hb_node_text(compose(g, 1), out, 10), 2);
	assert_int_equal(wr_hb_node_text(strcpy(compose(g, 1), "12 1 train 0.5\n"), out, 16), -1);
	free(g);
}

/* a writer stopped inside llmt_hbn_slot_write (odd sequence) */
static void test_torn(void **st)
{
	struct llmt_hbn_seg *g = seg();
	struct wr_hb out[4];
	(void)st;

	put(g, 0, 0, 5, 10 * S, "n1", NULL);
	put(g, 1, 1, 5, 10 * S, "n1", NULL);
	memset(out, 0, sizeof(out));
	assert_int_equal(wr_hb_node_text(compose(g, 11 * S), out, 4), 2);
	atomic_fetch_add(&g->slot[1].seq, 1);   /* rank 1 stopped mid-write */
	put(g, 0, 0, 6, 12 * S, "n1", NULL);
	assert_int_equal(wr_hb_node_text(compose(g, 13 * S), out, 4), 1);
	assert_true(out[0].step == 6 && out[1].valid && out[1].step == 5);   /* its last record stays */
	/* the next step's writer of that slot repairs it */
	put(g, 1, 1, 7, 14 * S, "n1", NULL);
	assert_int_equal(wr_hb_node_text(compose(g, 15 * S), out, 4), 2);
	assert_true(out[1].step == 7);
	/* an older record never replaces a newer one */
	out[1].time = 99;
	assert_int_equal(wr_hb_node_text(compose(g, 15 * S), out, 4), 1);
	assert_true(out[1].time == 99);
	free(g);
}

/* rank 2 stops (SIGSTOP); rank 3 on its node goes on and flushes: the
 * file carries rank 2's last time, and the wrapper names it and its node */
static void test_stopped(void **st)
{
	struct llmt_hbn_seg *ga = seg(), *gb = seg();
	struct wr_hb out[4];
	double stale = 0;
	(void)st;

	memset(out, 0, sizeof(out));
	put(ga, 0, 0, 9, 100 * S, "nodeA", NULL);
	put(ga, 1, 1, 9, 100 * S, "nodeA", NULL);
	put(gb, 0, 2, 9, 100 * S, "nodeB", NULL);
	put(gb, 1, 3, 9, 100 * S, "nodeB", NULL);
	for (long s = 10; s < 30; s++) {
		put(ga, 0, 0, s, (90 + s) * S, "nodeA", NULL);
		put(ga, 1, 1, s, (90 + s) * S, "nodeA", NULL);
		put(gb, 1, 3, s, (90 + s) * S, "nodeB", NULL);
		assert_int_equal(wr_hb_node_text(compose(ga, (90 + s) * S), out, 4), 2);
		assert_int_equal(wr_hb_node_text(compose(gb, (90 + s) * S), out, 4), 2);
	}
	assert_true(out[2].valid && out[2].step == 9 && out[3].step == 29);
	assert_int_equal(wr_hang_find(out, 4, 120, 100, 10, 30, 60, &stale), 2);
	assert_string_equal(out[2].host, "nodeB");
	assert_true(stale == 20);
	free(ga);
	free(gb);
}

static void test_claim(void **st)
{
	struct llmt_hbn_seg *g = seg();
	uint64_t gen = 0;
	(void)st;

	assert_int_equal(llmt_hbn_claim(g, 100 * S, 0.5, 20, 0, &gen), 1);   /* never flushed */
	llmt_hbn_flushed(g, gen);
	assert_int_equal(llmt_hbn_claim(g, 100 * S + S / 10, 0.5, 20, 0, &gen), 0);   /* nothing new */
	put(g, 0, 0, 1, 100 * S, "n", NULL);
	assert_int_equal(llmt_hbn_claim(g, 100 * S + S / 4, 0.5, 20, 0, &gen), 0);   /* too soon */
	assert_int_equal(llmt_hbn_claim(g, 100 * S + 6 * S / 10, 0.5, 20, 0, &gen), 1);
	assert_true(gen == 1);
	assert_int_equal(llmt_hbn_claim(g, 100 * S + 6 * S / 10, 0.5, 20, 0, &gen), 0);   /* claimed */
	put(g, 0, 0, 2, 101 * S, "n", NULL);
	llmt_hbn_flushed(g, 1);
	assert_int_equal(llmt_hbn_claim(g, 102 * S, 0.5, 20, 0, &gen), 1);   /* gen 2 not flushed */
	assert_true(gen == 2);
	llmt_hbn_flushed(g, gen);
	llmt_hbn_flushed(g, 1);   /* a slower flusher's older gen does not go back */
	assert_true(atomic_load(&g->flushed) == 2);
	assert_int_equal(llmt_hbn_claim(g, 110 * S, 0.5, 20, 0, &gen), 0);
	assert_int_equal(llmt_hbn_claim(g, 123 * S, 0.5, 20, 0, &gen), 1);   /* refresh */
	assert_int_equal(llmt_hbn_claim(g, 123 * S, 0.5, 20, 1, &gen), 1);   /* forced */
	assert_int_equal(llmt_hbn_local_slot("3"), 3);
	assert_int_equal(llmt_hbn_local_slot("x3"), -1);
	assert_int_equal(llmt_hbn_local_slot("-1"), -1);
	assert_int_equal(llmt_hbn_local_slot("512"), -1);
	assert_int_equal(llmt_hbn_local_slot(NULL), -1);
	free(g);
}

/* two ranks of one node through hbchannel: one segment, one file, no
 * rank files; the last to leave flushes and removes the segment */
static void test_channel(void **st)
{
	char dir[] = "/tmp/llmt-hbn.XXXXXX", err[256], path[300], shm[300];
	struct llmt_hbc a, b;
	struct wr_hb out[8];
	struct wr_hbread_ops ops = { 0, 0 };
	(void)st;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(llmt_hbc_open(&a, dir, "gpu9", "77.0", 0, 4, err, sizeof(err)), 0);
	assert_int_equal(llmt_hbc_open(&b, dir, "gpu9", "77.0", 1, 5, err, sizeof(err)), 0);
	assert_true(a.created && !b.created);
	llmt_hbc_write(&a, 50 * S, "3 50000000000 train 0.100000 gpu9\n");
	llmt_hbc_write(&b, 51 * S, "4 51000000000 train 0.100000 gpu9\n");
	assert_int_equal(llmt_hbc_flush(&b, 52 * S, 0.5, 20, 0), 1);
	assert_int_equal(llmt_hbc_flush(&a, 52 * S, 0.5, 20, 0), 0);   /* b just did */
	assert_int_equal(wr_hb_read_dir(dir, out, 8, &ops), 0);
	assert_true(out[4].valid && out[4].step == 3 && out[5].valid && out[5].step == 4);
	assert_true(ops.lists == 1 && ops.opens == 1);
	llmt_hbc_write(&a, 53 * S, "5 53000000000 done 0.100000 gpu9\n");
	snprintf(shm, sizeof(shm), "/dev/shm%s", a.shm);
	llmt_hbc_close(&a, 53 * S);
	assert_int_equal(access(shm, F_OK), 0);
	llmt_hbc_close(&b, 53 * S + 1);   /* the last one: flushes a's done */
	assert_int_equal(access(shm, F_OK), -1);
	assert_int_equal(wr_hb_read_dir(dir, out, 8, NULL), 0);
	assert_true(out[4].phase == PH_DONE && out[4].step == 5);
	snprintf(path, sizeof(path), "%s/node_gpu9", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);   /* nothing else was left */
	assert_int_equal(llmt_hbc_wanted(NULL, err, sizeof(err)), 1);
	assert_int_equal(llmt_hbc_wanted("rank", err, sizeof(err)), 0);
	assert_int_equal(llmt_hbc_wanted("nodes", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'nodes'"));
}

/* a segment of this job's name that another user made, or opened to
 * others, is refused: whoever can write it could forge the heartbeats
 * (it was opened whatever its owner and mode); -2 says which refusal
 * (heartbeat.c then writes the rank file) */
static void test_foreign_segment(void **st)
{
	char dir[] = "/tmp/llmt-hbn.XXXXXX", err[256], shm[300], path[300];
	struct llmt_hbc a, b;
	(void)st;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(llmt_hbc_open(&a, dir, "gpu8", "78.0", 0, 0, err, sizeof(err)), 0);
	snprintf(shm, sizeof(shm), "/dev/shm%s", a.shm);
	assert_int_equal(chmod(shm, 0666), 0);
	assert_int_equal(llmt_hbc_open(&b, dir, "gpu8", "78.0", 1, 1, err, sizeof(err)), -2);
	assert_non_null(strstr(err, "refused"));
	assert_int_equal(chmod(shm, 0600), 0);
	if (geteuid() == 0) {   /* root: another owner */
		assert_int_equal(chown(shm, 65534, 65534), 0);
		assert_int_equal(llmt_hbc_open(&b, dir, "gpu8", "78.0", 1, 1, err, sizeof(err)), -2);
		assert_non_null(strstr(err, "uid 65534"));
		assert_int_equal(chown(shm, 0, 0), 0);
	}
	assert_int_equal(llmt_hbc_open(&b, dir, "gpu8", "78.0", 1, 1, err, sizeof(err)), 0);
	llmt_hbc_close(&b, 1 * S);
	llmt_hbc_close(&a, 2 * S);
	snprintf(path, sizeof(path), "%s/node_gpu8", dir);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compose),
		cmocka_unit_test(test_torn),
		cmocka_unit_test(test_stopped),
		cmocka_unit_test(test_claim),
		cmocka_unit_test(test_channel),
		cmocka_unit_test(test_foreign_segment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
