#define _GNU_SOURCE
/* test_cb_script.c: the plugin's job-script context (prolog, epilog) and
 * the submit-time space check against the fake spank_*: Xid drains and
 * spoofs, GPU count, symlinked logs, the self-test's private TMPDIR. */
#include "cb_harness.h"

/* ---- job script (prolog/epilog) ---------------------------------------- */

static char scontrol_log[600];

static void start_script(const char *klog, const char *devdir)
{
	char pol[600], kl[600], st[600], sc[600], dv[600];
	snprintf(pol, sizeof(pol), "policy=%s", policy_path);
	snprintf(kl, sizeof(kl), "kernel_log=%s", klog);
	snprintf(st, sizeof(st), "state_dir=%s/state", tmpdir);
	snprintf(sc, sizeof(sc), "scontrol=%s/scontrol", tmpdir);
	snprintf(dv, sizeof(dv), "dev_dir=%s", devdir);
	llmt_raw_reset();
	fake_reset(S_CTX_JOB_SCRIPT);
	char *av[] = { pol, kl, st, sc, dv };
	assert_int_equal(slurm_spank_init(FAKE_SP, 5, av), 0);
	/* keep the arguments for the callbacks */
	set_args(pol, kl, st, sc);
	free(av_buf[4]);
	av_buf[4] = strdup(dv);
	ac_n = 5;
	snprintf(scontrol_log, sizeof(scontrol_log), "%s/scontrol.log", tmpdir);
	unlink(scontrol_log);
	char sc_path[600], script[1400];
	snprintf(sc_path, sizeof(sc_path), "%s/scontrol", tmpdir);
	snprintf(script, sizeof(script), "#!/bin/sh\nprintf '%%s|' \"$@\" >> '%s'\necho >> '%s'\n",
		 scontrol_log, scontrol_log);
	write_file(sc_path, script, 0755);
}

static int read_text(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t k = fread(buf, 1, n - 1, f);
	buf[k] = '\0';
	fclose(f);
	return 0;
}

static void test_prolog_not_training_noop(void **state)
{
	(void)state;
	char klog[600];
	snprintf(klog, sizeof(klog), "%s/kmsg", tmpdir);
	write_file(klog, "6,1,100,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n", 0644);
	start_script(klog, "/dev");
	unsetenv("SPANK_LLM_TRAIN");
	setenv("SLURMD_NODENAME", "n1", 1);
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	assert_int_not_equal(access(scontrol_log, F_OK), 0);
}

/* A kmsg record of the kernel stamped us after now on the log's clock. */
static void kmsg_line(char *buf, size_t n, int prio, long long after_us, const char *msg)
{
	snprintf(buf, n, "%d,1,%lld,-;%s\n", prio, (long long)llmt_monotonic_us() + after_us, msg);
}

static void test_prolog_xid_drains(void **state)
{
	(void)state;
	char klog[600], buf[4096], l1[300], l2[300], l3[300], text[1000];
	snprintf(klog, sizeof(klog), "%s/kmsg.%%n", tmpdir);
	char klog_n1[600];
	snprintf(klog_n1, sizeof(klog_n1), "%s/kmsg.n1", tmpdir);
	write_file(klog_n1, "", 0644);
	start_script(klog, "/dev");
	setenv("SPANK_LLM_TRAIN", "1", 1);
	setenv("SLURMD_NODENAME", "n1", 1);
	setenv("SLURM_JOB_ID", "77", 1);
	/* a first check on a clean log sets the node's mark; the errors come
	 * after it (between two jobs) */
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	usleep(1000);
	kmsg_line(l1, sizeof(l1), 6, 0, "usb 1-1: new device");
	kmsg_line(l2, sizeof(l2), 4, 0, "NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception");
	kmsg_line(l3, sizeof(l3), 3, 0, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.");
	snprintf(text, sizeof(text), "%s%s%s", l1, l2, l3);
	write_file(klog_n1, text, 0644);
	usleep(1000);
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("Xid 79"));
	assert_int_equal(read_text(scontrol_log, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "update|NodeName=n1|State=DRAIN|Reason=llm_train: kernel log: Xid 79"));
	assert_non_null(strstr(buf, "update|JobId=1234|Comment=prolog: node n1 drained"));
	/* the mark moved past the error: an epilog after it is clean */
	unlink(scontrol_log);
	assert_int_equal(slurm_spank_job_epilog(FAKE_SP, AC, AV), 0);
	assert_int_not_equal(access(scontrol_log, F_OK), 0);
	/* an error during the job (newer than the mark): the epilog drains,
	 * without touching the completing job */
	FILE *f = fopen(klog_n1, "a");
	assert_non_null(f);
	fprintf(f, "3,9,%lld,-;NVRM: Xid (PCI:0000:3b:00): 48, DBE\n", (long long)llmt_monotonic_us() + 1000000);
	fclose(f);
	assert_int_equal(slurm_spank_job_epilog(FAKE_SP, AC, AV), -1);
	assert_int_equal(read_text(scontrol_log, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "update|NodeName=n1|State=DRAIN|Reason=llm_train: kernel log: Xid 48"));
	assert_null(strstr(buf, "JobId="));
	unsetenv("SPANK_LLM_TRAIN");
}

