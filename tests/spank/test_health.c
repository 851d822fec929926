/* test_health.c: the node-health parts of llm_train.so with plain inputs:
 * kmsg/dmesg record parsing, hardware error classification, time
 * filtering, sanitising, and the bounded I/O helpers on temp files. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "health.h"
#include "health_io.h"

static void test_split_kmsg_and_dmesg(void **state)
{
	(void)state;
	struct llmt_kline k;
	const char *a = "6,339,5140900,-;NVRM: hello\n";
	assert_int_equal(llmt_kline_split(a, strlen(a), &k), 0);
	assert_int_equal(k.ts_us, 5140900);
	assert_int_equal(k.msg_len, strlen("NVRM: hello"));
	assert_memory_equal(k.msg, "NVRM: hello", k.msg_len);

	assert_int_equal(k.facility, 0);
	const char *b = "[ 1234.5] mce: x";
	assert_int_equal(llmt_kline_split(b, strlen(b), &k), 0);
	assert_int_equal(k.ts_us, 1234500000);
	assert_memory_equal(k.msg, "mce: x", 6);
	assert_int_equal(k.facility, -1);
	const char *r = "<14>[ 2.0] hello";
	assert_int_equal(llmt_kline_split(r, strlen(r), &k), 0);
	assert_int_equal(k.ts_us, 2000000);
	assert_int_equal(k.facility, 1);
	assert_memory_equal(k.msg, "hello", 5);

	const char *c = " SUBSYSTEM=pci";
	assert_int_equal(llmt_kline_split(c, strlen(c), &k), -1);
	assert_int_equal(llmt_kline_split("\n", 1, &k), -1);

	const char *d = "no time here";
	assert_int_equal(llmt_kline_split(d, strlen(d), &k), 0);
	assert_int_equal(k.ts_us, -1);
	/* digits overflowing are not a time */
	const char *e = "[99999999999999999999999.1] x";
	assert_int_equal(llmt_kline_split(e, strlen(e), &k), 0);
	assert_int_equal(k.ts_us, -1);
}

static void test_classify(void **state)
{
	(void)state;
	int xid;
	const char *m = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_XID);
	assert_int_equal(xid, 79);
	m = "NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable double bit error";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_XID);
	assert_int_equal(xid, 48);
	m = "pcieport 0000:00:03.1: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_PCIE);
	m = "pcieport 0000:00:03.1: PCIe Bus Error: severity=Corrected, type=Physical Layer";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_NONE);
	m = "mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 4: b200000000070f0f";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_MCE);
	m = "nvidia 3b:00.0: AER: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Inaccessible";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_PCIE);
	m = "pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_PCIE);
	m = "mce: Uncorrected hardware memory error in user-access at 3b9c000";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_MCE);
	m = "{1}[Hardware Error]: event severity: fatal";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_GHES);
	m = "{1}[Hardware Error]: event severity: corrected";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_NONE);
	m = "EDAC MC0: 1 UE memory read error on CPU_SrcID#0";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_EDAC);
	/* amd64_edac's decoded errors carry an empty message */
	m = "EDAC MC0: 1 UE  on mc#0csrow#2channel#0 (csrow:2 channel:0 page:0x1a2b offset:0x0 grain:64)";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_EDAC);
	m = "EDAC MC0: 1 CE memory read error";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_NONE);
	m = "eth0: link up";
	assert_int_equal(llmt_hw_classify(m, strlen(m), &xid), LLMT_HW_NONE);
	assert_int_equal(xid, -1);
	assert_true(llmt_xid_is_application(13));
	assert_false(llmt_xid_is_application(79));
}

/* Issue 14 item 1 (fails on the old code, which counted any line holding
 * "NVRM: Xid" with the code unparsed as -1, and user-space records): what
 * an unprivileged user can put into the kernel log never counts. A task
 * named "NVRM: Xid" or "PCIe Bus Error" that segfaults makes the kernel
 * (facility 0) log "COMM[PID]: segfault at ...", the executable's name
 * later in the line; a user-space write to /dev/kmsg is facility 1. */
