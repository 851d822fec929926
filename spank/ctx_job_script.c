/* ctx_job_script.c: job_prolog and job_epilog (root, on every node of a
 * training job). Runs the health checks the policy names (GPU count,
 * kernel-log hardware errors since the last check or the job's start),
 * each in a child bounded by its timeout. Free space on a shared
 * checkpoint root is a property of the root, not of the node: it is
 * checked at submit (plugin.c) and never drains a node. A failing node is
 * drained with the reason, and the job learns why through its Comment
 * (scontrol show job / squeue -o %k), since a prolog's stderr goes nowhere
 * the job can see. Never follows a user-supplied path: only paths from the
 * plugstack arguments and the root-owned policy are touched. */
#include "plugin.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "health_io.h"

#define KLOG_TIMEOUT_MS_MIN 100

/* Training job? The allocator/local context marks it in the job control
 * env (SPANK_LLM_TRAIN); options are also visible through getopt. */
static int is_training(spank_t sp)
{
	const char *m = getenv("SPANK_LLM_TRAIN");
	if (m && strcmp(m, "1") == 0)
		return 1;
	llmt_raw_from_getopt(sp);
	return llmt_raw_any();
}

/* Node names go into file names and scontrol arguments: keep them plain. */
static int node_name_ok(const char *n)
{
	if (!n || !*n || strlen(n) >= LLMT_HOST_MAX)
		return 0;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_' || *p == '.'))
			return 0;
	return n[0] != '.';
}

/* The state dir holds one mark per node: the kernel-log time up to which
 * the node has been checked. Root-owned, no symlinks, created 0700. */
static int state_dir_open(char *err, size_t errlen)
{
	const char *d = llmt_conf.state_dir;
	if (mkdir(d, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", d, strerror(errno));
		return -1;
	}
	int fd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "open %s: %s", d, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen, "%s: not a private directory of uid %u", d, (unsigned)geteuid());
		close(fd);
		return -1;
	}
	return fd;
}

static int64_t mark_read(int dfd, const char *node)
{
	char name[LLMT_HOST_MAX + 16], buf[32];
	snprintf(name, sizeof(name), "klog.%s", node);
	int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *end;
	long long v = strtoll(buf, &end, 10);
	return (end == buf || v < 0) ? 0 : (int64_t)v;
}

static void mark_write(int dfd, const char *node, int64_t us)
{
	char name[LLMT_HOST_MAX + 16], tmp[LLMT_HOST_MAX + 32], buf[32];
	snprintf(name, sizeof(name), "klog.%s", node);
	snprintf(tmp, sizeof(tmp), "klog.%s.tmp.%ld", node, (long)getpid());
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		slurm_error(LLMT_MSG "state %s/%s: %s", llmt_conf.state_dir, tmp, strerror(errno));
		return;
	}
	int len = snprintf(buf, sizeof(buf), "%" PRId64 "\n", us);
	int ok = write(fd, buf, (size_t)len) == len;
	ok = (close(fd) == 0) && ok;
	if (!ok || renameat(dfd, tmp, dfd, name) != 0) {
		slurm_error(LLMT_MSG "state %s/%s: %s", llmt_conf.state_dir, name, strerror(errno));
		unlinkat(dfd, tmp, 0);
	}
}

/* kernel_log with "%n" replaced by the node name. */
static void klog_path(const char *node, char *buf, size_t len)
{
	const char *t = llmt_conf.kernel_log;
	size_t j = 0;
	for (size_t i = 0; t[i] && j + 1 < len; i++) {
		if (t[i] == '%' && t[i + 1] == 'n') {
			j += (size_t)snprintf(buf + j, len - j, "%s", node);
			if (j >= len)
				j = len - 1;
			i++;
		} else {
			buf[j++] = t[i];
		}
	}
	buf[j] = '\0';
}

/* The job's start on the kernel log's clock (CLOCK_MONOTONIC):
 * SLURM_JOB_START_TIME (epoch seconds) where slurmd gives it, else now. */
static int64_t job_start_us(int64_t now_us)
{
	const char *s = getenv("SLURM_JOB_START_TIME");
	char *end;
	if (!s || !*s)
		return now_us;
	long long t = strtoll(s, &end, 10);
	time_t wall = time(NULL);
	if (*end || t <= 0 || t > (long long)wall)
		return now_us;
	int64_t back = ((int64_t)wall - t) * 1000000;
	return back < now_us ? now_us - back : 0;
}

static int timeout_ms(const struct llmt_health_check *c)
{
	unsigned s = c->timeout_s ? c->timeout_s : 10;
	return (int)(s > 600 ? 600 : s) * 1000;
}