/* Issue 14 item 1 (fails on the old code, which drained on each of these
 * and scanned from the oldest record on): a node's kernel log (kmsg format,
 * kernel_log=) holding what an unprivileged user can put there (a task
 * named "NVRM: Xid" or "PCIe Bus Error" that segfaulted, a user-space
 * record) and a genuine Xid from before the job drains nothing. */
static void test_prolog_spoofs_do_not_drain(void **state)
{
	(void)state;
	char klog[600], l[4][300], text[1400];
	snprintf(klog, sizeof(klog), "%s/kmsg.spoof", tmpdir);
	kmsg_line(l[0], sizeof(l[0]), 6, 1000000,
		  "NVRM: Xid[31250]: segfault at 0 ip 0000000000401136 sp 00007ffc error 6 in a[401000+1000]");
	kmsg_line(l[1], sizeof(l[1]), 6, 1000000,
		  "PCIe Bus Error[31251]: segfault at 0 ip 0 sp 0 error 6 in severity=Uncorrected[401000+1000]");
	kmsg_line(l[2], sizeof(l[2]), 11, 1000000, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.");
	/* genuine, but long before the job (the ring buffer's start) */
	snprintf(l[3], sizeof(l[3]), "3,2,100,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, old.\n");
	snprintf(text, sizeof(text), "%s%s%s%s", l[3], l[0], l[1], l[2]);
	write_file(klog, text, 0644);
	start_script(klog, "/dev");
	setenv("SPANK_LLM_TRAIN", "1", 1);
	setenv("SLURMD_NODENAME", "n2", 1);
	if (slurm_spank_job_prolog(FAKE_SP, AC, AV) != 0) {
		fake_log_dump();
		fail_msg("a spoofed kernel log drained the node");
	}
	assert_int_not_equal(access(scontrol_log, F_OK), 0);
	assert_int_equal(slurm_spank_job_epilog(FAKE_SP, AC, AV), 0);
	unsetenv("SPANK_LLM_TRAIN");
}

static void test_prolog_gpu_count(void **state)
{
	(void)state;
	char dev[600], f[700], klog[600];
	snprintf(dev, sizeof(dev), "%s/dev", tmpdir);
	assert_int_equal(mkdir(dev, 0755), 0);
	const char *names[] = { "nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm" };
	for (int i = 0; i < 5; i++) {
		snprintf(f, sizeof(f), "%s/%s", dev, names[i]);
		write_file(f, "", 0644);
	}
	snprintf(klog, sizeof(klog), "%s/empty", tmpdir);
	write_file(klog, "", 0644);
	start_script(klog, dev);
	setenv("SPANK_LLM_TRAIN", "1", 1);
	/* CPU node type: no GPU check */
	setenv("SLURMD_NODENAME", "n2", 1);
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	/* gpu node type wants 4, 3 present */
	setenv("SLURMD_NODENAME", "g1", 1);
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("3 GPUs visible, node type gpu has 4"));
	snprintf(f, sizeof(f), "%s/nvidia3", dev);
	write_file(f, "", 0644);
	fake_log_clear();
	assert_int_equal(slurm_spank_job_epilog(FAKE_SP, AC, AV), 0);
	unsetenv("SPANK_LLM_TRAIN");
}

static void test_prolog_option_via_getopt(void **state)
{
	(void)state;
	char klog[600];
	snprintf(klog, sizeof(klog), "%s/kmsg2", tmpdir);
	char mce[300];
	kmsg_line(mce, sizeof(mce), 2, 1000000, "mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 4");
	write_file(klog, mce, 0644);
	start_script(klog, "/dev");
	unsetenv("SPANK_LLM_TRAIN");
	setenv("SLURMD_NODENAME", "n3", 1);
	fake_give_option("llm-train", "tp=1");
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), -1);
	assert_true(fake_log_has("machine check"));
}

