/* test_heartbeat.c: the heartbeat's host field: the line with and without
 * it, the node name taken from SLURMD_NODENAME or the host name and made
 * safe for the wrapper's reader, and the file llm-train writes, read back
 * by the wrapper's own parser (wr_hb_parse), which must see the node.
 * Then the refresh in phase train: only while the rank waits in one
 * communication call under an armed watchdog deadline. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "resilience/heartbeat.h"
#include "resilience/watchdog.h"
#include "wrapper/hang.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_refresh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