static void test_spoofs_never_count(void **state)
{
	(void)state;
	int xid;
	const char *spoof[] = {
		"NVRM: Xid[31250]: segfault at 0 ip 0000000000401136 sp 00007ffd error 6 in x[401000+1000]",
		"NVRM: Xid (PCI:[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd error 6",
		"NVRM: Xid (PCI: (4242) used greatest stack depth: 12345 bytes left",
		"PCIe Bus Error[777]: segfault at 0 ip 0 sp 0 error 6 in severity=Uncorrected[400000+1000]",
		"x 0000:3b:00.0:[77]: segfault at 0 in PCIe Bus Error: severity=Uncorrected[400000+1000]",
		"mce: [Hardwar[12]: segfault at 0 in Machine Check Exception[400000+1000]",
		"EDAC MC0: 1 UE[12]: segfault at 0",
		/* a 15-byte task name (the most a comm holds, trailing blank
		 * included) is the whole fixed part of the EDAC form: fails on
		 * the old code, which drained the node */
		"EDAC MC0: 1 UE [31337]: segfault at 0 ip 0000000000401136 sp 00007ffd error 6 in on (x[401000+1000]",
		"EDAC MC0: 1 UE  (4242) used greatest stack depth: 12345 bytes left",
		"EDAC MC0: 1 UE : Corrupted page table at address 7f0000001000",
		"EDAC MC0: 1 UE  invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0",
		"EDAC x[12]: segfault at 0 in Uncorrected[400000+1000]",
		"{1}[Hardware E[12]: segfault at 0 in event severity: fatal",
		"python[1]: segfault: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
		"NVRM: Xid (PCI:0000:3b:00): seventy-nine, GPU has fallen off the bus.",
		"NVRM: Xid (PCI:0000:3b:00): 79 GPU has fallen off the bus.",
		"NVRM: Xid: 79, no bus id",
	};
	for (unsigned i = 0; i < sizeof(spoof) / sizeof(spoof[0]); i++) {
		if (llmt_hw_classify(spoof[i], strlen(spoof[i]), &xid) != LLMT_HW_NONE)
			fail_msg("counted: %s", spoof[i]);
		assert_int_equal(xid, -1);
	}
	struct llmt_health_scan s;
	llmt_health_scan_init(&s, 0);
	const char *lines[] = {
		/* genuine text, but written by user space (facility 1) */
		"12,5,2000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
		"<11>[ 3.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
		/* plain dmesg text: whose it is is unknown */
		"[ 4.0] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal)",
		/* the kernel's own segfault record of a task named to look like one */
		"6,6,5000,-;NVRM: Xid[31250]: segfault at 0 ip 0000000000401136 sp 00007ffd error 6",
	};
	for (unsigned i = 0; i < 4; i++)
		llmt_health_scan_line(&s, lines[i], strlen(lines[i]));
	assert_int_equal(s.lines, 4);
	assert_int_equal(s.errors, 0);
	/* the genuine driver record from the kernel still counts (in a scan
	 * of /dev/kmsg records only: after dmesg text nothing does) */
	const char *real = "3,7,6000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.";
	assert_int_equal(llmt_health_scan_line(&s, real, strlen(real)), 0);
	llmt_health_scan_init(&s, 0);
	assert_int_equal(llmt_health_scan_line(&s, real, strlen(real)), 1);
	assert_int_equal(s.first_xid, 79);
	/* dmesg -r text never counts (test_newline_forgery) */
	const char *raw = "<3>[ 7.0] pcieport 0000:00:03.1: PCIe Bus Error: severity=Uncorrected (Fatal)";
	assert_int_equal(llmt_health_scan_line(&s, raw, strlen(raw)), 0);
	assert_int_equal(s.text, 1);
}

static void test_scan_filters_by_time_and_kind(void **state)
{
	(void)state;
	struct llmt_health_scan s;
	llmt_health_scan_init(&s, 1000);
	const char *lines[] = {
		"3,1,500,-;NVRM: Xid (PCI:0000:3b:00): 79, before the job",
		"3,2,1500,-;NVRM: Xid (PCI:0000:3b:00): 31, app fault",
		"6,3,1600,-;eth0 up",
		"3,4,2000,-;NVRM: Xid (PCI:0000:3b:00): 94, \"contained\" ECC\terror",
		"3,5,3000,-;NVRM: Xid (PCI:0000:3c:00): 79, later",
		"NVRM: Xid (PCI:0000:3b:00): 79, no time",
	};
	for (unsigned i = 0; i < 6; i++)
		llmt_health_scan_line(&s, lines[i], strlen(lines[i]));
	assert_int_equal(s.lines, 6);
	assert_int_equal(s.errors, 2);
	assert_int_equal(s.first_kind, LLMT_HW_XID);
	assert_int_equal(s.first_xid, 94);
	assert_null(strchr(s.first, '"'));
	assert_null(strchr(s.first, '\t'));
}

static void test_reason_sanitised(void **state)
{
	(void)state;
	char r[64];
	llmt_health_reason(r, sizeof(r), "kernel log", "a\"b'c\\d\ne`f and a very long tail that is cut off here");
	assert_string_equal(r, "llm_train: kernel log: a_b_c_d_e_f and a very long tail that is");
	assert_int_equal(strlen(r), 63);
}