/* One failed check: reason for the node (and the job). */
struct verdict {
	int failed;
	char reason[256];
};

static void check_gpus(const struct llmt_policy *p, const char *node, struct verdict *v)
{
	if (!p->health.gpu_count.enabled)
		return;
	const struct llmt_node_type *t = llmt_policy_node_type(p, node);
	if (!t || t->gpus_per_node == 0)
		return;
	char err[LLMT_ERRLEN], detail[LLMT_ERRLEN + 64];
	int n = llmt_gpu_count_bounded(llmt_conf.dev_dir, timeout_ms(&p->health.gpu_count), err,
				       sizeof(err));
	if (n < 0) {
		snprintf(detail, sizeof(detail), "cannot count GPUs: %s", err);
		llmt_health_reason(v->reason, sizeof(v->reason), "gpu_count", detail);
		v->failed = 1;
	} else if ((unsigned)n != t->gpus_per_node) {
		snprintf(detail, sizeof(detail), "%d GPUs visible, node type %s has %u", n, t->name,
			 t->gpus_per_node);
		llmt_health_reason(v->reason, sizeof(v->reason), "gpu_count", detail);
		v->failed = 1;
	}
}

static void check_klog(const struct llmt_policy *p, const char *node, struct verdict *v)
{
	if (!p->health.xid_scan.enabled)
		return;
	char err[LLMT_ERRLEN], path[LLMT_PATH_MAX], detail[320];
	int dfd = state_dir_open(err, sizeof(err));
	if (dfd < 0) {
		slurm_error(LLMT_MSG "kernel log check skipped: %s", err);
		return;
	}
	int64_t now = llmt_monotonic_us();
	int64_t since = mark_read(dfd, node);
	/* No mark (first check since the state dir was made) or one from
	 * before a reboot (the clock restarted): the job's start, i.e. now
	 * for a prolog; records older than that are not this job's to judge. */
	if (since <= 0 || since > now)
		since = job_start_us(now);
	klog_path(node, path, sizeof(path));
	int tmo = timeout_ms(&p->health.xid_scan);
	struct llmt_health_scan scan;
	if (llmt_klog_scan_bounded(path, since, tmo < KLOG_TIMEOUT_MS_MIN ? KLOG_TIMEOUT_MS_MIN : tmo,
				   &scan, err, sizeof(err)) != 0) {
		/* An unreadable log is the admin's to fix, not a node fault. */
		slurm_error(LLMT_MSG "kernel log check skipped: %s", err);
		close(dfd);
		return;
	}
	/* Checked up to now: the next check (epilog of this job, prolog of
	 * the next) starts here, so a resumed node is not drained again for
	 * an error already acted on. */
	mark_write(dfd, node, now);
	close(dfd);
	if (scan.text)
		slurm_error(LLMT_MSG "kernel log %s: %u dmesg -r lines not judged: only /dev/kmsg records count "
			    "(a newline in a task or file name forges a text line); read /dev/kmsg or a copy of it",
			    path, scan.text);
	if (scan.errors == 0)
		return;
	if (scan.first_kind == LLMT_HW_XID)
		snprintf(detail, sizeof(detail), "Xid %d (%u hardware error lines): %.180s", scan.first_xid,
			 scan.errors, scan.first);
	else
		snprintf(detail, sizeof(detail), "%s (%u hardware error lines): %.180s",
			 llmt_hw_kind_name(scan.first_kind), scan.errors, scan.first);
	llmt_health_reason(v->reason, sizeof(v->reason), "kernel log", detail);
	v->failed = 1;
}

/* The self-test's TMPDIR, where Open MPI keeps its session directory: a
 * private directory in the state dir. Never /tmp: a user who made
 * /tmp/ompi.<node>.0 first would have root create, truncate and delete
 * files in a directory of theirs, where a symlink can be swapped in. */
static int selftest_tmp(char *path, size_t len, char *err, size_t errlen)
{
	int dfd = state_dir_open(err, errlen);
	if (dfd < 0)
		return -1;
	struct stat st;
	int fd = -1;
	if (mkdirat(dfd, "selftest", 0700) == 0 || errno == EEXIST)
		fd = openat(dfd, "selftest", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int w = snprintf(path, len, "%s/selftest", llmt_conf.state_dir);
	int ok = fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 077) &&
		 w > 0 && (size_t)w < len;
	if (!ok)
		snprintf(err, errlen, "%s/selftest: not a private directory of uid %u", llmt_conf.state_dir,
			 (unsigned)geteuid());
	if (fd >= 0)
		close(fd);
	close(dfd);
	return ok ? 0 : -1;
}

/* The policy's prolog self-test: bounded in time, drains only on wrong
 * answers (slowness, a timeout or a failure to run are logged). */
