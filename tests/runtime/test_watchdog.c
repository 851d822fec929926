/* test_watchdog.c: the communication watchdog: its deadline logic on
 * sample sequences (pure), LLM_TRAIN_COMM_TIMEOUT parsing, the sampling
 * period and the message; then the thread itself in a child process: a
 * call stuck while armed ends the child with 75 and the line, the same
 * call while disarmed does not. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "llmt/exitcodes.h"
#include "resilience/watchdog.h"

static void test_observe(void **st)
{
	llmt_wd_obs o = { 0, 0 };
	(void)st;

	/* a call in flight (odd seq) is timed from its first sighting */
	assert_true(llmt_wd_observe(&o, 7, 100.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 7, 104.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 7, 105.0, 5) == 0);   /* exactly the deadline: not yet */
	assert_true(llmt_wd_observe(&o, 7, 105.5, 5) == 5.5);
	/* a new call restarts the clock; an idle sample (even) forgets */
	o = (llmt_wd_obs){ 0, 0 };
	assert_true(llmt_wd_observe(&o, 7, 100.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 9, 104.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 9, 108.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 9, 109.5, 5) == 5.5);
	o = (llmt_wd_obs){ 0, 0 };
	assert_true(llmt_wd_observe(&o, 7, 100.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 8, 103.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 9, 106.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 9, 110.0, 5) == 0);
	/* disarmed: never, and the wait before arming does not count */
	o = (llmt_wd_obs){ 0, 0 };
	assert_true(llmt_wd_observe(&o, 11, 100.0, 0) == 0);
	assert_true(llmt_wd_observe(&o, 11, 1000.0, 0) == 0);
	assert_true(llmt_wd_observe(&o, 11, 1001.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 11, 1005.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 11, 1006.5, 5) == 5.5);
	/* disarmed in the middle of a wait (a checkpoint): timed afresh */
	o = (llmt_wd_obs){ 0, 0 };
	assert_true(llmt_wd_observe(&o, 13, 100.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 13, 104.0, 0) == 0);
	assert_true(llmt_wd_observe(&o, 13, 106.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 13, 110.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 13, 111.5, 5) == 5.5);
	/* limit 0: off */
	o = (llmt_wd_obs){ 0, 0 };
	assert_true(llmt_wd_observe(&o, 15, 0.0, 0) == 0);
	assert_true(llmt_wd_observe(&o, 15, 1e9, 0) == 0);
	/* the limit in force at the sample decides: stretched for a save */
	o = (llmt_wd_obs){ 0, 0 };
	assert_true(llmt_wd_observe(&o, 17, 100.0, 5) == 0);
	assert_true(llmt_wd_observe(&o, 17, 110.0, 2100) == 0);
	assert_true(llmt_wd_observe(&o, 17, 2200.5, 2100) == 2100.5);
}

static void test_timeout_from(void **st)
{
	char err[160] = "";
	(void)st;

	assert_true(llmt_wd_timeout_from(NULL, 300, err, sizeof(err)) == 300);
	assert_true(llmt_wd_timeout_from("", 300, err, sizeof(err)) == 300);
	assert_true(llmt_wd_timeout_from("5", 300, err, sizeof(err)) == 5);
	assert_true(llmt_wd_timeout_from("0", 300, err, sizeof(err)) == 0);
	assert_true(llmt_wd_timeout_from("2.5", 300, err, sizeof(err)) == 2.5);
	assert_string_equal(err, "");
	static const char *bad[] = { "-1", "abc", "5s", "inf", "nan", "1e99", " ", "0x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[64];
		err[0] = 0;
		assert_true(llmt_wd_timeout_from(bad[i], 300, err, sizeof(err)) < 0);
		snprintf(want, sizeof(want), "LLM_TRAIN_COMM_TIMEOUT='%s'", bad[i]);
		assert_non_null(strstr(err, want));
	}
}

static void test_period(void **st)
{
	(void)st;
	assert_true(llmt_wd_period(300) == 1);
	assert_true(llmt_wd_period(5) == 0.5);
	assert_true(llmt_wd_period(0.1) == 0.05);
}

