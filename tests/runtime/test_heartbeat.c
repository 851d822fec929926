/* test_heartbeat.c: the heartbeat's host field: the line with and without
 * it, the node name taken from SLURMD_NODENAME or the host name and made
 * safe for the wrapper's reader, and the file llm-train writes, read back
 * by the wrapper's own parser (wr_hb_parse), which must see the node.
 * Then the refresh in phase train: only while the rank waits in one
 * communication call under an armed watchdog deadline. And the timing
 * line (steptime.h): a rank's step parts and totals, in its heartbeat
 * file, read back by the wrapper (ranktimes.h) to the same numbers, and
 * folded over ranks into one attempt's step time and checkpoint stall.
 * Under a Slurm step: the node channel, one node file and no rank file,
 * read back by the wrapper's directory reader; LLM_TRAIN_HEARTBEAT_CHANNEL
 * rank keeps the rank file, a bad value is refused; a phase change
 * reaches the node file at once, an ordinary beat waits its turn. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glob.h>
#include <math.h>
#include "resilience/heartbeat.h"
#include "resilience/watchdog.h"
#include "train/steptime.h"
#include "wrapper/hang.h"
#include "wrapper/hbread.h"

static void test_format(void **st)
{
	char buf[256];
	(void)st;

	llmt_hb_format_host(buf, sizeof(buf), 7, 1700000000123456789LL, LLMT_HB_SAVE, 1.5, "node3");
	assert_string_equal(buf, "7 1700000000123456789 save 1.500000 node3\n");
	llmt_hb_format_host(buf, sizeof(buf), 7, 1700000000123456789LL, LLMT_HB_SAVE, 1.5, "");
	assert_string_equal(buf, "7 1700000000123456789 save 1.500000\n");
	llmt_hb_format_host(buf, sizeof(buf), 7, 1700000000123456789LL, LLMT_HB_SAVE, 1.5, NULL);
	assert_string_equal(buf, "7 1700000000123456789 save 1.500000\n");
}

static void test_host(void **st)
{
	char h[64], longname[200];
	(void)st;

	llmt_hb_host(h, sizeof(h), "node3", "login1");
	assert_string_equal(h, "node3");
	llmt_hb_host(h, sizeof(h), "", "login1.cluster");
	assert_string_equal(h, "login1.cluster");
	llmt_hb_host(h, sizeof(h), NULL, "login1");
	assert_string_equal(h, "login1");
	llmt_hb_host(h, sizeof(h), NULL, "");
	assert_string_equal(h, "unknown");
	/* a space or a newline would break the line the wrapper parses */
	llmt_hb_host(h, sizeof(h), "bad name\nx\ty", NULL);
	assert_string_equal(h, "bad_name_x_y");
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	llmt_hb_host(h, sizeof(h), longname, NULL);
	assert_int_equal(strlen(h), 63);
	llmt_hb_host(h, 5, "node3", NULL);
	assert_string_equal(h, "node");
}