static void check_selftest(const struct llmt_policy *p, const char *node, struct verdict *v)
{
	if (!p->health.selftest.enabled)
		return;
	static char out[16384];
	char err[LLMT_ERRLEN], detail[300], tmp[LLMT_PATH_MAX + 16];
	if (selftest_tmp(tmp, sizeof(tmp), err, sizeof(err)) != 0) {
		slurm_error(LLMT_MSG "self-test on %s skipped: %s", node, err);
		return;
	}
	int rc = llmt_selftest_run(p->health.selftest_cmd, tmp, timeout_ms(&p->health.selftest), out,
				   sizeof(out), err, sizeof(err));
	if (rc < 0) {
		slurm_error(LLMT_MSG "self-test on %s not judged: %s", node, err);
		return;
	}
	if (llmt_selftest_verdict(rc, out, detail, sizeof(detail))) {
		llmt_health_reason(v->reason, sizeof(v->reason), "selftest", detail);
		v->failed = 1;
	} else if (rc != 0) {
		slurm_info(LLMT_MSG "self-test on %s exited %d (not wrong answers): not drained", node, rc);
	}
}

/* scontrol update A B [C]: argv built here, never through a shell. */
static void scontrol_update(char *a, char *b, char *c, int tmo)
{
	char err[LLMT_ERRLEN];
	char upd[] = "update";
	char *argv[] = { llmt_conf.scontrol, upd, a, b, c, NULL };
	if (llmt_run_bounded(argv, tmo, err, sizeof(err)) != 0)
		slurm_error(LLMT_MSG "scontrol update %s: %s", a, err);
}

static int job_script(spank_t sp, int ac, char **av, const char *phase)
{
	/* Slurm 22.05 does not call slurm_spank_init before job_prolog and
	 * job_epilog: the plugstack arguments are read here. */
	char err[LLMT_ERRLEN];
	if (llmt_conf_parse(ac, av, &llmt_conf, err, sizeof(err)) != 0) {
		slurm_error(LLMT_MSG "%s: %s", phase, err);
		return 0;
	}
	if (!is_training(sp))
		return 0;
	const char *node = getenv("SLURMD_NODENAME");
	if (!node_name_ok(node)) {
		slurm_error(LLMT_MSG "%s: SLURMD_NODENAME missing or unusual: checks skipped", phase);
		return 0;
	}
	struct llmt_policy *p = llmt_policy_open(llmt_conf.policy, err, sizeof(err));
	if (!p) {
		/* Jobs are refused at submit and task start; a policy typo must
		 * not drain the whole cluster from here. */
		slurm_error(LLMT_MSG "%s: health checks skipped: %s", phase, err);
		return 0;
	}
	struct verdict v;
	memset(&v, 0, sizeof(v));
	check_gpus(p, node, &v);
	if (!v.failed)
		check_klog(p, node, &v);
	if (!v.failed && strcmp(phase, "prolog") == 0)
		check_selftest(p, node, &v);
	int tmo = 10000;
	if (p->health.xid_scan.timeout_s)
		tmo = timeout_ms(&p->health.xid_scan);
	llmt_policy_free(p);
	if (!v.failed)
		return 0;

	slurm_error(LLMT_MSG "%s on %s: draining: %s", phase, node, v.reason);
	char what[LLMT_HOST_MAX + 16], state[] = "State=DRAIN", reason[300];
	snprintf(what, sizeof(what), "NodeName=%s", node);
	snprintf(reason, sizeof(reason), "Reason=%s", v.reason);
	scontrol_update(what, state, reason, tmo);
	uint32_t job_id = 0;
	const char *j = getenv("SLURM_JOB_ID");
	if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS || job_id == 0)
		job_id = j ? (uint32_t)strtoul(j, NULL, 10) : 0;
	/* Slurm refuses updates of a job that is completing: the epilog's
	 * verdict is on the node (reason) and in slurmd's log only. */
	if (job_id && strcmp(phase, "prolog") == 0) {
		char jw[32], msg[400], clean[400], arg[420];
		snprintf(jw, sizeof(jw), "JobId=%u", job_id);
		snprintf(msg, sizeof(msg), "%s: node %s drained: %s", phase, node, v.reason);
		llmt_sanitize(clean, sizeof(clean), msg, strlen(msg));
		snprintf(arg, sizeof(arg), "Comment=%s", clean);
		scontrol_update(jw, arg, NULL, tmo);
	}
	return -1;
}

int llmt_job_prolog(spank_t sp, int ac, char **av)
{
	return job_script(sp, ac, av, "prolog");
}

int llmt_job_epilog(spank_t sp, int ac, char **av)
{
	return job_script(sp, ac, av, "epilog");
}