static void test_describe(void **st)
{
	char buf[512];
	llmt_wd_call coll = { "MPI_Alltoallv", "dp", 4, -1, 4096 };
	llmt_wd_call recv = { "MPI_Recv", "pp", 2, 1, 8192 };
	llmt_wd_call send = { "MPI_Send", "pp", 2, 0, 16 };
	(void)st;

	llmt_wd_describe(buf, sizeof(buf), 3, &coll, 5.5, 5, 5);
	assert_string_equal(buf, "llm-train: rank 3: communication watchdog: MPI_Alltoallv in group dp (4 ranks) "
		"waited 5.5 s, more than LLM_TRAIN_COMM_TIMEOUT=5 s: a peer is lost or stuck; exiting 75 (transient)\n");
	llmt_wd_describe(buf, sizeof(buf), 0, &recv, 301, 300, 300);
	assert_non_null(strstr(buf, "rank 0: communication watchdog: MPI_Recv of 8192 bytes from rank 1 of group pp (2 ranks) waited 301.0 s"));
	llmt_wd_describe(buf, sizeof(buf), 0, &send, 301, 300, 300);
	assert_non_null(strstr(buf, "MPI_Send of 16 bytes to rank 0 of group pp"));
	/* in a checkpoint save the deadline is stretched: the line says so */
	llmt_wd_describe(buf, sizeof(buf), 1, &coll, 2101, 2100, 300);
	assert_non_null(strstr(buf, "waited 2101.0 s, more than the checkpoint deadline of 2100 s "
		"(LLM_TRAIN_COMM_TIMEOUT=300 s + LLM_TRAIN_CKPT_TIMEOUT): a peer is lost or stuck"));
}

/* In a child: start the watchdog (0.2 s), arm it or not, stay inside one
 * bracketed "call" for `stuck_s`, leave, stop. Returns the child's wait
 * status; its stderr goes to out. */
static int child(int armed, double stuck_s, char *out, size_t outlen)
{
	int fd[2];
	pid_t pid;
	int status = 0;
	ssize_t n;
	size_t got = 0;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct timespec ts = { (time_t)stuck_s, (long)((stuck_s - (double)(time_t)stuck_s) * 1e9) };
		dup2(fd[1], 2);
		close(fd[0]);
		if (llmt_wd_start(0.2, 5))
			_exit(2);
		assert_true(llmt_wd_arm(armed ? 0.2 : 0) == 0);
		llmt_wd_enter("MPI_Recv", "pp", 2, 1, 4096);
		while (nanosleep(&ts, &ts))
			;
		llmt_wd_leave();
		assert_true(llmt_wd_arm(0) == (armed ? 0.2 : 0));
		llmt_wd_stop();
		_exit(0);
	}
	close(fd[1]);
	while (got + 1 < outlen && (n = read(fd[0], out + got, outlen - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = 0;
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_thread(void **st)
{
	char out[1024];
	int s;
	(void)st;

	/* stuck for up to 60 s while armed: ended by the watchdog long before */
	s = child(1, 60, out, sizeof(out));
	assert_true(WIFEXITED(s));
	assert_int_equal(WEXITSTATUS(s), LLMT_EXIT_TRANSIENT);
	assert_non_null(strstr(out, "llm-train: rank 5: communication watchdog: MPI_Recv of 4096 bytes from rank 1 of group pp (2 ranks) waited "));
	/* the same wait (5 deadlines) disarmed: nothing fires */
	s = child(0, 1.0, out, sizeof(out));
	assert_true(WIFEXITED(s));
	assert_int_equal(WEXITSTATUS(s), 0);
	assert_string_equal(out, "");
	/* off: no thread, nothing to stop */
	assert_int_equal(llmt_wd_start(0, 0), 0);
	assert_true(llmt_wd_timeout() == 0);
	llmt_wd_stop();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_observe),
		cmocka_unit_test(test_timeout_from),
		cmocka_unit_test(test_period),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