/* the file, as written for a rank of a Slurm task, parsed by the wrapper */
static void test_file(void **st)
{
	char dir[] = "/tmp/llmt-hbh.XXXXXX", path[256], line[256];
	struct wr_hb hb;
	FILE *f;
	(void)st;

	assert_non_null(mkdtemp(dir));
	setenv("SLURMD_NODENAME", "gpu017", 1);
	assert_int_equal(llmt_hb_start(dir, 2, 0.05), 0);
	llmt_hb_set(42, LLMT_HB_TRAIN, 0.25);
	snprintf(path, sizeof(path), "%s/rank_00002", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_int_equal(wr_hb_parse(line, &hb), 0);
	assert_true(hb.valid);
	assert_int_equal(hb.step, 42);
	assert_int_equal(hb.phase, PH_TRAIN);
	assert_true(hb.last_step_s == 0.25);
	assert_string_equal(hb.host, "gpu017");
	llmt_hb_stop(LLMT_HB_DONE);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_int_equal(wr_hb_parse(line, &hb), 0);
	assert_int_equal(hb.phase, PH_DONE);
	assert_string_equal(hb.host, "gpu017");
	unlink(path);
	rmdir(dir);
	unsetenv("SLURMD_NODENAME");
}

static void test_timing(void **st)
{
	char dir[] = "/tmp/llmt-hbt.XXXXXX", path[256], line[256], tline[1024];
	llmt_steptimes t;
	llmt_st_parts a = { .step = 0.5, .wait = { 0.1, 0.05, 0.02, 0.01 }, .data = 0.02, .ckpt = 0 };
	llmt_st_parts b = { .step = 1.0, .wait = { 0.1, 0.1, 0.1, 0.1 }, .data = 0.1, .ckpt = 0.7 };
	llmt_st_parts c = { .step = 0.1, .wait = { 0.1, 0.1 } };   /* waits beyond the step: compute 0 */
	struct wr_hb hb;
	struct wr_rank_times two[2];
	struct wr_attempt_times at;
	FILE *f;
	(void)st;

	memset(&t, 0, sizeof(t));
	llmt_st_add(&t, a, 1700000000000000000LL);
	llmt_st_add(&t, b, 1700000000600000000LL);
	assert_int_equal(t.steps, 2);
	assert_true(fabs(t.last.compute - 0.0) < 1e-12);   /* 1.0 - 0.4 - 0.1 - 0.7 < 0 */
	assert_true(fabs(t.total.compute - 0.3) < 1e-12);
	assert_true(t.first_ns == 1700000000000000000LL);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(llmt_hb_start(dir, 1, 0.05), 0);
	assert_true(llmt_st_format(tline, sizeof(tline), &t) > 0);
	llmt_hb_set_timing(tline);
	llmt_hb_set(2, LLMT_HB_TRAIN, 1.0);
	snprintf(path, sizeof(path), "%s/rank_00001", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_non_null(fgets(tline, sizeof(tline), f));
	fclose(f);
	assert_int_equal(wr_hb_parse(line, &hb), 0);
	assert_int_equal(hb.step, 2);
	assert_int_equal(wr_rank_times_parse(tline, &hb.t), 0);
	assert_int_equal(hb.t.steps, 2);
	assert_true(fabs(hb.t.first - 1700000000.0) < 1e-3);
	assert_true(fabs(hb.t.total[WR_T_STEP] - 1.5) < 1e-6);
	assert_true(fabs(hb.t.total[WR_T_TP] - 0.2) < 1e-6);
	assert_true(fabs(hb.t.total[WR_T_PP] - 0.15) < 1e-6);
	assert_true(fabs(hb.t.total[WR_T_DP] - 0.12) < 1e-6);
	assert_true(fabs(hb.t.total[WR_T_ALL] - 0.11) < 1e-6);
	assert_true(fabs(hb.t.total[WR_T_DATA] - 0.12) < 1e-6);
	assert_true(fabs(hb.t.total[WR_T_CKPT] - 0.7) < 1e-6);
	assert_true(fabs(hb.t.last[WR_T_STEP] - 1.0) < 1e-6);
	llmt_hb_stop(LLMT_HB_DONE);
	unlink(path);
	rmdir(dir);
	/* a rank with only c: compute is clamped, never negative */
	memset(&t, 0, sizeof(t));
	llmt_st_add(&t, c, 1);
	assert_true(t.last.compute == 0);
	/* two ranks: step time without the stall, mean over ranks */
	two[0] = hb.t;
	two[1] = hb.t;
	two[1].total[WR_T_STEP] = 2.5;   /* (2.5 - 0.7) / 2 = 0.9 */
	two[1].first = 1699999999.0;
	wr_attempt_times(two, 2, (int)sizeof(two[0]), &at);
	assert_int_equal(at.ranks, 2);
	assert_true(fabs(at.step_s - (0.4 + 0.9) / 2) < 1e-6);
	assert_true(fabs(at.ckpt_s - 0.7) < 1e-6);
	assert_true(at.first_step == 1699999999.0);
	/* malformed lines are refused */
	assert_int_equal(wr_rank_times_parse("timing 2 5 1 2 3", &hb.t), -1);
	assert_false(hb.t.valid);
	assert_int_equal(wr_rank_times_parse("timing 1 5 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 -1", &hb.t), -1);
	assert_int_equal(wr_rank_times_parse("3 123 train 0.5", &hb.t), -1);
	two[0].valid = two[1].valid = false;
	wr_attempt_times(two, 2, (int)sizeof(two[0]), &at);
	assert_int_equal(at.ranks, 0);
}

/* the content time of the heartbeat file (ns) */
static long long beat(const char *path)
{
	char line[256];
	struct wr_hb hb;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_int_equal(wr_hb_parse(line, &hb), 0);
	return (long long)(hb.time * 1e9);
}

/* quiet for 1 s (20 refresh periods): the content time must not move */
static void assert_quiet(const char *path)
{
	long long t = beat(path);
	usleep(1000000);
	assert_true(beat(path) == t);
}

static void test_refresh(void **st)
{
	char dir[] = "/tmp/llmt-hbr.XXXXXX", path[256];
	long long t;
	int i;
	(void)st;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rank_00000", dir);
	assert_int_equal(llmt_wd_start(3600, 0), 0);
	assert_int_equal(llmt_hb_start(dir, 0, 0.05), 0);
	llmt_hb_set(5, LLMT_HB_TRAIN, 0.1);
	/* training, not in a call: only the loop writes */
	llmt_wd_arm(3600);
	assert_quiet(path);
	/* in a call, but disarmed (first step, a save): not vouched for */
	llmt_wd_arm(0);
	llmt_wd_enter("MPI_Allgather", "all", 4, -1, 8);
	assert_quiet(path);
	/* in a call under the deadline: refreshed (wait up to 30 s) */
	llmt_wd_arm(3600);
	t = beat(path);
	for (i = 0; i < 3000 && beat(path) == t; i++)
		usleep(10000);
	assert_true(beat(path) > t);
	/* the call ended: quiet again */
	llmt_wd_leave();
	usleep(200000);
	assert_quiet(path);
	llmt_wd_arm(0);
	llmt_hb_stop(LLMT_HB_DONE);
	llmt_wd_stop();
	unlink(path);
	rmdir(dir);
}

/* a task of step STEP of job JOB on NODE, local task LOCAL (the node
 * channel's key), and its end */
static void step_env(const char *node, const char *job, const char *step, const char *local)
{
	setenv("SLURMD_NODENAME", node, 1);
	setenv("SLURM_JOB_ID", job, 1);
	setenv("SLURM_STEP_ID", step, 1);
	setenv("SLURM_LOCALID", local, 1);
}

static void step_unenv(void)
{
	unsetenv("SLURM_JOB_ID");
	unsetenv("SLURM_STEP_ID");
	unsetenv("SLURM_LOCALID");
	unsetenv("SLURMD_NODENAME");
}

static void test_node_channel(void **st)
{
	char dir[] = "/tmp/llmt-hbc.XXXXXX", path[300];
	struct wr_hb out[8];
	glob_t g;
	(void)st;

	assert_non_null(mkdtemp(dir));
	step_env("gpu021", "4242", "3", "1");
	assert_int_equal(llmt_hb_start(dir, 6, 0.05), 0);
	llmt_hb_set_timing("timing 1 1700000000000000000 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n");
	llmt_hb_set(12, LLMT_HB_TRAIN, 0.5);
	llmt_hb_stop(LLMT_HB_DONE);
	snprintf(path, sizeof(path), "%s/rank_00006", dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(wr_hb_read_dir(dir, out, 8, NULL), 0);
	assert_true(out[6].valid && out[6].step == 12 && out[6].phase == PH_DONE && out[6].t.valid);
	assert_string_equal(out[6].host, "gpu021");
	assert_false(out[5].valid);
	snprintf(path, sizeof(path), "%s/node_gpu021", dir);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "/dev/shm/llmt-hb-%u-4242.3-gpu021-*", (unsigned)getuid());
	assert_int_equal(glob(path, 0, NULL, &g), GLOB_NOMATCH);   /* the segment is gone */
	/* rank: the rank file as before; a bad value: refused */
	setenv("LLM_TRAIN_HEARTBEAT_CHANNEL", "rank", 1);
	assert_int_equal(llmt_hb_start(dir, 6, 0.05), 0);
	llmt_hb_stop(LLMT_HB_DONE);
	snprintf(path, sizeof(path), "%s/rank_00006", dir);
	assert_int_equal(unlink(path), 0);
	setenv("LLM_TRAIN_HEARTBEAT_CHANNEL", "per-node", 1);
	assert_int_equal(llmt_hb_start(dir, 6, 0.05), -1);
	llmt_hb_stop(LLMT_HB_DONE);
	assert_int_equal(rmdir(dir), 0);
	unsetenv("LLM_TRAIN_HEARTBEAT_CHANNEL");
	step_unenv();
}

/* the node file as on disk now: rank 6's record (step, phase) */
static void assert_on_disk(const char *dir, long step, int phase)
{
	struct wr_hb out[8];

	memset(out, 0, sizeof(out));
	assert_int_equal(wr_hb_read_dir(dir, out, 8, NULL), 0);
	assert_true(out[6].valid);
	assert_int_equal(out[6].step, step);
	assert_int_equal(out[6].phase, phase);
}

/* node channel: a phase change is flushed at once, an ordinary beat waits
 * for the quarter period (10 s here; the test takes milliseconds), so a
 * rank frozen right after a phase change never shows its old phase */
static void test_node_phase_flush(void **st)
{
	char dir[] = "/tmp/llmt-hbp.XXXXXX", path[300];
	(void)st;

	assert_non_null(mkdtemp(dir));
	step_env("gpu022", "4243", "0", "0");
	assert_int_equal(llmt_hb_start(dir, 6, 40), 0);
	assert_on_disk(dir, 0, PH_INIT);
	llmt_hb_set(0, LLMT_HB_LOAD, 0);
	assert_on_disk(dir, 0, PH_LOAD);
	llmt_hb_set(1, LLMT_HB_TRAIN, 0.5);
	assert_on_disk(dir, 1, PH_TRAIN);
	llmt_hb_set(2, LLMT_HB_TRAIN, 0.5);   /* an ordinary beat: still rate-limited */
	assert_on_disk(dir, 1, PH_TRAIN);
	llmt_hb_set(2, LLMT_HB_SAVE, 0.5);
	assert_on_disk(dir, 2, PH_SAVE);
	llmt_hb_stop(LLMT_HB_DONE);
	assert_on_disk(dir, 2, PH_DONE);
	snprintf(path, sizeof(path), "%s/node_gpu022", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	step_unenv();
}

/* Before: another user of the node who made this step's segment first
 * (/dev/shm is shared, the name guessable: uid, job and step ids, node,
 * a hash of the heartbeat dir) had every rank of the node refuse it and
 * exit (LLMT_EXIT_IO): one user failed another's job, every retry too.
 * Now the rank warns and writes its rank file, which the wrapper reads. */
static void test_node_channel_foreign_segment(void **st)
{
	char dir[] = "/tmp/llmt-hbf.XXXXXX", shm[400], path[300];
	struct wr_hb out[8];
	unsigned h = 2166136261u;   /* hbchannel.c's tag of the directory */
	(void)st;

	assert_non_null(mkdtemp(dir));
	for (const char *p = dir; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(shm, sizeof(shm), "/dev/shm/llmt-hb-%u-4244.0-gpu023-%08x", (unsigned)getuid(), h);
	int fd = open(shm, O_CREAT | O_EXCL | O_RDWR, 0666);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0666), 0);   /* "another user's": open to all */
	close(fd);
	step_env("gpu023", "4244", "0", "0");
	assert_int_equal(llmt_hb_start(dir, 6, 0.05), 0);
	llmt_hb_set(3, LLMT_HB_TRAIN, 0.5);
	llmt_hb_stop(LLMT_HB_DONE);
	assert_int_equal(wr_hb_read_dir(dir, out, 8, NULL), 0);
	assert_true(out[6].valid && out[6].step == 3 && out[6].phase == PH_DONE);
	snprintf(path, sizeof(path), "%s/rank_00006", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(unlink(shm), 0);
	assert_int_equal(rmdir(dir), 0);
	step_unenv();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_timing),
		cmocka_unit_test(test_refresh),
		cmocka_unit_test(test_node_channel),
		cmocka_unit_test(test_node_phase_flush),
		cmocka_unit_test(test_node_channel_foreign_segment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