static void test_prolog_refuses_symlinked_log(void **state)
{
	(void)state;
	char klog[600], target[600];
	snprintf(target, sizeof(target), "%s/real", tmpdir);
	write_file(target, "6,1,100,-;NVRM: Xid (PCI:0000:3b:00): 79, x\n", 0644);
	snprintf(klog, sizeof(klog), "%s/linked", tmpdir);
	assert_int_equal(symlink(target, klog), 0);
	start_script(klog, "/dev");
	setenv("SPANK_LLM_TRAIN", "1", 1);
	setenv("SLURMD_NODENAME", "n4", 1);
	/* not followed: check skipped with a message, node not drained */
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	assert_true(fake_log_has("kernel log check skipped"));
	assert_int_not_equal(access(scontrol_log, F_OK), 0);
	unsetenv("SPANK_LLM_TRAIN");
}

/* Issue 14 item 4 (fails on the old code, which drained every node that
 * started a training job while a shared root was low): low space on the
 * checkpoint root refuses the job at submit with one line, and the prolog
 * drains no node for it. */
static void test_low_space_refused_at_submit(void **state)
{
	(void)state;
	char klog[600];
	snprintf(klog, sizeof(klog), "%s/empty", tmpdir);
	write_file(klog, "", 0644);
	/* the admin's root (/tmp) cannot have a million GiB free; the user's
	 * own --llm-ckpt-dir is never looked at as root */
	write_file(policy_path, "limits:\n  ckpt_roots: [/tmp]\nhealth:\n"
		   "  ckpt_free_space: {min_gib: 1000000, timeout: 5}\n", 0644);
	start_script(klog, "/dev");
	setenv("SPANK_LLM_TRAIN", "1", 1);
	setenv("SLURMD_NODENAME", "n1", 1);
	fake_give_option("llm-ckpt-dir", "/tmp/user/run");
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	assert_int_not_equal(access(scontrol_log, F_OK), 0);
	unsetenv("SPANK_LLM_TRAIN");

	start(S_CTX_ALLOCATOR);
	fake_give_option("llm-ckpt-dir", "/tmp/user/run");
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), -1);
	if (!fake_log_has("llm_train: checkpoint root /tmp has ") ||
	    !fake_log_has("GiB free, the policy needs 1000000.0 GiB: job not submitted")) {
		fake_log_dump();
		fail_msg("no one-line refusal");
	}
	assert_int_equal(fake.nlog, 1);
	/* a root with room, and a job without a checkpoint dir: accepted */
	write_file(policy_path, "limits:\n  ckpt_roots: [/tmp]\nhealth:\n"
		   "  ckpt_free_space: {min_gib: 0.000001, timeout: 5}\n", 0644);
	start(S_CTX_ALLOCATOR);
	fake_give_option("llm-ckpt-dir", "/tmp/user/run");
	assert_int_equal(slurm_spank_init_post_opt(FAKE_SP, AC, AV), 0);
}

/* Before: the prolog's self-test (root, Open MPI singleton) got no TMPDIR,
 * so Open MPI kept its session directory in /tmp/ompi.<node>.0: a user who
 * made that directory first (0777, theirs) had root mkdir, create
 * (O_CREAT|O_TRUNC, links followed) and later delete files inside it,
 * where they can swap a symlink in. Now TMPDIR is a private directory
 * under the state dir (root-only, checked like the state dir). */
static void test_prolog_selftest_private_tmp(void **state)
{
	(void)state;
	char cmd[600], pol[1400], seen[600], got[600] = "", want[700];
	snprintf(cmd, sizeof(cmd), "%s/fake-llm-train", tmpdir);
	snprintf(seen, sizeof(seen), "%s/selftest-tmpdir", tmpdir);
	char script[1400];
	snprintf(script, sizeof(script), "#!/bin/sh\nprintf '%%s' \"$TMPDIR\" > '%s'\n"
		 "echo 'node n1: ok (answers ok)'\n", seen);
	write_file(cmd, script, 0755);
	snprintf(pol, sizeof(pol), "health:\n  selftest: {timeout: 10, command: %s}\n", cmd);
	write_file(policy_path, pol, 0644);
	start_script("/nonexistent-klog", "/dev");
	setenv("SPANK_LLM_TRAIN", "1", 1);
	setenv("SLURMD_NODENAME", "n1", 1);
	assert_int_equal(slurm_spank_job_prolog(FAKE_SP, AC, AV), 0);
	assert_int_equal(read_text(seen, got, sizeof(got)), 0);
	snprintf(want, sizeof(want), "%s/state/selftest", tmpdir);
	if (strcmp(got, want) != 0)
		fail_msg("the self-test's TMPDIR is '%s' (want %s): Open MPI falls back to /tmp", got, want);
	struct stat st;
	assert_int_equal(lstat(want, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_mode & 077, 0);
	unsetenv("SPANK_LLM_TRAIN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_prolog_not_training_noop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_xid_drains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_gpu_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_option_via_getopt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_refuses_symlinked_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_spoofs_do_not_drain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_low_space_refused_at_submit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prolog_selftest_private_tmp, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