static char dir[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/llmt-health-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

/* An executable whose file name holds a newline segfaults: the kernel's
 * record `a.out[4242]: segfault at 0 ... in /tmp/x<NL><forged>[55d0+1000]`
 * in the log files an admin keeps. /dev/kmsg writes the newline as \x0a;
 * `dmesg -r` (util-linux unescapes it and prints it raw) and the kernel's
 * syslog(2) text (the record's prefix again after it) break the line. On
 * main both files drained the node: Xid 79 from the forged line. */
static void test_newline_forgery(void **state)
{
	(void)state;
	char p[256], err[512];
	struct llmt_health_scan s;
	const char *forged = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.";
	const char *seg = "a.out[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd error 6 in /tmp/x";
	char text[1024];
	snprintf(p, sizeof(p), "%s/klog", dir);
	/* the kernel's syslog(2) text (dmesg -S -r, /proc/kmsg) */
	snprintf(text, sizeof(text), "<6>[ 5.000001] eth0 up\n<6>[ 9.000001] %s\n<6>[ 9.000001] %s[55d0+1000]\n",
		 seg, forged);
	put(p, text, 0644);
	assert_int_equal(llmt_klog_scan(p, 0, 0, 1000, &s, err, sizeof(err)), 0);
	assert_int_equal(s.errors, 0);
	assert_int_equal(s.text, 3);
	/* util-linux dmesg -r: the rest unprefixed, written as a kmsg record,
	 * or with a dmesg -r prefix of its own */
	snprintf(text, sizeof(text), "<6>[ 9.000001] %s\n0,900,9000002,-;%s[55d0+1000]\n", seg, forged);
	put(p, text, 0644);
	assert_int_equal(llmt_klog_scan(p, 0, 0, 1000, &s, err, sizeof(err)), 0);
	assert_int_equal(s.errors, 0);
	snprintf(text, sizeof(text), "<6>[ 9.000001] %s\n<6>[ 9.000002] %s\n[55d0+1000]\n", seg, forged);
	put(p, text, 0644);
	assert_int_equal(llmt_klog_scan(p, 0, 0, 1000, &s, err, sizeof(err)), 0);
	assert_int_equal(s.errors, 0);
	/* a copy of /dev/kmsg: the newline is \x0a; the forged text is inside
	 * the segfault record; the genuine record after it still counts */
	snprintf(text, sizeof(text), "6,899,9000001,-;%s\\x0a%s[55d0+1000]\n SUBSYSTEM=x\n"
		 "3,901,9500000,-;%s\n", seg, forged, forged);
	put(p, text, 0644);
	assert_int_equal(llmt_klog_scan(p, 0, 0, 1000, &s, err, sizeof(err)), 0);
	assert_int_equal(s.errors, 1);
	assert_int_equal(s.text, 0);
	assert_int_equal(s.first_xid, 79);
	assert_non_null(strstr(s.first, "fallen off"));
	assert_null(strstr(s.first, "segfault"));
}

static void test_klog_file_scan(void **state)
{
	(void)state;
	char p[256], err[512];
	struct llmt_health_scan s;
	snprintf(p, sizeof(p), "%s/klog", dir);
	/* one line much longer than LLMT_KLOG_MAX_LINE, then an error line */
	size_t big = 3 * LLMT_KLOG_MAX_LINE;
	char *text = malloc(big + 200);
	assert_non_null(text);
	memset(text, 'x', big);
	memcpy(text, "6,1,1,-;", 8);
	snprintf(text + big, 200, "\n3,2,10000000,-;NVRM: Xid (PCI:0000:01:00): 119, GSP timeout\n");
	put(p, text, 0644);
	free(text);
	assert_int_equal(llmt_klog_scan(p, 0, 0, 1000, &s, err, sizeof(err)), 0);
	assert_int_equal(s.errors, 1);
	assert_int_equal(s.first_xid, 119);
	/* since after the line: clean */
	assert_int_equal(llmt_klog_scan(p, 11000000, 0, 1000, &s, err, sizeof(err)), 0);
	assert_int_equal(s.errors, 0);
	/* byte bound: reading only the first bytes misses the error */
	assert_int_equal(llmt_klog_scan(p, 0, 100, 1000, &s, err, sizeof(err)), 0);
	assert_int_equal(s.errors, 0);
	/* writable by others: refused */
	chmod(p, 0666);
	assert_int_equal(llmt_klog_scan(p, 0, 0, 1000, &s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "writable"));
	/* relative path and missing file */
	assert_int_equal(llmt_klog_scan("rel/klog", 0, 0, 1000, &s, err, sizeof(err)), -1);
	snprintf(p, sizeof(p), "%s/missing", dir);
	assert_int_equal(llmt_klog_scan(p, 0, 0, 1000, &s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "missing"));
}

static void test_real_kmsg_readable(void **state)
{
	(void)state;
	char err[512];
	struct llmt_health_scan s;
	if (access("/dev/kmsg", R_OK) != 0)
		skip();
	/* bounded: must come back, and this machine's log has records */
	assert_int_equal(llmt_klog_scan(NULL, 0, 0, 2000, &s, err, sizeof(err)), 0);
	assert_true(s.lines > 0);
}

static void test_gpu_count_and_space(void **state)
{
	(void)state;
	char p[256], err[512];
	const char *names[] = { "nvidia0", "nvidia12", "nvidiactl", "nvidia-caps", "nvidia", "nvidia1x" };
	for (int i = 0; i < 6; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		put(p, "", 0644);
	}
	assert_int_equal(llmt_gpu_count(dir, err, sizeof(err)), 2);
	snprintf(p, sizeof(p), "%s/nodir", dir);
	assert_int_equal(llmt_gpu_count(p, err, sizeof(err)), -1);
	uint64_t avail = 0;
	assert_int_equal(llmt_free_bytes(dir, &avail, err, sizeof(err)), 0);
	assert_true(avail > 0);
	assert_int_equal(llmt_free_bytes("relative", &avail, err, sizeof(err)), -1);
}

static void test_run_bounded(void **state)
{
	(void)state;
	char err[512];
	char *ok[] = { (char *)"/bin/true", NULL };
	assert_int_equal(llmt_run_bounded(ok, 2000, err, sizeof(err)), 0);
	char *bad[] = { (char *)"/bin/false", NULL };
	assert_int_equal(llmt_run_bounded(bad, 2000, err, sizeof(err)), 1);
	char *slow[] = { (char *)"/bin/sleep", (char *)"30", NULL };
	assert_int_equal(llmt_run_bounded(slow, 200, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "timed out"));
	char *rel[] = { (char *)"scontrol", NULL };
	assert_int_equal(llmt_run_bounded(rel, 200, err, sizeof(err)), -1);
	char *missing[] = { (char *)"/nonexistent/scontrol", NULL };
	assert_int_equal(llmt_run_bounded(missing, 2000, err, sizeof(err)), 127);
}

/* Issue 14 item 5 (fails on the old code, whose children inherited the
 * check's environment): a child of a root context sees only the fixed
 * environment. */
static void test_run_bounded_clean_env(void **state)
{
	(void)state;
	char err[512];
	setenv("LLMT_PLANTED_SECRET", "x", 1);
	setenv("LD_PRELOAD", "/nonexistent/evil.so", 1);
	char *chk[] = { (char *)"/bin/sh", (char *)"-c",
			(char *)"[ -z \"$LLMT_PLANTED_SECRET$LD_PRELOAD\" ] && [ \"$PATH\" = /usr/sbin:/usr/bin:/sbin:/bin ]",
			NULL };
	int rc = llmt_run_bounded(chk, 5000, err, sizeof(err));
	unsetenv("LD_PRELOAD");
	unsetenv("LLMT_PLANTED_SECRET");
	assert_int_equal(rc, 0);
}

static int hang_fn(const void *arg, void *out, char *err, size_t errlen)
{
	(void)arg; (void)err; (void)errlen;
	*(int *)out = 1;
	for (;;)
		pause();    /* a file system that never answers */
	return 0;
}

static int answer_fn(const void *arg, void *out, char *err, size_t errlen)
{
	*(int *)out = *(const int *)arg;
	snprintf(err, errlen, "odd");
	return *(const int *)arg == 7 ? 0 : -1;
}

/* Issue 14 item 4 (new: the old checks ran in the caller, unbounded): a
 * check that hangs comes back at its deadline, its child abandoned. */
static void test_call_bounded(void **state)
{
	(void)state;
	char err[512];
	int out = 0, arg = 7;
	assert_int_equal(llmt_call_bounded(answer_fn, &arg, &out, sizeof(out), 2000, "t", err,
					   sizeof(err)), 0);
	assert_int_equal(out, 7);
	arg = 3;
	assert_int_equal(llmt_call_bounded(answer_fn, &arg, &out, sizeof(out), 2000, "t", err,
					   sizeof(err)), -1);
	assert_string_equal(err, "odd");
	int64_t t0 = llmt_monotonic_us();
	assert_int_equal(llmt_call_bounded(hang_fn, NULL, &out, sizeof(out), 300, "statvfs", err,
					   sizeof(err)), -1);
	assert_non_null(strstr(err, "statvfs timed out after 300 ms"));
	/* came back (the bound is the deadline, not a measured threshold) */
	assert_true(llmt_monotonic_us() - t0 < 60 * 1000000LL);
}

/* Issue 17: the prolog's self-test drains only for exit 88 with wrong
 * answers; a slow node, another code or no output is not drained */
static void test_selftest_verdict(void **state)
{
	(void)state;
	char d[300];
	const char *wrong = "node n1: wrong (answers wrong, golden mismatch; 7.7 GFLOP/s)\nselftest: 1 node, 1 bad\n";
	const char *slow = "node n1: slow (answers ok, golden match; 7.7 GFLOP/s)\nselftest: 1 node, 1 bad\n";
	assert_int_equal(llmt_selftest_verdict(88, wrong, d, sizeof(d)), 1);
	assert_string_equal(d, "node n1: wrong (answers wrong, golden mismatch; 7.7 GFLOP/s)");
	assert_int_equal(llmt_selftest_verdict(88, slow, d, sizeof(d)), 0);
	assert_string_equal(d, "");
	assert_int_equal(llmt_selftest_verdict(0, wrong, d, sizeof(d)), 0);
	assert_int_equal(llmt_selftest_verdict(64, wrong, d, sizeof(d)), 0);
	assert_int_equal(llmt_selftest_verdict(88, NULL, d, sizeof(d)), 0);
	assert_int_equal(llmt_selftest_verdict(88, "", d, sizeof(d)), 0);
}

/* The prolog's self-test run: stdout kept, a hang killed at the deadline
 * with its whole process group, the fixed environment (TMPDIR the
 * caller's), absolute paths only */
static void test_selftest_run(void **state)
{
	(void)state;
	char out[64], err[512], path[] = "/tmp/llmt-st-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *sh = "#!/bin/sh\n[ \"$1 $2 $3\" = 'selftest --size small' ] || exit 64\n"
			 "[ -z \"$LLMT_PLANTED\" ] || exit 65\n"
			 "[ \"$OMPI_ALLOW_RUN_AS_ROOT\" = 1 ] || exit 66\n"
			 "[ \"$TMPDIR\" = /tmp/llmt-st-tmp ] || exit 67\n"
			 "case $0 in *hang*) sleep 30 & sleep 30;; esac\n"
			 "echo 'node n1: wrong (answers wrong) and a long tail past the buffer .......'\nexit 88\n";
	assert_true(write(fd, sh, strlen(sh)) == (ssize_t)strlen(sh));
	close(fd);
	chmod(path, 0755);
	setenv("LLMT_PLANTED", "x", 1);
	assert_int_equal(llmt_selftest_run(path, "/tmp/llmt-st-tmp", 5000, out, sizeof(out), err, sizeof(err)), 88);
	unsetenv("LLMT_PLANTED");
	assert_int_equal(strlen(out), sizeof(out) - 1);    /* bounded */
	assert_non_null(strstr(out, "(answers wrong)"));
	char hang[64];
	snprintf(hang, sizeof(hang), "%s-hang", path);
	assert_int_equal(symlink(path, hang), 0);
	assert_int_equal(llmt_selftest_run(hang, "/tmp/llmt-st-tmp", 300, out, sizeof(out), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "timed out"));
	assert_int_equal(llmt_selftest_run("llm-train", "/tmp/llmt-st-tmp", 300, out, sizeof(out), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "absolute"));
	assert_int_equal(llmt_selftest_run(path, "tmp", 300, out, sizeof(out), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "TMPDIR tmp is not an absolute path"));
	assert_int_equal(llmt_selftest_run("/nonexistent/llm-train", "/tmp/llmt-st-tmp", 2000, out, sizeof(out), err, sizeof(err)), 127);
	unlink(hang);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_kmsg_and_dmesg),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_spoofs_never_count),
		cmocka_unit_test(test_scan_filters_by_time_and_kind),
		cmocka_unit_test_setup_teardown(test_newline_forgery, setup, teardown),
		cmocka_unit_test(test_reason_sanitised),
		cmocka_unit_test_setup_teardown(test_klog_file_scan, setup, teardown),
		cmocka_unit_test(test_real_kmsg_readable),
		cmocka_unit_test_setup_teardown(test_gpu_count_and_space, setup, teardown),
		cmocka_unit_test(test_run_bounded),
		cmocka_unit_test(test_run_bounded_clean_env),
		cmocka_unit_test(test_call_bounded),
		cmocka_unit_test(test_selftest_verdict),
		cmocka_unit_test(test_selftest_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
